"""How the API server is started: one rule for the `server` script and `aaos serve` (kept free of the server's
dependencies, so that the `aaos` command builds its parser without loading them)."""

from __future__ import annotations

import argparse
import os

DEFAULT_HOST = "0.0.0.0"
DEFAULT_PORT = 8000


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """--host/--port, defaulting to HOST/PORT from the environment, else 0.0.0.0:8000; --hide-state; --eval."""
    parser.add_argument("--host", default=os.environ.get("HOST", DEFAULT_HOST))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", DEFAULT_PORT)))
    parser.add_argument("--hide-state", action="store_true",
                        help="GET /state answers 403, as with AAOS_HIDE_STATE=1: for benchmarks, so that an agent "
                             "cannot read the ground truth")
    parser.add_argument("--eval", action="store_true",
                        help="evaluation mode, as with AAOS_EVAL=1: the state is hidden and a secret holdout salt, "
                             "drawn at start and never shown (GET /evaluation gives its fingerprint), re-draws every "
                             "holdout variant; it cannot be turned off while the server runs")
