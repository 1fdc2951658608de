"""Run policies x tasks x scenarios x seeds, one JSONL record per episode written as it finishes.

Episodes run as asyncio tasks under a bounded concurrency; model calls across all episodes share one
limit (aaos.bench.ray_backend runs them as Ray tasks instead, with the same records). A re-run with the
same output file skips the episodes already recorded, so an interrupted run resumes without losing or
repeating anything.

A scenario is a built-in id or a path to a scenario file (*.json; its split is read from the file). Every record
carries `holdout_salt`: the fingerprint (aaos.core.seeding.salt_fingerprint) of the holdout salt its episode was
played under, None without one; the salt itself is never written; and `split_label`, what it is of in words:
"train", "public holdout" (no salt: the variants anyone can draw from the public code) or "salted holdout". A
holdout record of another salt is not taken as done on resume: its episode is a different one. Every record
also carries `env_version` and `reward_version`, the environment's versions it was played under: a record of
other versions than the registered environment's is not taken as done on resume either (it is played again), and
summaries never pool records of different versions.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import aaos
from aaos.bench.remote import TIMEOUT_S, Remote, RemoteEpisode
from aaos.bench.stats import SUCCESS_THRESHOLD
from aaos.core.env import StepResult
from aaos.core.extras import require
from aaos.core.info import HARD_SEVERITIES
from aaos.core.policy import Policy
from aaos.core.seeding import salt_fingerprint, seed_split, split_label, split_seeds
from aaos.core.spec import Split
from aaos.core.trajectory import EpisodeMeta, step_record
from aaos.policies import PolicySpec, build_policy

RECORD_VERSION = 2
"""Version 2 added env_version and reward_version."""
Progress = Callable[[int, int, dict[str, Any]], None]
"""Called as each episode is recorded: (jobs with a record, jobs in the run, the record)."""


@dataclass(frozen=True, slots=True)
class Job:
    """One episode to run."""

    policy: str
    env: str
    task: str
    scenario: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.policy}|{self.env}|{self.task}|{self.scenario}|{self.seed}"


StepProgress = Callable[[Job, int], None]
"""Called after each step of an episode in flight: (its job, the steps played so far)."""


@lru_cache(maxsize=1024)
def _file_split(env: str, path: str, mtime_ns: int) -> Split | None:
    read = aaos.kit_of(env).scenario_file
    return read(path).split if read is not None else None


def scenario_split(scenario: str, env: str = aaos.DEFAULT_ENV) -> Split | None:
    """The split of a built-in scenario (by id) or of a scenario file (a path ending in .json, read by the
    environment's kit; an unreadable or invalid file raises ValueError); None for a name that is neither, or a
    file of an environment without scenario files."""
    for info in aaos.list_scenarios(env=env):
        if info["id"] == scenario:
            return info["split"]  # type: ignore[return-value]
    if scenario.endswith(".json"):
        path = Path(scenario)
        return _file_split(env, str(path), path.stat().st_mtime_ns if path.exists() else 0)
    return None


def versions(env: str) -> dict[str, str]:
    """The env_version and reward_version fields of a record of environment `env` played now."""
    spec = aaos.spec(env)
    return {"env_version": spec.version, "reward_version": spec.reward_version}


def current_versions(record: dict[str, Any]) -> bool:
    """Whether a record was played under the versions its environment has now (False for an unknown one)."""
    env = record.get("env")
    if not isinstance(env, str) or env not in aaos.env_ids():
        return False
    return all(record.get(key) == value for key, value in versions(env).items())


def plan_jobs(policies: Iterable[str], tasks: Iterable[str], scenarios: Iterable[str], episodes: int,
              splits: Iterable[Split] = ("train", "holdout"), env: str = aaos.DEFAULT_ENV) -> list[Job]:
    """Every policy on every task and scenario, with `episodes` seeds of each split; holdout-only scenarios
    (built-in, or files whose split is holdout) get holdout seeds only, train scenarios get seeds of both splits
    asked for."""
    tasks, scenarios, splits = list(tasks), list(scenarios), list(splits)
    scenario_splits = {scenario: scenario_split(scenario, env) for scenario in scenarios}
    jobs = []
    for policy in policies:
        for task in tasks:
            for scenario in scenarios:
                for split in splits:
                    if scenario_splits[scenario] == "holdout" and split == "train":
                        continue
                    jobs.extend(Job(policy, env, task, scenario, seed) for seed in split_seeds(split, episodes))
    return jobs


def episode_split(job: Job) -> Split:
    """An episode is holdout if its scenario or its seed is."""
    holdout = scenario_split(job.scenario, job.env) == "holdout" or seed_split(job.seed) == "holdout"
    return "holdout" if holdout else "train"


async def run_episode(job: Job, policy: Policy, trajectory: list[dict[str, Any]] | None = None,
                      remote: Remote | None = None, on_step: StepProgress | None = None) -> dict[str, Any]:
    """Play one episode; the record holds the score, its breakdown, validity counts and model accounting.
    When `trajectory` is a list, the episode's per-step trajectory records are appended to it. With `remote`, the
    episode is played on that server (aaos.bench.remote), its holdout salt the server's. `on_step` is told of every
    step played."""
    if remote is not None:
        return await _remote_episode(job, policy, remote, on_step)
    started = time.perf_counter()
    salt = salt_fingerprint()  # of the salt the variant is drawn with, read as the environment is built
    env = aaos.make(job.task, scenario=job.scenario, seed=job.seed, env=job.env)
    policy.reset(job.seed)
    observation = env.reset()
    policy.bind(env)
    tally = _Tally()
    while True:
        joint = await policy.act_async(observation)
        result = env.step(joint)
        if trajectory is not None:
            meta = EpisodeMeta(job.env, job.task, job.scenario, job.seed)
            trajectory.append(step_record(env.spec, meta, len(trajectory) + 1, joint, result, env.state(),
                                          observation))
        observation = result.observation
        tally.add(result, job, on_step)
        if result.done:
            break
    return _record(job, policy, salt, result, tally, started)


async def _remote_episode(job: Job, policy: Policy, remote: Remote, on_step: StepProgress | None
                          ) -> dict[str, Any]:
    started = time.perf_counter()
    async with require("httpx", "bench").AsyncClient(timeout=TIMEOUT_S) as client:
        episode = RemoteEpisode(remote, job.env, client)
        policy.reset(job.seed)
        observation = await episode.reset(job.task, job.scenario, job.seed)
        tally = _Tally()
        try:
            while True:
                result = await episode.step(await policy.act_async(observation))
                observation = result.observation or {}
                tally.add(result, job, on_step)
                if result.done:
                    break
        finally:
            await episode.close()
    return _record(job, policy, remote.holdout_salt, result, tally, started)


@dataclass(slots=True)
class _Tally:
    """An episode's rewards, actions other than no_op, the rejected ones among them and hard violations."""

    rewards: list[float] = field(default_factory=list)
    actions: int = 0
    invalid: int = 0
    hard: int = 0

    def add(self, result: StepResult, job: Job, on_step: StepProgress | None) -> None:
        """Count a step's result, and tell `on_step` of it."""
        self.rewards.append(result.reward)
        for outcome in result.info["action_results"].values():
            if outcome["action_type"] != "no_op":
                self.actions += 1
                self.invalid += outcome["status"] == "rejected"
        self.hard += sum(e["severity"] in HARD_SEVERITIES for e in result.info["oversight_events"])
        if on_step is not None:
            on_step(job, len(self.rewards))


def _record(job: Job, policy: Policy, salt: str | None, result: StepResult, tally: _Tally, started: float
            ) -> dict[str, Any]:
    """An episode's record from its last step result and its tally."""
    breakdown = result.info["reward_breakdown"]
    stats = getattr(policy, "stats", None)
    return {
        "version": RECORD_VERSION,
        **asdict(job),
        **versions(job.env),
        **_split_fields(job, salt),
        "score": result.info["score"],
        "success": result.info["score"] >= SUCCESS_THRESHOLD,
        "steps": result.info["step"],
        "return": sum(tally.rewards),
        "components": breakdown["components"],
        "penalty": breakdown["penalty"],
        "actions": tally.actions,
        "invalid_actions": tally.invalid,
        "hard_violations": tally.hard,
        "llm": stats.to_dict() if stats is not None else None,
        "reads_hidden_state": policy.reads_hidden_state,
        "wall_s": time.perf_counter() - started,
        "error": None,
    }


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records in a JSONL file; a line cut short by a crash is skipped."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def _append(path: Path, record: dict[str, Any]) -> None:
    """Keys stay in the order they were made: an observation read back renders the prompt the model saw live
    (aaos.agents.prompts writes nested fields in their order)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def error_record(job: Job, error: BaseException, remote: Remote | None = None) -> dict[str, Any]:
    """The record of an episode that raised: the job, its split, the salt fingerprint and `error`
    ("Type: message"), no score."""
    try:
        split: Split | None = episode_split(job)
    except Exception:  # a scenario file that cannot be read: the error below says why
        split = None
    try:
        played = versions(job.env)
    except Exception:  # an environment that cannot be loaded: the error below says why
        played = {"env_version": None, "reward_version": None}
    salt = run_fingerprint(remote)
    return {"version": RECORD_VERSION, **asdict(job), **played, "split": split, "holdout_salt": salt,
            "split_label": split_label(split, salt), "error": f"{type(error).__name__}: {error}"}


def _split_fields(job: Job, salt: str | None) -> dict[str, Any]:
    """A record's split, the fingerprint of the holdout salt it was played under, and what it is of in words:
    "train", "public holdout" or "salted holdout" (aaos.core.seeding.split_label)."""
    split = episode_split(job)
    return {"split": split, "holdout_salt": salt, "split_label": split_label(split, salt)}


def salt_mismatch(record: dict[str, Any], fingerprint: str | None) -> bool:
    """Whether a holdout record was played under another holdout salt than the one of `fingerprint` (None: no
    salt). A train record never is: train variants ignore the salt. A record older than the field counts as
    played without a salt."""
    return record.get("split") == "holdout" and record.get("holdout_salt") != fingerprint


async def play(job: Job, spec: PolicySpec, call_limit: asyncio.Semaphore | None = None,
               with_steps: bool = False, remote: Remote | None = None, on_step: StepProgress | None = None
               ) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """One job with a fresh policy built from `spec`: its record (an error record when the episode raises: a
    failure is recorded, never fatal to the run) and, `with_steps`, its trajectory records (None on error). With
    `remote`, played on that server; `on_step` is told of every step."""
    policy = build_policy(spec, job.env, job.seed, call_limit)
    steps: list[dict[str, Any]] | None = [] if with_steps else None
    try:
        return await run_episode(job, policy, steps, remote, on_step), steps
    except Exception as error:
        return error_record(job, error, remote), None
    finally:
        await policy.aclose()


class Ledger:
    """The bookkeeping of one run, shared by the local and the Ray runner.

    `done` maps a job's key to its record, those already in `out` included (error records are left out, so a
    re-run retries them, and so are holdout records played under another holdout salt than the one in force, and
    records played under other versions of their environment than the registered one);
    `pending` lists the jobs without one, in order; `finished` counts the run's jobs with
    a record, as `progress(finished, total, record)` reports them; `should_stop`, when it returns True, keeps
    new episodes from starting."""

    def __init__(self, jobs: list[Job], out: Path, trajectories: Path | None = None,
                 progress: Progress | None = None, should_stop: Callable[[], bool] | None = None,
                 remote: Remote | None = None) -> None:
        for path in (out, trajectories):
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
        self.jobs, self.out, self.trajectories = jobs, out, trajectories
        self.progress, self.should_stop = progress, should_stop
        fingerprint = run_fingerprint(remote)
        self.done = {record_key(r): r for r in read_records(out)
                     if r.get("error") is None and not salt_mismatch(r, fingerprint) and current_versions(r)}
        self.pending = [job for job in jobs if job.key not in self.done]
        self.finished = len(jobs) - len(self.pending)

    def stopping(self) -> bool:
        return self.should_stop is not None and self.should_stop()

    def add(self, job: Job, record: dict[str, Any], steps: list[dict[str, Any]] | None) -> None:
        """Append (and fsync) the episode's trajectory records, then its result record; report progress."""
        if self.trajectories is not None and steps:
            for step in steps:
                _append(self.trajectories, step)
        _append(self.out, record)
        self.done[job.key] = record
        self.finished += 1
        if self.progress is not None:
            self.progress(self.finished, len(self.jobs), record)

    def records(self) -> list[dict[str, Any]]:
        """The records of the run's jobs that have one, in the jobs' order."""
        return [self.done[job.key] for job in self.jobs if job.key in self.done]


async def run_jobs(jobs: list[Job], specs: dict[str, PolicySpec], out: Path, concurrency: int = 8,
                   progress: Progress | None = None, trajectories: Path | None = None,
                   should_stop: Callable[[], bool] | None = None, remote: Remote | None = None,
                   on_step: StepProgress | None = None) -> list[dict[str, Any]]:
    """Run the jobs not yet in `out`, at most `concurrency` episodes and model calls at once; returns all
    records of these jobs (earlier ones included). With `trajectories`, every episode's per-step trajectory
    records (aaos.core.trajectory, with observations) are appended there before its result record. Once
    `should_stop()` is True no episode starts; those running finish and are recorded. With `remote`, the
    episodes are played on that server (aaos.bench.remote). `on_step` is told of every step of every episode in
    flight (`progress` of every episode recorded)."""
    ledger = Ledger(jobs, out, trajectories, progress, should_stop, remote)
    episodes = asyncio.Semaphore(concurrency)
    calls = asyncio.Semaphore(concurrency)

    async def one(job: Job) -> None:
        async with episodes:
            if not ledger.stopping():
                record, steps = await play(job, specs[job.policy], calls, trajectories is not None, remote, on_step)
                ledger.add(job, record, steps)

    await asyncio.gather(*(one(job) for job in ledger.pending))
    return ledger.records()


def record_key(record: dict[str, Any]) -> str:
    """The key (Job.key) of the job a record is of."""
    return f"{record['policy']}|{record['env']}|{record['task']}|{record['scenario']}|{record['seed']}"


def run(jobs: list[Job], specs: dict[str, PolicySpec], out: Path, concurrency: int = 8,
        progress: Progress | None = None, trajectories: Path | None = None, remote: Remote | None = None,
        on_step: StepProgress | None = None) -> list[dict[str, Any]]:
    """Synchronous entry to run_jobs."""
    return asyncio.run(run_jobs(jobs, specs, out, concurrency, progress, trajectories, remote=remote,
                                on_step=on_step))


def run_fingerprint(remote: Remote | None) -> str | None:
    """The fingerprint of the holdout salt a run's episodes are drawn with: the server's, or the one in force."""
    return remote.holdout_salt if remote is not None else salt_fingerprint()
