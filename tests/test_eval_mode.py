"""Evaluation mode (issue 34, item 6): a server started with --eval hides the ground truth on every surface and
draws a secret holdout salt at start, which re-draws every holdout variant its sessions play (train variants
ignore it). The salt is never answered, logged or put in the process's environment; GET /evaluation gives its
fingerprint. Nothing a client sends turns it off. `aaos bench --remote URL` plays its episodes there, recording the
server's salt."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

import aaos
from aaos.bench.remote import Remote, RemoteEpisode
from aaos.bench.runner import read_records
from aaos.cli import main
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


def _bench(url: str | None, out: Path, *extra: str) -> list[dict[str, Any]]:
    remote = ["--remote", url] if url else []
    assert main(["bench", *remote, "--env", "org", "--task", "org_simulation", "--scenario", "product_launch_failure",
                 "--policy", "heuristic", "--policy", "random", "--episodes", "1", "--out", str(out), *extra]) == 0
    return read_records(out / "results.jsonl")


def test_aaos_bench_against_an_evaluation_server_plays_its_salted_holdout(
        eval_server: BackgroundServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    remote = _bench(eval_server.url, tmp_path / "remote")
    fingerprint = salt_fingerprint(SECRET)
    assert {(r["split"], r["split_label"], r["holdout_salt"]) for r in remote} == {
        ("train", "train", fingerprint), ("holdout", "salted holdout", fingerprint)}
    assert f"salted holdout, the server's salt's fingerprint {fingerprint}" in capsys.readouterr().out
    with salted(SECRET):  # the same episodes in process, drawn with the server's salt
        local = _bench(None, tmp_path / "local")
    def scores(records: list[dict[str, Any]]) -> dict[tuple[str, int], tuple[float, int]]:
        return {(r["policy"], r["seed"]): (r["score"], r["invalid_actions"]) for r in records}
    assert scores(remote) == scores(local) and len(remote) == 4
    public = _bench(None, tmp_path / "public")
    assert scores(public) != scores(remote)  # the public holdout is another one


@pytest.mark.parametrize(("extra", "words"), [(("--policy", "oracle"), "policy 'oracle'"),
                                              (("--trajectories",), "--trajectories")])
def test_what_cannot_be_played_on_a_server_is_refused_before_any_episode(
        eval_server: BackgroundServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...],
        words: str) -> None:
    assert main(["bench", "--remote", eval_server.url, "--task", "org_simulation", "--episodes", "1",
                 "--out", str(tmp_path), *extra]) == 2
    assert re.search(f"--remote: cannot play .*{re.escape(words)}", capsys.readouterr().err)
    assert not (tmp_path / "results.jsonl").exists()


def test_an_action_the_server_refuses_is_a_rejected_no_op_and_the_step_is_taken(eval_server: BackgroundServer) -> None:
    async def one_step() -> Any:
        async with httpx.AsyncClient(timeout=30) as client:
            episode = RemoteEpisode(Remote(eval_server.url, None), "org", client)
            await episode.reset("org_simulation", "product_launch_failure", 3)
            result = await episode.step({"engineer": {"action_type": "resolve_incident",
                                                      "payload": {"incident_id": "inc_nope"}},
                                         "oversight": {"action_type": "approve_resource", "payload": {}}})
            await episode.close()
            return result
    result = asyncio.run(one_step())
    assert result.info["step"] == 1 and not result.done
    for role, words in (("engineer", "inc_nope"), ("oversight", "approve_resource")):
        refused = result.info["action_results"][role]
        assert refused["status"] == "rejected" and words in refused["message"], refused
