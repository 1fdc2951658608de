"""A fault-injection fixture: a deliberately broken toy OpenEnv server, for tests/test_check_url.py.

It speaks OpenEnv's protocol by hand (HTTP /health, /metadata, /schema, stateless /reset, /step, /state as
openenv's simulation mode has them, and the WS /ws message loop), so that each defect is exactly the one seeded
and no framework catches it first. `broken_app(defects)` serves a walk: a position and a target on a line,
eight steps, reward 0.1 per unit moved closer, the running return reported as `score`. With no defect it passes
every check of `aaos check --url`; each entry of DEFECTS breaks one thing, and EXPECTED_FAILURES names the checks
that must fail for it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
from typing import Any, Literal

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.routing import Mount

DEFECTS: dict[str, str] = {
    "no_schema": "GET /schema answers 404",
    "unseeded": "reset ignores its seed: the start comes from a count of the resets served",
    "crash_on_malformed": "actions are not validated: a malformed one raises, which closes the WebSocket with 1011 "
                          "and answers HTTP 500",
    "accepts_invalid": "an action that fails validation is played as a stay",
    "changed_by_refusal": "a refused action still counts a step",
    "shared_state": "every WebSocket session plays one shared walk",
    "reward_as_string": "the reward is sent as a string",
    "done_as_number": "done is sent as 0 or 1",
    "missing_field": "the observation leaves out `target`, which its schema requires",
    "crash_after_done": "a step after done raises (the WebSocket closes with 1011)",
    "continues_after_done": "a step after done is played, done false",
    "reward_ignores_actions": "the reward is 0.1 whatever the action",
    "score_mismatch": "the reported score is the return plus one",
    "dies_on_binary": "a binary frame raises (the WebSocket closes with 1011)",
}
"""Each seeded defect, by name."""
EXPECTED_FAILURES: dict[str, set[str]] = {
    "no_schema": {"published"},
    "unseeded": {"determinism"},
    "crash_on_malformed": {"malformed_actions", "malformed_http"},
    "accepts_invalid": {"malformed_actions", "malformed_http"},
    "changed_by_refusal": {"malformed_actions"},
    "shared_state": {"session_isolation"},
    "reward_as_string": {"contract"},
    "done_as_number": {"contract"},
    "missing_field": {"contract"},
    "crash_after_done": {"step_after_done"},
    "continues_after_done": {"step_after_done"},
    "reward_ignores_actions": {"ladder"},
    "score_mismatch": {"return_vs_score"},
    "dies_on_binary": {"malformed_frames"},
}
"""The checks that must fail for each defect (and only those)."""
STEPS = 8
MOVES = {"left": -1, "right": 1, "stay": 0}


class WalkAction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    move: Literal["left", "right", "stay"] = "stay"
    size: int = Field(1, ge=1, le=3)
    note: str = Field("", max_length=20)


class WalkObservation(BaseModel):
    position: int
    target: int
    steps: int
    note: str
    score: float
    reward: float | None = None
    done: bool = False


class EpisodeOver(Exception):
    pass


class Walk:
    def __init__(self, defects: frozenset[str], resets: itertools.count[int]) -> None:
        self.defects = defects
        self.resets = resets
        self.reset(0)

    def reset(self, seed: int | None) -> dict[str, Any]:
        draws = random.Random(next(self.resets) if "unseeded" in self.defects else seed or 0)
        self.position, self.target = draws.randint(0, 20), draws.randint(0, 20)
        self.steps, self.total, self.note, self.done = 0, 0.0, "", False
        return self.answer(None)

    def step(self, action: WalkAction) -> dict[str, Any]:
        if self.done and "continues_after_done" not in self.defects:
            if "crash_after_done" in self.defects:
                raise RuntimeError("stepped past the end")
            raise EpisodeOver
        before = abs(self.position - self.target)
        self.position += MOVES[action.move] * action.size
        reward = 0.1 if "reward_ignores_actions" in self.defects else 0.1 * (before - abs(self.position - self.target))
        self.steps, self.total, self.note = self.steps + 1, self.total + reward, action.note
        self.done = self.steps == STEPS
        return self.answer(reward)

    def answer(self, reward: float | None) -> dict[str, Any]:
        score = self.total + (1.0 if "score_mismatch" in self.defects else 0.0)
        observation = {"position": self.position, "target": self.target, "steps": self.steps, "note": self.note,
                       "score": score}
        if "missing_field" in self.defects:
            del observation["target"]
        return {"observation": observation,
                "reward": str(reward) if "reward_as_string" in self.defects and reward is not None else reward,
                "done": int(self.done) if "done_as_number" in self.defects else self.done}

    def state(self) -> dict[str, Any]:
        return {"position": self.position, "target": self.target, "steps": self.steps, "done": self.done}

    def action(self, data: Any) -> WalkAction:
        """The action `data` asks for; ValidationError if it is malformed (except as the defects say)."""
        if "crash_on_malformed" in self.defects:  # step() then raises on an unknown move or a size of another type
            return WalkAction.model_construct(**{"move": "stay", "size": 1, "note": "", **data})
        try:
            return WalkAction.model_validate(data)
        except ValidationError:
            if "accepts_invalid" in self.defects:
                return WalkAction()
            if "changed_by_refusal" in self.defects:
                self.steps += 1
            raise


def _error(code: str, message: str) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code}})


def _routes(app: FastAPI, defects: frozenset[str]) -> None:
    resets = itertools.count()
    shared = Walk(defects, resets)

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "healthy"}

    @app.get("/metadata")
    def metadata() -> dict[str, str]:
        return {"name": "broken-walk", "description": "A fault-injection fixture: " + ", ".join(sorted(defects)),
                "version": "0"}

    if "no_schema" not in defects:
        @app.get("/schema")
        def schema() -> dict[str, Any]:
            return {"action": WalkAction.model_json_schema(), "observation": WalkObservation.model_json_schema(),
                    "state": {"type": "object"}}

    @app.post("/reset")
    async def reset(request: Request) -> JSONResponse:
        body = await _body(request)
        if not isinstance(body, dict) or not isinstance(body.get("seed", 0), int | None):
            return JSONResponse({"detail": "reset takes an object with an integer seed"}, status_code=422)
        return JSONResponse(Walk(defects, resets).reset(body.get("seed")))

    @app.post("/step")
    async def step(request: Request) -> JSONResponse:
        body = await _body(request)
        if not isinstance(body, dict) or not isinstance(body.get("action"), dict):
            return JSONResponse({"detail": "step takes an object with an action object"}, status_code=422)
        walk = Walk(defects, resets)
        try:
            return JSONResponse(walk.step(walk.action(body["action"])))
        except ValidationError as error:
            return JSONResponse({"detail": error.errors(include_url=False, include_input=False)}, status_code=422)

    @app.get("/state")
    def state() -> dict[str, Any]:
        return Walk(defects, resets).state()

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        walk = shared if "shared_state" in defects else Walk(defects, resets)
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                answer = _answer(walk, message)
                if answer is None:
                    await websocket.close()
                    return
                await websocket.send_text(answer)


async def _body(request: Request) -> Any:
    try:
        return json.loads(await request.body() or b"{}")
    except (ValueError, RecursionError):
        return None


def _answer(walk: Walk, message: dict[str, Any]) -> str | None:
    """The frame answering one received WebSocket message; None for `close`."""
    text = message.get("text")
    if text is None:
        if "dies_on_binary" in walk.defects:
            raise RuntimeError("a binary frame")
        return _error("INVALID_JSON", "send text frames")
    try:
        frame = json.loads(text)
    except (ValueError, RecursionError):
        return _error("INVALID_JSON", "not JSON")
    if not isinstance(frame, dict) or frame.get("type") not in ("reset", "step", "state", "close"):
        return _error("UNKNOWN_TYPE", "the types are reset, step, state, close")
    if frame["type"] == "close":
        return None
    if frame["type"] == "state":
        return json.dumps({"type": "state", "data": walk.state()})
    data = frame.get("data", {} if frame["type"] == "reset" else None)
    if not isinstance(data, dict):
        return _error("VALIDATION_ERROR", "data must be an object")
    if frame["type"] == "reset":
        seed = data.get("seed")
        if not isinstance(seed, int | None):
            return _error("VALIDATION_ERROR", "the seed must be an integer")
        return json.dumps({"type": "observation", "data": walk.reset(seed)})
    try:
        return json.dumps({"type": "observation", "data": walk.step(walk.action(data))})
    except ValidationError as error:
        return _error("VALIDATION_ERROR", str(error.errors(include_url=False, include_input=False)))
    except EpisodeOver:
        return _error("EXECUTION_ERROR", "the episode is over; reset to start a new one")


def broken_app(defects: frozenset[str] = frozenset()) -> FastAPI:
    """The walk server with `defects` (names from DEFECTS) seeded."""
    unknown = defects - set(DEFECTS)
    if unknown:
        raise ValueError(f"unknown defects {sorted(unknown)}; the defects are {', '.join(DEFECTS)}")
    app = FastAPI(title="broken-walk")
    _routes(app, defects)
    return app


def every_variant() -> FastAPI:
    """One app serving the clean walk under /clean and each defect alone under /<defect>."""
    return FastAPI(routes=[Mount("/clean", broken_app()),
                           *(Mount(f"/{name}", broken_app(frozenset({name}))) for name in DEFECTS)])
