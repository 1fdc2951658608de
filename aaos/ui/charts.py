"""Chart data for the Space: long-format DataFrames (step, value, series) for gr.LinePlot, built from the
trajectory records (so the charts show exactly what `step` returned), and the benchmark's Plotly figure. No gradio.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from aaos.bench.report import chart
from aaos.core.html import humanize

COLUMNS: tuple[str, ...] = ("step", "value", "series")
SCORE_SERIES = "Composite score"
DELIVERY_SERIES: dict[str, str] = {
    "increment": "Score increment d_t",
    "immediate": "Immediate (60 %)",
    "delayed": "Delayed, released (40 %)",
}
"""The reward_breakdown fields plotted in the delivery chart, and their legend names."""
DELIVERED_SERIES = "Delivered (immediate + delayed)"
LEADERBOARD_HEIGHT = 340
SPLIT_COLOURS: dict[str, str] = {"train": "#94a3b8", "holdout": "#6366f1"}
"""Bar colours per split, as the split pills of the leaderboard table."""


def _frame(rows: list[tuple[int, float, str]]) -> pd.DataFrame:
    steps, values, series = zip(*rows, strict=True) if rows else ((), (), ())
    return pd.DataFrame({"step": np.asarray(steps, dtype=np.int64), "value": np.asarray(values, dtype=np.float64),
                         "series": pd.Series(series, dtype="str")})


def component_frame(initial: Mapping[str, float | None], records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Each reward component and the composite score over steps; step 0 is the state after reset.
    A component with nothing to grade yet (None) has no point at that step."""
    points: list[tuple[int, Mapping[str, float | None], float | None]] = [(0, initial, None)]
    points += [(r["step"], r["reward_breakdown"]["components"], r["score"]) for r in records]
    rows = [(step, float(value), humanize(name))
            for step, components, _ in points for name, value in components.items() if value is not None]
    rows += [(step, float(score), SCORE_SERIES) for step, _, score in points if score is not None]
    return _frame(rows)


def delivery_frame(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The score increment, its immediate share, the released delayed share and the reward delivered, per step."""
    rows = [(r["step"], float(r["reward_breakdown"][key]), label)
            for r in records for key, label in DELIVERY_SERIES.items()]
    rows += [(r["step"], float(r["reward"]), DELIVERED_SERIES) for r in records]
    return _frame(rows)


def leaderboard_figure(rows: list[dict[str, Any]]) -> go.Figure:
    """The benchmark report's chart (mean score with its 95 % interval per policy and split), sized for the tab."""
    figure = chart(rows)
    for trace in figure.data:
        trace.marker.color = SPLIT_COLOURS.get(trace.name)
    figure.update_layout(height=LEADERBOARD_HEIGHT, margin={"l": 50, "r": 20, "t": 50, "b": 40},
                         legend={"title": {"text": "Split"}}, title={"font": {"size": 14}})
    return figure
