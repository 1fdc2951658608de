"""The Support Inbox through every surface (issue 12, item 6): a real `aaos serve` subprocess over HTTP, the
WebSocket client and MCP, PettingZoo, inference.py (strict lines, --task all, --output), `aaos bench` and the
training data commands. Each surface must play the inbox exactly as it plays in process; the easy task and a few
seeds keep it short."""

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
from helpers import REPO_ROOT, serving
from pettingzoo.test import parallel_api_test, parallel_seed_test
from pydantic import ValidationError
from test_inference import episodes

import aaos
from aaos.cli import main as cli
from aaos.server.client import AAOSEnv
from aaos.training import environment_class, reward_fn
from aaos.training.episodes import read_episodes
from aaos.wrappers.pettingzoo import AAOSParallelEnv, catalogue

INBOX = "inbox"
SPEC = aaos.spec(INBOX)
ROLE = "triage_agent"
TASK = "easy"
TASKS = ["easy", "medium", "hard"]
CLEAN = {k: v for k, v in os.environ.items()
         if k not in ("MODEL_NAME", "ENV_BASE_URL", "HF_TOKEN", "TASK", "ENV_NAME", "OUTPUT")}


def plain(value: Any) -> Any:
    return json.loads(json.dumps(value))




def in_process(seed: int, task: str = TASK, scenario: str | None = None
               ) -> tuple[dict[str, Any], list[tuple[Any, dict[str, Any]]]]:
    """The champion's inbox episode in process: the first observation and (joint action, step result) pairs."""
    env = aaos.make(task, scenario=scenario, seed=seed, env=INBOX)
    policy = aaos.policies.make("heuristic", env=INBOX)
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
    """`aaos serve` in a subprocess (the inbox is a built-in environment: nothing to register); its base URL."""
    with serving(CLEAN) as url:
        yield url


@pytest.fixture(scope="module")
def http(served: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served, timeout=60) as client:
        yield client


def test_make_plays_the_inbox_and_its_return_is_the_score() -> None:
    first, steps = in_process(seed=0)
    assert first["task"] == TASK and first["scenario_id"] == SPEC.default_scenario
    assert list(first["agent_observations"]) == [ROLE] and len(first["inbox"]) == 8
    assert steps[-1][1]["done"] and len(steps) <= SPEC.task(TASK).max_steps
    assert steps[-1][1]["info"]["score"] == pytest.approx(sum(result["reward"] for _, result in steps))


# --- HTTP ----------------------------------------------------------------------------------------------------


def test_http_lists_the_inbox_with_its_typed_schemas(http: httpx.Client) -> None:
    envs = http.get("/envs").json()
    assert envs[INBOX]["spec"]["version"] == SPEC.version
    assert [t["id"] for t in envs[INBOX]["spec"]["tasks"]] == TASKS
    schemas = http.get("/schema", params={"env": INBOX}).json()
    assert set(schemas["action"]["properties"]) - {"metadata"} == {ROLE}  # OpenEnv's Action adds metadata
    assert {"inbox", "pending_count", "resolved_count", "elapsed_ratio"} <= set(schemas["observation"]["properties"])
    assert "emails" in schemas["state"]["properties"]


def test_http_session_plays_the_inbox_exactly_as_in_process(http: httpx.Client) -> None:
    first, steps = in_process(seed=3)
    opened = http.post("/reset", json={"env": INBOX, "task": TASK, "seed": 3, "episode_id": "inbox-3"})
    assert opened.status_code == 200, opened.text
    session = opened.json()["session_id"]
    try:
        assert opened.json()["observation"] == first
        for joint, expected in steps:
            response = http.post("/step", json={"session_id": session, "action": joint})
            assert response.status_code == 200, response.text
            assert response.json() == expected
        state = http.get("/state", params={"session_id": session}).json()
        assert state["episode_id"] == "inbox-3" and state["step_count"] == len(steps)
        assert all(email["status"] != "open" for email in state["emails"])  # the champion closed every email
        late = http.post("/step", json={"session_id": session, "action": {ROLE: {"action_type": "no_op"}}})
        assert late.status_code == 409 and "episode is over" in late.json()["detail"]
    finally:
        assert http.post("/close", json={"session_id": session}).json()["closed"]


def test_http_refuses_what_the_inbox_does_not_have(http: httpx.Client) -> None:
    wrong_task = http.post("/reset", json={"env": INBOX, "task": "full_episode"})
    assert wrong_task.status_code == 422
    assert any("'easy', 'medium' or 'hard'" in m for m in wrong_task.json()["detail"]), wrong_task.json()
    session = http.post("/reset", json={"env": INBOX, "task": "medium", "seed": 1}).json()["session_id"]
    try:
        later = {e["id"] for e in aaos.make("medium", seed=1, env=INBOX).state()["emails"] if e["arrives"] > 0}
        assert later  # medium's later waves
        bad_label = {ROLE: {"action_type": "classify_email", "payload": {"email_id": "em_x", "category": "urgent"}}}
        refused = http.post("/step", json={"session_id": session, "action": bad_label})
        assert refused.status_code == 422 and any("category" in m for m in refused.json()["detail"])
        not_arrived = {ROLE: {"action_type": "open_email", "payload": {"email_id": sorted(later)[0]}}}
        rejected = http.post("/step", json={"session_id": session, "action": not_arrived})
        assert rejected.status_code == 422, rejected.text  # not among the legal choices: nothing changes
        assert not any(email_id in json.dumps(rejected.json()) for email_id in later - {sorted(later)[0]})
        state = http.get("/state", params={"session_id": session}).json()
        assert state["step"] == 0
    finally:
        http.post("/close", json={"session_id": session})


# --- WebSocket (OpenEnv's client) ----------------------------------------------------------------------------


def test_websocket_client_plays_the_inbox_exactly_as_in_process(served: str) -> None:
    first, steps = in_process(seed=5, scenario="retail_helpdesk")
    with AAOSEnv(base_url=served).sync() as env:
        result = env.reset(env=INBOX, task=TASK, scenario="retail_helpdesk", seed=5)
        assert result.observation.env_observation() == first
        for joint, expected in steps:
            result = env.step(joint)
            seen = {"observation": result.observation.env_observation(), "reward": result.reward,
                    "done": result.done, "info": result.observation.info}
            assert plain(seen) == expected
        with pytest.raises(ValidationError):  # checked against the inbox's typed action before it is sent
            env.step({ROLE: {"action_type": "set_priority", "payload": {"email_id": "em_x", "level": "urgent"}}})
        assert env.state().model_dump()["scenario"] == "retail_helpdesk"


# --- MCP -----------------------------------------------------------------------------------------------------


def rpc(http: httpx.Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    assert response.status_code == 200
    return response.json()


def test_mcp_tools_triage_an_inbox_email(http: httpx.Client) -> None:
    session_id = rpc(http, "openenv/session/create", {})["result"]["session_id"]
    try:
        def call(name: str, **arguments: Any) -> dict[str, Any]:
            return rpc(http, "tools/call", {"session_id": session_id, "name": name, "arguments": arguments})

        first = call("new_episode", env=INBOX, task=TASK, seed=2)["result"]
        assert first == aaos.make(TASK, seed=2, env=INBOX).reset()
        listed = rpc(http, "tools/list", {"session_id": session_id})["result"]["tools"]
        tools = {tool["name"]: tool for tool in listed}
        assert set(tools) == {a.name for a in SPEC.actions} | {"joint_action", "new_episode"}
        assert tools["classify_email"]["inputSchema"]["properties"]["category"]["enum"][:2] == ["billing",
                                                                                               "technical"]
        email = first["inbox"][0]["id"]
        opened = call("open_email", role=ROLE, email_id=email)["result"]
        assert opened["action_result"]["status"] == "applied" and opened["view"]["opened_email"]["id"] == email
        labelled = call("classify_email", role=ROLE, email_id=email, category="billing")["result"]
        assert labelled["action_result"]["status"] == "applied" and labelled["view"]["step"] == 2
        closed = call("ignore_email", role=ROLE, email_id=email)["result"]
        assert closed["action_result"]["status"] == "applied"
        again = call("classify_email", role=ROLE, email_id=email, category="sales")["error"]["message"]
        assert f"{email} is closed (ignored); a closed email is final" in again
        assert "task: Input should be 'easy'" in call("new_episode", task="juggling")["error"]["message"]
    finally:
        rpc(http, "openenv/session/close", {"session_id": session_id})


# --- PettingZoo ----------------------------------------------------------------------------------------------


def test_pettingzoo_runs_the_inbox_and_reaches_every_legal_action() -> None:
    env = AAOSParallelEnv(task=TASK, env=INBOX)
    assert env.metadata["name"] == f"aaos_inbox_v{SPEC.version}" and env.possible_agents == [ROLE]
    parallel_api_test(env, num_cycles=40)
    parallel_seed_test(lambda: AAOSParallelEnv(task=TASK, scenario="retail_helpdesk", env=INBOX), num_cycles=40)
    busy = AAOSParallelEnv(task="hard", env=INBOX)
    _, infos = busy.reset(seed=0)
    legal = aaos.make("hard", seed=0, env=INBOX).reset()["agent_observations"][ROLE]["legal_actions"]
    actions = infos[ROLE]["actions"]
    assert actions == catalogue(legal) and int(infos[ROLE]["action_mask"].sum()) == len(actions)
    closing = {(a["action_type"], a["payload"]["email_id"]) for a in actions if a["action_type"] == "ignore_email"}
    assert closing == {("ignore_email", email_id) for email_id in legal["ignore_email"]["email_id"]}


# --- inference.py --------------------------------------------------------------------------------------------


def run_inference(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "inference.py", *args], cwd=REPO_ROOT,
                          env={**CLEAN, "PYTHONPATH": str(REPO_ROOT), **variables}, capture_output=True, text=True,
                          timeout=300, check=False)


def test_inference_plays_every_inbox_task_with_strict_lines_and_writes_the_results(served: str,
                                                                                  tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    local = run_inference("--env", INBOX, "--task", "all", "--output", str(results), RUN_SEED="7")
    assert local.returncode == 0, local.stderr
    played = list(episodes(local.stdout))  # every line matches the strict grammar
    assert [start["task"] for start, _, _ in played] == TASKS
    written = json.loads(results.read_text())
    assert (written["env"], written["seed"], written["scenario"]) == (INBOX, 7, SPEC.default_scenario)
    for (start, steps, end), entry in zip(played, written["tasks"], strict=True):
        assert start["model"] == entry["model"] == "heuristic-champion"
        assert [int(s["step"]) for s in steps] == list(range(1, len(steps) + 1)) == list(range(1, entry["steps"] + 1))
        assert [s["done"] for s in steps] == ["false"] * (len(steps) - 1) + ["true"]
        assert all(set(json.loads(s["action"])) == {ROLE} and s["error"] == "null" for s in steps)
        assert end["score"] == f"{entry['score']:.3f}" and end["success"] == str(entry["success"]).lower()
        assert end["rewards"] == ",".join(f"{r:.2f}" for r in entry["rewards"])
        assert entry["score"] == pytest.approx(sum(entry["rewards"])) and entry["error"] is None
        assert set(entry["components"]) == {"classification", "priority", "resolution", "urgent_handling"}
    _, steps = in_process(seed=7)
    assert written["tasks"][0]["score"] == pytest.approx(steps[-1][1]["info"]["score"])
    assert written["mean_score"] == pytest.approx(sum(t["score"] for t in written["tasks"]) / 3, abs=1e-6)

    remote = run_inference("--task", TASK, "--verbose", RUN_SEED="7", ENV_NAME=INBOX, ENV_BASE_URL=served)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout.splitlines() == local.stdout.splitlines()[:len(remote.stdout.splitlines())]
    assert "urgent_handling=" in remote.stderr  # --verbose says the components on stderr, never on stdout
    unknown = run_inference("--env", INBOX, "--task", "full_episode")
    assert unknown.returncode == 2 and "choose one of: easy, medium, hard" in unknown.stderr


# --- aaos bench ----------------------------------------------------------------------------------------------


def test_bench_ranks_the_inbox_champion_above_noop(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    command = [sys.executable, "-m", "aaos.cli", "bench", "--env", INBOX, "--task", TASK, "--policy", "heuristic",
               "--policy", "noop", "--episodes", "1", "--concurrency", "2", "--gate", "noop", "--trajectories",
               "--out", str(out)]
    done = subprocess.run(command, cwd=REPO_ROOT, env=CLEAN, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 3  # saas_helpdesk: a train and a holdout seed; retail_helpdesk: a holdout seed
    assert {(r["env"], r["env_version"], r["reward_version"], r["task"]) for r in records} == {
        (INBOX, SPEC.version, SPEC.reward_version, TASK)}
    assert all(r["error"] is None for r in records)
    by_policy = {p: [r["score"] for r in records if r["policy"] == p] for p in ("heuristic", "noop")}
    assert min(by_policy["heuristic"]) >= 0.7 and max(by_policy["noop"]) <= 0.25
    assert json.loads((out / "gate.json").read_text())["verdict"] == "NO_PROMOTE"
    assert cli(["replay", str(out / "trajectories.jsonl")]) == 0


# --- training data -------------------------------------------------------------------------------------------


def test_training_commands_collect_replay_and_build_inbox_datasets(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    episodes_file, sft, grpo = tmp_path / "episodes.jsonl", tmp_path / "sft.jsonl", tmp_path / "grpo.jsonl"
    assert cli(["collect", "--env", INBOX, "--task", TASK, "--episodes", "2", "--out", str(episodes_file)]) == 0
    [first, second] = read_episodes([episodes_file], INBOX)  # the train scenario, seeds 0 and 1
    assert {(e[0]["scenario"], e[0]["seed"]) for e in (first, second)} == {("saas_helpdesk", 0), ("saas_helpdesk", 1)}
    assert first[-1]["done"] and first[-1]["score"] >= 0.7
    assert cli(["replay", "--env", INBOX, str(episodes_file)]) == 0
    assert cli(["sft", "--env", INBOX, str(episodes_file), "--out", str(sft)]) == 0
    rows = [json.loads(line) for line in sft.read_text().splitlines()]
    assert rows and {(r["env"], r["role"]) for r in rows} == {(INBOX, ROLE)}
    assert cli(["grpo-data", str(episodes_file), "--horizon", "3", "--out", str(grpo)]) == 0
    prompts = [json.loads(line) for line in grpo.read_text().splitlines()]
    assert len(prompts) == len(first) + len(second)
    assert cli(["sft", "--env", aaos.DEFAULT_ENV, str(episodes_file), "--out", str(tmp_path / "x.jsonl")]) == 2
    assert f"holds episodes of '{INBOX}'" in capsys.readouterr().err

    row = next(r for r in prompts if r["step"] == 1)
    snapshot = json.loads(row["snapshot"])
    assert snapshot["env"] == INBOX and snapshot["env_version"] == SPEC.version
    email = snapshot_email(row)
    scores = reward_fn([json.dumps({"action_type": "open_email", "payload": {"email_id": email}}), "not json"],
                       snapshot=[row["snapshot"]] * 2, role=[ROLE] * 2, horizon=[3, 3])
    assert 0.0 <= scores[0] <= 1.0 and scores[1] < 0
    seat = environment_class(INBOX)()
    assert type(seat).__name__ == "InboxEnvironment"
    seat.reset(**row)
    assert "Invalid action" in seat.open_email(email_id="em_nope")
    assert seat.open_email(email_id=email).startswith("open_email: applied")


def snapshot_email(row: dict[str, Any]) -> str:
    """An email the row's prompt shows in the inbox that is not opened yet."""
    view, _ = json.JSONDecoder().raw_decode(row["prompt"][-1]["content"].split("\n", 1)[1])
    return next(email["id"] for email in view["inbox"] if not email["opened"])
