"""Run an ASGI app with uvicorn in a background thread on a free loopback port (tests, benchmarks, notebooks).

    with BackgroundServer(create_app()) as server:
        httpx.post(f"{server.url}/reset")
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

import uvicorn
from starlette.types import ASGIApp

from aaos.server.app import uvicorn_config

SHUTDOWN_GRACE_S = 1


class BackgroundServer:
    """A uvicorn server on 127.0.0.1 (port 0 picks a free one), configured as `aaos serve` is
    (aaos.server.app.uvicorn_config: proxy headers trusted only from `forwarded_allow_ips`); `url` is its base URL
    once started. On stop, a request still in flight gets SHUTDOWN_GRACE_S, then is cancelled: one that hangs (a
    fault-injecting fake's timeout) must not hold up the caller."""

    def __init__(self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0, startup_timeout: float = 30.0,
                 forwarded_allow_ips: str | None = None) -> None:
        config = uvicorn_config(app, host, port, forwarded_allow_ips=forwarded_allow_ips, lifespan="on",
                                timeout_graceful_shutdown=SHUTDOWN_GRACE_S)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="aaos-server", daemon=True)
        self._host = host
        self._startup_timeout = startup_timeout
        self.url = ""

    def start(self) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server on {self._host} did not start")
            time.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{self._host}:{port}"
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
