"""How the Space shows the Chief of Staff Arena (aaos.core.kit.Rendering): the calendar (days x slots, protected
blocks and double bookings highlighted), the request queue, trust bars, and the end report with the rubric and the
drift markers revealed."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from aaos.core.html import card, chips, esc, humanize, items, pill, section
from aaos.envs.chief_of_staff.spec import ROLE, SLOTS

TRUST_WIDTH = {"low": 25, "medium": 55, "high": 85}


def _calendar(view: Mapping[str, Any]) -> str:
    head = "".join(f"<th>{esc(humanize(s))}</th>" for s in SLOTS)
    rows = []
    for row in view["calendar"]:
        cells = []
        for slot in SLOTS:
            cell = row["slots"][slot]
            kind = "conflict" if len(cell["booked"]) > 1 else "protected" if cell["protected"] else (
                "booked" if cell["booked"] else "free")
            label = esc(", ".join(cell["booked"]) or (humanize(cell["protected"]) if cell["protected"] else ""))
            cells.append(f'<td class="aaos-cal-{kind}">{label}</td>')
        rows.append(f"<tr><th>Day {esc(row['day'])}</th>{''.join(cells)}</tr>")
    return f'<table class="aaos-calendar"><tr><th></th>{head}</tr>{"".join(rows)}</table>'


def _request_row(r: Mapping[str, Any]) -> str:
    details = [f"from {esc(humanize(r['stakeholder']).lower())}", f"due day {esc(r['deadline_day'])}",
               f"{esc(r['duration'])} slot(s)"]
    if r["dependencies"]:
        details.append(f"after {esc(r['dependencies'])}")
    if r["conflicts"]:
        details.append(f"contradicts {esc(r['conflicts'])}")
    if r["booked"]:
        details.append(f"booked day {esc(r['booked']['day'])} {esc(r['booked']['slot'])}")
    return (f"<code>{esc(r['id'])}</code> {pill(r['criticality'], r['criticality'])} {pill(r['status'], r['status'])} "
            f"{esc(r['title'])}<br><small>{' · '.join(details)}</small>")


def _trust_bars(view: Mapping[str, Any]) -> str:
    bars = []
    for who, s in view["stakeholders"].items():
        width = TRUST_WIDTH[s["trust"]]
        bars.append(f'<div class="aaos-bar"><b>{esc(humanize(who))}</b> '
                    f'<span class="aaos-bar-fill aaos-{html.escape(s["trust"])}" style="width:{width}%">'
                    f'{esc(s["trust"])}</span> <small>prefers {esc(s["known_slot"])}, {esc(s["known_tone"])}'
                    f'{" · " + esc(s["awaiting_update"]) + " awaiting update" if s["awaiting_update"] else ""}'
                    f"</small></div>")
    return "".join(bars)


def role_card(role: str, view: Mapping[str, Any], queued: Mapping[str, Any] | None) -> str:
    queue = [_request_row(r) for r in view["requests"]]
    reactions = [f"{pill(r['mood'], r['mood'])} {esc(humanize(r['stakeholder']))}: {esc(r['note'])} "
                 f"<small>step {esc(r['step'])}</small>" for r in reversed(view["reactions"])]
    body = (section("Requests", items(queue, "No open requests."), len(queue))
            + section("Trust", _trust_bars(view))
            + section("Reactions", items(reactions, "No reactions yet."), len(reactions))
            + section("Drifts so far", f"<p>{esc(view['drift_count'])}</p>"))
    return card(role, view, queued, body)


def world(observation: Mapping[str, Any]) -> str:
    view = observation["agent_observations"][ROLE]
    now = view["now"]
    clock = f"<p>Day {esc(now['day'])} of {esc(now['days'])}, {esc(now['slot'])}</p>"
    return (f'<div class="aaos-world" id="aaos-world">{section("Now", clock)}'
            f'{section("Calendar", _calendar(view))}{section("Scores", chips(observation["partial_scores"]))}</div>')


def attention(observation: Mapping[str, Any]) -> str:
    view = observation["agent_observations"][ROLE]
    urgent = [r for r in view["requests"] if r["status"] == "open"
              and (r["criticality"] == "critical" or r["deadline_day"] <= view["now"]["day"])]
    return items([_request_row(r) for r in urgent], "") if urgent else ""


def report(state: Mapping[str, Any]) -> str:
    drifts = [f"step {esc(d['step'])}: {esc(humanize(d['stakeholder']))} now prefers {esc(d['aspect'])} "
              f"{esc(d['value'])}" for d in state["drifts"]]
    violations = [f"{pill(v['severity'], v['severity'])} {esc(humanize(v['rule']))}: {esc(v['detail'])}"
                  for v in state["violations"]]
    trust = {s: round(t, 2) for s, t in state["trust"].items()}
    return (section("Rubric", chips(state["components"]) + f"<p>Score {esc(round(state['score'], 3))}</p>")
            + section("Drift markers revealed", items(drifts, "No drift in this episode."), len(drifts))
            + section("Violations", items(violations, "None."), len(violations))
            + section("Final trust (exact)", chips(trust)))
