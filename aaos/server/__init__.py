"""The AAOS server: OpenEnv-compatible HTTP, WebSocket and MCP API over the in-process environments.

models.py       wire types (OpenEnv Action/Observation/State, HTTP requests and responses)
environment.py  the openenv-core Environment adapter
sessions.py     the HTTP session store
mcp.py          the MCP tools of a session
mcp_routes.py   POST/WS /mcp: JSON-RPC dispatch, the MCP session pool
ws.py           WS /ws: openenv's WebSocket protocol, answered from the event loop
wire.py         lean answers (roles, observe) and short error messages, for every surface
app.py          create_app() and the `server` entry point
address.py      where `server`, `aaos serve` and the Space listen; which proxies they trust (--forwarded-allow-ips)
client.py       AAOSEnv, the typed OpenEnv client (async, and .sync())
background.py   BackgroundServer: uvicorn in a thread on a free loopback port (tests, benchmarks)
"""

import sys


def without_openenv_web_interface() -> None:
    """Call before importing the server: openenv-core's server package imports its Gradio web interface whenever
    Gradio is installed (~4 s of a ~7 s start); the API server never serves it (the Space is app.py), so its
    module is marked absent, which that package's import allows for. A process that has loaded it keeps it."""
    sys.modules.setdefault("openenv.core.env_server.web_interface", None)  # type: ignore[arg-type]
