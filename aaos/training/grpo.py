"""The GRPO dataset (prompts with environment snapshots) and the reward function that scores completions.

A row is one decision the LLM agent would face at one step of a recorded episode:

    prompt     [system, user]: exactly the LLM agent's prompt (role_messages, or joint_messages / compact_messages in
               joint / compact mode).
    snapshot   the environment before the decision, as JSON text (aaos.training.snapshot); text, so that every
               payload survives `datasets`' column typing unchanged.
    role       the role the completion acts for; null in joint and compact mode (the completion acts for every role).
    mode       the LLM agent's mode, which says how the completion writes its actions.
    horizon    the completion is scored this many steps after the snapshot (aaos.training.rollout); null: the
               environment's default (DEFAULT_HORIZON, or the episode's end where its kit says rollout_to_end).
    env, task, scenario, seed, step
               where it comes from; step is the number of steps taken before the decision.

`informative(rows, sample, wanted, tries)` keeps the rows whose sampled completions score differently: GRPO's
advantage is a completion's reward less its group's mean, so a group that all scores the same teaches nothing and
only costs its generations.

`reward_fn(completions, **kw)` is a TRL reward function over such rows: for each completion it restores the
snapshot, decodes and checks the answer as the LLM agent does, steps the environment with it (the champion
acting for the other roles), lets the champion play on to the horizon and returns the score then, in [0, 1];
a completion without a valid action gets INVALID_REWARD. The score at the horizon is the group's common score
at the snapshot plus the return of the steps up to the horizon, so a completion is scored by its effect on
return. The horizon (DEFAULT_HORIZON, 15 steps, aaos.training.rollout) is long enough for an action's effect
to show: at that depth detecting a hidden risk, flagging a detected one and requesting a resource a blocked
task needs each score at least as well as no_op on average (tests/test_reward_signal.py), which a horizon of 1
did not give: a flag scored less than doing nothing there, a needed request no more. The inbox plays to the
episode's end instead, discounted (a label pays when its email closes): a right label, priority or closing
scores above no_op and a wrong one below in at least 95 % of sampled states (tests/test_inbox_reward_signal.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import aaos
from aaos.agents.llm import InvalidAnswer, Mode
from aaos.training.decisions import completion_text, decisions, parse_answer
from aaos.training.episodes import Record, provenance
from aaos.training.replay import exact_steps
from aaos.training.rollout import INVALID_REWARD, Rollout


def grpo_rows(episodes: Iterable[Sequence[Record]], mode: Mode = "per_role",
              horizon: int | None = None) -> Iterator[dict[str, Any]]:
    """The GRPO rows of every step of the episodes (see the module docstring); each episode is replayed first."""
    if horizon is not None and horizon < 1:
        raise ValueError(f"horizon must be at least 1 step, got {horizon}")
    for episode in episodes:
        spec = aaos.spec(episode[0]["env"])
        for step in exact_steps(episode):
            snapshot = json.dumps(step.snapshot, separators=(",", ":"))
            for decision in decisions(step.observation, spec, mode):
                yield {"prompt": decision.messages, "snapshot": snapshot, "role": decision.role,
                       "mode": decision.mode, "horizon": horizon, **provenance(step.record)}


def score_completion(snapshot: str, role: str | None, horizon: int | None, text: str,
                     mode: Mode | None = None) -> float:
    """The reward of one answer given at a snapshot (see the module docstring); mode None: per-role for a role,
    else joint."""
    rollout = Rollout(snapshot, role, horizon)
    try:
        actions = parse_answer(rollout.spec, role, text, rollout.observation(), mode or _mode(role))
    except InvalidAnswer:
        return INVALID_REWARD
    rollout.act(actions)
    return rollout.finish()


def _mode(role: str | None) -> Mode:
    return "per_role" if role is not None else "joint"


def reward_fn(completions: list[Any], **kw: Any) -> list[float]:
    """TRL reward function: one reward per completion, from the rows' `snapshot`, `role`, `mode` and `horizon`
    columns (TRL passes every dataset column as a keyword; a missing or null horizon means the environment's
    default, a missing mode per-role for a role and joint otherwise)."""
    if "snapshot" not in kw or "role" not in kw:
        raise ValueError("reward_fn needs the snapshot and role columns of rows built by `aaos grpo-data`")
    horizons = kw.get("horizon") or [None] * len(completions)
    modes = kw.get("mode") or [_mode(role) for role in kw["role"]]
    return [score_completion(snapshot, role, None if horizon is None else int(horizon), completion_text(completion),
                             mode)
            for completion, snapshot, role, horizon, mode in zip(completions, kw["snapshot"], kw["role"], horizons,
                                                                 modes, strict=True)]


@dataclass(frozen=True)
class Groups:
    """What the group filter found: the positions of the rows whose completions scored differently, and how many
    rows it sampled (the first ones)."""

    informative: list[int]
    sampled: int


def informative(rows: Sequence[dict[str, Any]], sample: Callable[[list[dict[str, str]]], list[str]], wanted: int,
                tries: int) -> Groups:
    """Sample a group of completions for each row in turn (`sample(prompt)`), score them with reward_fn and keep the
    rows whose group scored differently, until `wanted` are kept or `tries` rows were sampled."""
    kept: list[int] = []
    sampled = 0
    for position, row in enumerate(rows):
        if len(kept) == wanted or sampled == tries:
            break
        sampled += 1
        texts = sample(row["prompt"])
        columns = {name: [row[name]] * len(texts) for name in ("snapshot", "role", "mode", "horizon")}
        if len(set(reward_fn(texts, **columns))) > 1:
            kept.append(position)
    return Groups(kept, sampled)
