"""A real wheel works on its own: `pip install` of the built wheel (not editable) into a fresh virtual environment,
then make an environment, play `aaos run`, serve `aaos serve` and import the UI, all from outside the checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from helpers import REPO_ROOT, free_port

import aaos

pytestmark = pytest.mark.slow  # builds the wheel and installs it into a fresh virtual environment


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with the wheel installed; it sees the dependencies of the interpreter running the
    tests (a .pth file lists the site-packages on its path, whether it is a virtual environment or not), so no
    download is needed, but aaos itself only from the wheel: a directory a .pth file adds has none of its own .pth
    files read, so an editable install of the checkout stays invisible, and the wheel comes first on the path."""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO_ROOT), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(root)], check=True, cwd=root)
    wheel = next(root.glob("aaos-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], check=True,
                         capture_output=True, text=True).stdout.strip()
    ours = [entry for entry in sys.path if Path(entry).name in ("site-packages", "dist-packages")]
    (Path(own) / "dependencies.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True)
    return root / "venv"


def run(venv: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": ""}
    return subprocess.run(args, cwd=venv.parent, env=env, capture_output=True, text=True, timeout=timeout,
                          check=True)


def test_the_wheel_carries_the_scenarios_and_makes_every_task(venv: Path) -> None:
    code = ("import json, aaos; print(json.dumps({'file': aaos.__file__, 'envs': {e: {"
            "'scenarios': len(aaos.list_scenarios(env=e)), "
            "'ids': [aaos.make(t['id'], env=e).reset()['scenario_id'] for t in aaos.list_tasks(e)]} "
            "for e in aaos.env_ids()}}))")
    found = json.loads(run(venv, str(venv / "bin" / "python"), "-c", code).stdout)
    assert Path(found["file"]).is_relative_to(venv), "aaos must come from the wheel, not the checkout"
    assert set(found["envs"]) == set(aaos.env_ids())
    for env_id, made in found["envs"].items():
        assert made["scenarios"] == len(list((REPO_ROOT / "scenarios" / env_id).glob("*.json"))) > 0
        assert made["ids"] == [aaos.spec(env_id).default_scenario] * len(aaos.spec(env_id).tasks)


def test_the_wheel_carries_the_results_as_the_checkout_has_them(venv: Path) -> None:
    """A wheel rebuilt in a checkout whose committed results changed ships them as they are now, none of the files
    an earlier build copied and the checkout has since removed (setuptools reuses its build/ folder)."""
    code = "import aaos, pathlib; print(pathlib.Path(aaos.__file__).parent / '_data' / 'results')"
    shipped = Path(run(venv, str(venv / "bin" / "python"), "-c", code).stdout.strip())

    def files(root: Path) -> set[str]:
        return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}

    assert files(shipped) == files(REPO_ROOT / "results")


def test_aaos_run_plays_an_episode(venv: Path) -> None:
    out = run(venv, str(venv / "bin" / "aaos"), "run", "--task", "org_simulation", "--policy", "heuristic",
              "--quiet").stdout
    assert "score" in out


def test_the_ui_imports_with_its_assets(venv: Path) -> None:
    code = "import aaos.ui.layout as layout; print(layout.CSS.read_text()[:20]); print(layout.CSS)"
    out = run(venv, str(venv / "bin" / "python"), "-c", code).stdout
    assert str(venv) in out.splitlines()[-1]


def test_aaos_serve_answers_health(venv: Path) -> None:
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": ""}
    server = subprocess.Popen([str(venv / "bin" / "aaos"), "serve", "--host", "127.0.0.1", "--port", str(port)],
                              cwd=venv.parent, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    assert response.status == 200
                    break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode() if server.stderr else "server exited"
                assert time.monotonic() < deadline, "aaos serve did not answer /health within 60 s"
                time.sleep(0.5)
        body = json.dumps({"task": "org_simulation", "seed": 1}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/reset", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.loads(response.read())["observation"]["scenario_id"] == "product_launch_failure"
    finally:
        server.terminate()
        server.wait(timeout=10)
