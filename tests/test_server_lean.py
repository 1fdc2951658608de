"""Lean answers (`roles`, `observe`) on HTTP /reset and /step, WebSocket reset and step, and the typed client:
the same cut everywhere, nothing else changed, and a clear 422 / error frame for a role that does not exist."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

import aaos
from aaos.core.info import OBSERVATION_KEYS
from aaos.server.app import create_app
from aaos.server.background import BackgroundServer
from aaos.server.client import AAOSEnv
from aaos.server.sessions import SessionConfig

EPISODE = {"task": "full_episode", "scenario": "product_launch_failure", "seed": 3}
ROLES = ["engineer", "oversight"]


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(create_app(SessionConfig(max_sessions=8, ttl=600))) as running:
        yield running


@pytest.fixture()
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def reference(steps: int) -> tuple[dict[str, Any], list[Any], list[dict[str, Any]]]:
    """The champion's first observation, joint actions and step results in process, as JSON data."""
    env = aaos.make(**EPISODE)
    policy = aaos.policies.make("heuristic")
    observation = env.reset()
    first, joints, results = json.loads(json.dumps(observation)), [], []
    for _ in range(steps):
        joints.append(policy.act(observation))
        result = env.step(joints[-1])
        observation = result.observation
        results.append(json.loads(json.dumps(result.to_dict())))
    return first, joints, results


def only(observation: dict[str, Any], roles: list[str]) -> dict[str, Any]:
    """What `roles` see: the keys every observation has, with only their views."""
    head = {key: value for key, value in observation.items() if key in OBSERVATION_KEYS}
    return {**head, "agent_observations": {r: observation["agent_observations"][r] for r in roles}}


def told(info: dict[str, Any], roles: list[str]) -> dict[str, Any]:
    """The step info as `roles` are told it: only their action results."""
    return {**info, "action_results": {r: info["action_results"][r] for r in roles}}


def test_http_roles_and_observe_cut_the_observation_and_nothing_else(http: httpx.Client) -> None:
    first, joints, results = reference(6)
    opened = http.post("/reset", json={**EPISODE, "roles": ROLES}).json()
    assert opened["observation"] == only(first, ROLES) and opened["done"] is False
    session = opened["session_id"]
    for index, (joint, expected) in enumerate(zip(joints, results, strict=True)):
        lean = {"roles": ROLES} if index % 2 else {"observe": False}
        answer = http.post("/step", json={"session_id": session, "action": joint, **lean}).json()
        if index % 2:
            assert answer == {**expected, "observation": only(expected["observation"], ROLES),
                              "info": told(expected["info"], ROLES)}
            assert "system_metrics" in expected["observation"]  # a world-wide field the whole observation has
        else:
            assert answer == {**expected, "observation": None}
    full = http.post("/reset", json={"session_id": session}).json()["observation"]
    assert full == first  # the default is still the whole observation


def test_http_unknown_role_is_a_422_naming_the_roles_and_changes_nothing(http: httpx.Client) -> None:
    session = http.post("/reset", json={"task": "org_simulation", "seed": 1}).json()["session_id"]
    query = {"engineer": {"action_type": "query_metrics", "payload": {"metric": "latency"}}}
    refused = http.post("/step", json={"session_id": session, "action": query, "roles": ["engineer", "janitor"]})
    assert refused.status_code == 422
    assert refused.json()["detail"] == [f"roles: 'janitor' is not a role of 'org'; the roles are "
                                        f"{', '.join(aaos.spec().roles)}"]
    again = http.post("/reset", json={"session_id": session, "seed": 5, "roles": ["janitor"]})
    assert again.status_code == 422
    state = http.get("/state", params={"session_id": session}).json()
    assert state["step"] == 0 and state["seed"] == 1  # neither the step nor the reset happened
    for bad in ({"observe": "no"}, {"roles": "engineer"}, {"roles": [1]}):
        assert http.post("/step", json={"session_id": session, **bad}).status_code == 422


def test_websocket_roles_and_observe(server: BackgroundServer) -> None:
    first, joints, results = reference(2)
    with connect(server.url.replace("http", "ws") + "/ws") as ws:
        def ask(message: dict[str, Any]) -> dict[str, Any]:
            ws.send(json.dumps(message))
            answer: dict[str, Any] = json.loads(ws.recv(timeout=60))
            return answer

        opened = ask({"type": "reset", "data": EPISODE, "roles": ["engineer"]})["data"]
        expected_first = {"info": {}, **only(first, ["engineer"])}
        del expected_first["done"]
        assert opened["observation"] == expected_first
        refused = ask({"type": "step", "data": joints[0], "roles": ["janitor"]})
        assert refused["data"]["code"] == "VALIDATION_ERROR" and "the roles are" in refused["data"]["message"]
        blind = ask({"type": "step", "data": joints[0], "observe": False})["data"]
        assert blind == {"observation": None, "reward": results[0]["reward"], "done": results[0]["done"],
                         "info": results[0]["info"]}  # the refused step changed nothing
        seen = ask({"type": "step", "data": joints[1], "roles": ROLES})["data"]["observation"]
        assert set(seen["agent_observations"]) == set(ROLES)
        assert seen["info"] == told(results[1]["info"], ROLES)


def test_the_typed_client_asks_for_lean_answers(server: BackgroundServer) -> None:
    with AAOSEnv(base_url=server.url).sync() as env:
        result = env.reset(roles=["operations"], **EPISODE)
        assert list(result.observation.agent_observations) == ["operations"]
        result = env.step({}, observe=False)
        assert result.observation.info["step"] == 1 and "agent_observations" not in result.observation.env_observation()
        result = env.step({})
        assert set(result.observation.agent_observations) == set(aaos.spec().roles)
        with pytest.raises(RuntimeError, match="'janitor' is not a role"):
            env.step({}, roles=["janitor"])
        assert env.state().step_count == 2
