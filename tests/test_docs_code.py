"""The documentation's code runs: every Python and shell block of README.md and docs/ is executed here (the
conventions are in tests/docs_blocks.py), so an example cannot go stale. Python blocks run in this process, shell
blocks under bash with this environment's Python first on PATH; both in a scratch folder that holds links to the
checkout's top-level files (so `python inference.py` or `scenarios/` work and what a block writes, such as runs/,
stays out of the checkout)."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_blocks import REPO_ROOT, Block, chains, documents
from helpers import serving

DOCUMENTED_SERVER = ("127.0.0.1:8000", "localhost:8000")
"""The server address the docs' examples use; a `server` block is pointed at the test's server instead."""
LEFT_OUT = {".git", ".venv", "build", "runs", "site"}
"""Top-level entries of the checkout the scratch folder does not link (what a block writes goes there)."""
SETTINGS = ("HF_TOKEN", "MODEL_NAME", "API_BASE_URL", "AAOS_HOLDOUT_SALT", "AAOS_ENVS", "ENV_BASE_URL", "ENV_NAME",
            "TASK", "OUTPUT", "SCENARIO", "RUN_SEED", "MAX_STEPS")
"""Unset for the blocks: an example runs as it would for a newcomer, with no model, secret or setting of theirs."""
SHELL_TIMEOUT_S = {"fast": 300, "slow": 1800}


def _cases() -> Iterator[object]:
    for document in documents():
        for chain in chains(document):
            first = chain[0]
            marks = {"skip": [pytest.mark.skip(reason=first.reason or "")], "slow": [pytest.mark.slow]}
            yield pytest.param(chain, id=first.where, marks=marks.get(first.mode or "", []))


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for entry in REPO_ROOT.iterdir():
        if entry.name not in LEFT_OUT and not entry.name.startswith("."):
            (tmp_path / entry.name).symlink_to(entry)
    for variable in SETTINGS:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with serving(dict(os.environ)) as url:
        yield url


def _pointed(text: str, url: str | None) -> str:
    if url is None:
        return text
    for documented in DOCUMENTED_SERVER:
        text = text.replace(documented, url.removeprefix("http://"))
    return text


def _run_python(block: Block, code: str, namespace: dict[str, object]) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, block.where, "exec"), namespace)


def _run_bash(block: Block, code: str, cwd: Path, timeout_s: int) -> None:
    if "jq " in code:
        assert shutil.which("jq"), f"{block.where} uses jq: apt-get install jq"
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout_s)
    assert done.returncode == 0, f"{block.where} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"


@pytest.mark.parametrize("chain", list(_cases()))
def test_the_block_runs(chain: list[Block], scratch: Path, request: pytest.FixtureRequest) -> None:
    first = chain[0]
    url = request.getfixturevalue("server_url") if first.mode == "server" else None
    timeout_s = SHELL_TIMEOUT_S["slow" if first.mode == "slow" else "fast"]
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in chain:
        code = _pointed(block.body, url)
        if block.language == "python":
            _run_python(block, code, namespace)
        else:
            _run_bash(block, code, scratch, timeout_s)
