"""The AAOS Space: one FastAPI app with the OpenEnv API and the Gradio UI at `/`.

    python app.py        # http://127.0.0.1:7860 (HOST and PORT override; HOST defaults to 0.0.0.0)
"""

from __future__ import annotations

import os

import uvicorn
from fastapi import FastAPI

from aaos.server.app import create_app
from aaos.ui import mount_ui


def build_app() -> FastAPI:
    """The API routes first, then the UI mounted at `/` (so it never shadows them)."""
    return mount_ui(create_app())


app = build_app()

if __name__ == "__main__":
    host = os.environ.get("HOST", "0.0.0.0")
    port = int(os.environ.get("PORT", "7860"))
    print(f"AAOS Space on http://127.0.0.1:{port}")
    uvicorn.run(app, host=host, port=port, log_level=os.environ.get("LOG_LEVEL", "warning"))
