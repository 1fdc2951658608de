"""A FAULT-INJECTING FAKE of an OpenAI-compatible chat-completions endpoint, on loopback.

Not a model: it exists to test how agents survive timeouts, 429s, 5xx, non-JSON and wrong-schema replies,
and to time the benchmark's concurrency against a fixed latency. In "ok" mode it answers with the first
option of the JSON schema the request carries (so the answer is valid and deterministic).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from helpers import free_port

from aaos.server.background import BackgroundServer

MODES = ("ok", "timeout", "rate_limit", "server_error", "not_json", "wrong_schema", "empty", "echo_token")
"""echo_token: a 401 whose message quotes the request's Authorization header, as a careless endpoint might."""


def first_instance(schema: dict[str, Any]) -> Any:
    """The simplest value a schema admits: first anyOf option, const, first enum value, an object or a tuple of
    such values, or a short text."""
    if "anyOf" in schema:
        return first_instance(schema["anyOf"][0])
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if schema.get("type") == "object":
        return {name: first_instance(sub) for name, sub in schema.get("properties", {}).items()}
    if schema.get("type") == "array":
        return [first_instance(item) for item in schema.get("prefixItems", [])]
    if schema.get("type") == "string":
        return "fake answer"
    return None


@dataclass
class Script:
    """What the fake does: `modes` are used one per request in turn, the last one repeating."""

    modes: list[str] = field(default_factory=lambda: ["ok"])
    latency_s: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def next_mode(self) -> str:
        index = min(len(self.requests) - 1, len(self.modes) - 1)
        return self.modes[index]


def _completion(content: str) -> dict[str, Any]:
    return {
        "id": "fake", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def build_app(script: Script) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> Any:
        body = await request.json()
        script.requests.append(body)
        script.headers.append(dict(request.headers))
        mode = script.next_mode()
        if script.latency_s:
            await asyncio.sleep(script.latency_s)
        if mode == "timeout":
            await asyncio.sleep(30)
        if mode == "rate_limit":
            return JSONResponse({"error": {"message": "rate limited", "type": "rate_limit"}}, status_code=429)
        if mode == "echo_token":
            message = f"invalid credentials: {request.headers.get('authorization')}"
            return JSONResponse({"error": {"message": message, "type": "invalid_request_error"}}, status_code=401)
        if mode == "server_error":
            return JSONResponse({"error": {"message": "boom", "type": "server_error"}}, status_code=500)
        if mode == "not_json":
            return JSONResponse(_completion("Sure! I think the engineer should query metrics."))
        if mode == "wrong_schema":
            return JSONResponse(_completion(json.dumps({"action": "fly", "params": [1, 2]})))
        if mode == "empty":
            return PlainTextResponse("", status_code=200)
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema") or (
            body.get("response_format") or {}).get("schema") or {}
        return JSONResponse(_completion(json.dumps(first_instance(schema))))

    return app


@contextmanager
def serve(script: Script) -> Iterator[str]:
    """Run the fake on 127.0.0.1 for the duration of the block; yields its base URL (.../v1)."""
    with BackgroundServer(build_app(script)) as server:
        yield f"{server.url}/v1"


@contextmanager
def serve_in_subprocess(modes: list[str], latency_s: float = 0.0) -> Iterator[str]:
    """Run the fake in its own process (so its work does not share the caller's GIL); yields its base URL."""
    import subprocess
    import sys
    import urllib.error
    import urllib.request

    port = free_port()
    command = [sys.executable, __file__, "--port", str(port), "--latency", str(latency_s), "--modes", *modes]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{url}/chat/completions", timeout=1)
        except urllib.error.HTTPError:
            break  # it answers (405 to a GET): it is up
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("the fake endpoint did not start") from None
            time.sleep(0.1)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Run the fault-injecting fake endpoint on 127.0.0.1.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--modes", nargs="+", default=["ok"], choices=MODES)
    arguments = parser.parse_args()
    uvicorn.run(build_app(Script(modes=arguments.modes, latency_s=arguments.latency)), host="127.0.0.1",
                port=arguments.port, log_level="error")
