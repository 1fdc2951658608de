"""The Training tab: the committed evidence of `aaos train` for the environment shown — what was trained and how,
the holdout comparison of the baselines and the model before and after training, the verdicts, the plots and the
command that reproduces the run — with its event (picking an environment shows that environment's evidence).

The evidence is read from results/training/<env id>/ (summary.json and plots/*.png, as the report stage of
aaos.training.pipeline writes them, and the leaderboard of an `aaos bench` run on a salted holdout in confirmation/
where there is one): the checkout's, or the copy a wheel carries (aaos.data). An environment without one gets a note
saying so with the command that produces it; a summary.json that cannot be used gets a message naming the problem.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import gradio as gr
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

import aaos
from aaos.bench.report import CHAMPION, GATE_MARGIN, GateResult, gate
from aaos.bench.runner import read_records
from aaos.core.html import esc, humanize, items, pill
from aaos.core.spec import EnvSpec
from aaos.data import data_dir
from aaos.policies import LOCAL_TRAINED
from aaos.training.pipeline import CONFIRMATION, command
from aaos.training.plots import PLOTS
from aaos.ui import formatting, names, prose
from aaos.ui.wiring import Outputs, Ui

RESULTS_ROOT = data_dir("results") / "training"
"""Where `aaos train` runs are committed, one folder per environment id."""
DEFAULT_PRESET = "cpu"
"""The preset the command suggests for an environment without results (aaos train's default)."""
BAR = "random"
"""The baseline a trained model must beat besides the untrained one (which may score nothing at all)."""
PLOT_SLOTS: dict[str, str] = {name: f"training_{name.removesuffix('.png')}" for name in PLOTS}
"""Each plot's image component, by the plot's file name."""
REWARD_PLOT, REWARD_STAGES = "reward.png", ("rft", "dpo", "grpo")
"""The plot of the reward-driven stages, shown only for a run that trained one (a file left by an earlier run in the
folder would show a stage this run did not train)."""
WIDE_PLOT = "components.png"
"""The plot with a legend of every policy: across the tab's width, where its legend reads."""
MAX_PROBLEMS = 5
"""At most this many problems of a summary.json are named."""
OUTPUTS: tuple[str, ...] = ("training_about", "training_box", "training_table", "training_verdicts",
                            *PLOT_SLOTS.values(), "training_command")
"""What `choose_env` renders."""


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True)


class Gate(_Strict):
    verdict: Literal["PROMOTE", "NO_PROMOTE"]
    reasons: list[str]


class Dataset(_Strict):
    episodes: int
    sft_rows: int
    dagger_rows: int
    rft_rows: int = 0
    """0 in the summaries of runs from before the RFT stage."""
    dpo_pairs: int = 0
    """0 in the summaries of runs from before the DPO stage."""
    grpo_prompts: int


class HoldoutRow(_Strict):
    """One policy's holdout results; `means` holds its mean_<component> values by their key in summary.json."""

    policy: str
    episodes: int
    mean_score: float
    ci_low: float
    ci_high: float
    fallback_rate: float
    hard_violations_per_episode: float
    valid_action_rate: float | None
    means: dict[str, float | None]

    @model_validator(mode="before")
    @classmethod
    def _gather_means(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {**data, "means": {key: value for key, value in data.items()
                                  if key.startswith("mean_") and key != "mean_score"}}

    def component(self, name: str) -> float | None:
        return self.means.get(f"mean_{name}")


class Summary(_Strict):
    """The part of summary.json the tab shows (the rest is ignored)."""

    env: str
    task: str
    preset: str
    seed: int
    model: str
    mode: str
    final: str
    """The model the run ships (the one after its last training stage): the policy the verdicts judge."""
    trained: list[str]
    dataset: Dataset
    holdout: list[HoldoutRow]
    beats_untrained: bool
    beats_random: bool
    gate_vs_champion: Gate
    stage_seconds: dict[str, float | None]
    evaluation_kept: list[str] = []
    """The policies whose evaluation episodes were played by an earlier run of the stage (the same models)."""


def _repo_path(path: Path) -> str:
    """`path` as the repository names it (results/training/...), where it is inside the results folder."""
    top = data_dir("results").parent
    return str(path.relative_to(top)) if path.is_relative_to(top) else str(path)


@dataclass(frozen=True)
class Confirmation:
    """The gate judged again on a salted holdout (aaos.training.pipeline.CONFIRMATION): the shipped model's and the
    champion's leaderboard rows there, by policy, and the verdict."""

    rows: dict[str, dict[str, Any]]
    gate: GateResult
    salt: str


@dataclass(frozen=True)
class Evidence:
    """One environment's committed `aaos train` run: its summary, the plots it has, by file name, and its
    confirmation where there is one."""

    summary: Summary
    plots: dict[str, Path]
    confirmation: Confirmation | None = None


def confirmation(folder: Path) -> Confirmation | None:
    """The confirmation in `folder`: the rows `aaos bench` wrote (leaderboard.json) and the salt of its episodes
    (results.jsonl); None where there is none, or it holds no salted holdout rows of both the shipped model and the
    champion."""
    board, results = (folder / CONFIRMATION / name for name in ("leaderboard.json", "results.jsonl"))
    if not (board.is_file() and results.is_file()):
        return None
    salts = {r.get("holdout_salt") for r in read_records(results) if r.get("split") == "holdout"}
    rows = {row["policy"]: row for row in json.loads(board.read_text(encoding="utf-8"))
            if row["split"] == "holdout" and row["policy"] in (LOCAL_TRAINED, CHAMPION)}
    if len(rows) < 2 or len(salts) != 1 or None in salts:
        return None
    return Confirmation(rows, gate(list(rows.values()), LOCAL_TRAINED), str(salts.pop()))


def load(env_id: str, root: Path = RESULTS_ROOT) -> Evidence | None:
    """The committed run of `env_id` in `root`/<env id>/, or None when it has no summary.json there. A summary.json
    that cannot be used raises ValueError naming the file and what is wrong with it."""
    folder = root / env_id
    path = folder / "summary.json"
    if not path.is_file():
        return None
    try:
        summary = Summary.model_validate_json(path.read_bytes())
    except OSError as error:
        raise ValueError(f"{_repo_path(path)}: cannot be read ({error.strerror or error})") from error
    except ValidationError as error:
        problems = "; ".join(": ".join(filter(None, (".".join(map(str, e["loc"])), e["msg"])))
                             for e in error.errors()[:MAX_PROBLEMS])
        raise ValueError(f"{_repo_path(path)}: {problems}") from error
    if summary.env != env_id:
        raise ValueError(f"{_repo_path(path)}: env is {summary.env!r}, not {env_id!r}")
    plots = {name: folder / "plots" / name for name in PLOTS if (folder / "plots" / name).is_file()
             and (name != REWARD_PLOT or set(summary.trained) & set(REWARD_STAGES))}
    return Evidence(summary, plots, confirmation(folder))


def _share(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


@dataclass(frozen=True)
class Column:
    """A column of the comparison: its title and a row's cell text."""

    title: str
    cell: Callable[[HoldoutRow], str]


COLUMNS: tuple[Column, ...] = (
    Column("Holdout episodes", lambda r: str(r.episodes)),
    Column("Mean score (95 % CI)", lambda r: f"{r.mean_score:.3f} ({r.ci_low:.3f}\u2013{r.ci_high:.3f})"),
    Column("Valid actions", lambda r: _share(r.valid_action_rate)),
    # Only the model's rows have a valid-action rate; a baseline never falls back.
    Column("Fallbacks", lambda r: "—" if r.valid_action_rate is None else _share(r.fallback_rate)),
    Column("Hard violations per episode", lambda r: f"{r.hard_violations_per_episode:.2f}"),
)
"""The comparison's columns after the policy's (aaos.ui.names); one per reward component of the environment follows
them."""


def _component(name: str) -> Column:
    return Column(humanize(name), lambda r: _number(r.component(name)))


def _board(rows: Sequence[HoldoutRow], columns: Sequence[Column], elem_id: str, final: str) -> str:
    head = "<th>Policy</th>" + "".join(f"<th>{esc(c.title)}</th>" for c in columns)
    body = "".join(('<tr class="aaos-trained">' if row.policy == final else "<tr>")
                   + f"<td>{esc(names.policy_name(row.policy, final))}</td>"
                   + "".join(f"<td>{esc(c.cell(row))}</td>" for c in columns) + "</tr>" for row in rows)
    return (f'<div class="aaos-board-wrap"><table class="aaos-board" id="{elem_id}"><thead><tr>{head}</tr>'
            f"</thead><tbody>{body}</tbody></table></div>")


def table(summary: Summary, spec: EnvSpec) -> str:
    """The holdout rows as two HTML tables, the scores and then the reward components (one table of both is wider
    than the tab at 1280 px); each scrolls sideways on a narrow screen. The shipped model's rows are marked."""
    components = [_component(c.name) for c in spec.reward_components]
    return (_board(summary.holdout, COLUMNS, "aaos-training-board", summary.final)
            + f'<h4 class="aaos-board-title">{esc(prose.TRAINING_COMPONENTS_TITLE)}</h4>'
            + _board(summary.holdout, components, "aaos-training-components", summary.final))


def _verdict(beaten: bool) -> str:
    return pill("yes", "applied") if beaten else pill("no", "rejected")


def _gate(gate_: Gate | GateResult) -> str:
    verdict = pill(gate_.verdict.replace("_", " ").lower(), "applied" if gate_.verdict == "PROMOTE" else "rejected")
    return f"<p>{verdict}</p>{items([esc(reason) for reason in gate_.reasons], '')}"


def _confirmed(found: Confirmation, trained: str) -> str:
    """The confirmation's verdict, its reasons and each policy's mean there."""
    means = "".join(f"<li>{esc(names.policy_name(policy))}: {row['mean_score']:.3f} ({row['ci_low']:.3f}\u2013"
                    f"{row['ci_high']:.3f}), {row['episodes']} episodes</li>" for policy, row in found.rows.items())
    return (f'<h4 id="aaos-training-confirmation">{esc(prose.CONFIRMATION_TITLE.format(trained=trained))}</h4>'
            f"{_gate(found.gate)}<ul>{means}</ul>"
            f'<p class="aaos-help">{esc(prose.CONFIRMATION_RULE.format(salt=found.salt))}</p>')


def verdicts(summary: Summary, confirmed: Confirmation | None = None) -> str:
    """Whether the trained model beats the untrained one and random legal actions (each with its mean: an untrained
    model that scores nothing is a low bar), the promotion gate against the champion with its reasons, and the
    gate on a salted holdout where the run was `confirmed` there."""
    trained, untrained, bar = (names.policy_name(policy, summary.final)
                               for policy in (summary.final, names.UNTRAINED_STAGE, BAR))
    means = {row.policy: row.mean_score for row in summary.holdout}
    lines = "".join(f"<p>Beats {esc(name)} ({esc(_number(means.get(policy)))}): {_verdict(beaten)}</p>"
                    for policy, name, beaten in ((names.UNTRAINED_STAGE, untrained, summary.beats_untrained),
                                                 (BAR, bar, summary.beats_random)))
    return (f'<div class="aaos-gate" id="aaos-training-verdicts">'
            f"<h4>{esc(trained)} vs {esc(untrained)} and {esc(bar)}</h4>{lines}"
            f'<p class="aaos-help">{esc(prose.TRAINING_BEATS_RULE.format(trained=trained))}</p>'
            f"<h4>Promotion gate: {esc(trained)} vs the champion</h4>{_gate(summary.gate_vs_champion)}"
            f'<p class="aaos-help">{esc(prose.GATE_RULE.format(margin=GATE_MARGIN))}</p>'
            f"{_confirmed(confirmed, trained) if confirmed else ''}</div>")


def about(spec: EnvSpec, summary: Summary) -> str:
    """What was trained and how: the model, the task, the preset, the datasets and the time each stage took."""
    timed = {stage: seconds for stage, seconds in summary.stage_seconds.items() if seconds is not None}
    stages = ", ".join(f"{prose.TRAINING_STAGES.get(stage, stage)} {seconds / 60:.1f} min"
                       for stage, seconds in timed.items())
    text = prose.TRAINING_ABOUT.format(
        model=summary.model, task=formatting.task_title(spec, summary.task), env=spec.title, preset=summary.preset,
        seed=summary.seed, episodes=summary.dataset.episodes, sft_rows=summary.dataset.sft_rows,
        later="".join(prose.TRAINING_LATER[stage].format(**summary.dataset.model_dump())
                      for stage in summary.trained if stage in prose.TRAINING_LATER),
        mode=summary.mode, stages=stages or "not recorded",
        minutes=sum(timed.values()) / 60)
    if summary.evaluation_kept:
        kept = ", ".join(names.policy_name(policy, summary.final) for policy in summary.evaluation_kept)
        text += prose.TRAINING_KEPT.format(policies=kept)
    return f'<div class="aaos-training-about"><p>{esc(text)}</p></div>'


@dataclass(frozen=True)
class View:
    """What the tab shows for one environment: with `found`, the evidence; without, `about` says why not."""

    about: str
    command: str
    command_label: str
    found: bool = False
    table: str = ""
    verdicts: str = ""
    plots: dict[str, Path] = field(default_factory=dict)


def view(env_id: str, root: Path = RESULTS_ROOT) -> View:
    """The tab for `env_id`, from its evidence in `root` (see load)."""
    spec = aaos.spec(env_id)
    produce = command(env_id, spec.default_task, DEFAULT_PRESET)
    try:
        evidence = load(env_id, root)
    except ValueError as error:
        return View(formatting.message(prose.TRAINING_UNUSABLE.format(env=spec.title, problem=error), "error"),
                    produce, prose.TRAINING_PRODUCE)
    if evidence is None:
        note = prose.NO_TRAINING.format(env=spec.title, folder=_repo_path(root / env_id))
        return View(formatting.message(note), produce, prose.TRAINING_PRODUCE)
    summary = evidence.summary
    return View(about(spec, summary), command(env_id, summary.task, summary.preset, summary.seed),
                prose.TRAINING_REPRODUCE, found=True, table=table(summary, spec),
                verdicts=verdicts(summary, evidence.confirmation), plots=evidence.plots)


def build(ui: Ui, env_id: str) -> None:
    """The tab, inside the page's gr.Tabs, showing `env_id`'s evidence."""
    # The plots are committed files: served as they are, from wherever the Space was started.
    plots: list[str | Path] = [RESULTS_ROOT / env / "plots" for env in aaos.env_ids()]
    gr.set_static_paths(plots)
    shown = view(env_id, RESULTS_ROOT)
    with gr.Tab("Training", id="training", elem_id="aaos-tab-training"):
        ui["training_about"] = gr.HTML(shown.about, elem_id="aaos-training-about")
        with gr.Column(visible=shown.found, elem_id="aaos-training-box") as box:
            ui["training_box"] = box
            gr.Markdown(f"### {prose.TRAINING_TABLE_TITLE}", elem_classes=["aaos-panel-title"])
            ui["training_table"] = gr.HTML(shown.table, elem_id="aaos-training-table")
            ui["training_verdicts"] = gr.HTML(shown.verdicts, elem_id="aaos-training-verdicts-box")
            narrow = [name for name in PLOT_SLOTS if name != WIDE_PLOT]
            for row in (narrow[:2], narrow[2:], [WIDE_PLOT]):
                with gr.Row(equal_height=False):
                    for name in row:
                        # No label over the image: each plot carries its own title.
                        ui[PLOT_SLOTS[name]] = gr.Image(
                            shown.plots.get(name), show_label=False, alt_text=prose.PLOT_TITLES.get(name, name),
                            interactive=False, buttons=["download", "fullscreen"], visible=name in shown.plots,
                            min_width=300, elem_id=f"aaos-{PLOT_SLOTS[name].replace('_', '-')}")
        ui["training_command"] = gr.Code(shown.command, language="shell", label=shown.command_label, lines=1,
                                         interactive=False, show_line_numbers=False, wrap_lines=True,
                                         buttons=["copy"], elem_id="aaos-training-command")


def wire(ui: Ui) -> None:
    """Connect the sidebar's environment choice to the tab."""
    ui.event(ui["env"].input, choose_env, ("env",), OUTPUTS)


def choose_env(env_id: str) -> Outputs:
    """An environment was picked: its training evidence, or why there is none. Outputs: OUTPUTS."""
    shown = view(env_id, RESULTS_ROOT)
    return {"training_about": shown.about, "training_box": gr.update(visible=shown.found),
            "training_table": shown.table, "training_verdicts": shown.verdicts,
            **{slot: gr.update(value=shown.plots.get(name), visible=name in shown.plots)
               for name, slot in PLOT_SLOTS.items()},
            "training_command": gr.update(value=shown.command, label=shown.command_label)}
