"""The agents a run can use in the Space — the baselines, the local SmolLM2-135M model and any OpenAI-compatible
model — with their settings and the accounting of a model's calls. Plain Python; no gradio.

The API token a user types lives only in the LLMConfig of that tab's run or benchmark (its repr leaves the token
out); nothing here keeps, logs or writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aaos.agents import local_model
from aaos.agents.llm import LLMConfig, Mode, fallbacks, fix_hint, stats_delta
from aaos.core.policy import Policy
from aaos.policies import DEFAULT_BASE_URL, PolicySpec, baseline, build_policy, display_name
from aaos.ui import names, prose

CHAMPION = "heuristic"
"""The environment's champion: the rule-based agent an episode's score is judged against."""
LOCAL_LABEL, LOCAL_UNTRAINED_LABEL = names.FINE_TUNED, names.UNTRAINED
AGENTS: tuple[tuple[str, str], ...] = (
    (display_name(CHAMPION), CHAMPION),
    (display_name("random"), "random"),
    (LOCAL_LABEL, "local"),
    (LOCAL_UNTRAINED_LABEL, "local-untrained"),
    ("OpenAI-compatible model", "openai"),
)
"""What the Run button offers: (label, name); the baselines' names are aaos.policies names, and every label is the
policy's one display name (aaos.ui.names)."""
LOCAL_AGENTS: tuple[str, ...] = ("local", "local-untrained")
"""The local model fine-tuned for the environment (where the project ships an adapter), and as the wheel ships it."""
MODEL_AGENTS: tuple[str, ...] = (*LOCAL_AGENTS, "openai")
MODES: tuple[tuple[str, str], ...] = tuple((label, mode) for mode, label in prose.MODE_LABELS.items())
MODEL_EXAMPLE = "Qwen/Qwen2.5-7B-Instruct"


def label(name: str) -> str:
    return {n: lbl for lbl, n in AGENTS}.get(name, name)


def choices() -> list[tuple[str, str]]:
    """The Agent list as the page shows it: a local agent says "not installed" where its runtime is missing."""
    missing = local_model.missing() is not None
    return [(f"{lbl} (not installed)" if missing and name in LOCAL_AGENTS else lbl, name) for lbl, name in AGENTS]


def local_problem() -> str | None:
    """Why the local model cannot run here (with how to install it), or None."""
    problem = local_model.missing()
    return None if problem is None else prose.LOCAL_MISSING.format(problem=problem)


def describe(name: str) -> tuple[str, str]:
    """What an agent is, and its kind: "info", or "error" when it cannot run here."""
    problem = local_problem() if name in LOCAL_AGENTS else None
    return (problem, "error") if problem else (prose.AGENTS.get(name, ""), "info")


def reads_mode(name: str, env: str) -> bool:
    """Whether an agent reads the Mode of Model settings: a model does, but the local model fine-tuned for `env`
    (its adapter's compact prompt is fixed)."""
    return name in MODEL_AGENTS and not (name == "local" and local_model.trained_adapter(env) is not None)


def endpoint(model: str | None, base_url: str | None, token: str | None, mode: str) -> LLMConfig | str:
    """The OpenAI-compatible model the user described, or a message saying what to fix."""
    model, base_url = (model or "").strip(), (base_url or "").strip()
    if not model:
        return f"Enter a model name under Model settings (for example {MODEL_EXAMPLE})."
    if not base_url.startswith(("http://", "https://")):
        return ("The base URL under Model settings must start with http:// or https:// "
                f"(for example {DEFAULT_BASE_URL}).")
    if mode not in dict(MODES).values():
        return "Choose a mode under Model settings: per role or joint."
    chosen: Mode = "joint" if mode == "joint" else "per_role"
    return LLMConfig(model=model, base_url=base_url.rstrip("/"), api_key=(token or "").strip(), mode=chosen)


def start_local(name: str, env: str, mode: Mode) -> LLMConfig:
    """The config of a local agent (LOCAL_AGENTS) for the environment, starting its server if it is not running
    (slow; raises RuntimeError)."""
    return local_model.local_config(env, mode, trained=name == "local")


def build(name: str, seed: int, env: str, config: LLMConfig | None) -> Policy:
    """A fresh policy for a run: the model of `config` if given, else the named baseline."""
    spec = PolicySpec(name, "llm", config) if config is not None else baseline(name)
    return build_policy(spec, env, seed)


def call_stats(policy: Policy) -> dict[str, Any] | None:
    """A model-backed policy's accounting so far (CallStats.to_dict()), or None for the others."""
    stats = getattr(policy, "stats", None)
    return stats.to_dict() if stats is not None else None


@dataclass(frozen=True)
class ModelUsage:
    """A model-backed run's accounting after its latest step: totals so far, and what that step used."""

    model: str
    mode: Mode
    total: dict[str, Any]
    step: dict[str, Any]
    step_s: float
    taken: bool = True
    """Whether the latest step was taken (not when the model decided none of its actions)."""


def usage(config: LLMConfig, before: dict[str, Any], after: dict[str, Any], step_s: float) -> ModelUsage:
    """The usage after a step, from the policy's accounting before and after it."""
    return ModelUsage(config.model, config.mode, after, stats_delta(before, after), step_s)


@dataclass(frozen=True)
class Failure:
    """A model step in which some actions fell back (to the secondary model or the champion): how many of how many,
    the last error ("ErrorType: message", the token never in it) and a one-line fix for its class."""

    fell_back: int
    actions: int
    error: str
    hint: str

    @property
    def total(self) -> bool:
        """The model decided no action of the step."""
        return self.fell_back == self.actions


def step_failure(usage: ModelUsage, token: str = "") -> Failure | None:
    """What failed in the step `usage` accounts for, or None if the model decided every action."""
    decided = usage.step["decisions"]
    actions, fell_back = sum(decided.values()), fallbacks(decided)
    if not fell_back:
        return None
    error = str(usage.total.get("last_error") or "no answer")
    error = error.removeprefix(f"{usage.model}: ").rstrip(". ")
    if token:
        error = error.replace(token, "[token]")
    return Failure(fell_back, actions, error, fix_hint(usage.total.get("last_error_type")))
