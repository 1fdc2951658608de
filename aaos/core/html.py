"""HTML pieces every environment's renderers share (aaos.core.kit.Rendering). Plain Python, no gradio.

Every value shown goes through `text()` (never a Python repr) and every string through html escaping. The
CSS classes used here are styled in assets/aaos.css.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def humanize(name: str) -> str:
    """A snake_case name as words: product_manager -> Product manager."""
    return name.replace("_", " ").capitalize()


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


def pill(label: str, kind: str) -> str:
    """A coloured label; `kind` picks the colour (a status, severity or priority)."""
    return f'<span class="aaos-pill aaos-{html.escape(kind)}">{html.escape(label)}</span>'


def section(title: str, body: str, count: int | None = None, wide: bool = False) -> str:
    """A titled part of a card or the world view (with a count beside the title); `wide` spans every column of the
    world view's grid (a table, rows of bars)."""
    counted = f' <span class="aaos-count">{count}</span>' if count is not None else ""
    classes = "aaos-section aaos-wide" if wide else "aaos-section"
    return f'<div class="{classes}"><h4>{html.escape(title)}{counted}</h4>{body}</div>'


def items(rows: Sequence[str], empty: str) -> str:
    """Rows (already HTML) as a list, or `empty` as a note when there are none."""
    if not rows:
        return f'<p class="aaos-empty">{html.escape(empty)}</p>'
    return '<ul class="aaos-items">' + "".join(f"<li>{row}</li>" for row in rows) + "</ul>"


def plain(_name: str, value: Any) -> str:
    return text(value)


def chips(values: Mapping[str, Any], formatter: Callable[[str, Any], str] = plain) -> str:
    """name: value chips; `formatter(name, value)` writes a value (plain text by default)."""
    return '<div class="aaos-chips">' + "".join(
        f'<span class="aaos-chip"><b>{esc(humanize(k))}</b> {html.escape(formatter(k, v))}</span>'
        for k, v in values.items()
    ) + "</div>"


def result_html(result: Mapping[str, Any] | None) -> str:
    """A role's last action result (aaos.core.actions.result_record)."""
    if not result:
        return '<p class="aaos-empty">No action yet.</p>'
    status = result["status"]
    return (f'<p class="aaos-result">{pill(humanize(status).lower(), status)} <code>{esc(action_text(result))}</code>'
            f'<br><span class="aaos-msg">{esc(result.get("message"))}</span></p>')


def card(role: str, view: Mapping[str, Any], queued: Mapping[str, Any] | None, body: str) -> str:
    """A role's card: its name, last action result and queued action, then `body` (the environment's sections
    of the view), then the action types it can take now."""
    queued_html = f'<p class="aaos-queued">Queued: <code>{esc(action_text(queued))}</code></p>' if queued else ""
    legal = view.get("legal_actions", {})
    can_do = section("Can do now", f'<p class="aaos-legal">{esc(list(legal))}</p>', len(legal))
    return (f'<section class="aaos-card" data-role="{html.escape(role)}">'
            f'<header><span class="aaos-avatar aaos-role-{html.escape(role)}">{initials(role)}</span>'
            f'<h3>{html.escape(humanize(role))}</h3></header>'
            f'{section("Last action", result_html(view.get("last_action_result")))}{queued_html}{body}'
            f"{can_do}</section>")
