"""The HTTP API against a real server on loopback: sessions, exact trajectories, errors, isolation, limits."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import aaos
from aaos.server.app import MAX_BODY_BYTES, create_app
from aaos.server.background import BackgroundServer
from aaos.server.sessions import SessionConfig

ROLES = aaos.spec().roles


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(create_app(SessionConfig(max_sessions=200, ttl=600, max_per_client=200))) as running:
        yield running


@pytest.fixture(scope="module")
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def in_process_trajectory(task: str, scenario: str, seed: int, max_steps: int | None = None
                          ) -> tuple[dict[str, Any], list[tuple[dict[str, Any], dict[str, Any]]], dict[str, Any]]:
    """The champion's episode in process: first observation, (joint action, step result) pairs, final state."""
    env = aaos.make(task, scenario=scenario, seed=seed)
    policy = aaos.policies.make("heuristic")
    first = observation = env.reset()
    steps = []
    while max_steps is None or len(steps) < max_steps:
        joint = policy.act(observation)
        result = env.step(joint)
        steps.append((joint, json.loads(json.dumps(result.to_dict()))))
        observation = result.observation
        if result.done:
            break
    return json.loads(json.dumps(first)), steps, json.loads(json.dumps(env.state()))


def open_session(http: httpx.Client, **params: Any) -> tuple[str, dict[str, Any]]:
    response = http.post("/reset", json=params)
    assert response.status_code == 200, response.text
    body = response.json()
    return body["session_id"], body["observation"]


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def step(http: httpx.Client, session_id: str, action: Any) -> httpx.Response:
    return http.post("/step", json={"session_id": session_id, "action": action})


# --- OpenEnv's routes ------------------------------------------------------------------------------------


def test_health_metadata_and_schema_describe_the_environment(http: httpx.Client) -> None:
    assert http.get("/health").json() == {"status": "healthy"}
    metadata = http.get("/metadata").json()
    assert metadata["name"] == "aaos" and "full_episode" in metadata["description"]
    schema = http.get("/schema").json()
    assert set(ROLES) <= set(schema["action"]["properties"])
    # each role's field offers exactly the actions the permission table allows it
    for role in ROLES:
        variants = schema["action"]["properties"][role]["anyOf"][0]["oneOf"]
        names = {schema["action"]["$defs"][v["$ref"].split("/")[-1]]["properties"]["action_type"]["const"]
                 for v in variants}
        assert names == set(aaos.spec().allowed_actions(role))


# --- exact trajectories ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("task", "scenario", "seed"), [
    ("full_episode", "product_launch_failure", 0),
    ("crisis_management", "silent_data_drift", 7),
    ("org_simulation", "vendor_outage_cascade", 10_001),
])
def test_http_episode_is_exactly_the_in_process_episode(http: httpx.Client, task: str, scenario: str,
                                                        seed: int) -> None:
    first, steps, final_state = in_process_trajectory(task, scenario, seed)
    session_id, observation = open_session(http, task=task, scenario=scenario, seed=seed)
    assert canonical(observation) == canonical(first)
    for joint, expected in steps:
        response = step(http, session_id, joint)
        assert response.status_code == 200, response.text
        assert canonical(response.json()) == canonical(expected)
    assert steps[-1][1]["done"]
    state = http.get("/state", params={"session_id": session_id}).json()
    assert state.pop("step_count") == final_state["step"]
    assert state.pop("episode_id") is None
    assert canonical(state) == canonical(final_state)


def test_reset_with_session_id_restarts_that_session_and_keeps_unset_fields(http: httpx.Client) -> None:
    session_id, _ = open_session(http, task="crisis_management", scenario="resource_conflict", seed=3)
    query = {"engineer": {"action_type": "query_metrics", "payload": {"metric": "latency"}}}
    assert step(http, session_id, query).status_code == 200
    response = http.post("/reset", json={"session_id": session_id, "seed": 4, "episode_id": "run-4"})
    assert response.status_code == 200 and response.json()["session_id"] == session_id
    expected = aaos.make("crisis_management", scenario="resource_conflict", seed=4).reset()
    assert canonical(response.json()["observation"]) == canonical(expected)
    state = http.get("/state", params={"session_id": session_id}).json()
    assert (state["task"], state["seed"], state["step"], state["episode_id"]) == ("crisis_management", 4, 0, "run-4")
    assert http.post("/reset", json={"session_id": session_id}).status_code == 200
    state = http.get("/state", params={"session_id": session_id}).json()
    assert (state["task"], state["seed"], state["episode_id"]) == ("crisis_management", 4, None)  # a new episode


def test_close_ends_a_session(http: httpx.Client) -> None:
    session_id, _ = open_session(http)
    assert http.post("/close", json={"session_id": session_id}).json() == {"session_id": session_id, "closed": True}
    assert http.get("/state", params={"session_id": session_id}).status_code == 404
    assert http.post("/close", json={"session_id": session_id}).status_code == 404


# --- errors --------------------------------------------------------------------------------------------------

BAD_ACTIONS = [
    ({"engineer": {"action_type": "fly"}}, "action.engineer", "fly"),
    ({"ceo": {"action_type": "no_op"}}, "action.ceo", "Extra inputs"),
    ({"oversight": {"action_type": "approve_resource", "payload": {"amount": 5, "resource_type": "compute"}}},
     "action.oversight", "approve_resource"),
    ({"product_manager": {"action_type": "delegate_task", "payload": {"task_id": "task_nope", "to": "engineer"}}},
     "product_manager: payload.task_id", "task_nope"),
    ({"engineer": {"action_type": "resolve_incident", "payload": {"incident_id": 42}}},
     "payload.incident_id", "valid string"),
    ({"engineer": {"action_type": "delegate_task", "payload": {"task_id": "task_backend"}}}, "payload.to",
     "Field required"),
    ({"engineer": {"action_type": "query_metrics", "payload": {"metric": "latency", "loud": True}}}, "payload.loud",
     "Extra inputs"),
    ({"engineer": {"action_type": "query_metrics", "payload": {"metric": "latency"}, "extra": 1}}, "action.engineer",
     "extra"),
    ({"engineer": "query_metrics"}, "action.engineer", "dictionary"),
    (["query_metrics"], "action", "dictionary"),
    ({"engineer": {"action_type": "propose_plan", "payload": {"plan": ""}}}, "payload.plan", "at least 1"),
    ({"engineer": {"action_type": "query_metrics", "payload": {}}}, "payload.metric", "Field required"),
    ({"engineer": {"action_type": "query_metrics", "payload": {"metric": "mood"}}}, "payload.metric",
     "Input should be"),
    ({"engineer": {"action_type": "propose_plan", "payload": {"plan": "all of it", "addresses": "everything"}}},
     "payload.addresses", "Input should be"),
    ({"oversight": {"action_type": "update_policy", "payload": {"policy": "max 20"}}}, "payload.max_resource_approval",
     "Field required"),
    ({"oversight": {"action_type": "update_policy", "payload": {"max_resource_approval": "twenty"}}},
     "payload.max_resource_approval", "valid integer"),
]


@pytest.mark.parametrize(("action", "field", "words"), BAD_ACTIONS)
def test_a_bad_action_is_a_422_naming_the_field_and_changes_nothing(http: httpx.Client, action: Any, field: str,
                                                                    words: str) -> None:
    session_id, _ = open_session(http, task="full_episode", seed=1)
    before = http.get("/state", params={"session_id": session_id}).json()
    response = step(http, session_id, action)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert isinstance(detail, list) and any(field in message and words in message for message in detail), detail
    assert http.get("/state", params={"session_id": session_id}).json() == before


@pytest.mark.parametrize(("body", "words"), [
    ({"action": {}}, "session_id: Field required"),
    ({"session_id": 7, "action": {}}, "session_id: Input should be a valid string"),
    ({"session_id": "x", "action": {}, "actions": {}}, "actions: Extra inputs"),
    ([1, 2], "Input should be a valid dictionary"),
    ({"session_id": "x", "action": {"engineer": {"action_type": "propose_plan", "payload": {"plan": nested(30)}}}},
     "nested deeper"),
])
def test_malformed_step_requests_are_422s_that_say_what_to_fix(http: httpx.Client, body: Any, words: str) -> None:
    response = http.post("/step", json=body)
    assert response.status_code == 422
    assert any(words in message for message in response.json()["detail"]), response.json()


@pytest.mark.parametrize(("path", "body", "words"), [
    ("/reset", {"task": "juggling"}, "task: Input should be"),
    ("/reset", {"scenario": "/etc/passwd.json"}, "scenario: Input should be"),
    ("/reset", {"seed": -1}, "seed: Input should be greater than or equal to 0"),
    ("/reset", {"seed": "zero"}, "seed: Input should be a valid integer"),
    ("/reset", {"env": "chess"}, "env: Input should be 'org'"),
    ("/reset", {"tasks": "full_episode"}, "tasks: Extra inputs"),
    ("/close", {}, "session_id: Field required"),
])
def test_bad_reset_and_close_requests_are_422s(http: httpx.Client, path: str, body: Any, words: str) -> None:
    response = http.post(path, json=body)
    assert response.status_code == 422
    assert any(words in message for message in response.json()["detail"]), response.json()


@pytest.mark.parametrize(("content", "status"), [
    (b"{not json", 422),
    (b"\xff\xfe\x00garbage", 400),  # not UTF-8
    (b"", 422),
    (b"[" * 20_000 + b"]" * 20_000, 400),  # beyond what a JSON parser should recurse into
    (b'{"session_id": "' + b"x" * (MAX_BODY_BYTES + 10) + b'"}', 413),
])
def test_garbage_oversized_and_deeply_nested_bodies_get_a_4xx(http: httpx.Client, content: bytes,
                                                              status: int) -> None:
    for path in ("/reset", "/step"):
        response = http.post(path, content=content, headers={"content-type": "application/json"})
        if content == b"" and path == "/reset":
            assert response.status_code == 200  # an empty reset opens a default session
            continue
        assert response.status_code == status, (path, response.text)
        assert response.json()["detail"]


def test_a_body_nested_too_deeply_to_decode_says_how_deep_json_may_nest(http: httpx.Client) -> None:
    response = http.post("/step", content=b"[" * 20_000 + b"]" * 20_000, headers={"content-type": "application/json"})
    assert response.status_code == 400 and "may nest at most 16 levels" in response.json()["detail"]


@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data"])
def test_a_body_not_sent_as_json_is_a_415_naming_the_header(http: httpx.Client, content_type: str) -> None:
    for path in ("/reset", "/step"):
        response = http.post(path, content=b'{"seed": 1}', headers={"content-type": content_type})
        assert response.status_code == 415, (path, response.text)
        assert "Content-Type: application/json" in response.json()["detail"] and content_type in response.text
    for accepted in ({"content-type": "application/json; charset=utf-8"}, {"content-type": "application/vnd.api+json"},
                     {"content-type": ""}, {}):  # no Content-Type: read as JSON
        response = http.post("/reset", content=b'{"seed": 1}', headers=accepted)
        assert response.status_code == 200, (accepted, response.text)
        state = http.get("/state", params={"session_id": response.json()["session_id"]}).json()
        assert state["seed"] == 1
        assert http.post("/close", json={"session_id": response.json()["session_id"]}).status_code == 200
    assert http.get("/no-such-route").status_code == 404  # other HTTP errors keep FastAPI's answer


def test_an_oversized_chunked_body_is_a_413(http: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(10):
            yield b" " * (MAX_BODY_BYTES // 4)

    response = http.post("/step", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_unknown_session_is_a_404_everywhere(http: httpx.Client) -> None:
    for response in (step(http, "no-such-session", {}), http.get("/state", params={"session_id": "no-such-session"}),
                     http.post("/close", json={"session_id": "no-such-session"}),
                     http.post("/reset", json={"session_id": "no-such-session"})):
        assert response.status_code == 404
        assert "POST /reset" in response.json()["detail"]


def test_step_after_done_is_a_409_and_reset_recovers(http: httpx.Client) -> None:
    _, steps, _ = in_process_trajectory("org_simulation", "product_launch_failure", 0)
    session_id, _ = open_session(http, task="org_simulation", scenario="product_launch_failure", seed=0)
    for joint, _ in steps:
        last = step(http, session_id, joint)
    assert last.json()["done"]
    response = step(http, session_id, {})
    assert response.status_code == 409 and "POST /reset" in response.json()["detail"]
    assert http.post("/reset", json={"session_id": session_id}).status_code == 200
    assert step(http, session_id, {}).status_code == 200


def test_an_unexpected_error_in_one_session_is_a_500_for_that_request_only(server: BackgroundServer,
                                                                          http: httpx.Client,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    broken, _ = open_session(http, seed=5)
    healthy, _ = open_session(http, seed=5)
    sessions = server._server.config.app.state.sessions  # the app behind the running server

    def fail(joint_action: Any) -> Any:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(sessions.get(broken).env, "advance", fail)
    response = step(http, broken, {})
    assert response.status_code == 500 and "no other session" in response.json()["detail"]
    assert step(http, healthy, {}).status_code == 200
    assert http.get("/health").status_code == 200


# --- concurrency ----------------------------------------------------------------------------------------------

CONCURRENT = 64
STEPS_EACH = 6


def test_64_concurrent_sessions_follow_their_own_trajectories(server: BackgroundServer) -> None:
    """Each client has its own scenario/seed; half of them also send a bad action before every step, which
    must be refused without touching any session."""
    scenarios = [s["id"] for s in aaos.list_scenarios()]
    plans = [(scenarios[i % len(scenarios)], i) for i in range(CONCURRENT)]
    references = {seed: in_process_trajectory("full_episode", scenario, seed, STEPS_EACH) for scenario, seed in plans}

    async def client(scenario: str, seed: int, http: httpx.AsyncClient) -> list[str]:
        response = await http.post("/reset", json={"task": "full_episode", "scenario": scenario, "seed": seed})
        session_id = response.json()["session_id"]
        seen = [canonical(response.json()["observation"])]
        for joint, _ in references[seed][1]:
            if seed % 2:
                bad = await http.post("/step", json={"session_id": session_id, "action": {"ceo": {}}})
                assert bad.status_code == 422
            response = await http.post("/step", json={"session_id": session_id, "action": joint})
            assert response.status_code == 200, response.text
            seen.append(canonical(response.json()))
        await http.post("/close", json={"session_id": session_id})
        return seen

    async def run() -> list[list[str]]:
        limits = httpx.Limits(max_connections=CONCURRENT)
        async with httpx.AsyncClient(base_url=server.url, timeout=60, limits=limits) as http:
            return await asyncio.gather(*(client(scenario, seed, http) for scenario, seed in plans))

    for (_, seed), seen in zip(plans, asyncio.run(run()), strict=True):
        first, steps, _ = references[seed]
        assert seen == [canonical(first), *(canonical(result) for _, result in steps)]


# --- capacity and expiry ------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_capacity_is_a_503_and_idle_sessions_expire() -> None:
    clock = FakeClock()
    config = SessionConfig(max_sessions=2, ttl=60, evict_after=60)  # never evicts: sessions expire first
    with BackgroundServer(create_app(config, clock=clock)) as small, \
            httpx.Client(base_url=small.url, timeout=30) as http:
        first, _ = open_session(http)
        clock.now += 50
        second, _ = open_session(http)
        refused = http.post("/reset", json={})
        assert refused.status_code == 503 and "all 2 sessions are in use" in refused.json()["detail"]
        assert refused.headers["retry-after"] == "10"  # when the first one expires
        clock.now += 20  # first idle for 70 s > ttl; second for 20 s
        assert step(http, first, {}).status_code == 404
        assert step(http, second, {}).status_code == 200  # and that use keeps it alive
        third, _ = open_session(http)
        clock.now += 59
        assert step(http, second, {}).status_code == 200
        assert step(http, third, {}).status_code == 200
        clock.now += 61
        assert step(http, second, {}).status_code == 404
        assert http.get("/state", params={"session_id": third}).status_code == 404
        open_session(http)
        open_session(http)


def client_at(server: BackgroundServer, address: str) -> httpx.Client:
    """A client whose connections come from `address` (any 127.x.y.z is loopback on Linux)."""
    return httpx.Client(base_url=server.url, timeout=30, transport=httpx.HTTPTransport(local_address=address))


def test_one_client_cannot_take_every_slot_and_a_full_store_evicts_the_idlest_session() -> None:
    clock = FakeClock()
    config = SessionConfig(max_sessions=4, max_per_client=2, ttl=100, evict_after=30)
    with BackgroundServer(create_app(config, clock=clock)) as server, client_at(server, "127.0.0.1") as a, \
            client_at(server, "127.0.0.2") as b, client_at(server, "127.0.0.3") as c:
        a_first, _ = open_session(a)
        clock.now += 10
        a_second, _ = open_session(a)
        refused = a.post("/reset", json={})
        assert refused.status_code == 429 and "this client already holds 2 sessions" in refused.json()["detail"]
        assert refused.headers["retry-after"] == "90"  # when a_first expires
        assert a.post("/reset", json={"session_id": a_first}).status_code == 200  # reusing one is always fine
        b_first, _ = open_session(b)
        b_second, _ = open_session(b)
        clock.now += 25  # idle: a_first 25 s, a_second 25 s, b's 25 s: none evictable yet
        assert step(a, a_first, {}).status_code == 200
        full = c.post("/reset", json={})
        assert full.status_code == 503 and "all 4 sessions are in use" in full.json()["detail"]
        assert full.headers["retry-after"] == "5"  # a_second (idle since 10) becomes evictable at 30 s idle
        clock.now += 5
        c_first, _ = open_session(c)  # evicts a_second, the idlest
        assert step(a, a_second, {}).status_code == 404
        assert [step(x, sid, {}).status_code for x, sid in ((a, a_first), (b, b_first), (b, b_second), (c, c_first))
                ] == [200] * 4
        assert c.post("/reset", json={}).status_code == 503  # nothing has been idle 30 s now


def test_aaos_serve_and_the_server_script_listen_where_host_and_port_say(monkeypatch: pytest.MonkeyPatch) -> None:
    from aaos.cli import build_parser

    monkeypatch.setenv("HOST", "127.0.0.9")
    monkeypatch.setenv("PORT", "8123")
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port) == ("127.0.0.9", 8123)
    args = build_parser().parse_args(["serve", "--port", "9000"])
    assert (args.host, args.port) == ("127.0.0.9", 9000)
