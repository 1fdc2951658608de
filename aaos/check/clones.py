"""The clone check: clones start equal to the original, are independent of it both ways, and stepped like it
stay identical to it."""

from __future__ import annotations

import copy

from aaos import policies
from aaos.check.common import Subject, digest
from aaos.check.report import CheckFailed
from aaos.core.env import Environment
from aaos.core.trajectory import state_hash

CLONE_EVERY = 10
"""The clone check clones the environment every this many steps."""
CLONE_STEPS = 5


def check_clone(subject: Subject) -> str:
    driver = subject.driver
    env, policy, observation = driver.start()
    step = probes = 0
    while not env.done:
        joint = policy.act(observation)
        if step % CLONE_EVERY:
            result = env.step(joint)
        else:
            where = driver.at(step)
            moved, moved_hash = _stepped_clone(subject, env, where)
            twin = env.clone()
            result = env.step(joint)
            mirrored = twin.step(copy.deepcopy(joint))
            if state_hash(moved.state()) != moved_hash:
                raise CheckFailed(f"stepping the original changed an earlier clone of it; clone() must copy "
                                  f"everything mutable; {where}")
            if (state_hash(env.state()), digest(result.to_dict())) != (state_hash(twin.state()),
                                                                       digest(mirrored.to_dict())):
                raise CheckFailed(f"a clone stepped with the same joint action as the original diverged from "
                                  f"it; {where}, then step the original and env.clone() with the next joint "
                                  f"action")
            probes += 1
        observation = result.observation
        step += 1
    return (f"clones made at {probes} points of a {step}-step episode start equal to the original, are "
            f"independent of it both ways, and stepped like it stay identical to it")


def _stepped_clone(subject: Subject, env: Environment, where: str) -> tuple[Environment, str]:
    """A clone, checked equal to the original, then stepped on its own without changing the original; with
    its state hash after those steps."""
    snapshot = (state_hash(env.state()), digest(env.observation()))
    twin = env.clone()
    if (state_hash(twin.state()), digest(twin.observation())) != snapshot:
        raise CheckFailed(f"a fresh clone's state or observation differs from the original's; {where}")
    other = policies.make("random", seed=subject.seed + 1, env=subject.env_id)
    other.reset(subject.seed + 1)
    other.bind(twin)
    seen = twin.observation()
    for _ in range(CLONE_STEPS):
        if twin.done:
            break
        seen = twin.step(other.act(seen)).observation
    if (state_hash(env.state()), digest(env.observation())) != snapshot:
        raise CheckFailed(f"stepping a clone changed the original (its state or observation); clone() must "
                          f"copy everything mutable; {where}")
    return twin, state_hash(twin.state())
