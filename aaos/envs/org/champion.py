"""The champion of the organisation: sensible per-role rules over each role's own view.

It reads only what the role observes (no hidden state): its tasks, metrics, signals, visible risks,
incidents, plans, requests, events and the oversight log where the role can see it.
"""

from __future__ import annotations

from typing import Any

from aaos.core.policy import Action, Policy, action
from aaos.envs.org.oversight import RISK_CHECK_WINDOW
from aaos.envs.org.spec import ACTIONS, SEVERITIES, VISIBLE_METRICS, most_severe_first, most_urgent_first

PLAN_TEXT = "Sprint plan: deliver critical work first, hand each task to its required role, flag risks early."
REPLAN_TEXT = "Re-plan after the cut to {resource}: keep critical work funded, defer low-priority work."
REPORTERS: tuple[str, ...] = next(a.roles for a in ACTIONS if a.name == "report_anomaly")
"""The roles that may report anomalies, in role order (the first that sees a signal's metric reports it)."""


def _waiting_events(view: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in view["recent_events"] if e["kind"] == kind and not e["responded"]]


def _resolve(role: str, view: dict[str, Any]) -> Action | None:
    ids = view["legal_actions"].get("resolve_incident", {}).get("incident_id", [])
    incidents = [i for i in view["incidents"] if i["id"] in ids]
    if not incidents:
        return None
    incidents.sort(key=lambda i: (-SEVERITIES.index(i["severity"]), i["opened_step"], i["id"]))
    return action("resolve_incident", incident_id=incidents[0]["id"])


def _report(role: str, view: dict[str, Any]) -> Action | None:
    """Report the first signal this role is the designated reporter of: the first role (in role order) able to
    report anomalies that sees the signal's metric, so that no two roles report the same anomaly."""
    if "report_anomaly" not in view["legal_actions"]:
        return None
    for signal in view["signals"]:
        if next(r for r in REPORTERS if signal["metric"] in VISIBLE_METRICS[r]) == role:
            return action("report_anomaly", description=f"{signal['title']} ({signal['metric']})",
                          severity=signal["severity"])
    return None


def _fit(options: list[int], wanted: int, ceiling: int) -> int | None:
    """The smallest legal amount covering `wanted`, else the largest one; never above `ceiling`."""
    allowed = [a for a in options if a <= ceiling]
    covering = [a for a in allowed if a >= wanted]
    return min(covering) if covering else max(allowed, default=None)


def _request(role: str, view: dict[str, Any]) -> Action | None:
    if "request_resource" not in view["legal_actions"]:
        return None
    options = view["legal_actions"]["request_resource"]["amount"]
    pending = {r["resource_type"] for r in view["pending_requests"] if r["role"] == role}
    limit = view["policy"]["max_resource_approval"]
    for task in view["visible_tasks"]:
        if task["owner"] != role or task["status"] != "in_progress":
            continue
        for kind, needed in task["blocked_on"].items():
            amount = _fit(options, needed, limit)
            if kind not in pending and amount is not None:
                return action("request_resource", amount=amount, resource_type=kind)
    return None


def busy(role: str, view: dict[str, Any]) -> bool:
    """The role is working on a task of its own that is not blocked (a query would stall it)."""
    return any(t["owner"] == role and t["status"] == "in_progress" and not t["blocked_on"]
               for t in view["visible_tasks"])


def _look(view: dict[str, Any]) -> Action:
    """Investigate the role's metrics in turn, one a step (a hidden risk shows in one metric)."""
    metrics = view["legal_actions"]["query_metrics"]["metric"]
    return action("query_metrics", metric=metrics[view["step"] % len(metrics)])


def _propose(role: str, view: dict[str, Any]) -> Action | None:
    if "propose_plan" not in view["legal_actions"]:
        return None
    shocks = _waiting_events(view, "resource_shock")
    if shocks:
        resource = next(iter(shocks[0]["resource_deltas"]))
        return action("propose_plan", plan=REPLAN_TEXT.format(resource=resource), addresses=resource)
    if not view["plans"] and not view["decided_plans"]:
        return action("propose_plan", plan=PLAN_TEXT)
    return None


def _first(*choices: Action | None) -> Action:
    for choice in choices:
        if choice is not None:
            return choice
    return action("no_op")


class OrgChampion(Policy):
    """Per-role rules: delegate by required role and priority, find and flag risks, remediate, resolve
    incidents, answer requests after a risk check, adopt policy changes, audit violations."""

    name = "heuristic"

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        return getattr(self, f"_{role}")(role, view)

    def _product_manager(self, role: str, view: dict[str, Any]) -> Action:
        pending = [t for t in view["visible_tasks"] if t["status"] == "pending"]
        if pending:
            task = min(pending, key=most_urgent_first)
            return action("delegate_task", task_id=task["id"], to=task["required_role"])
        return _first(_request(role, view), self._query(role, view))

    def _engineer(self, role: str, view: dict[str, Any]) -> Action:
        return _first(_report(role, view), _resolve(role, view), _request(role, view), _propose(role, view),
                      self._query(role, view))

    def _data_analyst(self, role: str, view: dict[str, Any]) -> Action:
        return _first(_report(role, view), _resolve(role, view), _request(role, view), self._query(role, view))

    def _operations(self, role: str, view: dict[str, Any]) -> Action:
        return _first(_report(role, view), _resolve(role, view), self._approve(view), _request(role, view),
                      self._query(role, view))

    def _query(self, role: str, view: dict[str, Any]) -> Action | None:
        """Whether and where a role looks for hidden risks: an idle role looks, a busy one keeps working. The
        oracle overrides this with the ground truth."""
        return None if busy(role, view) else _look(view)

    def _approve(self, view: dict[str, Any]) -> Action | None:
        if not view["pending_requests"] or "approve_resource" not in view["legal_actions"]:
            return None
        last = view["last_query_step"]
        if last is None or view["step"] - last > RISK_CHECK_WINDOW:
            return self._query("operations", view) or _look(view)
        legal = view["legal_actions"]["approve_resource"]
        request = next((r for r in view["pending_requests"] if r["resource_type"] in legal["resource_type"]), None)
        if request is None:
            return None
        ceiling = min(request["amount"], view["policy"]["max_resource_approval"],
                      view["resources"][request["resource_type"]])
        amount = max((a for a in legal["amount"] if a <= ceiling), default=None)
        if amount is None:
            return None
        return action("approve_resource", amount=amount, resource_type=request["resource_type"])

    def _risk_compliance(self, role: str, view: dict[str, Any]) -> Action:
        unflagged = [r for r in view["risks"] if r["status"] == "detected"]
        if unflagged:
            risk = min(unflagged, key=most_severe_first)
            return action("raise_risk_flag", risk_id=risk["id"], description=risk["description"])
        if _waiting_events(view, "policy_change"):
            event = _waiting_events(view, "policy_change")[0]
            limit = event["policy"]["max_resource_approval"]
            return action("update_policy", max_resource_approval=limit,
                          note=f"Adopt '{event['title']}': approvals above {limit} need review.")
        open_plans = [p for p in view["plans"] if p["status"] == "open" and p["role"] != role]
        if open_plans:
            return action("accept_plan", plan_id=open_plans[0]["id"])
        return _first(self._query(role, view))

    def _oversight(self, role: str, view: dict[str, Any]) -> Action:
        offenders = [v["role"] for v in view["oversight_log"] if not v["audited"] and v["role"] != role]
        if offenders:
            return action("audit_agent", target_agent=offenders[0])
        return action("no_op")
