"""Where the servers listen and whose proxy headers they trust: one rule for the `server` script and `aaos serve`,
one for the Space (app.py). Kept free of the server's dependencies, so that the `aaos` command builds its parser
without loading them."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

DEFAULT_HOST = "0.0.0.0"
DEFAULT_PORT = 8000
SPACE_HOST = "127.0.0.1"
SPACE_PORT = 7860
FORWARDED_ALLOW_IPS = "AAOS_FORWARDED_ALLOW_IPS"
"""The variable naming the proxies whose X-Forwarded-For/-Proto headers a server trusts (unset: none)."""


def trusted_proxies(environ: Mapping[str, str]) -> str | None:
    """The proxy addresses AAOS_FORWARDED_ALLOW_IPS names (uvicorn's syntax: comma-separated addresses or networks,
    or "*"), or None when it is unset or blank: then no proxy is trusted."""
    return environ.get(FORWARDED_ALLOW_IPS, "").strip() or None


def space_address(environ: Mapping[str, str]) -> tuple[str, int]:
    """Where the Space listens: Gradio's GRADIO_SERVER_NAME and GRADIO_SERVER_PORT (Hugging Face Spaces set them to
    0.0.0.0 and 7860), else HOST and PORT, else 127.0.0.1:7860 (this machine only); ValueError naming the variable
    for a port that is not one."""
    host = environ.get("GRADIO_SERVER_NAME") or environ.get("HOST") or SPACE_HOST
    variable = next((name for name in ("GRADIO_SERVER_PORT", "PORT") if environ.get(name)), None)
    if variable is None:
        return host, SPACE_PORT
    text = environ[variable]
    if not text.strip().isdigit() or int(text) > 65535:
        raise ValueError(f"{variable} must be a port number from 0 to 65535, got {text[:40]!r}")
    return host, int(text)


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """--host/--port, defaulting to HOST/PORT from the environment, else 0.0.0.0:8000; --hide-state; --eval;
    --forwarded-allow-ips, defaulting to AAOS_FORWARDED_ALLOW_IPS."""
    parser.add_argument("--host", default=os.environ.get("HOST", DEFAULT_HOST))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", DEFAULT_PORT)))
    parser.add_argument("--hide-state", action="store_true",
                        help="GET /state answers 403, as with AAOS_HIDE_STATE=1: for benchmarks, so that an agent "
                             "cannot read the ground truth")
    parser.add_argument("--eval", action="store_true",
                        help="evaluation mode, as with AAOS_EVAL=1: the state is hidden and a secret holdout salt, "
                             "drawn at start and never shown (GET /evaluation gives its fingerprint), re-draws every "
                             "holdout variant; it cannot be turned off while the server runs")
    parser.add_argument("--forwarded-allow-ips", metavar="ADDRESSES", default=trusted_proxies(os.environ),
                        help=f"trust the X-Forwarded-For and X-Forwarded-Proto headers of requests from these proxy "
                             f"addresses (comma-separated IPs or networks, or '*' for any), as with "
                             f"{FORWARDED_ALLOW_IPS}: a client behind them is then known, and its sessions capped, by "
                             f"the address they forward. Default: no proxy is trusted; a client is the address it "
                             f"connects from")
