"""The MCP tools of one environment session: each action type is a tool.

An action tool takes the acting `role` and the action's payload fields, and advances the episode one
step in which that role takes the action and every other role does no_op. `joint_action` steps with
an action for several roles at once, and `new_episode` starts over. Input is checked like the HTTP API's:
a tool call the environment would reject raises an error that says what to fix, and changes nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from fastmcp import FastMCP

from aaos.core.env import StepResult
from aaos.core.spec import ActionSpec
from aaos.server.models import ScenarioId, TaskId, episode_params

if TYPE_CHECKING:
    from aaos.server.environment import AAOSEnvironment


def _role_result(role: str, result: StepResult) -> dict[str, Any]:
    """What an action tool returns: the step's reward and score, the role's action result and its new view."""
    assert result.observation is not None
    return {
        "reward": result.reward,
        "done": result.done,
        "score": result.info["score"],
        "action_result": result.info["action_results"][role],
        "view": result.observation["agent_observations"][role],
    }


def _action_tool(session: AAOSEnvironment, action: ActionSpec) -> Callable[..., dict[str, Any]]:
    """A tool function for one action type, with `role` and the payload's fields as its parameters."""

    def tool(role: str, **payload: Any) -> dict[str, Any]:
        return _role_result(role, session.advance({role: {"action_type": action.name, "payload": payload}}))

    keyword = inspect.Parameter.KEYWORD_ONLY
    roles = Literal[action.roles]  # type: ignore[valid-type]
    parameters = [inspect.Parameter("role", keyword, annotation=roles)]
    annotations: dict[str, Any] = {"role": roles, "return": dict[str, Any]}
    for name, field in action.payload.model_fields.items():
        default = inspect.Parameter.empty if field.is_required() else field.default
        parameters.append(inspect.Parameter(name, keyword, annotation=field.annotation, default=default))
        annotations[name] = field.annotation
    tool.__signature__ = inspect.Signature(parameters, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    tool.__annotations__ = annotations
    tool.__name__ = action.name
    tool.__doc__ = f"{action.description} Allowed roles: {', '.join(action.roles)}."
    return tool


def build_mcp_server(session: AAOSEnvironment) -> FastMCP:
    """The tools of one session's environment."""
    server = FastMCP("aaos", instructions=(
        "AAOS: six roles run a tech organisation. Each action tool advances one step with the given role "
        "acting (the others do no_op); joint_action lets several roles act in the same step."))
    for action in session.env.spec.actions:
        server.tool(_action_tool(session, action), name=action.name)

    @server.tool
    def joint_action(actions: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Advance one step with an action per role: {role: {"action_type": ..., "payload": {...}}};
        roles left out do no_op. Returns observation, reward, done and info."""
        return session.advance(actions).to_dict()

    @server.tool
    def new_episode(task: TaskId | None = None, scenario: ScenarioId | None = None,  # type: ignore[valid-type]
                    seed: int | None = None) -> dict[str, Any]:
        """Start a new episode (fields left out keep the current task, scenario and seed); returns the
        first observation."""
        return session.start(episode_params(task=task, scenario=scenario, seed=seed))

    return server
