"""A seeded tabular Q-learner over the compact state and named moves an environment's kit offers
(aaos.core.kit.EnvKit.tabular); the policy that plays its Q-table is aaos.agents.qpolicy.QPolicy.

Every role of a step acts by the same table. Q(s, m) += alpha * (r + gamma * max_m' Q(s', m') - Q(s, m)), r the
step's reward (the increments sum to the episode's score), epsilon-greedy exploration decaying linearly to
EPSILON_END over the run, ties broken by the kit's order of moves. Episodes cycle through every task and train
scenario on train seeds; checkpoints play the greedy table on holdout seeds.

Writes to the output folder: qtable.json (the table and what it was trained on), curve.csv (episode, task,
return, epsilon, holdout score at checkpoints, else empty) and summary.json.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aaos
from aaos.agents.qpolicy import Table, greedy, tabular_of
from aaos.core.kit import EnvKit
from aaos.core.policy import Action
from aaos.core.seeding import rng, split_seeds
from aaos.envs import kit_of

EPSILON_START, EPSILON_END = 0.3, 0.02
ALPHA, GAMMA = 0.05, 0.98
CURVE_COLUMNS = ("episode", "task", "scenario", "seed", "return", "epsilon", "holdout_score")


@dataclass(frozen=True)
class Settings:
    env: str
    episodes: int
    seed: int
    tasks: tuple[str, ...]
    scenarios: tuple[str, ...]
    checkpoints: int = 10
    holdout_seeds: int = 2


def _episode(env: aaos.Environment, kit: EnvKit, table: Table, epsilon: float, explore: Any,
             learn: bool) -> float:
    """Play one episode (learning from it when `learn`); returns its return."""
    tabular = kit.tabular
    assert tabular is not None
    observation = env.reset()
    total = 0.0
    while True:
        chosen: dict[str, tuple[str, str]] = {}
        joint: dict[str, Action] = {}
        for role, view in observation["agent_observations"].items():
            state, moves = tabular(view)
            move = explore.choice(list(moves)) if learn and explore.random() < epsilon else greedy(table, state, moves)
            chosen[role], joint[role] = (state, move), moves[move]
        result = env.step(joint)
        total += result.reward
        if learn:
            future = 0.0
            if not result.done:
                nexts = [tabular(v) for v in result.observation["agent_observations"].values()]
                future = max(max(table.get(s, {}).get(m, 0.0) for m in moves) for s, moves in nexts)
            for state, move in chosen.values():
                row = table.setdefault(state, {})
                old = row.get(move, 0.0)
                row[move] = old + ALPHA * (result.reward + GAMMA * future - old)
        if result.done:
            return total
        observation = result.observation


def holdout_score(settings: Settings, table: Table) -> float:
    """The greedy table's mean score on holdout seeds of every task and scenario."""
    kit = kit_of(settings.env)
    scores = [_episode(aaos.make(task, scenario=scenario, seed=seed, env=settings.env), kit, table, 0.0, None, False)
              for task in settings.tasks for scenario in settings.scenarios
              for seed in split_seeds("holdout", settings.holdout_seeds)]
    return statistics.mean(scores)


def train(settings: Settings, out: Path, progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Train a Q-table, writing qtable.json, curve.csv and summary.json into `out`; returns the summary."""
    tabular_of(settings.env)
    kit = kit_of(settings.env)
    out.mkdir(parents=True, exist_ok=True)
    explore = rng("train-q", settings.env, settings.seed)
    table: Table = {}
    cells = [(task, scenario) for task in settings.tasks for scenario in settings.scenarios]
    every = max(1, settings.episodes // max(1, settings.checkpoints))
    rows: list[dict[str, Any]] = []
    for episode in range(settings.episodes):
        task, scenario = cells[episode % len(cells)]
        seed = split_seeds("train", 1, start=(settings.seed + episode // len(cells)) % 9_000)[0]
        epsilon = EPSILON_START + (EPSILON_END - EPSILON_START) * episode / max(1, settings.episodes - 1)
        env = aaos.make(task, scenario=scenario, seed=seed, env=settings.env)
        total = _episode(env, kit, table, epsilon, explore, True)
        last = episode + 1 == settings.episodes
        checkpoint = holdout_score(settings, table) if (episode + 1) % every == 0 or last else None
        row = {"episode": episode + 1, "task": task, "scenario": scenario, "seed": seed, "return": round(total, 6),
               "epsilon": round(epsilon, 6), "holdout_score": None if checkpoint is None else round(checkpoint, 6)}
        rows.append(row)
        if progress is not None:
            progress(row)
    with (out / "curve.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CURVE_COLUMNS)
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)
    spec = aaos.spec(settings.env)
    (out / "qtable.json").write_text(json.dumps(
        {"env": settings.env, "version": spec.version, "reward_version": spec.reward_version, "table": table},
        indent=1, sort_keys=True) + "\n", encoding="utf-8")
    checkpoints = [r["holdout_score"] for r in rows if r["holdout_score"] is not None]
    tail = rows[-max(1, len(rows) // 10):]
    summary = {"env": settings.env, "episodes": settings.episodes, "seed": settings.seed,
               "tasks": list(settings.tasks), "scenarios": list(settings.scenarios), "states": len(table),
               "alpha": ALPHA, "gamma": GAMMA, "epsilon": [EPSILON_START, EPSILON_END],
               "first_return": rows[0]["return"], "last_tenth_mean_return": statistics.mean(r["return"] for r in tail),
               "holdout_checkpoints": checkpoints, "final_holdout_score": checkpoints[-1],
               "holdout_seeds_per_cell": settings.holdout_seeds}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary
