"""The environment kit: everything specific to one environment that the generic layers need, in one object.

An environment package builds one `EnvKit` and registers it (`aaos.register`). The agents, benchmark,
server, Space, training commands, wrappers and `inference.py` read only the kit and its spec; none of them
names an environment.

    KIT = EnvKit(environment=ToyEnv, spec=toy_spec)   # all an environment must give; then, as it grows:
    KIT = EnvKit(
        environment=ToyEnv,                    # ToyEnv(task=..., scenario=..., seed=...)
        spec=toy_spec,                         # () -> EnvSpec (id, version, reward_version, defaults, ...)
        champion=ToyChampion,                  # () -> Policy reading only each role's view
        prompting=Prompting(world="...", rules="...", briefs={...}),
        rendering=Rendering(role_card=..., world=...),
        hidden_ids=lambda env: {...},          # ids the ground truth holds that no observation may show yet
    )

Only `environment` and `spec` are required. Every other group has a generic default: no champion (the "heuristic"
policy is then unavailable; noop and random always are), prompting read from the spec (`Prompting.from_spec`), a
plain renderer (`PLAIN_RENDERING`: each view field as text), no hidden ids, no guardrail beyond legality, untyped
wire models, no scenario files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from aaos.core.env import Environment
from aaos.core.html import card, chips, esc, humanize, section
from aaos.core.info import VIEW_KEYS
from aaos.core.policy import Action, Oracle, Policy
from aaos.core.spec import EnvSpec, ScenarioInfo, Split

View = Mapping[str, Any]


def beside(record: Mapping[str, Any], key: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    """The record with `extra`'s fields right after `key` (a `Prompting.compact_joined` puts what a decision looks
    up elsewhere next to the field it is looked up by)."""
    joined: dict[str, Any] = {}
    for name, value in record.items():
        joined[name] = value
        if name == key:
            joined |= extra
    return joined


@dataclass(frozen=True)
class Prompting:
    """What a language model is told about the environment (aaos.agents.prompts builds the chats from it).

    world: one or two sentences on what the world is; "{roles}" is filled with the role names.
    rules: the rules every role should know (what is rejected, what the score rewards).
    briefs: role -> what that role is for and should do.
    view_order: the view fields a prompt shows, those that change least often first (a server that caches
        prompt prefixes then re-reads only the tail); other fields follow, sorted.
    compact_omit: keys left out, at any depth, of the compact prompt (prose that repeats what ids and
        choices already say, or a record of settled business, to a model that learns the world from training
        data).
    compact_settled: (field, value) pairs that mark a list item as settled business (an accepted plan, an
        answered event) that the compact prompt leaves out: nothing is left to decide about it.
    compact_last: whether the compact prompt ends with each role's last action (as a compact call, with its
        status), for a world whose next action follows from the last one (inbox: open, then label, then close),
        which a small model reads far more easily there than from what the view implies.
    compact_focus: the view fields the compact prompt leaves out at this step, from the merged view (None: none),
        for a world whose decision is at times about one item alone (inbox: while the opened email is open, the
        list of the others only lengthens the prompt).
    compact_joined: the merged view with what a decision looks up in another table copied beside where it is
        used (None: as it is), for a world whose choice hangs on such a lookup, which a small model reads from one
        row far more easily than it joins two tables (chief_of_staff: each request carries its stakeholder's
        known preferred slot; inbox: the opened email carries whether its sender is a key account and how many
        earlier messages they wrote), or a list filtered from a table (org: the tasks awaiting an owner and the
        risks not yet flagged, most urgent first).
    """

    world: str
    rules: str
    briefs: Mapping[str, str]
    view_order: tuple[str, ...] = ()
    compact_omit: frozenset[str] = frozenset()
    compact_settled: frozenset[tuple[str, object]] = frozenset()
    compact_last: bool = False
    compact_focus: Callable[[Mapping[str, Any]], frozenset[str]] | None = None
    compact_joined: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None

    @classmethod
    def from_spec(cls, spec: EnvSpec) -> Prompting:
        """What a model is told of an environment whose kit gives no prompting: the spec's description, its
        reward components and, per role, the actions it may take."""
        told = f"{spec.title}: {spec.description}".replace("{", "{{").replace("}", "}}")
        rewarded = "; ".join(f"{c.name} (weight {c.weight:g}): {c.description}" for c in spec.reward_components)
        return cls(
            world=f"{told} The roles are: {{roles}}.",
            rules=("Each step every role takes one action; an action the role may not take, or that names something "
                   f"that does not exist, is rejected and changes nothing. The score rewards {rewarded}."),
            briefs={role: "You may: " + "; ".join(f"{a.name} ({a.description})" for a in spec.actions
                                                   if role in a.roles) for role in spec.roles},
        )


@dataclass(frozen=True)
class Rendering:
    """How the Space shows the environment: functions returning HTML (escape every value: aaos.core.html).

    role_card(role, view, queued_action or None): one role's view as a card.
    world(observation): the world as a whole (what every role's view has in common, shared fields).
    attention(observation): what needs attention now (one short list), or "" for nothing.
    report(state): the end-of-episode report from the ground-truth state.
    """

    role_card: Callable[[str, View, View | None], str]
    world: Callable[[View], str]
    attention: Callable[[View], str] = field(default=lambda observation: "")
    report: Callable[[View], str] = field(default=lambda state: "")


def plain_role_card(role: str, view: View, queued: View | None) -> str:
    """A role's card with each of its view's own fields (those beyond the protocol's head) as text."""
    body = "".join(section(humanize(key), f"<p>{esc(value)}</p>") for key, value in view.items()
                   if key not in VIEW_KEYS)
    return card(role, view, queued, body)


def plain_world(observation: View) -> str:
    """The world as the scores the agents can see (partial_scores)."""
    return f'<div class="aaos-world" id="aaos-world">{section("Scores", chips(observation["partial_scores"]))}</div>'


PLAIN_RENDERING = Rendering(role_card=plain_role_card, world=plain_world)
"""The renderer of a kit that gives none."""


def no_guardrail(role: str, action: Action, view: View) -> str | None:
    """The default guardrail: nothing beyond legality (which the advisor checks for every environment)."""
    return None


def no_hidden_ids(env: Environment) -> Iterable[str]:
    """The default: the ground truth holds no id that an observation may not show."""
    return ()


@dataclass(frozen=True)
class EnvKit:
    """One environment, as the platform sees it.

    environment: builds the environment: environment(task=..., scenario=..., seed=...); cheap: reset() builds
        the world.
    spec: the environment's spec (built once and cached by the registry).
    Only those two are required; the rest default to what any environment can do with its spec alone.
    champion: the production policy (the "heuristic" policy); reads only each role's own view; None: none.
    prompting, rendering: see Prompting and Rendering; None prompting: Prompting.from_spec.
    hidden_ids: the ids in the environment's ground truth that no observation may show yet (the conformance
        checker looks for them in every observation); none by default.
    oracle: a reference policy that reads the ground truth (bind(env) before acting), if the environment has one.
    guardrail(role, action, view): why a legal action is still unsafe to take for the guarded advisor, or None.
    observation_model, state_model: typed wire models of the observation and of state() (validated by the
        conformance checker, shown by the server's /schema); None where the environment does not type them.
    scenario_file: reads a scenario file (a path) into its ScenarioInfo, raising ValueError saying what is wrong;
        None if the environment has no scenario files. Built-in scenario files live in scenarios/<env id>/.
    generate_scenarios(seed, folder, count, split): writes `count` new valid scenario files drawn by a seeded
        generator into `folder` and returns their paths; None if the environment has no generator.
    tabular(view): for tabular learners (`aaos train-q`), a compact state key of a one-role view and the discrete
        moves available in it, by name, each a legal action; None where the environment offers no abstraction.
    rollout_to_end: the GRPO reward plays a completion's rollout to the episode's end, discounted, rather than a fixed
        number of steps (aaos.training.rollout): for an environment whose actions show their worth only when
        something they touched closes, however far off.
    labels(state): for an environment whose agent labels items, each label of a state (`state()`) as (kind, the
        true value, the agent's value or None where it gave none), for every item the agent has met; the training
        report's label accuracy reads it (aaos.training.behaviour). None where the agent labels nothing.
    """

    environment: Callable[..., Environment]
    spec: Callable[[], EnvSpec]
    champion: Callable[[], Policy] | None = None
    prompting: Prompting | None = None
    rendering: Rendering = PLAIN_RENDERING
    hidden_ids: Callable[[Environment], Iterable[str]] = no_hidden_ids
    oracle: Callable[[], Oracle] | None = None
    guardrail: Callable[[str, Action, View], str | None] = no_guardrail
    observation_model: type[BaseModel] | None = None
    state_model: type[BaseModel] | None = None
    scenario_file: Callable[[str], ScenarioInfo] | None = None
    generate_scenarios: Callable[[int, Path, int, Split], list[Path]] | None = None
    tabular: Callable[[View], tuple[str, dict[str, Action]]] | None = None
    rollout_to_end: bool = False
    labels: Callable[[View], Iterable[tuple[str, str, str | None]]] | None = None
