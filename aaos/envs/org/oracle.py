"""The oracle: the champion's own rules fed the ground truth instead of its estimates. For calibration only.

It reads `env.state()` (hidden risks: when each becomes noticeable, in which metric, to which roles), so it
is never an agent: the benchmark may show it as a reference row for the headroom a policy could still gain
from information; the Space's play list does not offer it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aaos.core.env import Observation
from aaos.core.policy import Action, Oracle, action
from aaos.envs.org.champion import OrgChampion, busy


class OrgOracle(Oracle, OrgChampion):
    """Looks for a hidden risk only where and when it can be found: with one role that can notice it (an idle
    one if there is), in its metric, from the step it is noticeable; never looks in vain."""

    def __init__(self) -> None:
        self._findable: dict[str, str] = {}

    def read_truth(self, state: Mapping[str, Any], observation: Observation) -> None:
        views = observation["agent_observations"]
        self._findable = {}
        for risk in state["risks"]:
            d = risk["definition"]
            if risk["status"] != "hidden" or d["noticeable_from"] > state["step"]:
                continue
            free = [role for role in d["visible_to"] if role not in self._findable]
            idle = [role for role in free if not busy(role, views[role])]
            if idle or free:
                self._findable[(idle or free)[0]] = d["metric"]

    def _query(self, role: str, view: dict[str, Any]) -> Action | None:
        metric = self._findable.get(role)
        return action("query_metrics", metric=metric) if metric is not None else None
