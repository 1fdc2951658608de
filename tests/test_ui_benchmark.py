"""The Space's Benchmark tab, called as the layout calls it: a run with progress (episodes and steps), the leaderboard
(rank groups from paired comparisons, reward components), its noise floor and paired comparisons, chart, gate and
downloads (its holdout salted by default: a secret salt per run, its fingerprint shown); the gate candidate follows
the ticked policies; bad settings; Stop; one benchmark at a time per tab."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import pytest
from fake_openai import Script, serve
from helpers import play
from ui_fixtures import assert_no_reprs, html_table, reset, run_benchmark, wait_until

import aaos
from aaos.bench import paired
from aaos.bench.stats import SUCCESS_THRESHOLD, summarise
from aaos.core.seeding import salt_fingerprint, salted
from aaos.policies import display_name
from aaos.ui import benchmark, benchmark_tab, formatting, wiring
from aaos.ui.play_tab import episode_choices


def files_of(outputs: dict[str, Any]) -> dict[str, Path]:
    update = outputs["bench_files"]
    assert update["visible"]
    return {Path(path).name: Path(path) for path in update["value"]}


def replayed_score(policy_name: str, scenario: str, seed: int) -> float:
    """The score of one org_simulation episode played in process, as the benchmark plays it."""
    return float(play("org_simulation", scenario, seed, policy_name, policy_seed=seed).score)


SALT = "the-run-s-secret-salt"
CHAMPION, RANDOM, NOOP = (display_name(name) for name in ("heuristic", "random", "noop"))


COMPONENTS = ["Business success", "Collaboration", "Risk management", "Efficiency", "Adaptability"]
"""The organisation's reward components as the leaderboard titles them, in its spec's order."""


def board_columns(model: bool = False) -> list[str]:
    """The leaderboard's columns for org: the reward components after the success rate."""
    titles = [c.title for c in formatting.LEADERBOARD if model or not c.model]
    at = titles.index("Success") + 1
    return titles[:at] + COMPONENTS + titles[at:]


def test_one_episode_each_cannot_tell_champion_and_random_apart_and_files_chart_and_gate_follow(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(benchmark, "new_salt", lambda: SALT)  # a known salt, to replay the run's holdout episodes
    session = reset()["session"]
    updates = run_benchmark(session)
    first, last = updates[0], updates[-1]
    assert "0 / 6 episodes" in first["bench_status"] and "No results yet" in first["leaderboard"]
    assert "6 / 6 episodes" in last["bench_status"] and "Done: 6 episodes" in last["bench_status"]
    assert f"Salted holdout: drawn with a secret salt for this run alone (fingerprint {salt_fingerprint(SALT)})" in \
        last["bench_status"] and SALT not in json.dumps(last, default=str)

    board = html_table(last["leaderboard"])
    assert list(board[0]) == board_columns()  # no model columns
    assert [(r["#"], r["Policy"], r["Split"], r["Episodes"]) for r in board] == [  # 1 or 2 episodes: a tie
        ("1", CHAMPION, "salted holdout", "2"), ("1", RANDOM, "salted holdout", "2"),
        ("1", CHAMPION, "train", "1"), ("1", RANDOM, "train", "1")]
    assert "with 2 episodes, every difference is noise (a paired test needs 6 or more)" in last["bench_noise"]
    assert "1 paired episode cannot tell 2 policies apart (1 pair, Holm-corrected: it takes 6 or more)" in \
        last["bench_noise"]
    pairs = last["bench_pairs"]
    assert list(pairs.columns) == list(benchmark.PAIRWISE_COLUMNS)
    assert [(*row[1:4], row[-1]) for row in pairs.itertuples(index=False)] == [
        (CHAMPION, RANDOM, "2", "no"), (CHAMPION, RANDOM, "1", "no")]
    files = files_of(last)
    records = [json.loads(line) for line in files["results.jsonl"].read_text(encoding="utf-8").splitlines()]
    played = {"train": [("product_launch_failure", 0)],
              "salted holdout": [("product_launch_failure", 10_000), ("vendor_outage_cascade", 10_000)]}
    for row in board:  # each row is exactly its episodes replayed in process, the holdout ones with the run's salt
        name = {CHAMPION: "heuristic", RANDOM: "random"}[row["Policy"]]
        with salted(SALT):
            scores = [replayed_score(name, scenario, seed) for scenario, seed in played[row["Split"]]]
        assert row["Mean score"] == f"{statistics.mean(scores):.3f}"
        assert row["Success"] == f"{100 * sum(s >= SUCCESS_THRESHOLD for s in scores) / len(scores):.0f} %"
        efficiency = [r["components"]["efficiency"] for r in records if (r["policy"], r["split_label"]) == (
            name, row["Split"])]
        assert row["Efficiency"] == f"{statistics.mean(efficiency):.3f}" and len(efficiency) == len(scores)
    assert all(float(row["Mean score"]) >= 0.6 for row in board if row["Policy"] == CHAMPION)
    public = [replayed_score("heuristic", scenario, seed) for scenario, seed in played["salted holdout"]]
    assert board[0]["Mean score"] != f"{statistics.mean(public):.3f}"  # not the public holdout's episodes

    chart = last["bench_chart"]
    assert isinstance(chart, go.Figure) and {trace.name for trace in chart.data} == {"train", "salted holdout"}
    assert all(list(trace.x) == [CHAMPION, RANDOM] for trace in chart.data)
    assert f"{RANDOM} vs the champion" in last["gate"] and "no promote" in last["gate"]

    assert set(files) == {"results.jsonl", "leaderboard.csv"}
    assert all(path.is_relative_to(session.workdir()) for path in files.values())
    assert len(records) == 6 and {r["policy"] for r in records} == {"heuristic", "random"}
    assert {(r["split_label"], r["holdout_salt"]) for r in records if r["split"] == "holdout"} == {
        ("salted holdout", salt_fingerprint(SALT))}
    assert sorted((r["policy"], r["split_label"], r["scenario"], r["seed"]) for r in records) == sorted(
        (policy, split, scenario, seed) for policy in ("heuristic", "random")
        for split, cases in played.items() for scenario, seed in cases)
    with files["leaderboard.csv"].open(newline="", encoding="utf-8") as handle:
        assert {row["policy"] for row in csv.DictReader(handle)} == {"heuristic", "random"}
    for outputs in updates:
        assert_no_reprs(outputs)


def test_a_second_benchmark_writes_a_new_folder_and_the_candidate_can_change() -> None:
    session = reset()["session"]
    first = files_of(run_benchmark(session)[-1])
    last = run_benchmark(session, policies=("heuristic", "noop"), candidate="noop")[-1]
    second = files_of(last)
    assert first["results.jsonl"].parent != second["results.jsonl"].parent and first["results.jsonl"].exists()
    assert f"{NOOP} vs the champion" in last["gate"]
    gate = benchmark_tab.choose_candidate(session, "random")["gate"]
    assert "Random legal actions was not part of this run" in gate
    gate = benchmark_tab.choose_candidate(session, "openai")["gate"]
    assert "OpenAI-compatible model (Model settings) was not part of this run" in gate
    gate = benchmark_tab.choose_candidate(session, "noop")["gate"]
    assert "no promote" in gate and "holdout mean" in gate


def test_without_the_champion_the_gate_says_what_it_needs() -> None:
    last = run_benchmark(reset()["session"], policies=("random", "noop"))[-1]
    assert "tick Champion (heuristic)" in last["gate"]
    assert {row["Policy"] for row in html_table(last["leaderboard"])} == {RANDOM, NOOP}


BAD = [
    ({"policies": ()}, "Tick at least one policy"),
    ({"episodes": 0}, "Episodes per split must be a whole number from 1 to 50"),
    ({"episodes": None}, "Episodes per split must be a whole number"),
    ({"episodes": 2.5}, "Episodes per split must be a whole number"),
    ({"episodes": 51}, "from 1 to 50"),
    ({"episodes": float("nan")}, "from 1 to 50"),
    ({"episodes": 2.5}, "from 1 to 50"),  # never rounded to another number
    ({"tasks": ()}, "Tick at least one task"),
    ({"scenarios": ()}, "Tick at least one scenario"),
    ({"splits": ()}, "Tick the train seeds, the holdout seeds or both"),
    ({"concurrency": 0}, "Concurrency must be a whole number from 1 to 16"),
    ({"scenarios": ("vendor_outage_cascade",), "splits": ("train",)}, "holdout scenarios only have holdout seeds"),
    ({"policies": ("heuristic", "openai")}, "Enter a model name under Model settings"),
    ({"policies": ("openai",), "model": "m", "base_url": "localhost"}, "must start with http:// or https://"),
]


@pytest.mark.parametrize(("settings", "expected"), BAD)
def test_bad_settings_give_a_message_and_change_nothing(settings: dict[str, Any], expected: str) -> None:
    session = reset()["session"]
    run_benchmark(session)
    before = session.benchmark
    updates = run_benchmark(session, **settings)
    assert len(updates) == 1 and "aaos-message-error" in updates[0]["bench_status"]
    assert expected in updates[0]["bench_status"], updates[0]["bench_status"]
    assert session.benchmark is before
    assert set(updates[0]) == {"session", "bench_status"}


def test_the_local_model_is_offered_only_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "local" in [key for _, key in benchmark.policy_choices(True)]
    assert "local" not in [key for _, key in benchmark.policy_choices(False)]
    assert "appears here once" in benchmark.policies_info(False)
    monkeypatch.setattr(benchmark.agents.local_model, "missing", lambda: "it is not installed; install with: pip")
    updates = run_benchmark(reset()["session"], policies=("heuristic", "local"))
    assert "is not available: it is not installed" in updates[0]["bench_status"]


def big_benchmark(session: Any) -> Any:
    """A benchmark long enough to stop: every task and scenario, many seeds."""
    return benchmark_tab.run_benchmark(None, session, "org", ["heuristic", "random"],
                                       [t["id"] for t in aaos.list_tasks()], [s["id"] for s in aaos.list_scenarios()],
                                       ["train", "holdout"], 50, 2, "random", "per_role", None, None, None)


def test_stop_keeps_the_finished_episodes_and_one_benchmark_runs_at_a_time() -> None:
    session = reset()["session"]
    idle = benchmark_tab.stop_benchmark(session)["bench_status"]
    assert "No benchmark is running" in idle
    runs = big_benchmark(session)
    next(runs)
    busy = run_benchmark(session)
    assert len(busy) == 1 and "already running in this tab" in busy[0]["bench_status"]
    wait_until(lambda: session.benchmark is not None and session.benchmark.finished > 0, 30, "an episode to finish")
    assert benchmark_tab.stop_benchmark(session) == {}
    last = list(runs)[-1]
    run = session.benchmark
    assert run is not None and run.state == "stopped" and run.finished < run.total
    assert "Stopped after" in last["bench_status"]
    assert sum(int(row["Episodes"]) for row in html_table(last["leaderboard"])) == run.finished
    assert len(files_of(last)["results.jsonl"].read_text(encoding="utf-8").splitlines()) == run.finished


def test_closing_the_tab_stops_its_benchmark_and_removes_its_files() -> None:
    session = reset()["session"]
    runs = big_benchmark(session)
    next(runs)
    run = session.benchmark
    assert run is not None
    wiring.close_session(session)
    assert run.done.is_set() and run.state == "stopped" and not run.out_dir.exists()
    runs.close()


def test_a_model_benchmark_shows_its_calls_in_the_leaderboard_and_the_gate() -> None:
    session = reset()["session"]
    with serve(Script(modes=["ok"])) as url:
        last = run_benchmark(session, policies=("heuristic", "openai"), candidate="openai", mode="joint",
                             model="fake-model", base_url=url, token="hf_secret")[-1]
    board = html_table(last["leaderboard"])
    assert list(board[0]) == board_columns(model=True)
    model = {row["Split"]: row for row in board if row["Policy"] == "fake-model"}
    assert {split: (row["Fallbacks"], row["Tokens"]) for split, row in model.items()} == {
        "salted holdout": ("0 %", "600"), "train": ("0 %", "300")}
    assert {row["Tokens"] for row in board if row["Policy"] == CHAMPION} == {"—"}
    assert "fake-model vs the champion" in last["gate"]
    endpoint = session.benchmark.plan.endpoint if session.benchmark else None
    assert endpoint is not None and (endpoint.model, endpoint.mode, endpoint.api_key) == ("fake-model", "joint",
                                                                                        "hf_secret")


def episode(policy: str, seed: int, score: float, env_version: str | None) -> dict[str, Any]:
    """A holdout episode record of org_simulation (None: a record older than the version fields)."""
    versions = {} if env_version is None else {"env_version": env_version, "reward_version": "2"}
    return {"policy": policy, "split": "holdout", "env": "org", "task": "org_simulation", "scenario": "s", "seed": seed,
            "score": score, "components": {"efficiency": score}, "actions": 10, "invalid_actions": 0,
            "hard_violations": 0, "llm": None, "wall_s": 0.1, "error": None, **versions}


def test_the_leaderboard_names_the_environment_versions_and_ranks_each_apart() -> None:
    means = {("heuristic", "2"): 0.7, ("random", "1"): 0.9, ("random", "2"): 0.3, ("heuristic", "1"): 0.5}
    records = [episode(policy, seed, mean, version) for (policy, version), mean in means.items() for seed in range(6)]
    rows = summarise(records)
    board = html_table(formatting.leaderboard(benchmark.ranked(rows, paired.standings(rows, records))))
    assert [(r["#"], r["Policy"], r["Env"]) for r in board] == [
        ("1", RANDOM, "org v1 · reward v2"), ("2", CHAMPION, "org v1 · reward v2"),
        ("1", CHAMPION, "org v2 · reward v2"), ("2", RANDOM, "org v2 · reward v2")]
    old = [episode("heuristic", seed, 0.7, None) for seed in range(2)]
    old_rows = summarise(old)
    assert html_table(formatting.leaderboard(benchmark.ranked(old_rows, paired.standings(old_rows, old))))[0][
        "Env"] == "org"


def test_a_model_whose_actions_all_fell_back_is_shown_unranked_not_ranked_as_the_model() -> None:
    session = reset()["session"]
    with serve(Script(modes=["not_json"])) as url:
        updates = run_benchmark(session, policies=("heuristic", "openai"), scenarios=("product_launch_failure",),
                                splits=("train",), model="fake-model", base_url=url, token="t")
    board = {row["Policy"]: row for row in html_table(updates[-1]["leaderboard"])}
    assert board[CHAMPION]["#"] == "1" and board[CHAMPION]["Ranked"] == "yes"
    assert board["fake-model"]["#"] == "—" and board["fake-model"]["Ranked"].startswith("unranked: ")
    assert "decided by fallbacks" in board["fake-model"]["Ranked"]


def test_the_benchmark_names_tasks_and_scenarios_as_the_sidebar_does() -> None:
    tasks, scenarios = episode_choices("org")
    out = benchmark_tab.choose_env("org")
    assert out["bench_tasks"]["choices"] == tasks and out["bench_scenarios"]["choices"] == scenarios
    assert ("A new regulation lands mid-sprint (train)", "policy_change_shock") in scenarios


@pytest.mark.parametrize(("episodes", "expected"), [
    (1, "will play 20 episodes (1 seed per split of each policy"), (3, "will play 60 episodes (3 seeds per split"),
    (2.5, "whole number from 1 to 50"), (None, "whole number")])
def test_the_plan_line_says_what_run_benchmark_will_play(episodes: float | None, expected: str) -> None:
    out = benchmark_tab.show_plan("org", ["heuristic", "random"], ["org_simulation"],
                                  [value for _, value in episode_choices("org")[1]], ["train", "holdout"], episodes)
    assert expected in out["bench_plan"]


def test_one_episode_is_said_in_the_singular() -> None:
    plan = benchmark_tab.show_plan("org", ["heuristic"], ["org_simulation"], ["product_launch_failure"], ["train"], 1)
    assert "will play 1 episode (1 seed per split of each policy, task and scenario)" in plan["bench_plan"]
    last = run_benchmark(reset()["session"], policies=("heuristic",), scenarios=("product_launch_failure",),
                         splits=("train",))[-1]
    assert "Done: 1 episode in " in last["bench_status"]


def test_three_policies_on_twelve_paired_episodes_land_in_three_rank_groups_with_their_noise_floor() -> None:
    last = run_benchmark(reset()["session"], policies=("heuristic", "random", "noop"),
                         scenarios=tuple(s for _, s in episode_choices("org")[1] if s in TRAIN_SCENARIOS),
                         splits=("train",), episodes=3, candidate="noop")[-1]
    board = html_table(last["leaderboard"])
    assert [(r["#"], r["Policy"], r["Episodes"]) for r in board] == [
        ("1", CHAMPION, "12"), ("2", RANDOM, "12"), ("3", NOOP, "12")]
    pairs = last["bench_pairs"]
    assert [(row[1], row[2], row[-1]) for row in pairs.itertuples(index=False)] == [
        (CHAMPION, RANDOM, "yes"), (CHAMPION, NOOP, "yes"), (RANDOM, NOOP, "yes")]
    assert all(float(row[4]) > 0 for row in pairs.itertuples(index=False))  # better minus worse
    org = aaos.spec("org")
    assert (f"org v{org.version} (reward v{org.reward_version}), train, org_simulation: with 12 episodes, "
            "differences below 0.") in last["bench_noise"]
    assert "cannot tell" not in last["bench_noise"]


TRAIN_SCENARIOS = {s.id for s in aaos.spec("org").scenarios if s.split == "train"}


def test_the_gate_candidate_follows_the_ticked_policies() -> None:
    follow = benchmark_tab.follow_policies
    assert follow(["heuristic", "random", "noop"], "noop")["bench_candidate"] == {
        "__type__": "update", "choices": [(RANDOM, "random"), (NOOP, "noop")],
        "value": "noop"}
    unticked = follow(["heuristic", "noop"], "random")["bench_candidate"]
    assert unticked["choices"] == [(NOOP, "noop")] and unticked["value"] == "noop"
    assert follow(["heuristic"], "random")["bench_candidate"]["value"] is None
    assert follow(["noop", "random"], None)["bench_candidate"]["value"] == "random"  # the default, when ticked
    updates = run_benchmark(reset()["session"], policies=("heuristic", "noop"), candidate="random")
    assert updates[0]["bench_candidate"]["value"] == "noop"  # never a policy that is not part of the run
    assert f"{NOOP} vs the champion" in updates[-1]["gate"] and "not part of this run" not in updates[-1]["gate"]
    alone = run_benchmark(reset()["session"], policies=("heuristic",), candidate="random")
    assert alone[0]["bench_candidate"]["value"] is None and "tick another policy" in alone[-1]["gate"]


def test_the_progress_line_counts_steps_of_the_episodes_in_flight(tmp_path: Path) -> None:
    plan = benchmark.make_plan("org", ["heuristic", "random"], ["org_simulation"], ["product_launch_failure"],
                               ["train"], 2, 2, "per_role", None)
    assert isinstance(plan, benchmark.Plan)
    run = benchmark.BenchmarkRun(plan, tmp_path)  # not started: fed as the runner feeds it
    first, second = plan.jobs()[:2]
    assert run.steps_total == 4 * 20 and "0 of 80 steps" in benchmark_tab._progress(run)
    run._step(first, 12)
    run._step(second, 3)
    line = benchmark_tab._progress(run)
    assert "15 of 80 steps" in line and 'width:19%' in line  # the bar moves with the steps, not only episodes
    assert f"Playing {CHAMPION}, " in line and "seed 0: step 12 of 20 (and 1 more episode in flight)." in line
    run._progress(1, 4, {"policy": first.policy, "env": "org", "task": first.task, "scenario": first.scenario,
                         "seed": first.seed, "score": 0.9, "error": None, "llm": None})
    line = benchmark_tab._progress(run)
    assert "1 / 4 episodes" in line and "23 of 80 steps" in line and "step 3 of 20." in line
    assert "Latest: Champion" in line
