"""environment_class("org"), the class for TRL's GRPOTrainer(environment_factory=...), used as TRL uses it."""

from __future__ import annotations

import inspect
import json
from typing import Any, get_args

import pytest

import aaos
from aaos.agents.prompts import role_user_prompt
from aaos.core.trajectory import EpisodeMeta
from aaos.training import INVALID_REWARD, DefaultEnvironment, environment_class, grpo_rows, reward_fn
from aaos.training.episodes import play

SPEC = aaos.spec("org")
OrgEnvironment = environment_class("org")


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    episode = play(EpisodeMeta("org", "full_episode", "product_launch_failure", 5), aaos.policies.make("heuristic"))
    return list(grpo_rows([episode], horizon=3))


def row_for(rows: list[dict[str, Any]], step: int, role: str) -> dict[str, Any]:
    return next(r for r in rows if r["step"] == step and r["role"] == role)


def tools(environment: Any) -> dict[str, Any]:
    """The tools TRL exposes: the public methods of the class other than reset and get_reward."""
    return {name: getattr(environment, name)
            for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
            if not name.startswith("_") and name not in ("reset", "get_reward")}


def test_the_default_class_is_the_default_environments_named_after_it() -> None:
    assert DefaultEnvironment.__name__ == f"{aaos.DEFAULT_ENV.capitalize()}Environment" == OrgEnvironment.__name__
    assert sorted(tools(DefaultEnvironment())) == sorted(a.name for a in aaos.spec().actions)


def test_there_is_one_tool_per_action_type_typed_from_its_payload() -> None:
    environment = OrgEnvironment()
    found = tools(environment)
    assert sorted(found) == sorted(a.name for a in SPEC.actions)
    delegate = inspect.signature(found["delegate_task"])
    assert list(delegate.parameters) == ["task_id", "to"]
    assert get_args(delegate.parameters["to"].annotation) == SPEC.roles
    flag = inspect.signature(found["raise_risk_flag"]).parameters
    assert flag["risk_id"].default is inspect.Parameter.empty and flag["description"].default == ""
    query = inspect.signature(found["query_metrics"]).parameters
    assert list(query) == ["metric"] and query["metric"].default is inspect.Parameter.empty
    assert set(get_args(query["metric"].annotation)) == {"latency", "error_rate", "uptime", "data_quality"}


def test_transformers_builds_a_tool_schema_from_every_method() -> None:
    utils = pytest.importorskip("transformers.utils", reason="transformers is in the optional [train] extra")
    for name, method in tools(OrgEnvironment()).items():
        schema = utils.get_json_schema(method)["function"]
        action = SPEC.action(name)
        assert schema["name"] == name and schema["description"] == action.description
        payload = action.payload.model_json_schema()
        assert set(schema["parameters"]["properties"]) == set(payload.get("properties", {}))
        assert schema["parameters"].get("required", []) == payload.get("required", [])
    amount = utils.get_json_schema(OrgEnvironment.approve_resource)["function"]["parameters"]["properties"]
    assert amount["resource_type"]["enum"] == ["compute", "budget", "personnel"]
    assert amount["amount"]["type"] == "integer"


def test_reset_restores_the_row_and_returns_the_view_only_when_the_prompt_lacks_it(rows) -> None:
    row = row_for(rows, 4, "engineer")
    environment = OrgEnvironment()
    assert environment.reset(**row) is None
    view = environment.rollout.observation()["agent_observations"]["engineer"]
    assert view["step"] == 4 and role_user_prompt(view, aaos.spec()) == row["prompt"][-1]["content"]
    empty = {**row, "prompt": [row["prompt"][0], {"role": "user", "content": ""}]}
    assert environment.reset(**empty) == row["prompt"][-1]["content"]


def test_reset_needs_a_per_role_row(rows) -> None:
    with pytest.raises(ValueError, match="grpo-data --mode per_role"):
        OrgEnvironment().reset(**{**rows[0], "role": None})
    with pytest.raises(RuntimeError, match="reset"):
        OrgEnvironment().query_metrics(metric="latency")


def test_a_valid_call_is_one_step_and_returns_the_next_view(rows) -> None:
    environment = OrgEnvironment()
    environment.reset(**row_for(rows, 4, "engineer"))
    said = environment.query_metrics(metric="latency")
    assert environment.rollout.steps == 1
    first, view = said.split("\n\n", 1)
    assert first.startswith("query_metrics: applied (")
    assert view == role_user_prompt(environment.rollout.observation()["agent_observations"]["engineer"], aaos.spec())
    assert "Step 5." in view


def test_an_invalid_call_is_not_played_and_says_why(rows) -> None:
    environment = OrgEnvironment()
    environment.reset(**row_for(rows, 4, "product_manager"))
    said = environment.approve_resource(amount=10, resource_type="compute")
    assert said.startswith("Invalid action, not taken: product_manager may not use approve_resource")
    said = environment.delegate_task(task_id="task_nope", to="engineer")
    assert "payload.task_id must be one of" in said
    assert environment.rollout.steps == 0 and environment.invalid_calls == 2
    assert environment.get_reward() == INVALID_REWARD


def test_the_rollout_ends_at_the_horizon_and_is_scored_like_reward_fn(rows) -> None:
    row = row_for(rows, 10, "operations")
    action = {"action_type": "query_metrics", "payload": {"metric": "uptime"}}
    environment = OrgEnvironment()
    environment.reset(**row)
    environment.query_metrics(metric="uptime")
    expected = reward_fn([json.dumps(action)], snapshot=[row["snapshot"]], role=["operations"], horizon=[3])
    assert environment.get_reward() == expected[0]

    environment.reset(**row)
    for _ in range(2):
        assert "\n\nYour view as operations:" in environment.query_metrics(metric="uptime")
    assert environment.query_metrics(metric="uptime").endswith("The rollout is over.")
    assert environment.query_metrics(metric="uptime") == "The rollout is over: no more actions are taken."
    assert environment.rollout.steps == 3
    assert -1.0 < environment.get_reward() <= 1.0
