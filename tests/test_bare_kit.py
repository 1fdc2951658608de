"""The kit contract: an environment whose kit gives only `environment` and `spec` (tests/bare_env.py) plays
through every surface on the kit's generic defaults: make, `aaos check`, the server (HTTP reset/step),
PettingZoo, the benchmark (noop and random) and the Space's Play tab. What needs a champion says so."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from bare_env import KIT, bare_spec
from helpers import REPO_ROOT, TESTS_DIR, registered, serving
from pettingzoo.test import parallel_api_test

import aaos
from aaos.agents.prompts import role_system_prompt, role_user_prompt
from aaos.cli import main as cli
from aaos.core.kit import PLAIN_RENDERING, Prompting
from aaos.wrappers.pettingzoo import AAOSParallelEnv

BARE = "bare"
SPEC = bare_spec()


@pytest.fixture(autouse=True, scope="module")
def bare_registered() -> Iterator[None]:
    with registered(**{BARE: "bare_env:KIT"}):
        yield


def random_episode(seed: int) -> list[tuple[Any, dict[str, Any]]]:
    """The random policy's episode in process: (joint action, step result as JSON) pairs."""
    env = aaos.make(seed=seed, env=BARE)
    policy = aaos.policies.make("random", seed=seed, env=BARE)
    observation = env.reset()
    policy.reset(seed)
    steps = []
    while True:
        joint = policy.act(observation)
        result = env.step(joint)
        steps.append((json.loads(json.dumps(joint)), json.loads(json.dumps(result.to_dict()))))
        if result.done:
            return steps
        observation = result.observation


def test_the_kit_needs_only_environment_and_spec() -> None:
    assert (KIT.champion, KIT.prompting, KIT.oracle, KIT.observation_model) == (None, None, None, None)
    assert KIT.rendering is PLAIN_RENDERING and list(KIT.hidden_ids(aaos.make(env=BARE))) == []
    steps = random_episode(seed=1)
    assert len(steps) == SPEC.task("ship_all").max_steps
    assert steps[-1][1]["info"]["score"] == pytest.approx(sum(result["reward"] for _, result in steps))


def test_only_the_policies_it_can_play_are_offered_and_the_champion_is_refused_clearly() -> None:
    assert aaos.policies.available(BARE) == ["noop", "random"]
    assert aaos.policies.available("org") == ["noop", "random", "heuristic", "oracle"]
    with pytest.raises(ValueError, match=r"environment 'bare' has no champion .* use 'noop' or 'random'"):
        aaos.policies.make("heuristic", env=BARE)


def test_a_model_is_prompted_from_the_spec() -> None:
    told = Prompting.from_spec(SPEC)
    system = role_system_prompt("packer", SPEC)
    assert system.startswith(f"{SPEC.title}: {SPEC.description} The roles are: inspector, packer.")
    assert "delivery (weight 0.7)" in told.rules and told.rules in system
    assert "ship (Ship an arrived parcel" in system and "inspect (" not in system  # the packer's actions only
    view = aaos.make(env=BARE).reset()["agent_observations"]["packer"]
    assert "dock" in role_user_prompt(view, SPEC)


def test_aaos_check_passes_with_a_ladder_of_noop_and_random() -> None:
    report = aaos.check_env(BARE, episodes=4, fuzz=200)
    assert {r.status for r in report.results} == {"passed"}, str(report)
    assert report.result("ladder").message.startswith("noop < random with 95% intervals apart")
    assert "(the kit gives no champion)" in report.result("ladder").message


def test_the_server_resets_and_steps_it_over_http() -> None:
    environ = {**os.environ, "AAOS_ENVS": f"{BARE}=bare_env:KIT",
               "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS_DIR)])}
    steps = random_episode(seed=2)
    with serving(environ) as url, httpx.Client(base_url=url, timeout=60) as http:
        opened = http.post("/reset", json={"env": BARE, "seed": 2})
        assert opened.status_code == 200, opened.text
        session = opened.json()["session_id"]
        assert opened.json()["observation"] == aaos.make(seed=2, env=BARE).reset()
        for joint, expected in steps:
            response = http.post("/step", json={"session_id": session, "action": joint})
            assert response.status_code == 200, response.text
            assert response.json() == expected
        schema = http.get("/schema", params={"env": BARE}).json()
        assert set(SPEC.roles) <= set(schema["action"]["properties"])


def test_pettingzoo_runs_it() -> None:
    parallel_api_test(AAOSParallelEnv(env=BARE), num_cycles=30)


def test_the_benchmark_plays_noop_and_random_by_default(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    assert cli(["bench", "--env", BARE, "--episodes", "1", "--concurrency", "1", "--out", str(out)]) == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["policy"] for r in records} == {"noop", "random"} and all(r["error"] is None for r in records)
    means = {(row["policy"], row["split"]): row["mean_score"] for row in json.loads((out / "leaderboard.json")
                                                                                       .read_text())}
    assert means[("random", "train")] > means[("noop", "train")]


def test_the_spaces_play_tab_builds_and_steps_it() -> None:
    from ui_fixtures import assert_no_reprs, reset

    from aaos.ui import play_tab

    session = reset()["session"]
    out = play_tab.choose_env(None, session, BARE, False)
    assert session.meta.env == BARE and out["cards"].count('class="aaos-card"') == 2
    assert "Dock" in out["cards"] and "Scores" in out["world"]  # the plain renderer: view fields, public scores
    assert_no_reprs(out)
    parcel = session.env.legal_actions("inspector")["inspect"]["parcel_id"][0]
    queued = play_tab.queue_action(None, session, "inspector", "inspect", False, "", parcel, None, "", "")
    assert "Queued for Inspector: inspect" in queued["message"]
    out = list(play_tab.step(None, session, "noop", "inspector", None, False))[-1]
    assert "1 / 12" in out["status"] and session.env.state()["parcels"][0]["inspected"]
    refused = list(play_tab.step(None, session, "agent", "inspector", None, False, "heuristic"))[-1]
    assert "has no champion" in refused["message"] and session.step_count == 1  # nothing changed
    for _ in range(SPEC.task("ship_all").max_steps):  # a run stops at a rejected action (two roles, one parcel)
        for out in play_tab.run_agent(None, session, "random", 0):
            assert_no_reprs(out)
        if session.done:
            break
    report = out["report"]["value"]
    assert session.done and "How the score adds up" in report and 'id="aaos-verdict"' not in report
