"""The training bridge: trajectories that replay exactly, SFT and GRPO datasets, a reward function and an
environment class for TRL. The path, the formats and the commands are in docs/training.md.

    aaos collect --policy heuristic --episodes 2 --out runs/train/episodes.jsonl   # raw episodes
    aaos replay runs/train/episodes.jsonl                                          # re-execute, report divergence
    aaos sft runs/train/episodes.jsonl --out runs/train/sft.jsonl                  # messages for SFTTrainer
    aaos grpo-data runs/train/episodes.jsonl --out runs/train/grpo.jsonl           # prompts + snapshots for GRPO

    from aaos.training import reward_fn, environment_class
    GRPOTrainer(model, reward_funcs=reward_fn, train_dataset=rows, environment_factory=environment_class(env), ...)

Every command takes --env (collect plays that environment; replay, sft and grpo-data accept only its episodes).

torch and trl are optional (`pip install -e '.[train]'`): nothing in this package imports them except
aaos.training.models (loads a model, or builds a tiny one offline for smoke runs), which only the example
scripts and their tests use.
"""

from aaos.training.grpo import grpo_rows, reward_fn, score_completion
from aaos.training.rollout import DEFAULT_HORIZON, INVALID_REWARD, Rollout
from aaos.training.sft import sft_rows
from aaos.training.snapshot import SnapshotError, restore
from aaos.training.trl_env import DefaultEnvironment, environment_class

__all__ = [
    "DEFAULT_HORIZON",
    "INVALID_REWARD",
    "DefaultEnvironment",
    "Rollout",
    "SnapshotError",
    "environment_class",
    "grpo_rows",
    "restore",
    "reward_fn",
    "score_completion",
    "sft_rows",
]
