"""The toy environment (tests/toy_env.py) through every surface, registered as a third-party environment is: in
this process with aaos.register, and in subprocesses (a server, inference.py, aaos bench) with AAOS_ENVS. Nothing
of the platform names it; every surface must play it exactly as it plays in process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import REPO_ROOT, TESTS_DIR, registered, serving
from pettingzoo.test import parallel_api_test, parallel_seed_test
from pydantic import ValidationError
from toy_env import toy_spec

import aaos
from aaos.cli import main as cli
from aaos.server.client import AAOSEnv
from aaos.training import environment_class, reward_fn
from aaos.training.episodes import read_episodes
from aaos.wrappers.pettingzoo import AAOSParallelEnv

TOY = "toy"
SPEC = toy_spec()
SUBPROCESS_ENV = {**os.environ, "AAOS_ENVS": f"{TOY}=toy_env:KIT",
                  "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS_DIR)])}


@pytest.fixture(autouse=True, scope="module")
def toy_registered() -> Iterator[None]:
    """The toy registered as a third-party environment for this module (the registry is restored after)."""
    with registered(**{TOY: "toy_env:KIT"}):
        yield


def plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def in_process(seed: int, scenario: str = "standard") -> tuple[dict[str, Any], list[tuple[Any, dict[str, Any]]]]:
    """The toy champion's episode in process: the first observation and (joint action, step result) pairs."""
    env = aaos.make(scenario=scenario, seed=seed, env=TOY)
    policy = aaos.policies.make("heuristic", env=TOY)
    first = observation = env.reset()
    steps = []
    while True:
        joint = policy.act(observation)
        result = env.step(joint)
        steps.append((plain(joint), plain(result.to_dict())))
        observation = result.observation
        if result.done:
            return plain(first), steps




@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """`aaos serve` in a subprocess that finds the toy through AAOS_ENVS; its base URL."""
    with serving(SUBPROCESS_ENV) as url:
        yield url


@pytest.fixture(scope="module")
def http(served: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served, timeout=60) as client:
        yield client


def test_make_plays_the_toy_with_its_champion() -> None:
    first, steps = in_process(seed=0)
    assert first["task"] == SPEC.default_task and first["scenario_id"] == SPEC.default_scenario
    assert set(first["agent_observations"]) == set(SPEC.roles)
    assert len(steps) == SPEC.task("ship_all").max_steps
    assert steps[-1][1]["info"]["score"] == pytest.approx(sum(result["reward"] for _, result in steps))


# --- HTTP ----------------------------------------------------------------------------------------------------


def test_http_lists_the_toy_and_its_typed_schemas(http: httpx.Client) -> None:
    envs = http.get("/envs").json()
    assert {aaos.DEFAULT_ENV, TOY} <= set(envs)
    assert envs[TOY]["spec"]["version"] == SPEC.version and envs[TOY]["spec"]["reward_version"] == SPEC.reward_version
    schemas = http.get("/schema", params={"env": TOY}).json()
    assert set(schemas) == {"action", "observation", "state"}
    assert set(SPEC.roles) <= set(schemas["action"]["properties"])
    assert "dock" in schemas["observation"]["properties"]  # the kit's observation model
    assert set(aaos.spec().roles) <= set(http.get("/schema").json()["action"]["properties"])  # the default env's
    unknown = http.get("/schema", params={"env": "chess"})
    assert unknown.status_code == 422 and f"'{TOY}'" in unknown.json()["detail"][0]


def test_http_session_plays_the_toy_exactly_as_in_process(http: httpx.Client) -> None:
    first, steps = in_process(seed=3)
    opened = http.post("/reset", json={"env": TOY, "seed": 3, "episode_id": "toy-3"})
    assert opened.status_code == 200, opened.text
    session = opened.json()["session_id"]
    try:
        assert opened.json()["observation"] == first
        for joint, expected in steps:
            response = http.post("/step", json={"session_id": session, "action": joint})
            assert response.status_code == 200, response.text
            assert response.json() == expected
        state = http.get("/state", params={"session_id": session}).json()
        assert state["episode_id"] == "toy-3" and state["step_count"] == len(steps) and "parcels" in state
        again = http.post("/reset", json={"session_id": session, "seed": 4})  # the env left out: still the toy
        assert again.json()["observation"] == aaos.make(seed=4, env=TOY).reset()
    finally:
        assert http.post("/close", json={"session_id": session}).json()["closed"]


@pytest.mark.parametrize(("body", "words"), [
    ({"env": TOY, "task": "full_episode"}, "task: Input should be 'ship_all' (the tasks of 'toy')"),
    ({"env": TOY, "scenario": "product_launch_failure"}, "scenario: Input should be 'standard' or 'rush'"),
    ({"env": "chess"}, f"env: Input should be '{aaos.DEFAULT_ENV}'"),
])
def test_http_reset_names_the_valid_choices_of_the_chosen_env(http: httpx.Client, body: dict[str, Any],
                                                              words: str) -> None:
    response = http.post("/reset", json=body)
    assert response.status_code == 422
    assert any(words in message for message in response.json()["detail"]), response.json()


def test_http_steps_are_checked_against_the_sessions_env(http: httpx.Client) -> None:
    session = http.post("/reset", json={"env": TOY}).json()["session_id"]
    try:
        ship = {"action_type": "ship", "payload": {"parcel_id": "parcel_000000"}}
        wrong_role = http.post("/step", json={"session_id": session, "action": {"inspector": ship}})
        assert wrong_role.status_code == 422
        assert any(m.startswith("action.inspector: ") and "'ship'" in m for m in wrong_role.json()["detail"])
        org_role = http.post("/step", json={"session_id": session, "action": {"engineer": {"action_type": "no_op"}}})
        assert org_role.status_code == 422 and "action.engineer: Extra inputs" in org_role.json()["detail"][0]
        unknown = http.post("/step", json={"session_id": session, "action": {"packer": ship}})
        assert unknown.status_code == 422 and "parcel_000000" in unknown.json()["detail"][0]
        state = http.get("/state", params={"session_id": session}).json()
        assert state["step"] == 0  # nothing refused changed anything
    finally:
        http.post("/close", json={"session_id": session})


# --- WebSocket (OpenEnv's client) ----------------------------------------------------------------------------


def test_websocket_client_plays_the_toy_exactly_as_in_process(served: str) -> None:
    first, steps = in_process(seed=5, scenario="rush")
    with AAOSEnv(base_url=served).sync() as env:
        result = env.reset(env=TOY, scenario="rush", seed=5)
        assert result.observation.env_observation() == first
        for joint, expected in steps:
            result = env.step(joint)
            seen = {"observation": result.observation.env_observation(), "reward": result.reward,
                    "done": result.done, "info": result.observation.info}
            assert plain(seen) == expected
        with pytest.raises(ValidationError):  # checked against the toy's typed action before it is sent
            env.step({"inspector": {"action_type": "ship", "payload": {"parcel_id": "x"}}})
        with pytest.raises(RuntimeError, match="task: Input should be 'ship_all'"):
            env.reset(task="juggling")
        assert env.state().model_dump()["scenario"] == "rush"


# --- MCP -----------------------------------------------------------------------------------------------------


def rpc(http: httpx.Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    assert response.status_code == 200
    return response.json()


def test_mcp_new_episode_switches_the_session_to_the_toy_and_its_tools(http: httpx.Client) -> None:
    session_id = rpc(http, "openenv/session/create", {})["result"]["session_id"]
    try:
        def call(name: str, **arguments: Any) -> dict[str, Any]:
            return rpc(http, "tools/call", {"session_id": session_id, "name": name, "arguments": arguments})

        def tools() -> dict[str, Any]:
            listed = rpc(http, "tools/list", {"session_id": session_id})["result"]["tools"]
            return {tool["name"]: tool for tool in listed}

        assert {a.name for a in aaos.spec().actions} <= set(tools())
        first = call("new_episode", env=TOY, seed=2)["result"]
        assert first == aaos.make(seed=2, env=TOY).reset()
        found = tools()
        assert set(found) == {a.name for a in SPEC.actions} | {"joint_action", "new_episode"}
        assert found["ship"]["inputSchema"]["properties"]["role"].get("enum", ["packer"]) == ["packer"]
        parcel = first["dock"][0]["id"]
        inspected = call("inspect", role="inspector", parcel_id=parcel)["result"]
        assert inspected["action_result"]["status"] == "applied" and inspected["view"]["step"] == 1
        refused = call("joint_action", actions={"inspector": {"action_type": "ship", "payload": {"parcel_id": parcel}}})
        assert "inspector may not use ship" in refused["error"]["message"]
        assert "task: Input should be 'ship_all'" in call("new_episode", task="juggling")["error"]["message"]
        assert "env: Input should be" in call("new_episode", env="chess")["error"]["message"]
    finally:
        rpc(http, "openenv/session/close", {"session_id": session_id})


# --- PettingZoo ----------------------------------------------------------------------------------------------


def test_pettingzoo_runs_the_toy() -> None:
    env = AAOSParallelEnv(env=TOY)
    assert env.metadata["name"] == f"aaos_toy_v{SPEC.version}" and env.possible_agents == list(SPEC.roles)
    parallel_api_test(env, num_cycles=30)
    parallel_seed_test(lambda: AAOSParallelEnv(env=TOY, scenario="rush"), num_cycles=30)
    _, infos = env.reset(seed=0)
    labels = [a for a in infos["packer"]["actions"] if a["action_type"] == "label"]
    assert labels and all(a["payload"]["note"] for a in labels)  # a free-text field gets the filler text


# --- inference.py --------------------------------------------------------------------------------------------


def run_inference(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in SUBPROCESS_ENV.items() if k not in ("MODEL_NAME", "ENV_BASE_URL", "HF_TOKEN", "TASK")}
    return subprocess.run([sys.executable, "inference.py", *args], cwd=REPO_ROOT, env={**env, **variables},
                          capture_output=True, text=True, timeout=600, check=False)


def test_inference_plays_every_toy_task_in_process_and_against_the_server(served: str) -> None:
    local = run_inference("--env", TOY, "--task", "all", RUN_SEED="7")
    assert local.returncode == 0, local.stderr
    lines = local.stdout.splitlines()
    assert lines[0] == "[START] task=ship_all env=aaos model=heuristic-champion"
    assert len(lines) == 2 + SPEC.task("ship_all").max_steps
    _, steps = in_process(seed=7, scenario=SPEC.default_scenario)
    assert lines[-1].startswith("[END] success=true") and f"score={steps[-1][1]['info']['score']:.3f}" in lines[-1]
    remote = run_inference(RUN_SEED="7", ENV_NAME=TOY, ENV_BASE_URL=served)
    assert remote.stdout == local.stdout
    unknown = run_inference("--env", TOY, "--task", "full_episode")
    assert unknown.returncode == 2 and "unknown task 'full_episode'; choose one of: ship_all" in unknown.stderr


# --- aaos bench ----------------------------------------------------------------------------------------------


def test_bench_runs_the_toy_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    command = [sys.executable, "-m", "aaos.cli", "bench", "--env", TOY, "--policy", "heuristic", "--policy", "noop",
               "--episodes", "1", "--concurrency", "2", "--gate", "noop", "--trajectories", "--out", str(out)]
    done = subprocess.run(command, cwd=REPO_ROOT, env=SUBPROCESS_ENV, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 3  # standard: a train and a holdout seed; rush (holdout): a holdout seed
    assert {(r["env"], r["env_version"], r["reward_version"]) for r in records} == {(TOY, SPEC.version,
                                                                                     SPEC.reward_version)}
    assert all(r["error"] is None for r in records)
    rows = json.loads((out / "leaderboard.json").read_text())
    assert {(r["env"], r["env_version"], r["reward_version"], r["policy"], r["split"]) for r in rows} == {
        (TOY, SPEC.version, SPEC.reward_version, policy, split) for policy in ("heuristic", "noop")
        for split in ("train", "holdout")}
    assert json.loads((out / "gate.json").read_text())["verdict"] == "NO_PROMOTE"  # noop ships nothing
    assert cli(["replay", str(out / "trajectories.jsonl")]) == 0
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    refused = subprocess.run([*command[:-1], str(tmp_path / "again"), "--scenarios", str(scenarios)], cwd=REPO_ROOT,
                             env=SUBPROCESS_ENV, capture_output=True, text=True, timeout=300, check=False)
    assert refused.returncode == 2 and "environment 'toy' has no scenario files" in refused.stderr


# --- training data -------------------------------------------------------------------------------------------


def test_training_commands_collect_replay_and_build_datasets_for_the_toy(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    episodes, sft, grpo = tmp_path / "episodes.jsonl", tmp_path / "sft.jsonl", tmp_path / "grpo.jsonl"
    assert cli(["collect", "--env", TOY, "--episodes", "2", "--out", str(episodes)]) == 0
    [first, second] = read_episodes([episodes], TOY)  # the train scenario (standard), seeds 0 and 1
    assert {(e[0]["scenario"], e[0]["seed"]) for e in (first, second)} == {("standard", 0), ("standard", 1)}
    assert {(r["env_version"], r["reward_version"]) for r in first} == {(SPEC.version, SPEC.reward_version)}
    assert cli(["replay", "--env", TOY, str(episodes)]) == 0
    assert cli(["sft", "--env", TOY, str(episodes), "--out", str(sft)]) == 0
    rows = [json.loads(line) for line in sft.read_text().splitlines()]
    assert rows and {r["env"] for r in rows} == {TOY} and {r["role"] for r in rows} <= set(SPEC.roles)
    assert cli(["grpo-data", str(episodes), "--horizon", "3", "--out", str(grpo)]) == 0
    prompts = [json.loads(line) for line in grpo.read_text().splitlines()]
    assert len(prompts) == len(SPEC.roles) * (len(first) + len(second))
    assert cli(["sft", "--env", aaos.DEFAULT_ENV, str(episodes), "--out", str(tmp_path / "x.jsonl")]) == 2
    assert f"holds episodes of '{TOY}'" in capsys.readouterr().err

    row = next(r for r in prompts if r["role"] == "inspector" and r["step"] == 1)
    snapshot = json.loads(row["snapshot"])
    assert snapshot["env"] == TOY and snapshot["env_version"] == SPEC.version
    scores = reward_fn(['{"action_type": "no_op", "payload": {}}', "not json"], snapshot=[row["snapshot"]] * 2,
                       role=[row["role"]] * 2, horizon=[3, 3])
    assert 0.0 <= scores[0] <= 1.0 and scores[1] < 0
    seat = environment_class(TOY)()
    assert type(seat).__name__ == "ToyEnvironment"
    seat.reset(**row)
    assert "Invalid action" in seat.ship(parcel_id="parcel_000000")  # a packer's action, not the inspector's
    assert seat.no_op().startswith("no_op: no_effect")
