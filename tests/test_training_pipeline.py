"""`aaos train` in miniature: every stage on a sliver (two SFT steps, one DAgger round of one episode and one step,
one GRPO step, one holdout episode per policy with the real SmolLM2 on llama.cpp; on the chief-of-staff arena's
20-step week, whose one-role prompts are the shortest), checking each stage's files and their schema, not the
scores; and the datasets it trains on are the same on every run (fast, no model)."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import pytest

import aaos
from aaos.agents.local_model import ADAPTER_FILE, LocalModelServer
from aaos.cli import main as cli
from aaos.training import pipeline
from aaos.training.decisions import parse_answer
from aaos.training.pipeline import (
    BASELINES,
    CONFIRMATION,
    EVALUATED,
    GROUP_TRIES,
    PUBLISHED,
    STAGE_FUNCTIONS,
    STAGES,
    Run,
    collect,
    keep_unchanged_evaluations,
    learner_config,
    publish,
)
from aaos.training.plots import PLOTS
from aaos.training.presets import PRESET_FIELDS, PRESETS, Preset, overridden

PNG = b"\x89PNG\r\n\x1a\n"
MODELS = tuple(PRESETS["mini"].evaluated())


def _run(out: Path) -> Run:
    return Run(out, "org", "org_simulation", "mini", PRESETS["mini"])


def test_the_datasets_are_the_same_on_every_run_and_answer_in_compact_mode(tmp_path: Path) -> None:
    first, second = _run(tmp_path / "a"), _run(tmp_path / "b")
    for run_ in (first, second):
        run_.out.mkdir()
        collect(run_)
    for name in ("episodes.jsonl", "sft.jsonl", "grpo.jsonl"):
        assert (first.out / name).read_bytes() == (second.out / name).read_bytes(), name
    spec = aaos.spec("org")
    rows = [json.loads(line) for line in (first.out / "sft.jsonl").read_text(encoding="utf-8").splitlines()]
    scenarios = {s["id"] for s in aaos.list_scenarios("train", env="org")}
    assert {row["scenario"] for row in rows} == scenarios and all(row["role"] is None for row in rows)
    row = rows[0]
    env = aaos.make(row["task"], scenario=row["scenario"], seed=row["seed"])
    observation = env.reset()
    assert row["messages"][1]["content"].startswith("Seen:")  # the compact prompt, not the joint one
    assert set(parse_answer(spec, None, row["messages"][-1]["content"], observation, "compact")) == set(spec.roles)


def test_set_changes_only_the_fields_it_names_and_the_label_says_which() -> None:
    label, preset = overridden("cpu-long", ["rft_rounds=2", " lora_layers = none", "learning_rate=5e-4",
                                            "rft_keep=learner", "refine_learning_rate=2e-4"])
    assert label == "cpu-long rft_rounds=2 lora_layers=none learning_rate=5e-4 rft_keep=learner " \
                    "refine_learning_rate=2e-4"
    assert preset == dataclasses.replace(PRESETS["cpu-long"], rft_rounds=2, lora_layers=None, learning_rate=5e-4,
                                         rft_keep="learner", refine_learning_rate=2e-4)
    assert overridden("mini", ["refine_learning_rate=None"])[1].refine_learning_rate is None
    assert overridden("cpu", []) == ("cpu", PRESETS["cpu"])


def test_the_model_taught_decodes_as_the_preset_says_and_the_evaluation_as_ever() -> None:
    server = LocalModelServer(port=1)  # never started: a config only names its address
    _, free = overridden("cpu-long", ["learner_decoding=legal"])
    assert learner_config(server, PRESETS["cpu-long"]).decoding == "safe"
    assert learner_config(server, free).decoding == "legal" and learner_config(server, free).fallback == "noop"
    assert free.evaluated() == PRESETS["cpu-long"].evaluated()


@pytest.mark.parametrize(("assignment", "said"), [
    ("rft_round=2", "FIELD one of train_seeds"), ("rft_rounds", "FIELD=VALUE"),
    ("rft_rounds=two", "rft_rounds takes an integer, got 'two'"), ("learning_rate=fast", "takes a number"),
    ("rft_rounds=-1", "must be at least 0"), ("batch_size=0", "batch_size must be at least 1"),
    ("rft_keep=teacher", "rft_keep takes one of champion, learner, got 'teacher'"),
    ("rft_data=best", "rft_data takes one of mixed, gains, got 'best'"),
    ("learner_decoding=free", "learner_decoding takes one of legal, safe, got 'free'"),
    ("refine_learning_rate=slow", "refine_learning_rate takes a number or none, got 'slow'")])
def test_a_bad_set_is_refused_before_anything_is_written(tmp_path: Path, assignment: str, said: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert cli(["train", "--env", "chief_of_staff", "--preset", "mini", "--set", assignment, "--out", str(out)]) == 2
    assert said in capsys.readouterr().err and not out.exists()


def test_a_changed_setting_reruns_its_stage_and_those_after_it_only(tmp_path: Path) -> None:
    assert sorted(name for names in PRESET_FIELDS.values() for name in names) == sorted(
        field.name for field in dataclasses.fields(Preset))  # every setting belongs to one stage
    before = _run(tmp_path)
    for stage in STAGES[:-1]:
        before.finish(stage, 1.0)
    more_grpo = dataclasses.replace(before, preset=dataclasses.replace(before.preset, grpo_steps=9))
    assert [stage for stage in STAGES[:-1] if more_grpo.done(stage)] == ["collect", "sft", "dagger", "rft", "dpo"]
    more_pairs = dataclasses.replace(before, preset=dataclasses.replace(before.preset, dpo_margin=0.5))
    assert [stage for stage in STAGES[:-1] if more_pairs.done(stage)] == ["collect", "sft", "dagger", "rft"]
    more_samples = dataclasses.replace(before, preset=dataclasses.replace(before.preset, rft_samples=9))
    assert [stage for stage in STAGES[:-1] if more_samples.done(stage)] == ["collect", "sft", "dagger"]
    for changed in ({"dagger_steps": 9}, {"learner_decoding": "legal"}, {"refine_learning_rate": 9e-4}):
        after = dataclasses.replace(before, preset=dataclasses.replace(before.preset, **changed))
        assert [stage for stage in STAGES[:-1] if after.done(stage)] == ["collect", "sft"]
    other_seed = dataclasses.replace(before, seed=1)
    assert not any(other_seed.done(stage) for stage in STAGES)


def _evaluated(run_: Run) -> dict[str, str]:
    """Fake evaluation files of every policy the run evaluates, each its own text; what is now in them."""
    names = [*BASELINES, *run_.preset.evaluated()]
    (run_.out / "eval.jsonl").write_text("".join(json.dumps({"policy": n, "score": i}) + "\n"
                                                 for i, n in enumerate(names)), encoding="utf-8")
    for folder, suffix, kept in (("eval_steps", ".jsonl", run_.preset.watched()),
                                 ("eval_probe", ".json", run_.preset.trained()[-2:])):
        (run_.out / folder).mkdir(exist_ok=True)
        for name in kept:
            (run_.out / folder / f"{name}{suffix}").write_text(name, encoding="utf-8")
    return _left(run_)


def _left(run_: Run) -> dict[str, str]:
    files = [run_.out / "eval.jsonl", *sorted((run_.out / "eval_steps").glob("*")),
             *sorted((run_.out / "eval_probe").glob("*"))]
    return {str(path.relative_to(run_.out)): path.read_text(encoding="utf-8") for path in files}


def test_a_rerun_plays_again_only_the_models_that_changed(tmp_path: Path) -> None:
    run_ = _run(tmp_path / "run")
    run_.out.mkdir()
    for stage in run_.preset.trained():
        (run_.out / f"{stage}.gguf").write_bytes(stage.encode())
    _evaluated(run_)
    keep_unchanged_evaluations(run_)  # nothing says what the policies were: nothing is kept
    assert _left(run_) == {"eval.jsonl": ""}

    played = _evaluated(run_)
    with (run_.out / "eval.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"policy": "grpo", "sc')  # an episode cut short by a crash
    keep_unchanged_evaluations(run_)  # the same policies: everything is kept, byte for byte (but the cut line)
    assert _left(run_) == played
    assert json.loads((run_.out / EVALUATED).read_text(encoding="utf-8"))["kept"] == [*BASELINES, *MODELS]

    (run_.out / "grpo.gguf").write_bytes(b"retrained")
    keep_unchanged_evaluations(run_)  # only the retrained model's evaluations go (both decodings)
    gone = {"eval_steps/grpo.jsonl", "eval_steps/grpo_legal.jsonl", "eval_probe/grpo.json"}
    assert _left(run_) == {name: text for name, text in played.items() if name not in gone} | {
        "eval.jsonl": "".join(line for line in played["eval.jsonl"].splitlines(keepends=True)
                              if '"grpo' not in line)}

    played = _evaluated(run_)
    other_plan = dataclasses.replace(run_, preset=dataclasses.replace(run_.preset, eval_seeds=2))
    keep_unchanged_evaluations(other_plan)  # other holdout episodes: nothing is kept
    assert _left(run_) == {"eval.jsonl": ""}


def test_changed_prompts_retrain_every_stage_and_replay_every_model_but_no_baseline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    run_ = _run(tmp_path / "run")
    run_.out.mkdir()
    for stage in STAGES:
        run_.finish(stage, 1.0)
    for stage in run_.preset.trained():
        (run_.out / f"{stage}.gguf").write_bytes(stage.encode())
    _evaluated(run_)
    keep_unchanged_evaluations(run_)  # records what each policy was
    played = _evaluated(run_)
    keep_unchanged_evaluations(run_)
    assert _left(run_) == played and all(run_.done(stage) for stage in STAGES)

    shown = pipeline.compact_messages
    request.addfinalizer(pipeline.prompts_digest.cache_clear)
    monkeypatch.setattr(pipeline, "compact_messages", lambda observation, spec: [
        *shown(observation, spec), {"role": "user", "content": "one more line a kit now shows"}])
    pipeline.prompts_digest.cache_clear()
    assert not any(run_.done(stage) for stage in STAGES)
    keep_unchanged_evaluations(run_)
    assert _left(run_) == {"eval.jsonl": "".join(line for line in played["eval.jsonl"].splitlines(keepends=True)
                                                 if json.loads(line)["policy"] in BASELINES)}


def test_a_stage_no_longer_run_leaves_nothing_of_an_earlier_run_to_report_or_publish(tmp_path: Path) -> None:
    run_ = _run(tmp_path / "run")
    earlier = ("dagger/round0.jsonl", "dagger_log.csv", "rft/round0.jsonl", "rft/states0.jsonl", "rft_log.csv",
               "rft_samples.csv", "dpo/pairs.jsonl", "dpo/states.jsonl", "dpo_log.csv", "dpo_samples.csv",
               "grpo_groups.json", "grpo_log.csv")
    for name in earlier:
        (run_.out / name).parent.mkdir(parents=True, exist_ok=True)
        (run_.out / name).write_text("an earlier run's", encoding="utf-8")
    none = dataclasses.replace(run_, preset=dataclasses.replace(run_.preset, dagger_rounds=0, rft_rounds=0,
                                                                 dpo_steps=0, grpo_steps=0))
    for stage in ("dagger", "rft", "dpo", "grpo"):
        STAGE_FUNCTIONS[stage](none)
    assert not [name for name in earlier if (run_.out / name).exists()]
    assert not any((run_.out / folder).exists() for folder in ("dagger", "rft", "dpo"))


@pytest.mark.parametrize("beats", [True, False])
def test_publish_ships_the_adapter_only_when_the_model_beat_the_untrained_one(tmp_path: Path, beats: bool) -> None:
    run_ = _run(tmp_path / "run")
    skipped = "grpo_log.csv"  # a stage this run did not run
    for name in PUBLISHED:
        (run_.out / name).parent.mkdir(parents=True, exist_ok=True)
        if name != skipped:
            (run_.out / name).write_text(name, encoding="utf-8")
    (run_.out / "summary.json").write_text(json.dumps({"beats_untrained": beats, "final": "dagger"}),
                                           encoding="utf-8")
    (run_.out / "dagger.gguf").write_bytes(b"GGUF adapter")
    dest = tmp_path / "results"
    dest.mkdir()
    (dest / ADAPTER_FILE).write_bytes(b"an adapter published before")
    (dest / skipped).write_text("the log of an earlier run", encoding="utf-8")
    publish(run_, dest)
    assert all((dest / name).read_bytes() == (run_.out / name).read_bytes() for name in PUBLISHED if name != skipped)
    assert not (dest / skipped).exists()
    assert ((dest / ADAPTER_FILE).read_bytes() == b"GGUF adapter") if beats else not (dest / ADAPTER_FILE).exists()


@pytest.mark.parametrize("shipped_before", [b"GGUF adapter", b"another adapter", None])
def test_publish_keeps_a_confirmation_only_of_the_adapter_it_ships(tmp_path: Path,
                                                                   shipped_before: bytes | None) -> None:
    """A confirmation (the gate on a salted holdout) judged the adapter shipped when it was played: it stays while
    that adapter does."""
    run_ = _run(tmp_path / "run")
    for name in PUBLISHED:
        (run_.out / name).parent.mkdir(parents=True, exist_ok=True)
    (run_.out / "summary.json").write_text(json.dumps({"beats_untrained": True, "final": "rft"}), encoding="utf-8")
    (run_.out / "rft.gguf").write_bytes(b"GGUF adapter")
    dest = tmp_path / "results"
    (dest / CONFIRMATION).mkdir(parents=True)
    (dest / CONFIRMATION / "results.jsonl").write_text("{}\n", encoding="utf-8")
    if shipped_before is not None:
        (dest / ADAPTER_FILE).write_bytes(shipped_before)
    publish(run_, dest)
    assert (dest / CONFIRMATION / "results.jsonl").exists() == (shipped_before == b"GGUF adapter")


@pytest.mark.local_model
def test_every_stage_writes_its_files_and_a_rerun_skips_them(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("peft", reason="peft is in the optional [train] extra")
    pytest.importorskip("llama_cpp", reason="the local model is optional")
    out, results = tmp_path / "run", tmp_path / "results"
    command = ["train", "--env", "chief_of_staff", "--task", "steady_week", "--preset", "mini", "--out", str(out),
               "--results", str(results)]
    assert cli(command) == 0
    for name in ("episodes.jsonl", "sft.jsonl", "grpo.jsonl", "sft_log.csv", "dagger_log.csv", "rft_log.csv",
                 "rft_samples.csv", "dpo_log.csv", "dpo_samples.csv", "grpo_log.csv", "dagger/round0.jsonl",
                 "rft/round0.jsonl", "rft/states0.jsonl", "dpo/pairs.jsonl", "dpo/states.jsonl", "sft.gguf",
                 "dagger.gguf", "rft.gguf", "dpo.gguf", "grpo.gguf", "eval.jsonl", "eval_steps.jsonl", "eval.csv",
                 "summary.json", "adapters/sft/adapter_config.json", "adapters/dagger/adapter_config.json",
                 "adapters/rft/adapter_config.json", "adapters/dpo/adapter_config.json",
                 "adapters/grpo/adapter_model.safetensors"):
        assert (out / name).stat().st_size > 0, name
    for name in PLOTS:
        assert (out / "plots" / name).read_bytes().startswith(PNG), name
    with (out / "sft_log.csv").open(encoding="utf-8") as handle:
        sft_log = list(csv.DictReader(handle))
    assert [int(row["step"]) for row in sft_log] == [1, 2]
    assert float(sft_log[0]["learning_rate"]) == pytest.approx(PRESETS["mini"].learning_rate)  # one warm-up step
    for name in ("dagger_log.csv", "rft_log.csv", "dpo_log.csv"):  # their one step each goes on at the refining rate
        with (out / name).open(encoding="utf-8") as handle:
            assert [float(row["learning_rate"]) for row in csv.DictReader(handle)] == pytest.approx(
                [PRESETS["mini"].refine_learning_rate]), name
    with (out / "grpo_log.csv").open(encoding="utf-8") as handle:
        assert [float(row["reward"]) for row in csv.DictReader(handle)]

    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert [row["policy"] for row in summary["holdout"]] == [*BASELINES, *MODELS]
    for row in summary["holdout"]:
        assert row["episodes"] == 1
        assert row["ci_low"] <= row["mean_score"] <= row["ci_high"]
        if row["policy"] in MODELS:
            assert 0.0 <= row["valid_action_rate"] <= 1.0
            assert row["valid_action_rate"] == pytest.approx(1.0 - row["fallback_rate"])
        else:
            assert row["valid_action_rate"] is None and row["fallback_rate"] == 0.0
    assert summary["final"] == "grpo" and summary["trained"] == ["sft", "dagger", "rft", "dpo", "grpo"]
    assert summary["dataset"]["sft_rows"] > 0 and summary["dataset"]["grpo_prompts"] > 0
    assert summary["dataset"]["dagger_rows"] > 0 and summary["dataset"]["rft_rows"] > 0
    assert summary["dataset"]["dpo_pairs"] == len((out / "dpo" / "pairs.jsonl").read_text().splitlines()) > 0
    with (out / "rft_samples.csv").open(encoding="utf-8") as handle:  # one line an RFT episode
        lines = list(csv.DictReader(handle))
    assert len(lines) == PRESETS["mini"].rft_episodes and all(float(r["best"]) >= float(r["champion"]) for r in lines)
    with (out / "dpo_samples.csv").open(encoding="utf-8") as handle:  # one line a DPO episode, with its pairs
        lines = list(csv.DictReader(handle))
    assert len(lines) == PRESETS["mini"].dpo_episodes and sum(int(r["pairs"]) for r in lines) == summary["dataset"][
        "dpo_pairs"]
    groups = summary["dataset"]["grpo_groups"]  # the group filter sampled a prompt or more, kept what differed
    assert 1 <= groups["sampled"] <= GROUP_TRIES and 0 <= groups["informative"] <= 1
    assert summary["gate_vs_champion"]["verdict"] in ("PROMOTE", "NO_PROMOTE")
    assert isinstance(summary["beats_untrained"], bool)
    assert set(summary["stage_seconds"]) == set(STAGES[:-1]) and summary["evaluation_kept"] == []
    records = [json.loads(line) for line in (out / "eval.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(r["split"] == "holdout" for r in records) and len(records) == len(BASELINES) + len(MODELS)
    assert all(r["llm"]["decisions"]["secondary"] == 0 for r in records if r["policy"] in MODELS)
    steps = [json.loads(line) for line in (out / "eval_steps.jsonl").read_text(encoding="utf-8").splitlines()]
    watched = ("heuristic", "untrained", "sft", "dagger", "rft", "dpo", "grpo", "grpo_legal")  # the champion and
    # every model's own, and the final model's decoding every legal call
    kept = {r["policy"]: r["steps"] for r in records if r["policy"] in watched}
    assert {policy: sum(s["policy"] == policy for s in steps) for policy in kept} == kept and len(kept) == 8
    assert not any("observation" in step for step in steps)
    assert set(summary["behaviour"]) == set(watched) and summary["behaviour"]["heuristic"]
    assert "labels" in summary and summary["labels"] == {}  # the chief of staff labels nothing
    assert set(summary["agreement"]) == {"dpo", "grpo"}  # the final model and the one before it
    for probed in summary["agreement"].values():  # asked at the champion's own states, train and holdout
        assert set(probed) == {"train", "holdout"} and probed["holdout"]
        assert all(0 <= count["agree"] <= count["total"] for count in probed["holdout"].values())

    for name in PUBLISHED:
        assert (results / name).read_bytes() == (out / name).read_bytes(), name
    if summary["beats_untrained"]:  # only an adapter that beat the untrained model becomes the local agent
        assert (results / ADAPTER_FILE).read_bytes() == (out / "grpo.gguf").read_bytes()
    else:
        assert not (results / ADAPTER_FILE).exists()
    assert not (results / "grpo.jsonl").exists() and not (results / "adapters").exists()

    capsys.readouterr()
    assert cli(command) == 0
    said = capsys.readouterr().out
    for stage in STAGES[:-1]:
        assert f"[{stage}] done before with these settings: skipped" in said
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["holdout"] == summary["holdout"]

    played = (out / "eval.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    probes = {path.name: path.read_bytes() for path in (out / "eval_probe").glob("*.json")}
    (out / "eval.jsonl").write_text("".join(played[:-1]), encoding="utf-8")  # as if stopped before the last episode
    (out / "stamps" / "evaluate.json").unlink()
    assert cli(command) == 0
    replayed = (out / "eval.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    assert replayed[:-1] == played[:-1] and json.loads(replayed[-1])["policy"] == json.loads(played[-1])["policy"]
    assert {path.name: path.read_bytes() for path in (out / "eval_probe").glob("*.json")} == probes
    kept = json.loads((out / "summary.json").read_text(encoding="utf-8"))["evaluation_kept"]
    assert kept == [*BASELINES, *MODELS][:-1]  # what the resumed evaluation did not play again (the last one's
    # only episode was cut)


@pytest.mark.local_model
def test_trained_on_gains_rft_fits_only_the_rows_of_the_states_where_the_model_lost(tmp_path: Path) -> None:
    pytest.importorskip("peft", reason="peft is in the optional [train] extra")
    pytest.importorskip("llama_cpp", reason="the local model is optional")
    preset = dataclasses.replace(PRESETS["mini"], rft_data="gains", dagger_rounds=0)  # RFT goes on from SFT
    run_ = Run(tmp_path / "run", "chief_of_staff", "steady_week", "mini rft_data=gains dagger_rounds=0", preset)
    run_.out.mkdir()
    for stage in ("collect", "sft", "rft"):
        STAGE_FUNCTIONS[stage](run_)
    folder = run_.out / "rft"
    states = [json.loads(line) for line in (folder / "states0.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = [json.loads(line) for line in (folder / "round0.jsonl").read_text(encoding="utf-8").splitlines()]
    gains = [json.loads(line) for line in (folder / "gains0.jsonl").read_text(encoding="utf-8").splitlines()]
    losing = {(s["scenario"], s["seed"], s["step"]) for s in states if s["best"] > s["greedy"]}
    assert states and gains == [row for row in rows if (row["scenario"], row["seed"], row["step"]) in losing]
    with (run_.out / "rft_log.csv").open(encoding="utf-8") as handle:
        steps = [int(row["step"]) for row in csv.DictReader(handle)]
    assert steps == ([1] if gains else [])  # nothing to learn where the model lost nowhere: no step
    assert (run_.out / "adapters" / "rft" / "adapter_config.json").exists()
