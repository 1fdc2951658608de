"""Server benchmark on loopback, AAOS beside an OpenEnv echo server in one run.

    python perf/server_speed.py [--steps 2000] [--sessions 500]

Starts `aaos serve` and perf/echo_server.py (openenv-core's own server over an environment that only echoes,
the cost of openenv's server itself) in subprocesses on free 127.0.0.1 ports (so client and servers do not
share a GIL) and drives both with the same clients: a minimal keep-alive HTTP/1.1 client on asyncio streams
(so the figures are the servers', not a client library's) and `websockets`, both decoding answers with orjson
(the standard library's json adds ~0.4 ms to a whole AAOS observation's round trip here). It prints, with the
load average before and after (the figures mean little on a loaded machine, so compare within one run):

- speed: p50/p99 of a step, steps/s and the server's CPU time per step, over WebSocket and HTTP /step with
  1 client and with 64, for both servers, then for AAOS with lean answers (`observe: false`, one role's
  view), and the steps/s ratio of each AAOS row to echo's;
- size: the bytes of an AAOS /step answer over an episode: the whole observation, one role's view
  (`roles`), and none (`observe: false`);
- memory: the AAOS server's resident memory idle, with N HTTP sessions open, after they close, with N
  again (memory freed by closed sessions is reused), after those close, with N WebSocket connections
  open and after they close.

Every AAOS client owns its session; each step is a six-role joint action (every role queries one of its
metrics, another each step), and a session is reset when its episode ends. The AAOS server runs as
`aaos serve` does by default: WebSocket answers uncompressed (AAOS_WS_DEFLATE off); clients offer
permessage-deflate as `websockets` does, so echo's answers are compressed (small ones, at little cost).
Request counts are bounded and only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.client import connect

import aaos
from aaos.envs.org.spec import VISIBLE_METRICS

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
CONCURRENT = 64
JOINT_ACTIONS = tuple({role: {"action_type": "query_metrics", "payload": {"metric": metrics[turn % len(metrics)]}}
                       for role, metrics in VISIBLE_METRICS.items()} for turn in range(4))
"""The joint actions an AAOS client cycles through: every role queries one of its metrics, another each step."""
ECHO_ACTIONS = ({"message": "hello"},)
LEAN = {"observe: false": {"observe": False}, "roles: [operations]": {"roles": ["operations"]}}
"""The lean answers measured beside the whole observation (AAOS only; OpenEnv's echo has none)."""
EPISODE = {"task": "full_episode", "scenario": "product_launch_failure", "seed": 0}


@dataclass(frozen=True)
class Target:
    """A server under test: its name, port and process, and the actions its clients' steps cycle through."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    actions: tuple[dict[str, Any], ...]


class Http:
    """One keep-alive HTTP/1.1 connection that POSTs JSON and reads Content-Length responses."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Http:
        return cls(*await asyncio.open_connection(HOST, port))

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        """The status and the raw body of the answer."""
        data = json.dumps(body).encode()
        self.writer.write(f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
                          f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
        return int(lines[0].split()[1]), await self.reader.readexactly(length)

    async def ask(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST and decode; RuntimeError unless 200."""
        status, raw = await self.post(path, body)
        if status != 200:
            raise RuntimeError(f"{path} answered {status}: {raw[:300]!r}")
        answer: dict[str, Any] = orjson.loads(raw)
        return answer

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


# --- speed -------------------------------------------------------------------------------------------------


async def http_client(target: Target, steps: int, seed: int, lean: dict[str, Any]) -> list[float]:
    """Step one session `steps` times over HTTP, asking for `lean` answers; the latency of each /step in
    seconds. An echo server's /reset and /step are stateless (no session_id)."""
    http = await Http.open(target.port)
    session = (await http.ask("/reset", {"seed": seed})).get("session_id")
    bodies = [{"action": action, **lean, **({"session_id": session} if session else {})} for action in target.actions]
    latencies = []
    for turn in range(steps):
        start = time.perf_counter()
        answer = await http.ask("/step", bodies[turn % len(bodies)])
        latencies.append(time.perf_counter() - start)
        if answer["done"]:
            await http.ask("/reset", {"session_id": session})
    if session:
        await http.ask("/close", {"session_id": session})
    await http.close()
    return latencies


async def ws_client(target: Target, steps: int, seed: int, lean: dict[str, Any]) -> list[float]:
    """Step one WebSocket session `steps` times, asking for `lean` answers; the latency of each step in seconds."""
    async with connect(f"ws://{HOST}:{target.port}/ws", max_size=None) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
        await ws.recv()
        messages = [json.dumps({"type": "step", "data": action, **lean}) for action in target.actions]
        latencies = []
        for turn in range(steps):
            start = time.perf_counter()
            await ws.send(messages[turn % len(messages)])
            reply = orjson.loads(await ws.recv())
            latencies.append(time.perf_counter() - start)
            if reply["type"] != "observation":
                raise RuntimeError(f"WS step failed: {reply['data']}")
            if reply["data"]["done"]:
                await ws.send(json.dumps({"type": "reset", "data": {}}))
                await ws.recv()
    return latencies


def cpu_seconds(process: subprocess.Popen[bytes]) -> float:
    """The CPU time (user + system) a process has used so far."""
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def round_of(client: Any, target: Target, clients: int, steps: int, lean: dict[str, Any] | None = None
                   ) -> dict[str, float]:
    """`clients` clients at once, `steps` steps each: p50, p99 (ms), steps/s, and the server's CPU time per
    step (ms; what a loaded machine changes least)."""
    start, cpu = time.perf_counter(), cpu_seconds(target.process)
    runs = await asyncio.gather(*(client(target, steps, seed, lean or {}) for seed in range(clients)))
    elapsed = time.perf_counter() - start
    latencies = sorted(t for run in runs for t in run)
    return {"p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
            "steps_per_s": len(latencies) / elapsed,
            "cpu_ms": 1000 * (cpu_seconds(target.process) - cpu) / len(latencies)}


def speed(targets: Sequence[Target], steps: int) -> None:
    measures = [(f"{kind} step, {n} client{'s' * (n > 1)}", client, n)
                for kind, client in (("WS", ws_client), ("HTTP", http_client)) for n in (1, CONCURRENT)]
    for target in targets:
        asyncio.run(round_of(http_client, target, 1, 200))  # warm-up
    print(f"{'measure':<22} {'server':<26} {'p50 ms':>8} {'p99 ms':>8} {'steps/s':>9} {'CPU ms/step':>12}")
    for name, client, n in measures:
        each = max(1, steps // n)
        rows = [asyncio.run(round_of(client, target, n, each)) for target in targets]
        lean = [(f"{targets[0].name}, {choice}", asyncio.run(round_of(client, targets[0], n, each, fields)))
                for choice, fields in LEAN.items()]
        for server, row in [*((target.name, row) for target, row in zip(targets, rows, strict=True)), *lean]:
            print(f"{name:<22} {server:<26} {row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f} {row['steps_per_s']:>9.0f}"
                  f" {row['cpu_ms']:>12.3f}")
        echo = rows[1]["steps_per_s"]
        ratios = "  ".join(f"{row['steps_per_s'] / echo:.2f}" for row in (rows[0], *(r for _, r in lean)))
        print(f"{'':<22} {'ratio to ' + targets[1].name:<26} {ratios}  (whole observation, "
              f"{', '.join(LEAN)})")


# --- size --------------------------------------------------------------------------------------------------


async def sizes(target: Target) -> dict[str, list[int]]:
    """The bytes of each /step answer over one champion episode: whole, one role's view each, none."""
    policy = aaos.policies.make("heuristic")
    variants: dict[str, dict[str, Any]] = {"whole observation": {}, "observe: false": {"observe": False}}
    variants.update({f"roles: [{role}]": {"roles": [role]} for role in aaos.spec().roles})
    http = await Http.open(target.port)
    sessions = {name: await http.ask("/reset", EPISODE) for name in variants}
    observation = sessions["whole observation"]["observation"]
    found: dict[str, list[int]] = {name: [] for name in variants}
    done = False
    while not done:
        joint = policy.act(observation)
        for name, lean in variants.items():
            status, raw = await http.post("/step", {"session_id": sessions[name]["session_id"], "action": joint,
                                                    **lean})
            if status != 200:
                raise RuntimeError(f"/step ({name}) answered {status}: {raw[:300]!r}")
            found[name].append(len(raw))
            answer = json.loads(raw)
            if name == "whole observation":
                observation, done = answer["observation"], answer["done"]
    for opened in sessions.values():
        await http.ask("/close", {"session_id": opened["session_id"]})
    await http.close()
    return found


def size(target: Target) -> None:
    found = asyncio.run(sizes(target))
    print(f"\n{'AAOS /step answer (' + EPISODE['task'] + ')':<36} {'median B':>9} {'max B':>7}")
    for name, lengths in found.items():
        print(f"{name:<36} {statistics.median(lengths):>9.0f} {max(lengths):>7}")


# --- memory ------------------------------------------------------------------------------------------------


def rss_mib(process: subprocess.Popen[bytes]) -> float:
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc (Linux only)")


async def open_http_sessions(target: Target, count: int) -> list[str]:
    http = await Http.open(target.port)
    sessions = []
    for seed in range(count):
        session = (await http.ask("/reset", {"seed": seed}))["session_id"]
        for _ in range(5):
            await http.ask("/step", {"session_id": session, "action": JOINT_ACTIONS[0]})
        sessions.append(session)
    await http.close()
    return sessions


async def close_http_sessions(target: Target, sessions: list[str]) -> None:
    http = await Http.open(target.port)
    for session in sessions:
        await http.ask("/close", {"session_id": session})
    await http.close()


async def ws_sessions(target: Target, count: int) -> float:
    """Open `count` WebSocket connections, reset and step each 5 times; the RSS (MiB) with all of them open."""
    connections = [await connect(f"ws://{HOST}:{target.port}/ws", max_size=None) for _ in range(count)]
    for seed, ws in enumerate(connections):
        await ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
        await ws.recv()
        for _ in range(5):
            await ws.send(json.dumps({"type": "step", "data": JOINT_ACTIONS[0]}))
            await ws.recv()
    held = rss_mib(target.process)
    for ws in connections:
        await ws.close()
    return held


def memory(target: Target, count: int) -> None:
    print(f"\nAAOS server memory (RSS MiB), {count} sessions each with a reset and 5 steps")
    rows = [("idle", rss_mib(target.process))]
    for round_ in ("", " again"):
        sessions = asyncio.run(open_http_sessions(target, count))
        rows.append((f"{count} HTTP sessions{round_}", rss_mib(target.process)))
        asyncio.run(close_http_sessions(target, sessions))
        rows.append(("all closed", rss_mib(target.process)))
    rows.append((f"{count} WebSocket connections", asyncio.run(ws_sessions(target, count))))
    time.sleep(1)  # the server lets go of closed connections on its own schedule
    rows.append(("all closed", rss_mib(target.process)))
    for name, mib in rows:
        print(f"{name:<36} {mib:>9.1f}")


# --- servers -----------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def start(name: str, command: list[str], actions: tuple[dict[str, Any], ...], sessions: int) -> Target:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "AAOS_MAX_SESSIONS": str(sessions), "AAOS_MAX_SESSIONS_PER_CLIENT": str(sessions)}
    process = subprocess.Popen([sys.executable, *command, *(["--port", str(port)] if name == "AAOS" else [str(port)])],
                               cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL if name == "echo" else None)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection((HOST, port), timeout=1):
                return Target(name, port, process, actions)
        except OSError:
            time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"{name} server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000, help="steps per measurement (split across clients)")
    parser.add_argument("--sessions", type=int, default=500, help="sessions in the memory measurement")
    args = parser.parse_args()
    sessions = max(2 * CONCURRENT, args.sessions + 10)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  ({os.cpu_count()} CPUs)")
    targets = [start("AAOS", ["-m", "aaos.cli", "serve", "--host", HOST], JOINT_ACTIONS, sessions),
               start("echo", [str(REPO / "perf" / "echo_server.py")], ECHO_ACTIONS, sessions)]
    try:
        speed(targets, args.steps)
        size(targets[0])
        memory(targets[0], args.sessions)
    finally:
        for target in targets:
            target.process.terminate()
            target.process.wait(timeout=30)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
