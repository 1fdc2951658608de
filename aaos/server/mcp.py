"""The MCP tools of one environment session: each action type is a tool.

An action tool takes the acting `role` and the action's payload fields, and advances the episode one
step in which that role takes the action and every other role does no_op. `joint_action` steps with
an action for several roles at once, and `new_episode` starts over (in another environment with `env`,
whose actions the tools become). Input is checked like the HTTP API's, strictly (no coercion between JSON
types): a tool call the environment would reject raises InvalidParams or InvalidAction, which say what to fix
(the /mcp routes answer them as a result with isError to a standard MCP client, as JSON-RPC -32602 to
openenv's), and changes nothing.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from fastmcp import FastMCP
from pydantic import ValidationError

import aaos
from aaos.core.env import JointAction, StepResult
from aaos.core.spec import ActionSpec
from aaos.server.models import (
    InvalidAction,
    InvalidParams,
    check_episode,
    episode_params,
    error_messages,
)
from aaos.server.signatures import signed
from aaos.server.wire import Lean, step_answer

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


def _checked(session: AAOSEnvironment, actions: Any, where: Callable[[tuple[Any, ...]], tuple[Any, ...]]
             ) -> JointAction:
    """A joint action from tool arguments, checked by the environment (its own words for a forbidden action or
    an unknown id: InvalidAction) and then strictly typed (InvalidParams, each message at `where(loc)`)."""
    problems = session.env.check(actions)
    if problems:
        raise InvalidAction(problems)
    try:
        return session.typed(actions)
    except ValidationError as error:
        raise InvalidParams(error_messages([{**e, "loc": where(e["loc"])} for e in error.errors()])) from None


def _action_tool(session: AAOSEnvironment, action: ActionSpec) -> Callable[..., dict[str, Any]]:
    """A tool function for one action type, with `role` and the payload's fields as its parameters."""

    def tool(role: str, **payload: Any) -> dict[str, Any]:
        # a payload field's problem is named after the argument: (role, action_type, "payload", field) -> field
        joint = _checked(session, {role: {"action_type": action.name, "payload": payload}},
                         lambda loc: loc[3:] if len(loc) > 3 else ("role", *loc))
        return _role_result(role, session.advance(joint, Lean((role,))))

    role = inspect.Parameter("role", inspect.Parameter.KEYWORD_ONLY, annotation=Literal[action.roles])  # type: ignore[valid-type]
    tool.__doc__ = f"{action.description} Allowed roles: {', '.join(action.roles)}."
    return signed(tool, action, [role], dict[str, Any])


def build_mcp_server(owner: AAOSEnvironment) -> FastMCP:
    """The tools of one session's environment. They hold the session weakly: fastmcp caches tool functions
    (up to 5,000 entries), and a strong reference there would keep a closed session's environment alive."""
    session = weakref.proxy(owner)
    spec = session.env.spec
    server = FastMCP("aaos", instructions=(
        f"{spec.title}: {spec.description} Roles: {', '.join(spec.roles)}. Each action tool advances one step "
        "with the given role acting (the others do no_op); joint_action lets several roles act in the same step; "
        "new_episode starts over, in another environment with env."))
    for action in spec.actions:
        server.tool(_action_tool(session, action), name=action.name)

    @server.tool
    def joint_action(actions: dict[str, dict[str, Any]], roles: list[str] | None = None,
                     observe: bool = True) -> dict[str, Any]:
        """Advance one step with an action per role: {role: {"action_type": ..., "payload": {...}}};
        roles left out do no_op. Returns observation, reward, done and info; `roles` returns only what those
        roles see, observe=false no observation."""
        lean = Lean.of(session.env_id, roles, observe)
        joint = _checked(session, actions, lambda loc: ("actions", *loc))
        return step_answer(session.advance(joint, lean))

    @server.tool(description=(
        f"Start a new episode; returns the first observation. env: one of {', '.join(aaos.env_ids())} (another "
        f"environment starts from its defaults and these tools become its actions); task: one of "
        f"{', '.join(t.id for t in spec.tasks)} here; scenario: one of {', '.join(s.id for s in spec.scenarios)} "
        "here; seed: a non-negative integer. Fields left out keep their current values. roles: only what these roles "
        "see; observe: false for no observation (null)."))
    def new_episode(env: str | None = None, task: str | None = None, scenario: str | None = None,
                    seed: int | None = None, roles: list[str] | None = None, observe: bool = True
                    ) -> dict[str, Any] | None:
        params = episode_params(env=env, task=task, scenario=scenario, seed=seed)
        lean = Lean.of(check_episode(params, session.env_id), roles, observe)
        return lean.observation(session.start(params))

    return server
