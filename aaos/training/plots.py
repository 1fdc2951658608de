"""The plots of an `aaos train` run, as PNG files under its plots/ folder (matplotlib, no display needed).

    sft_loss.png       the training loss per optimizer step: SFT, then DAgger's and RFT's where they ran
    reward.png         the reward-driven stages, where they ran: RFT's mean rollout reward per episode played (its
                       sampled answers', its greedy answer's, the best answer's (the one trained on) and the
                       champion's on the same states), GRPO's mean
                       reward per step with its spread over the step's completions
    holdout.png        each policy's holdout mean score with its 95 % CI, the model's valid-action rate beside it
    components.png     each policy's holdout mean of every reward component

The Space shows two plots side by side at about half their size, so the fonts are set large (FONTS), legends sit
outside the bars and step axes count whole steps.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from aaos.policies import LOCAL_TRAINED, LOCAL_UNTRAINED, display_name

PLOTS = ("sft_loss.png", "reward.png", "holdout.png", "components.png")
LEGAL = "_legal"
"""The suffix of the final model's second evaluation, decoding every legal call (aaos.training.pipeline)."""
STAGE_NAMES = {"sft": "SFT", "dagger": "DAgger", "rft": "RFT", "dpo": "DPO", "grpo": "GRPO"}
"""The training stages as people read them (loss curves; the model of a stage before the final one)."""
SAMPLING_STAGES = ("rft", "dpo")
"""The stages that sample the model's answers and score them by the rollout reward (<stage>_samples.csv)."""
UNTRAINED = "untrained"
"""A training evaluation's name for the local model before training."""
SHORT = {"noop": "noop", "random": "random", "heuristic": "champion", UNTRAINED: "untrained"}
"""Under the holdout plot's bars, where full names would overlap."""


def label(policy: str, final: str | None = None, short: bool = False) -> str:
    """How a policy of a training evaluation is named in the plots, the tables and the Space: the final stage's model
    is the fine-tuned local model the project ships, an earlier stage's model "SmolLM2-135M after SFT", the rest by
    the policy catalogue's names (aaos.policies.display_name); `short` under the holdout plot's bars.
    `<final>_legal` is the final model decoding every legal call, not only those the guardrail admits."""
    model = policy.removesuffix(LEGAL)
    if model == final:
        name = "fine-tuned" if short else display_name(LOCAL_TRAINED)
    elif model == UNTRAINED:
        name = SHORT[model] if short else display_name(LOCAL_UNTRAINED)
    elif model in STAGE_NAMES:
        name = f"after {STAGE_NAMES[model]}" if short else f"SmolLM2-135M after {STAGE_NAMES[model]}"
    else:
        name = SHORT.get(model, model) if short else display_name(model)
    if model == policy:
        return name
    return f"{name}, any legal" if short else f"{name}, any legal call"


COLORS = {"noop": "#9ca3af", "random": "#6b7280", "heuristic": "#374151", "untrained": "#f59e0b", "sft": "#2563eb",
          "dagger": "#16a34a", "rft": "#db2777", "dpo": "#0891b2", "grpo": "#7c3aed"}
"""One colour per policy, the same in every plot (grey for the baselines); a `_legal` run is drawn in its model's
colour, lighter; another policy gets matplotlib's."""


def color(policy: str) -> str | tuple[float, float, float, float] | None:
    """A policy's colour (COLORS; a `_legal` run's lighter)."""
    model = policy.removesuffix(LEGAL)
    if model not in COLORS:
        return None
    if model == policy:
        return COLORS[model]
    from matplotlib.colors import to_rgba

    return to_rgba(COLORS[model], 0.45)
FONTS = {"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12, "xtick.labelsize": 11, "ytick.labelsize": 11,
         "legend.fontsize": 12}
DPI = 110


def _csv(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _series(rows: list[dict[str, str]], key: str) -> tuple[list[float], list[float]]:
    kept = [row for row in rows if row.get(key) not in (None, "")]
    return [float(row["step"]) for row in kept], [float(row[key]) for row in kept]


def write_plots(run_dir: Path) -> list[Path]:
    """Write the plots of the run in `run_dir` (see the module docstring), removing any it no longer makes (a rerun
    without a reward-driven stage: no earlier curve may stand in for it); their paths."""
    import matplotlib.pyplot as plt

    folder = run_dir / "plots"
    folder.mkdir(exist_ok=True)
    written = []
    with plt.rc_context(FONTS):  # ticks are laid out when drawn: with the same fonts
        made = figures(run_dir)
        for name, fig in made.items():
            fig.savefig(folder / name, dpi=DPI, bbox_inches="tight")
            plt.close(fig)
            written.append(folder / name)
    for name in PLOTS:
        if name not in made:
            (folder / name).unlink(missing_ok=True)
    return written


def figures(run_dir: Path) -> dict[str, Any]:
    """The four plots of the run in `run_dir` as matplotlib figures, by file name (PLOTS); the caller closes them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    title = f"{summary['env']} / {summary['task']}, preset {summary['preset']}"
    made: dict[str, Any] = {}

    def save(fig: Any, name: str) -> None:  # write_plots saves it
        made[name] = fig

    with plt.rc_context(FONTS):
        fig, ax = plt.subplots(figsize=(6.4, 4))
        steps, loss = _series(_csv(run_dir / "sft_log.csv"), "loss")
        ax.plot(steps, loss, marker=".", color=COLORS["sft"], label=STAGE_NAMES["sft"])
        last = steps[-1] if steps else 0.0
        for stage in ("dagger", "rft", "dpo"):  # each stage's steps go on from the one before
            more, stage_loss = _series(_csv(run_dir / f"{stage}_log.csv"), "loss")
            if more:
                ax.plot([last + step for step in more], stage_loss, marker=".", color=COLORS[stage],
                        label=STAGE_NAMES[stage])
                last += more[-1]
        if ax.get_legend_handles_labels()[0][1:]:
            ax.legend(frameon=False)
        ax.set(xlabel="optimizer step", ylabel="loss (answer tokens)", title=f"Training loss\n{title}")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        save(fig, "sft_loss.png")

        fig, ax = plt.subplots(figsize=(6.4, 4))
        played = 0  # each stage's episodes go on from the one before
        for stage in SAMPLING_STAGES:
            sampled = _csv(run_dir / f"{stage}_samples.csv")
            episodes = [played + float(row["episode"]) for row in sampled]
            best = "best answer (trained on)" if stage == "rft" else "chosen answer (best)"
            for key, name, style in (("sampled", f"{STAGE_NAMES[stage]} samples", "o-"),
                                     ("greedy", f"{STAGE_NAMES[stage]} greedy", "s--"),
                                     ("best", best, "^-."), ("champion", f"champion ({STAGE_NAMES[stage]})", ":")
                                     ) if sampled else ():
                ax.plot(episodes, [float(row[key]) for row in sampled], style, label=name,
                        color=COLORS["heuristic"] if key in ("champion", "best") else COLORS[stage])
            played += len(sampled)
        grpo = _csv(run_dir / "grpo_log.csv")
        steps, reward = _series(grpo, "reward")
        _, spread = _series(grpo, "reward_std")
        if steps:
            ax.errorbar(steps, reward, yerr=spread if len(spread) == len(reward) else None, marker="o", capsize=3,
                        color=COLORS["grpo"], label="GRPO completions")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, frameon=False)
        axis = "episode played / GRPO step" if played and steps else "episode played" if played else "GRPO step"
        ax.set(xlabel=axis, ylabel="mean rollout reward", title=f"Reward-driven stage\n{title}")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if played or steps:
            save(fig, "reward.png")
        else:
            plt.close(fig)

        rows = summary["holdout"]
        policies = [row["policy"] for row in rows]
        fig, ax = plt.subplots(figsize=(8, 4.4))
        means = [row["mean_score"] for row in rows]
        errors = [[m - row["ci_low"] for m, row in zip(means, rows, strict=True)],
                  [row["ci_high"] - m for m, row in zip(means, rows, strict=True)]]
        bars = ax.bar([label(p, summary["final"], short=True) for p in policies], means, yerr=errors, capsize=4,
                      color=[color(p) for p in policies])
        for bar, row in zip(bars, rows, strict=True):
            if row.get("valid_action_rate") is not None:
                ax.annotate(f"valid {100 * row['valid_action_rate']:.0f} %",
                            (bar.get_x() + bar.get_width() / 2, row["ci_high"] + 0.03), ha="center", fontsize=10)
        ax.set(ylim=(0, 1.08), ylabel="holdout score (95 % CI)", title=f"Holdout\n{title}")
        ax.tick_params(axis="x", rotation=25)
        plt.setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")
        save(fig, "holdout.png")

        components = [f"mean_{name}" for name in summary["components"]]
        fig, ax = plt.subplots(figsize=(8, 4.8))
        width = 0.8 / max(1, len(rows))
        for index, policy in enumerate(policies):
            ax.bar([i + index * width for i in range(len(components))],
                   [rows[index].get(c) or 0.0 for c in components], width=width, label=label(policy, summary["final"]),
                   color=color(policy))
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(components))],
                      [c.removeprefix("mean_").replace("_", "\n") for c in components])
        ax.set(ylim=(0, 1), ylabel="holdout mean", title=f"Reward components\n{title}")
        # Below the axes, so that it covers no bar (the champion's are the tallest).
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=3, frameon=False)
        save(fig, "components.png")
    return made
