"""Chart data for the Space: long-format DataFrames (step, value, series) for gr.LinePlot. No gradio.

Built from the trajectory records, so the charts show exactly what `step` returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from aaos.ui.formatting import humanize

COLUMNS: tuple[str, ...] = ("step", "value", "series")
SCORE_SERIES = "Composite score"
DELIVERY_SERIES: dict[str, str] = {
    "raw": "Raw reward r_t",
    "immediate": "Immediate (60 %)",
    "delayed": "Delayed, released (40 %)",
}
"""The reward_breakdown fields plotted in the delivery chart, and their legend names."""
DELIVERED_SERIES = "Delivered (immediate + delayed)"


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
    """Raw reward, its immediate share, the released delayed share and the reward delivered, per step."""
    rows = [(r["step"], float(r["reward_breakdown"][key]), label)
            for r in records for key, label in DELIVERY_SERIES.items()]
    rows += [(r["step"], float(r["reward"]), DELIVERED_SERIES) for r in records]
    return _frame(rows)
