"""The determinism episode's fingerprints, and the subprocesses (other PYTHONHASHSEEDs) that replay it.

A child runs `fingerprints` and prints the result as JSON; this module imports nothing the child does not need.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from aaos import policies
from aaos.check.common import digest
from aaos.check.report import CheckFailed
from aaos.core.env import Environment
from aaos.core.trajectory import state_hash
from aaos.envs import ENVS_VARIABLE, make, registration, spec

HASH_SEEDS: tuple[str, ...] = ("0", "4242")
"""The PYTHONHASHSEED values of the two subprocesses that replay the determinism episode."""
CHILD_TIMEOUT_S = 300
_CHILD = ("import json, sys; from aaos.check.child import fingerprints; "
          "print(json.dumps(fingerprints(*json.loads(sys.argv[1]))))")


def fingerprints(env_id: str, task: str, scenario: str, seed: int, env: Environment | None = None) -> list[
        dict[str, str]]:
    """Digests of every step of the seeded random-policy episode (reset first): state, observation, reward
    and info."""
    env = env or make(task, scenario=scenario, seed=seed, env=env_id)
    policy = policies.make("random", seed=seed, env=env_id)
    observation = env.reset()
    policy.reset(seed)
    policy.bind(env)
    found = [{"state": state_hash(env.state()), "observation": digest(observation)}]
    for _ in range(spec(env_id).task(task).max_steps):
        result = env.step(policy.act(observation))
        observation = result.observation
        found.append({"state": state_hash(env.state()), "observation": digest(observation),
                      "reward": digest(result.reward), "info": digest(result.info)})
        if result.done:
            break
    return found


def first_difference(first: list[dict[str, str]], second: list[dict[str, str]]) -> str | None:
    for step, (a, b) in enumerate(zip(first, second, strict=False)):
        if a != b:
            parts = ", ".join(k for k in a if a.get(k) != b.get(k))
            return f"step {step} ({'after reset' if step == 0 else 'after that step'}): {parts} differ"
    if len(first) != len(second):
        return f"the episodes have different lengths ({len(first) - 1} and {len(second) - 1} steps)"
    return None


Children = dict[str, subprocess.Popen[str]]


def start_children(env_id: str, task: str, scenario: str, seed: int) -> Children | str:
    """Start one subprocess per hash seed replaying the determinism episode; or why none can be started."""
    try:
        entry = registration(env_id)
    except ValueError as error:
        return str(error)
    if entry is None:
        return (f"{env_id!r} was registered as an EnvKit object, which another process cannot import; register it "
                f"as 'module:attribute' to check determinism across processes")
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    environ[ENVS_VARIABLE] = ",".join(filter(None, (os.environ.get(ENVS_VARIABLE, ""), f"{env_id}={entry}")))
    argument = json.dumps([env_id, task, scenario, seed])
    return {hash_seed: subprocess.Popen([sys.executable, "-c", _CHILD, argument], env=environ | {
        "PYTHONHASHSEED": hash_seed}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for hash_seed in HASH_SEEDS}


def read_children(children: Children) -> dict[str, list[dict[str, str]]]:
    """Each child's fingerprints, by hash seed; CheckFailed when one fails or runs past CHILD_TIMEOUT_S."""
    outputs = {}
    for hash_seed, child in children.items():
        try:
            stdout, stderr = child.communicate(timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise CheckFailed(f"the subprocess with PYTHONHASHSEED={hash_seed} ran past {CHILD_TIMEOUT_S} s") from None
        if child.returncode != 0:
            raise CheckFailed(f"the subprocess with PYTHONHASHSEED={hash_seed} failed (exit {child.returncode}): "
                              f"{stderr.strip()[-600:]}")
        outputs[hash_seed] = json.loads(stdout.strip().splitlines()[-1])
    return outputs


def stop_children(children: Children | str) -> None:
    if isinstance(children, dict):
        for child in children.values():
            if child.poll() is None:
                child.kill()
                child.communicate()
