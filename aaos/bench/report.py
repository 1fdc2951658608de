"""Leaderboard files (CSV, JSON, Markdown), a Plotly chart, and the holdout promotion gate.

Summary rows are of one environment version and reward version each (aaos.bench.stats.VERSION_KEYS): the
leaderboard ranks policies within each, and the gate compares a candidate with the champion only on rows of
the same versions."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aaos.bench.stats import VERSION_KEYS
from aaos.core.extras import require

if TYPE_CHECKING:
    import plotly.graph_objects as go

GATE_MARGIN = 0.02
"""A candidate may trail the champion's holdout mean by at most this much and still be promoted."""
LEADERBOARD_COLUMNS = (*VERSION_KEYS, "policy", "split", "split_label", "episodes", "mean_score", "ci_low", "ci_high",
                       "success_rate", "unranked")
"""The leaderboard's columns when it has no rows (rows carry these and more); split_label says train, public
holdout or salted holdout (aaos.core.seeding.split_label)."""


def versions_of(row: dict[str, Any]) -> tuple[str, ...]:
    """The environment and versions a summary row is of, as text (None, in rows of old records, as "None")."""
    return tuple(str(row.get(key)) for key in VERSION_KEYS)


def _label(version: tuple[str, ...]) -> str:
    env, env_version, reward_version = version
    return f"{env} v{env_version} (reward v{reward_version})"


def leaderboard(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Summary rows ranked within each environment version and split (public and salted holdout apart) by mean
    score, best first; rows with `unranked` set (a policy reading hidden state, or a model whose actions were mostly
    fallbacks: the score is not the model's) come after the ranked ones."""
    return sorted(rows, key=lambda r: (versions_of(r), _split_of(r), bool(r.get("unranked")), -r["mean_score"],
                                       r["policy"]))


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}


def to_markdown(rows: list[dict[str, Any]]) -> str:
    columns = list(rows[0]) if rows else list(LEADERBOARD_COLUMNS)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = ("" if row.get(c) is None else str(_rounded(row)[c]) for c in columns)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _split_of(row: dict[str, Any]) -> str:
    return str(row.get("split_label") or row["split"])


def chart(rows: list[dict[str, Any]]) -> go.Figure:
    """Mean score with its 95 % interval, per policy, one bar group per split (train, public or salted holdout);
    with rows of several environment versions, each bar is labelled with its version too."""
    figure = require("plotly.graph_objects", "bench").Figure()
    several = len({versions_of(r) for r in rows}) > 1
    for label in sorted({_split_of(r) for r in rows}):
        subset = [r for r in rows if _split_of(r) == label]
        figure.add_bar(
            name=label,
            x=[(f"{r['policy']}, {_label(versions_of(r))}" if several else r["policy"]) +
               (" (unranked)" if r.get("unranked") else "") for r in subset],
            y=[r["mean_score"] for r in subset],
            error_y={"type": "data", "symmetric": False,
                     "array": [r["ci_high"] - r["mean_score"] for r in subset],
                     "arrayminus": [r["mean_score"] - r["ci_low"] for r in subset]},
        )
    figure.update_layout(title="AAOS leaderboard: mean episode score (95 % CI)", yaxis={"range": [0, 1]},
                         barmode="group", template="plotly_white")
    return figure


def write_reports(rows: list[dict[str, Any]], out_dir: Path) -> dict[str, Path]:
    """leaderboard.csv / .json / .md and leaderboard.html (the chart) in out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ranked = [_rounded(r) for r in leaderboard(rows)]
    paths = {kind: out_dir / f"leaderboard.{kind}" for kind in ("csv", "json", "md", "html")}
    columns = list(ranked[0]) if ranked else list(LEADERBOARD_COLUMNS)
    with paths["csv"].open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(ranked)
    paths["json"].write_text(json.dumps(ranked, indent=2) + "\n", encoding="utf-8")
    paths["md"].write_text(to_markdown(ranked), encoding="utf-8")
    chart(rows).write_html(paths["html"], include_plotlyjs=True, full_html=True)
    return paths


@dataclass
class GateResult:
    """PROMOTE or NO_PROMOTE, and why."""

    verdict: str
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "reasons": self.reasons}


CHAMPION = "heuristic"
"""The policy a candidate is gated against unless another row is named."""


def gate(rows: list[dict[str, Any]], candidate: str, champion: str = CHAMPION,
         margin: float = GATE_MARGIN) -> GateResult:
    """Promote the candidate only if, on the holdout split of every environment version both were played on
    (rows of different versions are never compared), its row is ranked (not `unranked`: a policy reading hidden
    state is never promoted, nor a model whose actions were mostly fallbacks on the fallbacks' score), its mean is
    not below the champion's by more than `margin` and its hard violations per episode do not increase."""
    holdout: dict[tuple[str, ...], dict[str, dict[str, Any]]] = {}
    for row in rows:
        if row["split"] == "holdout":
            holdout.setdefault(versions_of(row), {})[row["policy"]] = row
    shared = sorted(version for version, policies in holdout.items() if {candidate, champion} <= set(policies))
    if not shared:
        played = {p for policies in holdout.values() for p in policies}
        missing = [p for p in (candidate, champion) if p not in played]
        reason = (f"no holdout results for {', '.join(missing)}" if missing else
                  f"no holdout results for {candidate} and {champion} on the same environment version and reward "
                  "version")
        return GateResult("NO_PROMOTE", [reason])
    incumbent = "the champion" if champion == CHAMPION else champion
    reasons, evidence = [], []
    for version in shared:
        cand, champ = holdout[version][candidate], holdout[version][champion]
        where = f"{_label(version)}: " if len(shared) > 1 else ""
        if cand.get("unranked"):
            reasons.append(f"{where}{candidate} is unranked: {cand['unranked']}")
        gap = champ["mean_score"] - cand["mean_score"]
        if gap > margin:
            reasons.append(f"{where}holdout mean {cand['mean_score']:.3f} is {gap:.3f} below {incumbent}'s "
                           f"{champ['mean_score']:.3f} (allowed {margin:.3f})")
        if cand["hard_violations_per_episode"] > champ["hard_violations_per_episode"]:
            reasons.append(f"{where}hard violations per episode rise from "
                           f"{champ['hard_violations_per_episode']:.2f} to {cand['hard_violations_per_episode']:.2f}")
        evidence.append(f"{where}holdout mean {cand['mean_score']:.3f} vs {incumbent} {champ['mean_score']:.3f}; "
                        f"hard violations {cand['hard_violations_per_episode']:.2f} vs "
                        f"{champ['hard_violations_per_episode']:.2f}")
    return GateResult("NO_PROMOTE", reasons) if reasons else GateResult("PROMOTE", evidence)
