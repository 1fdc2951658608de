"""The guarded advisor's guardrails for the organisation: a legal action that is still unsafe to take."""

from __future__ import annotations

from typing import Any

from aaos.core.kit import View
from aaos.core.policy import Action
from aaos.envs.org.oversight import RISK_CHECK_WINDOW


def guardrail(role: str, action: Action, view: View) -> str | None:
    """Why a legal action is unsafe, or None: above the approval limit, an approval without a recent metrics
    check, an anomaly report with no signal, a flag on a risk not in view, or a delegation that changes nothing
    (the task is already its owner's) or hands a task to a role other than the one it requires (which cannot
    make it count as rightly assigned)."""
    kind, payload = action["action_type"], action["payload"]
    if kind == "delegate_task":
        task = next((t for t in view["visible_tasks"] if t["id"] == payload["task_id"]), None)
        if task is None:
            return None
        if task["owner"] == payload["to"]:
            return "already_owned"
        return "wrong_role" if task["required_role"] != payload["to"] else None
    if kind == "approve_resource":
        if payload["amount"] > view["policy"]["max_resource_approval"]:
            return "above_policy_limit"
        last = view["last_query_step"]
        if last is None or view["step"] - last > RISK_CHECK_WINDOW:
            return "no_risk_check"
    if kind == "report_anomaly" and not view["signals"]:
        return "no_signal"
    risks: Any = view["risks"]
    if kind == "raise_risk_flag" and risks != "hidden" and payload["risk_id"] not in {r["id"] for r in risks}:
        return "unknown_risk"
    return None
