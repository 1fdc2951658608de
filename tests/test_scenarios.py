"""Scenario files: shipped ones load, bad ones fail clearly, variants stay in bounds, custom files play."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import SCENARIO_DIR, TASKS, scenario_ids

import aaos
from aaos.core.scenario_files import ScenarioError
from aaos.core.seeding import HOLDOUT_SEED_START, seed_split, split_seeds
from aaos.envs.org.scenario import (
    Scenario,
    builtin_scenarios,
    draw_variant,
    load_scenario_file,
    resolve_scenario,
)

WriteFile = Callable[..., Path]

# --- shipped scenarios ------------------------------------------------------------------------------


def test_every_shipped_scenario_file_loads() -> None:
    files = sorted(SCENARIO_DIR.glob("*.json"))
    assert files
    for path in files:
        scenario = load_scenario_file(path)
        assert isinstance(scenario, Scenario)
        assert scenario.id == path.stem
    assert sorted(builtin_scenarios()) == sorted(p.stem for p in files) == sorted(scenario_ids())


def test_splits_and_named_scenarios() -> None:
    train, holdout = scenario_ids("train"), scenario_ids("holdout")
    assert len(train) >= 4 and len(holdout) >= 2
    assert not set(train) & set(holdout)
    assert sorted(train + holdout) == sorted(scenario_ids())
    for name in ("product_launch_failure", "resource_conflict", "silent_data_drift", "policy_change_shock"):
        assert name in train
    for s in aaos.list_scenarios():
        assert s["title"] and s["split"] in ("train", "holdout")


@pytest.mark.parametrize("scenario", scenario_ids())
def test_shipped_scenarios_are_well_formed(scenario: str) -> None:
    s = resolve_scenario(scenario)
    crisis = next(e for e in s.events if e.id == s.crisis_event)
    assert crisis.kind == "incident"
    assert any(t.arrives > 0 for t in s.tasks), "late arrivals make org_simulation's done rule meaningful"
    assert s.risks, "hidden risks are what crisis_management is about"
    kinds = {e.kind for e in s.events}
    assert kinds == {"incident", "policy_change", "resource_shock", "anomaly"}
    # the incident ids the simulation derives must not collide (see the xfail below)
    incident_ids = ["incident_" + r.id.removeprefix("risk_") for r in s.risks]
    incident_ids += ["incident_" + e.id.removeprefix("evt_") for e in s.events if e.kind == "incident"]
    assert len(set(incident_ids)) == len(incident_ids)


# --- bad files --------------------------------------------------------------------------------------


def expect_error(path: Path, *fragments: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario_file(path)
    message = str(caught.value)
    assert str(path) in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    # and through the public entry point, as a ValueError
    with pytest.raises(ValueError, match="scenario"):
        aaos.make("full_episode", scenario=str(path))
    return message


def test_invalid_json(scenario_file: WriteFile) -> None:
    path = scenario_file('{"id": "broken", "tasks": [1, 2,,]}')
    expect_error(path, "not valid JSON", "line 1")


def test_missing_file(tmp_path: Path) -> None:
    expect_error(tmp_path / "nowhere.json", "no such scenario file")


def test_missing_field(scenario_file: WriteFile, scenario_data: dict[str, Any]) -> None:
    del scenario_data["tasks"][2]["effort"]
    expect_error(scenario_file(scenario_data), "tasks.2.effort", "Field required")


def test_missing_top_level_field(scenario_file: WriteFile, scenario_data: dict[str, Any]) -> None:
    del scenario_data["baseline_metrics"]
    expect_error(scenario_file(scenario_data), "baseline_metrics")


def test_wrong_type(scenario_file: WriteFile, scenario_data: dict[str, Any]) -> None:
    scenario_data["risks"][1]["severity"] = "catastrophic"
    scenario_data["tasks"][0]["effort"] = "four"
    expect_error(scenario_file(scenario_data), "risks.1.severity", "tasks.0.effort")


def test_unknown_field(scenario_file: WriteFile, scenario_data: dict[str, Any]) -> None:
    scenario_data["events"][0]["colour"] = "red"
    expect_error(scenario_file(scenario_data), "events.0.colour")


def test_crisis_event_referencing_nothing(scenario_file: WriteFile, scenario_data: dict[str, Any]) -> None:
    scenario_data["crisis_event"] = "evt_meteor_strike"
    expect_error(scenario_file(scenario_data), "crisis_event", "evt_meteor_strike")


def test_escalation_not_after_noticeable(scenario_file: WriteFile, scenario_data: dict[str, Any]) -> None:
    scenario_data["risks"][0]["escalates_at"] = scenario_data["risks"][0]["noticeable_from"]
    expect_error(scenario_file(scenario_data), "risks.0", "escalates_at")


def test_duplicate_task_ids(scenario_file: WriteFile, scenario_data: dict[str, Any]) -> None:
    scenario_data["tasks"][3]["id"] = scenario_data["tasks"][0]["id"]
    expect_error(scenario_file(scenario_data), "duplicate task ids", scenario_data["tasks"][0]["id"])


def test_event_missing_its_kind_field(scenario_file: WriteFile, scenario_data: dict[str, Any]) -> None:
    del scenario_data["events"][2]["resource_deltas"]
    expect_error(scenario_file(scenario_data), "events.2", "resource_deltas")


def test_top_level_not_an_object(scenario_file: WriteFile) -> None:
    expect_error(scenario_file("[1, 2, 3]"))


def test_unreadable_file_is_a_scenario_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('{"title": "Caf\xe9"}'.encode("latin-1"))
    with pytest.raises(ScenarioError) as caught:
        load_scenario_file(path)
    assert str(path) in str(caught.value)


def test_colliding_incident_ids_are_rejected(scenario_file: WriteFile, scenario_data: dict[str, Any]) -> None:
    outage = scenario_data["events"][1]
    outage["id"] = scenario_data["crisis_event"] = "evt_scaling"  # would open incident_scaling, as risk_scaling does
    expect_error(scenario_file(scenario_data), "incident_scaling")


def test_task_id_clashing_with_a_remediation_task_is_rejected(scenario_file: WriteFile,
                                                               scenario_data: dict[str, Any]) -> None:
    scenario_data["tasks"][0]["id"] = "task_fix_scaling"  # risk_scaling opens task_fix_scaling when flagged
    expect_error(scenario_file(scenario_data), "task_fix_scaling")


# --- variants ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", scenario_ids())
def test_same_seed_same_variant(scenario: str) -> None:
    base = builtin_scenarios()[scenario]
    for seed in (0, 17, HOLDOUT_SEED_START + 3):
        assert draw_variant(base, seed).model_dump() == draw_variant(base, seed).model_dump()
        a = aaos.make("full_episode", scenario=scenario, seed=seed).state()["scenario"]
        b = aaos.make("crisis_management", scenario=scenario, seed=seed).state()["scenario"]
        assert a == b, "the variant depends on scenario and seed only, not on the task"


def test_different_seeds_vary_every_kind_of_field() -> None:
    base = builtin_scenarios()["product_launch_failure"]
    variants = [draw_variant(base, seed) for seed in range(20)]
    assert len({tuple(t.deadline for t in v.tasks) for v in variants}) > 1
    assert len({tuple(t.arrives for t in v.tasks) for v in variants}) > 1
    assert len({tuple(sorted(v.resources.items())) for v in variants}) > 1
    assert len({tuple(e.step for e in v.events) for v in variants}) > 1
    assert len({tuple(r.noticeable_from for r in v.risks) for v in variants}) > 1
    assert len({tuple(tuple(t.needs.items()) for t in v.tasks) for v in variants}) > 1


def within(value: float, base: float, spread: float) -> bool:
    return base - spread <= value <= base + spread


@pytest.mark.parametrize("scenario", scenario_ids())
def test_jitter_stays_within_declared_bounds(scenario: str) -> None:
    base = builtin_scenarios()[scenario]
    v = base.variation
    assert v.deadline_jitter > 0 and v.timing_jitter > 0 and v.amount_jitter > 0
    if base.split == "holdout":
        pytest.skip("a holdout-only scenario draws only holdout variants (test_holdout_variants_change_structure)")
    for seed in range(60):
        var = draw_variant(base, seed)
        assert [t.id for t in var.tasks] == [t.id for t in base.tasks]
        assert var.id == base.id and var.crisis_event == base.crisis_event and var.policy == base.policy
        for t0, t in zip(base.tasks, var.tasks, strict=True):
            assert within(t.deadline, t0.deadline, v.deadline_jitter)
            assert within(t.arrives, t0.arrives, v.timing_jitter) and t.arrives >= 0
            if t0.arrives == 0:
                assert t.arrives == 0, "work known at the start stays known at the start"
            assert (t.effort, t.priority, t.required_role) == (t0.effort, t0.priority, t0.required_role)
            for kind, amount in t0.needs.items():
                assert within(t.needs[kind], amount, amount * v.amount_jitter + 0.5) and t.needs[kind] >= 1
        for r0, r in zip(base.risks, var.risks, strict=True):
            assert within(r.noticeable_from, r0.noticeable_from, v.timing_jitter)
            assert r.escalates_at - r.noticeable_from == r0.escalates_at - r0.noticeable_from, "the window is kept"
            assert (r.metric, r.visible_to) == (r0.metric, r0.visible_to)
            for kind, amount in r0.remediation.needs.items():
                assert within(r.remediation.needs[kind], amount, amount * v.amount_jitter + 0.5)
        for e0, e in zip(base.events, var.events, strict=True):
            assert within(e.step, e0.step, v.timing_jitter) and e.step >= 1
        for kind, amount in base.resources.items():
            assert within(var.resources[kind], amount, amount * v.amount_jitter + 0.5)


@pytest.mark.parametrize(("case", "field"), [("escalation", "risks.1"), ("deadline", "tasks.1")])
def test_infeasible_timings_are_refused_by_the_schema(case: str, field: str, scenario_file: WriteFile,
                                                      scenario_data: dict[str, Any]) -> None:
    """Timings a variant would have to move (so that zero jitter could not reproduce the file) are refused."""
    if case == "escalation":
        scenario_data["risks"][1]["noticeable_from"] = 5
        scenario_data["risks"][1]["escalates_at"] = 6  # less than MIN_RISK_WINDOW steps to catch it
    else:
        scenario_data["tasks"][1]["deadline"] = 3  # effort 5 cannot fit
    expect_error(scenario_file(scenario_data), field)


def test_zero_jitter_variant_equals_the_file_when_feasible(scenario_file: WriteFile,
                                                           custom_scenario_data: dict[str, Any]) -> None:
    scenario = load_scenario_file(scenario_file(custom_scenario_data))
    for seed in (0, 1, HOLDOUT_SEED_START - 1):
        assert draw_variant(scenario, seed) == scenario
    assert draw_variant(scenario, HOLDOUT_SEED_START) != scenario, "holdout variants come from another distribution"


@pytest.mark.parametrize("scenario", sorted(builtin_scenarios()))
def test_holdout_variants_change_structure(scenario: str) -> None:
    """Holdout variants are drawn from another distribution than train ones: risks re-aimed (metric, who can
    notice them), re-timed on tight windows, often one risk more; every variant is still a valid scenario."""
    base = builtin_scenarios()[scenario]
    variants = [draw_variant(base, seed) for seed in split_seeds("holdout", 40)]
    for var in variants:
        Scenario.model_validate(var.model_dump())
        assert [r.id for r in var.risks[:len(base.risks)]] == [r.id for r in base.risks]
        for risk in var.risks:
            assert risk.escalates_at - risk.noticeable_from <= risk.remediation.effort + 4
    assert any(len(v.risks) > len(base.risks) for v in variants)
    assert any(len(v.risks) == len(base.risks) for v in variants)
    aims = {(r.metric, tuple(r.visible_to)) for v in variants for r in v.risks}
    assert len(aims) > len({(r.metric, tuple(r.visible_to)) for r in base.risks}) + 3
    train = [draw_variant(base, seed) for seed in range(40)] if base.split == "train" else []
    assert all(len(v.risks) == len(base.risks) for v in train)


# --- seeds and splits -------------------------------------------------------------------------------


def test_seed_split_boundary() -> None:
    assert seed_split(0) == "train"
    assert seed_split(HOLDOUT_SEED_START - 1) == "train"
    assert seed_split(HOLDOUT_SEED_START) == "holdout"
    assert seed_split(HOLDOUT_SEED_START + 12345) == "holdout"


def test_split_seeds_are_disjoint_and_classified() -> None:
    train, holdout = split_seeds("train", 500), split_seeds("holdout", 500)
    assert len(set(train)) == len(set(holdout)) == 500
    assert not set(train) & set(holdout)
    assert all(seed_split(s) == "train" for s in train)
    assert all(seed_split(s) == "holdout" for s in holdout)
    assert split_seeds("train", 3, start=4) == [4, 5, 6]
    assert split_seeds("holdout", 2, start=1) == [HOLDOUT_SEED_START + 1, HOLDOUT_SEED_START + 2]


def test_train_seeds_never_spill_into_holdout() -> None:
    assert split_seeds("train", 5, start=HOLDOUT_SEED_START - 5)[-1] == HOLDOUT_SEED_START - 1
    with pytest.raises(ValueError, match="train seeds"):
        split_seeds("train", 10, start=HOLDOUT_SEED_START - 5)


# --- a scenario written from scratch ----------------------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
def test_custom_scenario_file_plays_to_the_end(task: str, scenario_file: WriteFile,
                                            custom_scenario_data: dict[str, Any]) -> None:
    path = scenario_file(custom_scenario_data, name="ledger.json")
    env = aaos.make(task, scenario=str(path), seed=0)
    obs = env.reset()
    assert obs["scenario_id"] == "ledger_sync_test"
    assert obs["scenario_title"] == custom_scenario_data["title"]
    assert {t["id"] for t in obs["agent_observations"]["product_manager"]["visible_tasks"]} == {"task_ledger_api"}
    agent = aaos.policies.make("heuristic")
    steps = 0
    while True:
        result = env.step(agent.act(obs))
        obs = result.observation
        steps += 1
        json.dumps(obs)
        if result.done:
            break
    state = env.state()
    assert steps == state["max_steps"]
    assert 0.0 <= result.info["score"] <= 1.0
    assert result.info["score"] > 0.5, "the champion should do well on a small, easy scenario"
    assert state["scenario_name"] == str(path)
    assert state["scenario"]["flags"]["test_org"] is True
    assert state["flags"]["crisis_started"]
    # reset() keeps using the custom file
    assert env.reset()["scenario_id"] == "ledger_sync_test"


# --- bad arguments ----------------------------------------------------------------------------------


def test_unknown_task_lists_the_tasks() -> None:
    with pytest.raises(ValueError) as caught:
        aaos.make("world_domination", scenario="product_launch_failure")
    for task in TASKS:
        assert task in str(caught.value)


def test_unknown_scenario_lists_the_scenarios() -> None:
    with pytest.raises(ValueError) as caught:
        aaos.make("full_episode", scenario="alien_invasion")
    assert "alien_invasion" in str(caught.value)
    for scenario in scenario_ids():
        assert scenario in str(caught.value)


@pytest.mark.parametrize("seed", [-1, -10_000, 1.5, "3", True])
def test_bad_seed_is_refused(seed: Any) -> None:
    with pytest.raises(ValueError, match="seed"):
        aaos.make("full_episode", scenario="product_launch_failure", seed=seed)


def test_bad_arguments_to_reset_leave_the_env_usable(launch_env: Any) -> None:
    launch_env.step({})
    before = json.dumps(launch_env.state(), sort_keys=True)
    for kwargs in ({"task": "nope"}, {"scenario": "nope"}, {"seed": -3}):
        with pytest.raises(ValueError):
            launch_env.reset(**kwargs)
        assert json.dumps(launch_env.state(), sort_keys=True) == before
    assert launch_env.step({}).info["step"] == 2


def test_unknown_env_and_split_and_policy() -> None:
    with pytest.raises(ValueError, match="org"):
        aaos.make("full_episode", env="chess")
    with pytest.raises(ValueError, match="train"):
        aaos.list_scenarios(split="test")  # type: ignore[arg-type]
    with pytest.raises(ValueError) as caught:
        aaos.policies.make("genius")
    for name in ("noop", "random", "heuristic"):
        assert name in str(caught.value)
