"""An AAOS episode as an Inspect sample: the solver plays it as `aaos bench` does (aaos.bench.runner.run_episode), with
a rule-based policy or with the benchmark's model agent (aaos.agents.llm.LLMPolicy) whose model calls go through
Inspect's model; the scorer gives the environment's final score, with the episode's benchmark record as metadata."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ResponseSchema,
    get_model,
)
from inspect_ai.scorer import Score, Scorer, Target, grouped, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import JSONSchema

import aaos
from aaos.agents.llm import Decoding, LLMConfig, LLMPolicy, Mode, ResponseFormat, not_credited
from aaos.bench.runner import Job, run_episode
from aaos.core.policy import Policy
from aaos.core.seeding import HOLDOUT_SALT_ENV, salted

if TYPE_CHECKING:
    from aaos.agents.llm import _Tier

Fallback = Literal["champion", "noop"]
RECORD = "aaos_record"
"""The store key of the episode's benchmark record, which the scorer reads."""
CHAT_MESSAGES: dict[str, type[ChatMessageSystem | ChatMessageUser | ChatMessageAssistant]] = {
    "system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}


@dataclass(frozen=True)
class Player:
    """Who plays the episodes: a rule-based policy, or Inspect's model as the benchmark's model agent."""

    env: str
    policy: str | None
    mode: Mode
    response_format: ResponseFormat
    decoding: Decoding
    fallback: Fallback

    @property
    def name(self) -> str:
        """The record's policy: the rule-based policy's name, or inspect:<model>."""
        return self.policy or f"inspect:{get_model()}"

    def build(self, seed: int, conversation: list[ChatMessage]) -> Policy:
        """A fresh agent for one episode; a model agent appends each call's prompt and answer to `conversation`."""
        if self.policy is not None:
            return aaos.policies.make(self.policy, seed=seed, env=self.env)
        model = get_model()
        config = LLMConfig(model=str(model), base_url=model.api.base_url or "", mode=self.mode,
                           response_format=self.response_format, decoding=self.decoding, fallback=self.fallback)
        return InspectModelPolicy(self.env, model, config, conversation)


class InspectModelPolicy(LLMPolicy):
    """The benchmark's model agent with its model calls made through Inspect's model: Inspect's generation settings
    and retries apply, Inspect logs each call, and each call's last prompt and its answer are appended to
    `conversation`."""

    name = "inspect"

    def __init__(self, env: str, model: Model, config: LLMConfig, conversation: list[ChatMessage]) -> None:
        super().__init__(aaos.spec(env), config)
        self.model = model
        self.conversation = conversation

    async def _complete(self, tier: _Tier, messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        self.stats.calls += 1
        try:
            output = await self.model.generate([_chat_message(m) for m in messages],
                                               config=answer_format(tier.response_format(schema)))
        except Exception:
            self.stats.failed_calls += 1
            raise
        self.stats.latency_s += output.time or 0.0
        if output.usage is not None:
            self.stats.prompt_tokens += output.usage.input_tokens
            self.stats.completion_tokens += output.usage.output_tokens
        self.conversation.extend([_chat_message(messages[-1]), output.message])
        return output.completion


def _chat_message(message: dict[str, str]) -> ChatMessage:
    return CHAT_MESSAGES[message["role"]](content=message["content"])


def answer_format(request_format: dict[str, Any] | None) -> GenerateConfig:
    """Inspect's generation config for the response_format `aaos bench` would send (aaos.agents.llm): a JSON schema
    as Inspect's structured output (a const as a one-value enum, the same constraint in the terms Inspect's
    JSONSchema carries); any other format as it is, in the request's body (OpenAI-compatible servers)."""
    if request_format is None:
        return GenerateConfig()
    if request_format["type"] != "json_schema":
        return GenerateConfig(extra_body={"response_format": request_format})
    schema = request_format["json_schema"]
    return GenerateConfig(response_schema=ResponseSchema(
        name=schema["name"], json_schema=JSONSchema.model_validate(inspect_schema(schema["schema"])),
        strict=schema["strict"]))


def inspect_schema(schema: Any) -> Any:
    """A JSON schema with every const written as a one-value enum."""
    if isinstance(schema, dict):
        return {("enum" if key == "const" else key): [value] if key == "const" else inspect_schema(value)
                for key, value in schema.items()}
    if isinstance(schema, list):
        return [inspect_schema(value) for value in schema]
    return schema


@solver
def play_episode(env: str, policy: str | None = None, mode: Mode = "per_role",
                 response_format: ResponseFormat = "json_schema", decoding: Decoding = "legal",
                 fallback: Fallback = "champion", salt_env: str = HOLDOUT_SALT_ENV) -> Solver:
    """Play the sample's episode as `aaos bench` does (see `bench` for the arguments), under the holdout salt in
    $salt_env (read here, never an argument); the episode's record goes to the store for the scorer."""
    player = Player(env, policy, mode, response_format, decoding, fallback)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        agent = player.build(state.metadata["seed"], state.messages)
        job = Job(player.name, env, state.metadata["task"], state.metadata["scenario"], state.metadata["seed"])
        salt = os.environ.get(salt_env, "")
        salting: AbstractContextManager[None] = salted(salt) if salt else nullcontext()
        try:
            with salting:
                record = await run_episode(job, agent)
        finally:
            await agent.aclose()
        state.store.set(RECORD, record)
        state.completed = True
        return state

    return solve


@scorer(metrics=[mean(), stderr(), grouped(mean(), "task", all=False)])
def episode_score() -> Scorer:
    """The environment's final score of the episode; the benchmark's record of it (less its wall time) as
    metadata, with `not_credited` saying why a model run whose actions were mostly fallbacks is not credited to the
    model (None when it is)."""

    async def score(state: TaskState, target: Target) -> Score:
        record = dict(state.store.get(RECORD))
        record.pop("wall_s")
        decisions = (record["llm"] or {}).get("decisions", {})
        why = not_credited(decisions)
        explanation = (f"score {record['score']:.4f} after {record['steps']} steps ({record['split_label']}); "
                       f"{record['invalid_actions']} of {record['actions']} actions rejected, "
                       f"{record['hard_violations']} hard violations")
        return Score(value=record["score"], explanation=explanation + (f"; not credited: {why}" if why else ""),
                     metadata={**record, "not_credited": why})

    return score
