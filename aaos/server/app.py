"""The API app. Interim: only /health, until the OpenEnv server lands."""

from __future__ import annotations

from fastapi import FastAPI

import aaos


def create_app() -> FastAPI:
    app = FastAPI(title="AAOS API", version=aaos.__version__)

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "healthy"}

    return app
