"""The policy that plays a Q-table (written by `aaos train-q`, aaos.training.qlearn) greedily through the tabular
abstraction an environment's kit offers (aaos.core.kit.EnvKit.tabular): every role acts by the same table."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aaos.core.policy import Action, Policy
from aaos.envs import kit_of

Table = dict[str, dict[str, float]]
"""state key -> move name -> learnt value."""


def tabular_of(env: str) -> Callable[[dict[str, Any]], tuple[str, dict[str, Action]]]:
    found = kit_of(env).tabular
    if found is None:
        raise ValueError(f"environment {env!r} offers no tabular abstraction (its kit has no `tabular`)")
    return found


def greedy(table: Table, state: str, moves: dict[str, Action]) -> str:
    """The best known move in `state` (the kit's first move where none is known better)."""
    values = table.get(state, {})
    return max(moves, key=lambda m: values.get(m, 0.0))


class QPolicy(Policy):
    """Plays a Q-table greedily through the environment's tabular abstraction."""

    name = "q"

    def __init__(self, table: Table, env: str) -> None:
        self.table = table
        self.tabular = tabular_of(env)

    @classmethod
    def load(cls, path: Path | str, env: str) -> QPolicy:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data["env"] != env:
            raise ValueError(f"{path}: a Q-table of environment {data['env']!r}, not {env!r}")
        return cls(data["table"], env)

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        state, moves = self.tabular(view)
        return moves[greedy(self.table, state, moves)]
