"""Shared helpers for the simulation-core tests (plain functions, importable from a subprocess too)."""

from __future__ import annotations

import copy
import hashlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import aaos
from aaos import envs
from aaos.core.kit import EnvKit

REPO_ROOT = Path(__file__).resolve().parents[1]
TESTS_DIR = Path(__file__).resolve().parent
SCENARIO_DIR = REPO_ROOT / "scenarios" / "org"

TASKS: tuple[str, ...] = ("org_simulation", "crisis_management", "full_episode")
MAX_STEPS: dict[str, int] = {"org_simulation": 20, "crisis_management": 30, "full_episode": 50}
ROLES: tuple[str, ...] = ("product_manager", "engineer", "data_analyst", "risk_compliance", "operations", "oversight")


def act(action_type: str, **payload: Any) -> dict[str, Any]:
    """One role's action in the wire format."""
    return {"action_type": action_type, "payload": payload}


def scenario_ids(split: str | None = None) -> list[str]:
    return [s["id"] for s in aaos.list_scenarios(split=split)]


@dataclass
class Episode:
    """Everything an episode produced: the first observation, then one entry per step."""

    env: Any
    first_observation: dict[str, Any]
    actions: list[Any] = field(default_factory=list)
    observations: list[dict[str, Any]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    dones: list[bool] = field(default_factory=list)
    final_state: dict[str, Any] | None = None

    @property
    def steps(self) -> int:
        return len(self.rewards)

    @property
    def score(self) -> float:
        return self.infos[-1]["score"]


def play(task: str, scenario: str, seed: int, policy: str = "heuristic", policy_seed: int = 0,
         actions: list[Any] | None = None, max_steps: int | None = None) -> Episode:
    """Play an episode with a named policy (or replay a fixed list of joint actions) until done.

    Observations, infos and the final state are deep-copied as JSON so later mutation cannot alias them.
    """
    env = aaos.make(task, scenario=scenario, seed=seed)
    obs = env.reset()
    agent = aaos.policies.make(policy, seed=policy_seed)
    agent.reset(policy_seed)
    agent.bind(env)
    episode = Episode(env, _frozen(obs))
    while True:
        if actions is not None:
            if episode.steps >= len(actions):
                break
            joint = actions[episode.steps]
        else:
            joint = agent.act(obs)
        result = env.step(joint)
        obs = result.observation
        episode.actions.append(_frozen(joint))
        episode.observations.append(_frozen(obs))
        episode.rewards.append(result.reward)
        episode.infos.append(_frozen(result.info))
        episode.dones.append(result.done)
        if result.done or (max_steps is not None and episode.steps >= max_steps):
            break
    episode.final_state = _frozen(env.state())
    return episode


def _frozen(value: Any) -> Any:
    return json.loads(json.dumps(value))


def trajectory_hash(episode: Episode) -> str:
    """sha256 over the first observation, every observation, reward and info, and the final state."""
    blob = json.dumps(
        {
            "first": episode.first_observation,
            "observations": episode.observations,
            "rewards": episode.rewards,
            "infos": episode.infos,
            "state": episode.final_state,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


# --- hidden risks -----------------------------------------------------------------------------------


def hidden_risk_strings(state: dict[str, Any]) -> list[str]:
    """The id, name and description of every risk that is still hidden in the ground truth."""
    found = []
    for risk in state["risks"]:
        if risk["status"] == "hidden":
            d = risk["definition"]
            found.extend([d["id"], d["name"], d["description"]])
    return found


def assert_no_hidden_leak(observation: dict[str, Any], state: dict[str, Any], sent: Any = None) -> None:
    """No hidden risk's id, name or description appears anywhere in the observation.

    The one exception is an agent's own input echoed back in its last_action_result: when a role sent
    a hidden risk's id itself, its result may repeat that id (but nothing else about the risk).
    """
    secrets = hidden_risk_strings(state)
    if not secrets:
        return
    views = {}
    results = {}
    for role, view in observation["agent_observations"].items():
        view = dict(view)
        results[role] = view.pop("last_action_result")
        views[role] = view
    rest = dict(observation)
    rest["agent_observations"] = views
    text = json.dumps(rest)
    for secret in secrets:
        assert secret not in text, f"hidden risk text {secret!r} leaked into the observation"
    sent_by_role = sent if isinstance(sent, dict) else {}
    for role, result in results.items():
        own_input = json.dumps(sent_by_role.get(role), default=repr) if role in sent_by_role else ""
        shown = json.dumps(result)
        for secret in secrets:
            if secret not in own_input:
                assert secret not in shown, f"hidden risk text {secret!r} leaked into {role}'s last_action_result"


# --- scenario files ---------------------------------------------------------------------------------


def shipped_scenario_data(scenario_id: str = "product_launch_failure") -> dict[str, Any]:
    return json.loads((SCENARIO_DIR / f"{scenario_id}.json").read_text())


def write_scenario(directory: Path, data: Any, name: str = "scenario.json") -> Path:
    path = directory / name
    path.write_text(json.dumps(data, indent=2) if not isinstance(data, str) else data)
    return path


def custom_scenario() -> dict[str, Any]:
    """A scenario written from scratch in the documented format (not a copy of a shipped file).

    Zero variation, so every step number below is exact: tasks at 0 and 2 (late arrival), one risk
    noticeable at 1 by the data analyst in data_quality, a crisis incident at step 3, an anomaly, a policy change.
    """
    incident = {"title": "Ledger sync stalls", "severity": "high", "impact": {"latency": 80.0, "uptime": -0.01},
                "resolver_roles": ["engineer", "operations"], "effort": 1}
    return copy.deepcopy({
        "id": "ledger_sync_test",
        "title": "A small test organisation syncing its ledger",
        "description": "Written for the tests.",
        "split": "train",
        "crisis_event": "evt_sync_stall",
        "baseline_metrics": {"latency": 150.0, "error_rate": 0.01, "uptime": 0.995, "data_quality": 0.97},
        "resources": {"compute": 60, "budget": 40, "personnel": 3},
        "policy": {"max_resource_approval": 20},
        "tasks": [
            {"id": "task_ledger_api", "name": "ledger_api", "priority": "high", "required_role": "engineer",
             "effort": 2, "deadline": 10, "arrives": 0},
            {"id": "task_reconcile", "name": "reconciliation_report", "priority": "medium",
             "required_role": "data_analyst", "effort": 2, "deadline": 12, "arrives": 2},
        ],
        "risks": [
            {"id": "risk_rounding", "name": "rounding_mismatch",
             "description": "Currency rounding differs between the ledger and the bank feed.",
             "severity": "high", "metric": "data_quality", "visible_to": ["data_analyst"], "noticeable_from": 1,
             "escalates_at": 25,
             "remediation": {"name": "unify_rounding", "required_role": "data_analyst", "effort": 1},
             "incident": {"title": "Ledger totals disagree with the bank", "severity": "high",
                          "impact": {"data_quality": -0.1}, "resolver_roles": ["data_analyst"], "effort": 1}},
        ],
        "events": [
            {"id": "evt_feed_glitch", "step": 1, "kind": "anomaly", "title": "Bank feed error spike",
             "severity": "medium", "respond_within": 3, "impact": {"error_rate": 0.03}, "metric": "error_rate"},
            {"id": "evt_sync_stall", "step": 3, "kind": "incident", "title": "Ledger sync stalls",
             "severity": "high", "respond_within": 3, "incident": incident},
            {"id": "evt_approval_cap", "step": 6, "kind": "policy_change", "title": "Smaller approvals",
             "severity": "medium", "respond_within": 3, "policy": {"max_resource_approval": 10}},
        ],
        "variation": {"deadline_jitter": 0, "amount_jitter": 0.0, "timing_jitter": 0},
        "flags": {"test_org": True},
    })


@contextmanager
def registered(**entries: EnvKit | str) -> Iterator[None]:
    """Register environments for the duration of a test; the registry is restored afterwards."""
    saved = dict(envs._REGISTRY)
    try:
        for env_id, kit in entries.items():
            aaos.register(env_id, kit)
        yield
    finally:
        envs._REGISTRY.clear()
        envs._REGISTRY.update(saved)
        envs.kit_of.cache_clear()
        envs.spec.cache_clear()


SERVE_STARTUP_SECONDS = 90


def free_ports(count: int) -> list[int]:
    """`count` loopback ports free now, all different: their sockets are held bound together while picked (one
    at a time, the system may hand out a port just closed again)."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


def free_port() -> int:
    return free_ports(1)[0]


@contextmanager
def serving(env: dict[str, str], *options: str) -> Iterator[str]:
    """`aaos serve` (with these further options) in a subprocess on a free loopback port with the process
    environment `env`; its base URL once /health answers."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "aaos.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
                                *options],
                               cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVE_STARTUP_SECONDS
        while True:
            assert process.poll() is None, f"aaos serve exited: {process.stderr.read() if process.stderr else ''}"
            assert time.monotonic() < deadline, "aaos serve did not answer /health in time"
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
