"""The SFT dataset: chat `messages` rows for TRL's SFTTrainer, from episodes filtered by reward.

A row is one decision the LLM agent would face (aaos.training.decisions), answered with what the recorded
policy did:

    messages   [system, user, assistant]: the system and user turns are exactly the LLM agent's prompt
               (role_messages, or joint_messages / compact_messages in joint / compact mode); the assistant
               turn is the action as JSON, {"action_type": ..., "payload": {...}} (joint: role -> action for
               every role; compact: an array of every role's call in role order, e.g.
               ["no_op()", "query_metrics(uptime)", ...]).
    role       the role decided for; null in joint and compact mode.
    env, task, scenario, seed, step
               where it comes from; step is the number of steps taken before the decision.
    decision_chars
               the offsets in the answer of the characters that decide it (compact mode; aaos.training.decisions.
               decision_chars): a run with a decision weight weights the tokens that hold them.
    score      the episode's score.

Kept: episodes that ran to the end with a score of at least `min_score`, and of those the decisions whose
actions were all applied (a rejected action, or one that changed nothing, is never a target) and whose answer
the LLM agent's own validation accepts (the champion may, say, request 22 units, which the environment
grants but the agent's legal choices do not offer). Every episode is replayed first, so every prompt is the
observation the environment really produced.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import aaos
from aaos.agents.llm import InvalidAnswer, Mode
from aaos.bench.stats import SUCCESS_THRESHOLD
from aaos.core.env import Observation
from aaos.core.spec import EnvSpec
from aaos.training.decisions import Decision, answer_text, decision_chars, decisions, parse_answer
from aaos.training.episodes import Record, provenance
from aaos.training.replay import exact_steps

DEFAULT_MIN_SCORE = SUCCESS_THRESHOLD


def kept(episode: Sequence[Record], min_score: float) -> bool:
    """An episode that ran to the end with at least `min_score`."""
    last = episode[-1]
    return bool(last["done"]) and last["score"] >= min_score


def valid(answer: str, decision: Decision, observation: Observation, spec: EnvSpec) -> bool:
    """The LLM agent would accept this answer as it is."""
    try:
        parse_answer(spec, decision.role, answer, observation, decision.mode)
    except InvalidAnswer:
        return False
    return True


def sft_rows(episodes: Iterable[Sequence[Record]], mode: Mode = "per_role",
             min_score: float = DEFAULT_MIN_SCORE) -> Iterator[dict[str, Any]]:
    """The SFT rows of the episodes (see the module docstring)."""
    for episode in episodes:
        if not kept(episode, min_score):
            continue
        spec = aaos.spec(episode[0]["env"])
        score = episode[-1]["score"]
        for step in exact_steps(episode):
            results = step.record["action_results"]
            for decision in decisions(step.observation, spec, mode):
                if any(results[role]["status"] != "applied" for role in decision.roles(spec)):
                    continue
                answer = answer_text(decision, step.record["joint_action"], step.observation, spec)
                if not valid(answer, decision, step.observation, spec):
                    continue
                yield {"messages": [*decision.messages, {"role": "assistant", "content": answer}],
                       "decision_chars": decision_chars(decision, answer, step.observation, spec),
                       "role": decision.role, **provenance(step.record), "score": score}
