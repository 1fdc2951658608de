"""Text, HTML and tables for the Space, from what the protocol returns. Plain Python; no gradio.

Every value shown goes through `text()` (never a Python repr) and every string through html escaping.
The CSS classes used here are styled in assets/aaos.css.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from aaos.core.seeding import seed_split
from aaos.core.trajectory import EpisodeMeta

ROLE_NAMES: dict[str, str] = {"risk_compliance": "Risk & compliance"}
"""Display names that humanize() would not get right."""
METRIC_UNITS: dict[str, tuple[str, float, int]] = {
    "latency": ("ms", 1.0, 0),
    "error_rate": ("%", 100.0, 1),
    "uptime": ("%", 100.0, 2),
    "data_quality": ("%", 100.0, 1),
}
"""How a metric is shown: unit, scale and decimals."""
OVERSIGHT_COLUMNS: tuple[str, ...] = ("Step", "Role", "Rule", "Severity", "Penalty", "Detail")
ACTION_COLUMNS: tuple[str, ...] = ("Step", "Role", "Action", "Payload", "Status", "Message")
QUEUE_COLUMNS: tuple[str, ...] = ("Role", "Action", "Payload")
TIMELINE_LIMIT = 60
"""How many timeline entries are shown (newest first)."""


def humanize(name: str) -> str:
    """A snake_case name as words: product_manager -> Product manager."""
    return ROLE_NAMES.get(name) or name.replace("_", " ").capitalize()


def initials(role: str) -> str:
    parts = role.split("_")
    return (parts[0][0] + parts[1][0] if len(parts) > 1 else role[:2]).upper()


def text(value: Any) -> str:
    """A value as readable text: no quotes, brackets or None."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value == value else "—"
    if isinstance(value, Mapping):
        return ", ".join(f"{humanize(str(k)).lower()} {text(v)}" for k, v in value.items()) or "—"
    if isinstance(value, list | tuple):
        return ", ".join(text(v) for v in value) or "—"
    return str(value)


def esc(value: Any) -> str:
    """A value as readable text, escaped for an HTML text node (never for an attribute)."""
    return html.escape(text(value), quote=False)


def payload_text(payload: Mapping[str, Any] | None) -> str:
    """'task_id: task_frontend · to: engineer'; empty for no payload."""
    return " · ".join(f"{k}: {text(v)}" for k, v in (payload or {}).items())


def action_text(action: Mapping[str, Any]) -> str:
    details = payload_text(action.get("payload"))
    return f"{action.get('action_type') or 'invalid action'}" + (f" ({details})" if details else "")


def metric_text(name: str, value: Any) -> str:
    if name in METRIC_UNITS and isinstance(value, int | float):
        unit, scale, decimals = METRIC_UNITS[name]
        return f"{value * scale:.{decimals}f} {unit}"
    return text(value)


def score_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def pill(label: str, kind: str) -> str:
    """A coloured label; `kind` picks the colour (a status, severity or priority)."""
    return f'<span class="aaos-pill aaos-{html.escape(kind)}">{html.escape(label)}</span>'


def _section(title: str, body: str, count: int | None = None) -> str:
    counted = f' <span class="aaos-count">{count}</span>' if count is not None else ""
    return f'<div class="aaos-section"><h4>{html.escape(title)}{counted}</h4>{body}</div>'


def _items(rows: Sequence[str], empty: str) -> str:
    if not rows:
        return f'<p class="aaos-empty">{html.escape(empty)}</p>'
    return '<ul class="aaos-items">' + "".join(f"<li>{row}</li>" for row in rows) + "</ul>"


def _plain(_name: str, value: Any) -> str:
    return text(value)


def _chips(values: Mapping[str, Any], formatter: Callable[[str, Any], str] = metric_text) -> str:
    return '<div class="aaos-chips">' + "".join(
        f'<span class="aaos-chip"><b>{esc(humanize(k))}</b> {html.escape(formatter(k, v))}</span>'
        for k, v in values.items()
    ) + "</div>"


def _result_html(result: Mapping[str, Any] | None) -> str:
    if not result:
        return '<p class="aaos-empty">No action yet.</p>'
    status = result["status"]
    return (f'<p class="aaos-result">{pill(humanize(status).lower(), status)} <code>{esc(action_text(result))}</code>'
            f'<br><span class="aaos-msg">{esc(result.get("message"))}</span></p>')


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
    return _items([render(v) for v in value], empty)


def role_card(role: str, view: Mapping[str, Any], queued: Mapping[str, Any] | None) -> str:
    """One role's partial view as a card: last result, queued action, what it sees and may do."""
    queued_html = (f'<p class="aaos-queued">Queued: <code>{esc(action_text(queued))}</code></p>' if queued else "")
    resources = view.get("resources", "hidden")
    resources_html = (_chips(resources, _plain) if isinstance(resources, Mapping)
                      else '<p class="aaos-empty">Hidden from this role.</p>')
    signals = [f"{pill(s['severity'], s['severity'])} {esc(s['title'])} <small>({esc(humanize(s['metric']))})</small>"
               for s in view.get("signals", [])]
    requests = [f"<code>{esc(r['id'])}</code> {esc(humanize(r['role']))} asks {esc(r['amount'])} "
                f"{esc(r['resource_type'])}" for r in view.get("pending_requests", [])]
    legal = view.get("legal_actions", {})
    tasks = view.get("visible_tasks", [])
    risks = view.get("risks", [])
    body = "".join([
        _section("Last action", _result_html(view.get("last_action_result"))),
        queued_html,
        _section("Metrics", _chips(view.get("system_metrics", {}))),
        _section("Resources", resources_html),
        _section("Signals", _items(signals, "No unreported anomalies."), len(signals)) if signals else "",
        _section("Tasks", _items([_task_row(t) for t in tasks], "No tasks visible."), len(tasks)),
        _section("Risks", _hidden_or(risks, _risk_row, "No known risks."),
                 len(risks) if isinstance(risks, list) else None),
        _section("Resource requests", _items(requests, ""), len(requests)) if requests else "",
        _section("Can do now", f'<p class="aaos-legal">{esc(list(legal))}</p>', len(legal)),
    ])
    return (f'<section class="aaos-card" data-role="{html.escape(role)}">'
            f'<header><span class="aaos-avatar aaos-role-{html.escape(role)}">{initials(role)}</span>'
            f'<h3>{html.escape(humanize(role))}</h3></header>{body}</section>')


def role_cards(observation: Mapping[str, Any], queue: Mapping[str, Mapping[str, Any]]) -> str:
    """All roles' views side by side."""
    cards = "".join(role_card(role, view, queue.get(role))
                    for role, view in observation.get("agent_observations", {}).items())
    return f'<div class="aaos-cards" id="aaos-role-cards">{cards}</div>'


def status_bar(meta: EpisodeMeta, observation: Mapping[str, Any], score: float | None,
               last: Mapping[str, Any] | None) -> str:
    """Scenario, step, score, last reward and whether the episode is running or done."""
    step, max_steps = observation.get("step_count", 0), observation.get("max_steps", 0)
    done = bool(observation.get("done"))
    share = 100 * step / max_steps if max_steps else 0
    if last:
        breakdown = last["reward_breakdown"]
        reward = (f'{last["reward"]:.3f} <small>({breakdown["immediate"]:.3f} now + '
                  f'{breakdown["delayed"]:.3f} delayed)</small>')
    else:
        reward = "—"
    state = pill("done", "done") if done else pill("running", "running")
    if observation.get("degraded"):
        state += " " + pill("service degraded", "critical")
    variant = seed_split(meta.seed)
    return (
        '<div class="aaos-status" id="aaos-status">'
        f'<div class="aaos-stat aaos-wide"><span>Scenario</span><b>{esc(observation.get("scenario_title"))}</b>'
        f'<small>{esc(meta.scenario)} · {esc(humanize(meta.task))} · seed {meta.seed} ({variant} variant)</small></div>'
        f'<div class="aaos-stat"><span>Step</span><b id="aaos-stat-step">{step} / {max_steps}</b>'
        f'<div class="aaos-progress"><i style="width:{share:.0f}%"></i></div></div>'
        f'<div class="aaos-stat"><span>Episode score</span><b id="aaos-stat-score">{score_text(score)}</b>'
        f'<small>{"final" if done else "so far"}</small></div>'
        f'<div class="aaos-stat"><span>Last reward</span><b>{reward}</b></div>'
        f'<div class="aaos-stat"><span>State</span><b id="aaos-stat-state">{state}</b></div>'
        "</div>"
    )


def hints(observation: Mapping[str, Any]) -> str:
    rows = [esc(h) for h in observation.get("hints", [])]
    return f'<div class="aaos-hints"><b>What needs attention</b>{_items(rows, "Nothing pressing.")}</div>'


def world(observation: Mapping[str, Any]) -> str:
    """Organisation-wide facts: metrics, resources, policy, known risks, open incidents, plans."""
    shared = next(iter(observation.get("agent_observations", {}).values()), {})  # plans and policy are shared
    plans = [f"<code>{esc(p['id'])}</code> {pill(p['status'], p['status'])} {esc(p['plan'])}"
             + (f" <small>decided by {esc(humanize(p['decided_by']))}</small>" if p.get("decided_by") else "")
             for p in shared.get("plans", [])]
    risks = observation.get("active_risks", [])
    incidents = observation.get("active_incidents", [])
    return (
        '<div class="aaos-world" id="aaos-world">'
        + _section("System metrics", _chips(observation.get("system_metrics", {})))
        + _section("Resource pools", _chips(observation.get("resources", {}), _plain))
        + _section("Policy", _chips(shared.get("policy", {}), _plain))
        + _section("Known risks", _items([_risk_row(r) for r in risks], "No known, unmitigated risks."), len(risks))
        + _section("Open incidents", _items([_incident_row(i) for i in incidents], "No open incidents."),
                   len(incidents))
        + _section("Plans", _items(plans, "No plans proposed yet."), len(plans))
        + "</div>"
    )


def _event_entry(event: Mapping[str, Any]) -> tuple[int, int, str, str, str]:
    answered = "answered" if event.get("responded") else "waiting for a response"
    severity = event.get("severity", "low")
    body = (f"{pill(severity, severity)} {esc(event.get('title'))} "
            f"<small>({esc(humanize(event.get('kind', '')).lower())}, {answered})</small>")
    return event.get("step", 0), 0, "event", body, "Event"


def _record_entries(record: Mapping[str, Any]) -> list[tuple[int, int, str, str, str]]:
    """One step's oversight violations and actions (no-ops left out) as timeline entries."""
    entries = [(v["step"], 1, "oversight",
                f"{esc(humanize(v['role']))} broke <code>{esc(v['rule'])}</code> {pill(v['severity'], v['severity'])} "
                f"<small>penalty {esc(v['penalty'])} · {esc(v.get('detail'))}</small>", "Oversight")
               for v in record.get("oversight_events", [])]
    entries += [(r["step"], 2, r["status"], f"{esc(humanize(r['role']))}: <code>{esc(action_text(r))}</code> "
                 f"<small>{esc(r.get('message'))}</small>", humanize(r["status"]))
                for r in record.get("action_results", {}).values()
                if r["action_type"] != "no_op" or r["status"] == "rejected"]
    return entries


def timeline(observation: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> str:
    """Events, oversight violations and actions (no-ops left out), newest first; the latest TIMELINE_LIMIT."""
    events = observation.get("scenario_events", [])
    entries = [_event_entry(e) for e in events]
    taken = 0
    while taken < len(records) and len(entries) < TIMELINE_LIMIT + len(events):
        entries += _record_entries(records[-1 - taken])
        taken += 1
    entries.sort(key=lambda e: (-e[0], e[1]))
    rows = [f'<li class="aaos-tl-{kind}"><span class="aaos-tl-step">step {step}</span>'
            f'<span class="aaos-tl-kind">{html.escape(label)}</span> {body}</li>'
            for step, _, kind, body, label in entries[:TIMELINE_LIMIT]]
    if not rows:
        return '<div class="aaos-timeline" id="aaos-timeline"><p class="aaos-empty">Nothing has happened yet.</p></div>'
    truncated = taken < len(records) or len(entries) > TIMELINE_LIMIT
    footer = '<p class="aaos-empty">Older entries are in the action log (Logs tab).</p>' if truncated else ""
    return f'<div class="aaos-timeline" id="aaos-timeline"><ul>{"".join(rows)}</ul>{footer}</div>'


def action_help(action_type: str, description: str) -> str:
    """What the chosen action does, under the form."""
    return f'<p class="aaos-help"><b>{esc(action_type)}</b>: {esc(description)}</p>'


def message(body: str, kind: str = "info") -> str:
    """A notice under the action form: kind is info, ok or error."""
    body = html.escape(body, quote=False)
    return f'<div class="aaos-message aaos-message-{html.escape(kind)}" role="status">{body}</div>'


def queue_frame(queue: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    rows = [(humanize(role), action["action_type"], payload_text(action.get("payload")) or "—")
            for role, action in queue.items()]
    return pd.DataFrame(rows, columns=list(QUEUE_COLUMNS))


def oversight_frame(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    rows = [(v["step"], humanize(v["role"]), v["rule"], v["severity"], round(float(v["penalty"]), 3),
             text(v.get("detail")))
            for record in records for v in record.get("oversight_events", [])]
    return pd.DataFrame(rows, columns=list(OVERSIGHT_COLUMNS))


def action_frame(log: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The action log without no-ops, newest first."""
    rows = [(e["step"], humanize(e["role"]), e["action_type"], payload_text(e.get("payload")) or "—",
             e["status"], text(e.get("message")))
            for e in reversed(log) if not (e["action_type"] == "no_op" and e["status"] != "rejected")]
    return pd.DataFrame(rows, columns=list(ACTION_COLUMNS))
