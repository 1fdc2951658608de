"""`aaos train-q` (issue 13, item 5): a seeded tabular Q-learner over the Chief of Staff kit's compact state, its
learning curve and summary, the q:PATH policy kind, and the promotion gate with it as the candidate."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pytest

import aaos
from aaos.agents.qpolicy import QPolicy
from aaos.cli import main
from aaos.core.seeding import split_seeds
from aaos.policies import build_policy, policy_spec
from aaos.training.qlearn import CURVE_COLUMNS

ENV = "chief_of_staff"
EPISODES = 45


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("q")
    assert main(["train-q", "--env", ENV, "--episodes", str(EPISODES), "--seed", "3", "--checkpoints", "3",
                 "--holdout-seeds", "1", "--out", str(out)]) == 0
    return out


def holdout_mean(policy_name: str) -> float:
    scores = []
    for scenario in (s["id"] for s in aaos.list_scenarios(env=ENV)):
        for seed in split_seeds("holdout", 2):
            env = aaos.make("drifting_priorities", scenario=scenario, seed=seed, env=ENV)
            policy = build_policy(policy_spec(policy_name), ENV, seed)
            policy.reset(seed)
            observation = env.reset()
            while not env.done:
                observation = env.step(policy.act(observation)).observation
            scores.append(env.score)
    return statistics.mean(scores)


def test_training_writes_the_table_curve_and_summary(trained: Path) -> None:
    rows = list(csv.DictReader((trained / "curve.csv").open()))
    assert tuple(rows[0]) == CURVE_COLUMNS and len(rows) == EPISODES
    assert [int(r["episode"]) for r in rows] == list(range(1, EPISODES + 1))
    epsilons = [float(r["epsilon"]) for r in rows]
    assert epsilons == sorted(epsilons, reverse=True) and epsilons[0] > epsilons[-1]
    checkpoints = [float(r["holdout_score"]) for r in rows if r["holdout_score"]]
    summary = json.loads((trained / "summary.json").read_text())
    assert summary["holdout_checkpoints"] == checkpoints and len(checkpoints) == 3
    assert summary["final_holdout_score"] == checkpoints[-1]
    table = json.loads((trained / "qtable.json").read_text())
    assert table["env"] == ENV and len(table["table"]) == summary["states"] > 0


def test_the_same_seed_learns_the_same_table(trained: Path, tmp_path: Path) -> None:
    assert main(["train-q", "--env", ENV, "--episodes", str(EPISODES), "--seed", "3", "--checkpoints", "3",
                 "--holdout-seeds", "1", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "qtable.json").read_text() == (trained / "qtable.json").read_text()
    assert (tmp_path / "curve.csv").read_text() == (trained / "curve.csv").read_text()


def test_the_q_policy_beats_random_on_holdout_and_plays_legal_moves(trained: Path) -> None:
    name = f"q:{trained / 'qtable.json'}"
    assert holdout_mean(name) > holdout_mean("random") + 0.1
    policy = QPolicy.load(trained / "qtable.json", ENV)
    env = aaos.make("crunch_month", scenario="series_b_startup", seed=10_000, env=ENV)
    observation = env.reset()
    while not env.done:
        joint = policy.act(observation)
        assert env.check(joint) == []
        observation = env.step(joint).observation


def test_a_q_table_of_another_environment_is_refused(trained: Path, tmp_path: Path) -> None:
    data = json.loads((trained / "qtable.json").read_text())
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**data, "env": "inbox"}))
    with pytest.raises(ValueError, match="inbox"):
        QPolicy.load(other, ENV)
    with pytest.raises(ValueError, match="no tabular"):
        QPolicy(data["table"], aaos.DEFAULT_ENV)


def test_the_gate_judges_the_q_policy_against_the_champion(trained: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench"
    assert main(["bench", "--env", ENV, "--policies", f"heuristic,q:{trained / 'qtable.json'}", "--candidate", "q",
                 "--split", "holdout", "--episodes", "1", "--task", "steady_week", "--concurrency", "1",
                 "--out", str(out)]) == 0
    gate = json.loads((out / "gate.json").read_text())
    assert gate["verdict"] in ("PROMOTE", "NO_PROMOTE") and gate["reasons"]
    assert f"gate: {gate['verdict']}" in capsys.readouterr().out
    rows = {r["policy"]: r for r in json.loads((out / "leaderboard.json").read_text())}
    assert set(rows) == {"heuristic", f"q:{trained / 'qtable.json'}"}
