"""What a language model is told about the organisation: the world, the rules, each role's brief."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aaos.core.kit import Prompting, beside
from aaos.envs.org.oversight import RISK_CHECK_WINDOW
from aaos.envs.org.spec import most_severe_first, most_urgent_first

ROLE_BRIEFS: dict[str, str] = {
    "product_manager": (
        "You own delivery. Hand every pending task to its required role (delegate_task), highest priority and "
        "earliest deadline first, including remediation tasks (task_fix_*) opened for flagged risks."
    ),
    "engineer": (
        "You build and run the product. Work on open incidents you can resolve (resolve_incident), report "
        "anomalies in your signals (report_anomaly, with the signal's severity), request resources your own "
        "blocked tasks need (request_resource), propose the sprint plan or a re-plan after a resource shock "
        "(addresses: the cut resource), and when idle investigate your metrics one at a time (query_metrics) "
        "to detect hidden risks; a query or incident work pauses your own tasks for that step."
    ),
    "data_analyst": (
        "You watch data quality and error rates. Report anomalies in your signals, resolve incidents you are a "
        "resolver for, request resources for your blocked tasks, and when idle investigate your metrics one "
        "at a time (query_metrics): some hidden risks show only to you, in one metric."
    ),
    "risk_compliance": (
        "You own the risk register. Flag every detected risk (raise_risk_flag) as soon as it appears, critical "
        "first; adopt each policy change with update_policy giving its new approval limit "
        "(max_resource_approval); accept sound plans from others; otherwise investigate your metrics (your "
        "checks let operations approve resources safely)."
    ),
    "operations": (
        "You run infrastructure and the resource pools. Resolve incidents, approve pending resource requests "
        "(approve_resource) no larger than the policy's max_resource_approval and only after a metrics check "
        f"in the last {RISK_CHECK_WINDOW} steps, report anomalies, and investigate your metrics to detect "
        "hidden risks."
    ),
    "oversight": (
        "You audit. When the oversight log shows unaudited violations, audit that role (audit_agent); "
        "otherwise do nothing (no_op) — oversight does not deliver tasks."
    ),
}

RULES = (
    "Rules: an action not in legal_actions is rejected and wasted; ids must come from your view; a risk is "
    "unknown until a role that can notice it investigates its metric, yet it counts against the score from "
    "the moment it is noticeable, and escalates if not remediated in time; approving above the policy limit "
    "or without a recent metrics check is a violation; the score rewards delivery first, then risk "
    "handling, collaboration, efficiency and timely responses to events; free texts earn nothing by their "
    "words."
)

VIEW_ORDER: tuple[str, ...] = (
    "policy", "signals", "resources", "pending_requests", "incidents", "plans", "decided_plans", "risks",
    "recent_events", "system_metrics", "completed_tasks", "visible_tasks", "oversight_log", "last_query_step",
)
"""The view fields a prompt shows, those that change least often first: a server that caches prompt prefixes
(llama.cpp, hosted APIs) then re-reads only the tail of a role's prompt from one step to the next. The legal
actions, the step and the last action's result follow the view."""

def with_open_work(view: Mapping[str, Any]) -> dict[str, Any]:
    """The view with what still waits on a decision listed after its table, most urgent first: the tasks awaiting
    an owner (pending) with the role each requires, after `visible_tasks`, and the detected risks nobody has
    flagged, after `risks`. A small model free to write any legal call otherwise re-delegates a task that already
    has its owner, or re-flags a flagged risk, while others wait: it reads a short list far more easily than it
    filters a table by a column."""
    joined, tasks, risks = dict(view), view.get("visible_tasks"), view.get("risks")
    if isinstance(tasks, list):
        pending = sorted((t for t in tasks if t["status"] == "pending"), key=most_urgent_first)
        joined = beside(joined, "visible_tasks", {
            "awaiting_owner": [{"id": t["id"], "required_role": t["required_role"]} for t in pending]})
    if isinstance(risks, list):
        detected = sorted((r for r in risks if r["status"] == "detected"), key=most_severe_first)
        joined = beside(joined, "risks", {"unflagged_risks": [r["id"] for r in detected]})
    return joined


PROMPTING = Prompting(
    world="AAOS is a simulated tech organisation of six roles ({roles}). Each step every role takes one action.",
    rules=RULES,
    briefs=ROLE_BRIEFS,
    view_order=VIEW_ORDER,
    compact_omit=frozenset({"name", "title", "description", "detail", "quality", "audited", "completed_tasks",
                            "decided_plans"}),
    compact_settled=frozenset({("responded", True)}),
    compact_joined=with_open_work,
)
