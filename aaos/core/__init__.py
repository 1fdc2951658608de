"""The environment protocol shared by every AAOS environment."""

from aaos.core.actions import ActionResult, ParsedAction, parse_action, parse_joint_action
from aaos.core.env import Environment, EpisodeDone, JointAction, Observation, StepResult
from aaos.core.reward import RewardLedger, composite
from aaos.core.seeding import HOLDOUT_SEED_START, seed_split, split_seeds
from aaos.core.spec import ActionSpec, EnvSpec, RewardComponent, ScenarioInfo, TaskSpec

__all__ = [
    "HOLDOUT_SEED_START",
    "ActionResult",
    "ActionSpec",
    "EnvSpec",
    "Environment",
    "EpisodeDone",
    "JointAction",
    "Observation",
    "ParsedAction",
    "RewardComponent",
    "RewardLedger",
    "ScenarioInfo",
    "StepResult",
    "TaskSpec",
    "composite",
    "parse_action",
    "parse_joint_action",
    "seed_split",
    "split_seeds",
]
