"""The Space's Benchmark tab, called as the layout calls it: a run with progress, the leaderboard, chart, gate
and downloads (its holdout salted by default: a secret salt per run, its fingerprint shown); bad settings; Stop;
one benchmark at a time per tab."""

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
from aaos.bench.stats import SUCCESS_THRESHOLD
from aaos.core.seeding import salt_fingerprint, salted
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


def test_champion_vs_random_ranks_the_champion_first_with_files_chart_and_gate(
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
    assert list(board[0]) == [c.title for c in formatting.LEADERBOARD if not c.model]  # no model columns
    assert [(r["#"], r["Policy"], r["Split"], r["Episodes"]) for r in board] == [
        ("1", "Champion", "salted holdout", "2"), ("2", "Random", "salted holdout", "2"),
        ("1", "Champion", "train", "1"), ("2", "Random", "train", "1")]
    played = {"train": [("product_launch_failure", 0)],
              "salted holdout": [("product_launch_failure", 10_000), ("vendor_outage_cascade", 10_000)]}
    for row in board:  # each row is exactly its episodes replayed in process, the holdout ones with the run's salt
        name = {"Champion": "heuristic", "Random": "random"}[row["Policy"]]
        with salted(SALT):
            scores = [replayed_score(name, scenario, seed) for scenario, seed in played[row["Split"]]]
        assert row["Mean score"] == f"{statistics.mean(scores):.3f}"
        assert row["Success"] == f"{100 * sum(s >= SUCCESS_THRESHOLD for s in scores) / len(scores):.0f} %"
    assert all(float(row["Mean score"]) >= 0.6 for row in board if row["Policy"] == "Champion")
    public = [replayed_score("heuristic", scenario, seed) for scenario, seed in played["salted holdout"]]
    assert board[0]["Mean score"] != f"{statistics.mean(public):.3f}"  # not the public holdout's episodes

    chart = last["bench_chart"]
    assert isinstance(chart, go.Figure) and {trace.name for trace in chart.data} == {"train", "salted holdout"}
    assert all(list(trace.x) == ["Champion", "Random"] for trace in chart.data)
    assert "Random vs the champion" in last["gate"] and "no promote" in last["gate"]

    files = files_of(last)
    assert set(files) == {"results.jsonl", "leaderboard.csv"}
    assert all(path.is_relative_to(session.workdir()) for path in files.values())
    records = [json.loads(line) for line in files["results.jsonl"].read_text(encoding="utf-8").splitlines()]
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
    assert "Do nothing vs the champion" in last["gate"]
    gate = benchmark_tab.choose_candidate(session, "random")["gate"]
    assert "Random legal actions was not part of this run" in gate
    gate = benchmark_tab.choose_candidate(session, "openai")["gate"]
    assert "OpenAI-compatible model (Model settings) was not part of this run" in gate
    gate = benchmark_tab.choose_candidate(session, "noop")["gate"]
    assert "no promote" in gate and "holdout mean" in gate


def test_without_the_champion_the_gate_says_what_it_needs() -> None:
    last = run_benchmark(reset()["session"], policies=("random", "noop"))[-1]
    assert "tick Champion (heuristic)" in last["gate"]
    assert {row["Policy"] for row in html_table(last["leaderboard"])} == {"Random", "Do nothing"}


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
    assert "Local SmolLM2-135M is not available" in updates[0]["bench_status"]


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
    assert list(board[0]) == [c.title for c in formatting.LEADERBOARD]
    model = {row["Split"]: row for row in board if row["Policy"] == "fake-model"}
    assert {split: (row["Fallbacks"], row["Tokens"]) for split, row in model.items()} == {
        "salted holdout": ("0 %", "600"), "train": ("0 %", "300")}
    assert {row["Tokens"] for row in board if row["Policy"] == "Champion"} == {"—"}
    assert "fake-model vs the champion" in last["gate"]
    endpoint = session.benchmark.plan.endpoint if session.benchmark else None
    assert endpoint is not None and (endpoint.model, endpoint.mode, endpoint.api_key) == ("fake-model", "joint",
                                                                                        "hf_secret")


def summary_row(policy: str, split: str, score: float, env_version: str, **extra: Any) -> dict[str, Any]:
    return {"policy": policy, "split": split, "episodes": 2, "mean_score": score, "ci_low": score - 0.1,
            "ci_high": score + 0.1, "success_rate": 0.5, "invalid_action_rate": 0.0,
            "hard_violations_per_episode": 0.0, "mean_call_latency_s": None, "env": "org",
            "env_version": env_version, "reward_version": "2", **extra}


def test_the_leaderboard_names_the_environment_versions_and_ranks_each_apart() -> None:
    rows = [summary_row("heuristic", "holdout", 0.7, "2"), summary_row("random", "holdout", 0.9, "1"),
            summary_row("random", "holdout", 0.3, "2"), summary_row("heuristic", "holdout", 0.5, "1")]
    board = html_table(formatting.leaderboard(benchmark.ranked(rows)))
    assert [(r["#"], r["Policy"], r["Env"]) for r in board] == [
        ("1", "Random", "org v1 · reward v2"), ("2", "Champion", "org v1 · reward v2"),
        ("1", "Champion", "org v2 · reward v2"), ("2", "Random", "org v2 · reward v2")]
    unversioned = {k: v for k, v in rows[0].items() if k not in ("env", "env_version", "reward_version")}
    assert html_table(formatting.leaderboard(benchmark.ranked([unversioned])))[0]["Env"] == "—"


def test_a_model_whose_actions_all_fell_back_is_shown_unranked_not_ranked_as_the_model() -> None:
    session = reset()["session"]
    with serve(Script(modes=["not_json"])) as url:
        updates = run_benchmark(session, policies=("heuristic", "openai"), scenarios=("product_launch_failure",),
                                splits=("train",), model="fake-model", base_url=url, token="t")
    board = {row["Policy"]: row for row in html_table(updates[-1]["leaderboard"])}
    assert board["Champion"]["#"] == "1" and board["Champion"]["Ranked"] == "yes"
    assert board["fake-model"]["#"] == "—" and board["fake-model"]["Ranked"].startswith("unranked: ")
    assert "decided by fallbacks" in board["fake-model"]["Ranked"]


def test_the_benchmark_names_tasks_and_scenarios_as_the_sidebar_does() -> None:
    tasks, scenarios = episode_choices("org")
    out = benchmark_tab.choose_env("org")
    assert out["bench_tasks"]["choices"] == tasks and out["bench_scenarios"]["choices"] == scenarios
    assert ("A new regulation lands mid-sprint (train)", "policy_change_shock") in scenarios


@pytest.mark.parametrize(("episodes", "expected"), [(1, "will play 20 episodes"), (3, "will play 60 episodes"),
                                                    (2.5, "whole number from 1 to 50"), (None, "whole number")])
def test_the_plan_line_says_what_run_benchmark_will_play(episodes: float | None, expected: str) -> None:
    out = benchmark_tab.show_plan("org", ["heuristic", "random"], ["org_simulation"],
                                  [value for _, value in episode_choices("org")[1]], ["train", "holdout"], episodes)
    assert expected in out["bench_plan"]
