"""How the Space names a policy, the same in every tab (Play, Arena, Replay, Training, Benchmark): the policy
catalogue's display names (aaos.policies.DISPLAY_NAMES), and for a committed training run's evaluation its stages,
the model the project ships being the fine-tuned local model. The names in the data stay as they are."""

from __future__ import annotations

from aaos.policies import LOCAL_TRAINED, LOCAL_UNTRAINED, display_name
from aaos.training.plots import LEGAL
from aaos.ui import prose

FINE_TUNED = display_name(LOCAL_TRAINED)
UNTRAINED = display_name(LOCAL_UNTRAINED)
UNTRAINED_STAGE = "untrained"
"""The training evaluation's name of the local model before training."""
ANY_LEGAL = "{model}, any legal call"
"""The shipped model decoding every legal call, not only those its guardrail admits (`<final>_legal`)."""
AFTER_STAGE = "SmolLM2-135M after {stage}"
"""A model of a training run's stage before the last, which the project does not ship."""


def policy_name(policy: str, final: str | None = None) -> str:
    """How the Space names `policy`; `final` is the stage whose model the project ships (a training summary's
    "final"), for the policies of a training evaluation."""
    if policy == final:
        return FINE_TUNED
    if final is not None and policy == final + LEGAL:
        return ANY_LEGAL.format(model=FINE_TUNED)
    if policy == UNTRAINED_STAGE:
        return UNTRAINED
    if policy in prose.TRAINING_STAGES:
        return AFTER_STAGE.format(stage=prose.TRAINING_STAGES[policy])
    return display_name(policy)
