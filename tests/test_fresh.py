"""aaos.core.fresh (fresh copies of constant data) and the parsed-action cache of a spec."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

import aaos
from aaos.core.actions import ActionResult, ParsedAction, parse_action, parse_joint_action
from aaos.core.fresh import copier, picker

CHOICES = {"propose_plan": {"plan": "text", "addresses": ("none", "compute")},
           "query_metrics": {"metric": ["latency"], "weights": [0.25, -1.5, 3]},
           "flags": [True, False, None], "no_op": {}}


def test_a_picker_returns_a_new_dict_of_its_keys_in_order() -> None:
    source = {"uptime": 0.99, "latency": 120.0, "error_rate": 0.01}
    pick = picker(("latency", "uptime"))
    first = pick(source)
    assert first == {"latency": 120.0, "uptime": 0.99} and list(first) == ["latency", "uptime"]
    first["latency"] = 0.0
    assert pick(source) == {"latency": 120.0, "uptime": 0.99} and pick(source) is not pick(source)
    with pytest.raises(KeyError):
        pick({"latency": 1.0})
    assert picker(("compute", "budget"), 0)({"budget": 3}) == {"compute": 0, "budget": 3}
    assert picker(())({"a": 1}) == {}


@pytest.mark.parametrize("keys, default", [((1,), 0), (("a",), object()), (("a",), math.nan)])
def test_a_picker_refuses_keys_or_a_default_that_are_not_plain_data(keys: tuple[Any, ...], default: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        picker(keys, default)


def test_a_copier_returns_an_equal_new_copy_each_call_with_tuples_as_lists() -> None:
    build = copier(CHOICES)
    first, second = build(), build()
    expected = copy.deepcopy(CHOICES)
    expected["propose_plan"]["addresses"] = ["none", "compute"]
    assert first == second == expected
    assert list(first) == list(CHOICES)
    assert first is not second and first["query_metrics"]["metric"] is not second["query_metrics"]["metric"]
    first["query_metrics"]["metric"].append("uptime")
    first["no_op"]["x"] = 1
    assert build() == expected


@pytest.mark.parametrize(("value", "error"), [
    ({"x": math.nan}, ValueError), ({"x": math.inf}, ValueError), ({1: "a"}, TypeError),
    ({"x": object()}, TypeError), ([{"x": {1, 2}}], TypeError),
])
def test_a_copier_refuses_anything_but_plain_json_data(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        copier(value)


def test_a_repeated_action_is_parsed_once_and_the_cache_keys_on_role_and_payload() -> None:
    spec = aaos.spec("org")
    raw = {"action_type": "query_metrics", "payload": {"metric": "latency"}}
    first = parse_action(spec, "engineer", raw)
    assert isinstance(first, ParsedAction) and parse_action(spec, "engineer", dict(raw)) is first
    audit = {"action_type": "audit_agent", "payload": {"target_agent": "operations"}}
    forbidden = parse_action(spec, "engineer", audit)
    assert isinstance(forbidden, ActionResult) and forbidden.reason == "forbidden"
    assert isinstance(parse_action(spec, "oversight", audit), ParsedAction)
    again = parse_action(spec, "engineer", audit)
    assert isinstance(again, ActionResult) and again.reason == "forbidden"
    wrong = parse_action(spec, "data_analyst", {"action_type": "query_metrics", "payload": {"metric": "nope"}})
    assert isinstance(wrong, ActionResult) and wrong.reason == "malformed"
    unhashable = parse_action(spec, "engineer", {"action_type": "query_metrics", "payload": {"metric": ["latency"]}})
    assert isinstance(unhashable, ActionResult) and "payload.metric" in unhashable.message
    joint = parse_joint_action(spec, {"engineer": raw, "oversight": {"action_type": "no_op", "payload": {}}})
    assert joint.actions == {"engineer": first} and not joint.rejected


def test_a_clone_shares_the_immutable_spec_and_nothing_else() -> None:
    env = aaos.make("full_episode")
    env.reset()
    twin = env.clone()
    assert twin.spec is env.spec
    twin.step({"engineer": {"action_type": "query_metrics", "payload": {"metric": "latency"}}})
    assert env.state()["step"] == 0 and twin.state()["step"] == 1
