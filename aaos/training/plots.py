"""The plots of an `aaos train` run, as PNG files under its plots/ folder (matplotlib, no display needed).

    sft_loss.png       the SFT loss per optimizer step
    grpo_reward.png    the mean GRPO reward per step, with its spread over the step's completions
    holdout.png        each policy's holdout mean score with its 95 % CI, the model's valid-action rate beside it
    components.png     each policy's holdout mean of every reward component
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

PLOTS = ("sft_loss.png", "grpo_reward.png", "holdout.png", "components.png")
LABELS = {"noop": "noop", "random": "random", "heuristic": "champion", "untrained": "SmolLM2 untrained",
          "sft": "SmolLM2 SFT", "sft_grpo": "SmolLM2 SFT+GRPO"}


def _csv(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _series(rows: list[dict[str, str]], key: str) -> tuple[list[float], list[float]]:
    kept = [row for row in rows if row.get(key) not in (None, "")]
    return [float(row["step"]) for row in kept], [float(row[key]) for row in kept]


def write_plots(run_dir: Path) -> list[Path]:
    """Write the four plots of the run in `run_dir` (see the module docstring); their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = run_dir / "plots"
    folder.mkdir(exist_ok=True)
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    title = f"{summary['env']} / {summary['task']}, preset {summary['preset']}"
    written = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(folder / name, dpi=110)
        plt.close(fig)
        written.append(folder / name)

    fig, ax = plt.subplots(figsize=(6, 3.6))
    steps, loss = _series(_csv(run_dir / "sft_log.csv"), "loss")
    ax.plot(steps, loss, marker=".", color="#2563eb")
    ax.set(xlabel="optimizer step", ylabel="loss (answer tokens)", title=f"SFT loss: {title}")
    save(fig, "sft_loss.png")

    fig, ax = plt.subplots(figsize=(6, 3.6))
    grpo = _csv(run_dir / "grpo_log.csv")
    steps, reward = _series(grpo, "reward")
    _, spread = _series(grpo, "reward_std")
    ax.errorbar(steps, reward, yerr=spread if len(spread) == len(reward) else None, marker="o", capsize=3,
                color="#16a34a")
    ax.set(xlabel="GRPO step", ylabel="mean reward of the completions", title=f"GRPO reward: {title}")
    save(fig, "grpo_reward.png")

    rows = summary["holdout"]
    names = [LABELS.get(row["policy"], row["policy"]) for row in rows]
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    means = [row["mean_score"] for row in rows]
    errors = [[m - row["ci_low"] for m, row in zip(means, rows, strict=True)],
              [row["ci_high"] - m for m, row in zip(means, rows, strict=True)]]
    bars = ax.bar(names, means, yerr=errors, capsize=4, color=["#9ca3af"] * 3 + ["#f59e0b", "#2563eb", "#16a34a"])
    for bar, row in zip(bars, rows, strict=True):
        if row.get("valid_action_rate") is not None:
            ax.annotate(f"valid {100 * row['valid_action_rate']:.0f} %",
                        (bar.get_x() + bar.get_width() / 2, row["ci_high"] + 0.03), ha="center", fontsize=8)
    ax.set(ylim=(0, 1), ylabel="holdout score (95 % CI)", title=f"Holdout: {title}")
    ax.tick_params(axis="x", labelsize=8, rotation=15)
    save(fig, "holdout.png")

    components = [f"mean_{name}" for name in summary["components"]]
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    width = 0.8 / max(1, len(rows))
    for index, (row, name) in enumerate(zip(rows, names, strict=True)):
        ax.bar([i + index * width for i in range(len(components))], [row.get(c) or 0.0 for c in components],
               width=width, label=name)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(components))],
                  [c.removeprefix("mean_") for c in components], fontsize=8)
    ax.set(ylim=(0, 1), ylabel="holdout mean", title=f"Reward components: {title}")
    ax.legend(fontsize=7, ncols=2)
    save(fig, "components.png")
    return written
