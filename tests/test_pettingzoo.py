"""The PettingZoo ParallelEnv wrapper: PettingZoo's own API and seed tests, and what its spaces mean."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test
from pettingzoo.utils.conversions import parallel_to_aec
from pydantic import ValidationError

import aaos
from aaos.server.models import typed_joint_action
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


@pytest.mark.parametrize("index", [2.7, "1", True, None, np.True_, np.float64(0.5), [1]], ids=repr)
def test_an_index_that_is_not_an_integer_is_refused_as_the_server_refuses_it_and_changes_nothing(index: object) -> None:
    env = AAOSParallelEnv(task="full_episode", scenario="product_launch_failure")
    env.reset(seed=0)
    before = env.env.state()
    plain = index.item() if isinstance(index, np.generic) else index  # the value itself, as JSON would carry it
    with pytest.raises(ValueError, match=r"action of 'engineer'.*valid integer") as refused:
        env.step({"product_manager": 1, "engineer": index})
    assert str(refused.value).endswith(f"not {plain!r}")
    assert env.env.state() == before
    with pytest.raises(ValidationError, match="valid integer"):  # the server's verdict on the same value
        typed_joint_action("org", {"operations": {"action_type": "approve_resource",
                                                  "payload": {"amount": plain, "resource_type": "compute"}}})


@pytest.mark.parametrize("index", [1, 1.0, np.int64(1), np.uint8(1), np.float32(1.0)], ids=repr)
def test_an_integer_index_is_taken_whatever_its_number_type(index: object) -> None:
    env = AAOSParallelEnv(task="full_episode", scenario="product_launch_failure")
    _, infos = env.reset(seed=0)
    _, _, _, _, stepped = env.step({"product_manager": index})
    assert stepped["product_manager"]["action_result"]["action_type"] == infos["product_manager"]["actions"][1][
        "action_type"]
