"""DAgger's data: the model plays, the champion says what it would have done in every state the model reached.

A small imitation model trained on the champion's own episodes sees only the champion's states; once it errs it
is somewhere the data never showed it, and errors compound. DAgger (Ross et al., 2011) fixes that: roll the model
out, label the states it visits with the expert's answer, aggregate, retrain. The champion can label any state
from the observation alone, which fixed demonstrations cannot give.

A row is an SFT row (aaos.training.sft): the LLM agent's prompt at a state the model reached, answered with the
champion's action there. Kept, as for SFT, only where every role's labelled action would be applied (tried on a
copy of the environment) and the LLM agent's own validation accepts the answer. The model's action, not the
label, is what the episode then plays.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from typing import Any

import aaos
from aaos.agents.llm import Mode
from aaos.core.env import Environment, JointAction, Observation
from aaos.core.trajectory import EpisodeMeta
from aaos.policies import PolicySpec, build_policy
from aaos.training.decisions import answer_text, decision_chars, decisions
from aaos.training.episodes import plain
from aaos.training.sft import valid


def applied(env: Environment, joint: JointAction) -> set[str]:
    """The roles whose action in `joint` the environment would apply now (tried on a copy; `env` is unchanged)."""
    results = copy.deepcopy(env).step(joint).info["action_results"]
    return {role for role, result in results.items() if result["status"] == "applied"}


def labelled_rows(env: Environment, observation: Observation, label: JointAction, meta: EpisodeMeta, step: int,
                  mode: Mode) -> Iterator[dict[str, Any]]:
    """The SFT rows of one state the model reached, answered with the champion's `label` (see the module
    docstring); `step` is the number of steps taken before it."""
    spec = env.spec
    taken = applied(env, label)
    for decision in decisions(observation, spec, mode):
        if not set(decision.roles(spec)) <= taken:
            continue
        answer = answer_text(decision, label, observation, spec)
        if valid(answer, decision, observation, spec):
            yield {"messages": [*decision.messages, {"role": "assistant", "content": answer}],
                   "decision_chars": decision_chars(decision, answer, observation, spec),
                   "role": decision.role, "env": meta.env, "task": meta.task, "scenario": meta.scenario,
                   "seed": meta.seed, "step": step}


def dagger_rows(meta: EpisodeMeta, learner: PolicySpec, mode: Mode) -> Iterator[dict[str, Any]]:
    """Play one episode with the `learner` and yield the champion-labelled rows of every state it reached."""
    env = aaos.make(meta.task, scenario=meta.scenario, seed=meta.seed, env=meta.env)
    champion = aaos.policies.make("heuristic", seed=meta.seed, env=meta.env)
    model = build_policy(learner, meta.env, meta.seed)
    observation = env.reset()
    for policy in (champion, model):
        policy.reset(meta.seed)
        policy.bind(env)
    try:
        for step in itertools.count():
            seen = plain(observation)  # copied before the step, so the step cannot change the rows' prompts
            yield from labelled_rows(env, seen, champion.act(observation), meta, step, mode)
            result = env.step(model.act(observation))
            if result.done:
                return
            observation = result.observation
    finally:
        model.close()
