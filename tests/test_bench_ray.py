"""`aaos bench --ray`: episodes as Ray tasks on a real 2-CPU head give the records of a local run (but wall_s),
failing episodes included, resume and stop when asked; and the local runner's should_stop hook."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from fake_openai import Script, serve
from helpers import free_ports

from aaos.bench.ray_backend import run_jobs_on_ray
from aaos.bench.runner import Job, plan_jobs, read_records, run, run_jobs
from aaos.cli import main
from aaos.policies import PolicySpec, baseline

SPECS: dict[str, PolicySpec] = {"heuristic": baseline("heuristic"), "random": baseline("random")}
HEAD_START_S = 60
HEAD_STOP_S = 15
RAY_CLUSTER = pytest.mark.slow  # a test that starts a local Ray cluster (the optional [ray] extra's backend)


class Head(NamedTuple):
    """A Ray head: its address for ray.init, and the folder of its files and logs."""

    address: str
    folder: Path


def _signal_group(leader: int, signum: int) -> bool:
    """Send `signum` to the process group `leader` leads; False when none of it is left."""
    try:
        os.killpg(leader, signum)
    except ProcessLookupError:
        return False
    return True


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """End the head: `ray start --block` stops what it started on SIGTERM; whatever is left of its process group
    (the head's own session, so only what this fixture started) is then killed."""
    _signal_group(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + HEAD_STOP_S
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=HEAD_STOP_S)
    while _signal_group(process.pid, 0) and time.monotonic() < deadline:
        time.sleep(0.2)
    _signal_group(process.pid, signal.SIGKILL)
    process.wait()


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Head]:
    """A real local Ray head with 2 CPUs on free ports, its files under the test's temporary folder."""
    pytest.importorskip("ray", reason='Ray is an optional extra: pip install "aaos[ray]"')
    (port, dashboard, agent), temp = free_ports(3), tmp_path_factory.mktemp("ray")
    command = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--num-cpus", "2",
               "--port", str(port),
               "--dashboard-port", str(dashboard), "--dashboard-agent-listen-port", str(agent),
               "--include-dashboard=false", "--disable-usage-stats", "--object-store-memory", str(200 * 2**20),
               "--temp-dir", str(temp)]
    log = temp / "head.log"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        with log.open("w") as sink:
            process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            _wait_for_head(process, log)
            yield Head(f"127.0.0.1:{port}", temp)
        finally:
            _stop_group(process)


def _wait_for_head(process: subprocess.Popen[bytes], log: Path) -> None:
    """Until `ray start --block` says the head runs (it then keeps still until stopped)."""
    deadline = time.monotonic() + HEAD_START_S
    while "Ray runtime started" not in log.read_text(errors="replace"):
        assert process.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
        time.sleep(0.2)


def _timeless(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The records by job key, without what measures time: wall_s and the model calls' latency."""
    return {Job(r["policy"], r["env"], r["task"], r["scenario"], r["seed"]).key:
            {**r, "wall_s": None, "llm": r.get("llm") and {**r["llm"], "latency_s": None, "mean_latency_s": None}}
            for r in records}


def _sorted_lines(path: Path) -> list[str]:
    return sorted(path.read_text(encoding="utf-8").splitlines())


@RAY_CLUSTER
def test_ray_records_equal_a_local_run_and_resume(head: Head, tmp_path: Path) -> None:
    jobs = plan_jobs(list(SPECS), ["org_simulation", "crisis_management"],
                     ["product_launch_failure", "vendor_outage_cascade"], 2)
    assert len(jobs) == 24 and {j.scenario for j in jobs if j.seed < 10_000} == {"product_launch_failure"}
    jobs.append(Job("heuristic", "org", "org_simulation", "no_such_scenario", 0))  # raises on the worker
    local = run(jobs, SPECS, tmp_path / "local.jsonl", 2, trajectories=tmp_path / "local_steps.jsonl")
    seen: list[int] = []
    remote = run_jobs_on_ray(jobs, SPECS, tmp_path / "ray.jsonl", head.address, 2, lambda n, _t, _r: seen.append(n),
                             tmp_path / "ray_steps.jsonl")
    assert seen == list(range(1, 26))
    assert _timeless(remote) == _timeless(local) == _timeless(read_records(tmp_path / "ray.jsonl"))
    assert all(r["wall_s"] > 0 for r in remote[:-1])
    assert _sorted_lines(tmp_path / "ray_steps.jsonl") == _sorted_lines(tmp_path / "local_steps.jsonl")
    *played, failed = remote
    assert all(r["error"] is None and r["steps"] > 0 for r in played)
    assert failed["error"] and "no_such_scenario" in failed["error"] and "score" not in failed

    written = (tmp_path / "ray.jsonl").read_bytes()
    again = run_jobs_on_ray(jobs[:-1], SPECS, tmp_path / "ray.jsonl", head.address, 2, lambda *_: seen.append(0))
    assert again == played and len(seen) == 25 and (tmp_path / "ray.jsonl").read_bytes() == written


@RAY_CLUSTER
def test_ray_should_stop_starts_no_new_episode(head: Head, tmp_path: Path) -> None:
    jobs = plan_jobs(["heuristic"], ["org_simulation"], ["product_launch_failure"], 2)
    recorded: list[dict[str, Any]] = []
    records = run_jobs_on_ray(jobs, SPECS, tmp_path / "ray.jsonl", head.address, 1,
                              lambda _n, _t, record: recorded.append(record), should_stop=lambda: bool(recorded))
    assert records == recorded == read_records(tmp_path / "ray.jsonl") and len(records) == 1


def test_should_stop_starts_no_new_episode_and_a_rerun_finishes(tmp_path: Path) -> None:
    jobs = plan_jobs(list(SPECS), ["org_simulation"], ["product_launch_failure"], 1)
    out = tmp_path / "results.jsonl"
    recorded: list[dict[str, Any]] = []
    records = asyncio.run(run_jobs(jobs, SPECS, out, 1, lambda _n, _t, record: recorded.append(record),
                                   should_stop=lambda: bool(recorded)))
    assert records == recorded == read_records(out) and len(records) == 1
    assert len(asyncio.run(run_jobs(jobs, SPECS, out, 1))) == len(read_records(out)) == len(jobs) == 4


def _bench(out: Path, *extra: str) -> list[dict[str, Any]]:
    argv = ["bench", "--policy", "heuristic", "--task", "org_simulation", "--scenario", "silent_data_drift",
            "--episodes", "1", "--concurrency", "2", "--out", str(out), *extra]
    assert main(argv) == 0
    assert (out / "leaderboard.md").exists()
    return read_records(out / "results.jsonl")


@RAY_CLUSTER
def test_the_cli_with_ray_writes_a_local_runs_records_and_never_the_token(head: Head, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"hf_secret_{os.getpid()}"  # not spelled out here: this file goes to the workers with the checkout
    monkeypatch.setenv("HF_TOKEN", secret)
    script = Script(modes=["ok"])
    with serve(script) as url:
        model = ("--policy", "llm", "--model", "fake-model", "--base-url", url, "--mode", "joint")
        remote = _bench(tmp_path / "ray", *model, "--ray", head.address)
        assert len(script.requests) == 40  # 2 episodes of 20 steps, one call a step
        assert {h["authorization"] for h in script.headers} == {f"Bearer {secret}"}  # the workers had the token
        local = _bench(tmp_path / "local", *model)
    assert len(remote) == 4 and _timeless(remote) == _timeless(local)
    assert {r["llm"]["decisions"]["primary"] for r in remote if r["llm"]} == {20 * 6}
    written = [path for folder in (tmp_path / "ray", head.folder) for path in folder.rglob("*") if path.is_file()]
    assert not [path for path in written if secret.encode() in path.read_bytes()]


def test_the_cli_says_how_to_install_ray_when_it_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` finds where Ray is not installed
    assert main(["bench", "--policy", "heuristic", "--out", str(tmp_path), "--ray", "auto"]) == 2
    assert 'pip install "aaos[ray]"' in capsys.readouterr().err
    assert not (tmp_path / "results.jsonl").exists()
