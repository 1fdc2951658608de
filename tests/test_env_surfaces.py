"""Every environment through every surface (issue 12, item 6; issue 35, item 6): a real `aaos serve` subprocess
over HTTP, the WebSocket client and MCP, PettingZoo, inference.py (strict lines, --task all, --output), `aaos bench`
and the training data commands, for each registered environment (aaos.env_ids()) and the toy (tests/toy_env.py,
registered as a third-party environment is). Each surface must play an environment exactly as it plays in process;
each environment's easy task and a few seeds keep it short. What only the inbox has closes the file; what only the
toy has is in tests/test_toy_surfaces.py."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import REPO_ROOT, registered, serving
from pettingzoo.test import parallel_api_test, parallel_seed_test
from pydantic import ValidationError
from surfaces import SUBPROCESS_ENV, TOY, TOY_KIT, in_process, mcp_session, plain, run_inference, short_task
from test_inference import episodes

import aaos
from aaos.cli import main as cli
from aaos.envs import kit_of
from aaos.server.client import AAOSEnv
from aaos.training import environment_class, reward_fn
from aaos.training.episodes import read_episodes
from aaos.wrappers.pettingzoo import AAOSParallelEnv, catalogue

ENVS = list(dict.fromkeys([*aaos.env_ids(), TOY]))
INBOX = "inbox"
INBOX_ROLE = "triage_agent"

INVALID_ACTIONS: dict[str, dict[str, Any]] = {
    INBOX: {INBOX_ROLE: {"action_type": "set_priority", "payload": {"email_id": "em_x", "level": "urgent"}}},
    TOY: {"inspector": {"action_type": "ship", "payload": {"parcel_id": "x"}}},
}
"""A joint action the environment's typed action refuses before it is sent (an action type that does not exist
where none is named)."""
FINISHED: dict[str, Callable[[dict[str, Any]], bool]] = {
    INBOX: lambda state: all(email["status"] != "open" for email in state["emails"]),  # the champion closed all
}
"""What the state shows once the champion's episode has ended, where an environment says more than its step."""
BENCH_BOUNDS: dict[str, tuple[float, float]] = {INBOX: (0.7, 0.25)}
"""(the champion's lowest score, noop's highest) in the short benchmark, where an environment promises them."""


@pytest.fixture(autouse=True, scope="module")
def toy_registered() -> Iterator[None]:
    """The toy registered as a third-party environment for this module (the registry is restored after)."""
    with registered(**{TOY: TOY_KIT}):
        yield


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """`aaos serve` in a subprocess that finds the toy through AAOS_ENVS (the others are built in); its base URL."""
    with serving(SUBPROCESS_ENV) as url:
        yield url


@pytest.fixture(scope="module")
def http(served: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served, timeout=60) as client:
        yield client


def first_train_scenario(env_id: str) -> str:
    return next(s.id for s in aaos.spec(env_id).scenarios if s.split == "train")


@pytest.mark.parametrize("env_id", ENVS)
def test_make_plays_it_and_its_return_is_the_score(env_id: str) -> None:
    spec, task = aaos.spec(env_id), short_task(env_id)
    first, steps = in_process(env_id, seed=0)
    assert first["task"] == task and first["scenario_id"] == spec.default_scenario
    assert list(first["agent_observations"]) == list(spec.roles)
    assert steps[-1][1]["done"] and len(steps) <= spec.task(task).max_steps
    assert steps[-1][1]["info"]["score"] == pytest.approx(sum(result["reward"] for _, result in steps))


# --- HTTP ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ENVS)
def test_http_lists_it_with_its_typed_schemas(http: httpx.Client, env_id: str) -> None:
    spec, kit = aaos.spec(env_id), kit_of(env_id)
    envs = http.get("/envs").json()
    assert set(ENVS) <= set(envs)
    listed = envs[env_id]["spec"]
    assert listed["version"] == spec.version and listed["reward_version"] == spec.reward_version
    assert [t["id"] for t in listed["tasks"]] == [t.id for t in spec.tasks]
    schemas = http.get("/schema", params={"env": env_id}).json()
    assert set(schemas) == {"action", "observation", "state"}
    assert set(schemas["action"]["properties"]) - {"metadata"} == set(spec.roles)  # OpenEnv's Action adds metadata
    assert set(schemas["observation"]["properties"]) == set(kit.observation_model.model_fields)  # the kit's model
    if kit.state_model is not None:
        assert set(schemas["state"]["properties"]) == set(kit.state_model.model_fields)


@pytest.mark.parametrize("env_id", ENVS)
def test_http_session_plays_it_exactly_as_in_process(http: httpx.Client, env_id: str) -> None:
    task = short_task(env_id)
    first, steps = in_process(env_id, seed=3)
    opened = http.post("/reset", json={"env": env_id, "task": task, "seed": 3, "episode_id": f"{env_id}-3"})
    assert opened.status_code == 200, opened.text
    session = opened.json()["session_id"]
    try:
        assert opened.json()["observation"] == first
        for joint, expected in steps:
            response = http.post("/step", json={"session_id": session, "action": joint})
            assert response.status_code == 200, response.text
            assert response.json() == expected
        state = http.get("/state", params={"session_id": session}).json()
        assert state["episode_id"] == f"{env_id}-3" and state["step_count"] == len(steps)
        assert FINISHED.get(env_id, bool)(state)
        late = http.post("/step", json={"session_id": session, "action": {}})
        assert late.status_code == 409 and "episode is over" in late.json()["detail"]
        again = http.post("/reset", json={"session_id": session, "seed": 4})  # the env and task left out: the same
        assert again.json()["observation"] == aaos.make(task, seed=4, env=env_id).reset()
    finally:
        assert http.post("/close", json={"session_id": session}).json()["closed"]


# --- WebSocket (OpenEnv's client) ----------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ENVS)
def test_websocket_client_plays_it_exactly_as_in_process(served: str, env_id: str) -> None:
    spec, task = aaos.spec(env_id), short_task(env_id)
    scenario = spec.scenarios[-1].id
    first, steps = in_process(env_id, seed=5, scenario=scenario)
    with AAOSEnv(base_url=served).sync() as env:
        result = env.reset(env=env_id, task=task, scenario=scenario, seed=5)
        assert result.observation.env_observation() == first
        for joint, expected in steps:
            result = env.step(joint)
            seen = {"observation": result.observation.env_observation(), "reward": result.reward,
                    "done": result.done, "info": result.observation.info}
            assert plain(seen) == expected
        with pytest.raises(ValidationError):  # checked against the environment's typed action before it is sent
            env.step(INVALID_ACTIONS.get(env_id, {spec.roles[0]: {"action_type": "juggle"}}))
        with pytest.raises(RuntimeError, match=f"task: Input should be '{spec.tasks[0].id}'"):
            env.reset(task="juggling")
        state = env.state().model_dump()
    played = aaos.make(task, scenario=scenario, seed=5, env=env_id)
    played.reset()
    for joint, _ in steps:
        played.step(joint)
    assert state == {"episode_id": state["episode_id"], "step_count": len(steps), **plain(played.state())}


# --- MCP -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ENVS)
def test_mcp_new_episode_switches_the_session_to_it_and_its_tools(http: httpx.Client, env_id: str) -> None:
    spec, task = aaos.spec(env_id), short_task(env_id)
    with mcp_session(http) as mcp:
        assert {a.name for a in aaos.spec().actions} <= set(mcp.tools())  # a new session plays the default env
        first = mcp.call("new_episode", env=env_id, task=task, seed=2)["result"]
        assert first == aaos.make(task, seed=2, env=env_id).reset()
        assert set(mcp.tools()) == {a.name for a in spec.actions} | {"joint_action", "new_episode"}
        refused = mcp.call("new_episode", task="juggling")["error"]["message"]
        assert f"task: Input should be '{spec.tasks[0].id}'" in refused


# --- PettingZoo ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ENVS)
def test_pettingzoo_runs_it(env_id: str) -> None:
    spec, task = aaos.spec(env_id), short_task(env_id)
    env = AAOSParallelEnv(task=task, env=env_id)
    assert env.metadata["name"] == f"aaos_{env_id}_v{spec.version}" and env.possible_agents == list(spec.roles)
    parallel_api_test(env, num_cycles=40)
    parallel_seed_test(lambda: AAOSParallelEnv(task=task, scenario=spec.scenarios[-1].id, env=env_id), num_cycles=40)


# --- inference.py --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ENVS)
def test_inference_plays_every_task_with_strict_lines_and_writes_the_results(served: str, env_id: str,
                                                                            tmp_path: Path) -> None:
    spec, task = aaos.spec(env_id), short_task(env_id)
    tasks = [t.id for t in spec.tasks]
    results = tmp_path / "results.json"
    local = run_inference("--env", env_id, "--task", "all", "--output", str(results), RUN_SEED="7")
    assert local.returncode == 0, local.stderr
    assert local.stdout.splitlines()[0] == f"[START] task={tasks[0]} env=aaos model=heuristic-champion"
    played = list(episodes(local.stdout))  # every line matches the strict grammar
    assert [start["task"] for start, _, _ in played] == tasks
    written = json.loads(results.read_text())
    assert (written["env"], written["seed"], written["scenario"]) == (env_id, 7, spec.default_scenario)
    for (start, steps, end), entry in zip(played, written["tasks"], strict=True):
        assert start["model"] == entry["model"] == "heuristic-champion"
        assert [int(s["step"]) for s in steps] == list(range(1, len(steps) + 1)) == list(range(1, entry["steps"] + 1))
        assert [s["done"] for s in steps] == ["false"] * (len(steps) - 1) + ["true"]
        assert all(set(json.loads(s["action"])) == set(spec.roles) and s["error"] == "null" for s in steps)
        assert end["score"] == f"{entry['score']:.3f}" and end["success"] == str(entry["success"]).lower()
        assert end["rewards"] == ",".join(f"{r:.2f}" for r in entry["rewards"])
        assert entry["score"] == pytest.approx(sum(entry["rewards"])) and entry["error"] is None
        assert set(entry["components"]) == {c.name for c in spec.reward_components}
    _, steps = in_process(env_id, seed=7, task=tasks[0])
    assert written["tasks"][0]["score"] == pytest.approx(steps[-1][1]["info"]["score"])
    assert written["mean_score"] == pytest.approx(sum(t["score"] for t in written["tasks"]) / len(tasks), abs=1e-6)

    remote = run_inference("--task", task, "--verbose", RUN_SEED="7", ENV_NAME=env_id, ENV_BASE_URL=served)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout.splitlines() == task_lines(local.stdout, task)
    assert f"{spec.reward_components[-1].name}=" in remote.stderr  # --verbose: components on stderr, not stdout
    unknown = run_inference("--env", env_id, "--task", "juggling")
    assert unknown.returncode == 2 and f"unknown task 'juggling'; choose one of: {', '.join(tasks)}" in unknown.stderr


def task_lines(stdout: str, task: str) -> list[str]:
    """The lines of one task's episode in inference.py's output: its [START] line to its [END] line."""
    lines = stdout.splitlines()
    begin = lines.index(next(line for line in lines if line.startswith(f"[START] task={task} ")))
    end = next(i for i in range(begin, len(lines)) if lines[i].startswith("[END] "))
    return lines[begin:end + 1]


# --- aaos bench ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ENVS)
def test_bench_runs_it_end_to_end_and_ranks_the_champion_above_noop(tmp_path: Path, env_id: str) -> None:
    spec, task = aaos.spec(env_id), short_task(env_id)
    out = tmp_path / "bench"
    command = [sys.executable, "-m", "aaos.cli", "bench", "--env", env_id, "--task", task, "--policy", "heuristic",
               "--policy", "noop", "--episodes", "1", "--concurrency", "2", "--gate", "noop", "--trajectories",
               "--out", str(out)]
    done = subprocess.run(command, cwd=REPO_ROOT, env=SUBPROCESS_ENV, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    cells = sum(2 if s.split == "train" else 1 for s in spec.scenarios)  # a train scenario: a train and a holdout
    assert len(records) == 2 * cells  # seed; a holdout scenario: a holdout seed
    assert {(r["env"], r["env_version"], r["reward_version"], r["task"]) for r in records} == {
        (env_id, spec.version, spec.reward_version, task)}
    assert all(r["error"] is None for r in records)
    by_policy = {p: [r["score"] for r in records if r["policy"] == p] for p in ("heuristic", "noop")}
    champion_min, noop_max = BENCH_BOUNDS.get(env_id, (max(by_policy["noop"]), 1.0))
    assert min(by_policy["heuristic"]) >= champion_min and max(by_policy["noop"]) <= noop_max
    rows = json.loads((out / "leaderboard.json").read_text())
    assert {(r["env"], r["env_version"], r["reward_version"], r["policy"], r["split"]) for r in rows} == {
        (env_id, spec.version, spec.reward_version, policy, split) for policy in ("heuristic", "noop")
        for split in ("train", "holdout")}
    assert json.loads((out / "gate.json").read_text())["verdict"] == "NO_PROMOTE"  # noop is no champion
    assert cli(["replay", str(out / "trajectories.jsonl")]) == 0


# --- training data -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ENVS)
def test_training_commands_collect_replay_and_build_datasets(env_id: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    spec, task = aaos.spec(env_id), short_task(env_id)
    episodes_file, sft, grpo = tmp_path / "episodes.jsonl", tmp_path / "sft.jsonl", tmp_path / "grpo.jsonl"
    train = first_train_scenario(env_id)
    assert cli(["collect", "--env", env_id, "--task", task, "--scenario", train, "--episodes", "2",
                "--out", str(episodes_file)]) == 0
    [first, second] = read_episodes([episodes_file], env_id)  # seeds 0 and 1
    assert {(e[0]["scenario"], e[0]["seed"]) for e in (first, second)} == {(train, 0), (train, 1)}
    assert {(r["env_version"], r["reward_version"]) for r in first} == {(spec.version, spec.reward_version)}
    assert first[-1]["done"]
    assert cli(["replay", "--env", env_id, str(episodes_file)]) == 0
    assert cli(["sft", "--env", env_id, str(episodes_file), "--out", str(sft)]) == 0
    rows = [json.loads(line) for line in sft.read_text().splitlines()]
    assert rows and {r["env"] for r in rows} == {env_id} and {r["role"] for r in rows} <= set(spec.roles)
    assert cli(["grpo-data", str(episodes_file), "--horizon", "3", "--out", str(grpo)]) == 0
    prompts = [json.loads(line) for line in grpo.read_text().splitlines()]
    assert len(prompts) == len(spec.roles) * (len(first) + len(second))
    other = next(e for e in ENVS if e != env_id)
    assert cli(["sft", "--env", other, str(episodes_file), "--out", str(tmp_path / "x.jsonl")]) == 2
    assert f"holds episodes of '{env_id}'" in capsys.readouterr().err

    row = next(r for r in prompts if r["role"] == spec.roles[0] and r["step"] == 1)
    snapshot = json.loads(row["snapshot"])
    assert snapshot["env"] == env_id and snapshot["env_version"] == spec.version
    scores = reward_fn(['{"action_type": "no_op", "payload": {}}', "not json"], snapshot=[row["snapshot"]] * 2,
                       role=[row["role"]] * 2, horizon=[3, 3])
    assert 0.0 <= scores[0] <= 1.0 and scores[1] < 0
    seat = environment_class(env_id)()
    assert type(seat).__name__ == f"{env_id.capitalize()}Environment"
    seat.reset(**row)
    assert seat.no_op().startswith(("no_op: applied", "no_op: no_effect"))  # never refused


# --- what only the inbox has ---------------------------------------------------------------------------------


def test_the_inbox_lists_its_own_fields_and_starts_easy_with_eight_emails(http: httpx.Client) -> None:
    schemas = http.get("/schema", params={"env": INBOX}).json()
    assert {"inbox", "pending_count", "resolved_count", "elapsed_ratio"} <= set(schemas["observation"]["properties"])
    assert "emails" in schemas["state"]["properties"]
    first, _ = in_process(INBOX, seed=0)
    assert list(first["agent_observations"]) == [INBOX_ROLE] and len(first["inbox"]) == 8


def test_http_refuses_what_the_inbox_does_not_have(http: httpx.Client) -> None:
    wrong_task = http.post("/reset", json={"env": INBOX, "task": "full_episode"})
    assert wrong_task.status_code == 422
    assert any("'easy', 'medium' or 'hard'" in m for m in wrong_task.json()["detail"]), wrong_task.json()
    session = http.post("/reset", json={"env": INBOX, "task": "medium", "seed": 1}).json()["session_id"]
    try:
        later = {e["id"] for e in aaos.make("medium", seed=1, env=INBOX).state()["emails"] if e["arrives"] > 0}
        assert later  # medium's later waves
        bad_label = {INBOX_ROLE: {"action_type": "classify_email",
                                  "payload": {"email_id": "em_x", "category": "urgent"}}}
        refused = http.post("/step", json={"session_id": session, "action": bad_label})
        assert refused.status_code == 422 and any("category" in m for m in refused.json()["detail"])
        not_arrived = {INBOX_ROLE: {"action_type": "open_email", "payload": {"email_id": sorted(later)[0]}}}
        rejected = http.post("/step", json={"session_id": session, "action": not_arrived})
        assert rejected.status_code == 422, rejected.text  # not among the legal choices: nothing changes
        assert not any(email_id in json.dumps(rejected.json()) for email_id in later - {sorted(later)[0]})
        state = http.get("/state", params={"session_id": session}).json()
        assert state["step"] == 0
    finally:
        http.post("/close", json={"session_id": session})


def test_mcp_tools_triage_an_inbox_email(http: httpx.Client) -> None:
    with mcp_session(http) as mcp:
        call = mcp.call
        first = call("new_episode", env=INBOX, task="easy", seed=2)["result"]
        tools = mcp.tools()
        assert tools["classify_email"]["inputSchema"]["properties"]["category"]["enum"][:2] == ["billing",
                                                                                               "technical"]
        email = first["inbox"][0]["id"]
        opened = call("open_email", role=INBOX_ROLE, email_id=email)["result"]
        assert opened["action_result"]["status"] == "applied" and opened["view"]["opened_email"]["id"] == email
        labelled = call("classify_email", role=INBOX_ROLE, email_id=email, category="billing")["result"]
        assert labelled["action_result"]["status"] == "applied" and labelled["view"]["step"] == 2
        closed = call("ignore_email", role=INBOX_ROLE, email_id=email)["result"]
        assert closed["action_result"]["status"] == "applied"
        again = call("classify_email", role=INBOX_ROLE, email_id=email, category="sales")["error"]["message"]
        assert f"{email} is closed (ignored); a closed email is final" in again


def test_pettingzoo_reaches_every_legal_inbox_action() -> None:
    busy = AAOSParallelEnv(task="hard", env=INBOX)
    _, infos = busy.reset(seed=0)
    legal = aaos.make("hard", seed=0, env=INBOX).reset()["agent_observations"][INBOX_ROLE]["legal_actions"]
    actions = infos[INBOX_ROLE]["actions"]
    assert actions == catalogue(legal) and int(infos[INBOX_ROLE]["action_mask"].sum()) == len(actions)
    closing = {(a["action_type"], a["payload"]["email_id"]) for a in actions if a["action_type"] == "ignore_email"}
    assert closing == {("ignore_email", email_id) for email_id in legal["ignore_email"]["email_id"]}


def test_inbox_training_data_rewards_and_seats_an_email_action(tmp_path: Path) -> None:
    episodes_file, grpo = tmp_path / "episodes.jsonl", tmp_path / "grpo.jsonl"
    assert cli(["collect", "--env", INBOX, "--task", "easy", "--episodes", "1", "--out", str(episodes_file)]) == 0
    [first] = read_episodes([episodes_file], INBOX)
    assert first[-1]["score"] >= 0.7
    assert cli(["grpo-data", str(episodes_file), "--horizon", "3", "--out", str(grpo)]) == 0
    row = next(r for r in map(json.loads, grpo.read_text().splitlines()) if r["step"] == 1)
    view, _ = json.JSONDecoder().raw_decode(row["prompt"][-1]["content"].split("\n", 1)[1])
    email = next(e["id"] for e in view["inbox"] if not e["opened"])  # shown in the prompt, not opened yet
    scores = reward_fn([json.dumps({"action_type": "open_email", "payload": {"email_id": email}}), "not json"],
                       snapshot=[row["snapshot"]] * 2, role=[INBOX_ROLE] * 2, horizon=[3, 3])
    assert 0.0 <= scores[0] <= 1.0 and scores[1] < 0
    seat = environment_class(INBOX)()
    seat.reset(**row)
    assert "Invalid action" in seat.open_email(email_id="em_nope")
    assert seat.open_email(email_id=email).startswith("open_email: applied")
