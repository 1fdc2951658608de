"""Policies that act in any AAOS environment (each environment's champion lives in its own package)."""

from aaos.agents.baselines import NoopPolicy, RandomPolicy
from aaos.core.policy import Policy, action

__all__ = ["NoopPolicy", "Policy", "RandomPolicy", "action"]
