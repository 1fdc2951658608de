"""The PettingZoo ParallelEnv wrapper: PettingZoo's own API and seed tests, and what its spaces mean."""

from __future__ import annotations

import json

import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test
from pettingzoo.utils.conversions import parallel_to_aec

import aaos
from aaos.wrappers.pettingzoo import MAX_ACTIONS, NO_OP, AAOSParallelEnv, catalogue


@pytest.mark.parametrize(("task", "scenario"), [("full_episode", "product_launch_failure"),
                                                ("org_simulation", "compliance_audit_crunch")])
def test_pettingzoo_parallel_api_test(task: str, scenario: str) -> None:
    parallel_api_test(AAOSParallelEnv(task=task, scenario=scenario), num_cycles=60)


@pytest.mark.parametrize("env_id", aaos.env_ids())
def test_pettingzoo_aec_api_test_after_parallel_to_aec(env_id: str) -> None:
    """PettingZoo's AEC api_test on the wrapper turned into an AEC env: its observations must state a dtype."""
    api_test(parallel_to_aec(AAOSParallelEnv(env=env_id)), num_cycles=60)


def test_pettingzoo_parallel_seed_test() -> None:
    parallel_seed_test(lambda: AAOSParallelEnv(task="crisis_management", scenario="silent_data_drift"), num_cycles=60)


def test_observations_are_each_roles_own_view_within_the_space() -> None:
    env = AAOSParallelEnv(task="full_episode", scenario="resource_conflict")
    observations, infos = env.reset(seed=3)
    reference = aaos.make("full_episode", scenario="resource_conflict", seed=3).reset()
    assert env.agents == list(aaos.spec().roles)
    for agent in env.agents:
        assert json.loads(observations[agent]) == reference["agent_observations"][agent]
        assert env.observation_space(agent).contains(observations[agent])
        assert isinstance(observations[agent], str) and observations[agent].dtype == env.observation_space(agent).dtype
        assert env.action_space(agent).n == MAX_ACTIONS
        assert infos[agent]["action_mask"].sum() == len(infos[agent]["actions"])


def test_an_action_index_selects_that_catalogue_entry_and_anything_past_it_is_a_no_op() -> None:
    env = AAOSParallelEnv(task="full_episode", scenario="product_launch_failure")
    _, infos = env.reset(seed=0)
    choices = infos["product_manager"]["actions"]
    delegate = next(i for i, a in enumerate(choices) if a["action_type"] == "delegate_task")
    _, rewards, terminations, truncations, infos = env.step({"product_manager": delegate, "engineer": MAX_ACTIONS - 1})
    assert infos["product_manager"]["action_result"]["action_type"] == "delegate_task"
    assert infos["product_manager"]["action_result"]["payload"] == choices[delegate]["payload"]
    assert infos["engineer"]["action_result"]["action_type"] == "no_op"
    assert len(set(rewards.values())) == 1 and not any(terminations.values()) and not any(truncations.values())


def test_an_episode_ends_for_every_role_at_once_and_step_after_it_raises() -> None:
    env = AAOSParallelEnv(task="org_simulation", scenario="product_launch_failure")
    env.reset(seed=0)
    steps = 0
    while env.agents:
        _, _, terminations, _, _ = env.step(dict.fromkeys(env.agents, 0))
        steps += 1
    assert all(terminations.values()) and steps == aaos.spec().task("org_simulation").max_steps
    with pytest.raises(aaos.EpisodeDone):
        env.step({})


def test_catalogue_starts_with_no_op_and_expands_payload_choices() -> None:
    legal = {"no_op": {}, "query_metrics": {"metric": ["latency", "uptime"]},
             "request_resource": {"resource_type": ["compute", "budget"], "amount": [5, 10, 15]},
             "propose_plan": {"plan": "text", "addresses": ["none", "compute", "budget", "personnel"]}}
    actions = catalogue(legal)
    assert actions[0] == NO_OP and actions[1] == {"action_type": "query_metrics", "payload": {"metric": "latency"}}
    assert actions[2] == {"action_type": "query_metrics", "payload": {"metric": "uptime"}}
    assert len(actions) == 1 + 2 + 6 + 4
    assert {a["payload"]["amount"] for a in actions if a["action_type"] == "request_resource"} == {5, 10, 15}
    plans = [a["payload"] for a in actions if a["action_type"] == "propose_plan"]
    assert all(p["plan"] for p in plans)
    assert [p["addresses"] for p in plans] == ["none", "compute", "budget", "personnel"]
