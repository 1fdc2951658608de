"""Evaluation mode: a server that hides the ground truth and plays a salted holdout, by construction.

`aaos serve --eval` (or AAOS_EVAL=1; SessionConfig.evaluation) starts a server for evaluating agents. It cannot be
turned off while it runs (no request changes it):

- the state is hidden: GET /state is a 403 and a WebSocket `state` message an error, for every session;
- a secret holdout salt is drawn from the operating system as the app is built (aaos.core.seeding.new_salt) and
  every environment its sessions build or reset draws its holdout variants with it (HTTP, WebSocket and MCP alike:
  the salt is in force for every request and connection, aaos.core.seeding.salted). So a holdout episode cannot be
  recognised from its first observation and replayed on a twin drawn from the public code. Train variants ignore
  the salt. The salt is never logged, answered or written; GET /evaluation tells its fingerprint, which results
  played against the server record.

Given the salt, everything stays deterministic; a restart draws another salt (another holdout).
"""

from __future__ import annotations

from typing import Literal

from fastapi import FastAPI
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from aaos.core.seeding import new_salt, salt_fingerprint, salted, split_label
from aaos.server.sessions import SessionConfig


class SaltedHoldout:
    """ASGI middleware: every request and connection runs with the server's secret holdout salt in force."""

    __slots__ = ("_salt", "app")

    def __init__(self, app: ASGIApp, salt: str) -> None:
        self.app = app
        self._salt = salt

    def __repr__(self) -> str:  # never the salt
        return f"SaltedHoldout(fingerprint={salt_fingerprint(self._salt)!r})"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with salted(self._salt):
            await self.app(scope, receive, send)


class EvaluationInfo(BaseModel):
    """What GET /evaluation answers."""

    evaluation: bool = Field(description="Whether this is an evaluation server (--eval): state hidden, secret "
                                         "holdout salt.")
    state_hidden: bool = Field(description="Whether GET /state and WebSocket `state` are refused.")
    holdout_salt: str | None = Field(description="The fingerprint of this server's secret holdout salt (never the "
                                                 "salt), None when its holdout is the public one.")
    holdout: Literal["public holdout", "salted holdout"] = Field(
        description="Which holdout this server's holdout episodes are of.")


def add_evaluation(app: FastAPI, config: SessionConfig) -> EvaluationInfo:
    """In evaluation mode, draw the secret salt and put it in force for every request and connection; in any
    mode, add GET /evaluation saying how this server evaluates. Returns that answer."""
    fingerprint = None
    if config.evaluation:
        salt = new_salt()
        fingerprint = salt_fingerprint(salt)
        app.add_middleware(SaltedHoldout, salt=salt)
    info = EvaluationInfo(evaluation=config.evaluation, state_hidden=config.hide_state, holdout_salt=fingerprint,
                          holdout=split_label("holdout", fingerprint))  # type: ignore[arg-type]

    @app.get("/evaluation", response_model=EvaluationInfo, summary="How this server evaluates",
             tags=["Environment Info"])
    async def evaluation() -> EvaluationInfo:
        """Whether the ground truth is hidden and which holdout (public, or salted: the fingerprint of its secret
        salt) this server's holdout episodes are drawn from; results played here record the fingerprint."""
        return info

    return info
