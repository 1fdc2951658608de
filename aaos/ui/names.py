"""How the Space names a policy, the same in every tab (Play, Arena, Replay, Training, Benchmark): the policy
catalogue's display names (aaos.policies.DISPLAY_NAMES), and for a committed training run's evaluation its stages
as the training reports name them (aaos.training.plots.label), the model the project ships being the fine-tuned
local model. The names in the data stay as they are."""

from __future__ import annotations

from aaos.policies import LOCAL_TRAINED, LOCAL_UNTRAINED, display_name
from aaos.training import plots

FINE_TUNED = display_name(LOCAL_TRAINED)
UNTRAINED = display_name(LOCAL_UNTRAINED)
UNTRAINED_STAGE = plots.UNTRAINED


def policy_name(policy: str, final: str | None = None) -> str:
    """How the Space names `policy`; `final` is the stage whose model the project ships (a training summary's
    "final"), for the policies of a training evaluation."""
    return plots.label(policy, final)
