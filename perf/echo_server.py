"""A minimal OpenEnv environment, served by openenv-core's own `create_app`: the yardstick perf/server_speed.py
compares the AAOS server with (what openenv's server costs with next to no environment behind it).

It mirrors OpenEnv's echo_env example (which openenv-core does not ship): a step echoes the action's message.

    python perf/echo_server.py PORT        # serves on 127.0.0.1:PORT until interrupted
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class EchoAction(Action):
    message: str = ""


class EchoObservation(Observation):
    echoed_message: str = ""
    message_length: int = 0


class EchoEnvironment(Environment[EchoAction, EchoObservation, State]):
    """Echoes each message back; never done."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=None, step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        self._state = State(episode_id=episode_id, step_count=0)
        return EchoObservation(reward=None, done=False)

    def step(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:
        self._state.step_count += 1
        return EchoObservation(echoed_message=action.message, message_length=len(action.message), reward=0.0,
                               done=False)

    @property
    def state(self) -> State:
        return self._state


def main() -> None:
    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo", max_concurrent_envs=256)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")


if __name__ == "__main__":
    main()
