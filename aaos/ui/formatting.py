"""Generic text, HTML and tables for the Space, from what the protocol returns (the observation and info
heads, trajectory records, benchmark summaries). Plain Python; no gradio.

What an environment's own fields look like is its kit's business (aaos.core.kit.Rendering); the shared HTML
pieces come from aaos.core.html. The CSS classes used here are styled in assets/aaos.css.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

import aaos
from aaos.agents.llm import fallbacks
from aaos.bench.report import GATE_MARGIN, GateResult
from aaos.bench.stats import READS_HIDDEN_STATE
from aaos.core.html import esc, humanize, items, payload_text, pill, text
from aaos.core.seeding import seed_split
from aaos.core.spec import EnvSpec, ScenarioInfo, Split
from aaos.core.trajectory import EpisodeMeta
from aaos.ui import agents, prose
from aaos.ui.agents import ModelUsage
from aaos.ui.forms import Field, choice_label

OVERSIGHT_COLUMNS: tuple[str, ...] = ("Step", "Role", "Decided by", "Rule", "Severity", "Penalty", "Detail")
ACTION_COLUMNS: tuple[str, ...] = ("Step", "Role", "Decided by", "Action", "Payload", "Status", "Message")
OVERSIGHT_WIDTHS: tuple[str, ...] = ("6%", "12%", "12%", "18%", "9%", "8%", "35%")
ACTION_WIDTHS: tuple[str, ...] = ("6%", "12%", "12%", "14%", "22%", "9%", "25%")
"""The logs' column widths (left to Gradio, its narrow columns wrap a title letter by letter)."""
QUEUE_COLUMNS: tuple[str, ...] = ("Role", "Action", "Payload")
VERDICT_TIE = 0.005
"""Scores closer than this to the champion's are level with it."""
CHOICES_SHOWN = 12
"""How many of a payload field's current choices the raw-JSON help lists."""
TIMELINE_LIMIT = 60
"""How many timeline entries are shown (newest first)."""


def score_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _scenario(spec: EnvSpec, scenario_id: str) -> ScenarioInfo | None:
    return next((s for s in spec.scenarios if s.id == scenario_id), None)


def episode_name(env_id: str, task: str, scenario: str) -> str:
    """A task and scenario as every tab and message names them: "<task title> on <scenario title>" (a scenario
    file that is not built in goes by its name)."""
    spec = aaos.spec(env_id)
    info = _scenario(spec, scenario)
    return f"{task_title(spec, task)} on {info.title if info is not None else scenario}"


def task_title(spec: EnvSpec, task: str) -> str:
    return next((t.title for t in spec.tasks if t.id == task), humanize(task))


def variant(spec: EnvSpec, meta: EpisodeMeta) -> Split:
    """Which variant the episode draws: holdout for a holdout seed, and for a holdout-only scenario whatever the
    seed (as every environment draws them)."""
    info = _scenario(spec, meta.scenario)
    return "holdout" if info is not None and info.split == "holdout" else seed_split(meta.seed)


def scenario_help(spec: EnvSpec, scenario_id: str) -> str:
    """The selected scenario's description (from its file), under the sidebar's choice."""
    info = _scenario(spec, scenario_id)
    return note(info.description) if info is not None and info.description else ""


def status_bar(spec: EnvSpec, meta: EpisodeMeta, observation: Mapping[str, Any], score: float | None,
               last: Mapping[str, Any] | None) -> str:
    """Scenario (its whole title), task, seed and the variant it draws, step, score, last reward and whether the
    episode is running or done."""
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
    return (
        '<div class="aaos-status" id="aaos-status">'
        f'<div class="aaos-stat aaos-wide"><span>Scenario</span><b>{esc(observation.get("scenario_title"))}</b>'
        f'<small>{esc(meta.scenario)} · {esc(task_title(spec, meta.task))} · seed {meta.seed} '
        f"({variant(spec, meta)} variant)</small></div>"
        f'<div class="aaos-stat"><span>Step</span><b id="aaos-stat-step">{step} / {max_steps}</b>'
        f'<div class="aaos-progress"><i style="width:{share:.0f}%"></i></div></div>'
        f'<div class="aaos-stat"><span>Episode score</span><b id="aaos-stat-score">{score_text(score)}</b>'
        f'<small>{"final" if done else "so far"}</small></div>'
        f'<div class="aaos-stat"><span>Last reward</span><b>{reward}</b></div>'
        f'<div class="aaos-stat"><span>State</span><b id="aaos-stat-state">{state}</b></div>'
        "</div>"
    )


def _event_entry(event: Mapping[str, Any]) -> tuple[int, int, str, str, str]:
    severity = event.get("severity", "low")
    details = [humanize(event["kind"]).lower()] if event.get("kind") else []
    if "responded" in event:
        details.append("answered" if event["responded"] else "waiting for a response")
    body = f"{pill(severity, severity)} {esc(event.get('title'))}"
    body += f" <small>({esc(', '.join(details))})</small>" if details else ""
    return event.get("step", 0), 0, "event", body, "Event"


def _violation_entries(record: Mapping[str, Any]) -> list[tuple[int, int, str, str, str]]:
    """One step's oversight violations as timeline entries, numbered by the step (as the status bar and the message
    count them: the step that took the action is step 1)."""
    return [(record["step"], 1, "oversight",
             f"{esc(humanize(v['role']))} broke <code>{esc(v['rule'])}</code> {pill(v['severity'], v['severity'])} "
             f"<small>penalty {esc(v['penalty'])} · {esc(v.get('detail'))}</small>", "Oversight")
            for v in record.get("oversight_events", [])]


def timeline(observation: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> str:
    """What happened in the episode: the scenario's events and the oversight violations, newest first (the
    latest TIMELINE_LIMIT). The actions are the Logs tab's action log."""
    entries = [_event_entry(e) for e in observation.get("scenario_events", [])]
    entries += [entry for record in records for entry in _violation_entries(record)]
    entries.sort(key=lambda e: (-e[0], e[1]))
    rows = [f'<li class="aaos-tl-{kind}"><span class="aaos-tl-step">step {step}</span>'
            f'<span class="aaos-tl-kind">{html.escape(label)}</span> {body}</li>'
            for step, _, kind, body, label in entries[:TIMELINE_LIMIT]]
    if not rows:
        return f'<div class="aaos-timeline" id="aaos-timeline"><p class="aaos-empty">{esc(prose.NO_EVENTS)}</p></div>'
    footer = f'<p class="aaos-empty">{esc(prose.OLDER_EVENTS)}</p>' if len(entries) > TIMELINE_LIMIT else ""
    return f'<div class="aaos-timeline" id="aaos-timeline"><ul>{"".join(rows)}</ul>{footer}</div>'


def score_arithmetic(spec: EnvSpec, last: Mapping[str, Any]) -> str:
    """How the score of the step record `last` adds up, from its reward breakdown and the environment's weights:
    each component that applies times its weight, the weighted mean, the penalty and the score (as
    aaos.core.reward.composite computes it; clamped to [0, 1])."""
    breakdown = last["reward_breakdown"]
    components, penalty = breakdown["components"], float(breakdown.get("penalty") or 0.0)
    weights = {c.name: c.weight for c in spec.reward_components}
    applied = {name: (weights[name], float(value)) for name, value in components.items()
               if value is not None and name in weights}
    weight_sum = sum(w for w, _ in applied.values())
    total = sum(w * v for w, v in applied.values())
    mean = total / weight_sum if weight_sum else 0.0
    rows = "".join(f"<tr><td>{esc(humanize(name))}</td><td>{w:g}</td><td>{v:.4f}</td><td>{w * v:.4f}</td></tr>"
                   for name, (w, v) in applied.items())
    skipped = [humanize(name) for name, value in components.items() if value is None]
    unused = f"<p><small>Not graded yet, so left out: {esc(', '.join(skipped))}.</small></p>" if skipped else ""
    return (f'<div class="aaos-arithmetic" id="aaos-arithmetic"><table class="aaos-rubric"><thead><tr>'
            "<th>Component</th><th>Weight</th><th>Value</th><th>Weighted</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>{unused}"
            f'<p class="aaos-formula">weighted mean = {total:.4f} / {weight_sum:g} = <b>{mean:.4f}</b>; '
            f"penalty = <b>{penalty:.4f}</b>; score = {mean:.4f} / (1 + {penalty:.4f}) = "
            f'<b id="aaos-formula-score">{last["score"]:.3f}</b></p>'
            f'<p class="aaos-help">{esc(prose.SCORE_RULE)}</p></div>')


def episode_report(spec: EnvSpec, last: Mapping[str, Any], body: str, champion: float | None) -> str:
    """The end-of-episode report, alike for every environment: its title with the score, how the score adds up,
    the environment kit's report (`body`: what was delivered, missed and broken) and the verdict against the
    champion on the same task, scenario and seed (none for an environment without a champion)."""
    score = float(last["score"])
    head = (f'<div class="aaos-report-all" id="aaos-episode-report"><h3>{esc(prose.REPORT_TITLE.format(score=score))}'
            f'</h3><h4>How the score adds up</h4>{score_arithmetic(spec, last)}{body}')
    if champion is None:
        return f"{head}</div>"
    gap = score - champion
    if abs(gap) < VERDICT_TIE:
        judged, label, kind = prose.VERDICT_TIE.format(champion=champion), "level", "done"
    elif gap > 0:
        judged, label, kind = prose.VERDICT_ABOVE.format(champion=champion, gap=gap), "above", "applied"
    else:
        judged = prose.VERDICT_BELOW.format(champion=champion, gap=-gap, agent=agents.label(agents.CHAMPION))
        label, kind = "below", "rejected"
    return (f'{head}<div class="aaos-verdict" id="aaos-verdict"><h4>Against the champion</h4>'
            f"<p>{pill(label, kind)} {esc(judged)}</p></div></div>")


def reward_help(spec: EnvSpec) -> str:
    """What the reward is made of: each component of the environment's spec with its weight and what it measures."""
    rows = "".join(f"<tr><td><b>{esc(humanize(c.name))}</b></td><td>{100 * c.weight:.0f} %</td>"
                   f"<td>{esc(c.description)}</td></tr>" for c in spec.reward_components)
    return (f'<div class="aaos-reward-help" id="aaos-reward-components"><p>{esc(prose.REWARD_INTRO)}</p>'
            '<div class="aaos-board-wrap"><table class="aaos-board"><thead><tr><th>Component</th><th>Weight</th>'
            f"<th>What it measures</th></tr></thead><tbody>{rows}</tbody></table></div></div>")


def action_help(role: str, action_type: str, description: str, fields: Sequence[Field] = ()) -> str:
    """What the chosen action of `role` does, under the form; with `fields` (the raw-JSON editor replaces the form's
    field boxes) also each payload field's valid values now and what it means."""
    lines = []
    for field in fields:
        if field.choices is None:
            values = "free text"
        else:
            shown = ", ".join(choice_label(c) for c in field.choices[:CHOICES_SHOWN])
            values = "one of " + shown + (f" and {len(field.choices) - CHOICES_SHOWN} more"
                                          if len(field.choices) > CHOICES_SHOWN else "")
        lines.append(f"<code>{esc(field.name)}</code>: {esc(values)}"
                     + (f" <small>({esc(field.description)})</small>" if field.description else ""))
    listed = f'<ul class="aaos-fields">{"".join(f"<li>{line}</li>" for line in lines)}</ul>' if lines else ""
    return (f'<div class="aaos-help"><b>{esc(action_type)}</b> ({esc(humanize(role))}): {esc(description)}{listed}'
            "</div>")


def message(body: str, kind: str = "info") -> str:
    """The main message (what the last event did): kind is info, ok, warn or error."""
    body = html.escape(body, quote=False)
    return f'<div class="aaos-message aaos-message-{html.escape(kind)}" role="status">{body}</div>'


def queue_frame(queue: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    rows = [(humanize(role), action["action_type"], payload_text(action.get("payload")) or "—")
            for role, action in queue.items()]
    return pd.DataFrame(rows, columns=list(QUEUE_COLUMNS))


def decided_by(record: Mapping[str, Any], role: str) -> str:
    """Who decided `role`'s action at the step of `record` (you, the agent's name, or nobody); "—" for a record
    that does not say (a trajectory written elsewhere)."""
    return str(record.get("decided_by", {}).get(role, "—"))


def oversight_frame(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Every oversight violation, numbered by the step that recorded it, with who decided the offending role's
    action at that step."""
    rows = [(record["step"], humanize(v["role"]), decided_by(record, v["role"]), v["rule"], v["severity"],
             round(float(v["penalty"]), 3), text(v.get("detail")))
            for record in records for v in record.get("oversight_events", [])]
    return pd.DataFrame(rows, columns=list(OVERSIGHT_COLUMNS))


def action_frame(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Every step's actions without no-ops, newest first, numbered by their step."""
    rows = [(record["step"], humanize(r["role"]), decided_by(record, r["role"]), r["action_type"],
             payload_text(r.get("payload")) or "—", r["status"], text(r.get("message")))
            for record in reversed(records) for r in record["action_results"].values()
            if not (r["action_type"] == "no_op" and r["status"] != "rejected")]
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
    tokens = total["prompt_tokens"] + total["completion_tokens"]
    step_tokens = step["prompt_tokens"] + step["completion_tokens"]
    step_latency = step["latency_s"] / step["calls"] if step["calls"] else None
    boxes = [
        _stat("Model", usage.model, f"{usage.mode.replace('_', ' ')} · last step {usage.step_s:.1f} s"),
        _stat("Model calls", str(total["calls"]),
              f"{total['failed_calls']} failed · {total['http_retries']} retried · {total['repairs']} repaired · "
              f"last step {step['calls']}"),
        _stat("Fallbacks", f"{fallbacks(decided)} of {sum(decided.values())} actions",
              f"secondary model {decided['secondary']} · champion {decided['champion']} · last step "
              f"{fallbacks(step['decisions'])}" + ("" if usage.taken else " (not taken: the model decided none)")),
        _stat("Tokens", f"{tokens:,}", f"{total['prompt_tokens']:,} in + {total['completion_tokens']:,} out · "
                                       f"last step {step_tokens:,}"),
        _stat("Latency", _seconds(total["mean_latency_s"]), f"per call · last step {_seconds(step_latency)}"),
    ]
    reason = total.get("last_error")
    why = f'<p class="aaos-usage-error">Last fallback: {html.escape(reason)}</p>' if reason else ""
    return f'<div class="aaos-status aaos-usage" id="aaos-usage">{"".join(boxes)}</div>{why}'


def bench_status(finished: int, total: int, body: str, kind: str = "info", share: float | None = None) -> str:
    """A line saying what the benchmark is doing, with its progress (episodes finished of total) if it runs; the bar
    shows `share` of the run done (default finished / total)."""
    count = f'<b id="aaos-bench-count">{finished} / {total} episodes</b> ' if total else ""
    done = finished / total if share is None and total else share or 0.0
    bar = f'<div class="aaos-progress"><i style="width:{100 * done:.0f}%"></i></div>' if total else ""
    return (f'<div class="aaos-message aaos-message-{html.escape(kind)} aaos-bench-status" role="status">'
            f"{count}{html.escape(body, quote=False)}{bar}</div>")


def _share(value: float) -> str:
    return f"{100 * value:.0f} %"


def _env_cell(row: Mapping[str, Any]) -> str:
    """The environment and its versions: "org v2 · reward v2"."""
    env, version, reward = row.get("env"), row.get("env_version"), row.get("reward_version")
    parts = [f"{env} v{version}" if version else env, f"reward v{reward}" if reward else None]
    return " · ".join(part for part in parts if part) or "—"


def version_key(row: Mapping[str, Any]) -> tuple[str, str, str]:
    """Rows with different keys were played by different environment or reward versions: never ranked together."""
    return str(row.get("env") or ""), str(row.get("env_version") or ""), str(row.get("reward_version") or "")


def _model_cell(cell: Callable[[Mapping[str, Any]], str]) -> Callable[[Mapping[str, Any]], str]:
    """A model column's cell: "—" for a policy that made no model calls."""
    return lambda row: "—" if row["mean_call_latency_s"] is None else cell(row)


def own_score(row: Mapping[str, Any]) -> bool:
    """Whether a summary row's score is its policy's own: not when the row is unranked for any reason but reading
    hidden state (an oracle's score is its own; a model whose actions were mostly fallbacks scored the fallbacks')."""
    return not row.get("unranked") or row["unranked"] == READS_HIDDEN_STATE


def _scored(cell: Callable[[Mapping[str, Any]], str]) -> Callable[[Mapping[str, Any]], str]:
    """A score column's cell: "—" for a row whose score is not its policy's own (own_score)."""
    return lambda row: cell(row) if own_score(row) else "—"


@dataclass(frozen=True)
class Column:
    """A leaderboard column: its title, the cell's text from a ranked summary row, and the cell's HTML from that
    text. `model` columns are shown only when some policy called a model."""

    title: str
    cell: Callable[[Mapping[str, Any]], str]
    html: Callable[[str], str] = html.escape
    model: bool = False


LEADERBOARD: tuple[Column, ...] = (
    Column("#", lambda r: str(r["rank"]) if r["rank"] else "—"),
    Column("Policy", lambda r: r["policy"], lambda t: f"<b>{html.escape(t)}</b>"),
    Column("Ranked", lambda r: f"unranked: {r['unranked']}" if r.get("unranked") else "yes",
           lambda t: f'<small class="aaos-unranked">{html.escape(t)}</small>' if t != "yes" else html.escape(t),
           model=True),
    Column("Env", _env_cell),
    Column("Split", lambda r: r.get("split_label") or r["split"], lambda t: pill(t, t.rsplit(" ", 1)[-1])),
    Column("Episodes", lambda r: str(r["episodes"])),
    Column("Mean score", _scored(lambda r: f"{r['mean_score']:.3f}")),
    Column("95 % CI", _scored(lambda r: f"{r['ci_low']:.3f}\u2013{r['ci_high']:.3f}")),
    Column("Success", _scored(lambda r: _share(r["success_rate"]))),
    Column("Invalid actions", lambda r: f"{100 * r['invalid_action_rate']:.1f} %"),
    Column("Hard violations per episode", lambda r: f"{r['hard_violations_per_episode']:.2f}"),
    Column("Fallbacks", _model_cell(lambda r: _share(r["fallback_rate"])), model=True),
    Column("Tokens", _model_cell(lambda r: f"{r['tokens']:,}"), model=True),
    Column("Latency / call", _model_cell(lambda r: _seconds(r["mean_call_latency_s"])), model=True),
)
"""The leaderboard's columns (episode times and the rest are in the downloadable CSV)."""


def leaderboard_columns(rows: Sequence[Mapping[str, Any]]) -> list[Column]:
    """The columns shown for these rows: the model columns only if some policy called a model, and the mean of each
    reward component of the rows' environments (their spec's order) after the success rate."""
    models = any(row["mean_call_latency_s"] is not None for row in rows)
    shown = [column for column in LEADERBOARD if models or not column.model]
    envs = [env for env in dict.fromkeys(str(row.get("env")) for row in rows) if env in aaos.env_ids()]
    components = dict.fromkeys(c.name for env in envs for c in aaos.spec(env).reward_components)
    at = next(i for i, column in enumerate(shown) if column.title == "Success") + 1
    return shown[:at] + [_component_column(name) for name in components] + shown[at:]


def _component_column(name: str) -> Column:
    """A reward component's mean score ("—" for a row without it: another environment's)."""
    key = f"mean_{name}"
    return Column(humanize(name), _scored(lambda r: "—" if r.get(key) is None else f"{r[key]:.3f}"))


def leaderboard(rows: Sequence[Mapping[str, Any]]) -> str:
    """The ranked summary rows (aaos.ui.benchmark.ranked) as an HTML table, one group of rows per environment
    version and split with its best policy first."""
    if not rows:
        return f'<p class="aaos-empty" id="aaos-board">{html.escape(prose.NO_RESULTS)}</p>'
    columns = leaderboard_columns(rows)
    head = "".join(f"<th>{html.escape(c.title)}</th>" for c in columns)
    body = "".join(f'<tr class="aaos-rank-{row["rank"] or "none"}">'
                   + "".join(f"<td>{c.html(c.cell(row))}</td>" for c in columns) + "</tr>" for row in rows)
    return (f'<div class="aaos-board-wrap"><table class="aaos-board" id="aaos-board"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def gate_verdict(candidate: str, result: GateResult | str) -> str:
    """The promotion gate's verdict for `candidate` against the champion with its reasons, or why it has none."""
    title = f"<h4>Promotion gate: {esc(candidate)} vs the champion</h4>"
    rule = f'<p class="aaos-help">{html.escape(prose.GATE_RULE.format(margin=GATE_MARGIN), quote=False)}</p>'
    if isinstance(result, str):
        return f'<div class="aaos-gate" id="aaos-gate-verdict">{title}<p>{esc(result)}</p>{rule}</div>'
    kind = "applied" if result.verdict == "PROMOTE" else "rejected"
    verdict = pill(result.verdict.replace("_", " ").lower(), kind)
    return (f'<div class="aaos-gate" id="aaos-gate-verdict">{title}<p>{verdict}</p>'
            f'{items([esc(r) for r in result.reasons], "")}{rule}</div>')
