"""The Space's Training tab on a made-up run folder (the shape aaos.training.pipeline's report writes): the
comparison and verdicts read from it, an environment without results, a summary.json that cannot be used, and
the tab inside the whole page."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from PIL import Image
from ui_fixtures import assert_no_reprs, html_table

import aaos
from aaos.bench.report import write_reports
from aaos.bench.stats import summarise
from aaos.core.html import humanize
from aaos.policies import LOCAL_TRAINED
from aaos.training import plots
from aaos.training.pipeline import CONFIRMATION
from aaos.training.plots import PLOTS
from aaos.ui import names, prose, training_tab
from aaos.ui.layout import build_blocks

POLICIES = ("noop", "random", "heuristic", "untrained", "sft", "dagger")
MODELS = ("untrained", "sft", "dagger", "dagger_legal")


def holdout_row(policy: str, index: int) -> dict[str, Any]:
    mean = 0.2 + 0.1 * index
    fallback = {"untrained": 0.6, "sft": 0.125, "dagger": 0.08}.get(policy, 0.0)
    return {"policy": policy, "episodes": 12, "mean_score": mean, "ci_low": mean - 0.04, "ci_high": mean + 0.05,
            "fallback_rate": fallback, "invalid_action_rate": 0.01, "hard_violations_per_episode": 0.5 * index,
            "mean_episode_s": 40.0 + index, "valid_action_rate": 1 - fallback if policy in MODELS else None,
            "mean_call_latency_s": 0.7 if policy in MODELS else None,
            **{f"mean_{c.name}": mean + 0.01 * k for k, c in enumerate(aaos.spec("org").reward_components)}}


def sample_summary() -> dict[str, Any]:
    return {"env": "org", "task": "org_simulation", "preset": "cpu", "seed": 3, "model": "SmolLM2-135M-Instruct",
            "mode": "compact", "settings": {"stages": ["collect", "report"], "env": "org"},
            "final": "dagger", "trained": ["sft", "dagger"],
            "dataset": {"episodes": 8, "sft_rows": 1840, "dagger_rows": 312, "grpo_prompts": 32},
            "holdout": [holdout_row(policy, index) for index, policy in enumerate(POLICIES)],
            "beats_untrained": True, "beats_random": True,
            "gate_vs_untrained": {"verdict": "PROMOTE", "reasons": ["dagger scores above untrained"]},
            "gate_vs_champion": {"verdict": "NO_PROMOTE",
                                 "reasons": ["dagger's mean 0.700 is 0.200 below heuristic's (margin 0.02)"]},
            "stage_seconds": {"collect": 90.0, "sft": 1200.0, "dagger": 600.0, "grpo": 0.1, "export": 12.0,
                              "evaluate": 840.0}}


def write_run(root: Path, summary: dict[str, Any] | str, plots: tuple[str, ...] = PLOTS) -> Path:
    """A run folder for org under `root`, with `summary` (text as is) and tiny PNGs for `plots`."""
    folder = root / "org"
    (folder / "plots").mkdir(parents=True)
    text = summary if isinstance(summary, str) else json.dumps(summary)
    (folder / "summary.json").write_text(text, encoding="utf-8")
    for name in plots:
        Image.new("RGB", (8, 4), "white").save(folder / "plots" / name)
    return folder


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A results root holding a complete run of org."""
    write_run(tmp_path, sample_summary())
    return tmp_path


def test_the_loader_reads_the_rows_in_order_with_the_plots(sample: Path) -> None:
    evidence = training_tab.load("org", sample)
    assert evidence is not None
    assert [row.policy for row in evidence.summary.holdout] == list(POLICIES)
    assert evidence.summary.holdout[5].component("collaboration") == pytest.approx(0.71)
    # no reward-driven stage in this run: its plot is left out, though a file of that name is in the folder
    assert evidence.plots == {name: sample / "org" / "plots" / name for name in PLOTS
                              if name != training_tab.REWARD_PLOT}


@pytest.mark.parametrize(("trained", "shown"), [(["sft", "dagger"], False), (["sft", "grpo"], True),
                                                (["sft", "dagger", "rft"], True)])
def test_the_reward_plot_shows_only_for_a_run_that_trained_a_reward_stage(tmp_path: Path, trained: list[str],
                                                                         shown: bool) -> None:
    write_run(tmp_path, sample_summary() | {"trained": trained, "final": trained[-1]})
    assert (training_tab.REWARD_PLOT in training_tab.view("org", tmp_path).plots) == shown


def test_the_view_shows_the_comparison_the_verdicts_the_run_and_its_command(sample: Path) -> None:
    shown = training_tab.view("org", sample)
    assert shown.found and shown.command_label == prose.TRAINING_REPRODUCE
    assert shown.command == ("aaos train --env org --task org_simulation --preset cpu --seed 3 "
                             "--out runs/train/org-cpu --results results/training/org")
    write_run(sample / "changed", sample_summary() | {"preset": "cpu-long sft_steps=240 rft_keep=learner"})
    assert training_tab.view("org", sample / "changed").command == (
        "aaos train --env org --task org_simulation --preset cpu-long --set sft_steps=240 --set rft_keep=learner "
        "--seed 3 --out runs/train/org-cpu-long --results results/training/org")

    board = html_table(shown.table)
    scores, parts = shown.table.split(prose.TRAINING_COMPONENTS_TITLE)
    components = [humanize(c.name) for c in aaos.spec("org").reward_components]
    assert list(board[0]) == ["Policy", *(c.title for c in training_tab.COLUMNS)]
    assert [row["Policy"] for row in board] == [names.policy_name(p, "dagger") for p in POLICIES]
    by_component = html_table(parts)
    assert list(by_component[0]) == ["Policy", *components]
    assert [row["Policy"] for row in by_component] == [names.policy_name(p, "dagger") for p in POLICIES]
    champion, trained = board[2], board[5]
    assert champion["Policy"] == "Champion (heuristic)" and champion["Valid actions"] == champion["Fallbacks"] == "—"
    assert trained["Mean score (95 % CI)"] == "0.700 (0.660\u20130.750)"
    assert (trained["Valid actions"], trained["Fallbacks"]) == ("92 %", "8 %")
    assert trained["Hard violations per episode"] == "2.50" and trained["Holdout episodes"] == "12"
    assert by_component[5]["Collaboration"] == "0.710"
    assert '<tr class="aaos-trained">' in shown.table  # only the trained model's row stands out
    assert scores.count("aaos-trained") == parts.count("aaos-trained") == 1

    assert "SmolLM2-135M fine-tuned vs SmolLM2-135M untrained and Random legal actions" in shown.verdicts
    assert "Beats SmolLM2-135M untrained (0.500): <span class=\"aaos-pill aaos-applied\">yes" in shown.verdicts
    assert "Beats Random legal actions (0.300): <span class=\"aaos-pill aaos-applied\">yes" in shown.verdicts
    assert "aaos-rejected\">no promote" in shown.verdicts and "0.200 below heuristic" in shown.verdicts
    assert ("SmolLM2-135M-Instruct" in shown.about and "task Organisation simulation" in shown.about
            and "1,840 examples" in shown.about and "compact" in shown.about)
    assert "DAgger" in shown.about and "312 examples" in shown.about and "GRPO on" not in shown.about
    assert "SFT 20.0 min" in shown.about and "45.7 min in all" in shown.about
    assert "did not play again" not in shown.about


def test_the_run_says_which_evaluations_an_earlier_run_played(tmp_path: Path) -> None:
    write_run(tmp_path, sample_summary() | {"evaluation_kept": ["heuristic", "sft"]})
    about = training_tab.view("org", tmp_path).about
    assert ("did not play again the episodes of Champion (heuristic), SmolLM2-135M after SFT, which an earlier run"
            in about)


def test_an_untrained_win_and_a_promotion_read_as_such(tmp_path: Path) -> None:
    summary = sample_summary() | {"beats_untrained": False,
                                  "gate_vs_champion": {"verdict": "PROMOTE", "reasons": []}}
    write_run(tmp_path, summary)
    verdicts = training_tab.view("org", tmp_path).verdicts
    assert "aaos-rejected\">no" in verdicts and "aaos-applied\">promote" in verdicts


def confirmation_record(policy: str, seed: int, score: float, salt: str | None) -> dict[str, Any]:
    return {"policy": policy, "split": "holdout", "holdout_salt": salt, "env": "org", "env_version": "5",
            "reward_version": "3", "task": "org_simulation", "scenario": "s", "seed": seed, "score": score,
            "components": {"efficiency": score}, "actions": 10, "invalid_actions": 0, "hard_violations": 0,
            "llm": None, "wall_s": 0.1, "error": None}


@pytest.mark.parametrize("salt", ["e180f225f20d", None])
def test_a_confirmation_on_a_salted_holdout_shows_its_own_gate_under_the_summarys(tmp_path: Path,
                                                                                  salt: str | None) -> None:
    """The summary's gate says promote; played again on a salted holdout the model falls 0.05 short, and the tab
    says so with the salt's fingerprint. Public holdout episodes are no confirmation."""
    folder = write_run(tmp_path, sample_summary() | {"gate_vs_champion": {"verdict": "PROMOTE", "reasons": []}})
    records = [confirmation_record(policy, 10_000 + seed, score + 0.01 * seed, salt)
               for seed in range(5) for policy, score in ((LOCAL_TRAINED, 0.8), ("heuristic", 0.85))]
    (folder / CONFIRMATION).mkdir()
    (folder / CONFIRMATION / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    write_reports(summarise(records), folder / CONFIRMATION, records)  # as aaos bench --out writes them
    verdicts = training_tab.view("org", tmp_path).verdicts
    assert verdicts.count("aaos-applied\">promote") == 1
    if salt is None:
        assert "aaos-training-confirmation" not in verdicts and "no promote" not in verdicts
        return
    shown = verdicts[verdicts.index("aaos-training-confirmation"):]
    assert "aaos-rejected\">no promote" in shown and "holdout mean 0.820 is 0.050 below" in shown
    assert "SmolLM2-135M fine-tuned: 0.820 (" in shown and "5 episodes" in shown and salt in shown


def beats_random(verdicts: str) -> str:
    return re.search(r'Beats Random legal actions \([^)]+\): <span class="aaos-pill aaos-[a-z]+">([a-z ]+)<',
                     verdicts)[1]


def test_beating_random_is_the_summarys_verdict(tmp_path: Path) -> None:
    """An untrained model that scores 0.000 is a low bar: the verdicts also compare the trained model with random,
    as the summary records it."""
    for summary, shown in ((sample_summary() | {"beats_random": False}, "no"), (sample_summary(), "yes")):
        root = tmp_path / str(len(list(tmp_path.iterdir())))
        write_run(root, summary)
        assert beats_random(training_tab.view("org", root).verdicts) == shown


def test_the_final_model_decoding_every_legal_call_has_a_readable_name(tmp_path: Path) -> None:
    summary = sample_summary()
    summary["holdout"].append(holdout_row("dagger_legal", 6))
    write_run(tmp_path, summary)
    board = html_table(training_tab.view("org", tmp_path).table)
    assert board[-1]["Policy"] == "SmolLM2-135M fine-tuned, any legal call"


def test_the_plots_read_at_half_size_with_whole_steps_and_the_legend_off_the_bars(tmp_path: Path) -> None:
    """The tab shows two plots side by side: fonts of 10 pt and more, step axes in whole steps (not 1.5), the
    components' legend below the axes (it covered the champion's bars), every policy of the evaluation named."""
    plt = pytest.importorskip("matplotlib.pyplot", reason="matplotlib is in the optional [train] extra")

    summary = sample_summary()
    summary["holdout"].append(holdout_row("dagger_legal", 6))
    summary["components"] = [c.name for c in aaos.spec("org").reward_components]
    run = write_run(tmp_path, summary, plots=())
    (run / "sft_log.csv").write_text("step,loss\n" + "".join(f"{s},{2 / s}\n" for s in range(1, 6)), encoding="utf-8")
    (run / "dagger_log.csv").write_text("step,loss\n" + "".join(f"{s},{1 / s}\n" for s in range(1, 4)),
                                        encoding="utf-8")
    (run / "grpo_log.csv").write_text("step,reward,reward_std\n1,0.1,0.5\n2,0.2,0.4\n3,0.3,0.3\n4,0.2,0.2\n",
                                      encoding="utf-8")
    with plt.rc_context(plots.FONTS):
        made = plots.figures(run)
        try:
            assert list(made) == list(PLOTS)
            for fig in made.values():
                fig.canvas.draw()
                ax = fig.axes[0]
                assert min(label.get_fontsize() for label in ax.get_xticklabels() + ax.get_yticklabels()) >= 10
            for name in ("sft_loss.png", "reward.png"):
                ax = made[name].axes[0]
                low, high = ax.get_xlim()
                assert all(tick == int(tick) for tick in ax.get_xticks() if low <= tick <= high), name
            ax = made["components.png"].axes[0]
            renderer = made["components.png"].canvas.get_renderer()
            assert ax.get_legend().get_window_extent(renderer).y1 < ax.get_window_extent(renderer).y0
            assert [t.get_text() for t in ax.get_legend().get_texts()][-1] == f"{names.FINE_TUNED}, any legal call"
            assert min(t.get_fontsize() for t in ax.get_legend().get_texts()) >= 12  # read at half size
            ticks = [t.get_text() for t in made["holdout.png"].axes[0].get_xticklabels()]
            assert ticks[-1] == "fine-tuned, any legal" and "champion" in ticks
            loss = made["sft_loss.png"].axes[0]  # DAgger's loss goes on from SFT's last step
            assert [list(line.get_xdata()) for line in loss.get_lines()] == [[1, 2, 3, 4, 5], [6, 7, 8]]
        finally:
            plt.close("all")


def test_a_rerun_without_a_reward_driven_stage_leaves_no_earlier_reward_plot(tmp_path: Path) -> None:
    """A run folder rerun with the reward-driven stage turned off keeps the earlier run's plots/reward.png unless
    the report removes it; published, it would show a curve of a stage the run did not train."""
    pytest.importorskip("matplotlib.pyplot", reason="matplotlib is in the optional [train] extra")
    summary = sample_summary()
    summary["components"] = [c.name for c in aaos.spec("org").reward_components]
    run = write_run(tmp_path, summary)
    (run / "sft_log.csv").write_text("step,loss\n1,2.0\n2,1.0\n", encoding="utf-8")
    written = plots.write_plots(run)
    assert sorted(path.name for path in written) == sorted(set(PLOTS) - {"reward.png"})
    assert sorted(path.name for path in (run / "plots").iterdir()) == sorted(path.name for path in written)


def test_picking_an_environment_renders_every_output_by_name(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(training_tab, "RESULTS_ROOT", sample)
    out = training_tab.choose_env("org")
    assert set(out) == set(training_tab.OUTPUTS)
    assert out["training_box"]["visible"] and out["training_command"]["label"] == prose.TRAINING_REPRODUCE
    for name, slot in training_tab.PLOT_SLOTS.items():
        if name == training_tab.REWARD_PLOT:  # the sample run trained no reward-driven stage
            assert not out[slot]["visible"] and out[slot]["value"] is None
        else:
            assert out[slot]["visible"] and out[slot]["value"] == sample / "org" / "plots" / name
    assert_no_reprs(out)


def test_missing_plots_are_hidden(tmp_path: Path) -> None:
    write_run(tmp_path, sample_summary(), plots=("holdout.png",))
    assert list(training_tab.view("org", tmp_path).plots) == ["holdout.png"]


def test_an_environment_without_results_says_so_with_the_command(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    assert training_tab.load("inbox", tmp_path) is None
    shown = training_tab.view("inbox", tmp_path)
    assert not shown.found and shown.command_label == prose.TRAINING_PRODUCE
    assert "No training results are committed for Support Inbox" in shown.about and "aaos-message-info" in shown.about
    task = aaos.spec("inbox").default_task
    assert shown.command == (f"aaos train --env inbox --task {task} --preset cpu --out runs/train/inbox-cpu "
                             "--results results/training/inbox")

    monkeypatch.setattr(training_tab, "RESULTS_ROOT", tmp_path)
    out = training_tab.choose_env("inbox")
    assert not out["training_box"]["visible"]
    assert all(not out[slot]["visible"] and out[slot]["value"] is None for slot in training_tab.PLOT_SLOTS.values())
    assert_no_reprs(out)


def broken(key: str, value: Any) -> dict[str, Any]:
    summary = sample_summary()
    summary["holdout"][5][key] = value
    return summary


@pytest.mark.parametrize(("summary", "problem"), [
    ('{"env": "org", ', "summary.json: Invalid JSON"),
    ("[]", "summary.json: Input should be an object"),
    ({key: value for key, value in sample_summary().items() if key != "holdout"}, "holdout: Field required"),
    (broken("mean_score", "high"), "holdout.5.mean_score: Input should be a valid number"),
    (broken("mean_collaboration", "0.7"), "holdout.5.means.mean_collaboration: Input should be a valid number"),
    (sample_summary() | {"gate_vs_champion": {"verdict": "MAYBE", "reasons": []}}, "gate_vs_champion.verdict"),
    (sample_summary() | {"env": "inbox"}, "env is 'inbox', not 'org'"),
])
def test_a_summary_that_cannot_be_used_gets_a_message_naming_the_problem(
        tmp_path: Path, summary: dict[str, Any] | str, problem: str) -> None:
    write_run(tmp_path, summary)
    with pytest.raises(ValueError, match=r"summary\.json"):
        training_tab.load("org", tmp_path)
    shown = training_tab.view("org", tmp_path)
    assert not shown.found and "aaos-message-error" in shown.about
    assert "cannot be shown" in shown.about and "summary.json" in shown.about and problem in shown.about
    assert shown.command_label == prose.TRAINING_PRODUCE and "--env org" in shown.command


def test_the_tab_builds_inside_the_page_and_follows_the_environment(sample: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(training_tab, "RESULTS_ROOT", sample)
    blocks = build_blocks()
    by_id = {b.elem_id: b for b in blocks.blocks.values() if getattr(b, "elem_id", None)}
    tab = by_id["aaos-tab-training"]
    assert isinstance(tab, gr.Tab) and tab.label == "Training"
    tabs = [b.label for b in by_id["aaos-tabs"].children]
    assert tabs[tabs.index("Benchmark") + 1] == "Training"
    assert by_id["aaos-training-box"].visible and "aaos-training-board" in by_id["aaos-training-table"].value
    images = {name: by_id[f"aaos-{slot.replace('_', '-')}"] for name, slot in training_tab.PLOT_SLOTS.items()}
    assert all(image.visible == (name != training_tab.REWARD_PLOT) for name, image in images.items())
    wide = images[training_tab.WIDE_PLOT]  # its legend names every policy: across the tab, alone in its row
    assert isinstance(wide.parent, gr.Row) and wide.parent.children == [wide]
    wired = [fn for fn in blocks.fns.values() if getattr(fn.fn, "__wrapped__", None) is training_tab.choose_env]
    assert len(wired) == 1 and [t[1] for t in wired[0].targets] == ["input"]


def test_the_page_builds_without_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(training_tab, "RESULTS_ROOT", tmp_path)
    by_id = {b.elem_id: b for b in build_blocks().blocks.values() if getattr(b, "elem_id", None)}
    assert not by_id["aaos-training-box"].visible
    assert "No training results are committed" in by_id["aaos-training-about"].value
