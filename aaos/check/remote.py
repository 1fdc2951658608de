"""`aaos check --url URL`: conformance checks for any OpenEnv-compatible server, over HTTP and WebSocket, from
what the server publishes (/metadata, /schema) and answers, and nothing else.

    from aaos.check.remote import check_url
    report = check_url("http://127.0.0.1:8000", seed=0)
    print(report.markdown())   # or report.json_text(); report.passed

The checks (remote_report.REMOTE_CHECKS says what each verifies): published, contract, determinism,
session_isolation, malformed_actions, malformed_frames, malformed_http, step_after_done, ladder and
return_vs_score. Each passes, fails (saying what was sent, what came back and how to fix it) or is not applicable
(saying why: a server whose reset refuses a seed is "not seedable", an echo that never ends has no step after
done). Actions come from the published action schema (remote_schema): the noop is the least action it allows,
the random-legal policy samples it (strings drawn from what the last observation showed, so that ids resolve),
hostile actions are mutations of valid ones, labelled by whether the schema forbids them.

`openenv validate --url` checks that a server is there (OpenAPI version, /health, /metadata, /schema, /mcp, the
route set of its mode); it never resets or steps an environment. These checks play it.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aaos.check.remote_report import REMOTE_CHECKS, RemoteReport, RemoteResult
from aaos.check.remote_schema import Hostile, Schema, Unsampleable, Vocabulary, json_type
from aaos.check.remote_wire import CAPACITY, OPEN_TRIES, Answer, Remote, Reply, Session

PROBE_STEPS = 24
"""Steps of the probe episode (fewer if it ends) that determinism, isolation and the malformed-action replay
compare."""
RANDOM_TRIES = 8
"""Samples the random-legal policy tries on one step before it falls back to the noop."""
SAMPLE_BASES = 8
"""Random valid actions (beside the noop) that hostile actions are made from."""
HTTP_HOSTILE = 60
"""Hostile actions sent over HTTP (the first of the WebSocket ones)."""
EVIDENCE_LINES = 12
RETURN_TOLERANCE = 1e-6
ISOLATION_PARTNER = 1_000_003
"""Added to the seed for the second session's policy in the isolation check (any other seed would do)."""
LIFTED = frozenset({"reward", "done", "metadata"})
"""Observation fields OpenEnv sends beside the observation, not in it (openenv's serialize_observation)."""
DEEP_FRAME = 10_000
BAD_FRAMES: tuple[tuple[str, str | bytes], ...] = (
    ("text that is not JSON", "this is not JSON"),
    ("a JSON array", "[1, 2, 3]"),
    ("a JSON string", '"step"'),
    ("an unknown message type", '{"type": "aaos_check_unknown"}'),
    ("a message without a type", '{"data": {}}'),
    ("a step without data", '{"type": "step"}'),
    ("a step whose data is an array", '{"type": "step", "data": []}'),
    ("a step whose data is a string", '{"type": "step", "data": "left"}'),
    ("a reset whose data is a number", '{"type": "reset", "data": 7}'),
    ("a state message with an unknown field", '{"type": "state", "aaos_check": 1}'),
    ("a binary frame", b"\x00\xff binary"),
    (f"JSON arrays nested {DEEP_FRAME} levels deep", "[" * DEEP_FRAME + "]" * DEEP_FRAME),
)
"""WebSocket frames outside OpenEnv's message protocol."""
BAD_BODIES: tuple[tuple[str, bytes, str], ...] = (
    ("a body that is not JSON", b"this is not JSON", "application/json"),
    ("a truncated JSON object", b'{"action": {', "application/json"),
    ("a JSON array", b"[1, 2, 3]", "application/json"),
    ("an empty body", b"", "application/json"),
    ("bytes that are not UTF-8", b'{"action": "\xff\xfe"}', "application/json"),
    (f"JSON nested {DEEP_FRAME} levels deep", b"[" * DEEP_FRAME + b"]" * DEEP_FRAME, "application/json"),
    ("JSON sent as text/plain", b"{}", "text/plain"),
)
"""HTTP bodies no route can take, sent to /reset and /step."""
BAD_RESETS: tuple[tuple[str, Any], ...] = (
    ("a seed that is a string", {"seed": "zero"}),
    ("a negative seed", {"seed": -1}),
    ("a seed of 10**40", {"seed": 10**40}),
    ("a seed that is an object", {"seed": {}}),
    ("an episode_id that is an object", {"episode_id": {"a": 1}}),
)
FIXES: dict[str, str] = {
    "published": "Serve OpenEnv's routes: openenv-core's create_app (or HTTPEnvServer.register_routes) gives "
                 "/health, /metadata, /schema and /ws.",
    "contract": "Send every observation as openenv's serialize_observation does: {observation: object, reward: "
                "number or null, done: boolean}; keep the observation to its published schema (required fields "
                "present, declared types).",
    "determinism": "Draw every random choice from a generator seeded by reset's seed (no global random, no "
                   "clock, no set or dict order of unseeded hashes); if the environment cannot be seeded, refuse a "
                   "seed with an error instead of ignoring it.",
    "session_isolation": "Give each WebSocket session its own environment instance (a factory, not a shared "
                         "instance) and keep no state in module or class variables.",
    "malformed_actions": "Validate the action against its model before touching the environment (openenv's "
                         "deserialize_action does) and answer an error frame for what fails; never let an "
                         "exception close the connection.",
    "malformed_frames": "Answer an error frame for every frame that is not a protocol message (decode with a depth "
                        "limit, accept text frames only) and keep the connection open.",
    "malformed_http": "Validate bodies before acting (FastAPI models do) and let no exception reach the server as "
                      "a 500: refuse bad input with a 4xx that says what to fix.",
    "step_after_done": "After done, refuse a step with an error (WS error frame, HTTP 409) until the client resets, "
                       "or answer done again; never step a finished episode or let it raise.",
    "ladder": "Make the reward depend on what the agent does: a reward that ignores the actions teaches nothing.",
    "return_vs_score": "Pay as reward the change in the reported score each step (dense), or the score once at the "
                       "end (sparse), so that the return equals the score.",
}
"""How to fix each check's failure."""


class Failed(Exception):
    """A check failed: `summary` says what, `evidence` what was sent and got (FIXES says how to fix it)."""

    def __init__(self, summary: str, evidence: list[str] | tuple[str, ...] = ()) -> None:
        super().__init__(summary)
        self.summary, self.evidence = summary, tuple(evidence)


class NotApplicable(Exception):
    """A check cannot run on this server (the summary says why)."""

    def __init__(self, summary: str, evidence: list[str] | tuple[str, ...] = ()) -> None:
        super().__init__(summary)
        self.summary, self.evidence = summary, tuple(evidence)


@dataclass(frozen=True, slots=True)
class Passed:
    summary: str
    evidence: tuple[str, ...] = ()


@dataclass(slots=True)
class Findings:
    """What went wrong in a malformed-input check: crashes (a lost session, a 5xx) are listed before the rest."""

    crashes: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)

    @property
    def lines(self) -> list[str]:
        return [*self.crashes, *self.others]

    def fail_if_any(self, what: str, evidence: list[str]) -> None:
        if self.lines:
            raise Failed(f"{len(self.lines)} {what}; the first: {self.lines[0]}",
                         [*evidence, *self.lines[:EVIDENCE_LINES]])


@dataclass(slots=True)
class Trajectory:
    """An episode as the server answered it: the reset's answer, then one answer per action sent."""

    answers: list[Answer]
    actions: list[Any] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return len(self.actions)


@dataclass(slots=True)
class LadderEpisode:
    """One ladder episode: its rewards, whether it ended (else max_steps cut it), and its last answer."""

    policy: str
    seed: int | None
    rewards: list[float]
    done: bool
    last: Answer

    @property
    def total(self) -> float:
        return sum(self.rewards)


@dataclass(slots=True)
class Target:
    """The server under check, the settings, and what one check finds for a later one."""

    remote: Remote
    reset_params: dict[str, Any]
    seed: int
    episodes: int
    fuzz: int
    max_steps: int
    metadata: dict[str, Any] = field(default_factory=dict)
    action: Schema | None = None
    observation: Schema | None = None
    seedable: bool | None = None
    seed_refusal: str = ""
    ws: bool = False
    first: Trajectory | None = None
    """The probe episode, played once (by the contract check)."""
    reference: Trajectory | None = None
    """The probe episode, once it reproduced: what any session playing the same seed and actions must get."""
    http_session: dict[str, str] = field(default_factory=dict)
    """{"session_id": ...} where the HTTP /reset answered one (stateful HTTP sessions, as AAOS's server has)."""
    http_routes: bool = False
    ladder: list[LadderEpisode] = field(default_factory=list)

    def params(self, seed: int | None) -> dict[str, Any]:
        """Reset parameters: the user's, and the seed when the server takes one."""
        if seed is None or self.seedable is False:
            return dict(self.reset_params)
        return {**self.reset_params, "seed": seed}

    @property
    def query(self) -> dict[str, str]:
        """The scalar reset parameters, sent with GET /schema and /metadata too (a server that hosts several
        environments, as AAOS's does, publishes the one chosen)."""
        return {k: (json.dumps(v) if isinstance(v, bool) else str(v)) for k, v in self.reset_params.items()
                if isinstance(v, str | int | float | bool)}

    def need_action_schema(self) -> Schema:
        if self.action is None:
            raise NotApplicable("needs the action schema from GET /schema (see published)")
        if not self.ws:
            raise NotApplicable("needs a WebSocket session on /ws (see published)")
        return self.action

    def least(self) -> Any:
        try:
            return self.need_action_schema().least()
        except Unsampleable as error:
            raise NotApplicable(f"the action schema allows no least action to play: {error}") from None


class Noop:
    """The policy that does nothing: the least action the schema allows, every step."""

    name = "noop"

    def __init__(self, action: Any) -> None:
        self.action = action

    def act(self, seen: Any) -> Any:
        return self.action


class RandomLegal:
    """Random actions the action schema allows, seeded; strings come from what the last answer showed when one
    fits (ids the environment listed), else random letters."""

    name = "random-legal"

    def __init__(self, schema: Schema, seed: int) -> None:
        self.schema = schema
        self.rng = random.Random(seed)

    def act(self, seen: Any) -> Any:
        return self.schema.sample(self.rng, Vocabulary(seen))


def _observed(answer: Answer) -> bool:
    return answer.kind == "observation" and isinstance(answer.data, dict)


def _done(answer: Answer) -> bool:
    return _observed(answer) and answer.data.get("done") is True


@contextmanager
def _session(target: Target, seed: int | None, tries: int = OPEN_TRIES) -> Iterator[tuple[Session, Answer]]:
    """A new WebSocket session reset with `seed` (and the user's reset parameters), and the reset's answer."""
    session, answer = target.remote.open(target.params(seed), tries)
    try:
        yield session, answer
    finally:
        session.close()


def _reset_answer(target: Target, seed: int | None) -> Answer:
    """What a reset with `seed` answers on a new session."""
    with _session(target, seed) as (_, answer):
        return answer


def _play(session: Session, first: Answer, policy: Noop | RandomLegal, steps: int) -> Trajectory:
    """Play `policy` from the reset answer `first` for at most `steps` steps, until done or the connection is
    lost; a refused action is recorded and the policy acts again on what it saw last."""
    trajectory, answer = Trajectory([first]), first
    if not _observed(first):
        return trajectory
    seen = first.data
    while trajectory.steps < steps and not answer.lost and not _done(answer):
        action = policy.act(seen)
        answer = session.step(action)
        trajectory.actions.append(action)
        trajectory.answers.append(answer)
        if _observed(answer):
            seen = answer.data
    return trajectory


def _probe(target: Target, schema: Schema, seed: int | None) -> Trajectory:
    with _session(target, seed) as (session, first):
        return _play(session, first, RandomLegal(schema, target.seed), PROBE_STEPS)


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two decoded JSON values first differ ("observation.inbox[2].id: 'x' != 'y'"), None if equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                return f"{where}: only in the {'first' if key in a else 'second'}"
            found = first_difference(a[key], b[key], where)
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path or 'the value'}: {len(a)} items != {len(b)}"
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}[{index}]")
            if found:
                return found
        return None
    if json_type(a) == json_type(b) and a == b:
        return None
    return f"{path or 'the value'}: {_short(a)} != {_short(b)}"


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _diverged(expected: list[Answer], got: list[Answer]) -> str | None:
    """Where a replay's answers first differ from the expected ones (by index: 0 is the reset), None if not."""
    for index, (a, b) in enumerate(zip(expected, got, strict=False)):
        if a.kind != b.kind:
            return f"answer {index}: {a.describe(120)} != {b.describe(120)}"
        found = first_difference(a.comparable(), b.comparable())
        if found:
            return f"answer {index} ({'reset' if index == 0 else f'step {index}'}): {found}"
    if len(expected) != len(got):
        return f"{len(expected)} answers != {len(got)}"
    return None


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# --- the checks ------------------------------------------------------------------------------------------------


def check_published(target: Target) -> Passed:
    remote = target.remote
    problems: list[str] = []
    evidence: list[str] = []
    health = remote.get("/health")
    evidence.append(f"GET /health: {health.describe(120)}")
    if health.status != 200:
        problems.append(f"GET /health answered {health.describe(120)}")
    metadata = remote.get("/metadata", target.query)
    if metadata.status == 200 and isinstance(metadata.body, dict):
        target.metadata = metadata.body
        evidence.append(f"GET /metadata: name {metadata.body.get('name')!r}, version {metadata.body.get('version')!r}")
    else:
        problems.append(f"GET /metadata answered {metadata.describe(120)}")
    schemas = remote.get("/schema", target.query)
    body = schemas.body if isinstance(schemas.body, dict) else {}
    for name in ("action", "observation"):
        try:
            setattr(target, name, Schema(body[name]))
        except (KeyError, ValueError):
            problems.append(f"GET /schema has no {name} schema: {schemas.describe(120)}")
    if target.action is not None:
        evidence.append(f"action schema: {target.action.root.get('title', 'untitled')}; observation schema: "
                        f"{target.observation.root.get('title', 'untitled') if target.observation else 'none'}")
    seeded = _reset_answer(target, target.seed)
    if _observed(seeded):
        target.seedable, target.ws = True, True
        evidence.append(f"WS /ws: reset with seed {target.seed} answered an observation")
    else:
        unseeded = _reset_answer(target, None)
        target.ws = _observed(unseeded)
        if target.ws:
            target.seedable, target.seed_refusal = False, seeded.describe(200)
            evidence.append(f"WS /ws: reset with a seed answered {target.seed_refusal}; without one, an observation")
        else:
            problems.append(f"WS /ws: a reset answered {unseeded.describe(200)}")
    if problems:
        raise Failed("; ".join(problems), evidence)
    return Passed("health, metadata, the action and observation schemas, and a WebSocket session all answer",
                  evidence)


def _answer_problems(data: Any, observation: Schema | None) -> list[str]:
    """What is wrong with an observation answer's data (the WS frame's data, or an HTTP body)."""
    if not isinstance(data, dict):
        return [f"the answer is {json_type(data)}, not an object"]
    problems = [f"no {key!r} beside the observation" for key in ("observation", "reward", "done") if key not in data]
    if "done" in data and not isinstance(data["done"], bool):
        problems.append(f"done is {json_type(data['done'])} ({_short(data['done'])}), not a boolean")
    if "reward" in data and data["reward"] is not None and not _numeric(data["reward"]):
        problems.append(f"reward is {json_type(data['reward'])} ({_short(data['reward'])}), not a finite number "
                        "or null")
    seen = data.get("observation")
    if not isinstance(seen, dict):
        return [*problems, f"the observation is {json_type(seen)}, not an object"]
    if observation is not None:
        schema = observation.node(observation.root)
        declared = schema.get("properties", {})
        problems += [f"the observation lacks {name!r}, which its schema requires"
                     for name in schema.get("required", ()) if name not in LIFTED and name not in seen]
        for name, value in seen.items():
            if name in declared and name not in LIFTED:
                problems += [f"observation{line}" for line in observation.errors(value, declared[name], (name,))][:3]
    return problems


def check_contract(target: Target) -> Passed:
    schema = target.need_action_schema()
    target.first = _probe(target, schema, target.seed)
    problems: list[str] = []
    observed = 0
    for index, answer in enumerate(target.first.answers):
        if answer.lost:
            problems.append(f"WS {'reset' if index == 0 else f'step {index}'}: {answer.describe()}")
        elif _observed(answer):
            observed += 1
            problems += [f"WS {'reset' if index == 0 else f'step {index}'}: {p}"
                         for p in _answer_problems(answer.data, target.observation)]
    with _session(target, target.seed) as (session, _):
        state = session.state()
    if state.kind == "state" and not isinstance(state.data, dict):
        problems.append(f"WS state: the state is {json_type(state.data)}, not an object")
    elif state.kind not in ("state", "error"):
        problems.append(f"WS state: {state.describe()}")
    evidence = [f"WS: {target.first.steps} steps of the probe episode (seed {target.seed}), {observed} observation "
                f"answers read; state answered {state.kind}"]
    undeclared = _undeclared(target.first, target.observation)
    if undeclared:
        evidence.append(f"observation keys its schema does not declare: {', '.join(undeclared)} (not checked: a "
                        "client that validates observations strictly against the schema would reject them)")
    problems += _http_contract(target, evidence)
    if problems:
        raise Failed(f"{len(problems)} answer(s) break the contract; the first: {problems[0]}",
                     [*evidence, *problems[:EVIDENCE_LINES]])
    return Passed("every reset and step answer is {observation: object, reward: number or null, done: boolean}, "
                  "with the observation as its schema requires", evidence)


def _undeclared(trajectory: Trajectory, observation: Schema | None) -> list[str]:
    """The observation keys that the observation schema does not declare (none when it declares no properties)."""
    declared = set(observation.node(observation.root).get("properties", ())) if observation else set()
    shown = {key for answer in trajectory.answers if _observed(answer)
             and isinstance(answer.data.get("observation"), dict) for key in answer.data["observation"]}
    return sorted(shown - declared - LIFTED) if declared else []


def _http_contract(target: Target, evidence: list[str]) -> list[str]:
    remote = target.remote
    reset = remote.post("/reset", target.params(target.seed))
    if reset.status in (404, 405):
        evidence.append(f"HTTP: no POST /reset ({reset.status}): the server serves the WebSocket protocol only "
                        "(openenv's production mode)")
        return []
    if reset.status != 200:
        return [f"HTTP POST /reset with the parameters WS accepted: {reset.describe()}"]
    target.http_routes = True
    problems = [f"HTTP /reset: {p}" for p in _answer_problems(reset.body, target.observation)]
    session_id = reset.body.get("session_id") if isinstance(reset.body, dict) else None
    if isinstance(session_id, str):
        target.http_session = {"session_id": session_id}
    step = remote.post("/step", {"action": target.least(), **target.http_session})
    if step.status != 200:
        problems.append(f"HTTP POST /step with the least action the schema allows: {step.describe()}")
    else:
        problems += [f"HTTP /step: {p}" for p in _answer_problems(step.body, target.observation)]
    state = remote.get("/state", target.http_session)
    if state.server_error or (state.status == 200 and not isinstance(state.body, dict)):
        problems.append(f"HTTP GET /state: {state.describe()}")
    evidence.append(f"HTTP: /reset {reset.status}, /step {step.status}, /state {state.status}"
                    f"{' (stateful sessions: /reset gave a session_id)' if target.http_session else ''}")
    return problems


def check_determinism(target: Target) -> Passed:
    schema = target.need_action_schema()
    if target.seedable is False:
        again = [_probe(target, schema, None) for _ in range(2)]
        diverged = _diverged(again[0].answers, again[1].answers)
        if diverged is None:
            target.reference = again[0]
        agreed = "agreed" if diverged is None else f"differ at {diverged}"
        raise NotApplicable(f"not seedable: reset refused a seed; two unseeded episodes with the same actions {agreed}",
                            [f"reset with a seed: {target.seed_refusal}"])
    first = target.first or _probe(target, schema, target.seed)
    second = _probe(target, schema, target.seed)
    diverged = _diverged(first.answers, second.answers)
    if diverged is not None:
        raise Failed(f"seed {target.seed} played twice with the same actions gave different episodes: {diverged}",
                     [f"each a fresh WS session reset with seed {target.seed}, then the seeded random-legal policy "
                      f"(seed {target.seed}) for up to {PROBE_STEPS} steps"])
    target.reference = first
    other = _probe(target, schema, target.seed + 1)
    varies = _diverged(first.answers, other.answers)
    return Passed(f"seed {target.seed} played twice gave the same {first.steps}-step episode (observations, rewards, "
                  "done, refusals)",
                  [f"seed {target.seed + 1}: " + ("a different episode" if varies else
                                                   f"the same episode as seed {target.seed}: the seed changes "
                                                   "nothing observed (ignored, or nothing is drawn at random)")])


def check_session_isolation(target: Target) -> Passed:
    schema = target.need_action_schema()
    reference = target.reference
    if reference is None:
        raise NotApplicable("needs an episode that reproduces (see determinism) to compare the interleaved one with")
    with _session(target, target.seed) as (alone, first), \
            _session(target, target.seed + 1, tries=3) as (beside, other):
        if other.code == CAPACITY:
            raise NotApplicable("the server holds one session at a time: a second WebSocket session got "
                                "CAPACITY_REACHED", [other.describe()])
        if not _observed(other):
            raise Failed(f"a second WebSocket session could not reset: {other.describe()}")
        played, policy, partner = Trajectory([first]), RandomLegal(schema, target.seed), RandomLegal(
            schema, target.seed + ISOLATION_PARTNER)
        seen, partner_seen = first.data, other.data
        for step in range(reference.steps):
            action = policy.act(seen)
            played.actions.append(action)
            played.answers.append(alone.step(action))
            if _observed(played.answers[-1]):
                seen = played.answers[-1].data
            if step < reference.steps - 1:
                answer = beside.step(partner.act(partner_seen))
                partner_seen = answer.data if _observed(answer) else partner_seen
    diverged = _diverged(reference.answers, played.answers)
    if diverged is not None:
        raise Failed(f"a session's episode changed when another session played beside it: {diverged}",
                     [f"session A: seed {target.seed}, the probe's actions; session B: seed {target.seed + 1}, "
                      "other random-legal actions; one step each in turn", "A alone got the reference episode "
                                                                          "(determinism)"])
    return Passed(f"two sessions stepped in turn: the first got the same {reference.steps}-step episode it gets "
                  "alone")


def _hostile_actions(target: Target, schema: Schema) -> tuple[list[Hostile], list[Hostile]]:
    """The hostile actions (schema-forbidden, schema-allowed extremes), made from the noop and random valid
    actions, at most `fuzz` in all (a seeded choice where there are more)."""
    seen = Vocabulary(target.first.answers[0].data if target.first else None)
    bases = [schema.least(), *(schema.sample(random.Random(target.seed + k), seen)
                               for k in range(1, SAMPLE_BASES + 1))]
    made: dict[str, Hostile] = {}
    for base in bases:
        if not schema.errors(base):
            for hostile in schema.hostile(base, "the action"):
                made.setdefault(json.dumps(hostile.value, sort_keys=True), hostile)
    chosen = list(made.values())
    if len(chosen) > target.fuzz:
        keep = sorted(random.Random(target.seed).sample(range(len(chosen)), target.fuzz))
        chosen = [chosen[i] for i in keep]
    return [h for h in chosen if h.invalid], [h for h in chosen if not h.invalid]


def check_malformed_actions(target: Target) -> Passed:
    schema = target.need_action_schema()
    forbidden, extremes = _hostile_actions(target, schema)
    if not forbidden and not extremes:
        raise NotApplicable("the action schema gives nothing to mutate")
    findings = Findings()
    replayed, states = _send_forbidden(target, schema, forbidden, findings)
    accepted, refused = _send_extremes(target, extremes, findings)
    evidence = [f"{len(forbidden)} actions the schema forbids, each sent between two state queries on one "
                f"session; {states} state comparisons; {replayed} probe steps replayed between them",
                f"{len(extremes)} huge or deep actions the schema allows: {accepted} accepted, {refused} refused",
                *(f"forbidden: {h.label}" for h in forbidden[:3])]
    findings.fail_if_any("hostile action(s) were mishandled", evidence)
    return Passed(f"{len(forbidden)} schema-forbidden actions refused with error frames, none changing the session; "
                  f"{len(extremes)} schema-allowed extremes answered without a crash", evidence)


def _send_extremes(target: Target, extremes: list[Hostile], findings: Findings) -> tuple[int, int]:
    """Send each schema-allowed extreme action (a new session after one that ends it), noting in `findings` each
    that went unanswered or lost the session. Returns how many were accepted and refused."""
    accepted = refused = 0
    session, _ = target.remote.open(target.params(target.seed))
    try:
        for hostile in extremes:
            answer = session.step(hostile.value)
            if answer.kind == "closed" and "code 1009" in answer.detail:
                refused += 1  # a frame over the server's size limit, refused the way RFC 6455 says
            elif answer.lost:
                findings.crashes.append(f"{hostile.label} (the schema allows it): {answer.describe()}")
            elif answer.kind == "error":
                refused += 1
            else:
                accepted += 1
            if answer.lost or _done(answer):
                session.close()
                session, _ = target.remote.open(target.params(target.seed))
    finally:
        session.close()
    return accepted, refused


def _send_forbidden(target: Target, schema: Schema, forbidden: list[Hostile], findings: Findings) -> tuple[int, int]:
    """Send each schema-forbidden action on one session, the probe's own actions between them, and note in
    `findings` each one accepted, each that went unanswered or closed the session, each refused one that changed the
    state, and a replayed step that differs from the reference (after which the replay stops: the episode has moved
    on). Returns (probe steps replayed, state comparisons)."""
    replaying = target.reference
    every = max(1, len(forbidden) // max(1, replaying.steps)) if replaying else 0
    replayed = compared = 0
    with _session(target, target.seed) as (session, first):
        policy, seen = RandomLegal(schema, target.seed), first.data
        state = session.state()
        for index, hostile in enumerate(forbidden):
            answer = session.step(hostile.value)
            if answer.lost:
                findings.crashes.append(f"{hostile.label}: {answer.describe(160)}")
                break
            if answer.kind != "error":
                findings.others.append(f"{hostile.label}: {'accepted' if _observed(answer) else 'answered'} "
                                       f"{answer.describe(160)}")
                replaying = None
            after = session.state()
            if state.kind == after.kind == "state":
                compared += 1
                changed = first_difference(state.data, after.data)
                if changed and answer.kind == "error":
                    findings.others.append(f"{hostile.label}: refused, yet the state changed: {changed}")
                    replaying = None
            state = after
            if replaying and (index + 1) % every == 0 and replayed < replaying.steps:
                replayed += 1
                answer = session.step(policy.act(seen))
                seen = answer.data if _observed(answer) else seen
                expected = replaying.answers[replayed]
                differ = first_difference(expected.comparable(), answer.comparable())
                if expected.kind != answer.kind or differ:
                    findings.others.append(f"probe step {replayed}, replayed after {index + 1} forbidden actions, "
                                           f"differs from the same step played without them: "
                                           f"{differ or answer.describe(120)}")
                    replaying = None
                state = session.state()
    return replayed, compared


def check_malformed_frames(target: Target) -> Passed:
    if not target.ws:
        raise NotApplicable("needs a WebSocket session on /ws (see published)")
    problems: list[str] = []
    answers: dict[str, int] = {}
    for label, frame in BAD_FRAMES:
        with _session(target, target.seed) as (session, _):
            before = session.state()
            answer = session.send(frame)
            answers[answer.code or answer.kind] = answers.get(answer.code or answer.kind, 0) + 1
            if answer.lost:
                problems.append(f"{label}: {answer.describe(160)}")
                continue
            after = session.state()
            if after.lost:
                problems.append(f"{label}: answered {answer.describe(80)}, then the session was gone: "
                                f"{after.describe(120)}")
            elif before.kind == after.kind == "state" and first_difference(before.data, after.data):
                problems.append(f"{label}: the state changed: {first_difference(before.data, after.data)}")
    evidence = [f"{len(BAD_FRAMES)} frames, each on a fresh session; answers: "
                + ", ".join(f"{kind} x{count}" for kind, count in sorted(answers.items()))]
    if problems:
        raise Failed(f"{len(problems)} malformed frame(s) ended or changed the session; the first: {problems[0]}",
                     [*evidence, *problems])
    return Passed("every frame outside the protocol got an answer and left the session as it was", evidence)


def _hostile_requests(target: Target) -> list[tuple[str, Callable[[], Reply], bool]]:
    """Each hostile HTTP request: its label, how to send it, and whether it carries an action the schema forbids."""
    remote = target.remote
    requests: list[tuple[str, Callable[[], Reply], bool]] = [
        (f"POST {path}, {label}", lambda path=path, body=body, media=media: remote.post(
            path, content=body, headers={"content-type": media}), False)
        for label, body, media in BAD_BODIES for path in ("/reset", "/step")]
    requests += [(f"POST /reset, {label}", lambda params=params: remote.post("/reset", {**target.reset_params,
                                                                                         **params}), False)
                 for label, params in BAD_RESETS]
    requests.append(("GET /state with an unknown session_id",
                     lambda: remote.get("/state", {"session_id": "aaos-check-" + "x" * 300}), False))
    if target.action is not None:
        forbidden, _ = _hostile_actions(target, target.action)
        requests += [(f"POST /step, {hostile.label}", lambda value=hostile.value: remote.post(
            "/step", {"action": value, **target.http_session}), True) for hostile in forbidden[:HTTP_HOSTILE]]
    return requests


def check_malformed_http(target: Target) -> Passed:
    remote, requests = target.remote, _hostile_requests(target)
    findings, compared = Findings(), 0
    statuses: dict[int, int] = {}
    state = remote.get("/state", target.http_session) if target.http_session else None
    for label, send, forbidden_action in requests:
        reply = send()
        statuses[reply.status] = statuses.get(reply.status, 0) + 1
        if reply.server_error:
            findings.crashes.append(f"{label}: {reply.describe(160)}")
        elif forbidden_action and 200 <= reply.status < 300:
            findings.others.append(f"{label}: accepted with {reply.describe(120)}")
        if state is not None and state.status == 200 and forbidden_action:
            after = remote.get("/state", target.http_session)
            compared += 1
            changed = first_difference(state.body, after.body)
            if changed:
                findings.others.append(f"{label}: the session's state changed: {changed}")
                state = after
    routes = (f"stateful HTTP sessions: the session's state compared after {compared} forbidden actions"
              if target.http_session else "stateless HTTP routes (a fresh environment per request)"
              if target.http_routes else "no HTTP /reset or /step (openenv's production mode): only 5xx checked")
    evidence = [f"{len(requests)} requests; statuses: " + ", ".join(f"{status or 'no answer'} x{count}"
                                                                    for status, count in sorted(statuses.items())),
                routes]
    findings.fail_if_any("hostile request(s) got a 5xx, were accepted or changed a session", evidence)
    return Passed("no hostile request got a 5xx; every schema-forbidden action got a 4xx", evidence)


def check_step_after_done(target: Target) -> Passed:
    noop = Noop(target.least())
    with _session(target, target.seed) as (session, first):
        episode = _play(session, first, noop, target.max_steps)
        last = episode.answers[-1]
        if not _done(last):
            why = (f"no episode ended within {episode.steps} noop steps (--max-steps raises the cap)"
                   if _observed(last) else f"the noop episode stopped at step {episode.steps}")
            raise NotApplicable(why, [f"last answer: {last.describe(160)}"])
        after = session.step(noop.action)
        evidence = [f"done after {episode.steps} noop steps (seed {target.seed}); the next step got "
                    f"{after.describe(160)}"]
        if after.lost:
            raise Failed(f"a step after done lost the session: {after.describe(160)}", evidence)
        if _observed(after) and not _done(after):
            raise Failed("a step after done was played: the episode went on (done false) without a reset", evidence)
        again = session.reset(target.params(target.seed))
        evidence.append(f"then a reset got {again.describe(120)}")
        if not _observed(again) or _done(again):
            raise Failed(f"after a step past done, a reset did not start a new episode: {again.describe(160)}",
                         evidence)
    how = f"refused with an error ({after.code or 'no code'})" if after.kind == "error" else "answered done again"
    return Passed(f"a step after done was {how}; a reset then started a new episode", evidence)


def _step_legally(session: Session, policy: Noop | RandomLegal, seen: Any, noop: Any,
                  counts: dict[str, int]) -> Answer:
    """One step of `policy`: the random-legal policy draws up to RANDOM_TRIES actions until one is accepted, then
    plays the noop; `counts` tallies its samples sent and refused."""
    if isinstance(policy, RandomLegal):
        for _ in range(RANDOM_TRIES):
            answer = session.step(policy.act(seen))
            counts["sent"] += 1
            if answer.kind != "error":
                return answer
            counts["refused"] += 1
    return session.step(noop)


def _ladder_episode(target: Target, policy: Noop | RandomLegal, seed: int | None, noop: Any,
                    counts: dict[str, int]) -> LadderEpisode:
    """One episode of `policy`, until done or max_steps."""
    with _session(target, seed) as (session, answer):
        rewards: list[float] = []
        while _observed(answer) and not _done(answer) and len(rewards) < target.max_steps:
            answer = _step_legally(session, policy, answer.data, noop, counts)
            if not _observed(answer):
                raise NotApplicable(f"a {policy.name} episode (seed {seed}) could not go on: step {len(rewards) + 1} "
                                    f"got {answer.describe(160)}")
            reward = answer.data.get("reward")
            if reward is not None and not _numeric(reward):
                raise NotApplicable(f"rewards are not numbers ({_short(reward)}; see contract)")
            rewards.append(reward or 0.0)
    return LadderEpisode(policy.name, seed, rewards, _done(answer), answer)


def check_ladder(target: Target) -> Passed:
    schema, noop_action = target.need_action_schema(), target.least()
    seeds = [target.seed + i for i in range(target.episodes)]
    counts = {"sent": 0, "refused": 0}
    noop = [_ladder_episode(target, Noop(noop_action), seed, noop_action, {"sent": 0, "refused": 0}) for seed in seeds]
    played = [_ladder_episode(target, RandomLegal(schema, seed), seed, noop_action, counts) for seed in seeds]
    target.ladder = [*noop, *played]
    if counts["sent"] and counts["refused"] == counts["sent"]:
        raise NotApplicable(f"the server refused all {counts['sent']} sampled actions: the schema does not say "
                            "enough to act legally")
    evidence = [f"{policy}: returns {[round(e.total, 4) for e in episodes]} (mean {_mean(episodes):.4f}; "
                f"{sum(not e.done for e in episodes)} of {len(episodes)} cut at {target.max_steps} steps)"
                for policy, episodes in (("noop", noop), ("random-legal", played))]
    evidence.append(f"random-legal: {counts['refused']} of {counts['sent']} sampled actions refused by the server "
                    f"(a step whose {RANDOM_TRIES} samples were all refused played the noop)")
    if all(a.total == b.total for a, b in zip(noop, played, strict=True)):
        raise Failed(f"the reward does not respond to actions: each of {len(seeds)} random-legal episodes returned "
                     "exactly what the noop episode of the same seed did", evidence)
    order = "above" if _mean(played) > _mean(noop) else "below" if _mean(played) < _mean(noop) else "level with"
    return Passed(f"the reward responds to actions: random-legal returns {_mean(played):.4f} on average, {order} "
                  f"noop's {_mean(noop):.4f}", evidence)


def _mean(episodes: list[LadderEpisode]) -> float:
    return sum(e.total for e in episodes) / len(episodes)


def reported_score(data: Any) -> float | None:
    """The score an observation answer reports: a number at `score` in the observation, its `info` or its
    `metadata`, or beside the observation."""
    if not isinstance(data, dict):
        return None
    seen = data.get("observation") if isinstance(data.get("observation"), dict) else {}
    for place in (seen, seen.get("info"), seen.get("metadata"), data, data.get("info"), data.get("metadata")):
        if isinstance(place, dict) and _numeric(place.get("score")):
            return float(place["score"])
    return None


def check_return_vs_score(target: Target) -> Passed:
    if not target.ladder:
        raise NotApplicable("needs the ladder's episodes (see ladder)")
    ended = [e for e in target.ladder if e.done]
    scored = [(e, reported_score(e.last.data)) for e in ended]
    scored = [(e, score) for e, score in scored if score is not None]
    if not ended:
        raise NotApplicable(f"no ladder episode ended within {target.max_steps} steps")
    if not scored:
        raise NotApplicable("the server reports no score (no number at `score` in the final observation, its "
                            "`info` or `metadata`)")
    wrong = [f"{e.policy}, seed {e.seed}: return {e.total!r} != score {score!r}" for e, score in scored
             if abs(e.total - score) > RETURN_TOLERANCE * max(1.0, abs(score))]
    if wrong:
        raise Failed(f"{len(wrong)} of {len(scored)} finished episodes returned other than their reported score; "
                     f"the first: {wrong[0]}", wrong[:EVIDENCE_LINES])
    return Passed(f"the return of each of {len(scored)} finished episodes equals its reported score",
                  [f"{e.policy}, seed {e.seed}: return {e.total:.6f}, score {score:.6f}" for e, score in scored[:4]])


CHECK_FUNCTIONS: dict[str, Callable[[Target], Passed]] = {
    "published": check_published, "contract": check_contract, "determinism": check_determinism,
    "session_isolation": check_session_isolation, "malformed_actions": check_malformed_actions,
    "malformed_frames": check_malformed_frames, "malformed_http": check_malformed_http,
    "step_after_done": check_step_after_done, "ladder": check_ladder, "return_vs_score": check_return_vs_score,
}


def _run(name: str, target: Target) -> RemoteResult:
    try:
        passed = CHECK_FUNCTIONS[name](target)
    except Failed as failure:
        return RemoteResult(name, "fail", failure.summary, failure.evidence, FIXES[name])
    except NotApplicable as reason:
        return RemoteResult(name, "not applicable", reason.summary, reason.evidence)
    except Unsampleable as error:
        return RemoteResult(name, "not applicable", f"the action schema cannot be sampled: {error}")
    except ConnectionError as error:
        return RemoteResult(name, "fail", f"the server could not be reached: {error}", (), FIXES["published"])
    return RemoteResult(name, "pass", passed.summary, passed.evidence)


def check_url(url: str, *, seed: int = 0, episodes: int = 4, fuzz: int = 300, max_steps: int = 200,
              timeout: float = 10.0, reset_params: dict[str, Any] | None = None) -> RemoteReport:
    """Check the OpenEnv server at `url` (its base URL) and report on every check of REMOTE_CHECKS.

    seed: the reset seed of the checked episodes (and the seed of the random-legal policy and of the choice of
        hostile actions).
    episodes: paired episodes per policy (noop, random-legal) in the ladder.
    fuzz: at most this many hostile actions.
    max_steps: the longest episode played (the ladder's and the one played to its end for step_after_done).
    timeout: seconds to wait for any answer.
    reset_params: sent with every reset beside the seed (and, the scalar ones, as query parameters of /schema and
        /metadata): e.g. {"env": "inbox"} to check one environment of a server that hosts several.
    """
    reset_params = dict(reset_params or {})
    if "seed" in reset_params:
        raise ValueError("give the seed with seed= (--seed), not among the reset parameters")
    if seed < 0 or episodes < 1 or fuzz < 1 or max_steps < 1 or timeout <= 0:
        raise ValueError(f"seed must be non-negative and episodes, fuzz, max_steps and timeout positive; got "
                         f"seed={seed}, episodes={episodes}, fuzz={fuzz}, max_steps={max_steps}, timeout={timeout}")
    settings = {"seed": seed, "episodes": episodes, "fuzz": fuzz, "max_steps": max_steps, "timeout_s": timeout,
                "reset_params": reset_params}
    with Remote(url, timeout) as remote:
        target = Target(remote, reset_params, seed, episodes, fuzz, max_steps)
        results = [_run("published", target)]
        if results[0].status == "fail" and not target.ws:
            results += [RemoteResult(name, "not applicable", "the server did not publish what this check needs "
                                                             "(see published)") for name in list(REMOTE_CHECKS)[1:]]
        else:
            results += [_run(name, target) for name in list(REMOTE_CHECKS)[1:]]
    server = {key: target.metadata[key] for key in ("name", "version", "description") if key in target.metadata}
    return RemoteReport(remote.url, tuple(results), server, settings)
