"""What the benchmark can run: named policy specs, and building a fresh policy from one per episode."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Literal

import aaos
from aaos.agents.advisor import GuardedAdvisor
from aaos.agents.base import Policy
from aaos.agents.llm import LLMConfig, LLMPolicy

Kind = Literal["noop", "random", "heuristic", "oracle", "llm", "guarded"]
BASELINES: tuple[str, ...] = ("noop", "random", "heuristic", "oracle")
"""Rule-based policies by aaos.policies name; "oracle" reads hidden state: a reference row, never an agent."""


@dataclass(frozen=True)
class PolicySpec:
    """A policy as the benchmark names it: a baseline, a model (with an optional secondary model), or a
    model advising the champion under guardrails."""

    name: str
    kind: Kind
    model: LLMConfig | None = None
    secondary: LLMConfig | None = field(default=None)

    def __post_init__(self) -> None:
        if self.kind in ("llm", "guarded") and self.model is None:
            raise ValueError(f"policy {self.name!r} of kind {self.kind!r} needs a model configuration")

    def describe(self) -> dict[str, str | None]:
        """What a result file may say about the policy (never the token)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "model": self.model.model if self.model else None,
            "base_url": self.model.base_url if self.model else None,
            "secondary_model": self.secondary.model if self.secondary else None,
        }


def baseline(name: str) -> PolicySpec:
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; choose one of: {', '.join(BASELINES)}")
    return PolicySpec(name, name)  # type: ignore[arg-type]


def build_policy(spec: PolicySpec, env: str, seed: int, call_limit: asyncio.Semaphore | None = None) -> Policy:
    """A fresh policy for one episode."""
    if spec.kind in BASELINES:
        return aaos.policies.make(spec.kind, seed=seed, env=env)
    assert spec.model is not None
    model = LLMPolicy(aaos.spec(env), spec.model, spec.secondary, call_limit)
    return model if spec.kind == "llm" else GuardedAdvisor(model)
