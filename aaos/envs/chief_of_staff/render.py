"""How the Space shows the Chief of Staff Arena (aaos.core.kit.Rendering): the calendar (days x slots, protected
blocks and double bookings highlighted, the slot being lived marked), the request queue, trust bars, and the end
report with the rubric, the drift markers revealed and what they cost (no-shows)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from aaos.core.html import card, chips, esc, humanize, items, pill, section
from aaos.envs.chief_of_staff.spec import ROLE, SLOTS

TRUST_WIDTH = {"low": 25, "medium": 55, "high": 85}


def _cell(cell: Mapping[str, Any], now: bool) -> str:
    booked, block = cell["booked"], cell["protected"]
    kind = "conflict" if len(booked) > 1 else "booked" if booked else "protected" if block else "free"
    parts = [f"<code>{esc(i)}</code>" for i in booked]
    if block:
        parts.append(f"<small>{esc(humanize(block))}</small>")
    marker = " aaos-cal-now" if now else ""
    title = "double booked" if kind == "conflict" else humanize(block) if block else kind
    return (f'<td class="aaos-cal-{kind}{" aaos-cal-guarded" if block and booked else ""}{marker}" '
            f'title="{html.escape(title)}">{" ".join(parts)}</td>')


def _calendar(view: Mapping[str, Any]) -> str:
    head = "".join(f"<th>{esc(humanize(s))}</th>" for s in SLOTS)
    now = view["now"]
    rows = []
    for row in view["calendar"]:
        cells = "".join(_cell(row["slots"][slot], row["day"] == now["day"] and slot == now["slot"]) for slot in SLOTS)
        rows.append(f'<tr data-day="{esc(row["day"])}"><th>Day {esc(row["day"])}</th>{cells}</tr>')
    legend = ('<p class="aaos-cal-legend"><span class="aaos-cal-booked">booked</span> '
              '<span class="aaos-cal-protected">protected</span> <span class="aaos-cal-conflict">double booked</span> '
              '<span class="aaos-cal-now">now</span></p>')
    return f'<table class="aaos-calendar"><tr><th></th>{head}</tr>{"".join(rows)}</table>{legend}'


def _request_row(r: Mapping[str, Any]) -> str:
    details = [f"from {esc(humanize(r['stakeholder']).lower())}", f"due day {esc(r['deadline_day'])}",
               f"{esc(r['duration'])} slot(s)"]
    if r["dependencies"]:
        details.append(f"after {esc(', '.join(r['dependencies']))}")
    if r["conflicts"]:
        details.append(f"contradicts {esc(', '.join(r['conflicts']))}")
    if r["booked"]:
        details.append(f"booked day {esc(r['booked']['day'])} {esc(r['booked']['slot'])}")
    if r["reopens_day"] is not None:
        details.append(f"reopens day {esc(r['reopens_day'])}")
    return (f'<span class="aaos-request" data-request="{html.escape(r["id"])}"><code>{esc(r["id"])}</code> '
            f"{pill(r['criticality'], r['criticality'])} {pill(r['status'], r['status'])} "
            f"{esc(r['title'])}<br><small>{' · '.join(details)}</small></span>")


def _trust_bars(view: Mapping[str, Any]) -> str:
    bars = []
    for who, s in view["stakeholders"].items():
        known = f"prefers {esc(s['known_slot'])}, {esc(s['known_tone'])}"
        if s["known_unavailable"]:
            known += f"; not the {esc(s['known_unavailable'])}"
        if s["awaiting_update"]:
            known += f" · {esc(s['awaiting_update'])} awaiting update"
        level = html.escape(s["trust"])
        bars.append(f'<div class="aaos-bar" data-stakeholder="{html.escape(who)}" data-trust="{level}">'
                    f'<b>{esc(humanize(who))}</b><span class="aaos-bar-track">'
                    f'<span class="aaos-bar-fill aaos-{level}" style="width:{TRUST_WIDTH[s["trust"]]}%">'
                    f"{level}</span></span><small>{known}</small></div>")
    return f'<div class="aaos-trust">{"".join(bars)}</div>'


def role_card(role: str, view: Mapping[str, Any], queued: Mapping[str, Any] | None) -> str:
    queue = [_request_row(r) for r in view["requests"]]
    reactions = [f"{pill(r['mood'], r['mood'])} {esc(humanize(r['stakeholder']))}: {esc(r['note'])} "
                 f"<small>step {esc(r['step'])}</small>" for r in reversed(view["reactions"])]
    drifts = (f"<p>{esc(view['drift_count'])} (at steps {esc(', '.join(map(str, view['drift_steps'])))}; who and "
              "what is revealed at the end)</p>" if view["drift_count"] else "<p>0</p>")
    body = (section("Request queue", items(queue, "No open requests."), len(queue))
            + section("Trust", _trust_bars(view))
            + section("Calendar", _calendar(view))
            + section("Reactions", items(reactions, "No reactions yet."), len(reactions))
            + section("Drifts so far", drifts))
    return card(role, view, queued, body)


def world(observation: Mapping[str, Any]) -> str:
    view = observation["agent_observations"][ROLE]
    now = view["now"]
    clock = f"<p>Day {esc(now['day'])} of {esc(now['days'])}, {esc(now['slot'] or 'over')}</p>"
    # the calendar and the trust bars take the view's whole width: beside another section they overflow into it
    return (f'<div class="aaos-world" id="aaos-world">{section("Now", clock)}'
            f'{section("Scores", chips(observation["partial_scores"]))}'
            f'{section("Calendar", _calendar(view), wide=True)}{section("Trust", _trust_bars(view), wide=True)}</div>')


def attention(observation: Mapping[str, Any]) -> str:
    view = observation["agent_observations"][ROLE]
    urgent = [r for r in view["requests"] if r["status"] == "open"
              and (r["criticality"] == "critical" or r["deadline_day"] <= view["now"]["day"])]
    return items([_request_row(r) for r in urgent], "") if urgent else ""


def report(state: Mapping[str, Any]) -> str:
    """The report's body (the page shows the score and how it adds up above it): the drift markers revealed, the
    no-shows, the requests left open, the violations with their penalties and the final trust."""
    drifts = [f'<span class="aaos-drift">step {esc(d["step"])}: {esc(humanize(d["stakeholder"]))} now prefers '
              f"{esc(d['aspect'])} {esc(d['value'])}</span>" for d in state["drifts"]]
    no_shows = [f"<code>{esc(r['id'])}</code> {esc(r['title'])} ({esc(humanize(r['stakeholder']))}, day "
                f"{esc(r['day'])})" for r in state["requests"] if r["no_show"]]
    left_open = [_request_row(r) for r in state["requests"] if r["status"] == "open"]
    violations = [f"{pill(v['severity'], v['severity'])} {esc(humanize(v['rule']))}: {esc(v['detail'])} "
                  f"<small>penalty {esc(v['penalty'])}</small>" for v in state["violations"]]
    trust = {s: round(t, 2) for s, t in state["trust"].items()}
    return ('<div class="aaos-world" id="aaos-report">'
            + section("Drift markers revealed", items(drifts, "No drift in this episode."), len(drifts))
            + section("No-shows (held in a slot its stakeholder had left)", items(no_shows, "None."), len(no_shows))
            + section("Requests left open", items(left_open, "None."), len(left_open))
            + section("Violations", items(violations, "None."), len(violations))
            + section("Final trust (exact)", chips(trust)) + "</div>")
