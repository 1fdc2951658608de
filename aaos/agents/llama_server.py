"""The local model's server process (aaos.agents.local_model starts it): llama-cpp-python's OpenAI-compatible
server, with three differences.

- An answer depends only on its request, never on what the server served before. llama.cpp's result for a token
  depends, by rounding, on the batch it was evaluated in, so a prompt that reuses an earlier prompt's state up to
  an arbitrary token (which one depends on the requests before it: other episodes, at a benchmark's concurrency)
  can decode differently from the same prompt read from scratch. Here a prompt reuses an earlier state only up
  to a multiple of the batch size that was read in whole batches from the start: what reading it from scratch
  computes, bit for bit.
- It ends when its standard input closes: its parent holds the other end, which the system closes however the
  parent ends (a signal, SIGKILL, a crash), so no server outlives the process that started it.
- With --idle_s, it ends after that many seconds without a request (GET /aaos/activity, which says how long it
  has been idle and how many requests are in flight, does not count as one).

    python -m aaos.agents.llama_server --idle_s 600 --model MODEL.gguf ...   # llama_cpp.server's flags
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any

import llama_cpp
import uvicorn
from fastapi import FastAPI, Request, Response
from llama_cpp.server.app import create_app
from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

from aaos.agents.local_model import ACTIVITY_PATH

IDLE_POLL_S = 1.0


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` have in common."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


class FreshLlama(llama_cpp.Llama):
    """A Llama whose answer to a prompt is the one it gives the prompt read from scratch (see the module)."""

    whole_batches = 0
    """How many leading tokens of the current state were read in whole batches from the start."""

    def generate(self, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Generator[int, Any, None]:
        tokens = list(tokens)
        reused = min(shared_prefix(self._input_ids.tolist(), tokens), self.whole_batches, len(tokens) - 1)
        # llama_cpp reuses what is left of the state (none when 0) and reads the rest in batches from there
        self.n_tokens = reused // self.n_batch * self.n_batch
        self.whole_batches = len(tokens) // self.n_batch * self.n_batch
        return super().generate(tokens, *args, **kwargs)

    def save_state(self) -> llama_cpp.LlamaState:
        state = super().save_state()
        state.whole_batches = self.whole_batches  # type: ignore[attr-defined]
        return state

    def load_state(self, state: llama_cpp.LlamaState) -> None:
        super().load_state(state)
        self.whole_batches = state.whole_batches  # type: ignore[attr-defined]


class Activity:
    """When the server last served a request, and how many model calls it is serving (ACTIVITY_PATH reports
    them)."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.last = time.monotonic()
        self.lock = threading.Lock()

    async def track(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if request.url.path == ACTIVITY_PATH:
            return await call_next(request)
        # only a model call (a POST) is work that stopping the server would break; any request is use
        serving = int(request.method == "POST")
        with self.lock:
            self.in_flight += serving
        try:
            return await call_next(request)
        finally:
            with self.lock:
                self.in_flight -= serving
                self.last = time.monotonic()

    def report(self) -> dict[str, float]:
        """{"in_flight": requests being served, "idle_s": seconds since the last one ended (0 while serving)}."""
        with self.lock:
            return {"in_flight": self.in_flight, "idle_s": 0.0 if self.in_flight else time.monotonic() - self.last}


def end_with_stdin() -> None:
    """Exit at once when standard input closes (the parent is gone)."""
    sys.stdin.buffer.read()
    os._exit(0)


def end_when_idle(server: uvicorn.Server, activity: Activity, idle_s: float) -> None:
    while activity.report()["idle_s"] < idle_s:
        time.sleep(IDLE_POLL_S)
    server.should_exit = True


def serve(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The local model's server (started by aaos.agents.local_model).")
    add_args_from_model(parser, Settings)
    parser.add_argument("--idle_s", type=float, default=None, help="end after this many seconds without a request")
    args = parser.parse_args(argv)
    server_settings = parse_model_from_args(ServerSettings, args)
    model_settings = parse_model_from_args(ModelSettings, args)
    llama_cpp.Llama = FreshLlama  # type: ignore[misc]  # the class llama_cpp.server loads its model with
    app: FastAPI = create_app(server_settings=server_settings, model_settings=[model_settings])
    activity = Activity()
    app.middleware("http")(activity.track)
    app.get(ACTIVITY_PATH)(activity.report)
    server = uvicorn.Server(uvicorn.Config(app, host=server_settings.host, port=server_settings.port,
                                           log_level="warning"))
    threading.Thread(target=end_with_stdin, name="end-with-parent", daemon=True).start()
    if args.idle_s is not None:
        threading.Thread(target=end_when_idle, args=(server, activity, args.idle_s), name="end-when-idle",
                         daemon=True).start()
    server.run()
    os._exit(0)  # at once: llama.cpp aborts when the interpreter frees the model at exit


if __name__ == "__main__":
    serve()
