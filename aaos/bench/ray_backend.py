"""`aaos bench --ray ADDRESS`: the benchmark's episodes as Ray tasks, for runs that outgrow one machine.

This process (the driver) keeps the local runner's guarantees through the same Ledger: it skips the episodes the
results file already holds, keeps at most `concurrency` episodes in flight, and appends (and fsyncs) each record as
its task finishes. A task plays one episode as the local runner does (runner.play), so the records are those of a
local run but for `wall_s`; an episode that raises, or a task Ray cannot run, gives an error record.

Ray is an optional extra: pip install "aaos[ray]". The tasks run the driver's checkout, shipped as their working_dir
(the aaos package and the scenarios beside it; what .gitignore names, such as runs/, stays behind), so every worker
plays the driver's code and scenarios. Each node still needs the driver's Python with aaos's dependencies, best
aaos itself installed as on the driver (pip install -e ".[ray]" in a checkout).

A model's token travels to the workers inside the task arguments (LLMConfig leaves it out of its repr) and is
neither logged nor written; it is kept out of the runtime environment, which Ray shows.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import aaos
from aaos.bench.runner import Job, Ledger, Progress, error_record, play
from aaos.policies import PolicySpec

INSTALL_HINT = 'pip install "aaos[ray]"'
CHECKOUT = Path(aaos.__file__).resolve().parents[1]
"""The folder holding the aaos package and the scenarios: the tasks' working_dir."""

Outcome = tuple[dict[str, Any], list[dict[str, Any]] | None]
"""What one episode gives: its record and, when asked for, its trajectory records."""


def missing() -> str | None:
    """Why --ray cannot run here (with how to install Ray), or None when Ray is installed."""
    if importlib.util.find_spec("ray") is None:
        return f"Ray is not installed; --ray needs it: {INSTALL_HINT}"
    return None


def _ray() -> ModuleType:
    problem = missing()
    if problem is not None:
        raise ImportError(problem)
    import ray

    return ray


def play_task(job: Job, spec: PolicySpec, with_steps: bool) -> Outcome:
    """What one Ray task runs: the job's episode in an event loop of its own. Model calls are not limited across
    tasks; the episodes in flight are."""
    return asyncio.run(play(job, spec, None, with_steps))


def _outcome(ray: ModuleType, ref: Any, job: Job) -> Outcome:
    """A finished task's outcome; a task Ray could not run (its worker died, say) gives an error record."""
    try:
        return ray.get(ref)
    except Exception as error:
        return error_record(job, error), None


def _drain(ray: ModuleType, ledger: Ledger, submit: Callable[[Job], Any], concurrency: int) -> None:
    """Keep up to `concurrency` tasks in flight until the pending jobs are done or the ledger says stop; record each
    task as it finishes."""
    queue: Iterator[Job] = iter(ledger.pending)
    running: dict[Any, Job] = {}
    while True:
        while len(running) < concurrency and not ledger.stopping() and (job := next(queue, None)) is not None:
            running[submit(job)] = job
        if not running:
            return
        ready, _ = ray.wait(list(running), num_returns=1)
        job = running.pop(ready[0])
        ledger.add(job, *_outcome(ray, ready[0], job))


def run_jobs_on_ray(jobs: list[Job], specs: dict[str, PolicySpec], out: Path, address: str, concurrency: int = 8,
                    progress: Progress | None = None, trajectories: Path | None = None,
                    should_stop: Callable[[], bool] | None = None) -> list[dict[str, Any]]:
    """runner.run_jobs on the Ray cluster at `address` (as ray.init takes it: "auto", "HOST:PORT", "ray://HOST:PORT",
    or "local" for a cluster of this machine started here and stopped after), at most `concurrency` episodes in
    flight. Returns all records of these jobs (earlier ones included); without pending jobs it does not connect."""
    ledger = Ledger(jobs, out, trajectories, progress, should_stop)
    if not ledger.pending:
        return ledger.records()
    ray = _ray()
    ray.init(address=address, runtime_env={"working_dir": str(CHECKOUT)})
    try:
        task = ray.remote(play_task)
        _drain(ray, ledger, lambda job: task.remote(job, specs[job.policy], trajectories is not None), concurrency)
    finally:
        ray.shutdown()
    return ledger.records()
