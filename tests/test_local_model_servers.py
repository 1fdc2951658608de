"""The local model's servers as processes, with the real SmolLM2 served by llama.cpp on loopback: the same
answers whatever else a server is serving (a benchmark scores alike at any concurrency), no server outliving the
process that started it (the Space stopped by SIGTERM, a parent ended by SIGTERM, SIGINT or SIGKILL), and the
shared servers capped in number and freed when idle (which one makes room: test_local_model_pool.py).

Linux only: a server is found by its process (/proc).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser
from ui_fixtures import ARTIFACTS, ROOT, open_page, pick, start_space, wait_until

from aaos.agents import local_model
from aaos.agents.local_model import IDLE_VARIABLE, MAX_SERVERS_VARIABLE, MODEL_NAME, missing, shared_server
from aaos.bench.runner import plan_jobs, run
from aaos.policies import policy_spec
from aaos.ui import agents

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(missing() is not None, reason=f"local model not installed: {missing()}"),
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds processes through /proc (Linux)"),
]

ENV, TASK, SCENARIO = "chief_of_staff", "steady_week", "hospital_director"
EPISODES = 4
GONE_TIMEOUT_S = 60.0
"""How long a server may take to end once its parent has (it ends at once; this only bounds a stuck test)."""
START_TIMEOUT_S = 300.0


def _stat(pid: int) -> tuple[str, int] | None:
    """A process's state letter and parent, or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, parent = stat.rsplit(")", 1)[1].split()[:2]
    return state, int(parent)


def is_model_server(pid: int) -> bool:
    """Whether `pid` is a live (not zombie) process serving the local model."""
    stat = _stat(pid)
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return stat is not None and stat[0] != "Z" and MODEL_NAME.encode() in command


def model_servers(parent: int) -> set[int]:
    """The live model servers that `parent` started."""
    children = {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()}
    return {pid for pid in children if (_stat(pid) or ("", 0))[1] == parent and is_model_server(pid)}


def assert_all_end(pids: set[int], what: str) -> None:
    assert pids, "no model server was started"
    wait_until(lambda: not any(map(is_model_server, pids)), GONE_TIMEOUT_S, f"the model servers {pids} to end {what}")


@pytest.fixture
def own_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[Path | None, local_model.LocalModelServer]]:
    """A pool of shared servers of this test's own, stopped afterwards."""
    servers: dict[Path | None, local_model.LocalModelServer] = {}
    monkeypatch.setattr(local_model, "_shared", servers)
    yield servers
    for server in servers.values():
        server.stop()


def episodes(records: Path, steps: Path) -> dict[int, tuple[float, list[Any]]]:
    """Each episode's score and joint actions, by seed."""
    actions: dict[int, list[Any]] = {}
    for line in steps.read_text(encoding="utf-8").splitlines():
        step = json.loads(line)
        actions.setdefault(step["seed"], []).append(step["joint_action"])
    return {record["seed"]: (record["score"], actions[record["seed"]])
            for record in map(json.loads, records.read_text(encoding="utf-8").splitlines())}


def test_a_benchmark_of_the_local_model_plays_the_same_episodes_at_any_concurrency(tmp_path: Path) -> None:
    """Several episodes at once share one server; each episode's answers, and so its actions and score, are the
    ones it gets alone (issue 48: 0.639 alone, 0.672 at concurrency 4)."""
    spec = policy_spec("local", env=ENV)
    assert spec.model is not None and spec.model.mode == "compact"  # the shipped adapter, as the Benchmark tab
    jobs = plan_jobs([spec.name], [TASK], [SCENARIO], EPISODES, ("train",), ENV)
    played = {}
    for concurrency in (1, 4):
        records, steps = tmp_path / f"c{concurrency}.jsonl", tmp_path / f"c{concurrency}_steps.jsonl"
        for record in run(jobs, {spec.name: spec}, records, concurrency=concurrency, trajectories=steps):
            assert record["error"] is None and record["llm"]["decisions"]["primary"] > 0, record
        played[concurrency] = episodes(records, steps)
    assert played[4] == played[1]


PARENT = """
import signal, sys, time
from aaos.agents.local_model import shared_server
signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C ends it, even where it inherits SIGINT ignored
print(shared_server().process.pid, flush=True)
time.sleep(3600)
"""
"""A process that starts a model server and waits. A shell's background job inherits SIGINT ignored (and Python
then keeps it ignored), so the script says what Ctrl-C does, as an interactive program's would."""


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_a_model_server_ends_with_the_process_that_started_it(ending: signal.Signals) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        server = int(parent.stdout.readline())
        assert model_servers(parent.pid) == {server}
        parent.send_signal(ending)
        parent.wait(timeout=GONE_TIMEOUT_S)
        assert_all_end({server}, f"after {ending.name} to their parent")
    finally:
        parent.kill()
        parent.wait()


def test_the_space_leaves_no_model_server_after_sigterm(browser: Browser) -> None:
    """`python app.py`, its local agent started from the Play tab, then SIGTERM (as a container host stops it)."""
    space, url = start_space(ARTIFACTS / "ui_model_servers.log")
    try:
        page = open_page(browser, url, {"width": 1280, "height": 800})
        pick(page, "aaos-policy", agents.label("local-untrained"))
        page.locator("#aaos-run").click()
        wait_until(lambda: bool(model_servers(space.pid)), START_TIMEOUT_S, "the Space to start a model server")
        servers = model_servers(space.pid)
        page.context.close()
        space.send_signal(signal.SIGTERM)
        space.wait(timeout=GONE_TIMEOUT_S)
        assert_all_end(servers, "after SIGTERM to the Space")
    finally:
        space.kill()
        space.wait()


def test_at_most_the_cap_of_shared_servers_run(own_pool: dict[Path | None, local_model.LocalModelServer],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_SERVERS_VARIABLE, "1")
    others = model_servers(os.getpid())  # the process's own pool's, from tests before this one
    untrained = shared_server()
    first = untrained.process.pid if untrained.process else 0
    assert shared_server() is untrained  # asked again while it runs: the same one
    adapter = local_model.trained_adapter(ENV)
    trained = shared_server(adapter)
    assert not is_model_server(first) and list(own_pool) == [adapter] and trained.running
    assert model_servers(os.getpid()) - others == {trained.process.pid if trained.process else 0}


def test_an_idle_shared_server_ends_and_starts_again_when_asked_for(
        own_pool: dict[Path | None, local_model.LocalModelServer], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(IDLE_VARIABLE, "2")
    server = shared_server()
    first = server.process.pid if server.process else 0
    wait_until(lambda: not server.running, GONE_TIMEOUT_S, "the idle server to end")
    assert server.process is not None and server.process.returncode == 0
    again = shared_server()
    assert again.running and again.answers() and again.process is not None and again.process.pid != first
