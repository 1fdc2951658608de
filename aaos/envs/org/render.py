"""How the Space shows the organisation (aaos.core.kit.Rendering): role cards, the world panel, what needs
attention and the end-of-episode report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aaos.core.html import card as _card
from aaos.core.html import chips, esc, humanize, items, pill, section, text
from aaos.envs.org.oversight import AUDIT_DISCOUNT

METRIC_UNITS: dict[str, tuple[str, float, int]] = {
    "latency": ("ms", 1.0, 0),
    "error_rate": ("%", 100.0, 1),
    "uptime": ("%", 100.0, 2),
    "data_quality": ("%", 100.0, 1),
}
"""How a metric is shown: unit, scale and decimals."""


def metric_text(name: str, value: Any) -> str:
    if name in METRIC_UNITS and isinstance(value, int | float):
        unit, scale, decimals = METRIC_UNITS[name]
        return f"{value * scale:.{decimals}f} {unit}"
    return text(value)


def _task_row(task: Mapping[str, Any]) -> str:
    details = [f"owner {esc(task.get('owner'))}" if task.get("owner") else "no owner",
               f"{text(task.get('effort_remaining'))} effort left", f"due step {esc(task.get('deadline_step'))}"]
    if task.get("blocked_on"):
        details.append(f"blocked on {esc(task['blocked_on'])}")
    return (f"<code>{esc(task['id'])}</code> {pill(humanize(task['status']).lower(), task['status'])} "
            f"{pill(task['priority'], task['priority'])}<br><small>{' · '.join(details)}</small>")


def _risk_row(risk: Mapping[str, Any]) -> str:
    return (f"<code>{esc(risk['id'])}</code> {pill(risk['severity'], risk['severity'])} "
            f"{pill(risk['status'], risk['status'])}<br><small>{esc(risk.get('description'))}</small>")


def _incident_row(incident: Mapping[str, Any]) -> str:
    return (f"<code>{esc(incident['id'])}</code> {pill(incident['severity'], incident['severity'])}<br>"
            f"<small>{esc(incident.get('title'))} · opened step {esc(incident.get('opened_step'))} · "
            f"{esc(incident.get('effort_remaining'))} effort left · resolvers "
            f"{esc([humanize(r) for r in incident.get('resolver_roles', [])])}</small>")


def _hidden_or(value: Any, render: Any, empty: str) -> str:
    if value == "hidden":
        return '<p class="aaos-empty">Hidden from this role.</p>'
    return items([render(v) for v in value], empty)


def role_card(role: str, view: Mapping[str, Any], queued: Mapping[str, Any] | None) -> str:
    """One role's partial view: metrics, resources, signals, tasks, risks and requests as it sees them."""
    resources = view.get("resources", "hidden")
    resources_html = (chips(resources) if isinstance(resources, Mapping)
                      else '<p class="aaos-empty">Hidden from this role.</p>')
    signals = [f"{pill(s['severity'], s['severity'])} {esc(s['title'])} <small>({esc(humanize(s['metric']))})</small>"
               for s in view.get("signals", [])]
    requests = [f"<code>{esc(r['id'])}</code> {esc(humanize(r['role']))} asks {esc(r['amount'])} "
                f"{esc(r['resource_type'])}" for r in view.get("pending_requests", [])]
    tasks = view.get("visible_tasks", [])
    completed = [f"<code>{esc(task_id)}</code> quality {text(quality)}"
                 for task_id, quality in view.get("completed_tasks", {}).items()]
    risks = view.get("risks", [])
    body = "".join([
        section("Metrics", chips(view.get("system_metrics", {}), metric_text)),
        section("Resources", resources_html),
        section("Signals", items(signals, "No unreported anomalies."), len(signals)) if signals else "",
        section("Tasks", items([_task_row(t) for t in tasks], "No open tasks visible."), len(tasks)),
        section("Completed", items(completed, ""), len(completed)) if completed else "",
        section("Risks", _hidden_or(risks, _risk_row, "No known risks."),
                len(risks) if isinstance(risks, list) else None),
        section("Resource requests", items(requests, ""), len(requests)) if requests else "",
    ])
    return _card(role, view, queued, body)


def attention(observation: Mapping[str, Any]) -> str:
    """The observation's hints: what the organisation should look at now."""
    rows = [esc(h) for h in observation.get("hints", [])]
    return f'<div class="aaos-hints"><b>What needs attention</b>{items(rows, "Nothing pressing.")}</div>'


def world(observation: Mapping[str, Any]) -> str:
    """Organisation-wide facts: metrics, resources, policy, known risks, open incidents, plans."""
    shared = next(iter(observation.get("agent_observations", {}).values()), {})  # plans and policy are shared
    plans = [f"<code>{esc(p['id'])}</code> {pill(p['status'], p['status'])} {esc(p['plan'])}"
             for p in shared.get("plans", [])]
    plans += [f"<code>{esc(plan_id)}</code> {pill(p['status'], p['status'])} "
              f"<small>decided by {esc(humanize(p['decided_by']))}</small>"
              for plan_id, p in shared.get("decided_plans", {}).items()]
    risks = observation.get("active_risks", [])
    incidents = observation.get("active_incidents", [])
    return (
        '<div class="aaos-world" id="aaos-world">'
        + section("System metrics", chips(observation.get("system_metrics", {}), metric_text))
        + section("Resource pools", chips(observation.get("resources", {})))
        + section("Policy", chips(shared.get("policy", {})))
        + section("Known risks", items([_risk_row(r) for r in risks], "No known, unmitigated risks."), len(risks))
        + section("Open incidents", items([_incident_row(i) for i in incidents], "No open incidents."),
                len(incidents))
        + section("Plans", items(plans, "No plans proposed yet."), len(plans))
        + "</div>"
    )


def _arrived_work(state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The scenario's tasks that arrived by now (risk work is counted under risks)."""
    return [w for w in state["work"] if w["risk_id"] is None and w["arrives"] <= state["step"]]


def _noticeable_risks(state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The risks someone could have noticed by now (the others never showed themselves)."""
    return [r for r in state["risks"] if r["definition"]["noticeable_from"] <= state["step"]]


def report(state: Mapping[str, Any]) -> str:
    """The end-of-episode report's body (the page shows the score and how it adds up above it): what was
    delivered and what went wrong, the counts out of what arrived or could be noticed, as the missed list is; then
    the violations with the penalty each adds to the score's divisor."""
    work = _arrived_work(state)
    delivered = [w for w in work if w["status"] == "completed"]
    risks = _noticeable_risks(state)
    incidents = state["incidents"]
    outcome = {
        "Tasks delivered": f"{len(delivered)} of {len(work)}",
        "On time": str(sum(w["completed_step"] <= w["deadline"] for w in delivered)),
        "Risks mitigated": f"{sum(r['status'] == 'mitigated' for r in risks)} of {len(risks)}",
        "Risks escalated": str(sum(r["escalated_step"] is not None for r in state["risks"])),
        "Incidents resolved": f"{sum(i['resolved_step'] is not None for i in incidents)} of {len(incidents)}",
        "Violations": str(len(state["violations"])),
    }
    missed = missed_items(state)
    return (
        '<div class="aaos-world" id="aaos-report">'
        + section("Outcome", chips(outcome))
        + section("What the organisation missed", items(missed, "Nothing: every task that arrived delivered on "
                                                                "time, every risk that could be noticed "
                                                                "mitigated before it escalated, every incident "
                                                                "resolved."),
                  len(missed))
        + section("Violations and their penalty", violation_penalties(state["violations"], state["penalty"]),
                  len(state["violations"]))
        + "</div>"
    )


def violation_penalties(violations: Sequence[Mapping[str, Any]], applied: float) -> str:
    """The violations by rule with the penalty each rule adds (an audited violation counts AUDIT_DISCOUNT of its
    penalty, as oversight.total_penalty counts it) and their sum, the penalty the score is divided by."""
    if not violations:
        return '<p class="aaos-empty">No oversight violations.</p>'
    rules: dict[str, list[Mapping[str, Any]]] = {}
    for v in violations:
        rules.setdefault(v["rule"], []).append(v)
    rows = []
    for rule, found in sorted(rules.items(), key=lambda kv: -sum(v["penalty"] for v in kv[1])):
        audited = sum(bool(v["audited"]) for v in found)
        counted = sum(v["penalty"] * (AUDIT_DISCOUNT if v["audited"] else 1.0) for v in found)
        detail = f"{len(found)} x {found[0]['penalty']:g}" + (f", {audited} audited (count {AUDIT_DISCOUNT:g})"
                                                             if audited else "")
        rows.append(f"<code>{esc(rule)}</code> {pill(found[0]['severity'], found[0]['severity'])} "
                    f"<small>{esc(detail)}</small> = <b>{counted:.4f}</b>")
    return (items(rows, "") + f"<p>Penalty: the sum, <b>{applied:.4f}</b> (an audited violation counts "
            f"{AUDIT_DISCOUNT:g} of its penalty).</p>")


def missed_items(state: Mapping[str, Any]) -> list[str]:
    """What the episode left undone (HTML rows): tasks not delivered or delivered late, risks that could be noticed
    and were never mitigated or escalated before they were, incidents still open."""
    rows = []
    for w in _arrived_work(state):
        if w["status"] != "completed":
            rows.append(f"Task <code>{esc(w['id'])}</code> {esc(humanize(w['name']))} not delivered "
                        f"(deadline step {w['deadline']})")
        elif w["completed_step"] > w["deadline"]:
            rows.append(f"Task <code>{esc(w['id'])}</code> {esc(humanize(w['name']))} delivered late (step "
                        f"{w['completed_step']}, deadline {w['deadline']})")
    rows += [f"Risk <code>{esc(r['id'])}</code> {esc(humanize(r['definition']['name']))} never mitigated"
             + (" (it escalated into an incident)" if r["escalated_step"] is not None else "")
             for r in _noticeable_risks(state) if r["status"] != "mitigated"]
    rows += [f"Risk <code>{esc(r['id'])}</code> {esc(humanize(r['definition']['name']))} escalated into an "
             f"incident at step {r['escalated_step']} before it was mitigated"
             for r in state["risks"] if r["status"] == "mitigated" and r["escalated_step"] is not None]
    rows += [f"Incident <code>{esc(i['id'])}</code> {esc(i['definition']['title'])} still open"
             for i in state["incidents"] if i["resolved_step"] is None]
    return rows
