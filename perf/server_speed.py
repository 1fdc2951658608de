"""Server benchmark on loopback: HTTP /step latency (p50, p99) and throughput with 1 and 64 concurrent
clients, and WebSocket steps/s with 1 and 64 connections.

    python perf/server_speed.py [--steps 2000]

Starts `aaos serve` in a subprocess on a free 127.0.0.1 port (so client and server do not share a GIL),
drives it with a minimal keep-alive HTTP/1.1 client on asyncio streams (so the figures are the server's,
not a client library's) and stops it at the end. Every client owns its session; each step is a six-role
joint action (every role queries metrics), and a session is reset when its episode ends. Request counts
are bounded and only 127.0.0.1 is contacted.
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
from pathlib import Path

from websockets.asyncio.client import connect

from aaos.envs.org.spec import VISIBLE_METRICS

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
CONCURRENT = 64
JOINT_ACTION = {role: {"action_type": "query_metrics", "payload": {"metric": metrics[0]}}
                for role, metrics in VISIBLE_METRICS.items()}


class Http:
    """One keep-alive HTTP/1.1 connection that POSTs JSON and reads Content-Length responses."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Http:
        return cls(*await asyncio.open_connection(HOST, port))

    async def post(self, path: str, body: dict) -> tuple[int, dict]:
        data = json.dumps(body).encode()
        self.writer.write(f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
                          f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
        return int(lines[0].split()[1]), json.loads(await self.reader.readexactly(length))

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def http_client(port: int, steps: int, seed: int) -> list[float]:
    """Step one session `steps` times; the latency of each /step in seconds."""
    http = await Http.open(port)
    status, body = await http.post("/reset", {"seed": seed})
    session = body["session_id"]
    latencies = []
    for _ in range(steps):
        start = time.perf_counter()
        status, body = await http.post("/step", {"session_id": session, "action": JOINT_ACTION})
        latencies.append(time.perf_counter() - start)
        if status != 200:
            raise RuntimeError(f"/step answered {status}: {body}")
        if body["done"]:
            await http.post("/reset", {"session_id": session})
    await http.post("/close", {"session_id": session})
    await http.close()
    return latencies


async def ws_client(port: int, steps: int, seed: int) -> None:
    async with connect(f"ws://{HOST}:{port}/ws", max_size=None) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
        await ws.recv()
        for _ in range(steps):
            await ws.send(json.dumps({"type": "step", "data": JOINT_ACTION}))
            reply = json.loads(await ws.recv())
            if reply["type"] != "observation":
                raise RuntimeError(f"WS step failed: {reply['data']}")
            if reply["data"]["done"]:
                await ws.send(json.dumps({"type": "reset", "data": {}}))
                await ws.recv()


async def http_round(port: int, clients: int, steps: int) -> dict[str, float]:
    start = time.perf_counter()
    runs = await asyncio.gather(*(http_client(port, steps, seed) for seed in range(clients)))
    elapsed = time.perf_counter() - start
    latencies = sorted(t for run in runs for t in run)
    return {"p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
            "steps_per_s": len(latencies) / elapsed}


async def ws_round(port: int, clients: int, steps: int) -> float:
    start = time.perf_counter()
    await asyncio.gather(*(ws_client(port, steps, seed) for seed in range(clients)))
    return clients * steps / (time.perf_counter() - start)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def start_server(port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "AAOS_MAX_SESSIONS": str(2 * CONCURRENT)}
    process = subprocess.Popen([sys.executable, "-m", "aaos.cli", "serve", "--host", HOST, "--port", str(port)],
                               cwd=REPO, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection((HOST, port), timeout=1):
                return process
        except OSError:
            time.sleep(0.2)
    process.terminate()
    raise RuntimeError("aaos serve did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000, help="steps per measurement (split across clients)")
    args = parser.parse_args()
    port = free_port()
    server = start_server(port)
    try:
        asyncio.run(http_round(port, 1, 200))  # warm-up
        rows = [(f"HTTP /step, {n} client{'s' * (n > 1)}", asyncio.run(http_round(port, n, max(1, args.steps // n))))
                for n in (1, CONCURRENT)]
        ws = [(n, asyncio.run(ws_round(port, n, max(1, args.steps // n)))) for n in (1, CONCURRENT)]
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"{'measure':<28} {'p50 ms':>8} {'p99 ms':>8} {'steps/s':>9}")
    for name, row in rows:
        print(f"{name:<28} {row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f} {row['steps_per_s']:>9.0f}")
    for n, rate in ws:
        print(f"{f'WS step, {n} connection' + 's' * (n > 1):<28} {'':>8} {'':>8} {rate:>9.0f}")


if __name__ == "__main__":
    main()
