"""The AAOS Space: one FastAPI app with the OpenEnv API and the Gradio UI at `/`.

    python app.py        # http://127.0.0.1:7860

It listens where Gradio's GRADIO_SERVER_NAME and GRADIO_SERVER_PORT say (Hugging Face Spaces set 0.0.0.0 and 7860),
else HOST and PORT, else on 127.0.0.1:7860, this machine only (aaos.server.address.space_address); proxy headers
are trusted only from the proxies AAOS_FORWARDED_ALLOW_IPS names (aaos.server.app.uvicorn_config).

Once the server is up, the startup audit (`aaos doctor`: token present or not, model endpoint, champion runs)
writes its lines to the log, prefixed "aaos doctor:", from a thread: the first page load does not wait for it.
"""

from __future__ import annotations

import os
import threading
import time

import uvicorn
from fastapi import FastAPI

import aaos
from aaos import doctor
from aaos.agents.llm import LLMConfig
from aaos.server.address import space_address, trusted_proxies
from aaos.server.app import create_app, run_server, uvicorn_config
from aaos.ui import mount_ui

AUDIT_POLL_S = 0.2


def build_app() -> FastAPI:
    """The API routes first, then the UI mounted at `/` (so it never shadows them)."""
    return mount_ui(create_app())


def audit_once_started(server: uvicorn.Server) -> None:
    """Wait for the server to listen, then log the startup audit."""
    while not server.started:
        if server.should_exit:
            return
        time.sleep(AUDIT_POLL_S)
    doctor.run(aaos.env_ids(), os.environ.get(doctor.TOKEN_VARIABLE, ""), LLMConfig.from_env(),
               lambda line: print(f"aaos doctor: {line}", flush=True))


app = build_app()


def space_server(host: str, port: int) -> uvicorn.Server:
    """The Space's server, with the same limits as `aaos serve` (aaos.server.app.uvicorn_config)."""
    return uvicorn.Server(uvicorn_config(app, host, port, os.environ.get("LOG_LEVEL", "warning"),
                                         trusted_proxies(os.environ)))


if __name__ == "__main__":
    try:
        host, port = space_address(os.environ)
    except ValueError as error:
        raise SystemExit(f"app.py: {error}") from None
    print(f"AAOS Space on http://{'127.0.0.1' if host == '0.0.0.0' else host}:{port}", flush=True)
    server = space_server(host, port)
    threading.Thread(target=audit_once_started, args=(server,), name="aaos-doctor", daemon=True).start()
    run_server(server)
