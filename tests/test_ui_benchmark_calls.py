"""The Benchmark tab when a model's calls fail (issue 33, item 6): the status says so while the run goes on (an
episode that waits out timeouts and retries is otherwise a silent wait), and a row decided by fallbacks, unranked,
shows no score, success or bar: the score would be the fallbacks', not the model's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ui_fixtures import html_table

from aaos.agents.llm import FIX_HINTS, LLMConfig, not_credited
from aaos.bench.stats import READS_HIDDEN_STATE
from aaos.policies import display_name
from aaos.ui import benchmark, benchmark_tab, charts, formatting

FAILED = {"calls": 40, "failed_calls": 40, "decisions": {"champion": 40},
          "last_error": "fake-model: APIConnectionError: Connection refused", "last_error_type": "APIConnectionError"}
FINE = {"calls": 40, "failed_calls": 0, "decisions": {"primary": 40}, "last_error": None, "last_error_type": None}


def model_run(tmp_path: Path) -> benchmark.BenchmarkRun:
    """A run of a model's plan, not started: its progress is fed by hand as the runner feeds it."""
    endpoint = LLMConfig(model="fake-model", base_url="http://127.0.0.1:9/v1", api_key="secret-token")
    plan = benchmark.make_plan("org", ["openai"], ["org_simulation"], ["product_launch_failure"], ["train"], 3, 1,
                               "per_role", endpoint)
    assert isinstance(plan, benchmark.Plan)
    return benchmark.BenchmarkRun(plan, tmp_path)


def record(llm: dict[str, Any] | None, seed: int) -> dict[str, Any]:
    return {"policy": "llm:fake-model", "env": "org", "task": "org_simulation", "scenario": "product_launch_failure",
            "seed": seed, "score": 0.769, "error": None, "llm": llm}


def test_failing_calls_show_while_the_benchmark_runs_and_after(tmp_path: Path) -> None:
    run = model_run(tmp_path)
    run._progress(1, 3, record(FINE, 0))
    assert "failing" not in benchmark_tab._progress(run) and "aaos-message-info" in benchmark_tab._progress(run)
    run._progress(2, 3, record(FAILED, 1))
    status = benchmark_tab._progress(run)
    assert "aaos-message-warn" in status and "2 / 3 episodes" in status
    assert ("Model calls are failing: 40 of 80 calls failed in the finished episodes, and 40 of 80 actions were "
            "decided by fallbacks") in status
    assert "Connection refused" in status and FIX_HINTS["APIConnectionError"] in status
    assert "secret-token" not in status
    run.rows, run.state, run.elapsed_s = [], "finished", 31.8
    done = benchmark_tab._summary(run)
    assert "Done: 0 episodes in 31.8 s" in done and "Model calls are failing" in done and "aaos-message-warn" in done


def summary_row(policy: str, unranked: str | None, rank: int | None) -> dict[str, Any]:
    return {"rank": rank, "policy": policy, "unranked": unranked, "env": "org", "env_version": "4",
            "reward_version": "3", "split": "holdout", "split_label": "holdout", "episodes": 2, "mean_score": 0.769,
            "ci_low": 0.7, "ci_high": 0.8, "success_rate": 1.0, "invalid_action_rate": 0.0,
            "hard_violations_per_episode": 0.0, "fallback_rate": 1.0 if unranked else 0.0, "tokens": 0,
            "mean_call_latency_s": 0.5}


@pytest.mark.parametrize(("unranked", "shown"), [
    (not_credited({"champion": 40}), False),  # the champion decided every action: not the model's score
    (READS_HIDDEN_STATE, True),  # an oracle: unranked, but its score is its own
    (None, True),
])
def test_a_row_decided_by_fallbacks_shows_no_score(unranked: str | None, shown: bool) -> None:
    row = summary_row("fake-model", unranked, None if unranked else 1)
    cells = html_table(formatting.leaderboard([row]))[0]
    scores = (cells["Mean score"], cells["95 % CI"], cells["Success"])
    assert scores == (("0.769", "0.700\u20130.800", "100 %") if shown else ("—", "—", "—"))
    assert formatting.own_score(row) is shown


def played(policy: str, seed: int, llm: dict[str, Any] | None) -> dict[str, Any]:
    """A finished episode's whole record, as the runner writes it."""
    return {**record(llm, seed), "policy": policy, "split": "train", "split_label": "train", "holdout_salt": None,
            "env_version": "4", "reward_version": "3", "components": {"efficiency": 0.8}, "actions": 12,
            "invalid_actions": 0, "hard_violations": 0, "wall_s": 1.0}


def test_the_chart_draws_no_bar_for_a_score_the_model_did_not_make(tmp_path: Path) -> None:
    run = model_run(tmp_path)
    episodes = [played("heuristic", seed, None) for seed in range(2)]
    episodes += [played("llm:fake-model", seed, {**FAILED, "latency_s": 1.0}) for seed in range(2)]
    run.results.write_text("".join(json.dumps(r) + "\n" for r in episodes), encoding="utf-8")
    run._summarise()
    run.state = "finished"
    assert {r["policy"]: r["unranked"] for r in run.rows}["llm:fake-model"] == not_credited({"champion": 80})
    out = benchmark_tab._results(run, "openai")
    assert [list(trace.x) for trace in out["bench_chart"].data] == [[display_name("heuristic")]]
    assert "fake-model" in out["leaderboard"]
    assert out["bench_chart"].layout.title.text == charts.LEADERBOARD_TITLE
    assert out["bench_chart"].layout.title.xanchor == "left"  # clear of Plotly's toolbar at the top right
