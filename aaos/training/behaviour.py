"""What a policy did: its label accuracy, how often it took each decision, and where it agrees with the champion.

Label accuracy is how often a policy's labels are the true ones, per kind of label and per true value.
For an environment whose kit gives `labels` (aaos.core.kit.EnvKit: inbox, each email's category, priority and
outcome), this says whether a model reads what it labels: a model that gives every email the same category is
right on one true category and wrong on the others, whatever its overall rate. An item the agent met but left
unlabelled counts as wrong.

    {"category": {"accuracy": 0.81, "by_true": {"billing": {"right": 9, "total": 10}, ...}}, "priority": {...}}

The behaviour counts say how often a policy took each decision per episode (`set_priority(low)` 7.5, `check_in(board)`
4.0), so that a training report can show what a stage changed, beside the champion's counts.

The agreement asks a policy what it would do in each state of the champion's own episodes and counts, per decision
the champion took there (behaviour_key), how often it chose the same: on train episodes, the rows a model was trained
on; on holdout ones, states it never saw. A model that has learned the categories' base rates agrees on one
category and not the others; one that reads agrees on each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Literal, get_origin

import aaos
from aaos.core.policy import Policy
from aaos.core.spec import EnvSpec
from aaos.envs import kit_of
from aaos.training.episodes import Record, meta_of

Label = tuple[str, str, str | None]
"""(kind, true value, the agent's value or None)."""


def tally(labels: Iterable[Label]) -> dict[str, dict[str, Any]]:
    """The accuracy of `labels` per kind, overall and per true value (module docstring)."""
    counts: dict[str, dict[str, list[int]]] = {}
    for kind, true, given in labels:
        right_total = counts.setdefault(kind, {}).setdefault(true, [0, 0])
        right_total[0] += given == true
        right_total[1] += 1
    return {kind: {"accuracy": round(sum(r for r, _ in values.values()) / sum(t for _, t in values.values()), 4),
                   "by_true": {value: {"right": r, "total": t} for value, (r, t) in sorted(values.items())}}
            for kind, values in sorted(counts.items())}


def final_labels(state: dict[str, Any], env: str) -> list[Label]:
    """The labels of a final state (empty for an environment whose kit gives none)."""
    labels = kit_of(env).labels
    return list(labels(state)) if labels is not None else []


def episode_labels(episode: Sequence[Record]) -> list[Label]:
    """The labels at the end of a recorded episode, replaying its joint actions."""
    meta = meta_of(episode[0])
    env = aaos.make(meta.task, scenario=meta.scenario, seed=meta.seed, env=meta.env)
    env.reset()
    for step in episode:
        env.step(step["joint_action"])
    return final_labels(env.state(), meta.env)


def behaviour_key(spec: EnvSpec, role: str, action: dict[str, Any], status: str) -> str:
    """A decision as the behaviour counts name it: the role (where there are several), the action and its payload's
    finite choices (a category, a slot, a resource; not ids or texts), and its status where it was not applied:
    `risk_compliance: raise_risk_flag (no_effect)`, `set_priority(low)`."""
    declared = spec.action(action["action_type"])
    fields = declared.payload.model_fields if declared is not None else {}
    choices = [str(action["payload"][name]) for name, field in fields.items()
               if get_origin(field.annotation) is Literal and name in action.get("payload", {})]
    key = action["action_type"] + (f"({','.join(choices)})" if choices else "")
    key = f"{role}: {key}" if len(spec.roles) > 1 else key
    return key if status == "applied" else f"{key} ({status})"


def behaviour(episodes: Sequence[Sequence[Record]], spec: EnvSpec) -> dict[str, float]:
    """How often a policy took each decision (behaviour_key) in its episodes, per episode, most frequent first;
    a role's no_op is left out."""
    counts: Counter[str] = Counter()
    for episode in episodes:
        for step in episode:
            for role, action in step["joint_action"].items():
                if action["action_type"] != spec.noop_action:
                    counts[behaviour_key(spec, role, action, step["action_results"][role]["status"])] += 1
    return {key: round(count / len(episodes), 3) for key, count in counts.most_common()} if episodes else {}


def agreement(policy: Policy, episodes: Sequence[Sequence[Record]], spec: EnvSpec) -> dict[str, dict[str, int]]:
    """For each decision the champion took in `episodes` (recorded with their observations), how often `policy`,
    asked at the same state, chose the same action: {key: {"agree": n, "total": n}}, keys sorted. A role's no_op
    is left out."""
    counts: dict[str, list[int]] = {}
    for episode in episodes:
        policy.reset(meta_of(episode[0]).seed)
        for step in episode:
            chosen = policy.act(step["observation"])
            for role, action in step["joint_action"].items():
                if action["action_type"] != spec.noop_action:
                    count = counts.setdefault(behaviour_key(spec, role, action, "applied"), [0, 0])
                    count[0] += _same(chosen.get(role), action)
                    count[1] += 1
    return {key: {"agree": agree, "total": total} for key, (agree, total) in sorted(counts.items())}


def _same(chosen: dict[str, Any] | None, action: dict[str, Any]) -> bool:
    return (chosen is not None and chosen["action_type"] == action["action_type"]
            and chosen.get("payload", {}) == action.get("payload", {}))
