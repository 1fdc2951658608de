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


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # what an install without the llm extra imports
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'aaos\[llm\]'"):
        LLMPolicy(aaos.spec(), LLMConfig("some-model", "http://127.0.0.1:9/v1"))
    with pytest.raises(DependencyNotInstalled, match=r"'space' extra"):
        require("no_such_module_aaos", "space")


def test_a_dependency_missing_inside_an_installed_extra_is_not_blamed_on_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "aaos_installed_extra"
    package.mkdir()
    (package / "__init__.py").write_text("import aaos_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as raised:
        require("aaos_installed_extra", "llm")
    assert type(raised.value) is ModuleNotFoundError and raised.value.name == "aaos_no_such_dependency"
