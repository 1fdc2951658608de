"""The checks made on every step of the ladder's episodes (noop, random and champion on train seeds), played once
and shared: serialisable, contracts, reward_range, return_is_score and hidden_ids; and the ladder itself."""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping
from itertools import pairwise
from typing import Any

from pydantic import BaseModel, ValidationError

from aaos.bench.stats import bootstrap_ci
from aaos.check.common import RETURN_TOLERANCE, Episode, Findings, Subject, as_text, number, raised, short
from aaos.check.report import CheckFailed
from aaos.core.env import Environment, seen_by
from aaos.core.info import info_problems, observation_problems
from aaos.core.seeding import split_seeds

ROLE_VIEW_EVERY = 5
"""The contracts check compares what each role is sent (observation_of) with the observation every this many
steps, on a twin stepped without observing."""
PER_STEP: dict[str, str] = {
    "serialisable": "state() and {steps} observations of {episodes} episodes are plain JSON (no NaN)",
    "contracts": "the info and observation contracts hold on all {steps} steps of {episodes} episodes, and "
                 "each role alone is sent what it sees of the observation",
    "reward_range": "every reward of {steps} steps is finite and every score in [0, 1]",
    "return_is_score": "the rewards of each of {episodes} episodes sum to its final score",
    "hidden_ids": "no hidden id appears in any observation of {episodes} episodes ({steps} steps)",
}
"""The per-step checks and what each says when it passes."""
_BOUNDARY = r"[A-Za-z0-9_]"


def check_per_step(subject: Subject, check: str) -> str:
    findings = _shared(subject)
    if check in findings.problems:
        raise CheckFailed(findings.problems[check])
    return PER_STEP[check].format(steps=findings.steps, episodes=findings.episodes)


def check_ladder(subject: Subject) -> str:
    scores = _shared(subject).scores
    means = {name: statistics.mean(values) for name, values in scores.items()}
    intervals = {name: bootstrap_ci(values) for name, values in scores.items()}
    shown = ", ".join(f"{name} {means[name]:.3f} [{intervals[name][0]:.3f}, {intervals[name][1]:.3f}]"
                      for name in scores)
    seeds = split_seeds("train", subject.episodes)
    where = f"task {subject.task!r}, train seeds {seeds[0]}..{seeds[-1]} over the train scenarios {subject.train}"
    ladder = list(scores)
    for low, high in pairwise(ladder):
        if not intervals[low][1] < intervals[high][0]:
            raise CheckFailed(f"{low} and {high} are not apart: mean score [95% CI] {shown}; the {high} policy "
                              f"must score clearly above {low} ({where})")
    climbed = " < ".join("champion" if name == "heuristic" else name for name in ladder)
    without = "" if "heuristic" in ladder else " (the kit gives no champion)"
    return f"{climbed} with 95% intervals apart over {subject.episodes} episodes each{without}: {shown}"


def _ladder(subject: Subject) -> tuple[str, ...]:
    """The policies the ladder climbs: noop, random and, where the kit gives one, the champion."""
    return ("noop", "random", "heuristic") if subject.kit.champion is not None else ("noop", "random")


def _shared(subject: Subject) -> Findings:
    """Play the ladder's episodes once on train seeds, checking every step as it comes."""
    if subject.played is None:
        try:
            subject.played = _play_all(subject)
        except Exception as error:
            subject.played = error
    if isinstance(subject.played, BaseException):
        raise CheckFailed(f"playing the ladder's episodes raised {raised(subject.played)}")
    return subject.played


def _play_all(subject: Subject) -> Findings:
    findings = Findings()
    for name in _ladder(subject):
        findings.scores[name] = []
        for index, seed in enumerate(split_seeds("train", subject.episodes)):
            episode = Episode(subject.env_id, subject.task, subject.train[index % len(subject.train)], seed, name)
            findings.scores[name].append(_play(subject, episode, findings))
    return findings


def _play(subject: Subject, episode: Episode, findings: Findings) -> float:
    env, policy, observation = episode.start()
    # noop episodes are the ladder's floor; the per-step checks watch the policies that act
    watched = episode.policy != "noop"
    if watched:
        _look(subject, env, observation, None, episode, 0, findings)
    total = 0.0
    score: Any = 0.0
    max_steps = subject.spec.task(episode.task).max_steps
    for step in range(1, max_steps + 1):
        if not watched:
            result = env.step(policy.act(observation))
            observation, score = result.observation, result.info["score"]
            if result.done:
                return float(score)
            continue
        joint = policy.act(observation)
        twin = env.clone() if step % ROLE_VIEW_EVERY == 0 else None
        result = env.step(joint)
        observation = result.observation
        findings.steps += 1
        where = episode.at(step)
        if twin is not None:
            twin.step(joint, observe=False)
            _role_views(subject, twin, observation, where, findings)
        if not number(result.reward):
            findings.add("reward_range", f"the reward {result.reward!r} is not a finite number; {where}")
        else:
            total += result.reward
        score = result.info.get("score")
        if not number(score) or not 0.0 <= score <= 1.0:
            findings.add("reward_range", f"info['score'] {score!r} is not a number in [0, 1]; {where}")
        for problem in info_problems(result.info, subject.spec)[:1]:
            findings.add("contracts", f"{problem}; {where}")
        _look(subject, env, observation, joint, episode, step, findings)
        if result.done:
            if number(score) and abs(total - score) > RETURN_TOLERANCE:
                findings.add("return_is_score", f"the episode's rewards sum to {total!r} but its final score is "
                                                f"{score!r}; {where}")
            findings.episodes += 1
            return float(score)
    findings.add("contracts", f"the episode did not end after the task's max_steps ({max_steps}); "
                              f"{episode.at(max_steps)}")
    return float(score) if number(score) else 0.0


def _role_views(subject: Subject, twin: Environment, observation: Any, where: str, findings: Findings) -> None:
    """What each role alone is sent (observation_of, built by a twin that stepped without observing) is what
    it sees of the observation (seen_by): an environment that builds it its own way must build the same."""
    if not isinstance(observation, Mapping) or observation_problems(observation, subject.spec):
        return  # reported by _look
    for role in subject.spec.roles:
        expected = seen_by(dict(observation), (role,))
        try:
            got = twin.observation_of((role,))
        except Exception as error:
            findings.add("contracts", f"observation_of(({role!r},)) raised {raised(error)}; {where}")
            return
        if not isinstance(got, Mapping):
            findings.add("contracts", f"observation_of(({role!r},)) must be an object, got {short(got)}; {where}")
            return
        if got != expected or list(got) != list(expected):
            extra, missing = sorted(set(got) - set(expected)), sorted(set(expected) - set(got))
            differ = [key for key in expected if key in got and got[key] != expected[key]]
            findings.add("contracts", f"observation_of(({role!r},)) after a step with observe=False is not what "
                                      f"{role} sees of the observation (seen_by): extra keys {extra}, "
                                      f"missing keys {missing}, different {differ} (or in another order); {where}")
            return


def _look(subject: Subject, env: Environment, observation: Any, sent: Any, episode: Episode, step: int,
          findings: Findings) -> None:
    """The checks of one observation and the state behind it."""
    where = episode.at(step)
    state = env.state()
    try:
        json.dumps(state, allow_nan=False)
    except (TypeError, ValueError) as error:
        findings.add("serialisable", f"state() is not plain JSON ({error}); {where}")
    try:
        text = json.dumps(observation, allow_nan=False)
    except (TypeError, ValueError) as error:
        findings.add("serialisable", f"the observation is not plain JSON ({error}); {where}")
        text = as_text(observation)
    if not isinstance(observation, Mapping):
        findings.add("contracts", f"the observation must be an object, got {short(observation)}; {where}")
        return
    for problem in observation_problems(observation, subject.spec)[:1]:
        findings.add("contracts", f"{problem}; {where}")
    for model, what, value in ((subject.kit.observation_model, "the observation", observation),
                               (subject.kit.state_model, "state()", state)):
        if model is not None and (problem := _model_problem(model, value)):
            findings.add("contracts", f"{what} does not validate against {model.__name__}: {problem}; {where}")
    leaked = leaks(observation, text, set(subject.kit.hidden_ids(env)), sent)
    if leaked:
        findings.add("hidden_ids", f"the observation shows {', '.join(map(repr, sorted(leaked)))}, which "
                                   f"hidden_ids(env) says no observation may show yet; {where}")


def _model_problem(model: type[BaseModel], value: Any) -> str | None:
    try:
        model.model_validate(value)
    except ValidationError as error:
        return short(str(error).replace("\n", " "), 300)
    return None


def leaks(observation: Mapping[str, Any], text: str, hidden: set[str], sent: Any) -> set[str]:
    """The hidden ids the observation (`text` is its JSON) shows. A role's own input echoed back in its
    last_action_result does not count: a role that guesses a hidden id may see its guess repeated."""
    escaped = {json.dumps(i)[1:-1]: i for i in hidden if isinstance(i, str) and i}
    candidates = sorted((e for e in escaped if e in text), key=len, reverse=True)
    if not candidates:
        return set()
    pattern = re.compile("|".join(f"(?<!{_BOUNDARY}){re.escape(e)}(?!{_BOUNDARY})" for e in candidates))
    views = observation.get("agent_observations")
    echoes: dict[str, Any] = {}
    rest = dict(observation)
    if isinstance(views, Mapping):
        rest["agent_observations"] = {}
        for role, view in views.items():
            view = dict(view) if isinstance(view, Mapping) else view
            if isinstance(view, dict):
                echoes[role] = view.pop("last_action_result", None)
            rest["agent_observations"][role] = view
    found = {escaped[m] for m in pattern.findall(as_text(rest))}
    own = sent if isinstance(sent, Mapping) else {}
    for role, echo in echoes.items():
        mine = as_text(own.get(role))
        found |= {escaped[m] for m in pattern.findall(as_text(echo)) if m not in mine}
    return found
