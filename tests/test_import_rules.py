"""The import rules of DESIGN.md section 2: the import-linter contracts in pyproject.toml hold (layers, the
benchmark without training, no environment importing another, a light core), `import aaos` with
make/reset/step loads no model client, web, UI or training stack, and code that needs a missing extra says which
one to install."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO_ROOT

import aaos
from aaos.agents.llm import LLMConfig, LLMPolicy
from aaos.core.extras import DependencyNotInstalled, require

HEAVY = ("openai", "gradio", "fastapi", "uvicorn", "plotly", "httpx", "fastmcp", "torch")
"""What aaos.make(...).reset()/step() must not load: each belongs to an extra."""


def test_the_import_linter_contracts_hold() -> None:
    done = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()",
                           "--no-cache"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_make_reset_and_step_load_no_heavy_stack() -> None:
    script = f"""
import json, sys
import aaos
for env_id in aaos.env_ids():
    env = aaos.make(env=env_id)
    observation = env.reset()
    env.step({{}})
    policy = aaos.policies.make("heuristic", env=env_id)
    env.step(policy.act(env.observation()))
print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_aaos_serve_builds_its_server_without_gradio() -> None:
    """openenv-core's server package imports its Gradio web interface whenever Gradio is installed (seconds of
    every `aaos serve` start); the API server never serves it, so Gradio stays unloaded."""
    script = """
import json, sys
import uvicorn
from aaos import cli
built = []
uvicorn.Server.run = lambda server, *args, **kwargs: built.append(server.config.app)
cli.main(["serve", "--port", "0"])
print(json.dumps([bool(built), "gradio" in sys.modules]))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [True, False]


def test_the_command_runs_without_the_extras_and_names_the_one_a_command_needs() -> None:
    blocked = (*HEAVY, "httpx2", "huggingface_hub", "tqdm", "openenv", "starlette", "transformers", "trl")
    script = f"""
import sys
for name in {blocked!r}:
    sys.modules[name] = None  # as on an install without the extras
import contextlib, io
from aaos.cli import main
assert main(["list"]) == 0
for command, extra in ((["serve"], "server"), (["train", "--out", "unused"], "train")):
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        status = main(command)
    assert status == 1 and f"pip install 'aaos[{{extra}}]'" in said.getvalue(), (command, status, said.getvalue())
print("named")
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "named"


def _package(folder: Path, name: str, body: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (folder / name).mkdir()
    (folder / name / "__init__.py").write_text(body)
    monkeypatch.syspath_prepend(str(folder))


def test_a_missing_extra_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # as on an install without the llm extra
    monkeypatch.setitem(sys.modules, "plotly", None)
    with pytest.raises(DependencyNotInstalled, match=r"openai is not installed; .*pip install 'aaos\[llm\]'"):
        LLMPolicy(aaos.spec(), LLMConfig("some-model", "http://127.0.0.1:9/v1"))
    _package(tmp_path, "aaos_charts_somewhere", "import plotly\n", monkeypatch)  # a module of ours needing an extra
    with pytest.raises(DependencyNotInstalled, match=r"plotly is not installed; it comes with the 'space' extra"):
        require("aaos_charts_somewhere", "space")  # the Space's extra includes the benchmark's
    with pytest.raises(ValueError, match="unknown extra 'spaces'"):
        require("json", "spaces")


def test_a_module_missing_from_no_extra_is_not_blamed_on_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _package(tmp_path, "aaos_broken_inside", "import aaos_no_such_dependency\n", monkeypatch)
    with pytest.raises(ModuleNotFoundError) as raised:
        require("aaos_broken_inside", "llm")
    assert type(raised.value) is ModuleNotFoundError and raised.value.name == "aaos_no_such_dependency"
