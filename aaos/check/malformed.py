"""The malformed-input check: fuzzed joint actions are flagged by check() (which changes nothing), and step()
never raises, rejects them, echoes them back as plain JSON and never scores more than the no-op."""

from __future__ import annotations

import json
from typing import Any

from aaos.check.common import RETURN_TOLERANCE, Subject, digest, raised, short
from aaos.check.fuzz import Case, Fuzzer
from aaos.check.report import CheckFailed
from aaos.core.env import Environment, StepResult
from aaos.core.trajectory import state_hash
from aaos.envs import make

COMPARED_PER_STEP = 1
"""Malformed joint actions per step whose score is compared with the same step done as the no-op (on clones)."""


def check_malformed_input(subject: Subject) -> str:
    fuzzer = Fuzzer(subject.spec, subject.seed)
    driver = subject.driver
    env, policy, observation = driver.start()
    per_step = max(1, -(-subject.fuzz // subject.spec.task(subject.task).max_steps))
    # the malformed actions are stepped in a chain on a second environment (reset when done): cheaper than a
    # clone per action
    chain = make(subject.task, scenario=subject.scenario, seed=subject.seed, env=subject.env_id)
    chain.reset()
    tried = compared = step = 0
    while not env.done and tried < subject.fuzz:
        cases = [fuzzer.case(env) for _ in range(min(per_step, subject.fuzz - tried))]
        where = f"at step {step}; {driver.at(step)}"
        before, pristine = state_hash(env.state()), env.clone()
        for case in cases:
            _flagged(env, case, where)
        if state_hash(env.state()) != before:
            for case in cases:
                probe = pristine.clone()
                probe.check(case.joint)
                if state_hash(probe.state()) != before:
                    raise CheckFailed(f"check({short(case.joint)}) changed the state; check() must change "
                                      f"nothing; {where}")
            raise CheckFailed(f"check() changed the state over {len(cases)} calls; {where}")
        baseline: dict[str, float] = {}
        for index, case in enumerate(cases):
            if chain.done:
                chain.reset()
            # observing every other step halves the cost of building observations
            _rejects(chain, case, index % 2 == 0, f"on aaos.make({subject.task!r}, scenario={subject.scenario!r}, "
                                                  f"seed={subject.seed}, env={subject.env_id!r}) after reset() and "
                                                  f"{tried + index} earlier malformed steps (aaos.check_env("
                                                  f"{subject.env_id!r}, seed={subject.seed}) replays them)")
            if index < COMPARED_PER_STEP:
                _never_pays(subject, env, case, baseline, f"on a clone {where}")
                compared += 1
        tried += len(cases)
        observation = env.step(policy.act(observation)).observation
        step += 1
    return (f"{tried} malformed joint actions: check() flags them and changes nothing, step() never raises and "
            f"rejects them, and none of {compared} compared scores more than the no-op")


def _flagged(env: Environment, case: Case, where: str) -> None:
    try:
        found = env.check(case.joint)
    except Exception as error:
        raise CheckFailed(f"check({short(case.joint)}) raised {raised(error)}; check() must list problems, "
                          f"never raise; {where}") from None
    if not isinstance(found, list) or not all(isinstance(p, str) for p in found):
        raise CheckFailed(f"check() must return a list of strings, got {short(found)}; {where}")
    missing = [role for role in case.rejected if not any(role in p for p in found)]
    if ((case.errors or case.rejected) and not found) or missing:
        raise CheckFailed(f"check({short(case.joint)}) did not flag {', '.join(missing) or 'it'} (returned "
                          f"{short(found)}); {where}")


def step_safely(env: Environment, joint: Any, where: str, observe: bool = True) -> StepResult:
    try:
        return env.step(joint, observe=observe)
    except Exception as error:
        raise CheckFailed(f"step({short(joint)}) raised {raised(error)}; step() must reject bad input, never "
                          f"raise; {where}") from None


def _rejects(env: Environment, case: Case, observe: bool, where: str) -> None:
    result = step_safely(env, case.joint, where, observe)
    results = result.info.get("action_results", {})
    for role in sorted(case.rejected):
        status = results.get(role, {}).get("status")
        if status != "rejected":
            raise CheckFailed(f"{role}'s malformed action {short(case.joint.get(role))} came back {status!r}, "
                              f"not 'rejected'; {where}")
    if case.errors and not result.info.get("errors"):
        raise CheckFailed(f"step({short(case.joint)}) reported nothing in info['errors'] for a joint action "
                          f"that is not an object of known roles; {where}")
    views = result.observation["agent_observations"] if result.observation is not None else {}
    echoed = {"action_results": results, "errors": result.info.get("errors"),
              "last_action_results": [view.get("last_action_result") for view in views.values()]}
    try:
        json.dumps(echoed, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise CheckFailed(f"after step({short(case.joint)}) the action results are not plain JSON ({error}); "
                          f"echo malformed input back as text; {where}") from None


def _never_pays(subject: Subject, env: Environment, case: Case, baseline: dict[str, float], where: str) -> None:
    result = step_safely(env.clone(), case.joint, where, observe=False)
    rejected = {role for role, r in result.info["action_results"].items() if r.get("status") == "rejected"}
    noop = {role: a for role, a in case.joint.items() if role in subject.spec.roles and role not in rejected} if (
        isinstance(case.joint, dict)) else {}
    key = digest(noop)
    if key not in baseline:
        baseline[key] = step_safely(env.clone(), noop, where, observe=False).info["score"]
    if result.info["score"] > baseline[key] + RETURN_TOLERANCE:
        raise CheckFailed(f"step({short(case.joint)}) scores {result.info['score']:.6f} with "
                          f"{', '.join(sorted(rejected)) or 'nothing'} rejected, more than the same step with "
                          f"{'those roles' if rejected else 'every role'} doing the no-op "
                          f"({baseline[key]:.6f}); {where}")
