"""AAOSEnv: the typed OpenEnv client. One WebSocket connection is one environment session on the server.

    from aaos.server.client import AAOSEnv

    with AAOSEnv(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0)                # the default environment, its default task and scenario
        while not result.done:
            result = env.step({})                 # role -> {"action_type": ..., "payload": {...}}; {}: all no_op
        print(result.observation.info["score"])

    async with AAOSEnv(base_url="http://127.0.0.1:8000") as env:   # the async form
        result = await env.reset(env="toy", seed=0)                 # any environment the server has

    env.step({}, roles=["engineer"])             # lean: only what the engineer sees
    env.step({}, observe=False)                  # leaner: no observation, only reward, done and info

`roles` (only what these roles see: aaos.core.env.seen_by) and `observe=False` (no observation: its keys are
absent, `info`, reward and done still come) make reset and step answers lean (aaos.server.wire.Lean).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult

import aaos
from aaos.server.models import AAOSObservation, AAOSState, JointActionBase, WireAction, action_model


class AAOSEnv(EnvClient[WireAction, AAOSObservation, AAOSState]):
    """reset(env=..., task=..., scenario=..., seed=..., episode_id=...) / step(joint action) / state() over /ws.

    `step` takes a typed joint action (aaos.server.models.action_model) or a plain joint action dict,
    validated here against the session environment's typed joint action when that environment is registered
    in this process too (so a malformed action fails before it is sent). A rejected action or a step after
    the episode ended raises RuntimeError with the server's message; the session stays open and unchanged."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env_id = aaos.DEFAULT_ENV

    async def reset(self, roles: Sequence[str] | None = None, observe: bool = True,
                    **kwargs: Any) -> StepResult[AAOSObservation]:
        """kwargs: env, task, scenario, seed, episode_id; roles/observe: what the answer shows."""
        response = await self._send_and_receive({"type": "reset", "data": kwargs, **_lean(roles, observe)})
        self.env_id = kwargs.get("env") or self.env_id  # the server keeps the session's environment likewise
        return self._parse_result(response.get("data", {}))

    async def step(self, action: JointActionBase | WireAction | dict[str, Any], roles: Sequence[str] | None = None,
                   observe: bool = True, **kwargs: Any) -> StepResult[AAOSObservation]:
        """One step with a joint action; roles/observe: what the answer shows."""
        response = await self._send_and_receive({"type": "step", "data": self._step_payload(action),
                                                 **_lean(roles, observe)})
        return self._parse_result(response.get("data", {}))

    def _step_payload(self, action: JointActionBase | WireAction | dict[str, Any]) -> dict[str, Any]:
        if not isinstance(action, JointActionBase | WireAction):
            model = action_model(self.env_id) if self.env_id in aaos.env_ids() else WireAction
            action = model.model_validate(action)
        return action.model_dump(exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[AAOSObservation]:
        shown = payload.get("observation")
        if shown is None:  # observe=False: the info comes beside the (absent) observation
            shown = {"info": payload.get("info") or {}}
        observation = AAOSObservation.model_validate(
            {**shown, "reward": payload.get("reward"), "done": payload.get("done", False)})
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> AAOSState:
        return AAOSState.model_validate(payload)


def _lean(roles: Sequence[str] | None, observe: bool) -> dict[str, Any]:
    """The lean fields of a message; none when the whole observation is wanted (what any OpenEnv server takes)."""
    fields: dict[str, Any] = {} if roles is None else {"roles": list(roles)}
    return fields if observe else {**fields, "observe": False}
