"""How much of everything an `aaos train` run does (its preset), and which models a preset trains, ships and
evaluates. aaos.training.pipeline runs the stages; each reads its own fields (PRESET_FIELDS), so a changed field
reruns its stage and those after it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import get_args

from aaos.agents.llm import Decoding
from aaos.training.plots import LEGAL

TRAINING_STAGES = ("sft", "dagger", "rft", "dpo", "grpo")
"""The stages that train an adapter (adapters/<stage>); the model after each is evaluated under the stage's name."""


@dataclass(frozen=True)
class Preset:
    """How much of everything a run does.

    train_seeds: champion episodes per train scenario. sft_steps: optimizer steps of batch_size x grad_accumulation
    rows. dagger_rounds: DAgger rounds (0: none), each of dagger_episodes episodes the model plays (the train
    scenarios in turn, on train seeds after the champion's) and dagger_steps optimizer steps. lora_layers: the LoRA
    adapts every linear layer of the top lora_layers transformer blocks (None: of all of them); backpropagation
    stops at the lowest of them, which saves time (a step of 4 inbox rows of ~330 tokens: ~7.8 s with the top 10 of
    the 30 blocks, ~10.5 s with all) but costs what the model can learn: the top 10 alone did not fit an inbox
    email's category in 40 steps (docs/training.md). grpo_steps: GRPO steps, each of one prompt and grpo_generations
    completions of at most grpo_completion_tokens, sampled at grpo_temperature. eval_seeds: holdout seeds per
    scenario for every policy; eval_scenarios: how many scenarios (see aaos.training.pipeline.eval_plan; None: all).
    decision_weight: the loss weight of an answer's decision tokens (aaos.training.weighted; 1: every answer token
    alike, through TRL's SFTTrainer). rft_rounds: rounds of rejection-sampling fine-tuning (aaos.training.rft; 0:
    none), each of rft_episodes episodes the model plays on train seeds new to it, rft_samples answers sampled at
    rft_temperature at every state, and rft_steps optimizer steps; rft_keep: whose answer a state's row holds unless
    another scores more by the rollout reward ("champion", as in DAgger, or "learner": the model's own greedy
    answer, so the champion's is learned only where it scores more); rft_data: what a round trains on ("mixed": its
    rows with the SFT and DAgger rows; "gains": only its rows at the states where the best answer out-scores the
    model's greedy one). learner_decoding: what the model may write where it plays to be taught (DAgger's and RFT's
    episodes; LLMConfig.decoding): "safe", only the calls the environment's guardrail admits, as every evaluated
    model but one; "legal", every legal call, so it also reaches the states after calls the guardrail refuses and
    samples such calls, where the champion's labels and the rollout reward teach it what to do instead (the score
    decoding every legal call measures that). refine_learning_rate: the learning rate of DAgger's, RFT's and DPO's
    steps, which go on from a fitted adapter (None: learning_rate). dpo_steps: optimizer steps of preference
    optimisation on the rollout reward's pairs (aaos.training.dpo; 0: none), from dpo_episodes episodes the model
    plays on train seeds new to it, sampling rft_samples answers at rft_temperature at every state; a pair is kept
    where the rewards differ by at least dpo_margin; dpo_beta scales the preference term."""

    train_seeds: int
    sft_steps: int
    batch_size: int
    grad_accumulation: int
    learning_rate: float
    lora_rank: int
    lora_layers: int | None
    grpo_steps: int
    grpo_generations: int
    grpo_completion_tokens: int
    grpo_temperature: float
    grpo_learning_rate: float
    eval_seeds: int
    eval_scenarios: int | None
    dagger_rounds: int = 0
    dagger_episodes: int = 0
    dagger_steps: int = 0
    max_length: int = 3072
    decision_weight: float = 1.0
    rft_rounds: int = 0
    rft_episodes: int = 0
    rft_steps: int = 0
    rft_samples: int = 4
    rft_temperature: float = 1.0
    rft_keep: str = dataclasses.field(default="champion", metadata={"choices": ("champion", "learner")})
    rft_data: str = dataclasses.field(default="mixed", metadata={"choices": ("mixed", "gains")})
    learner_decoding: str = dataclasses.field(default="safe", metadata={"choices": get_args(Decoding)})
    refine_learning_rate: float | None = None
    dpo_episodes: int = 0
    dpo_steps: int = 0
    dpo_beta: float = 0.1
    dpo_margin: float = 0.01

    def trained(self) -> tuple[str, ...]:
        """The training stages this preset runs, in order (SFT always)."""
        steps = {"sft": self.sft_steps, "dagger": self.dagger_rounds * self.dagger_steps,
                 "rft": self.rft_rounds * self.rft_steps, "dpo": self.dpo_steps if self.dpo_episodes else 0,
                 "grpo": self.grpo_steps}
        return tuple(stage for stage in TRAINING_STAGES if stage == "sft" or steps[stage] > 0)

    def final(self) -> str:
        """The model a run ships (its adapter is published): the one after the last training stage."""
        return self.trained()[-1]

    def watched(self) -> tuple[str, ...]:
        """The models whose evaluation episodes are kept step by step (eval_steps.jsonl), for the Space's Replay
        and Arena tabs and the report's behaviour counts: the untrained one, the one after each training stage, and
        the final one decoding every legal call (whose counts show the calls the guardrail refused it)."""
        return ("untrained", *self.trained(), self.final() + LEGAL)

    def evaluated(self) -> dict[str, tuple[str | None, Decoding]]:
        """Each model the evaluation plays: its adapter (None: the base model) and its decoding
        (LLMConfig.decoding). Every model decodes only the legal calls the environment's guardrail admits; the final
        one plays once more decoding every legal call, which measures what that constraint does."""
        return {"untrained": (None, "safe"), **{stage: (stage, "safe") for stage in self.trained()},
                self.final() + LEGAL: (self.final(), "legal")}


PRESET_FIELDS: dict[str, tuple[str, ...]] = {
    "collect": ("train_seeds",),
    "sft": ("sft_steps", "batch_size", "grad_accumulation", "learning_rate", "lora_rank", "lora_layers",
            "max_length", "decision_weight"),
    "dagger": ("dagger_rounds", "dagger_episodes", "dagger_steps", "learner_decoding", "refine_learning_rate"),
    "rft": ("rft_rounds", "rft_episodes", "rft_steps", "rft_samples", "rft_temperature", "rft_keep", "rft_data"),
    "dpo": ("dpo_episodes", "dpo_steps", "dpo_beta", "dpo_margin"),
    "grpo": ("grpo_steps", "grpo_generations", "grpo_completion_tokens", "grpo_temperature", "grpo_learning_rate"),
    "evaluate": ("eval_seeds", "eval_scenarios"),
}
"""The preset's fields each stage reads: changing one reruns that stage and those after it, not those before."""

PRESETS: dict[str, Preset] = {
    "cpu": Preset(train_seeds=8, sft_steps=80, batch_size=1, grad_accumulation=4, learning_rate=1e-3, lora_rank=16,
                  lora_layers=None, grpo_steps=0, grpo_generations=4, grpo_completion_tokens=96,
                  grpo_temperature=0.7, grpo_learning_rate=2e-5, eval_seeds=2, eval_scenarios=4,
                  dagger_rounds=1, dagger_episodes=6, dagger_steps=40),
    "cpu-long": Preset(train_seeds=8, sft_steps=80, batch_size=1, grad_accumulation=4, learning_rate=1e-3,
                       lora_rank=16, lora_layers=None, grpo_steps=0, grpo_generations=4, grpo_completion_tokens=96,
                       grpo_temperature=0.7, grpo_learning_rate=2e-5, eval_seeds=2, eval_scenarios=4,
                       dagger_rounds=1, dagger_episodes=6, dagger_steps=40, decision_weight=8.0,
                       rft_rounds=1, rft_episodes=6, rft_steps=40, rft_samples=4, rft_temperature=1.0),
    "gpu": Preset(train_seeds=4, sft_steps=300, batch_size=8, grad_accumulation=2, learning_rate=2e-4, lora_rank=32,
                  lora_layers=None, grpo_steps=100, grpo_generations=8, grpo_completion_tokens=160,
                  grpo_temperature=0.9, grpo_learning_rate=1e-5, eval_seeds=3, eval_scenarios=None,
                  dagger_rounds=2, dagger_episodes=16, dagger_steps=150),
    "mini": Preset(train_seeds=1, sft_steps=2, batch_size=1, grad_accumulation=1, learning_rate=3e-4, lora_rank=4,
                   lora_layers=2, grpo_steps=1, grpo_generations=2, grpo_completion_tokens=16, grpo_temperature=0.7,
                   grpo_learning_rate=2e-5, eval_seeds=1, eval_scenarios=1, dagger_rounds=1, dagger_episodes=1,
                   dagger_steps=1, max_length=4096, decision_weight=8.0, rft_rounds=1, rft_episodes=1, rft_steps=1,
                   rft_samples=2, refine_learning_rate=1e-4, dpo_episodes=1, dpo_steps=1, dpo_margin=0.0),
}
"""cpu: aims at about 45 minutes on 2 cores, a LoRA on every block (fewer steps rather than fewer blocks), no GRPO
(4 steps of it, all a CPU affords, did not move the holdout score: docs/training.md); cpu-long: the cpu preset's
stages with the loss weighted toward the decision tokens, then a round of rejection-sampling fine-tuning, at most 150
minutes on 2 cores (every stage resumes, so a run may span sessions); gpu: an accelerator; mini: every stage on a
sliver, for the tests (checks the files, not the scores). docs/training.md has the measured times."""


AT_LEAST_ONE = frozenset({"batch_size", "grad_accumulation", "lora_rank", "lora_layers", "eval_seeds",
                          "eval_scenarios", "max_length", "grpo_generations", "grpo_completion_tokens", "rft_samples"})
"""The fields that count something a run cannot do with none of (the others may be 0: a stage's steps, a weight)."""


def _value(field: dataclasses.Field[object], text: str) -> object:
    """A preset field's value from its command-line text (the field's type: int, float, either or None, or str
    with its choices in the field's metadata)."""
    kind = str(field.type)
    if kind == "str":
        if text not in field.metadata["choices"]:
            raise ValueError(f"preset field {field.name} takes one of {', '.join(field.metadata['choices'])}, "
                             f"got {text!r}")
        return text
    if kind.endswith(" | None") and text.lower() == "none":
        return None
    try:
        return float(text) if kind.startswith("float") else int(text)
    except ValueError:
        wanted = {"float": "a number", "float | None": "a number or none",
                  "int | None": "an integer or none"}.get(kind, "an integer")
        raise ValueError(f"preset field {field.name} takes {wanted}, got {text!r}") from None


def overridden(name: str, assignments: Sequence[str]) -> tuple[str, Preset]:
    """The preset `name` with each FIELD=VALUE assignment applied, and the run's preset label: the name, then the
    assignments as given ("cpu-long rft_rounds=2"), which is what a summary records and the tables show. Raises
    ValueError, saying what to fix, for an unknown preset or field, a value of the wrong type, or a value below the
    field's least (1 for AT_LEAST_ONE, else 0)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}: one of {', '.join(PRESETS)}")
    fields = {f.name: f for f in dataclasses.fields(Preset)}
    changes: dict[str, object] = {}
    written: dict[str, str] = {}
    for assignment in assignments:
        field_name, sep, text = (part.strip() for part in assignment.partition("="))
        if not sep or field_name not in fields:
            raise ValueError(f"--set takes FIELD=VALUE with FIELD one of {', '.join(fields)}; got {assignment!r}")
        value = _value(fields[field_name], text)
        least = 1 if field_name in AT_LEAST_ONE else 0
        if isinstance(value, int | float) and value < least:
            raise ValueError(f"preset field {field_name} must be at least {least}, got {text!r}")
        changes[field_name], written[field_name] = value, text
    label = " ".join([name, *(f"{k}={v}" for k, v in written.items())])
    return label, dataclasses.replace(PRESETS[name], **changes)
