"""A PettingZoo `ParallelEnv` over any registered AAOS environment: its roles act at once each step.

    from aaos.wrappers.pettingzoo import AAOSParallelEnv

    env = AAOSParallelEnv(env="toy")           # default: aaos.DEFAULT_ENV, its default task and scenario
    observations, infos = env.reset(seed=0)
    while env.agents:
        actions = {agent: env.action_space(agent).sample(infos[agent]["action_mask"]) for agent in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)

Spaces (the environment's observations are nested JSON and its actions carry ids that change during an
episode, so both are flattened to fixed spaces):

* observation: `Text` — the role's own view (`obs["agent_observations"][role]`, partial observability
  kept) as compact JSON with sorted keys and ASCII escapes; `json.loads` gives the dict back. Each is a
  `ViewText`: a `str` that also carries its space's `dtype` (numpy's str dtype), because PettingZoo's AEC
  `api_test` (after `parallel_to_aec`) compares every observation's dtype with its space's, which a plain
  `str` cannot answer.
* action: `Discrete(MAX_ACTIONS)` — an index into the role's *current* catalogue of concrete actions:
  index 0 is no_op, then every legal action type with each combination of its payload choices (in the
  order `legal_actions` lists them); a free-text field gets a fixed text (FREE_TEXT). An index past the end of
  the catalogue does no_op. An index is an integer by the rule the server applies to JSON
  (aaos.core.actions.whole_number: 2, 2.0 or a NumPy integer; 2.7, "1", True or None is a ValueError, and the
  step is not taken). `infos[agent]["action_mask"]` marks the valid indices for the next step and
  `infos[agent]["actions"]` lists the catalogue itself.
* reward: the team reward, the same for every role. An episode ends for every role at once
  (terminations); truncations are always False, since max_steps is part of each task's definition.
"""

from __future__ import annotations

import itertools
import json
import string
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

import aaos
from aaos.core.actions import whole_number
from aaos.core.env import Environment, JointAction, Observation

MAX_ACTIONS = 4096
"""Size of each role's Discrete action space; catalogue entries past it are left out. Large enough for every
concrete action of the registered environments at their busiest (a 50-email inbox lists 701, a crunch month's
calendar over 1000): a smaller space would silently hide whole action types at the end of the catalogue."""
MAX_VIEW_CHARS = 1 << 16
"""Longest role view (JSON characters) the Text observation space holds."""
FREE_TEXT = "Decided by the acting role from its own view."
"""The text every free-text payload field gets (a legal action lists such a field as "text")."""
NO_OP: dict[str, Any] = {"action_type": "no_op", "payload": {}}


class ViewText(str):
    """A role's view as JSON text (a plain `str` in every way) that states the dtype of its `Text` space."""

    __slots__ = ()
    dtype = np.dtype(str)


def catalogue(legal_actions: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A role's concrete actions now: no_op first, then each legal action type with every combination
    of its payload choices, capped at MAX_ACTIONS."""
    actions = [NO_OP]
    for action_type, fields in legal_actions.items():
        if action_type == NO_OP["action_type"]:
            continue
        names = list(fields)
        choices = [[FREE_TEXT] if fields[name] == "text" else fields[name] for name in names]
        actions.extend({"action_type": action_type, "payload": dict(zip(names, combo, strict=True))}
                       for combo in itertools.product(*choices))
    return actions[:MAX_ACTIONS]


class AAOSParallelEnv(ParallelEnv[str, str, int]):
    """The AAOS environment `env` (default aaos.DEFAULT_ENV) as a PettingZoo ParallelEnv; `task`, `scenario`
    and `seed` as for aaos.make. reset(options={"task": ..., "scenario": ...}) switches them (other option
    keys are ignored). metadata["name"] is "aaos_<env id>_v<env version>"."""

    metadata: dict[str, Any] = {"render_modes": [], "is_parallelizable": True}

    def __init__(self, task: str | None = None, scenario: str | None = None, seed: int = 0,
                 env: str = aaos.DEFAULT_ENV) -> None:
        self.env: Environment = aaos.make(task, scenario=scenario, seed=seed, env=env)
        self.metadata = {**type(self).metadata, "name": f"aaos_{env}_v{self.env.spec.version}"}
        self.possible_agents = list(self.env.spec.roles)
        self.agents: list[str] = []
        self.render_mode = None
        self._catalogues: dict[str, list[dict[str, Any]]] = {}
        charset = frozenset(string.printable) - frozenset(string.whitespace) | {" "}
        # one space object per agent, as PettingZoo requires (seeding a space must stick)
        self._observation_spaces = {a: spaces.Text(MAX_VIEW_CHARS, min_length=0, charset=charset)
                                    for a in self.possible_agents}
        self._action_spaces = {a: spaces.Discrete(MAX_ACTIONS) for a in self.possible_agents}

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        options = options or {}
        observation = self.env.reset(options.get("task"), options.get("scenario"), seed)
        self.agents = list(self.possible_agents)
        return self._observations(observation), self._infos(observation, {})

    def step(self, actions: dict[str, int]) -> tuple[dict[str, str], dict[str, float], dict[str, bool],
                                                    dict[str, bool], dict[str, dict[str, Any]]]:
        if not self.agents:
            raise aaos.EpisodeDone("the episode is over; call reset() to start a new one")
        joint: JointAction = {agent: self._concrete(agent, index) for agent, index in actions.items()}
        result = self.env.step(joint)
        assert result.observation is not None
        agents = self.agents
        self.agents = [] if result.done else agents
        return (self._observations(result.observation), dict.fromkeys(agents, result.reward),
                dict.fromkeys(agents, result.done), dict.fromkeys(agents, False),
                self._infos(result.observation, result.info))

    def _concrete(self, agent: str, index: Any) -> dict[str, Any]:
        """The catalogue entry `index` names; a NumPy number counts as the Python number it holds, and then the
        wire's rule for integers applies (whole_number: what the server refuses is refused here too)."""
        if agent not in self._catalogues:
            raise ValueError(f"unknown or finished agent {agent!r}; live agents: {', '.join(self.agents)}")
        number = whole_number(index.item() if isinstance(index, np.generic) else index,
                              f"the action of {agent!r} must be an index into infos[{agent!r}]['actions']")
        options = self._catalogues[agent]
        return options[number] if 0 <= number < len(options) else NO_OP

    def _observations(self, observation: Observation) -> dict[str, str]:
        views = observation["agent_observations"]
        return {agent: ViewText(json.dumps(views[agent], sort_keys=True, separators=(",", ":")))
                for agent in self.possible_agents}

    def _infos(self, observation: Observation, info: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Per role: the catalogue and action mask for the next step, and this step's result for the role."""
        infos = {}
        for agent in self.possible_agents:
            view = observation["agent_observations"][agent]
            self._catalogues[agent] = catalogue(view["legal_actions"])
            mask = np.zeros(MAX_ACTIONS, dtype=np.int8)
            mask[: len(self._catalogues[agent])] = 1
            infos[agent] = {"action_mask": mask, "actions": self._catalogues[agent]}
            if info:
                infos[agent]["action_result"] = info["action_results"][agent]
                infos[agent]["score"] = info["score"]
        return infos

    def render(self) -> None:
        """Not supported: there is no render mode (the Space is the visual front end)."""

    def close(self) -> None:
        """Nothing to release."""
