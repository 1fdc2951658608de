"""AAOS as Inspect AI tasks: `inspect eval` plays the benchmark's episodes with any model Inspect can reach, and
`inspect view` shows each one.

    inspect eval aaos/bench --model openai/gpt-4o-mini -T env=inbox        # aaos installed with [inspect]
    inspect eval aaos/evals/inspect_tasks.py@bench --model ...              # the same from a checkout
    inspect eval aaos/bench --model llama-cpp-python/SmolLM2-135M-Instruct    # the local model's server, started
        --model-base-url http://127.0.0.1:8765/v1 -T response_format=json_object --max-tokens 96   # on 8765

An OpenAI-compatible server takes `--model openai-api/NAME/MODEL` (its key from NAME_API_KEY): Inspect's `openai/`
provider takes a model name it does not know for OpenAI's newest (Responses API, no temperature).

One sample per episode (env, task, scenario, seed): the episodes `aaos bench` plays for the same tasks, scenarios,
split and episode count (aaos.bench.runner.plan_jobs). The solver plays each as the benchmark does
(aaos.bench.runner.run_episode) with the benchmark's model agent (aaos.agents.llm.LLMPolicy: the same prompts, in
per-role mode each role's own view, the answer constrained to the role's legal actions, validated, one repair turn,
each fallback counted), its model calls made through Inspect's model; each call's prompt and answer are the
sample's conversation. The score is the environment's final score, with the record `aaos bench` writes for the
episode (reward components, penalty, violations, split, the holdout salt's fingerprint, decisions per tier) as its
metadata.

The holdout salt is never a task argument, since Inspect writes every task argument into the log: `salt_env` names
the environment variable that holds it (AAOS_HOLDOUT_SALT by default), and the log carries only its fingerprint.
"""

from __future__ import annotations

import os
from typing import Any, Literal, get_args

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig

import aaos
from aaos.agents.llm import MODES, Decoding, Mode, ResponseFormat
from aaos.bench.paired import DEFAULT_EPISODES
from aaos.bench.runner import Job, episode_split, plan_jobs, scenario_split, versions
from aaos.core.seeding import HOLDOUT_SALT_ENV, salt_fingerprint
from aaos.core.spec import Split
from aaos.evals.episode import Fallback, episode_score, play_episode

SplitChoice = Literal["train", "holdout", "both"]
SPLITS: dict[str, tuple[Split, ...]] = {"train": ("train",), "holdout": ("holdout",), "both": ("train", "holdout")}
GENERATION = GenerateConfig(temperature=0.0, max_tokens=200, seed=0)
"""The benchmark's model settings (aaos.agents.llm.LLMConfig's defaults); Inspect's --temperature, --max-tokens and
--seed override them."""


@task
def bench(env: str = aaos.DEFAULT_ENV, task: str | list[str] | None = None, scenario: str | list[str] | None = None,
          split: SplitChoice = "holdout", episodes: int = DEFAULT_EPISODES, salt_env: str = HOLDOUT_SALT_ENV,
          policy: str | None = None, mode: Mode = "per_role", response_format: ResponseFormat = "json_schema",
          decoding: Decoding = "legal", fallback: Fallback = "champion") -> Task:
    """The AAOS benchmark of environment `env` as an Inspect task, one sample per episode.

    Args:
        env: the environment id (aaos.env_ids()).
        task: the task ids, one or a list (default: every task of the environment).
        scenario: the scenario ids or scenario files (*.json), one or a list (default: every built-in scenario).
        split: "holdout", "train" or "both": the seeds played; a holdout scenario gets holdout seeds only.
        episodes: seeds per split for each task and scenario.
        salt_env: the environment variable holding the holdout salt (its value is never a task argument, so
            never in the log); unset or empty: the public holdout.
        policy: a rule-based policy to play instead of the model (noop, random, heuristic, oracle): the
            benchmark's reference rows (with --model none).
        mode: "per_role" (one call per role, each seeing only its own view), "joint" or "compact".
        response_format: "json_schema" (Inspect's structured output, portable across providers), "json_object"
            (the request `aaos bench` sends an OpenAI-compatible server such as llama.cpp) or "none" (prompt only).
        decoding: in compact mode, "legal" (every legal call) or "safe" (those the environment's guardrail admits).
        fallback: who acts for a role whose answers stayed invalid: "champion" (as `aaos bench`) or "noop"
            (the score is the model's own); either way counted in the record's decisions.
    """
    if env not in aaos.env_ids():
        raise ValueError(f"-T env={env!r} is not an environment; choose one of: {', '.join(aaos.env_ids())}")
    tasks = _chosen("task", task, [str(t["id"]) for t in aaos.list_tasks(env=env)])
    scenarios = _scenarios(scenario, env)
    _check("split", split, SPLITS)
    _check("mode", mode, MODES)
    _check("response_format", response_format, get_args(ResponseFormat))
    _check("decoding", decoding, get_args(Decoding))
    _check("fallback", fallback, get_args(Fallback))
    if policy is not None:
        _check("policy", policy, aaos.policies.available(env))
    if not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"-T episodes={episodes!r}: give the number of seeds per split, 1 or more")
    if mode == "compact" and response_format == "json_schema":
        raise ValueError("-T mode=compact answers with a positional array that Inspect's response schema cannot "
                         "express: add -T response_format=json_object (an OpenAI-compatible server such as "
                         "llama.cpp) or -T response_format=none")
    salt = os.environ.get(salt_env, "")
    if salt_env != HOLDOUT_SALT_ENV and not salt:
        raise ValueError(f"-T salt_env={salt_env}: that environment variable is not set; set it to the holdout "
                         f"salt, or leave salt_env out to read {HOLDOUT_SALT_ENV}")
    jobs = plan_jobs([policy or "model"], tasks, scenarios, episodes, SPLITS[split], env)
    return Task(dataset=MemoryDataset([_sample(job) for job in jobs], name=f"aaos-{env}"),
                solver=play_episode(env, policy, mode, response_format, decoding, fallback, salt_env),
                scorer=episode_score(), config=GENERATION, display_name=f"aaos {env}",
                metadata={"env": env, **versions(env), "split": split, "holdout_salt": salt_fingerprint(salt)})


def _check(name: str, value: object, choices: Any) -> None:
    if value not in choices:
        raise ValueError(f"-T {name}={value!r} is not one of: {', '.join(map(str, choices))}")


def _chosen(name: str, value: str | list[str] | None, every: list[str]) -> list[str]:
    """`value` as a list (Inspect passes a comma-separated -T value as one), every choice when None."""
    chosen = every if value is None else [value] if isinstance(value, str) else [str(v) for v in value]
    for one in chosen:
        _check(name, one, every)
    return chosen


def _scenarios(value: str | list[str] | None, env: str) -> list[str]:
    """The scenarios asked for: built-in ids or scenario files (an invalid file raises ValueError saying why)."""
    built_in = [str(s["id"]) for s in aaos.list_scenarios(env=env)]
    chosen = built_in if value is None else [value] if isinstance(value, str) else [str(v) for v in value]
    unknown = [one for one in chosen if scenario_split(one, env) is None]
    if unknown:
        raise ValueError(f"-T scenario: {', '.join(unknown)} is neither a scenario of {env} ({', '.join(built_in)}) "
                         "nor a scenario file (*.json) of it")
    return chosen


def _sample(job: Job) -> Sample:
    description = next(t["description"] for t in aaos.list_tasks(env=job.env) if t["id"] == job.task)
    return Sample(
        id=f"{job.task}|{job.scenario}|{job.seed}",
        input=(f"AAOS {job.env}, task {job.task} ({description}), scenario {job.scenario}, seed {job.seed}: every "
               "role acts on its own view each step until the episode ends."),
        metadata={"env": job.env, "task": job.task, "scenario": job.scenario, "seed": job.seed,
                  "split": episode_split(job)},
    )


