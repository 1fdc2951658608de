"""Evaluation mode (issue 34, item 6): a server started with --eval hides the ground truth on every surface and
draws a secret holdout salt at start, which re-draws every holdout variant its sessions play (train variants
ignore it). The salt is never answered, logged or put in the process's environment; GET /evaluation gives its
fingerprint. Nothing a client sends turns it off."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

import aaos
from aaos.core.seeding import HOLDOUT_SALT_ENV, HOLDOUT_SEED_START, salt_fingerprint, salted
from aaos.server import evaluation
from aaos.server.app import create_app
from aaos.server.background import BackgroundServer
from aaos.server.sessions import SessionConfig

SECRET = "a-salt-no-client-may-see-0123456789"
HOLDOUT = {"env": "org", "task": "full_episode", "scenario": "product_launch_failure", "seed": HOLDOUT_SEED_START}
TRAIN = {**HOLDOUT, "seed": 3}


@pytest.fixture
def eval_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[BackgroundServer]:
    monkeypatch.setattr(evaluation, "new_salt", lambda: SECRET)  # a known salt, to look for it in every answer
    with BackgroundServer(create_app(SessionConfig(evaluation=True))) as server:
        yield server


def first_observation(http: httpx.Client, episode: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    answer = http.post("/reset", json=episode)
    assert answer.status_code == 200, answer.text
    return answer.json()["session_id"], answer.json()["observation"]


def in_process(episode: dict[str, Any]) -> dict[str, Any]:
    env = aaos.make(episode["task"], scenario=episode["scenario"], seed=episode["seed"], env=episode["env"])
    return json.loads(json.dumps(env.reset()))


def test_an_evaluation_server_plays_a_salted_holdout_and_hides_the_state(
        eval_server: BackgroundServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    with httpx.Client(base_url=eval_server.url, timeout=30) as http:
        info = http.get("/evaluation").json()
        assert info == {"evaluation": True, "state_hidden": True, "holdout_salt": salt_fingerprint(SECRET),
                        "holdout": "salted holdout"}
        session, holdout = first_observation(http, HOLDOUT)
        with salted(SECRET):  # deterministic given the salt: the variant the salt draws in process
            assert holdout == in_process(HOLDOUT)
        assert holdout != in_process(HOLDOUT)  # not the public variant a twin would replay
        assert first_observation(http, TRAIN)[1] == in_process(TRAIN)  # train variants ignore the salt
        refused = http.get("/state", params={"session_id": session})
        assert refused.status_code == 403 and "--eval" in refused.json()["detail"]
        # nothing a client sends turns it off
        assert http.post("/reset", json={**HOLDOUT, "evaluation": False}).status_code == 422
        assert http.post("/reset", json={"session_id": session, "hide_state": False}).status_code == 422
        assert http.get("/state", params={"session_id": session, "evaluation": "0"}).status_code == 403
        seen += [info.__repr__(), refused.text, http.get("/openapi.json").text, json.dumps(holdout)]
    with connect(eval_server.url.replace("http", "ws", 1) + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": HOLDOUT}))
        answer = json.loads(ws.recv(timeout=60))
        shown = {key: value for key, value in answer["data"]["observation"].items() if key not in ("info", "done")}
        with salted(SECRET):  # WebSocket sessions draw with it too
            assert shown == {key: value for key, value in in_process(HOLDOUT).items() if key != "done"}
        ws.send(json.dumps({"type": "state"}))
        state = json.loads(ws.recv(timeout=60))
        assert state["type"] == "error" and "hides the ground truth" in state["data"]["message"]
        seen += [json.dumps(answer), json.dumps(state)]
    seen += [record.getMessage() for record in caplog.records]
    assert not any(SECRET in text for text in seen)
    assert SECRET not in os.environ.get(HOLDOUT_SALT_ENV, "")  # held by the app, not the process's environment
    assert in_process(HOLDOUT) != in_process({**HOLDOUT, "seed": HOLDOUT_SEED_START + 1})
    with salted(SECRET):
        assert in_process(HOLDOUT) != in_process({**HOLDOUT, "seed": HOLDOUT_SEED_START + 1})


def test_each_evaluation_server_draws_its_own_salt_and_an_ordinary_one_none() -> None:
    fingerprints = []
    for _ in range(2):
        with BackgroundServer(create_app(SessionConfig(evaluation=True))) as server, \
                httpx.Client(base_url=server.url, timeout=30) as http:
            fingerprints.append(http.get("/evaluation").json()["holdout_salt"])
    assert len(set(fingerprints)) == 2 and all(fingerprints)
    with BackgroundServer(create_app(SessionConfig())) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.get("/evaluation").json() == {"evaluation": False, "state_hidden": False, "holdout_salt": None,
                                                  "holdout": "public holdout"}
        assert first_observation(http, HOLDOUT)[1] == in_process(HOLDOUT)


def test_evaluation_cannot_be_configured_without_hiding_the_state(monkeypatch: pytest.MonkeyPatch) -> None:
    assert SessionConfig(evaluation=True, hide_state=False).hide_state is True
    monkeypatch.setenv("AAOS_EVAL", "1")
    assert SessionConfig.from_env().evaluation is True and SessionConfig.from_env().hide_state is True


def test_a_salt_must_not_be_empty() -> None:
    with pytest.raises(ValueError, match="must not be empty"), salted(""):
        pass
