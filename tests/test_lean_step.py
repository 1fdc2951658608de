"""The fast paths of a step change nothing anyone can see: a step without an observation pays and reports exactly
what a step with one does, and every observation is made of new objects that no consumer can use to change the
next one (the world itself is covered by test_invariants' tearing test)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import aaos
from aaos.core.env import Environment, StepResult
from aaos.core.info import OBSERVATION_KEYS


def _episodes(env_id: str) -> list[tuple[str, str, str]]:
    spec = aaos.spec(env_id)
    return [(t.id, s.id, policy) for t in spec.tasks for s in spec.scenarios for policy in ("heuristic", "random")]


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _twins(env_id: str, seed: int) -> Iterator[tuple[str, Environment, Environment, StepResult, StepResult]]:
    """Every step of the champion's and random's episodes on every task x scenario of an environment, taken by
    two twins, the policy choosing from the observed twin's views: where, the observed twin, the lean twin
    (stepped with observe=False), and the observed and the lean result."""
    for task, scenario, policy_name in _episodes(env_id):
        observed = aaos.make(task, scenario=scenario, seed=seed, env=env_id)
        lean = aaos.make(task, scenario=scenario, seed=seed, env=env_id)
        policy = aaos.policies.make(policy_name, seed=seed, env=env_id)
        observation = observed.reset()
        lean.reset()
        policy.bind(observed)
        while True:
            joint = policy.act(observation)
            full, bare = observed.step(joint), lean.step(joint, observe=False)
            yield f"{env_id} {task} {scenario} {policy_name} step {full.info['step']}", observed, lean, full, bare
            observation = full.observation
            if full.done:
                break


@pytest.mark.parametrize("env_id", aaos.env_ids())
def test_a_step_without_observation_pays_and_reports_what_an_observed_step_does(env_id: str) -> None:
    """On every task x scenario of every environment: reward, done, info and state agree at every step, and the
    lean twin's observation, asked for afterwards, is the observed twin's."""
    for where, observed, lean, full, bare in _twins(env_id, seed=1):
        assert bare.observation is None, where
        assert (bare.reward, bare.done) == (full.reward, full.done), where
        assert _dump(bare.info) == _dump(full.info), where
        assert _dump(lean.state()) == _dump(observed.state()), where
        if full.info["step"] % 7 == 0 or full.done:
            assert _dump(lean.observation()) == _dump(full.observation), where


def _containers(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from _containers(item)


def _scramble(value: Any) -> None:
    """Empty every list and dict inside a value, depth first, and put junk in the emptied dicts."""
    for container in list(_containers(value))[::-1]:
        container.clear()
        if isinstance(container, dict):
            container["junk"] = ["junk"]


@pytest.mark.parametrize("env_id", aaos.env_ids())
def test_no_two_observations_share_an_object_and_tearing_one_changes_no_later_one(env_id: str) -> None:
    """Two twins play the champion's actions; one has every observation, info and legal_actions answer it returns
    torn apart: the next observations of the two stay identical, and no container of an observation appears in
    the one before it or in the step's info."""
    spec = aaos.spec(env_id)
    task = spec.tasks[-1].id
    kept, torn = aaos.make(task, env=env_id), aaos.make(task, env=env_id)
    policy = aaos.policies.make("heuristic", env=env_id)
    observation, mangled = kept.reset(), torn.reset()
    policy.bind(kept)
    previous: set[int] = set()
    while True:
        assert _dump(observation) == _dump(mangled)
        mine = {id(c) for c in _containers(observation)}
        assert not mine & previous, "an observation reuses an object of the one before it"
        previous = mine
        joint = policy.act(observation)
        _scramble(mangled)
        for role in spec.roles:
            _scramble(torn.legal_actions(role))
        first, second = kept.step(joint), torn.step(joint)
        assert not {id(c) for c in _containers(first.info)} & {id(c) for c in _containers(first.observation)}
        _scramble(second.info)
        observation, mangled = first.observation, second.observation
        if first.done:
            assert _dump(kept.state()) == _dump(torn.state())
            return


@pytest.mark.parametrize("env_id", aaos.env_ids())
def test_what_some_roles_see_is_the_whole_observation_cut_down(env_id: str) -> None:
    """On every task x scenario, the lean twin asked for what some roles see (each role alone, and the roles in
    reverse order) gets exactly the observed twin's observation cut to the keys every observation has, with only
    those views, in that order (none of the environment's own world-wide fields); tearing them apart changes
    none of the next step's."""
    roles = aaos.spec(env_id).roles
    choices = [(role,) for role in roles] + [tuple(reversed(roles))]
    for where, _, lean, full, _ in _twins(env_id, seed=2):
        views = full.observation["agent_observations"]
        for chosen in choices[full.info["step"] % len(choices)::3]:
            got = lean.observation_of(chosen)
            expected = {**{key: full.observation[key] for key in OBSERVATION_KEYS},
                        "agent_observations": {role: views[role] for role in chosen}}
            assert _dump(got) == _dump(expected), f"{where}, roles {chosen}"
            assert list(got["agent_observations"]) == list(chosen)
            if not full.done:
                _scramble(got)
        if full.done:
            assert _dump(lean.observation()) == _dump(full.observation), where
