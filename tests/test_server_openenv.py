"""OpenEnv conformance: `openenv validate` on the repo and on a running `aaos serve`; the Space app serves the
API beside the UI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from helpers import serving

REPO = Path(__file__).resolve().parents[1]


def openenv(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "openenv.cli", "validate", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)




@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """`aaos serve` in a subprocess on a free loopback port; its base URL."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    with serving(env) as url:
        yield url


def test_openenv_validate_passes_on_the_repo() -> None:
    result = openenv("--json", str(REPO))
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["passed"] and report["issues"] == []


def test_openenv_validate_url_passes_on_the_running_server(served: str) -> None:
    result = openenv("--url", served)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["passed"] and report["mode"] == "simulation"
    assert report["summary"]["failed_criteria"] == []


def test_aaos_serve_runs_the_api_alone(served: str) -> None:
    session = httpx.post(f"{served}/reset", json={"seed": 1}).json()["session_id"]
    step = httpx.post(f"{served}/step", json={"session_id": session, "action": {}})
    assert step.status_code == 200 and step.json()["observation"]["step_count"] == 1
    assert httpx.get(f"{served}/").status_code == 404  # no UI here


def test_the_space_serves_the_api_beside_the_ui() -> None:
    sys.path.insert(0, str(REPO))
    try:
        from app import build_app
    finally:
        sys.path.remove(str(REPO))
    with TestClient(build_app()) as client:
        assert client.get("/health").json() == {"status": "healthy"}
        session = client.post("/reset", json={"task": "org_simulation"}).json()["session_id"]
        assert client.post("/step", json={"session_id": session, "action": {}}).status_code == 200
        assert "text/html" in client.get("/").headers["content-type"]
