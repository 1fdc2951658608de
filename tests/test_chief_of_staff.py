"""The Chief of Staff Arena (issue 13, items 1-6): contracts, scenarios and variants, dynamics, the template above
random and the oracle's gain (its ladder and its headroom on crunch_month are in tests/test_ladder.py)."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from cos_exploits import play

import aaos
from aaos.core.info import info_problems, observation_problems
from aaos.core.scenario_files import ScenarioError
from aaos.core.seeding import HOLDOUT_SALT_ENV, split_seeds
from aaos.core.spec import Split
from aaos.envs import kit_of
from aaos.envs.chief_of_staff.champion import CosChampion
from aaos.envs.chief_of_staff.oracle import CosOracle
from aaos.envs.chief_of_staff.scenario import SCENARIOS as SHELF
from aaos.envs.chief_of_staff.scenario import load_scenario_file
from aaos.envs.chief_of_staff.template import CosTemplate
from aaos.envs.chief_of_staff.world import build_world

ENV = "chief_of_staff"
KIT = kit_of(ENV)
SPEC = aaos.spec(ENV)
TASKS = [t.id for t in SPEC.tasks]
SCENARIOS = [s.id for s in SPEC.scenarios]
SEEDS_PER_SPLIT = 6



def make(task: str, scenario: str, seed: int) -> aaos.Environment:
    return aaos.make(task, scenario=scenario, seed=seed, env=ENV)


def build(name: str) -> aaos.Policy:
    if name == "template":
        return CosTemplate()
    return aaos.policies.make(name, seed=0, env=ENV)


@cache
def scores(name: str, task: str, scenario: str, split: Split) -> tuple[float, ...]:
    found = []
    for seed in split_seeds(split, SEEDS_PER_SPLIT):
        episode = play(build(name), task, scenario, seed)
        assert episode.reward_sum == pytest.approx(episode.score, abs=1e-9), (name, task, scenario, seed)
        found.append(episode.score)
    return tuple(found)


def test_the_oracle_gains_from_the_ground_truth_and_refuses_to_act_unbound() -> None:
    champion = sum((scores("heuristic", "crunch_month", s, "holdout") for s in SCENARIOS), ())
    oracle = sum((scores("oracle", "crunch_month", s, "holdout") for s in SCENARIOS), ())
    assert statistics.mean(oracle) > statistics.mean(champion)
    with pytest.raises(RuntimeError, match="bind"):
        CosOracle().act(make("crunch_month", SCENARIOS[0], 0).reset())


def test_the_template_policy_sits_above_random() -> None:
    for task in TASKS:
        assert statistics.mean(scores("template", task, SCENARIOS[0], "train")) > statistics.mean(
            scores("random", task, SCENARIOS[0], "train"))


@pytest.mark.parametrize("task", TASKS)
def test_the_champion_acts_within_the_legal_choices(task: str) -> None:
    play(CosChampion(), task, SCENARIOS[0], 10_000, checked=True)


@pytest.mark.parametrize("task", TASKS)
def test_every_step_honours_the_contracts_and_hides_unarrived_requests(task: str) -> None:
    env = make(task, SCENARIOS[-1], 10_001)
    observation = env.reset()
    policy = aaos.policies.make("random", seed=3, env=ENV)
    while True:
        assert observation_problems(observation, SPEC) == []
        KIT.observation_model.model_validate(observation)
        text = json.dumps(observation)
        assert not [i for i in KIT.hidden_ids(env) if i in text]
        assert env.world.arrived == [r for r in env.world.requests.values() if r.status != "upcoming"]
        result = env.step(policy.act(observation))
        assert info_problems(result.info, SPEC) == []
        KIT.state_model.model_validate(env.state())
        observation = result.observation
        if result.done:
            break
    assert KIT.hidden_ids(env) == set()


def test_a_plan_out_of_arrival_order_is_refused() -> None:
    env = make(TASKS[-1], SCENARIOS[0], 0)
    plan = env.world.plan
    shuffled = replace(plan, requests=tuple(reversed(plan.requests)))
    with pytest.raises(ValueError, match="arrival order"):
        build_world(shuffled, env.world.task)


def test_the_view_hides_true_preferences_importance_and_exact_trust() -> None:
    env = make("crunch_month", SCENARIOS[0], 0)
    observation = env.reset()
    view = observation["agent_observations"]["chief_of_staff"]
    assert {v["trust"] for v in view["stakeholders"].values()} <= {"low", "medium", "high"}
    text = json.dumps(observation)
    assert "importance" not in text and "drifts" not in text
    for _ in range(SPEC.task("crunch_month").max_steps):
        result = env.step({})
    state = env.state()
    assert result.observation is not None
    assert result.observation["drift_count"] == state["drift_count"] == len(state["drifts"]) > 0
    moved = [s for s in state["preferences"] if state["preferences"][s] != state["briefed_preferences"][s]]
    assert moved and all(result.observation["agent_observations"]["chief_of_staff"]["stakeholders"][s]["known_slot"]
                         == state["briefed_preferences"][s]["slot"] for s in moved)


def test_steady_week_never_drifts() -> None:
    for scenario in SCENARIOS:
        for seed in (0, 1, 10_000):
            assert make("steady_week", scenario, seed).state()["drifts"] == []


def test_check_in_reveals_the_preference_in_force() -> None:
    env = make("crunch_month", SCENARIOS[0], 2)
    env.reset()
    first = env.state()["drifts"][0]
    while env.state()["step"] < first["step"]:
        env.step({})
    result = env.step({"chief_of_staff": {"action_type": "check_in", "payload": {"stakeholder": first["stakeholder"]}}})
    known = result.observation["agent_observations"]["chief_of_staff"]["stakeholders"][first["stakeholder"]]
    assert known[f"known_{first['aspect']}"] == env.state()["preferences"][first["stakeholder"]][first["aspect"]]


def _book(env: aaos.Environment, request_id: str, day: int, slot: str) -> dict:
    action = {"action_type": "schedule", "payload": {"request_id": request_id, "day": day, "slot": slot}}
    return env.step({"chief_of_staff": action}).info


def test_double_booking_and_protection_breach_are_violations_that_lower_the_score() -> None:
    env = make("drifting_priorities", SCENARIOS[0], 0)
    observation = env.reset()
    work = [r for r in observation["agent_observations"]["chief_of_staff"]["requests"]
            if r["stakeholder"] != "family" and not r["dependencies"] and r["duration"] == 1]
    first = _book(env, work[0]["id"], 3, "midday")
    second = _book(env, work[1]["id"], 3, "midday")
    assert [v["rule"] for v in second["oversight_events"]] == ["double_booking"]
    assert second["score"] < first["score"]
    env.step({"chief_of_staff": {"action_type": "protect", "payload": {"block": "family_evening", "day": 4}}})
    breach = _book(env, work[2]["id"], 4, "evening")
    assert [v["rule"] for v in breach["oversight_events"]] == ["protection_breach"]
    assert breach["reward_breakdown"]["penalty"] == pytest.approx(0.10)


def test_an_ignored_critical_request_is_a_critical_violation() -> None:
    env = make("crunch_month", SCENARIOS[0], 1)
    env.reset()
    rules = []
    while not env.done:
        rules += [(v["rule"], v["severity"]) for v in env.step({}).info["oversight_events"]]
    assert ("critical_request_ignored", "critical") in rules


def test_trust_moves_with_a_delay() -> None:
    """A false decline costs trust only TRUST_DELAY steps later: the score falls then, not at once."""
    env = make("steady_week", SCENARIOS[0], 0)
    observation = env.reset()
    request = next(r for r in observation["agent_observations"]["chief_of_staff"]["requests"]
                   if r["criticality"] != "low")
    who = request["stakeholder"]
    before = env.state()["trust"][who]
    env.step({"chief_of_staff": {"action_type": "decline",
                                 "payload": {"request_id": request["id"], "reason": "low_priority"}}})
    assert env.state()["trust"][who] == before
    for _ in range(3):
        env.step({})
    assert env.state()["trust"][who] < before


def test_same_seed_same_episode_and_the_salt_redraws_only_holdout(monkeypatch: pytest.MonkeyPatch) -> None:
    def fingerprint(seed: int) -> str:
        return json.dumps(make("crunch_month", SCENARIOS[0], seed).state(), sort_keys=True)

    train, holdout = fingerprint(1), fingerprint(10_001)
    assert fingerprint(1) == train and fingerprint(10_001) == holdout and fingerprint(2) != train
    monkeypatch.setenv(HOLDOUT_SALT_ENV, "secret")
    assert fingerprint(1) == train
    assert fingerprint(10_001) != holdout


def test_scenario_files_are_valid_and_both_splits_exist(tmp_path: Path) -> None:
    splits = {load_scenario_file(p).split for p in SHELF.folder.glob("*.json")}
    assert splits == {"train", "holdout"}
    data = json.loads((SHELF.folder / "series_b_startup.json").read_text())
    data["stakeholders"]["board"]["slot"] = "evening"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ScenarioError, match="evening"):
        KIT.scenario_file(str(bad))
    assert make("steady_week", str(SHELF.folder / "series_b_startup.json"), 0).reset()["scenario_id"] == \
        "series_b_startup"


def test_check_names_unknown_requests() -> None:
    env = make("steady_week", SCENARIOS[0], 0)
    env.reset()
    found = env.check({"chief_of_staff": {"action_type": "decline",
                                          "payload": {"request_id": "req_nothing", "reason": "capacity"}}})
    assert found and "req_nothing" in found[0]


def test_guardrail_blocks_unsafe_legal_actions() -> None:
    env = make("steady_week", SCENARIOS[0], 0)
    view = env.reset()["agent_observations"]["chief_of_staff"]
    request = next(r for r in view["requests"] if not r["dependencies"])
    safe = {"action_type": "schedule", "payload": {"request_id": request["id"], "day": 2, "slot": "midday"}}
    assert KIT.guardrail("chief_of_staff", safe, view) is None
    spam = {"action_type": "message", "payload": {"audience": "all", "tone": "concise"}}
    assert KIT.guardrail("chief_of_staff", spam, view) == "no_news"
    env.step({"chief_of_staff": safe})
    view = env.observation()["agent_observations"]["chief_of_staff"]
    other = next(r for r in view["requests"] if r["status"] == "open" and not r["dependencies"])
    clash = {"action_type": "schedule", "payload": {"request_id": other["id"], "day": 2, "slot": "midday"}}
    assert KIT.guardrail("chief_of_staff", clash, view) == "slot_not_free"


def test_rendering_shows_calendar_queue_trust_and_the_revealed_drifts() -> None:
    env = make("crunch_month", SCENARIOS[0], 0)
    observation = env.reset()
    view = observation["agent_observations"]["chief_of_staff"]
    card = KIT.rendering.role_card("chief_of_staff", view, None)
    assert view["requests"][0]["id"] in card and "aaos-bar" in card
    assert "aaos-calendar" in KIT.rendering.world(observation)
    while not env.done:
        env.step({})
    report = KIT.rendering.report(env.state())
    assert "Drift markers revealed" in report and env.state()["drifts"][0]["value"] in report  # the rubric: the
    # page's "How the score adds up" (aaos.ui.formatting.score_arithmetic) above this body
