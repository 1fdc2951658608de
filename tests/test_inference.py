"""inference.py: the exact [START]/[STEP]/[END] lines, in process, against the real server, and under faults (a
closed port, the FAULT-INJECTING FAKE endpoint): a model failure is flagged and never credited as the model's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_openai import Script, free_port, serve
from helpers import REPO_ROOT, play

from aaos.agents.llm import fix_hint
from aaos.server.app import create_app
from aaos.server.background import BackgroundServer

START = re.compile(r"^\[START\] task=(?P<task>\w+) env=aaos model=(?P<model>\S+)$")
STEP = re.compile(r"^\[STEP\] step=(?P<step>\d+) action=(?P<action>\{.*\}) reward=(?P<reward>-?\d+\.\d{2}) "
                  r"done=(?P<done>true|false) error=(?P<error>.+)$")
END = re.compile(r"^\[END\] success=(?P<success>true|false) steps=(?P<steps>\d+) score=(?P<score>\d\.\d{3}) "
                 r"rewards=(?P<rewards>(-?\d+\.\d{2}(,-?\d+\.\d{2})*)?)$")
TASKS = ["org_simulation", "crisis_management", "full_episode"]


def run_inference(**env: str) -> subprocess.CompletedProcess[str]:
    variables = {k: v for k, v in os.environ.items() if k not in ("MODEL_NAME", "ENV_BASE_URL", "HF_TOKEN")}
    variables.update(PYTHONPATH=str(REPO_ROOT), **env)
    return subprocess.run([sys.executable, "inference.py"], cwd=REPO_ROOT, env=variables, capture_output=True,
                          text=True, timeout=600, check=True)


def episodes(stdout: str) -> Iterator[tuple[dict[str, str], list[dict[str, str]], dict[str, str]]]:
    """Every line matched strictly; yields (start, steps, end) per episode."""
    lines = stdout.splitlines()
    index = 0
    while index < len(lines):
        start = START.match(lines[index])
        assert start, lines[index]
        index += 1
        steps = []
        while index < len(lines) and lines[index].startswith("[STEP]"):
            step = STEP.match(lines[index])
            assert step, lines[index]
            steps.append(step.groupdict())
            index += 1
        end = END.match(lines[index])
        assert end, lines[index]
        index += 1
        yield start.groupdict(), steps, end.groupdict()


def check_episode(steps: list[dict[str, str]], end: dict[str, str], threshold: float = 0.7) -> None:
    assert [int(s["step"]) for s in steps] == list(range(1, len(steps) + 1))
    assert int(end["steps"]) == len(steps)
    assert [s["done"] for s in steps] == ["false"] * (len(steps) - 1) + ["true"]
    assert end["rewards"].split(",") == [s["reward"] for s in steps]
    assert end["success"] == str(float(end["score"]) >= threshold).lower()
    for step in steps:
        assert set(json.loads(step["action"])) <= {"product_manager", "engineer", "data_analyst", "risk_compliance",
                                                    "operations", "oversight"}


def champion_episode(task: str, scenario: str = "product_launch_failure", seed: int = 42) -> tuple[list[float], float]:
    """The champion's rewards and final score on inference.py's default episode, played in process."""
    episode = play(task, scenario, seed, "heuristic")
    return episode.rewards, episode.score


def test_champion_in_process_prints_exact_lines() -> None:
    done = run_inference()
    assert "MODEL_NAME is not set" in done.stderr
    played = list(episodes(done.stdout))
    assert [start["task"] for start, _, _ in played] == TASKS
    for start, steps, end in played:
        assert start["model"] == "heuristic-champion"
        check_episode(steps, end)
        assert all(s["error"] == "null" for s in steps)
        rewards, score = champion_episode(start["task"])
        assert end["rewards"].split(",") == [f"{r:.2f}" for r in rewards] and end["score"] == f"{score:.3f}"
        assert sum(rewards) == pytest.approx(score, abs=1e-9)  # rewards are increments of the score: return = score
    assert [end["success"] for _, _, end in played[:2]] == ["true", "true"]  # the hard task leaves headroom
    assert len(played[2][1]) == 50  # full_episode always runs to max_steps


def test_against_the_real_server_the_lines_are_identical() -> None:
    local = run_inference(RUN_SEED="7", MAX_STEPS="12")
    with BackgroundServer(create_app()) as server:
        remote = run_inference(RUN_SEED="7", MAX_STEPS="12", ENV_BASE_URL=server.url)
    assert remote.stdout == local.stdout
    for _, steps, end in episodes(remote.stdout):
        check_episode(steps, end)
        assert len(steps) <= 12


def test_an_unreachable_model_is_flagged_stopped_and_never_credited(tmp_path: Path) -> None:
    model, token = "Qwen/Qwen2.5-7B-Instruct", "hf_" + "x" * 30
    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    done = run_inference(MODEL_NAME=model, API_BASE_URL=closed, HF_TOKEN=token, OUTPUT=str(tmp_path / "out.json"))
    played = list(episodes(done.stdout))
    assert [start["model"] for start, _, _ in played] == [model] * 3
    for start, steps, end in played:
        check_episode(steps, end)
        [step] = steps  # every call of the first step failed: the episode stops there
        assert step["error"] == "fallback:APIConnectionError (6 of 6 actions)"
        rewards, _ = champion_episode(start["task"])
        assert step["reward"] == f"{rewards[0]:.2f}"  # the champion played that step...
        assert (end["success"], end["score"]) == ("false", "0.000")  # ...and its score is not the model's
        assert f"{start['task']} stopped after step 1: every model call of the first step failed" in done.stderr
    results = json.loads((tmp_path / "out.json").read_text())
    assert results["mean_score"] == 0.0
    for task in results["tasks"]:
        assert task["score"] == 0.0 and task["played_score"] > 0 and not task["success"]
        assert task["decisions"] == {"primary": 0, "secondary": 0, "champion": 6}
        assert task["not_credited"].startswith("6 of 6 actions (100 %) were decided by fallbacks")
    *_, plainly, count = done.stderr.splitlines()
    assert plainly.startswith("inference.py: the model produced no action at all; no score is credited to it.")
    assert f"{model}: APIConnectionError: Connection error. Fix: {fix_hint('APIConnectionError')}" in plainly
    assert count == (f"inference.py: {model}: 0 of 18 actions were the model's own, 18 were fallbacks; "
                     "0 of 3 episodes credited to the model")
    assert token not in done.stdout + done.stderr + (tmp_path / "out.json").read_text()


@pytest.mark.parametrize(("answered", "credited"), [(6, False), (12, True)])
def test_steps_decided_by_fallbacks_say_so_and_mostly_fallbacks_earn_no_credit(tmp_path: Path, answered: int,
                                                                                credited: bool) -> None:
    """The fake answers the first `answered` calls (one step is six), then fails every call: of three steps, the
    model decides one (a third of the actions: not credited) or two (credited)."""
    with serve(Script(modes=["ok"] * answered + ["server_error"])) as url:
        done = run_inference(MODEL_NAME="fake-model", API_BASE_URL=url, TASK="org_simulation", MAX_STEPS="3",
                             OUTPUT=str(tmp_path / "out.json"))
    [(_, steps, end)] = episodes(done.stdout)
    check_episode(steps, end)
    model_steps = answered // 6
    assert [s["error"] for s in steps] == ["null"] * model_steps + [
        "fallback:InternalServerError (6 of 6 actions)"] * (3 - model_steps)
    [task] = json.loads((tmp_path / "out.json").read_text())["tasks"]
    assert task["decisions"] == {"primary": answered, "secondary": 0, "champion": 18 - answered}
    assert task["error"] is None  # the first step was the model's: the episode ran on
    assert end["score"] == (f"{task['played_score']:.3f}" if credited else "0.000")
    assert (task["not_credited"] is None) == credited
    assert f"org_simulation: the model decided {answered} of 18 actions" in done.stderr
    assert done.stderr.splitlines()[-1] == (f"inference.py: fake-model: {answered} of 18 actions were the model's "
                                            f"own, {18 - answered} were fallbacks; {int(credited)} of 1 episodes "
                                            "credited to the model")


@pytest.mark.parametrize("url", ["http://127.0.0.1:9"])
def test_end_is_printed_even_when_the_episode_cannot_start(url: str) -> None:
    done = run_inference(ENV_BASE_URL=url)
    played = list(episodes(done.stdout))
    assert len(played) == 3
    for _, steps, end in played:
        assert steps == [] and end == {"success": "false", "steps": "0", "score": "0.000", "rewards": ""}
    assert "stopped" in done.stderr
