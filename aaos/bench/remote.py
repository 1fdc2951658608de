"""`aaos bench --remote URL`: the benchmark's episodes played against an AAOS server over HTTP, so that the party
evaluated never holds the environment. Against an evaluation server (`aaos serve --eval`) the ground truth stays
hidden and the holdout is drawn from the server's secret salt: the records carry its fingerprint (GET /evaluation),
and so say "salted holdout".

Each episode is one HTTP session (POST /reset with env, task, scenario and seed; POST /step; POST /close). The server
is strict where the environment in process is lenient: an action it refuses as input (a 422: malformed, forbidden,
an unknown id) is replaced by no_op for that role, counted as an invalid action and the step sent again, so a
policy's invalid actions cost it a wasted step, as in process (a forbidden action draws no oversight violation,
though). Policies that read the environment itself (the oracle, the guarded advisor's lookahead) cannot play
remotely; neither can scenario files (the server reads its own) or trajectories (the state is the server's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import aaos
from aaos.core.env import JointAction, Observation, StepResult
from aaos.core.extras import require

TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Remote:
    """An AAOS server to play against: its base URL and the fingerprint of its holdout salt (None: public)."""

    url: str
    holdout_salt: str | None

    @classmethod
    def connect(cls, url: str, envs: list[str]) -> Remote:
        """The server at `url`, checked: it answers GET /evaluation and GET /envs, and has environments `envs` at
        the versions registered here (records carry those versions); ValueError saying what is wrong."""
        httpx = require("httpx", "bench")
        url = url.rstrip("/")
        try:
            evaluation = httpx.get(f"{url}/evaluation", timeout=TIMEOUT_S)
            served = httpx.get(f"{url}/envs", timeout=TIMEOUT_S)
        except httpx.HTTPError as error:
            raise ValueError(f"--remote {url}: no AAOS server answers there ({error})") from None
        if evaluation.status_code != 200 or served.status_code != 200:
            raise ValueError(f"--remote {url}: not an AAOS server of this version (GET /evaluation answered "
                             f"{evaluation.status_code}, GET /envs {served.status_code})")
        specs = served.json()
        for env in envs:
            if env not in specs:
                raise ValueError(f"--remote {url}: the server has no environment {env!r} (it has "
                                 f"{', '.join(specs)})")
            theirs, ours = specs[env]["spec"], aaos.spec(env)
            if (theirs["version"], theirs["reward_version"]) != (ours.version, ours.reward_version):
                raise ValueError(f"--remote {url}: {env} is version {theirs['version']} (reward "
                                 f"{theirs['reward_version']}) there and {ours.version} (reward {ours.reward_version}) "
                                 "here: results would be recorded under the wrong versions")
        return cls(url, evaluation.json()["holdout_salt"])


class RemoteEpisode:
    """One episode in an HTTP session of the server: `observation` after reset, then `step`, then `close`."""

    def __init__(self, remote: Remote, env: str, client: Any) -> None:
        self.remote, self.env, self.client = remote, env, client
        self.roles = aaos.spec(env).roles
        self.session_id = ""
        self.observation: Observation = {}

    async def reset(self, task: str, scenario: str, seed: int) -> Observation:
        answer = await self._post("/reset", {"env": self.env, "task": task, "scenario": scenario, "seed": seed})
        self.session_id, self.observation = answer["session_id"], answer["observation"]
        return self.observation

    async def step(self, joint: JointAction) -> StepResult:
        """Step with `joint`; roles whose actions the server refuses do no_op instead, their results rejected."""
        sent, refused = dict(joint), {}
        while True:
            response = await self.client.post(f"{self.remote.url}/step",
                                              json={"session_id": self.session_id, "action": sent})
            if response.status_code != 422:
                break
            problems = response.json()["detail"]
            problems = problems if isinstance(problems, list) else [problems]
            roles = [role for role in sent if any(_names(problem, role) for problem in problems)] or list(sent)
            if not roles:
                break  # nothing left to take out: the error is not the actions'
            for role in roles:
                refused[role] = {"action": sent.pop(role), "message": "; ".join(problems)}
        answer = _checked(response)
        info = answer["info"]
        for role, why in refused.items():
            action = why["action"] if isinstance(why["action"], dict) else {}
            info["action_results"][role] = {
                "step": info["step"] - 1, "role": role, "action_type": str(action.get("action_type", "")),
                "payload": {}, "status": "rejected", "valid": False, "reason": "malformed",
                "message": f"refused by the server: {why['message']}"[:300]}
        self.observation = answer["observation"]
        return StepResult(answer["observation"], answer["reward"], answer["done"], info)

    async def close(self) -> None:
        if self.session_id:
            await self.client.post(f"{self.remote.url}/close", json={"session_id": self.session_id})

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return _checked(await self.client.post(f"{self.remote.url}{path}", json=body))


def _names(problem: str, role: str) -> bool:
    """Whether a server's problem message is about `role`'s action ("action.ROLE..." or "ROLE: ...")."""
    return re.match(rf"(action\.)?{re.escape(role)}[.:]", problem) is not None


def _checked(response: Any) -> dict[str, Any]:
    if response.status_code != 200:
        raise RuntimeError(f"the server answered {response.status_code}: {response.text[:300]}")
    answer: dict[str, Any] = response.json()
    return answer
