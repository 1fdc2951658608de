"""HTML for the Replay and Arena tabs: stat boxes, a recorded result, the champion departure and an arena lane.
Plain Python; no gradio. The CSS classes are the Space's (assets/aaos.css): the status bar's stat boxes and the
role cards' grid and card frame.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from aaos.core.html import chips, esc, humanize, items, pill, result_html
from aaos.ui import formatting
from aaos.ui import watch_prose as words


def stat(title: str, value: str, detail: str = "", elem_id: str = "") -> str:
    """One stat box; `value` is HTML, the rest text."""
    ident = f' id="{html.escape(elem_id)}"' if elem_id else ""
    small = f"<small>{html.escape(detail)}</small>" if detail else ""
    return f'<div class="aaos-stat"><span>{html.escape(title)}</span><b{ident}>{value}</b>{small}</div>'


def stats(boxes: Sequence[str], elem_id: str) -> str:
    return f'<div class="aaos-status" id="{html.escape(elem_id)}">{"".join(boxes)}</div>'


def _score(value: Any) -> str:
    return "—" if value is None else f"{float(value):.3f}"


def recorded_result(result: Mapping[str, Any], who: str) -> str:
    """A result record's scores: the final score, its components, the penalty and the hard violations; `who` is
    the policy as the Space names it."""
    components = {k: _score(v) for k, v in (result.get("components") or {}).items()}
    return (f'<div class="aaos-section" id="aaos-replay-result"><h4>{esc(words.RESULT_TITLE)}</h4>'
            + stats([stat("Final score", _score(result.get("score")), f"{result.get('steps', '—')} steps"),
                     stat("Penalty", _score(result.get("penalty"))),
                     stat("Hard violations", esc(result.get("hard_violations", "—"))),
                     stat("Policy", esc(who), str(result.get("split") or ""))],
                    "aaos-replay-result-stats")
            + chips(components) + "</div>")


def departure(step: int, roles: Sequence[tuple[str, str, str]]) -> str:
    """What each role played at the departure step and what the champion plays there."""
    rows = [f"<b>{esc(humanize(role))}</b>: played <code>{esc(played)}</code>; the champion plays "
            f"<code>{esc(best)}</code>" for role, played, best in roles]
    return (f'<div class="aaos-message aaos-message-warn" id="aaos-replay-departure">'
            f"{pill(f'step {step}', 'rejected')} {esc(words.DEPARTURE_HERE)}{items(rows, '')}</div>")


def lane(name: str, body: str, elem_id: str) -> str:
    """One arena lane as a card: its (possibly hidden) name over `body`."""
    return (f'<section class="aaos-card aaos-lane" id="{html.escape(elem_id)}"><header>'
            f"<h3>{html.escape(name)}</h3></header>{body}</section>")


def last_actions(results: Mapping[str, Mapping[str, Any]]) -> str:
    """A step's action results, the roles that did nothing counted rather than listed."""
    shown = [result_html(r) for r in results.values() if r["action_type"] != "no_op" or r["status"] == "rejected"]
    idle = len(results) - len(shown)
    tail = f'<p class="aaos-empty">{idle} role{"s" * (idle != 1)} did nothing.</p>' if idle else ""
    return "".join(shown) + tail


def score_note(score: float | None, detail: str) -> str:
    return stat("Score", formatting.score_text(score), detail)
