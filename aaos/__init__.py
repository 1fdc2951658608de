"""AAOS: the Autonomous AI Organization Simulator.

    import aaos
    env = aaos.make("full_episode", scenario="product_launch_failure", seed=0)
    obs = env.reset()
    policy = aaos.policies.make("heuristic")
    while True:
        result = env.step(policy.act(obs))
        obs = result.observation
        if result.done:
            break
    print(result.info["score"])
"""

from __future__ import annotations

from aaos import policies
from aaos.check import check_env
from aaos.core import EpisodeDone, StepResult
from aaos.core.spec import Split
from aaos.envs import DEFAULT_ENV, env_ids, kit_of, make, register, spec

__version__ = "0.1.0"


def list_tasks(env: str = DEFAULT_ENV) -> list[dict[str, object]]:
    """The tasks of an environment: id, title, difficulty, max_steps, description, done_when."""
    return spec(env).to_dict()["tasks"]


def list_scenarios(split: Split | None = None, env: str = DEFAULT_ENV) -> list[dict[str, str]]:
    """The scenarios of an environment, optionally only those of one split ("train" or "holdout")."""
    if split not in (None, "train", "holdout"):
        raise ValueError(f"split must be 'train', 'holdout' or None, got {split!r}")
    return [s for s in spec(env).to_dict()["scenarios"] if split is None or s["split"] == split]


__all__ = ["DEFAULT_ENV", "EpisodeDone", "StepResult", "check_env", "env_ids", "kit_of", "list_scenarios", "list_tasks",
           "make", "policies", "register", "spec"]
