"""Python signatures for action types: one keyword parameter per payload field, typed and defaulted from the
action's payload model. MCP tools (aaos.server.mcp) and the TRL environment's methods (aaos.training.trl_env)
are both built with `signed`, so the two surfaces describe an action's arguments the same way."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from aaos.core.spec import ActionSpec

F = TypeVar("F", bound=Callable[..., Any])


def payload_parameters(action: ActionSpec) -> list[inspect.Parameter]:
    """A keyword-only parameter per payload field, annotated with the field's type; optional fields keep
    their default."""
    return [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=field.annotation,
                              default=inspect.Parameter.empty if field.is_required() else field.default)
            for name, field in action.payload.model_fields.items()]


def signed(function: F, action: ActionSpec, leading: Sequence[inspect.Parameter], returns: Any) -> F:
    """`function` (taking **payload) named after the action, with the signature and annotations `leading`
    parameters + the payload's fields -> `returns`, which tool-schema builders read."""
    parameters = [*leading, *payload_parameters(action)]
    function.__signature__ = inspect.Signature(parameters, return_annotation=returns)  # type: ignore[attr-defined]
    function.__annotations__ = {**{p.name: p.annotation for p in parameters if p.annotation is not p.empty},
                                "return": returns}
    function.__name__ = function.__qualname__ = action.name
    return function
