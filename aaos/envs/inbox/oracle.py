"""The oracle: reads the ground truth (env.state()) and labels and closes every email right, urgent ones first.
For calibration only (the score the grader gives perfect triage); never an agent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aaos.core.env import Observation
from aaos.core.policy import Action, Oracle, action
from aaos.envs.inbox.champion import CLOSE_ACTION
from aaos.envs.inbox.spec import LEVELS


class InboxOracle(Oracle):
    def __init__(self) -> None:
        self._truth: dict[str, dict[str, Any]] = {}

    def read_truth(self, state: Mapping[str, Any], observation: Observation) -> None:
        self._truth = {e["id"]: e for e in state["emails"]}

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        pending = [self._truth[e["id"]] for e in view["inbox"] if e["status"] == "open"]
        if not pending:
            return action("no_op")
        email = min(pending, key=lambda e: (-LEVELS.index(e["true_priority"]), e["arrives"]))
        if email["category"] != email["true_category"]:
            return action("classify_email", email_id=email["id"], category=email["true_category"])
        if email["priority"] != email["true_priority"]:
            return action("set_priority", email_id=email["id"], level=email["true_priority"])
        return action(CLOSE_ACTION[email["true_outcome"]], email_id=email["id"])
