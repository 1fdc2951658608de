"""The Space's one-click benchmark: the plan (policies x tasks x scenarios x seeds), the run in a worker thread
with its progress, and the leaderboard and promotion gate from its records. Plain Python; no gradio.

It runs aaos.bench as `aaos bench` does and writes the same files (results JSONL, leaderboard CSV/JSON/MD/HTML) into
the tab's own folder. A model's token stays in its PolicySpec in memory; the files name the model only.

Its holdout is salted by default: each run draws a secret salt (aaos.core.seeding.new_salt) that re-draws every
holdout variant for that run alone (other sessions in the Space keep theirs), so no agent can have seen its
holdout episodes; the records and the leaderboard say "salted holdout" and carry the salt's fingerprint, never the
salt. A plan with `salted=False` plays the public holdout (reproducible from the public code).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import aaos
from aaos.agents import local_model
from aaos.agents.llm import LLMConfig, Mode, fallbacks, fix_hint
from aaos.bench import paired
from aaos.bench.paired import GroupKey, Standing, plural
from aaos.bench.report import GateResult, gate, leaderboard, write_board
from aaos.bench.runner import Job, plan_jobs, read_records, record_key, run_jobs
from aaos.bench.stats import summarise
from aaos.core.seeding import new_salt, salt_fingerprint, salted
from aaos.core.spec import Split
from aaos.policies import BASELINES, LOCAL_TRAINED, LOCAL_UNTRAINED, PolicySpec, baseline, display_name
from aaos.ui import agents, prose
from aaos.ui.formatting import version_key

CHAMPION = "heuristic"
POLICIES: tuple[tuple[str, str], ...] = (
    *((display_name(key), key) for key in ("heuristic", "random", "noop", "oracle")),
    (agents.LOCAL_LABEL, "local"),
    (agents.LOCAL_UNTRAINED_LABEL, "local-untrained"),
    ("OpenAI-compatible model (Model settings)", "openai"),
)
"""What the benchmark offers: (label, key); the local models only where they are installed."""
SPLITS: tuple[tuple[str, str], ...] = (("Train seeds", "train"), ("Holdout seeds", "holdout"))
DEFAULT_POLICIES: tuple[str, ...] = ("heuristic", "random")
DEFAULT_EPISODES = paired.DEFAULT_EPISODES
"""As `aaos bench`'s: enough seeds to detect a 0.05 difference on every org task and split (measured)."""
DEFAULT_CONCURRENCY = 4
DEFAULT_CANDIDATE = "random"
MAX_EPISODES = 50
MAX_CONCURRENCY = 16
RESULTS_FILE = "results.jsonl"


def policy_choices(local_installed: bool) -> list[tuple[str, str]]:
    return [(lbl, key) for lbl, key in POLICIES if key not in agents.LOCAL_AGENTS or local_installed]


def policies_info(local_installed: bool) -> str:
    missing = "" if local_installed else " " + prose.BENCH_LOCAL_MISSING.format(label=agents.LOCAL_LABEL)
    return prose.BENCH_POLICIES_INFO + missing


def candidate_choices(policies: Sequence[str]) -> list[tuple[str, str]]:
    """The policies the gate can test against the champion: the ticked ones but the champion."""
    return [(lbl, key) for lbl, key in POLICIES if key in policies and key != CHAMPION]


def candidate_for(policies: Sequence[str], wanted: str | None) -> str | None:
    """The gate candidate among the ticked policies: `wanted` if it is one of candidate_choices, else the first of
    them (DEFAULT_CANDIDATE first if it is ticked); None when only the champion is ticked."""
    keys = [key for _, key in candidate_choices(policies)]
    for key in (wanted, DEFAULT_CANDIDATE, *keys):
        if key in keys:
            return key
    return None


@dataclass(frozen=True)
class Plan:
    """What to run: policy keys (see POLICIES), tasks, scenarios, seed splits, episodes per split and concurrency.
    `mode` is the local model's; `endpoint` is the OpenAI-compatible model (token included, left out of repr)."""

    env: str
    policies: tuple[str, ...]
    tasks: tuple[str, ...]
    scenarios: tuple[str, ...]
    splits: tuple[Split, ...]
    episodes: int
    concurrency: int
    mode: Mode = "per_role"
    endpoint: LLMConfig | None = field(default=None, repr=False)
    salted: bool = True

    def name(self, key: str) -> str:
        """The result files' name for a policy key."""
        if key in BASELINES:
            return key
        if key in agents.LOCAL_AGENTS:
            trained = key == "local" and local_model.trained_adapter(self.env) is not None
            return LOCAL_TRAINED if trained else LOCAL_UNTRAINED
        assert self.endpoint is not None, "a plan with the OpenAI-compatible model has its endpoint"
        return f"llm:{self.endpoint.model}"

    def jobs(self) -> list[Job]:
        return plan_jobs([self.name(k) for k in self.policies], self.tasks, self.scenarios, self.episodes,
                         self.splits, self.env)

    def specs(self) -> dict[str, PolicySpec]:
        """The policy specs; starts the local model's server when the plan uses it (slow, may raise)."""
        specs = {}
        for key in self.policies:
            if key in BASELINES:
                specs[key] = baseline(key)
            elif key in agents.LOCAL_AGENTS:
                specs[self.name(key)] = PolicySpec(self.name(key), "llm", agents.start_local(key, self.env, self.mode))
            else:
                specs[self.name(key)] = PolicySpec(self.name(key), "llm", self.endpoint)
        return specs


def _whole(value: float | None, low: int, high: int) -> int | None:
    if value is None or not math.isfinite(value) or value != int(value) or not low <= value <= high:
        return None
    return int(value)


def _problem(policies: list[str], tasks: list[str], scenarios: list[str], splits: list[str], episodes: int | None,
             concurrency: int | None, endpoint: LLMConfig | str | None, need_endpoint: bool = True) -> str | None:
    if not policies:
        return "Tick at least one policy to benchmark."
    if not tasks:
        return "Tick at least one task."
    if not scenarios:
        return "Tick at least one scenario."
    if not splits:
        return "Tick the train seeds, the holdout seeds or both."
    if episodes is None:
        return f"Episodes per split must be a whole number from 1 to {MAX_EPISODES}."
    if concurrency is None:
        return f"Concurrency must be a whole number from 1 to {MAX_CONCURRENCY}."
    if set(policies) & set(agents.LOCAL_AGENTS) and agents.local_problem():
        return agents.local_problem()
    if need_endpoint and "openai" in policies and not isinstance(endpoint, LLMConfig):
        return endpoint or "Set the OpenAI-compatible model under Model settings."
    return None


def make_plan(env: str, policies: list[str], tasks: list[str], scenarios: list[str], splits: list[str],
              episodes: float | None, concurrency: float | None, mode: str,
              endpoint: LLMConfig | str | None) -> Plan | str:
    """The plan, or a message saying what to fix. `endpoint` is the OpenAI-compatible model (or what is wrong
    with its settings); it only matters when that policy is ticked."""
    count, parallel = _whole(episodes, 1, MAX_EPISODES), _whole(concurrency, 1, MAX_CONCURRENCY)
    problem = _problem(policies, tasks, scenarios, splits, count, parallel, endpoint)
    if problem is not None:
        return problem
    assert count is not None and parallel is not None  # _problem said so
    plan = Plan(env, tuple(key for _, key in POLICIES if key in policies), tuple(tasks), tuple(scenarios),
                tuple(cast(Split, s) for s in ("train", "holdout") if s in splits), count, parallel,
                "joint" if mode == "joint" else "per_role",
                endpoint if isinstance(endpoint, LLMConfig) and "openai" in policies else None)
    if not plan.jobs():
        return prose.BENCH_NOTHING
    return plan


def preview(env: str, policies: list[str], tasks: list[str], scenarios: list[str], splits: list[str],
            episodes: float | None) -> tuple[str, str]:
    """What Run benchmark will play with these settings (how many episodes), or what to fix, and its kind (info or
    error); shown while the settings change, before any run (the model's settings are checked on Run)."""
    count = _whole(episodes, 1, MAX_EPISODES)
    problem = _problem(policies, tasks, scenarios, splits, count, 1, None, need_endpoint=False)
    if problem is not None:
        return problem, "error"
    assert count is not None  # _problem said so
    jobs = plan_jobs(policies, tasks, scenarios, count, [cast(Split, s) for s in splits], env)
    if not jobs:
        return prose.BENCH_NOTHING, "error"
    return prose.BENCH_PLAN.format(episodes=plural(len(jobs), "episode"), seeds=plural(count, "seed")), "info"


@dataclass
class ModelCalls:
    """The model calls of a run's finished episodes (their records' `llm` accounting): how many failed, who decided
    the actions, and the latest failure with a fix, so that the Space can say calls are failing while it runs."""

    calls: int = 0
    failed: int = 0
    decisions: Counter[str] = field(default_factory=Counter)
    last_error: str | None = None
    hint: str = ""

    def add(self, llm: Mapping[str, Any] | None) -> None:
        if not llm:
            return
        self.calls += llm["calls"]
        self.failed += llm["failed_calls"]
        self.decisions.update(llm.get("decisions", {}))
        if llm.get("last_error"):
            self.last_error, self.hint = llm["last_error"], fix_hint(llm.get("last_error_type"))

    @property
    def fell_back(self) -> int:
        return fallbacks(self.decisions)

    def problem(self) -> str | None:
        """What went wrong with the calls so far (prose.BENCH_CALLS_FAILING), or None if nothing did."""
        if not self.failed and not self.fell_back:
            return None
        return prose.BENCH_CALLS_FAILING.format(failed=self.failed, calls=self.calls, fell_back=self.fell_back,
                                                 decided=sum(self.decisions.values()),
                                                 error=(self.last_error or "no answer").rstrip(". "), hint=self.hint)


class BenchmarkRun:
    """One benchmark in a worker thread. While it runs: `state` ("starting the local model", then "running"),
    `finished` of `total` episodes, the episodes `in_flight` with their steps, `steps_done` of `steps_total`, the
    `last` record and the `model_calls` of the finished episodes; once `done` is set: `state` ("finished", "stopped"
    or "failed"), `error`, the summary `rows`, their paired `standings` (rank groups, comparisons, noise floors) and
    the `failures` (records of episodes that raised)."""

    def __init__(self, plan: Plan, out_dir: Path) -> None:
        self.plan = plan
        self.out_dir = out_dir
        self.results = out_dir / RESULTS_FILE
        jobs = plan.jobs()
        self.total = len(jobs)
        self._horizons = {job.key: horizon(job) for job in jobs}
        self.steps_total = sum(self._horizons.values())
        """Every episode's steps at most (its task's max_steps): what steps_done counts towards."""
        self._steps_finished = 0
        self._in_flight: dict[str, tuple[Job, int]] = {}
        self.finished = 0
        self.last: dict[str, Any] | None = None
        self.model_calls = ModelCalls()
        self.state = "starting the local model" if set(plan.policies) & set(agents.LOCAL_AGENTS) else "running"
        self.error: str | None = None
        self.rows: list[dict[str, Any]] = []
        self.standings: dict[GroupKey, Standing] = {}
        self.failures: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self.elapsed_s = 0.0
        self.done = threading.Event()
        self._stop = threading.Event()
        self._running: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._main, name="aaos-benchmark", daemon=True)
        self._salt = new_salt() if plan.salted else None
        self.holdout_salt = salt_fingerprint(self._salt) if self._salt else None
        """The fingerprint of this run's secret holdout salt (None: the public holdout)."""

    def holdout(self) -> contextlib.AbstractContextManager[None]:
        """Within, holdout variants are drawn as this run drew them (its secret salt, which never leaves the run):
        the run's episodes, and the tab's Replay of them."""
        return salted(self._salt) if self._salt else contextlib.nullcontext()

    def start(self) -> BenchmarkRun:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._thread.start()
        return self

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        """Stop after the episodes in flight (their results are kept); idempotent."""
        self._stop.set()
        with self._lock:
            if self._running is not None:
                loop, task = self._running
                loop.call_soon_threadsafe(task.cancel)

    def files(self) -> list[Path]:
        """The downloads: the results JSONL and the leaderboard CSV, those that exist."""
        return [p for p in (self.results, self.out_dir / "leaderboard.csv") if p.exists()]

    def in_flight(self) -> list[tuple[Job, int]]:
        """The episodes being played, each with the steps played so far, in the order they took their first step."""
        return list(self._in_flight.copy().values())  # a copy: the worker thread adds and removes episodes

    @property
    def steps_done(self) -> int:
        """Steps played: every finished episode counts its horizon (one may end early), one in flight its steps."""
        return self._steps_finished + sum(step for _, step in self.in_flight())

    def _step(self, job: Job, step: int) -> None:
        self._in_flight[job.key] = (job, step)

    def _progress(self, finished: int, _total: int, record: dict[str, Any]) -> None:
        self.model_calls.add(record.get("llm"))
        key = record_key(record)
        self._in_flight.pop(key, None)
        self._steps_finished += self._horizons.get(key, 0)
        self.finished, self.last = finished, record

    async def _run(self, specs: dict[str, PolicySpec]) -> None:
        task = asyncio.current_task()
        assert task is not None
        with self._lock:
            self._running = (asyncio.get_running_loop(), task)
        try:  # Stop cancels model calls at once; should_stop keeps episodes without them from starting
            await run_jobs(self.plan.jobs(), specs, self.results, self.plan.concurrency, self._progress,
                           should_stop=self._stop.is_set, on_step=self._step)
        finally:
            with self._lock:
                self._running = None  # before asyncio.run closes the loop

    def _main(self) -> None:
        state = "finished"
        try:
            specs = self.plan.specs()
            self.state = "running"
            with self.holdout():
                asyncio.run(self._run(specs))  # its tasks inherit the salt in force
        except asyncio.CancelledError:
            pass
        except Exception as error:  # a failed run is reported in the Space, never raised into the server
            state, self.error = "failed", str(error) or type(error).__name__
        finally:
            try:
                self._summarise()
            except OSError as error:  # the tab's folder went away
                state, self.error = "failed", f"could not write the reports ({error})"
            self.elapsed_s = time.monotonic() - self.started
            self.state = "stopped" if self._stop.is_set() and state == "finished" else state
            self.done.set()

    def _summarise(self) -> None:
        """The summary rows, their standings and the failures from the results file, and the report files beside
        it."""
        records = read_records(self.results)
        self.failures = [r for r in records if r.get("error")]
        self.rows = summarise(records)
        self.standings = paired.standings(self.rows, records)
        if self.rows:
            write_board(self.rows, self.standings, self.out_dir)


def horizon(job: Job) -> int:
    """The most steps the job's episode can take: its task's max_steps."""
    return aaos.spec(job.env).task(job.task).max_steps


def ranked(rows: list[dict[str, Any]], found: Mapping[GroupKey, Standing]) -> list[dict[str, Any]]:
    """The leaderboard (aaos.bench.report.leaderboard: each row's `rank` group within its environment version and
    split, from the paired comparisons in `found`, best first) with the policies' display names; rows of different
    environment or reward versions are never ranked together, and a row with `unranked` set (a model whose actions
    were mostly fallbacks, or a policy reading hidden state) has rank None, after the ranked ones."""
    return [{**row, "policy": display_name(row["policy"])} for row in sorted(leaderboard(rows, found), key=version_key)]


PAIRWISE_COLUMNS = ("Environment, split", "Better", "Worse", "Episodes", "Mean difference", "95 % CI", "p",
                    "p (Holm)", "Significant")
"""The paired comparisons' table, one row per pair of ranked policies (aaos.bench.paired.PairedDifference)."""


def _p(value: float) -> str:
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def pairwise_table(found: Mapping[GroupKey, Standing]) -> list[tuple[str, ...]]:
    """Every comparison of every group (PAIRWISE_COLUMNS), the policies by their display names; a group refused as
    not paired has one row saying why."""
    return [row for group, result in paired.ordered(found) for row in (
        [(paired.group_label(group), "—", "—", "—", "—", "—", "—", "—", result.refused)] if result.refused else
        [(paired.group_label(group), display_name(c.better), display_name(c.worse), str(c.episodes),
          f"{c.mean_difference:+.3f}", f"{c.ci_low:+.3f}\u2013{c.ci_high:+.3f}", _p(c.p_value), _p(c.p_holm),
          "yes" if c.significant else "no") for c in result.comparisons])]


def gate_for(run: BenchmarkRun, candidate: str | None) -> tuple[str, GateResult | str]:
    """The candidate's display name and its gate verdict against the champion, or what keeps it from being
    judged (none, not in the run, no champion)."""
    if candidate is None:
        return "No candidate", "The gate compares a candidate with the champion: tick another policy and run again."
    if candidate not in run.plan.policies:
        label = {key: lbl for lbl, key in POLICIES}.get(candidate, candidate)
        return label, f"{label} was not part of this run: tick it and run the benchmark again."
    name = display_name(run.plan.name(candidate))
    if CHAMPION not in run.plan.policies:
        return name, "The gate compares a candidate with the champion: tick Champion (heuristic) and run again."
    return name, gate(ranked(run.rows, run.standings), name, champion=display_name(CHAMPION))
