"""An environment's life (issue 35, item 5): constructing one checks its first episode and builds nothing; reset()
builds the world, so make() then reset() builds it once (the benchmark's episodes too); the seed enters through
make() or reset(seed=...); a bad choice is refused at once and changes nothing; an environment read before its first
reset builds the chosen episode then. For every registered environment and the toy."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import registered
from surfaces import TOY, TOY_KIT

import aaos
from aaos.bench.runner import Job, run_episode
from aaos.core.env import Environment, Episode

ENVS = list(dict.fromkeys([*aaos.env_ids(), TOY]))


@pytest.fixture(autouse=True, scope="module")
def toy_registered() -> Iterator[None]:
    with registered(**{TOY: TOY_KIT}):
        yield


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Episode]]:
    """Every world built from now on, as (environment id, episode), in order."""
    built: list[tuple[str, Episode]] = []
    for env_id in ENVS:
        cls = type(aaos.make(env=env_id))
        original = cls._build

        def counted(self: Environment, episode: Episode, definition: Any, original: Any = original) -> None:
            built.append((self.spec.id, episode))
            original(self, episode, definition)

        monkeypatch.setattr(cls, "_build", counted)
    return built


def dumped(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("env_id", ENVS)
def test_make_builds_nothing_and_reset_builds_the_world_once(env_id: str, builds: list[tuple[str, Episode]]) -> None:
    spec = aaos.spec(env_id)
    env = aaos.make(spec.tasks[-1].id, seed=3, env=env_id)
    assert builds == [] and (env.task, env.scenario, env.seed) == (spec.tasks[-1].id, spec.default_scenario, 3)
    first = env.reset()
    assert builds == [(env_id, Episode(spec.tasks[-1].id, spec.default_scenario, 3))]
    assert first["task"] == spec.tasks[-1].id and first["step_count"] == 0
    env.reset(seed=4)
    assert builds[-1] == (env_id, Episode(spec.tasks[-1].id, spec.default_scenario, 4)) and len(builds) == 2


@pytest.mark.parametrize("env_id", ENVS)
def test_the_seed_of_make_and_the_seed_of_reset_are_one_way_in(env_id: str) -> None:
    scenario = aaos.spec(env_id).scenarios[-1].id
    made = aaos.make(scenario=scenario, seed=10_001, env=env_id)
    reset = aaos.make(scenario=scenario, env=env_id)
    assert dumped(made.reset()) == dumped(reset.reset(seed=10_001))
    assert dumped(made.state()) == dumped(reset.state())


@pytest.mark.parametrize("env_id", ENVS)
def test_a_bad_choice_is_refused_at_once_and_changes_nothing(env_id: str, builds: list[tuple[str, Episode]]) -> None:
    for bad, words in (({"task": "juggling"}, "unknown task 'juggling'"), ({"seed": -1}, "non-negative integer"),
                       ({"seed": True}, "non-negative integer"), ({"scenario": "atlantis"}, "atlantis")):
        with pytest.raises(ValueError, match=words):
            aaos.make(env=env_id, **bad)
    assert builds == []
    env = aaos.make(seed=2, env=env_id)
    before = dumped(env.reset())
    for bad in ({"task": "juggling"}, {"seed": -1}, {"scenario": "atlantis"}):
        with pytest.raises(ValueError):
            env.reset(**bad)
    assert dumped(env.observation()) == before and len(builds) == 1 and env.seed == 2


@pytest.mark.parametrize("env_id", ENVS)
def test_an_environment_read_before_its_first_reset_builds_the_chosen_episode(
        env_id: str, builds: list[tuple[str, Episode]]) -> None:
    env = aaos.make(seed=5, env=env_id)
    state = dumped(env.state())  # no reset yet: the episode make() chose, built now
    assert dumped(env.state()) == state and len(builds) == 1  # built once
    other = aaos.make(seed=5, env=env_id)
    assert state == dumped(other.state()) == dumped(other.reset() and other.state()) and len(builds) == 3
    with pytest.raises(AttributeError, match="no attribute 'nothing_of_the_kind'"):
        env.nothing_of_the_kind  # noqa: B018 - reading it is the test


def test_a_benchmark_episode_builds_its_world_once(builds: list[tuple[str, Episode]]) -> None:
    job = Job("noop", "inbox", "easy", "saas_helpdesk", 7)
    record = asyncio.run(run_episode(job, aaos.policies.make("noop", env="inbox")))
    assert record["error"] is None and builds == [("inbox", Episode("easy", "saas_helpdesk", 7))]
