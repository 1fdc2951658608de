"""An environment class for TRL's `GRPOTrainer(environment_factory=environment_class(env))`.

TRL makes one instance per rollout and calls `reset(**row)` with a row of the GRPO dataset
(aaos.training.grpo, per-role mode); the model then acts through tool calls, one method per action type
of the environment's spec, with the payload fields as arguments; `get_reward()` scores the rollout.

* reset: restores the row's snapshot and seats the model in the row's role. The row's prompt already
  shows the role's view, so it returns None; a row whose last user message is empty gets the view as
  the return value, which TRL appends to that message (so the model sees the LLM agent's prompt either way).
* an action method: checks the action as the LLM agent checks its answers (legal now, payload choices).
  A valid action is one step (the champion acts for the other roles); the method returns what became of
  it and the role's next view, as the next user turn of the agent's prompt shows it. An invalid one is
  not played: the method says why, and the model may call again.
* get_reward: the score `horizon` steps after the snapshot (null: the environment's default), the champion
  playing the steps the model did not take (aaos.training.rollout); INVALID_REWARD if the model took no valid
  action.

Nothing here imports torch or trl.
"""

from __future__ import annotations

import inspect
from typing import Any

import aaos
from aaos.agents.llm import InvalidAnswer, validate_answer
from aaos.agents.prompts import role_user_prompt
from aaos.core.spec import ActionSpec
from aaos.server.signatures import signed
from aaos.training.rollout import INVALID_REWARD, Rollout

RETURNS = "What became of the action, then your view and legal actions for the next step."


class SeatEnvironment:
    """One role's seat in an episode restored from a GRPO row; subclasses add one method per action type."""

    def __init__(self) -> None:
        self.rollout: Rollout | None = None
        self.invalid_calls = 0

    def reset(self, **row: Any) -> str | None:
        """Restore the row's snapshot with the model in the row's role (see the module docstring)."""
        if not row.get("snapshot") or not row.get("role"):
            raise ValueError(f"{type(self).__name__} needs rows with a snapshot and a role: build them with "
                             "`aaos grpo-data --mode per_role`")
        horizon = row.get("horizon")
        self.rollout = Rollout(row["snapshot"], row["role"], None if horizon is None else int(horizon))
        self.invalid_calls = 0
        shown = self._view_prompt()
        prompt = row.get("prompt") or []
        return None if prompt and prompt[-1].get("content") == shown else shown

    def get_reward(self) -> float:
        """The rollout's score at the horizon; INVALID_REWARD if the model never took a valid action."""
        rollout = self._seated()
        return rollout.finish() if rollout.steps else INVALID_REWARD

    def _seated(self) -> Rollout:
        if self.rollout is None:
            raise RuntimeError("call reset(**row) first")
        return self.rollout

    def _view_prompt(self) -> str:
        rollout = self._seated()
        return role_user_prompt(rollout.observation()["agent_observations"][rollout.role], rollout.env.spec)

    def _act(self, action_type: str, payload: dict[str, Any]) -> str:
        rollout = self._seated()
        role = rollout.role
        if rollout.over:
            return "The rollout is over: no more actions are taken."
        legal = rollout.observation()["agent_observations"][role]["legal_actions"]
        try:
            action = validate_answer(rollout.spec, role, {"action_type": action_type, "payload": payload}, legal)
        except InvalidAnswer as error:
            self.invalid_calls += 1
            return f"Invalid action, not taken: {error}. Call one of your legal actions."
        outcome = rollout.act({role: action}).info["action_results"][role]
        said = f"{action_type}: {outcome['status']} ({outcome['message']})."
        return f"{said} The rollout is over." if rollout.over else f"{said}\n\n{self._view_prompt()}"


def _docstring(action: ActionSpec) -> str:
    lines = [action.description]
    fields = action.payload.model_fields
    if fields:
        lines += ["", "Args:"]
        lines += [f"    {name}: {field.description or name.replace('_', ' ').capitalize() + '.'}"
                  for name, field in fields.items()]
    return "\n".join([*lines, "", "Returns:", f"    {RETURNS}"])


def action_method(action: ActionSpec) -> Any:
    """A method `name(self, **payload) -> str` for one action type, typed and documented (Google style) from
    its payload model, as TRL's tool schemas need."""

    def method(self: SeatEnvironment, **payload: Any) -> str:
        return self._act(action.name, payload)

    method.__doc__ = _docstring(action)
    return signed(method, action, [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)], str)


def environment_class(env: str = aaos.DEFAULT_ENV) -> type[SeatEnvironment]:
    """The environment_factory class for an environment id: a SeatEnvironment with one method per action type,
    named after the environment (TRL logs its rewards under the class name)."""
    spec = aaos.spec(env)
    methods = {action.name: action_method(action) for action in spec.actions}
    name = f"{env.capitalize()}Environment"
    doc = f"{spec.title}: {SeatEnvironment.__doc__}"
    return type(name, (SeatEnvironment,), {"__doc__": doc, "__module__": __name__, **methods})


DefaultEnvironment = environment_class()
"""The class for the default environment (aaos.DEFAULT_ENV); environment_class(env) for another."""

