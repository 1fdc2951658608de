"""The conformance checker: does an environment honour the protocol the platform relies on?

    import aaos
    report = aaos.check_env("toy")
    print(report)              # one line per check: PASS / FAIL / SKIP, what was checked or what is wrong
    assert report.passed

Like Gymnasium's check_env, but for what AAOS needs of an environment: determinism within a process and across
processes (PYTHONHASHSEED), malformed input that never raises and never pays, JSON-only state and observations,
independent clones, legal actions that are accepted, the info and observation contracts, rewards whose sum is
the score, a reward ladder (noop < random < champion), and ground truth that no observation shows too early.
Every failure says what is wrong and how to reproduce it. `aaos check ENV` runs it from the command line.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from aaos import policies
from aaos.bench.stats import bootstrap_ci
from aaos.core.actions import parse_joint_action
from aaos.core.env import Environment, Observation, seen_by
from aaos.core.info import info_problems, observation_problems
from aaos.core.kit import EnvKit
from aaos.core.policy import Policy
from aaos.core.seeding import rng, split_seeds
from aaos.core.spec import EnvSpec
from aaos.core.trajectory import state_hash
from aaos.envs import DEFAULT_ENV, ENVS_VARIABLE, kit_of, make, registration, spec

Status = Literal["passed", "failed", "skipped"]
CHECKS: tuple[str, ...] = (
    "determinism", "cross_process_determinism", "malformed_input", "serialisable", "clone", "legal_actions",
    "contracts", "reward_range", "return_is_score", "ladder", "hidden_ids",
)
"""The checks, in the order they run and are reported."""
HASH_SEEDS: tuple[str, ...] = ("0", "4242")
"""The PYTHONHASHSEED values of the two subprocesses that replay the determinism episode."""
CHILD_TIMEOUT_S = 300
RETURN_TOLERANCE = 1e-9
COMPARED_PER_STEP = 1
"""Malformed joint actions per step whose score is compared with the same step done as the no-op (on clones)."""
CLONE_EVERY = 10
"""The clone check clones the environment every this many steps."""
CLONE_STEPS = 5
ROLE_VIEW_EVERY = 5
"""The contracts check compares what each role is sent (observation_of) with the observation every this many
steps, on a twin stepped without observing."""
RETEST_EVERY = 2
"""Besides every action type the first time it is offered, the legal-actions check re-tests each role's
least-tested type (with fresh choices) every this many steps."""
FILLER_TEXT = "written by aaos check"
LABELS: dict[Status, str] = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP"}
_SHORT = 160


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check: passed (message says what was checked), failed (what is wrong and how to reproduce it) or
    skipped (why it could not run)."""

    name: str
    status: Status
    message: str

    def __str__(self) -> str:
        return f"{LABELS[self.status]} {self.name}: {self.message}"


@dataclass(frozen=True, slots=True)
class CheckReport:
    """What `check_env` found: one result per check, in the order of CHECKS."""

    env: str
    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        """No check failed (a skipped check is not a failure)."""
        return not self.failed

    @property
    def failed(self) -> list[str]:
        """The names of the failed checks."""
        return [r.name for r in self.results if r.status == "failed"]

    def result(self, name: str) -> CheckResult:
        for result in self.results:
            if result.name == name:
                return result
        raise KeyError(f"no check named {name!r}; checks are: {', '.join(CHECKS)}")

    def __str__(self) -> str:
        counts = ", ".join(f"{sum(r.status == status for r in self.results)} {status}" for status in LABELS)
        failed = f"; failed: {', '.join(self.failed)}" if self.failed else ""
        return "\n".join([f"aaos check {self.env}", *(str(r) for r in self.results), counts + failed])


class CheckFailed(Exception):
    """A check found a problem (the message says what, and how to reproduce it)."""


def _short(value: Any, limit: int = _SHORT) -> str:
    try:
        text = repr(value)
    except Exception as error:  # a value whose repr raises is itself part of what is being fuzzed
        text = f"<{type(value).__name__}: repr raised {type(error).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _opaque(value: Any) -> str:
    # a type name, never a repr: reprs may carry memory addresses, which differ between runs
    return f"<{type(value).__name__}>"


def _digest(value: Any) -> str:
    """sha256 of the value as canonical JSON (anything that is not JSON counts only by its type)."""
    try:
        text = json.dumps(value, sort_keys=True, default=_opaque)
    except (TypeError, ValueError, RecursionError):
        text = _short(value, 10_000)
    return hashlib.sha256(text.encode()).hexdigest()


def _raised(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}: {_short(str(error), 300)}{where}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, slots=True)
class _Episode:
    """Where an episode comes from, as a line that reproduces it."""

    env_id: str
    task: str
    scenario: str
    seed: int
    policy: str

    def at(self, step: int) -> str:
        then = f"then repeat obs = env.step(policy.act(obs)).observation {step} time(s)" if step else "then look at obs"
        return (f"reproduce: env = aaos.make({self.task!r}, scenario={self.scenario!r}, seed={self.seed}, "
                f"env={self.env_id!r}); obs = env.reset(); policy = aaos.policies.make({self.policy!r}, "
                f"seed={self.seed}, env={self.env_id!r}); policy.reset({self.seed}); policy.bind(env); {then}")


def _start(episode: _Episode) -> tuple[Environment, Policy, Observation]:
    env = make(episode.task, scenario=episode.scenario, seed=episode.seed, env=episode.env_id)
    policy = policies.make(episode.policy, seed=episode.seed, env=episode.env_id)
    observation = env.reset()
    policy.reset(episode.seed)
    policy.bind(env)
    return env, policy, observation


def _fingerprints(env_id: str, task: str, scenario: str, seed: int, env: Environment | None = None) -> list[
        dict[str, str]]:
    """Digests of every step of the seeded random-policy episode (reset first): state, observation, reward
    and info. The subprocesses of the cross-process check run this and print the result as JSON."""
    env = env or make(task, scenario=scenario, seed=seed, env=env_id)
    policy = policies.make("random", seed=seed, env=env_id)
    observation = env.reset()
    policy.reset(seed)
    policy.bind(env)
    found = [{"state": state_hash(env.state()), "observation": _digest(observation)}]
    for _ in range(spec(env_id).task(task).max_steps):
        result = env.step(policy.act(observation))
        observation = result.observation
        found.append({"state": state_hash(env.state()), "observation": _digest(observation),
                      "reward": _digest(result.reward), "info": _digest(result.info)})
        if result.done:
            break
    return found


def _first_difference(first: list[dict[str, str]], second: list[dict[str, str]]) -> str | None:
    for step, (a, b) in enumerate(zip(first, second, strict=False)):
        if a != b:
            parts = ", ".join(k for k in a if a.get(k) != b.get(k))
            return f"step {step} ({'after reset' if step == 0 else 'after that step'}): {parts} differ"
    if len(first) != len(second):
        return f"the episodes have different lengths ({len(first) - 1} and {len(second) - 1} steps)"
    return None


_CHILD = ("import json, sys; from aaos.check import _fingerprints; "
          "print(json.dumps(_fingerprints(*json.loads(sys.argv[1]))))")


def _children(env_id: str, task: str, scenario: str, seed: int) -> dict[str, subprocess.Popen[str]] | str:
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


# --- malformed input ------------------------------------------------------------------------------------


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


HUGE = "x" * 100_000
NASTY: tuple[Any, ...] = (
    None, True, False, 0, -1, 2**80, 1.5, float("nan"), float("inf"), -float("inf"), "", "x", " ", "\x00", HUGE,
    [], [1, 2], ["no_op"], (), {}, {"a": 1}, {1: 2}, {None: None}, b"bytes", {1, 2}, frozenset(), complex(1, 2),
    range(3), _deep(200), {"deep": _deep(200)}, [float("nan")], {"a": float("nan")},
)
"""Values that are wrong almost anywhere: wrong types, NaN and infinities, huge and deeply nested values."""
NOT_AN_OBJECT = tuple(v for v in NASTY if v is not None and not isinstance(v, dict))
MADE_UP_IDS: tuple[str, ...] = ("no_such_id", "id_999999", "", " ", "x" * 300, "\x00", "../etc/passwd")


@dataclass(slots=True)
class _Case:
    """A malformed joint action and what the spec alone says about it."""

    joint: Any
    rejected: set[str] = field(default_factory=set)  # roles the spec rejects
    errors: bool = False  # the spec reports joint-level errors (unknown roles, not an object)


class _Fuzzer:
    """Draws malformed joint actions (seeded) for the environment's spec."""

    def __init__(self, spec_: EnvSpec, seed: int) -> None:
        self.spec = spec_
        self.draw = rng("aaos check", "fuzz", spec_.id, seed)
        self.names = [a.name for a in spec_.actions]

    def case(self, env: Environment) -> _Case:
        kind = self.draw.choice(("not_an_object", "unknown_role", "role", "role", "role", "role", "role", "world"))
        if kind == "not_an_object":
            joint: Any = self.draw.choice(NOT_AN_OBJECT)
        else:
            joint = self._others(env)
            if kind == "unknown_role":
                for _ in range(self.draw.randint(1, 3)):
                    joint[self._unknown_role()] = self.draw.choice((*NASTY, {"action_type": self.spec.noop_action}))
            else:
                role = self.draw.choice(self.spec.roles)
                joint[role] = self._world(role) if kind == "world" else self._malformed(role)
        parsed = parse_joint_action(self.spec, joint)
        return _Case(joint, set(parsed.rejected), bool(parsed.errors))

    def _others(self, env: Environment) -> dict[Any, Any]:
        """Legal actions for some roles (the malformed part is added beside them)."""
        joint: dict[Any, Any] = {}
        for role in self.spec.roles:
            if self.draw.random() < 0.3:
                legal = env.legal_actions(role)
                name = self.draw.choice(sorted(legal))
                payload = {f: self.draw.choice(c) if isinstance(c, list) and c else FILLER_TEXT
                           for f, c in legal[name].items()}
                joint[role] = {"action_type": name, "payload": payload}
        return joint

    def _unknown_role(self) -> Any:
        role = self.draw.choice(self.spec.roles)
        candidates = (role.upper(), f" {role}", f"{role}\x00", "", "nobody", HUGE, 0, None, 1.5, float("nan"), (role,))
        return self.draw.choice([c for c in candidates if c not in self.spec.roles])

    def _fields(self, name: str) -> list[str]:
        action = self.spec.action(name)
        return sorted(action.payload.model_fields) if action else []

    def _malformed(self, role: str) -> Any:
        allowed = list(self.spec.allowed_actions(role)) or self.names
        with_fields = [n for n in allowed if self._fields(n)] or allowed
        name = self.draw.choice(with_fields)
        forbidden = [n for n in self.names if n not in allowed]
        nasty = self.draw.choice(NASTY)
        form = self.draw.choice(("not_an_object", "action_type_type", "unknown_action_type", "extra_key",
                                 "payload_not_object", "field_types", "missing_fields", "extra_field", "forbidden",
                                 "huge"))
        if form == "not_an_object":
            return self.draw.choice((None, *NOT_AN_OBJECT))
        if form == "action_type_type":
            return {"action_type": self.draw.choice([v for v in NASTY if not isinstance(v, str)]), "payload": {}}
        if form == "unknown_action_type":
            typed = (name.upper(), f"{name} ", f"{name}\x00", "launch_rockets", HUGE, "")
            return {"action_type": self.draw.choice([t for t in typed if t not in self.names]), "payload": {}}
        if form == "extra_key":
            return {"action_type": name, "payload": {}, self.draw.choice(("role", "id", "", "payload ")): nasty}
        if form == "payload_not_object":
            return {"action_type": name, "payload": self.draw.choice(NOT_AN_OBJECT)}
        if form == "field_types":
            return {"action_type": name, "payload": {f: self.draw.choice(NASTY) for f in self._fields(name)}}
        if form == "missing_fields":
            return {"action_type": name, "payload": {}}
        if form == "extra_field":
            payload = {f: self.draw.choice(MADE_UP_IDS) for f in self._fields(name)}
            payload[self.draw.choice(("unexpected", "", "__class__", "x" * 1000))] = nasty
            return {"action_type": name, "payload": payload}
        if form == "forbidden" and forbidden:
            other = self.draw.choice(forbidden)
            return {"action_type": other, "payload": {f: self.draw.choice(MADE_UP_IDS) for f in self._fields(other)}}
        return {"action_type": self.draw.choice((name, HUGE)), "payload": {f: self.draw.choice((HUGE, _deep(200)))
                                                                          for f in self._fields(name)}}

    def _world(self, role: str) -> dict[str, Any]:
        """A permitted action naming things that do not exist (the world, not the spec, rejects it, if anything)."""
        name = self.draw.choice(list(self.spec.allowed_actions(role)) or self.names)
        return {"action_type": name, "payload": {f: self.draw.choice(MADE_UP_IDS) for f in self._fields(name)}}


# --- the checks -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Findings:
    """The first problem each per-step check found while the shared episodes were played."""

    problems: dict[str, str] = field(default_factory=dict)
    steps: int = 0
    episodes: int = 0
    scores: dict[str, list[float]] = field(default_factory=dict)

    def add(self, check: str, message: str) -> None:
        self.problems.setdefault(check, message)


class _Checker:
    def __init__(self, env_id: str, kit: EnvKit, spec_: EnvSpec, episodes: int, seed: int, fuzz: int) -> None:
        self.env_id, self.kit, self.spec, self.episodes, self.seed, self.fuzz = env_id, kit, spec_, episodes, seed, fuzz
        self.task = spec_.default_task
        self.scenario = spec_.default_scenario
        self.train = [s.id for s in spec_.scenarios if s.split == "train"] or [self.scenario]
        self.driver = _Episode(env_id, self.task, self.scenario, seed, "random")
        self.in_process: list[dict[str, str]] | None = None
        self.skip_reason = ""
        self._played: _Findings | BaseException | None = None

    # (a) determinism

    def determinism(self) -> str:
        env = make(self.task, scenario=self.scenario, seed=self.seed, env=self.env_id)
        first = _fingerprints(self.env_id, self.task, self.scenario, self.seed, env)
        again = _fingerprints(self.env_id, self.task, self.scenario, self.seed, env)
        fresh = _fingerprints(self.env_id, self.task, self.scenario, self.seed)
        for label, other in (("reset() of the same environment", again), ("a second, fresh environment", fresh)):
            difference = _first_difference(first, other)
            if difference:
                raise CheckFailed(f"the same seeded episode played twice in one process differs ({label}): "
                                  f"{difference}; draw every random number from aaos.core.seeding.rng, never from "
                                  f"the global random module or the clock; {self.driver.at(len(first) - 1)}")
        self.in_process = first
        return f"3 runs of the seeded random-policy episode ({len(first) - 1} steps) are identical, step by step"

    def cross_process(self, children: dict[str, subprocess.Popen[str]] | str) -> str | None:
        """None when skipped (the reason is in self.skip_reason)."""
        if isinstance(children, str):
            self.skip_reason = children
            return None
        outputs = {}
        for hash_seed, child in children.items():
            try:
                stdout, stderr = child.communicate(timeout=CHILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.communicate()
                raise CheckFailed(f"the subprocess with PYTHONHASHSEED={hash_seed} ran past "
                                  f"{CHILD_TIMEOUT_S} s") from None
            if child.returncode != 0:
                raise CheckFailed(f"the subprocess with PYTHONHASHSEED={hash_seed} failed (exit {child.returncode}): "
                                  f"{stderr.strip()[-600:]}")
            outputs[hash_seed] = json.loads(stdout.strip().splitlines()[-1])
        if self.in_process is None:
            self.skip_reason = "the determinism check within one process did not pass (see determinism)"
            return None
        (seed_a, first), (seed_b, second) = outputs.items()
        for label, a, b in ((f"PYTHONHASHSEED={seed_a} and PYTHONHASHSEED={seed_b}", first, second),
                            (f"PYTHONHASHSEED={seed_a} and this process", first, self.in_process)):
            difference = _first_difference(a, b)
            if difference:
                raise CheckFailed(f"the seeded episode differs between processes ({label}): {difference}; look for "
                                  f"hash() of strings, iteration over sets of strings, or id()-based ordering; "
                                  f"{self.driver.at(len(a) - 1)} in two processes with different PYTHONHASHSEED")
        return (f"subprocesses with PYTHONHASHSEED {' and '.join(HASH_SEEDS)} replay the episode "
                f"({len(first) - 1} steps) identically to this process")

    # (b) malformed input

    def malformed_input(self) -> str:
        fuzzer = _Fuzzer(self.spec, self.seed)
        env, policy, observation = _start(self.driver)
        per_step = max(1, -(-self.fuzz // self.spec.task(self.task).max_steps))
        # the malformed actions are stepped in a chain on a second environment (reset when done): cheaper than a
        # clone per action
        chain = make(self.task, scenario=self.scenario, seed=self.seed, env=self.env_id)
        chain.reset()
        tried = compared = step = 0
        while not env.done and tried < self.fuzz:
            cases = [fuzzer.case(env) for _ in range(min(per_step, self.fuzz - tried))]
            where = f"at step {step}; {self.driver.at(step)}"
            before, pristine = state_hash(env.state()), env.clone()
            for case in cases:
                self._flagged(env, case, where)
            if state_hash(env.state()) != before:
                for case in cases:
                    probe = pristine.clone()
                    probe.check(case.joint)
                    if state_hash(probe.state()) != before:
                        raise CheckFailed(f"check({_short(case.joint)}) changed the state; check() must change "
                                          f"nothing; {where}")
                raise CheckFailed(f"check() changed the state over {len(cases)} calls; {where}")
            baseline: dict[str, float] = {}
            for index, case in enumerate(cases):
                if chain.done:
                    chain.reset()
                # observing every other step halves the cost of building observations
                self._rejects(chain, case, index % 2 == 0, f"on aaos.make({self.task!r}, scenario={self.scenario!r}, "
                                                           f"seed={self.seed}, env={self.env_id!r}) after reset() and "
                                                           f"{tried + index} earlier malformed steps (aaos.check_env("
                                                           f"{self.env_id!r}, seed={self.seed}) replays them)")
                if index < COMPARED_PER_STEP:
                    self._never_pays(env, case, baseline, f"on a clone {where}")
                    compared += 1
            tried += len(cases)
            observation = env.step(policy.act(observation)).observation
            step += 1
        return (f"{tried} malformed joint actions: check() flags them and changes nothing, step() never raises and "
                f"rejects them, and none of {compared} compared scores more than the no-op")

    def _flagged(self, env: Environment, case: _Case, where: str) -> None:
        try:
            found = env.check(case.joint)
        except Exception as error:
            raise CheckFailed(f"check({_short(case.joint)}) raised {_raised(error)}; check() must list problems, "
                              f"never raise; {where}") from None
        if not isinstance(found, list) or not all(isinstance(p, str) for p in found):
            raise CheckFailed(f"check() must return a list of strings, got {_short(found)}; {where}")
        missing = [role for role in case.rejected if not any(role in p for p in found)]
        if ((case.errors or case.rejected) and not found) or missing:
            raise CheckFailed(f"check({_short(case.joint)}) did not flag {', '.join(missing) or 'it'} (returned "
                              f"{_short(found)}); {where}")

    def _step(self, env: Environment, joint: Any, where: str, observe: bool = True) -> Any:
        try:
            return env.step(joint, observe=observe)
        except Exception as error:
            raise CheckFailed(f"step({_short(joint)}) raised {_raised(error)}; step() must reject bad input, never "
                              f"raise; {where}") from None

    def _rejects(self, env: Environment, case: _Case, observe: bool, where: str) -> None:
        result = self._step(env, case.joint, where, observe)
        results = result.info.get("action_results", {})
        for role in sorted(case.rejected):
            status = results.get(role, {}).get("status")
            if status != "rejected":
                raise CheckFailed(f"{role}'s malformed action {_short(case.joint.get(role))} came back {status!r}, "
                                  f"not 'rejected'; {where}")
        if case.errors and not result.info.get("errors"):
            raise CheckFailed(f"step({_short(case.joint)}) reported nothing in info['errors'] for a joint action "
                              f"that is not an object of known roles; {where}")
        views = result.observation["agent_observations"] if result.observation is not None else {}
        echoed = {"action_results": results, "errors": result.info.get("errors"),
                  "last_action_results": [view.get("last_action_result") for view in views.values()]}
        try:
            json.dumps(echoed, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise CheckFailed(f"after step({_short(case.joint)}) the action results are not plain JSON ({error}); "
                              f"echo malformed input back as text; {where}") from None

    def _never_pays(self, env: Environment, case: _Case, baseline: dict[str, float], where: str) -> None:
        result = self._step(env.clone(), case.joint, where, observe=False)
        rejected = {role for role, r in result.info["action_results"].items() if r.get("status") == "rejected"}
        noop = {role: a for role, a in case.joint.items() if role in self.spec.roles and role not in rejected} if (
            isinstance(case.joint, dict)) else {}
        key = _digest(noop)
        if key not in baseline:
            baseline[key] = self._step(env.clone(), noop, where, observe=False).info["score"]
        if result.info["score"] > baseline[key] + RETURN_TOLERANCE:
            raise CheckFailed(f"step({_short(case.joint)}) scores {result.info['score']:.6f} with "
                              f"{', '.join(sorted(rejected)) or 'nothing'} rejected, more than the same step with "
                              f"{'those roles' if rejected else 'every role'} doing the no-op "
                              f"({baseline[key]:.6f}); {where}")

    # (d) clones

    def clone(self) -> str:
        env, policy, observation = _start(self.driver)
        step = probes = 0
        while not env.done:
            joint = policy.act(observation)
            if step % CLONE_EVERY:
                result = env.step(joint)
            else:
                where = self.driver.at(step)
                moved, moved_hash = self._stepped_clone(env, where)
                twin = env.clone()
                result = env.step(joint)
                mirrored = twin.step(copy.deepcopy(joint))
                if state_hash(moved.state()) != moved_hash:
                    raise CheckFailed(f"stepping the original changed an earlier clone of it; clone() must copy "
                                      f"everything mutable; {where}")
                if (state_hash(env.state()), _digest(result.to_dict())) != (state_hash(twin.state()),
                                                                            _digest(mirrored.to_dict())):
                    raise CheckFailed(f"a clone stepped with the same joint action as the original diverged from "
                                      f"it; {where}, then step the original and env.clone() with the next joint "
                                      f"action")
                probes += 1
            observation = result.observation
            step += 1
        return (f"clones made at {probes} points of a {step}-step episode start equal to the original, are "
                f"independent of it both ways, and stepped like it stay identical to it")

    def _stepped_clone(self, env: Environment, where: str) -> tuple[Environment, str]:
        """A clone, checked equal to the original, then stepped on its own without changing the original; with
        its state hash after those steps."""
        snapshot = (state_hash(env.state()), _digest(env.observation()))
        twin = env.clone()
        if (state_hash(twin.state()), _digest(twin.observation())) != snapshot:
            raise CheckFailed(f"a fresh clone's state or observation differs from the original's; {where}")
        other = policies.make("random", seed=self.seed + 1, env=self.env_id)
        other.reset(self.seed + 1)
        other.bind(twin)
        seen = twin.observation()
        for _ in range(CLONE_STEPS):
            if twin.done:
                break
            seen = twin.step(other.act(seen)).observation
        if (state_hash(env.state()), _digest(env.observation())) != snapshot:
            raise CheckFailed(f"stepping a clone changed the original (its state or observation); clone() must "
                              f"copy everything mutable; {where}")
        return twin, state_hash(twin.state())

    # (e) legal actions

    def legal_actions(self) -> str:
        env, policy, observation = _start(self.driver)
        draw = rng("aaos check", "legal", self.env_id, self.seed)
        tested: dict[tuple[str, str], int] = {}
        step = 0
        while not env.done:
            where = self.driver.at(step)
            for role in self.spec.roles:
                legal = env.legal_actions(role)
                shown = observation["agent_observations"][role].get("legal_actions")
                if _digest(shown) != _digest(legal):
                    raise CheckFailed(f"{role}'s view shows legal_actions {_short(shown)} but legal_actions("
                                      f"{role!r}) returns {_short(legal)}; {where}")
                chosen = [name for name in sorted(legal) if (role, name) not in tested]
                if not chosen and legal and step % RETEST_EVERY == 0:
                    chosen = [min(sorted(legal), key=lambda name: tested[role, name])]
                for name in chosen:
                    self._accepted(env, role, name, legal[name], draw, where)
                    tested[role, name] = tested.get((role, name), 0) + 1
            observation = env.step(policy.act(observation)).observation
            step += 1
        return (f"{sum(tested.values())} offered actions ({len(tested)} role x action type pairs) over {step} steps "
                f"were accepted, and every view's legal_actions matches legal_actions(role)")

    def _accepted(self, env: Environment, role: str, name: str, fields: Any, draw: random.Random, where: str) -> None:
        if not isinstance(fields, Mapping):
            raise CheckFailed(f"legal_actions({role!r})[{name!r}] must map payload fields to choices, got "
                              f"{_short(fields)}; {where}")
        payload = {}
        for name_of_field, choices in fields.items():
            if choices == "text":
                payload[name_of_field] = FILLER_TEXT
            elif isinstance(choices, list) and choices:
                payload[name_of_field] = draw.choice(choices)
            else:
                raise CheckFailed(f"legal_actions({role!r})[{name!r}][{name_of_field!r}] must be a non-empty list of "
                                  f"choices or 'text', got {_short(choices)}; {where}")
        sent = {role: {"action_type": name, "payload": payload}}
        record = env.clone().step(sent).info["action_results"][role]
        if record["status"] == "rejected":
            raise CheckFailed(f"{role}'s offered action {_short(sent[role])} was rejected ({record.get('reason')}: "
                              f"{_short(record['message'])}); legal_actions must offer only what step() accepts; "
                              f"{where}; then step({_short(sent)})")

    # (c), (f), (g), (h), (j) over the ladder's episodes, and (i)

    def _shared(self) -> _Findings:
        """Play noop, random and champion episodes once on train seeds, checking every step as it comes."""
        if self._played is None:
            try:
                self._played = self._play_all()
            except Exception as error:
                self._played = error
        if isinstance(self._played, BaseException):
            raise CheckFailed(f"playing the ladder's episodes raised {_raised(self._played)}")
        return self._played

    def _play_all(self) -> _Findings:
        findings = _Findings()
        for name in ("noop", "random", "heuristic"):
            findings.scores[name] = []
            for index, seed in enumerate(split_seeds("train", self.episodes)):
                episode = _Episode(self.env_id, self.task, self.train[index % len(self.train)], seed, name)
                findings.scores[name].append(self._play(episode, findings))
        return findings

    def _play(self, episode: _Episode, findings: _Findings) -> float:
        env, policy, observation = _start(episode)
        # noop episodes are the ladder's floor; the per-step checks watch the policies that act
        watched = episode.policy != "noop"
        if watched:
            self._look(env, observation, None, episode, 0, findings)
        total = 0.0
        score: Any = 0.0
        max_steps = self.spec.task(episode.task).max_steps
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
                self._role_views(twin, observation, where, findings)
            if not _number(result.reward):
                findings.add("reward_range", f"the reward {result.reward!r} is not a finite number; {where}")
            else:
                total += result.reward
            score = result.info.get("score")
            if not _number(score) or not 0.0 <= score <= 1.0:
                findings.add("reward_range", f"info['score'] {score!r} is not a number in [0, 1]; {where}")
            for problem in info_problems(result.info, self.spec)[:1]:
                findings.add("contracts", f"{problem}; {where}")
            self._look(env, observation, joint, episode, step, findings)
            if result.done:
                if _number(score) and abs(total - score) > RETURN_TOLERANCE:
                    findings.add("return_is_score", f"the episode's rewards sum to {total!r} but its final score is "
                                                    f"{score!r}; {where}")
                findings.episodes += 1
                return float(score)
        findings.add("contracts", f"the episode did not end after the task's max_steps ({max_steps}); "
                                  f"{episode.at(max_steps)}")
        return float(score) if _number(score) else 0.0

    def _role_views(self, twin: Environment, observation: Any, where: str, findings: _Findings) -> None:
        """What each role alone is sent (observation_of, built by a twin that stepped without observing) is what
        it sees of the observation (seen_by): an environment that builds it its own way must build the same."""
        if not isinstance(observation, Mapping) or observation_problems(observation, self.spec):
            return  # reported by _look
        for role in self.spec.roles:
            expected = seen_by(dict(observation), (role,))
            try:
                got = twin.observation_of((role,))
            except Exception as error:
                findings.add("contracts", f"observation_of(({role!r},)) raised {_raised(error)}; {where}")
                return
            if not isinstance(got, Mapping):
                findings.add("contracts", f"observation_of(({role!r},)) must be an object, got {_short(got)}; {where}")
                return
            if got != expected or list(got) != list(expected):
                extra, missing = sorted(set(got) - set(expected)), sorted(set(expected) - set(got))
                differ = [key for key in expected if key in got and got[key] != expected[key]]
                findings.add("contracts", f"observation_of(({role!r},)) after a step with observe=False is not what "
                                          f"{role} sees of the observation (seen_by): extra keys {extra}, "
                                          f"missing keys {missing}, different {differ} (or in another order); {where}")
                return

    def _look(self, env: Environment, observation: Any, sent: Any, episode: _Episode, step: int,
              findings: _Findings) -> None:
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
            text = _text(observation)
        if not isinstance(observation, Mapping):
            findings.add("contracts", f"the observation must be an object, got {_short(observation)}; {where}")
            return
        for problem in observation_problems(observation, self.spec)[:1]:
            findings.add("contracts", f"{problem}; {where}")
        for model, what, value in ((self.kit.observation_model, "the observation", observation),
                                   (self.kit.state_model, "state()", state)):
            if model is not None and (problem := _model_problem(model, value)):
                findings.add("contracts", f"{what} does not validate against {model.__name__}: {problem}; {where}")
        leaked = _leaks(observation, text, set(self.kit.hidden_ids(env)), sent)
        if leaked:
            findings.add("hidden_ids", f"the observation shows {', '.join(map(repr, sorted(leaked)))}, which "
                                       f"hidden_ids(env) says no observation may show yet; {where}")

    def per_step(self, check: str, passed: str) -> str:
        findings = self._shared()
        if check in findings.problems:
            raise CheckFailed(findings.problems[check])
        return passed.format(steps=findings.steps, episodes=findings.episodes)

    def ladder(self) -> str:
        findings = self._shared()
        scores = findings.scores
        means = {name: statistics.mean(values) for name, values in scores.items()}
        intervals = {name: bootstrap_ci(values) for name, values in scores.items()}
        shown = ", ".join(f"{name} {means[name]:.3f} [{intervals[name][0]:.3f}, {intervals[name][1]:.3f}]"
                          for name in scores)
        seeds = split_seeds("train", self.episodes)
        where = f"task {self.task!r}, train seeds {seeds[0]}..{seeds[-1]} over the train scenarios {self.train}"
        for low, high in (("noop", "random"), ("random", "heuristic")):
            if not intervals[low][1] < intervals[high][0]:
                raise CheckFailed(f"{low} and {high} are not apart: mean score [95% CI] {shown}; the {high} policy "
                                  f"must score clearly above {low} ({where})")
        return f"noop < random < champion with 95% intervals apart over {self.episodes} episodes each: {shown}"


def _model_problem(model: type[BaseModel], value: Any) -> str | None:
    try:
        model.model_validate(value)
    except ValidationError as error:
        return _short(str(error).replace("\n", " "), 300)
    return None


_BOUNDARY = r"[A-Za-z0-9_]"


def _leaks(observation: Mapping[str, Any], text: str, hidden: set[str], sent: Any) -> set[str]:
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
    found = {escaped[m] for m in pattern.findall(_text(rest))}
    own = sent if isinstance(sent, Mapping) else {}
    for role, echo in echoes.items():
        mine = _text(own.get(role))
        found |= {escaped[m] for m in pattern.findall(_text(echo)) if m not in mine}
    return found


def _text(value: Any) -> str:
    """The value as JSON text, as a client would receive it (its repr where it is not JSON at all)."""
    try:
        return json.dumps(value, default=_opaque)
    except (TypeError, ValueError, RecursionError):
        return _short(value, 1_000_000)


def _run(name: str, check: Callable[[], str | None], skipped: Callable[[], str]) -> CheckResult:
    try:
        passed = check()
    except CheckFailed as failure:
        return CheckResult(name, "failed", str(failure))
    except Exception as error:
        return CheckResult(name, "failed", f"raised {_raised(error)}")
    if passed is None:
        return CheckResult(name, "skipped", skipped())
    return CheckResult(name, "passed", passed)


def check_env(env_id: str = DEFAULT_ENV, *, episodes: int = 6, seed: int = 0, fuzz: int = 2000) -> CheckReport:
    """Check a registered environment against the protocol; see the module's docstring for the checks.

    episodes: episodes per policy (noop, random, champion) for the ladder and the per-step checks, on train seeds
        of the default task, cycling through the train scenarios.
    seed: the seed of the episodes played by the determinism, malformed-input, clone and legal-actions checks.
    fuzz: how many malformed joint actions the malformed-input check sends.
    """
    if episodes < 2:
        raise ValueError(f"episodes must be at least 2 (the ladder needs intervals), got {episodes}")
    if seed < 0 or fuzz < 1:
        raise ValueError(f"seed must be non-negative and fuzz positive, got seed={seed}, fuzz={fuzz}")
    checker = _Checker(env_id, kit_of(env_id), spec(env_id), episodes, seed, fuzz)
    children = _children(env_id, checker.task, checker.scenario, seed)
    per_step = {
        "serialisable": "state() and {steps} observations of {episodes} episodes are plain JSON (no NaN)",
        "contracts": "the info and observation contracts hold on all {steps} steps of {episodes} episodes, and "
                     "each role alone is sent what it sees of the observation",
        "reward_range": "every reward of {steps} steps is finite and every score in [0, 1]",
        "return_is_score": "the rewards of each of {episodes} episodes sum to its final score",
        "hidden_ids": "no hidden id appears in any observation of {episodes} episodes ({steps} steps)",
    }
    checks: dict[str, Callable[[], str | None]] = {
        "determinism": checker.determinism,
        "cross_process_determinism": lambda: checker.cross_process(children),
        "malformed_input": checker.malformed_input,
        "clone": checker.clone,
        "legal_actions": checker.legal_actions,
        "ladder": checker.ladder,
        **{name: (lambda name=name, text=text: checker.per_step(name, text)) for name, text in per_step.items()},
    }
    try:
        results = tuple(_run(name, checks[name], lambda: checker.skip_reason) for name in CHECKS)
    finally:
        if isinstance(children, dict):
            for child in children.values():
                if child.poll() is None:
                    child.kill()
                    child.communicate()
    return CheckReport(env_id, results)
