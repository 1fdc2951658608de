"""What the surface tests share (tests/test_env_surfaces.py, tests/test_toy_surfaces.py): the toy registered as a
third-party environment is (here with aaos.register, in subprocesses with AAOS_ENVS), an environment's champion
episode in process, the process environment of the subprocesses, MCP calls and inference.py runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from helpers import REPO_ROOT, TESTS_DIR

import aaos

TOY = "toy"
TOY_KIT = "toy_env:KIT"
MODEL_VARIABLES = ("MODEL_NAME", "ENV_BASE_URL", "HF_TOKEN", "TASK", "ENV_NAME", "OUTPUT")
SUBPROCESS_ENV = {**{k: v for k, v in os.environ.items() if k not in MODEL_VARIABLES},
                  "AAOS_ENVS": f"{TOY}={TOY_KIT}", "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS_DIR)])}
"""A subprocess (a server, inference.py, aaos bench) that finds the toy, with no model configured."""


def plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def short_task(env_id: str) -> str:
    """The task the surface tests play: the environment's first easy task (its first task if none is easy)."""
    tasks = aaos.spec(env_id).tasks
    return next((t.id for t in tasks if t.difficulty == "easy"), tasks[0].id)


def in_process(env_id: str, seed: int, task: str | None = None, scenario: str | None = None
               ) -> tuple[dict[str, Any], list[tuple[Any, dict[str, Any]]]]:
    """The champion's episode in process: the first observation and (joint action, step result) pairs."""
    env = aaos.make(task or short_task(env_id), scenario=scenario, seed=seed, env=env_id)
    policy = aaos.policies.make("heuristic", env=env_id)
    first = observation = env.reset()
    steps = []
    while True:
        joint = policy.act(observation)
        result = env.step(joint)
        steps.append((plain(joint), plain(result.to_dict())))
        observation = result.observation
        if result.done:
            return plain(first), steps


def rpc(http: httpx.Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    assert response.status_code == 200
    return response.json()


@dataclass(frozen=True)
class McpSession:
    """One MCP session of a server: its tools by name, and tool calls (the JSON-RPC answer: result or error)."""

    http: httpx.Client
    session_id: str

    def tools(self) -> dict[str, dict[str, Any]]:
        listed = rpc(self.http, "tools/list", {"session_id": self.session_id})["result"]["tools"]
        return {tool["name"]: tool for tool in listed}

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        return rpc(self.http, "tools/call", {"session_id": self.session_id, "name": name, "arguments": arguments})


@contextmanager
def mcp_session(http: httpx.Client) -> Iterator[McpSession]:
    """An MCP session, closed after."""
    session_id = rpc(http, "openenv/session/create", {})["result"]["session_id"]
    try:
        yield McpSession(http, session_id)
    finally:
        rpc(http, "openenv/session/close", {"session_id": session_id})


def run_inference(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "inference.py", *args], cwd=REPO_ROOT, env={**SUBPROCESS_ENV, **variables},
                          capture_output=True, text=True, timeout=600, check=False)
