"""AAOSEnv: the typed OpenEnv client. One WebSocket connection is one environment session on the server.

    from aaos.server.client import AAOSEnv

    with AAOSEnv(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(task="full_episode", scenario="product_launch_failure", seed=0)
        while not result.done:
            result = env.step({"engineer": {"action_type": "query_metrics", "payload": {"metric": "latency"}}})
        print(result.observation.info["score"])

    async with AAOSEnv(base_url="http://127.0.0.1:8000") as env:   # the async form
        result = await env.reset(seed=0)
"""

from __future__ import annotations

from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult

from aaos.server.models import AAOSAction, AAOSObservation, AAOSState


class AAOSEnv(EnvClient[AAOSAction, AAOSObservation, AAOSState]):  # type: ignore[valid-type]
    """reset(task=..., scenario=..., seed=..., episode_id=...) / step(joint action) / state() over /ws.

    `step` takes an AAOSAction or a plain joint action dict (validated here, so a malformed action fails
    before it is sent). A rejected action or a step after the episode ended raises RuntimeError with the
    server's message; the session stays open and unchanged."""

    def _step_payload(self, action: AAOSAction | dict[str, Any]) -> dict[str, Any]:  # type: ignore[valid-type]
        if not isinstance(action, AAOSAction):
            action = AAOSAction.model_validate(action)
        return action.model_dump(exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[AAOSObservation]:
        observation = AAOSObservation.model_validate(
            {**payload.get("observation", {}), "reward": payload.get("reward"), "done": payload.get("done", False)})
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> AAOSState:
        return AAOSState.model_validate(payload)
