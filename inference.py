"""Baseline runner: plays an environment's tasks and prints the strict [START]/[STEP]/[END] log lines.

    python inference.py                       # every task of the default environment
    python inference.py --env toy --task all  # any registered environment (AAOS_ENVS=toy=module:KIT adds one)

Options (each also read from a variable):
    --env ID           environment id (ENV_NAME; default: aaos.DEFAULT_ENV)
    --task ID|all      one task, or all of the environment's tasks in its order (TASK; default all)
    --output PATH      also write every episode's result (score, components, steps, rewards) as JSON (OUTPUT)
    --verbose          also say each step's score and components on stderr (stdout keeps the strict lines)

Environment variables:
    API_BASE_URL       OpenAI-compatible endpoint (default https://router.huggingface.co/v1)
    MODEL_NAME         model to run; when unset the heuristic champion plays (said on stderr)
    HF_TOKEN           API token (never printed)
    AGENT_MODE         per_role (default) or joint
    RESPONSE_FORMAT    json_schema (default), json_object (llama.cpp) or none
    ENV_BASE_URL       an AAOS server to play against over HTTP; in process when unset
    SCENARIO           scenario id (default: the environment's default scenario)
    RUN_SEED           seed (default 42)
    MAX_STEPS          cap on steps per episode (default: the task's own max_steps)
    SUCCESS_THRESHOLD  score needed for success=true (default 0.7)

Output, per task:
    [START] task=<task> env=aaos model=<model>
    [STEP] step=<n> action=<json> reward=<0.00> done=<true|false> error=<msg|null>   (reward signed: -0.05)
    [END] success=<true|false> steps=<n> score=<0.000> rewards=<r1,r2,...>
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aaos
from aaos.agents.base import Policy
from aaos.agents.llm import LLMConfig
from aaos.bench.policies import PolicySpec, baseline, build_policy
from aaos.bench.stats import SUCCESS_THRESHOLD
from aaos.core.env import Environment, JointAction, StepResult
from aaos.core.spec import EnvSpec

ALL_TASKS = "all"


@dataclass
class Outcome:
    """One task's episode, as the results file records it."""

    task: str
    model: str
    steps: int = 0
    score: float = 0.0
    success: bool = False
    rewards: list[float] = field(default_factory=list)
    components: dict[str, float | None] = field(default_factory=dict)
    penalty: float = 0.0
    error: str | None = None
    """Why the episode stopped before it was done, or None."""


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def step_error(info: dict[str, Any]) -> str | None:
    """The first problem of a step (a joint-action error or a rejected action), on one line."""
    problems = list(info.get("errors", []))
    problems += [f"{r['role']}: {r['message']}" for r in info["action_results"].values() if r["status"] == "rejected"]
    return one_line(problems[0]) if problems else None


class RemoteEpisode:
    """An episode on an AAOS server (ENV_BASE_URL) through the typed OpenEnv client, with the in-process
    environment's reset/step shapes."""

    def __init__(self, base_url: str) -> None:
        from aaos.server.client import AAOSEnv  # the client's dependencies load only when a server is used

        self._client = AAOSEnv(base_url=base_url).sync()
        self._client.__enter__()

    def reset(self, env: str, task: str, scenario: str, seed: int) -> dict[str, Any]:
        return self._client.reset(env=env, task=task, scenario=scenario, seed=seed).observation.env_observation()

    def step(self, joint: JointAction) -> StepResult:
        result = self._client.step(joint)
        observation = result.observation
        return StepResult(observation.env_observation(), result.reward or 0.0, result.done, observation.info)

    def close(self) -> None:
        self._client.__exit__(None, None, None)


def model_config() -> LLMConfig | None:
    return LLMConfig.from_env(mode=os.environ.get("AGENT_MODE", "per_role"),
                              response_format=os.environ.get("RESPONSE_FORMAT", "json_schema"))


def make_policy(config: LLMConfig | None, env: str, seed: int) -> tuple[Policy, str]:
    """The environment's champion without a model configured, else the model."""
    if config is None:
        return build_policy(baseline("heuristic"), env, seed), "heuristic-champion"
    return build_policy(PolicySpec(f"llm:{config.model}", "llm", config), env, seed), config.model


def play(config: LLMConfig | None, env_id: str, task: str, scenario: str, seed: int, max_steps: int | None,
         threshold: float, verbose: bool = False) -> Outcome:
    policy, model = make_policy(config, env_id, seed)
    base_url = os.environ.get("ENV_BASE_URL", "").strip()
    outcome = Outcome(task, model)
    print(f"[START] task={task} env=aaos model={model}", flush=True)
    remote: RemoteEpisode | None = None
    try:
        if base_url:
            remote = RemoteEpisode(base_url)
            observation = remote.reset(env_id, task, scenario, seed)
            env: RemoteEpisode | Environment = remote
        else:
            env = aaos.make(task, scenario=scenario, seed=seed, env=env_id)
            observation = env.reset()
            policy.bind(env)
        while True:
            joint = policy.act(observation)
            result = env.step(joint)
            observation = result.observation
            outcome.steps += 1
            outcome.rewards.append(result.reward)
            outcome.score = result.info["score"]
            breakdown = result.info["reward_breakdown"]
            outcome.components, outcome.penalty = dict(breakdown["components"]), breakdown["penalty"]
            done = result.done or (max_steps is not None and outcome.steps >= max_steps)
            error = step_error(result.info)
            print(f"[STEP] step={outcome.steps} action={json.dumps(joint, separators=(',', ':'), sort_keys=True)} "
                  f"reward={result.reward:.2f} done={str(done).lower()} error={error or 'null'}", flush=True)
            if verbose:
                parts = " ".join(f"{k}={'-' if v is None else f'{v:.3f}'}" for k, v in outcome.components.items())
                print(f"inference.py: {task} step {outcome.steps} score={outcome.score:.3f} {parts} "
                      f"penalty={outcome.penalty:.3f}", file=sys.stderr)
            if done:
                break
    except Exception as error:  # the END line is printed whatever happened
        outcome.error = one_line(f"{type(error).__name__}: {error}")
        print(f"inference.py: {task} stopped: {outcome.error}", file=sys.stderr)
    finally:
        policy.close()
        if remote is not None:
            remote.close()
        outcome.success = outcome.score >= threshold
        print(f"[END] success={str(outcome.success).lower()} steps={outcome.steps} score={outcome.score:.3f} "
              f"rewards={','.join(f'{r:.2f}' for r in outcome.rewards)}", flush=True)
    return outcome


def write_results(path: Path, spec: EnvSpec, scenario: str, seed: int, threshold: float,
                  outcomes: Sequence[Outcome]) -> None:
    """The results file: the run's settings, then one entry per task."""
    results = {
        "env": spec.id, "env_version": spec.version, "reward_version": spec.reward_version, "scenario": scenario,
        "seed": seed, "success_threshold": threshold,
        "mean_score": round(sum(o.score for o in outcomes) / len(outcomes), 6) if outcomes else 0.0,
        "tasks": [asdict(o) for o in outcomes],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="inference.py", description="Play an environment's tasks and print the "
                                                                      "[START]/[STEP]/[END] lines.")
    parser.add_argument("--env", default=os.environ.get("ENV_NAME") or aaos.DEFAULT_ENV,
                        help=f"environment id (ENV_NAME; default {aaos.DEFAULT_ENV})")
    parser.add_argument("--task", default=os.environ.get("TASK") or ALL_TASKS,
                        help="a task id of the environment, or 'all' for every task (TASK; default all)")
    parser.add_argument("--output", type=Path, default=os.environ.get("OUTPUT") or None,
                        help="write the episodes' results to this JSON file (OUTPUT)")
    parser.add_argument("--verbose", action="store_true",
                        help="say each step's score and components on stderr")
    args = parser.parse_args(argv)
    try:
        spec = aaos.spec(args.env)
        tasks = [t.id for t in spec.tasks] if args.task == ALL_TASKS else [spec.task(args.task).id]
    except ValueError as error:
        parser.error(str(error))
    scenario = os.environ.get("SCENARIO") or spec.default_scenario
    seed = int(os.environ.get("RUN_SEED", "42"))
    max_steps = int(os.environ["MAX_STEPS"]) if os.environ.get("MAX_STEPS") else None
    threshold = float(os.environ.get("SUCCESS_THRESHOLD", str(SUCCESS_THRESHOLD)))
    config = model_config()
    if config is None:
        print("inference.py: MODEL_NAME is not set; the heuristic champion plays.", file=sys.stderr)
    outcomes = [play(config, spec.id, task, scenario, seed, max_steps, threshold, args.verbose) for task in tasks]
    if args.output is not None:
        write_results(args.output, spec, scenario, seed, threshold, outcomes)
        print(f"inference.py: wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
