"""Baseline runner: plays an environment's tasks and prints the strict [START]/[STEP]/[END] log lines.

    python inference.py                       # every task of the default environment
    python inference.py --env toy --task all  # any registered environment (AAOS_ENVS=toy=module:KIT adds one)

Options (each also read from a variable):
    --env ID           environment id (ENV_NAME; default: aaos.DEFAULT_ENV)
    --task ID|all      one task, or all of the environment's tasks in its order (TASK; default all)
    --output PATH      also write every episode's result as JSON (OUTPUT): score (as credited), played_score,
                       components, steps, rewards and, with a model, decisions per tier, not_credited, model_error
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

A model failure never looks like the model's success:
  - a step in which a fallback (the secondary model or the champion) decided some roles' actions because the model's
    call failed or its answer stayed invalid says so first in its error field:
    error=fallback:<ErrorType> (<n> of <m> actions), followed by "; <the step's own error>" if it has one;
  - an episode in which more than FALLBACK_LIMIT (50 %) of the actions were fallbacks is not credited to the model:
    its [END] line says success=false score=0.000 (the rewards are still those the played actions earned), and
    stderr says why and what the played actions scored;
  - when every model call of the first step fails (an unreachable endpoint, a refused token), the episode stops
    after that step instead of letting the champion play it out;
  - stderr ends with the count of the model's own actions against the fallbacks, and a run in which the model
    produced no action at all says so with the last error (never the token) and a one-line fix.
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
from aaos.agents.llm import CallStats, LLMConfig, fallbacks, fix_hint, not_credited, stats_delta
from aaos.bench.stats import SUCCESS_THRESHOLD
from aaos.core.env import Environment, JointAction, StepResult
from aaos.core.policy import Policy
from aaos.core.spec import EnvSpec
from aaos.policies import PolicySpec, baseline, build_policy

ALL_TASKS = "all"


@dataclass
class Outcome:
    """One task's episode, as the results file records it."""

    task: str
    model: str
    steps: int = 0
    score: float = 0.0
    """The score the [END] line credits: the played score, or 0.0 when the episode is not credited to the model."""
    success: bool = False
    rewards: list[float] = field(default_factory=list)
    components: dict[str, float | None] = field(default_factory=dict)
    penalty: float = 0.0
    error: str | None = None
    """Why the episode stopped before it was done, or None."""
    played_score: float = 0.0
    """The environment's score of the actions played, whoever decided them."""
    decisions: dict[str, int] | None = None
    """With a model: how many actions each tier decided (primary: the model's own; secondary, champion: fallbacks)."""
    not_credited: str | None = None
    """Why the episode is not credited to the model (aaos.agents.llm.not_credited), or None."""
    model_error: str | None = None
    """The last model failure ("model: ErrorType: message"; never the token), or None."""
    model_error_type: str | None = None
    """Its class name (a key of aaos.agents.llm.FIX_HINTS), or None."""


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def step_error(info: dict[str, Any]) -> str | None:
    """The first problem of a step (a joint-action error or a rejected action), on one line."""
    problems = list(info.get("errors", []))
    problems += [f"{r['role']}: {r['message']}" for r in info["action_results"].values() if r["status"] == "rejected"]
    return one_line(problems[0]) if problems else None


def act_counted(policy: Policy, stats: CallStats | None,
                observation: dict[str, Any]) -> tuple[JointAction, dict[str, Any] | None]:
    """The policy's joint action and, when a model acts (`stats`: its CallStats), what its calls used for it
    (aaos.agents.llm.stats_delta); None without a model."""
    if stats is None:
        return policy.act(observation), None
    before = stats.to_dict()
    joint = policy.act(observation)
    return joint, stats_delta(before, stats.to_dict())


def fallback_note(used: dict[str, Any], error_type: str | None) -> str | None:
    """`fallback:<ErrorType> (<n> of <m> actions)` when fallbacks decided some of a step's actions (`used`: the step's
    aaos.agents.llm.stats_delta), else None."""
    decisions = used["decisions"]
    fell_back = fallbacks(decisions)
    if not fell_back:
        return None
    return f"fallback:{error_type or 'unknown'} ({fell_back} of {sum(decisions.values())} actions)"


def every_call_failed(used: dict[str, Any]) -> bool:
    """Whether a step's model calls (`used`: its stats_delta) all failed: none answered, retries included."""
    return used["calls"] > 0 and used["calls"] == used["failed_calls"] + used["http_retries"]


def credit(outcome: Outcome, stats: CallStats | None, threshold: float) -> None:
    """Settle the episode's score and success: the played score, unless a model played it and its actions were
    mostly fallbacks, which earns it success=false and score 0.0."""
    outcome.score = outcome.played_score
    if stats is not None:
        outcome.decisions = dict(stats.decisions)
        outcome.model_error, outcome.model_error_type = stats.last_error, stats.last_error_type
        outcome.not_credited = not_credited(outcome.decisions)
        if outcome.not_credited:
            outcome.score = 0.0
    outcome.success = outcome.not_credited is None and outcome.score >= threshold


def say_decisions(outcome: Outcome) -> None:
    """On stderr: who decided the episode's actions and, if it is not credited to the model, why."""
    if outcome.decisions is None:
        return
    decided = outcome.decisions
    line = (f"inference.py: {outcome.task}: the model decided {decided['primary']} of {sum(decided.values())} "
            f"actions ({decided['secondary']} fell back to the secondary model, {decided['champion']} to the champion)")
    if outcome.not_credited:
        line += (f"; not credited to the model ({outcome.not_credited}): [END] says success=false score=0.000, "
                 f"the played actions scored {outcome.played_score:.3f}")
    print(line, file=sys.stderr)


def say_totals(model: str, outcomes: Sequence[Outcome]) -> None:
    """The run's last stderr lines: whether the model produced any action at all (if not, its last error and the
    fix), then its own actions against the fallbacks."""
    decisions = [o.decisions for o in outcomes if o.decisions is not None]
    own = sum(d["primary"] for d in decisions)
    fell_back = sum(fallbacks(d) for d in decisions)
    if fell_back and not own:
        failed = next((o for o in reversed(outcomes) if o.model_error), None)
        why = (f"{one_line(failed.model_error).rstrip('.')}. Fix: {fix_hint(failed.model_error_type)}"
               if failed is not None and failed.model_error else "no model call succeeded")
        print(f"inference.py: the model produced no action at all; no score is credited to it. Last error: {why}",
              file=sys.stderr)
    credited = sum(o.not_credited is None for o in outcomes)
    print(f"inference.py: {model}: {own} of {own + fell_back} actions were the model's own, {fell_back} were "
          f"fallbacks; {credited} of {len(outcomes)} episodes credited to the model", file=sys.stderr)


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
    stats: CallStats | None = getattr(policy, "stats", None)
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
            joint, used = act_counted(policy, stats, observation)
            result = env.step(joint)
            observation = result.observation
            outcome.steps += 1
            outcome.rewards.append(result.reward)
            outcome.played_score = result.info["score"]
            breakdown = result.info["reward_breakdown"]
            outcome.components, outcome.penalty = dict(breakdown["components"]), breakdown["penalty"]
            stop = used is not None and outcome.steps == 1 and every_call_failed(used)
            done = result.done or (max_steps is not None and outcome.steps >= max_steps) or stop
            note = fallback_note(used, stats.last_error_type) if stats is not None and used is not None else None
            error = "; ".join(part for part in (note, step_error(result.info)) if part)
            print(f"[STEP] step={outcome.steps} action={json.dumps(joint, separators=(',', ':'), sort_keys=True)} "
                  f"reward={result.reward:.2f} done={str(done).lower()} error={error or 'null'}", flush=True)
            if stop and stats is not None:
                outcome.error = one_line(f"every model call of the first step failed ({stats.last_error})")
                print(f"inference.py: {task} stopped after step 1: {outcome.error}; the champion would have played "
                      "the rest", file=sys.stderr)
            if verbose:
                parts = " ".join(f"{k}={'-' if v is None else f'{v:.3f}'}" for k, v in outcome.components.items())
                print(f"inference.py: {task} step {outcome.steps} score={outcome.played_score:.3f} {parts} "
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
        credit(outcome, stats, threshold)
        say_decisions(outcome)
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
    if config is not None:
        say_totals(config.model, outcomes)


if __name__ == "__main__":
    main()
