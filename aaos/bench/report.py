"""Leaderboard files (CSV, JSON, Markdown), a Plotly chart, and the holdout promotion gate."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

GATE_MARGIN = 0.02
"""A candidate may trail the champion's holdout mean by at most this much and still be promoted."""
LEADERBOARD_COLUMNS = ("policy", "split", "episodes", "mean_score", "ci_low", "ci_high", "success_rate")


def leaderboard(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Summary rows ranked within each split by mean score, best first."""
    return sorted(rows, key=lambda r: (r["split"], -r["mean_score"], r["policy"]))


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}


def to_markdown(rows: list[dict[str, Any]]) -> str:
    columns = list(rows[0]) if rows else list(LEADERBOARD_COLUMNS)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = ("" if row.get(c) is None else str(_rounded(row)[c]) for c in columns)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def chart(rows: list[dict[str, Any]]) -> go.Figure:
    """Mean score with its 95 % interval, per policy, one bar group per split."""
    figure = go.Figure()
    for split in sorted({r["split"] for r in rows}):
        subset = [r for r in rows if r["split"] == split]
        figure.add_bar(
            name=split,
            x=[r["policy"] for r in subset],
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


def gate(rows: list[dict[str, Any]], candidate: str, champion: str = "heuristic",
         margin: float = GATE_MARGIN) -> GateResult:
    """Promote the candidate only if, on the holdout split, its mean is not below the champion's by more
    than `margin` and its hard violations per episode do not increase."""
    holdout = {r["policy"]: r for r in rows if r["split"] == "holdout"}
    missing = [p for p in (candidate, champion) if p not in holdout]
    if missing:
        return GateResult("NO_PROMOTE", [f"no holdout results for {', '.join(missing)}"])
    cand, champ = holdout[candidate], holdout[champion]
    reasons = []
    gap = champ["mean_score"] - cand["mean_score"]
    if gap > margin:
        reasons.append(f"holdout mean {cand['mean_score']:.3f} is {gap:.3f} below the champion's "
                       f"{champ['mean_score']:.3f} (allowed {margin:.3f})")
    if cand["hard_violations_per_episode"] > champ["hard_violations_per_episode"]:
        reasons.append(f"hard violations per episode rise from {champ['hard_violations_per_episode']:.2f} "
                       f"to {cand['hard_violations_per_episode']:.2f}")
    if reasons:
        return GateResult("NO_PROMOTE", reasons)
    return GateResult("PROMOTE", [f"holdout mean {cand['mean_score']:.3f} vs champion {champ['mean_score']:.3f}; "
                                  f"hard violations {cand['hard_violations_per_episode']:.2f} vs "
                                  f"{champ['hard_violations_per_episode']:.2f}"])
