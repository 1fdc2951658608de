"""Language-model agents over any OpenAI-compatible chat-completions endpoint.

Per-role mode asks one chat per role, each seeing only its own view, the six calls of a step
concurrently; joint mode asks one chat for all roles; compact mode is joint mode with the compact prompt
(aaos.agents.prompts.compact_messages) that a small fine-tuned model reads quickly, answered with each role's
action as a call (aaos.agents.prompts.compact_calls) that it writes quickly. Every answer is parsed
and validated against the spec and the role's legal actions; an invalid answer gets one repair turn quoting the error. A
role whose answer is still invalid falls to the next tier: the secondary model if configured, then
the environment's champion. Each tier's use is counted.

The API token is held only in the config object: it is excluded from its repr, never logged and never
written to results.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, get_args

from aaos.agents.baselines import NoopPolicy
from aaos.agents.prompts import (
    action_schema,
    compact_calls,
    compact_messages,
    compact_schema,
    joint_messages,
    joint_schema,
    repair_message,
    role_messages,
)
from aaos.core.actions import legal_problem
from aaos.core.env import JointAction, Observation
from aaos.core.extras import require
from aaos.core.policy import Action, Policy
from aaos.core.spec import EnvSpec
from aaos.envs import champion_of, has_champion, kit_of

if TYPE_CHECKING:
    import openai

ResponseFormat = Literal["json_schema", "json_object", "none"]
Mode = Literal["per_role", "joint", "compact"]
Decoding = Literal["legal", "safe"]
MODES: tuple[Mode, ...] = get_args(Mode)
TIERS = ("primary", "secondary", "champion")
LAST_ERROR_CHARS = 300
FIX_HINTS: dict[str, str] = {
    "APIConnectionError": "the endpoint could not be reached: check the base URL and that the server is running",
    "APITimeoutError": "the endpoint did not answer in time: check that it is up, or raise the timeout",
    "AuthenticationError": "the endpoint refused the token: check HF_TOKEN (or the token box)",
    "PermissionDeniedError": "the token may not use this model: check its permissions",
    "NotFoundError": "the endpoint does not know this model or path: check the model name and the base URL",
    "RateLimitError": "the endpoint is rate-limiting: wait, or use a smaller run",
    "BadRequestError": "the endpoint rejected the request: check that the model supports chat completions",
    "InternalServerError": "the endpoint failed on its side: retry later or use another endpoint",
    "InvalidAnswer": "the model's answers were not valid actions: try a larger model or the joint mode",
}
"""What to do about a model call that failed, by the error's class name."""


FALLBACK_LIMIT = 0.5
"""A model run in which more than this share of the actions was decided by a fallback (the secondary model or the
champion) rather than by the model is not credited to the model: inference.py's [END] line gives it no score and
the benchmark leaves its row unranked, never promoted (see `not_credited`)."""
COUNTED = ("calls", "failed_calls", "http_retries", "repairs", "prompt_tokens", "completion_tokens", "latency_s")
"""The running counts of CallStats.to_dict() that add up over steps (besides `decisions`)."""


def fix_hint(error_type: str | None) -> str:
    """A one-line fix for a failure whose class is `error_type` (see FIX_HINTS)."""
    return FIX_HINTS.get(error_type or "", "check the model settings and the endpoint")


def fallbacks(decisions: dict[str, int]) -> int:
    """How many of these decisions (per tier, as CallStats counts them) were not the model's own."""
    return sum(count for tier, count in decisions.items() if tier != "primary")


def not_credited(decisions: dict[str, int]) -> str | None:
    """Why a run whose actions were decided so (per tier) is not credited to the model: more than FALLBACK_LIMIT of
    them were fallbacks; None when the model decided enough of them (or nothing was decided at all)."""
    decided = sum(decisions.values())
    fell_back = fallbacks(decisions)
    if not decided or fell_back / decided <= FALLBACK_LIMIT:
        return None
    return (f"{fell_back} of {decided} actions ({100 * fell_back / decided:.0f} %) were decided by fallbacks, not "
            f"the model (the limit is {100 * FALLBACK_LIMIT:.0f} %)")


def stats_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What a policy's model calls used between two CallStats.to_dict() snapshots: the COUNTED keys and the
    decisions per tier, each as after minus before."""
    delta: dict[str, Any] = {key: after[key] - before[key] for key in COUNTED}
    delta["decisions"] = {tier: after["decisions"][tier] - before["decisions"][tier] for tier in TIERS}
    return delta


@dataclass(frozen=True)
class LLMConfig:
    """How to reach one model.

    response_format: "json_schema" (OpenAI structured outputs), "json_object" (JSON mode with a schema,
    as llama.cpp's server supports it) or "none" (prompt only).
    fallback: who acts for a role whose every tier failed: the environment's champion (the Space, the
    benchmark), or nobody ("noop": the role does nothing, so that a score is the model's own, as aaos train
    evaluates). Either way the decision is counted as a fallback.
    decoding (compact mode): "legal", the answer's schema enumerates every legal call; "safe", only the legal
    calls the environment's guardrail (aaos.core.kit.EnvKit.guardrail) does not refuse, no-op always among
    them, so a server that constrains output (llama.cpp) cannot emit, say, a booking into a taken slot.
    """

    model: str
    base_url: str
    api_key: str = field(default="", repr=False)
    mode: Mode = "per_role"
    response_format: ResponseFormat = "json_schema"
    temperature: float = 0.0
    max_tokens: int = 200
    timeout_s: float = 60.0
    max_retries: int = 2
    backoff_s: float = 0.5
    seed: int | None = 0
    fallback: Literal["champion", "noop"] = "champion"
    decoding: Decoding = "legal"

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMConfig | None:
        """From API_BASE_URL, MODEL_NAME and HF_TOKEN; None when no model is configured."""
        model = os.environ.get("MODEL_NAME", "").strip()
        if not model:
            return None
        base_url = os.environ.get("API_BASE_URL", "https://router.huggingface.co/v1").strip()
        return cls(model=model, base_url=base_url, api_key=os.environ.get("HF_TOKEN", ""), **overrides)


@dataclass
class CallStats:
    """Running accounting of a policy's model calls and of which tier decided each role's action."""

    calls: int = 0
    failed_calls: int = 0
    http_retries: int = 0
    repairs: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    decisions: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TIERS, 0))
    last_error: str | None = None
    """Why a tier's answer was last given up on ("model: ErrorType: message"), or None if none was."""
    last_error_type: str | None = None
    """The class name of that error (a key of FIX_HINTS), or None."""

    def give_up(self, tier: _Tier, error: Exception) -> None:
        """Note why the tier's answer is given up on (the next tier then decides); should the endpoint's message
        quote the token, it is masked."""
        message = f"{tier.config.model}: {type(error).__name__}: {error}"
        if tier.config.api_key:
            message = message.replace(tier.config.api_key, "***")
        self.last_error = message[:LAST_ERROR_CHARS]
        self.last_error_type = type(error).__name__

    def to_dict(self) -> dict[str, Any]:
        decided = sum(self.decisions.values())
        return {
            "calls": self.calls,
            "failed_calls": self.failed_calls,
            "http_retries": self.http_retries,
            "repairs": self.repairs,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": round(self.latency_s, 4),
            "mean_latency_s": round(self.latency_s / self.calls, 4) if self.calls else None,
            "decisions": dict(self.decisions),
            "fallback_rate": round(fallbacks(self.decisions) / decided, 4) if decided else 0.0,
            "last_error": self.last_error,
            "last_error_type": self.last_error_type,
        }


class InvalidAnswer(ValueError):
    """A model's answer that is not a valid, legal action; the message says why."""


def validate_answer(spec: EnvSpec, role: str, data: Any, legal: dict[str, dict[str, Any]]) -> Action:
    """A model's decoded answer as an action, or InvalidAnswer saying what is wrong with it."""
    parsed = legal_problem(spec, role, data, legal)
    if isinstance(parsed, str):
        raise InvalidAnswer(parsed)
    return {"action_type": parsed.action_type, "payload": dict(parsed.fields)}


def answers_by_role(data: Any, roles: Sequence[str], mode: Mode) -> dict[str, Any]:
    """A joint answer's part for each role: a JSON object keyed by role, or (compact) an array in role order.
    Raises InvalidAnswer when it is neither."""
    if mode == "compact":
        if not isinstance(data, list) or len(data) != len(roles):
            raise InvalidAnswer(f"the answer must be a JSON array of {len(roles)} actions, one per role in the "
                                f"order {', '.join(roles)}")
        return dict(zip(roles, data, strict=True))
    if not isinstance(data, dict):
        raise InvalidAnswer("the answer must be a JSON object mapping each role to its action")
    return data


def joint_role_answer(spec: EnvSpec, role: str, value: Any, legal: dict[str, dict[str, Any]], mode: Mode) -> Action:
    """One role's action in a joint answer (a compact answer writes it as one of the role's legal calls), or
    InvalidAnswer saying what is wrong with it."""
    if mode != "compact":
        return validate_answer(spec, role, value, legal)
    if not isinstance(value, str):
        raise InvalidAnswer(f'write the action as one of its legal calls, e.g. "{spec.noop_action}()", '
                            f"not {json.dumps(value)[:80]}")
    action = compact_calls(legal).get(value.strip())
    if action is None:
        raise InvalidAnswer(f"{value[:80]!r} is not one of its legal actions now: write one as listed, with one "
                            f"choice per field")
    return validate_answer(spec, role, action, legal)


def decodable_calls(spec: EnvSpec, role: str, view: dict[str, Any],
                    decoding: Decoding) -> dict[str, Action]:
    """The compact calls a role's answer may be decoded to (see LLMConfig.decoding) -> their actions."""
    calls = compact_calls(view["legal_actions"])
    if decoding == "legal":
        return calls
    guardrail = kit_of(spec.id).guardrail
    return {call: action for call, action in calls.items()
            if action["action_type"] == spec.noop_action or guardrail(role, action, view) is None}


def decode(content: str | None) -> Any:
    """The JSON object in a model's reply (tolerating a code fence around it)."""
    text = (content or "").strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidAnswer(f"not valid JSON ({error.msg} at character {error.pos})") from error


class _LoopThread:
    """A private event loop in a daemon thread, so sync callers can run async model calls."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="aaos-llm-loop", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)


def openai_client() -> ModuleType:
    """The openai package (the `llm` extra): imported when a model policy is built, so that `import aaos` and the
    rule-based policies never load it."""
    return require("openai", "llm")


class _Tier:
    """One model endpoint with its own client."""

    def __init__(self, config: LLMConfig, client_module: ModuleType) -> None:
        self.config = config
        self._openai = client_module
        self._client: openai.AsyncOpenAI | None = None

    @property
    def client(self) -> openai.AsyncOpenAI:
        if self._client is None:  # created lazily, inside the event loop that uses it
            self._client = self._openai.AsyncOpenAI(api_key=self.config.api_key or "none",
                                                    base_url=self.config.base_url, timeout=self.config.timeout_s,
                                                    max_retries=0)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def chat(self, request: dict[str, Any]) -> openai.types.chat.ChatCompletion:
        """POST /chat/completions with the request as its body. The client's typed `create` would first walk
        every message and the whole output schema to "transform" them, costing more CPU than the call itself
        when many run at once."""
        return await self.client.post("/chat/completions", cast_to=self._openai.types.chat.ChatCompletion,
                                      body=request)

    def response_format(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        if self.config.response_format == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": "action", "schema": schema, "strict": False}}
        if self.config.response_format == "json_object":
            return {"type": "json_object", "schema": schema}
        return None


class LLMPolicy(Policy):
    """A model (with an optional secondary model) acting for every role; the champion catches what fails."""

    name = "llm"

    def __init__(self, spec: EnvSpec, primary: LLMConfig, secondary: LLMConfig | None = None,
                 call_limit: asyncio.Semaphore | None = None) -> None:
        self.spec = spec
        self.mode = primary.mode
        self._openai = openai_client()
        # 429, 5xx, timeouts and connection errors: retried with backoff
        self._retryable = (self._openai.RateLimitError, self._openai.InternalServerError,
                           self._openai.APITimeoutError, self._openai.APIConnectionError)
        self.tiers = [_Tier(config, self._openai) for config in (primary, secondary) if config is not None]
        # an environment without a champion falls back to the no-op
        self.champion = champion_of(spec.id) if primary.fallback == "champion" and has_champion(spec.id) else (
            NoopPolicy())
        self.stats = CallStats()
        self.call_limit = call_limit
        self._loop: _LoopThread | None = None

    def __repr__(self) -> str:
        return f"LLMPolicy(model={self.tiers[0].config.model!r}, mode={self.mode!r})"

    def _run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        if self._loop is None:
            self._loop = _LoopThread()
        return self._loop.run(coroutine)

    def act(self, observation: Observation) -> JointAction:
        return self._run(self.act_async(observation))

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        return self._run(self._decide_role(role, view))

    async def act_async(self, observation: Observation) -> JointAction:
        views = observation["agent_observations"]
        if self.mode != "per_role":
            return await self._joint(observation)
        decided = await asyncio.gather(*(self._decide_role(role, view) for role, view in views.items()))
        return dict(zip(views, decided, strict=True))

    def close(self) -> None:
        if self._loop is not None:
            self._loop.run(self.aclose())
            self._loop.close()
            self._loop = None

    async def aclose(self) -> None:
        for tier in self.tiers:
            await tier.aclose()

    async def _complete(self, tier: _Tier, messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        """One chat completion with retries and backoff on 429, 5xx, timeouts and connection errors."""
        request: dict[str, Any] = {"model": tier.config.model, "messages": messages,
                                   "temperature": tier.config.temperature, "max_tokens": tier.config.max_tokens}
        if tier.config.seed is not None:
            request["seed"] = tier.config.seed
        response_format = tier.response_format(schema)
        if response_format is not None:
            request["response_format"] = response_format
        for attempt in range(tier.config.max_retries + 1):
            started = time.perf_counter()
            try:
                async with self.call_limit or contextlib.nullcontext():
                    response = await tier.chat(request)
            except self._retryable:
                self.stats.calls += 1
                self.stats.latency_s += time.perf_counter() - started
                if attempt == tier.config.max_retries:
                    self.stats.failed_calls += 1
                    raise
                self.stats.http_retries += 1
                await asyncio.sleep(tier.config.backoff_s * 2**attempt)
                continue
            except self._openai.APIError:
                self.stats.calls += 1
                self.stats.failed_calls += 1
                self.stats.latency_s += time.perf_counter() - started
                raise
            self.stats.calls += 1
            self.stats.latency_s += time.perf_counter() - started
            usage = getattr(response, "usage", None)
            if usage is not None:
                self.stats.prompt_tokens += usage.prompt_tokens or 0
                self.stats.completion_tokens += usage.completion_tokens or 0
            choices = getattr(response, "choices", None) or []
            return (choices[0].message.content if choices else None) or ""
        raise AssertionError("unreachable")

    async def _ask_role(self, tier: _Tier, role: str, view: dict[str, Any]) -> Action:
        """One tier's answer for one role, with one repair turn; raises if it stays invalid."""
        legal = view["legal_actions"]
        messages = role_messages(role, view, self.spec)
        schema = action_schema(legal)
        reply = await self._complete(tier, messages, schema)
        try:
            return validate_answer(self.spec, role, decode(reply), legal)
        except InvalidAnswer as error:
            self.stats.repairs += 1
            messages = [*messages, {"role": "assistant", "content": reply[:2000]}, repair_message(str(error))]
        return validate_answer(self.spec, role, decode(await self._complete(tier, messages, schema)), legal)

    async def _decide_role(self, role: str, view: dict[str, Any]) -> Action:
        for tier_name, tier in zip(TIERS, self.tiers, strict=False):
            try:
                action = await self._ask_role(tier, role, view)
            except (InvalidAnswer, self._openai.APIError) as error:
                self.stats.give_up(tier, error)
                continue
            self.stats.decisions[tier_name] += 1
            return action
        self.stats.decisions["champion"] += 1
        return self.champion.act_role(role, view)

    async def _joint(self, observation: Observation) -> JointAction:
        views = observation["agent_observations"]
        undecided = dict(views)
        decided: JointAction = {}
        messages = (compact_messages if self.mode == "compact" else joint_messages)(observation, self.spec)
        for tier_name, tier in zip(TIERS, self.tiers, strict=False):
            try:
                answer = await self._joint_answer(tier, messages, views)
            except (InvalidAnswer, self._openai.APIError) as error:
                self.stats.give_up(tier, error)
                continue
            for role in list(undecided):
                action = answer.get(role)
                if action is not None:
                    decided[role] = action
                    self.stats.decisions[tier_name] += 1
                    del undecided[role]
            if not undecided:
                break
        for role, view in undecided.items():
            decided[role] = self.champion.act_role(role, view)
            self.stats.decisions["champion"] += 1
        return {role: decided[role] for role in views}

    async def _joint_answer(self, tier: _Tier, messages: list[dict[str, str]],
                            views: dict[str, dict[str, Any]]) -> dict[str, Action]:
        """The valid per-role actions of one tier's joint answer, after one repair turn for the rest."""
        legal = {role: view["legal_actions"] for role, view in views.items()}
        schema = (compact_schema({role: decodable_calls(self.spec, role, view, tier.config.decoding)
                                  for role, view in views.items()})
                  if self.mode == "compact" else joint_schema(legal))
        reply = await self._complete(tier, messages, schema)
        valid, errors = self._joint_valid(reply, legal)
        if errors:
            self.stats.repairs += 1
            retry = [*messages, {"role": "assistant", "content": reply[:4000]}, repair_message("; ".join(errors))]
            fixed, still = self._joint_valid(await self._complete(tier, retry, schema), legal)
            valid.update({role: action for role, action in fixed.items() if role not in valid})
            if len(valid) < len(legal):
                self.stats.give_up(tier, InvalidAnswer("; ".join(still)))
        return valid

    def _joint_valid(self, reply: str,
                     legal: dict[str, dict[str, dict[str, Any]]]) -> tuple[dict[str, Action], list[str]]:
        valid: dict[str, Action] = {}
        errors: list[str] = []
        try:
            by_role = answers_by_role(decode(reply), list(legal), self.mode)
        except InvalidAnswer as error:
            return valid, [str(error)]
        for role, role_legal in legal.items():
            try:
                valid[role] = joint_role_answer(self.spec, role, by_role.get(role), role_legal, self.mode)
            except InvalidAnswer as error:
                errors.append(f"{role}: {error}")
        return valid, errors

