"""The composite score and the delayed release schedule of the reward."""

from __future__ import annotations

import pytest
from helpers import play
from hypothesis import given
from hypothesis import strategies as st

import aaos
from aaos.core.reward import DELAYED_SHARE, IMMEDIATE_SHARE, RELEASE_EVERY, RewardLedger, composite
from aaos.envs.org.spec import REWARD_WEIGHTS


def test_schedule_constants_match_the_design() -> None:
    assert (IMMEDIATE_SHARE, DELAYED_SHARE, RELEASE_EVERY) == (0.6, 0.4, 5)


def expected_deliveries(scores: list[float]) -> list[tuple[float, float, bool]]:
    """(immediate, delayed, released) for each step, recomputed from the scores after each step (S_0 = 0)."""
    out = []
    held = 0.0
    previous = 0.0
    for i, score in enumerate(scores, start=1):
        increment, previous = score - previous, score
        held += 0.4 * increment
        if i % 5 == 0 or i == len(scores):
            out.append((0.6 * increment, held, True))
            held = 0.0
        else:
            out.append((0.6 * increment, 0.0, False))
    return out


@pytest.mark.parametrize(("task", "scenario", "policy"), [
    ("full_episode", "product_launch_failure", "heuristic"),  # 50 steps: the last step is also a multiple of 5
    ("full_episode", "resource_conflict", "random"),
    ("org_simulation", "silent_data_drift", "heuristic"),
    ("crisis_management", "vendor_outage_cascade", "heuristic"),
])
def test_release_schedule_over_a_real_episode(task: str, scenario: str, policy: str) -> None:
    episode = play(task, scenario, 0, policy, policy_seed=0)
    scores = [info["score"] for info in episode.infos]
    increments = [info["reward_breakdown"]["increment"] for info in episode.infos]
    assert increments == pytest.approx([b - a for a, b in zip([0.0, *scores], scores, strict=False)], abs=1e-12)
    assert len(set(increments)) > 1, "a constant increment would not exercise the delivery"
    for step, (info, reward, (immediate, delayed, released)) in enumerate(
            zip(episode.infos, episode.rewards, expected_deliveries(scores), strict=True), start=1):
        bd = info["reward_breakdown"]
        assert bd["released"] is released, step
        assert bd["immediate"] == pytest.approx(immediate, abs=1e-12)
        assert bd["delayed"] == pytest.approx(delayed, abs=1e-12)
        assert reward == pytest.approx(immediate + delayed, abs=1e-12)
        if not released:
            assert reward == pytest.approx(0.6 * bd["increment"], abs=1e-12)
    assert episode.infos[-1]["reward_breakdown"]["released"] is True
    assert sum(episode.rewards) == pytest.approx(scores[-1], abs=1e-9)


def test_nothing_is_held_after_the_final_release() -> None:
    episode = play("org_simulation", "silent_data_drift", 0, "heuristic")
    assert episode.final_state["held_reward"] == 0.0
    partial = play("full_episode", "silent_data_drift", 0, "heuristic", max_steps=7)
    scores = [i["score"] for i in partial.infos]
    assert partial.final_state["held_reward"] == pytest.approx(0.4 * (scores[6] - scores[4]))


def test_ledger_on_a_known_sequence() -> None:
    ledger = RewardLedger()
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 1.0, 0.0, 0.5]
    got = []
    for step, score in enumerate(scores, start=1):
        d = ledger.deliver(step, score, done=step == len(scores))
        got.append((round(d.immediate, 12), round(d.delayed, 12), d.released, round(d.reward, 12)))
    assert got == [
        (0.06, 0.0, False, 0.06),
        (0.06, 0.0, False, 0.06),
        (0.06, 0.0, False, 0.06),
        (0.06, 0.0, False, 0.06),
        (0.06, 0.2, True, 0.26),  # 0.4 x (0.5 - 0): the five held increments
        (0.3, 0.0, False, 0.3),
        (-0.6, 0.0, False, -0.6),  # the score fell: a negative reward
        (0.3, 0.0, True, 0.3),  # final step: 0.4 x (0.5 - 0.5) held since the last release
    ]
    assert ledger.held == 0.0
    assert sum(g[3] for g in got) == pytest.approx(scores[-1])


def test_ledger_releases_a_single_step_episode() -> None:
    d = RewardLedger().deliver(1, 0.8, done=True)
    assert d.released and d.reward == pytest.approx(0.8)


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=60))
def test_return_equals_the_final_score_whatever_the_length(scores: list[float]) -> None:
    """Potential-based delivery: the rewards of any episode sum to its last score, and nothing stays held."""
    ledger = RewardLedger()
    total = 0.0
    for step, score in enumerate(scores, start=1):
        d = ledger.deliver(step, score, done=step == len(scores))
        assert -1.0 - 1e-12 <= d.reward <= 1.0 + 1e-12
        total += d.reward
    assert ledger.held == 0.0
    assert total == pytest.approx(scores[-1], abs=1e-9)


def test_composite_skips_none_components() -> None:
    weights = {"a": 0.5, "b": 0.25, "c": 0.25}
    assert composite({"a": 1.0, "b": 0.0, "c": None}, weights, 0.0) == pytest.approx(0.5 / 0.75)
    assert composite({"a": None, "b": None, "c": 0.4}, weights, 0.0) == pytest.approx(0.4)
    assert composite({"a": None, "b": None, "c": None}, weights, 0.0) == 0.0
    assert composite({}, weights, 0.0) == 0.0
    assert composite({"a": 0.8, "zzz": 1.0}, weights, 0.0) == pytest.approx(0.8)  # unknown names are ignored


def test_composite_penalty_scales_toward_zero_and_never_below() -> None:
    comps = {name: 0.8 for name in REWARD_WEIGHTS}
    assert composite(comps, REWARD_WEIGHTS, 0.0) == pytest.approx(0.8)
    assert composite(comps, REWARD_WEIGHTS, 0.25) == pytest.approx(0.64)
    assert composite(comps, REWARD_WEIGHTS, 1.0) == pytest.approx(0.4)
    assert 0.0 < composite(comps, REWARD_WEIGHTS, 30.0) < 0.03


def test_reward_weights_sum_to_one() -> None:
    assert sum(REWARD_WEIGHTS.values()) == pytest.approx(1.0)
    assert set(REWARD_WEIGHTS) == {"business_success", "collaboration", "risk_management", "efficiency",
                                   "adaptability"}


@given(comps=st.dictionaries(st.sampled_from(sorted(REWARD_WEIGHTS)), st.one_of(st.none(), st.floats(0.0, 1.0))),
       penalty=st.floats(0.0, 5.0))
def test_composite_is_in_unit_range_and_monotone_in_penalty(comps: dict[str, float | None], penalty: float) -> None:
    value = composite(comps, REWARD_WEIGHTS, penalty)
    assert 0.0 <= value <= 1.0
    assert composite(comps, REWARD_WEIGHTS, penalty + 0.1) <= value
    assert composite(comps, REWARD_WEIGHTS, 0.0) >= value


HIDDEN_GRADE_CASES = [("org", "full_episode", "silent_data_drift", 0, "heuristic"),
                      ("org", "crisis_management", "product_launch_failure", 10_000, "heuristic"),
                      ("chief_of_staff", "crunch_month", "series_b_startup", 10_000, "heuristic"),
                      ("inbox", "medium", "saas_helpdesk", 0, "heuristic")]


@pytest.mark.parametrize(("env_id", "task", "scenario", "seed", "policy"), HIDDEN_GRADE_CASES)
def test_the_info_shows_the_public_grade_until_the_end(env_id: str, task: str, scenario: str, seed: int,
                                                      policy: str) -> None:
    """Before the last step, info.reward_breakdown.components are the observation's partial_scores (what the
    agents can grade), however the true grade differs; on the last step they are the true grade."""
    env = aaos.make(task, scenario=scenario, seed=seed, env=env_id)
    agent = aaos.policies.make(policy, seed=seed, env=env_id)
    observation = env.reset()
    hidden_steps = 0
    while True:
        result = env.step(agent.act(observation))
        shown, graded = result.info["reward_breakdown"]["components"], env.state()["components"]
        if result.done:
            assert shown == graded
            break
        observation = result.observation
        public = observation["partial_scores"]
        assert shown.keys() == public.keys()
        for name, value in shown.items():  # org rounds partial_scores to 4 places
            assert value == (None if public[name] is None else pytest.approx(public[name], abs=5e-5)), name
        hidden_steps += shown != graded
    assert hidden_steps > 0 or env_id == "inbox"  # the inbox grades only closed emails: nothing of it is hidden


def test_one_no_op_shows_no_hidden_chief_of_staff_component() -> None:
    """The audit's reproduction: relationships and alignment are hidden from the chief of staff's view."""
    env = aaos.make("crunch_month", scenario="series_b_startup", seed=10_000, env="chief_of_staff")
    env.reset()
    shown = env.step({"chief_of_staff": {"action_type": "no_op", "payload": {}}}).info["reward_breakdown"]["components"]
    assert shown["relationships"] is None and shown["alignment"] is None
    assert env.state()["components"]["relationships"] is not None
