"""What only the toy (tests/toy_env.py) shows on the surfaces, registered as a third-party environment is: in this
process with aaos.register, in subprocesses (a server, aaos bench) with AAOS_ENVS. The toy plays through every
surface as every environment does in tests/test_env_surfaces.py; here: a server that serves it beside the built-in
environments names it in its refusals, checks each step against the session's environment, switches an MCP session
to its tools, and the toy's two roles and free-text action on PettingZoo and the training seat."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import REPO_ROOT, registered, serving
from surfaces import SUBPROCESS_ENV, TOY, TOY_KIT, in_process, mcp_session
from toy_env import toy_spec

import aaos
from aaos.cli import main as cli
from aaos.training import environment_class
from aaos.wrappers.pettingzoo import AAOSParallelEnv

SPEC = toy_spec()


@pytest.fixture(autouse=True, scope="module")
def toy_registered() -> Iterator[None]:
    """The toy registered as a third-party environment for this module (the registry is restored after)."""
    with registered(**{TOY: TOY_KIT}):
        yield


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    """A client of `aaos serve` in a subprocess that finds the toy through AAOS_ENVS."""
    with serving(SUBPROCESS_ENV) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client


def test_the_toy_runs_to_max_steps() -> None:
    _, steps = in_process(TOY, seed=0)
    assert len(steps) == SPEC.task("ship_all").max_steps


# --- HTTP ----------------------------------------------------------------------------------------------------


def test_http_serves_the_toy_beside_the_built_in_environments(http: httpx.Client) -> None:
    assert {aaos.DEFAULT_ENV, TOY} <= set(http.get("/envs").json())
    assert "dock" in http.get("/schema", params={"env": TOY}).json()["observation"]["properties"]
    assert set(aaos.spec().roles) <= set(http.get("/schema").json()["action"]["properties"])  # the default env's
    unknown = http.get("/schema", params={"env": "chess"})
    assert unknown.status_code == 422 and f"'{TOY}'" in unknown.json()["detail"][0]


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
        assert state["step"] == 0 and "parcels" in state  # nothing refused changed anything
    finally:
        http.post("/close", json={"session_id": session})


# --- MCP -----------------------------------------------------------------------------------------------------


def test_mcp_plays_the_toy_roles_tools(http: httpx.Client) -> None:
    with mcp_session(http) as mcp:
        call = mcp.call
        first = call("new_episode", env=TOY, seed=2)["result"]
        found = mcp.tools()
        assert found["ship"]["inputSchema"]["properties"]["role"].get("enum", ["packer"]) == ["packer"]
        parcel = first["dock"][0]["id"]
        inspected = call("inspect", role="inspector", parcel_id=parcel)["result"]
        assert inspected["action_result"]["status"] == "applied" and inspected["view"]["step"] == 1
        refused = call("joint_action", actions={"inspector": {"action_type": "ship", "payload": {"parcel_id": parcel}}})
        assert "inspector may not use ship" in refused["error"]["message"]
        assert "env: Input should be" in call("new_episode", env="chess")["error"]["message"]


# --- PettingZoo, aaos bench, the training seat ---------------------------------------------------------------


def test_pettingzoo_fills_the_toys_free_text_field() -> None:
    _, infos = AAOSParallelEnv(env=TOY).reset(seed=0)
    labels = [a for a in infos["packer"]["actions"] if a["action_type"] == "label"]
    assert labels and all(a["payload"]["note"] for a in labels)  # a free-text field gets the filler text


def test_bench_refuses_scenario_files_for_the_toy_that_has_none(tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    command = [sys.executable, "-m", "aaos.cli", "bench", "--env", TOY, "--policy", "noop", "--episodes", "1",
               "--out", str(tmp_path / "bench"), "--scenarios", str(scenarios)]
    refused = subprocess.run(command, cwd=REPO_ROOT, env=SUBPROCESS_ENV, capture_output=True, text=True, timeout=300,
                             check=False)
    assert refused.returncode == 2 and "environment 'toy' has no scenario files" in refused.stderr


def test_the_training_seat_plays_one_toy_role(tmp_path: Path) -> None:
    episodes, grpo = tmp_path / "episodes.jsonl", tmp_path / "grpo.jsonl"
    assert cli(["collect", "--env", TOY, "--episodes", "1", "--out", str(episodes)]) == 0
    assert cli(["grpo-data", str(episodes), "--horizon", "3", "--out", str(grpo)]) == 0
    row = next(r for r in map(json.loads, grpo.read_text().splitlines()) if r["role"] == "inspector")
    seat = environment_class(TOY)()
    seat.reset(**row)
    assert "Invalid action" in seat.ship(parcel_id="parcel_000000")  # a packer's action, not the inspector's
    assert seat.no_op().startswith("no_op: no_effect")
