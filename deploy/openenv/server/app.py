"""OpenEnv's conventional server entry (`server/app.py`, checked by `openenv validate`). The server itself
is `aaos/server/app.py`; this file only runs it:

    python server/app.py --port 8000      # same as `aaos serve --port 8000` or the `server` script
"""

from aaos.server.app import main as run_server


def main() -> None:
    """Run the AAOS API server; --host and --port default to HOST/PORT, else 0.0.0.0:8000."""
    run_server()


if __name__ == "__main__":
    main()
