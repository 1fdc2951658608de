"""The oracle: the champion's rules fed the ground truth instead of what the chief of staff last heard: the
preference each stakeholder will hold on the day of the meeting (the hidden drift plan), their true tone and
importance (to order the queue); it never spends a turn checking in. For calibration only: the headroom
hidden drift leaves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aaos.core.env import Observation
from aaos.core.policy import Oracle
from aaos.envs.chief_of_staff.champion import CosChampion
from aaos.envs.chief_of_staff.spec import SLOTS, SLOTS_PER_DAY, WORK_SLOTS


class CosOracle(Oracle, CosChampion):
    def __init__(self) -> None:
        self._truth: dict[str, dict[str, Any]] = {}
        self._importance: dict[str, float] = {}
        self._briefed: dict[str, dict[str, Any]] = {}
        self._drifts: list[dict[str, Any]] = []

    def read_truth(self, state: Mapping[str, Any], observation: Observation) -> None:
        self._truth, self._importance = state["preferences"], state["importance"]
        self._briefed, self._drifts = state["briefed_preferences"], state["drifts"]

    def preferred_slot(self, view: dict[str, Any], stakeholder: str, day: int) -> str:
        """The slot the stakeholder will prefer when it is lived on `day` (the drift plan applied up to then)."""
        return next((slot for slot in WORK_SLOTS if self._in_force(stakeholder, day, slot)[1] == slot),
                    self._in_force(stakeholder, day, WORK_SLOTS[-1])[1])

    def unavailable(self, view: dict[str, Any], stakeholder: str, day: int, slot: str) -> bool:
        """Whether the stakeholder will have drifted away from `slot` by the time it is lived on `day`."""
        return self._in_force(stakeholder, day, slot)[0] == slot

    def _in_force(self, stakeholder: str, day: int, slot: str) -> tuple[str | None, str]:
        """(the slot drifted away from, the preferred slot) when `slot` of `day` is lived."""
        step, barred, now = day * SLOTS_PER_DAY + SLOTS.index(slot), None, str(self._briefed[stakeholder]["slot"])
        for drift in self._drifts:
            if drift["stakeholder"] == stakeholder and drift["aspect"] == "slot" and drift["step"] <= step:
                barred, now = now, str(drift["value"])
        return barred, now

    def preferred_tone(self, view: dict[str, Any], stakeholder: str) -> str:
        return str(self._truth[stakeholder]["tone"])

    def priority(self, view: dict[str, Any], request: dict[str, Any]) -> float:
        return super().priority(view, request) * self._importance[request["stakeholder"]]

    def checks_in(self) -> bool:
        return False
