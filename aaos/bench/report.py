"""Leaderboard files (CSV, JSON, Markdown), the paired comparisons and noise floors, a Plotly chart, and the holdout
promotion gate.

Summary rows are of one environment version and reward version each (aaos.bench.stats.VERSION_KEYS): the
leaderboard ranks policies within each and each split, in rank groups from paired comparisons of their episodes
(aaos.bench.paired), and the gate compares a candidate with the champion only on rows of the same versions."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aaos.bench import paired
from aaos.bench.paired import GroupKey, Standing
from aaos.bench.stats import VERSION_KEYS, row_group
from aaos.core.extras import require

if TYPE_CHECKING:
    import plotly.graph_objects as go

GATE_MARGIN = 0.02
"""A candidate may trail the champion's holdout mean by at most this much and still be promoted."""
LEADERBOARD_COLUMNS = ("rank", *VERSION_KEYS, "policy", "split", "split_label", "episodes", "mean_score", "ci_low",
                       "ci_high", "success_rate", "unranked")
"""The leaderboard's columns when it has no rows (rows carry these and more); split_label says train, public
holdout or salted holdout (aaos.core.seeding.split_label); rank is the row's rank group (aaos.bench.paired)."""


def versions_of(row: dict[str, Any]) -> tuple[str, ...]:
    """The environment and versions a summary row is of, as text (None, in rows of old records, as "None")."""
    return tuple(str(row.get(key)) for key in VERSION_KEYS)


def _label(version: tuple[str, ...]) -> str:
    env, env_version, reward_version = version
    return f"{env} v{env_version} (reward v{reward_version})"


def leaderboard(rows: list[dict[str, Any]], found: dict[GroupKey, Standing]) -> list[dict[str, Any]]:
    """Summary rows ordered within each environment version and split (public and salted holdout apart) by mean
    score, best first, each with its `rank` first: its rank group in `found` (aaos.bench.paired.standings: policies
    not significantly different from their group's best share its rank), None when the row is `unranked` (a policy
    reading hidden state, or a model whose actions were mostly fallbacks: the score is not the model's; listed after
    the ranked ones) or its group's results were not paired (the standing says why)."""
    ordered = sorted(rows, key=lambda r: (versions_of(r), _split_of(r), bool(r.get("unranked")), -r["mean_score"],
                                          r["policy"]))
    return [{"rank": None if row.get("unranked") else found[row_group(row)].ranks.get(row["policy"]), **row}
            for row in ordered]


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}


def to_markdown(rows: list[dict[str, Any]], empty: Sequence[str] = LEADERBOARD_COLUMNS) -> str:
    """The rows as a Markdown table (the columns of the first row; `empty`'s without rows)."""
    columns = list(rows[0]) if rows else list(empty)
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


def paired_markdown(found: dict[GroupKey, Standing]) -> str:
    """The paired comparisons of every group, and its refusal or each task's noise floor, as Markdown sections."""
    pairs = [_rounded(r) for r in paired.pairwise_rows(found)]
    table = to_markdown(pairs, paired.PAIRWISE_COLUMNS) if pairs else "No group has two ranked policies to compare.\n"
    notes = "".join(f"- {note}\n" for note in paired.notes(found))
    return (f"\n## Paired comparisons\n\n{paired.RANKS_METHOD}\n\n{table}\n## Noise floor\n\n{paired.NOISE_METHOD}\n\n"
            f"{notes or 'No task has two ranked policies on two or more episodes.'}\n")


def _write_csv(path: Path, rows: list[dict[str, Any]], columns: Sequence[str]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else list(columns))
        writer.writeheader()
        writer.writerows(rows)


def write_reports(rows: list[dict[str, Any]], out_dir: Path, records: Iterable[dict[str, Any]]) -> dict[str, Path]:
    """write_board with the standings of the summary `rows` from the episode `records` they summarise."""
    return write_board(rows, paired.standings(rows, records), out_dir)


def write_board(rows: list[dict[str, Any]], found: dict[GroupKey, Standing], out_dir: Path) -> dict[str, Path]:
    """In out_dir: leaderboard.csv / .json / .md (the Markdown with the paired comparisons and noise floors) and
    leaderboard.html (the chart) from the summary `rows` and their standings (aaos.bench.paired.standings);
    pairwise.csv (every comparison), noise_floor.csv (every task's) and pairwise.json (both, and the groups refused
    as not paired, with why)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ranked = [_rounded(r) for r in leaderboard(rows, found)]
    paths = {kind: out_dir / f"leaderboard.{kind}" for kind in ("csv", "json", "md", "html")}
    paths |= {"pairwise_csv": out_dir / "pairwise.csv", "noise_floor_csv": out_dir / "noise_floor.csv",
              "pairwise_json": out_dir / "pairwise.json"}
    pairs, floors = [_rounded(r) for r in paired.pairwise_rows(found)], [_rounded(r) for r in paired.noise_rows(found)]
    _write_csv(paths["csv"], ranked, LEADERBOARD_COLUMNS)
    _write_csv(paths["pairwise_csv"], pairs, paired.PAIRWISE_COLUMNS)
    _write_csv(paths["noise_floor_csv"], floors, paired.NOISE_COLUMNS)
    refused = [{**paired.group_fields(group), "refused": result.refused} for group, result in paired.ordered(found)
               if result.refused]
    paths["json"].write_text(json.dumps(ranked, indent=2) + "\n", encoding="utf-8")
    paths["pairwise_json"].write_text(json.dumps({"comparisons": pairs, "noise_floors": floors, "refused": refused},
                                                 indent=2) + "\n", encoding="utf-8")
    paths["md"].write_text(to_markdown(ranked) + paired_markdown(found), encoding="utf-8")
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
