"""OpenEnv's conventional server entry (`server/app.py`, checked by `openenv validate deploy/openenv`): the ASGI
`app` its manifest names, and `main` (the `server` script). The server itself is `aaos/server/app.py`:

    python deploy/openenv/server/app.py --port 8000      # same as `aaos serve --port 8000` or `aaos-server`
"""

from aaos.server import without_openenv_web_interface

without_openenv_web_interface()

from aaos.server.app import create_app  # noqa: E402
from aaos.server.app import main as run_server  # noqa: E402

app = create_app()


def main() -> None:
    """Run the AAOS API server; --host and --port default to HOST/PORT, else 0.0.0.0:8000."""
    run_server()


if __name__ == "__main__":
    main()
