"""The adapter from the AAOS environment protocol to openenv-core's `Environment`.

One `AAOSEnvironment` wraps one in-process environment, of any registered id (chosen at reset). The HTTP
routes call `start`/`advance`/`snapshot` (plain dicts, no model round trip); OpenEnv's WebSocket and MCP
routes call `reset`/`step`/`state`, which wrap the same calls in the OpenEnv types. Either way the wire is
strict: a joint action that does not validate as the environment's typed joint action, or that `env.check`
finds fault with, raises and changes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from openenv.core.env_server.interfaces import Environment as OpenEnvEnvironment
from openenv.core.env_server.types import EnvironmentMetadata

import aaos
from aaos.core.env import Environment, JointAction, Observation, StepResult
from aaos.server.mcp import build_mcp_server
from aaos.server.models import (
    AAOSObservation,
    AAOSState,
    EpisodeParams,
    InvalidAction,
    WireAction,
    check_episode,
    episode_params,
    typed_joint_action,
)
from aaos.server.wire import FULL, Lean

if TYPE_CHECKING:
    from fastmcp import FastMCP


class AAOSEnvironment(OpenEnvEnvironment[WireAction, AAOSObservation, AAOSState]):
    """An AAOS environment behind OpenEnv. Every session (HTTP, WebSocket or MCP) owns one instance;
    its `lock` is held while the environment is reset, stepped or read."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.env_id = aaos.DEFAULT_ENV
        self.env: Environment = aaos.make(env=self.env_id)
        self.episode_id: str | None = None

    # --- the calls the HTTP routes make ---------------------------------------------------------------

    def start(self, params: EpisodeParams) -> Observation:
        """Start an episode; fields left as None keep the current environment, task, scenario and seed (a
        new environment starts from its defaults). InvalidParams, changing nothing, for an unknown
        environment or a task or scenario the environment does not have."""
        with self.lock:
            env_id = check_episode(params, self.env_id)
            if env_id != self.env_id:
                self.env, self.env_id = aaos.make(env=env_id), env_id
                self.__dict__.pop("mcp_server", None)  # its tools are the old environment's actions
            observation = self.env.reset(params.task, params.scenario, params.seed)
            self.episode_id = params.episode_id
            return observation

    def typed(self, data: Mapping[str, Any]) -> JointAction:
        """A decoded joint action validated as the session environment's typed joint action (pydantic's
        ValidationError, naming each field, otherwise; aaos.server.models.typed_joint_action)."""
        return typed_joint_action(self.env_id, data)

    def advance(self, joint_action: JointAction, lean: Lean = FULL) -> StepResult:
        """Check the joint action (InvalidAction if the environment finds fault with it), then step, observing
        as `lean` asks (no observation, or only some roles' views, is cheaper). Raises aaos.EpisodeDone after
        the episode has ended."""
        with self.lock:
            problems = self.env.check(joint_action)
            if problems:
                raise InvalidAction(problems)
            return lean.step(self.env, joint_action)

    def snapshot(self) -> dict[str, Any]:
        """The full state as JSON data, with the OpenEnv `episode_id` and `step_count`."""
        with self.lock:
            state = self.env.state()
        return {"episode_id": self.episode_id, "step_count": state.get("step", 0), **state}

    # --- OpenEnv's interface (WebSocket sessions, MCP) ------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> AAOSObservation:
        """kwargs: env, task, scenario (see EpisodeParams). Invalid or unknown parameters raise ValueError
        naming each one (OpenEnv sends its message back to the client)."""
        observation = self.start(episode_params(seed=seed, episode_id=episode_id, **kwargs))
        return AAOSObservation.model_validate({**observation, "reward": None})

    def step(self, action: WireAction, timeout_s: float | None = None, **kwargs: Any) -> AAOSObservation:
        result = self.advance(self.typed(action.plain()))
        return observation_model(result)

    @property
    def state(self) -> AAOSState:
        return AAOSState.model_validate(self.snapshot())

    def get_metadata(self) -> EnvironmentMetadata:
        spec = aaos.spec(self.env_id)
        tasks = ", ".join(f"{t.id} ({t.difficulty})" for t in spec.tasks)
        return EnvironmentMetadata(
            name="aaos",
            description=f"{spec.title} (env {spec.id!r}, version {spec.version}, reward version "
                        f"{spec.reward_version}): {spec.description} Roles: {', '.join(spec.roles)}. "
                        f"Tasks: {tasks}. Scenarios: {', '.join(s.id for s in spec.scenarios)}. "
                        f"Other environments: {', '.join(e for e in aaos.env_ids() if e != spec.id) or 'none'} "
                        "(reset with env=ID).",
            version=aaos.__version__,
        )

    @cached_property
    def mcp_server(self) -> FastMCP:
        """The MCP tools of this environment, built on first use (OpenEnv's /mcp routes look for it)."""
        return build_mcp_server(self)


def observation_model(result: StepResult) -> AAOSObservation:
    """A step result as an OpenEnv observation (observation keys, reward, done, info)."""
    return AAOSObservation.model_validate(
        {**result.observation, "reward": result.reward, "done": result.done, "info": result.info})
