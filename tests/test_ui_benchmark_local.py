"""The Benchmark tab with the real local model (issue 48, item 12): progress step by step while a model episode plays
(not only "1 / 2 episodes"), the gate candidate one of the ticked policies, counts in the singular, and the reward
components in the leaderboard. Slow: a whole org_simulation episode of the local SmolLM2 on 2 cores."""

from __future__ import annotations

import re

import pytest
from ui_fixtures import html_table, reset, run_benchmark

import aaos
from aaos.agents.local_model import missing
from aaos.policies import LOCAL_TRAINED, display_name

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(missing() is not None, reason=f"local model not installed: {missing()}"),
]

STEPS = aaos.spec("org").task("org_simulation").max_steps


def test_a_local_model_benchmark_shows_every_step_and_gates_the_model_it_played() -> None:
    updates = run_benchmark(reset()["session"], policies=("heuristic", "local"), scenarios=("product_launch_failure",),
                            splits=("train",), concurrency=1, candidate="random", mode="joint")
    model = display_name(LOCAL_TRAINED)
    assert updates[0]["bench_candidate"]["value"] == "local"  # Random was not ticked: never gated
    steps = [int(found[1]) for update in updates[1:-1]
             if (found := re.search(rf"Playing {re.escape(model)}, .*?: step (\d+) of {STEPS}",
                                    update["bench_status"]))]
    assert len(set(steps)) >= 2 and steps == sorted(steps), steps  # the model's episode, step by step
    last = updates[-1]
    assert "Done: 2 episodes" in last["bench_status"], last["bench_status"]
    board = {row["Policy"]: row for row in html_table(last["leaderboard"])}
    assert set(board) == {display_name("heuristic"), model} and board[model]["Episodes"] == "1"
    assert all(re.fullmatch(r"\d\.\d{3}|—", board[model][title]) for title in ("Business success", "Efficiency"))
    assert f"{model} vs the champion" in last["gate"]
