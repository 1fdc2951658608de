"""Text, HTML and tables for the Space, from what the protocol returns. Plain Python; no gradio.

Every value shown goes through `text()` (never a Python repr) and every string through html escaping.
The CSS classes used here are styled in assets/aaos.css.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from aaos.bench.report import GATE_MARGIN, GateResult
from aaos.core.seeding import seed_split
from aaos.core.trajectory import EpisodeMeta
from aaos.ui.agents import ModelUsage

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
LEADERBOARD_COLUMNS: tuple[str, ...] = ("#", "Policy", "Split", "Episodes", "Mean score", "95 % CI", "Success",
                                        "Invalid actions", "Hard violations per episode")
"""The leaderboard's columns (episode times and the rest are in the downloadable CSV)."""
MODEL_COLUMNS: tuple[str, ...] = ("Fallbacks", "Tokens", "Latency / call")
"""Leaderboard columns shown only when some policy called a model."""
MODES: dict[str, str] = {"per_role": "per role", "joint": "joint"}
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


def note(body: str, kind: str = "info") -> str:
    """A short line of help under a control: kind is info or error."""
    return f'<p class="aaos-help aaos-help-{html.escape(kind)}">{html.escape(body, quote=False)}</p>'


def _stat(title: str, value: str, detail: str) -> str:
    return (f'<div class="aaos-stat"><span>{html.escape(title)}</span><b>{html.escape(value)}</b>'
            f"<small>{html.escape(detail)}</small></div>")


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"


def model_usage(usage: ModelUsage | None) -> str:
    """A model-backed run's calls, fallbacks, tokens and latency: totals, and what the latest step used."""
    if usage is None:
        return ""
    total, step = usage.total, usage.step
    decided = total["decisions"]
    fallbacks = decided["secondary"] + decided["champion"]
    step_fallbacks = step["decisions"]["secondary"] + step["decisions"]["champion"]
    tokens = total["prompt_tokens"] + total["completion_tokens"]
    step_tokens = step["prompt_tokens"] + step["completion_tokens"]
    step_latency = step["latency_s"] / step["calls"] if step["calls"] else None
    boxes = [
        _stat("Model", usage.model, f"{MODES.get(usage.mode, usage.mode)} · last step {usage.step_s:.1f} s"),
        _stat("Model calls", str(total["calls"]),
              f"{total['failed_calls']} failed · {total['http_retries']} retried · {total['repairs']} repaired · "
              f"last step {step['calls']}"),
        _stat("Fallbacks", f"{fallbacks} of {sum(decided.values())} actions",
              f"secondary model {decided['secondary']} · champion {decided['champion']} · last step "
              f"{step_fallbacks}"),
        _stat("Tokens", f"{tokens:,}", f"{total['prompt_tokens']:,} in + {total['completion_tokens']:,} out · "
                                       f"last step {step_tokens:,}"),
        _stat("Latency", _seconds(total["mean_latency_s"]), f"per call · last step {_seconds(step_latency)}"),
    ]
    reason = total.get("last_error")
    why = f'<p class="aaos-usage-error">Last fallback: {html.escape(reason)}</p>' if reason else ""
    return f'<div class="aaos-status aaos-usage" id="aaos-usage">{"".join(boxes)}</div>{why}'


def bench_status(finished: int, total: int, body: str, kind: str = "info") -> str:
    """A line saying what the benchmark is doing, with its progress (episodes finished of total) if it runs."""
    count = f'<b id="aaos-bench-count">{finished} / {total} episodes</b> ' if total else ""
    bar = f'<div class="aaos-progress"><i style="width:{100 * finished / total:.0f}%"></i></div>' if total else ""
    return (f'<div class="aaos-message aaos-message-{html.escape(kind)} aaos-bench-status" role="status">'
            f"{count}{html.escape(body, quote=False)}{bar}</div>")


def _share(value: float) -> str:
    return f"{100 * value:.0f} %"


def _model_cells(row: Mapping[str, Any]) -> tuple[str, str, str]:
    if row["mean_call_latency_s"] is None:  # this policy made no model calls
        return "—", "—", "—"
    return _share(row["fallback_rate"]), f"{row['tokens']:,}", _seconds(row["mean_call_latency_s"])


def leaderboard_cells(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The ranked summary rows (best first within each split) as column names and cell texts; the model
    columns (MODEL_COLUMNS) only if some policy called a model."""
    models = any(row["mean_call_latency_s"] is not None for row in rows)
    cells, rank, split = [], 0, None
    for row in rows:
        rank, split = (rank + 1, split) if row["split"] == split else (1, row["split"])
        cells.append([
            str(rank), row["policy"], row["split"], str(row["episodes"]), f"{row['mean_score']:.3f}",
            f"{row['ci_low']:.3f}\u2013{row['ci_high']:.3f}", _share(row["success_rate"]),
            f"{100 * row['invalid_action_rate']:.1f} %", f"{row['hard_violations_per_episode']:.2f}",
            *(_model_cells(row) if models else ()),
        ])
    return [*LEADERBOARD_COLUMNS, *(MODEL_COLUMNS if models else ())], cells


def leaderboard(rows: Sequence[Mapping[str, Any]]) -> str:
    """The leaderboard as an HTML table, one group of rows per split with its best policy first."""
    if not rows:
        return '<p class="aaos-empty" id="aaos-board">No results yet: press Run benchmark.</p>'
    columns, cells = leaderboard_cells(rows)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for row in cells:
        rank, policy, split, *rest = (html.escape(cell) for cell in row)
        body.append(f'<tr class="aaos-rank-{rank}"><td>{rank}</td><td><b>{policy}</b></td>'
                    f'<td>{pill(split, split)}</td>' + "".join(f"<td>{cell}</td>" for cell in rest) + "</tr>")
    return (f'<div class="aaos-board-wrap"><table class="aaos-board" id="aaos-board"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def gate_verdict(candidate: str, result: GateResult | str) -> str:
    """The promotion gate's verdict for `candidate` against the champion with its reasons, or why it has none."""
    title = f"<h4>Promotion gate: {esc(candidate)} vs the champion</h4>"
    rule = (f'<p class="aaos-help">On the holdout split, a candidate is promoted only if its mean score is at most '
            f"{GATE_MARGIN:.2f} below the champion's and its hard violations per episode do not rise.</p>")
    if isinstance(result, str):
        return f'<div class="aaos-gate" id="aaos-gate-verdict">{title}<p>{esc(result)}</p>{rule}</div>'
    kind = "applied" if result.verdict == "PROMOTE" else "rejected"
    verdict = pill(result.verdict.replace("_", " ").lower(), kind)
    return (f'<div class="aaos-gate" id="aaos-gate-verdict">{title}<p>{verdict}</p>'
            f'{_items([esc(r) for r in result.reasons], "")}{rule}</div>')
