"""The documented path on CPU, through TRL's own trainers: collect -> sft -> grpo-data -> SFT -> GRPO.

The model is a tiny random Qwen2 with a tokenizer trained on the data (aaos.training.models): nothing is
downloaded. It learns nothing useful in two steps, so its answers are not valid actions; the runs prove that
the datasets, reward_fn and OrgEnvironment go through TRL's real code path, not that the model improves.
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT

from aaos.cli import main as cli
from aaos.training import INVALID_REWARD

pytestmark = pytest.mark.slow  # TRL's trainers on a tiny model, two steps each

pytest.importorskip("torch", reason="torch is in the optional [train] extra")
pytest.importorskip("trl", reason="trl is in the optional [train] extra")


SMOKE = ["--max-steps", "2", "--batch-size", "2", "--num-generations", "2", "--max-completion-length", "16"]
"""Two GRPO steps of two completions (one group), short completions: the documented smoke run."""


def example(name: str) -> Callable[[list[str]], int]:
    """The main() of examples/<name>.py."""
    spec = importlib.util.spec_from_file_location(f"aaos_example_{name}", REPO_ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


def logged(model_dir: Path) -> tuple[int, list[dict[str, Any]]]:
    state = json.loads((model_dir / "trainer_state.json").read_text(encoding="utf-8"))
    return state["global_step"], [entry for entry in state["log_history"] if "loss" in entry]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """docs/training.md's first steps: a short champion episode, its SFT rows and its GRPO prompts."""
    folder = tmp_path_factory.mktemp("train")
    episodes = str(folder / "episodes.jsonl")
    assert cli(["collect", "--task", "org_simulation", "--scenario", "product_launch_failure", "--episodes", "1",
                "--out", episodes]) == 0
    assert cli(["replay", episodes]) == 0
    assert cli(["sft", episodes, "--out", str(folder / "sft.jsonl")]) == 0
    assert cli(["grpo-data", episodes, "--out", str(folder / "grpo.jsonl")]) == 0
    return folder


def test_sft_then_grpo_two_steps_each_on_cpu(data: Path) -> None:
    sft_model, grpo_model = data / "sft-model", data / "grpo-model"
    assert example("sft")(["--data", str(data / "sft.jsonl"), "--out", str(sft_model), "--max-steps", "2",
                           "--batch-size", "2", "--max-length", "1024"]) == 0
    steps, logs = logged(sft_model)
    assert steps == 2 and all(math.isfinite(entry["loss"]) for entry in logs)

    assert example("grpo")(["--data", str(data / "grpo.jsonl"), "--model", str(sft_model), "--out",
                            str(grpo_model), *SMOKE]) == 0
    steps, logs = logged(grpo_model)
    assert steps == 2 and len(logs) == 2
    for entry in logs:  # reward_fn scored every completion; an untrained model gives no valid action
        assert entry["rewards/reward_fn/mean"] == INVALID_REWARD and entry["completions/mean_length"] > 0
    assert (grpo_model / "model.safetensors").exists() and (grpo_model / "tokenizer.json").exists()


def test_grpo_with_the_environment_factory_two_steps_on_cpu(data: Path) -> None:
    out = data / "grpo-env-model"
    assert example("grpo")(["--data", str(data / "grpo.jsonl"), "--environment", "--out", str(out), *SMOKE]) == 0
    steps, logs = logged(out)
    assert steps == 2
    for entry in logs:  # OrgEnvironment.get_reward scored every rollout; the tiny model called no tool
        assert entry["rewards/OrgEnvironment/mean"] == INVALID_REWARD and entry["tools/call_frequency"] == 0
