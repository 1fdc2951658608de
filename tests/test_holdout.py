"""The holdout is held out: a secret salt re-draws every holdout variant (never a train one), the schedule of a
salted holdout episode cannot be inferred from public data, and the salt never reaches the benchmark's outputs."""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import aaos
from aaos.bench.runner import Ledger, plan_jobs, read_records, run
from aaos.cli import main
from aaos.core.seeding import HOLDOUT_SALT_ENV, HOLDOUT_SEED_START, salt_fingerprint, split_seeds
from aaos.policies import baseline

SCENARIOS = [s["id"] for s in aaos.list_scenarios()]
TRAIN_SCENARIOS = [s["id"] for s in aaos.list_scenarios("train")]
HOLDOUT_SCENARIOS = [s["id"] for s in aaos.list_scenarios("holdout")]
SALT = "evaluator-secret-9Qx2-kept-private"
"""The secret of these tests: long and odd enough that finding it in a file can only mean it leaked."""
ATTACK_TASK = "full_episode"
ATTACK_EPISODES = 30
"""Salted holdout episodes attacked per scenario."""
ATTACK_SEARCH = 300
"""Holdout seeds of the public seed space the attacker plays without a salt."""
MAX_SALTED_SUCCESS = 0.10
MIN_UNSALTED_SUCCESS = 0.90

Schedule = tuple[tuple[tuple[Any, ...], ...], tuple[tuple[str, int], ...]]


@pytest.fixture(autouse=True)
def _no_salt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts without a salt, whatever the shell running the tests has set."""
    monkeypatch.delenv(HOLDOUT_SALT_ENV, raising=False)


def _state_at_reset(scenario: str, seed: int) -> str:
    env = aaos.make(ATTACK_TASK, scenario=scenario, seed=seed)
    env.reset()
    return json.dumps(env.state(), sort_keys=True)


def _salted(monkeypatch: pytest.MonkeyPatch, salt: str | None, scenario: str, seed: int) -> str:
    if salt is None:
        monkeypatch.delenv(HOLDOUT_SALT_ENV, raising=False)
    else:
        monkeypatch.setenv(HOLDOUT_SALT_ENV, salt)
    return _state_at_reset(scenario, seed)


# --- (a) the salt re-draws holdout variants and only those -------------------------------------------


@pytest.mark.parametrize("scenario", TRAIN_SCENARIOS)
def test_salt_never_changes_train_variants(monkeypatch: pytest.MonkeyPatch, scenario: str) -> None:
    for seed in [*range(5), HOLDOUT_SEED_START - 1]:
        assert _salted(monkeypatch, SALT, scenario, seed) == _salted(monkeypatch, None, scenario, seed)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_salt_redraws_every_holdout_variant(monkeypatch: pytest.MonkeyPatch, scenario: str) -> None:
    seeds = split_seeds("holdout", 5)
    if scenario in HOLDOUT_SCENARIOS:  # a holdout-only scenario draws holdout variants from any seed
        seeds += [0, 1]
    for seed in seeds:
        public = _salted(monkeypatch, None, scenario, seed)
        salted = _salted(monkeypatch, SALT, scenario, seed)
        assert salted != public, f"{scenario} seed {seed}: the salt did not change the variant"
        assert _salted(monkeypatch, SALT, scenario, seed) == salted, "the same salt must give the same variant"
        assert _salted(monkeypatch, SALT + "-other", scenario, seed) != salted, "another salt, another variant"


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_no_risk_of_a_variant_spells_another_risk(scenario: str) -> None:
    """Flagging one risk shows its remediation task to every role; its name must not spell another risk, which may
    still be hidden (a holdout variant's extra risk once copied the remediation of the risk it was drawn from)."""
    seeds = [*range(3), *split_seeds("holdout", 40)]
    for seed in seeds:
        env = aaos.make(ATTACK_TASK, scenario=scenario, seed=seed)
        env.reset()
        risks = env.state()["risks"]
        for risk in risks:
            shown = json.dumps(risk["definition"]["remediation"])
            for other in risks:
                if other is not risk:
                    d = other["definition"]
                    spelled = [text for text in (d["id"], d["name"], d["description"]) if text in shown]
                    assert not spelled, f"{scenario} seed {seed}: {risk['id']}'s remediation spells {spelled}"


def test_fingerprint_is_not_the_salt(monkeypatch: pytest.MonkeyPatch) -> None:
    assert salt_fingerprint() is None
    monkeypatch.setenv(HOLDOUT_SALT_ENV, SALT)
    fingerprint = salt_fingerprint()
    assert fingerprint == salt_fingerprint(SALT) and fingerprint is not None
    assert SALT not in fingerprint and fingerprint != salt_fingerprint(SALT + "x")


# --- (b) the schedule-inference attack ----------------------------------------------------------------


def _schedule(state: dict[str, Any]) -> Schedule:
    """What the attacker wants to know: when and where each risk can be caught, and when each event fires."""
    risks = tuple((r["id"], r["definition"]["metric"], tuple(r["definition"]["visible_to"]),
                   r["definition"]["noticeable_from"], r["definition"]["escalates_at"]) for r in state["risks"])
    events = tuple(sorted((e["id"], e["definition"]["step"]) for e in state["events"]))
    return risks, events


def _play_step_zero(scenario: str, seed: int) -> tuple[str, Schedule]:
    """The step-0 observation (as JSON) an agent gets, and the hidden schedule behind it."""
    env = aaos.make(ATTACK_TASK, scenario=scenario, seed=seed)
    observation = env.reset()
    return json.dumps(observation, sort_keys=True), _schedule(env.state())


@pytest.fixture(scope="module")
def public_index() -> dict[str, dict[str, Counter[Schedule]]]:
    """The attacker's precomputation, per scenario: step-0 observation -> the schedules of the public (unsalted)
    holdout variants that show it, over holdout seeds 10000 .. 10000 + ATTACK_SEARCH."""
    index: dict[str, dict[str, Counter[Schedule]]] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(HOLDOUT_SALT_ENV, raising=False)
        for scenario in SCENARIOS:
            table: dict[str, Counter[Schedule]] = defaultdict(Counter)
            for seed in split_seeds("holdout", ATTACK_SEARCH):
                observation, schedule = _play_step_zero(scenario, seed)
                table[observation][schedule] += 1
            index[scenario] = dict(table)
    return index


def _attack(index: dict[str, dict[str, Counter[Schedule]]], scenario: str, seed: int,
            observation: str) -> Schedule | None:
    """The attacker's guess from the public code and files: the schedule of a public variant whose step-0
    observation equals the one observed (the public seed space first, then the same seed unsalted, which it also
    covers for seeds below 10000 + ATTACK_SEARCH); None when no public variant shows that observation."""
    candidates = Counter(index[scenario].get(observation, Counter()))
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(HOLDOUT_SALT_ENV, raising=False)
        public_observation, public_schedule = _play_step_zero(scenario, seed)
    if public_observation == observation:
        candidates[public_schedule] += 1
    return candidates.most_common(1)[0][0] if candidates else None


def _attack_success(index: dict[str, dict[str, Counter[Schedule]]], salt: str | None) -> dict[str, float]:
    """Per scenario, the share of ATTACK_EPISODES holdout episodes (played under `salt`) whose hidden schedule
    the attack predicts exactly."""
    rates = {}
    with pytest.MonkeyPatch.context() as patch:
        for scenario in SCENARIOS:
            hits = 0
            for seed in split_seeds("holdout", ATTACK_EPISODES):
                if salt is None:
                    patch.delenv(HOLDOUT_SALT_ENV, raising=False)
                else:
                    patch.setenv(HOLDOUT_SALT_ENV, salt)
                observation, truth = _play_step_zero(scenario, seed)  # the truth stays with the evaluator
                hits += _attack(index, scenario, seed, observation) == truth
            rates[scenario] = hits / ATTACK_EPISODES
    return rates


def test_schedule_inference_attack_fails_under_a_secret_salt(
        public_index: dict[str, dict[str, Counter[Schedule]]]) -> None:
    rates = _attack_success(public_index, SALT)
    overall = sum(rates.values()) / len(rates)
    assert overall <= MAX_SALTED_SUCCESS, f"the attack identified salted schedules: {rates}"
    assert all(rate <= MAX_SALTED_SUCCESS for rate in rates.values()), rates


def test_schedule_inference_attack_succeeds_without_a_salt(
        public_index: dict[str, dict[str, Counter[Schedule]]]) -> None:
    """The control: without a salt the public holdout is public, and the same attack reads its schedule. This is
    what makes the salted test above able to fail."""
    rates = _attack_success(public_index, None)
    overall = sum(rates.values()) / len(rates)
    assert overall >= MIN_UNSALTED_SUCCESS, f"the attack should work on public holdout variants: {rates}"


# --- (c) the salt stays out of the benchmark's outputs ------------------------------------------------


def _files(folder: Path) -> Iterator[Path]:
    return (path for path in sorted(folder.rglob("*")) if path.is_file())


def _bench(out: Path, *extra: str) -> list[str]:
    return ["bench", "--policy", "heuristic", "--task", "crisis_management", "--scenario", "silent_data_drift",
            "--scenario", HOLDOUT_SCENARIOS[0], "--episodes", "1", "--trajectories", "--out", str(out), *extra]


def test_bench_never_writes_the_salt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    salted, public = tmp_path / "salted", tmp_path / "public"
    assert main(_bench(salted, "--holdout-salt", SALT)) == 0
    assert HOLDOUT_SALT_ENV not in os.environ, "the salt is in force for the run only"
    captured = capsys.readouterr()
    assert SALT not in captured.out + captured.err
    files = list(_files(salted))
    assert {p.name for p in files} >= {"results.jsonl", "trajectories.jsonl", "leaderboard.md", "policies.json"}
    for path in files:
        assert SALT.encode() not in path.read_bytes(), f"{path.name} holds the salt"
    fingerprint = salt_fingerprint(SALT)
    assert fingerprint is not None and fingerprint in captured.out
    records = read_records(salted / "results.jsonl")
    assert len(records) == 3 and all(r["holdout_salt"] == fingerprint and r["error"] is None for r in records)

    assert main(_bench(public)) == 0
    public_records = read_records(public / "results.jsonl")
    assert all(r["holdout_salt"] is None for r in public_records)

    def by_key(rs: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
        return {(r["scenario"], r["seed"]): r for r in rs}

    def steps(folder: Path) -> dict[tuple[str, int], list[str]]:
        found: dict[tuple[str, int], list[str]] = defaultdict(list)
        for line in (folder / "trajectories.jsonl").read_text().splitlines():
            step = json.loads(line)
            found[(step["scenario"], step["seed"])].append(step["state_hash"])
        return found

    salted_steps, public_steps = steps(salted), steps(public)
    for key, record in by_key(records).items():
        same = salted_steps[key] == public_steps[key]
        assert same == (record["split"] == "train"), f"{key}: the salt must re-draw holdout episodes only"
        if record["split"] == "train":
            assert record["score"] == by_key(public_records)[key]["score"]


def test_resume_never_mixes_salts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(_bench(out, "--holdout-salt", SALT)) == 0
    capsys.readouterr()
    assert main(_bench(out)) == 2  # a run without the salt refuses a folder of salted holdout episodes
    assert "another holdout salt" in capsys.readouterr().err
    assert main(_bench(out, "--holdout-salt", SALT)) == 0  # the same salt resumes: nothing is played again
    assert len(read_records(out / "results.jsonl")) == 3

    jobs = plan_jobs(["heuristic"], ["crisis_management"], ["silent_data_drift"], 1)
    monkeypatch.setenv(HOLDOUT_SALT_ENV, SALT + "-other")
    pending = Ledger(jobs, out / "results.jsonl").pending
    assert [job.seed for job in pending] == [HOLDOUT_SEED_START], "only the holdout episode is another one"
    monkeypatch.setenv(HOLDOUT_SALT_ENV, SALT)
    assert Ledger(jobs, out / "results.jsonl").pending == []


def test_records_carry_the_fingerprint_of_the_salt_in_force(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = plan_jobs(["noop"], ["org_simulation"], ["product_launch_failure"], 1)
    monkeypatch.setenv(HOLDOUT_SALT_ENV, SALT)
    records = run(jobs, {"noop": baseline("noop")}, tmp_path / "results.jsonl", concurrency=2)
    assert [r["holdout_salt"] for r in records] == [salt_fingerprint(SALT)] * 2
    assert SALT not in (tmp_path / "results.jsonl").read_text()
