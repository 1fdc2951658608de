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
MIN_RANGE = 0.02
"""The least top of a fitted y range: a chart of zeros still shows an axis."""
LEADERBOARD_HEIGHT = 340
LEADERBOARD_TITLE = "Mean episode score (95 % CI)"
RACE_HEIGHT = 300
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


def fitted_range(frame: pd.DataFrame) -> list[float]:
    """A y range that fits the frame's values with a margin, from 0 (or below, for a negative value): a reward
    delivered each step is a small share of the score, which a fixed 0 to 1 axis would flatten."""
    if frame.empty:
        return [0.0, 1.0]
    low, high = min(0.0, float(frame["value"].min())), max(float(frame["value"].max()), MIN_RANGE)
    margin = 0.1 * (high - low)
    return [low - margin if low < 0 else 0.0, high + margin]


def leaderboard_figure(rows: list[dict[str, Any]]) -> go.Figure:
    """The benchmark report's chart (mean score with its 95 % interval per policy and split), sized for the tab."""
    figure = chart(rows)
    for trace in figure.data:
        trace.marker.color = SPLIT_COLOURS.get(trace.name)
    # A short title at the left: Plotly's toolbar (top right) covered the end, "(95 % CI)", of the centred one.
    figure.update_layout(height=LEADERBOARD_HEIGHT, margin={"l": 50, "r": 20, "t": 50, "b": 40},
                         legend={"title": {"text": "Split"}},
                         title={"text": LEADERBOARD_TITLE, "font": {"size": 14}, "x": 0, "xanchor": "left",
                                "xref": "paper"})
    return figure


def race_figure(series: Mapping[str, Sequence[tuple[int, float]]], colours: Mapping[str, str],
                max_steps: int) -> go.Figure:
    """The Arena's score race: each lane's (step, score) points as a line in its colour (a lone point, such as a
    committed final score, as a marker). A figure is drawn anew on every update, so a new round's lanes show."""
    figure = go.Figure()
    for name, points in series.items():
        steps, scores = zip(*points, strict=True) if points else ((), ())
        figure.add_trace(go.Scatter(x=list(steps), y=list(scores), name=name, line={"color": colours.get(name)},
                                    mode="lines" if len(points) > 1 else "markers"))
    figure.update_layout(height=RACE_HEIGHT, margin={"l": 50, "r": 20, "t": 40, "b": 40}, title={"text": "Score race",
                         "font": {"size": 14}}, xaxis={"title": {"text": "Step"}, "range": [0, max_steps]},
                         yaxis={"title": {"text": "Score"}, "range": [0, 1]}, legend={"orientation": "h", "y": -0.2})
    return figure
