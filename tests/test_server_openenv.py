"""OpenEnv conformance: `openenv validate` on the OpenEnv package (deploy/openenv) and on a running `aaos serve`;
the Space app serves the API beside the UI."""

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


def test_openenv_validate_passes_on_the_openenv_package() -> None:
    result = openenv("--json", str(REPO / "deploy" / "openenv"))
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


def test_the_openenv_package_s_manifest_names_an_app_that_serves_the_api() -> None:
    package = REPO / "deploy" / "openenv"
    module, attribute = next(line.split(":", 1)[1].strip() for line in
                             (package / "openenv.yaml").read_text(encoding="utf-8").splitlines()
                             if line.startswith("app:")).split(":")
    code = (f"import sys; sys.path.insert(0, {str(package)!r}); import importlib, json; "
            "from fastapi.testclient import TestClient; "
            f"app = getattr(importlib.import_module({module!r}), {attribute!r}); "
            "client = TestClient(app); sid = client.post('/reset', json={}).json()['session_id']; "
            "print(json.dumps([client.get('/health').json(), "
            "client.post('/step', json={'session_id': sid, 'action': {}}).status_code]))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(result.stdout) == [{"status": "healthy"}, 200]
