"""Policies that act in any AAOS environment (each environment's champion lives in its own package)."""

from aaos.agents.base import Policy, action
from aaos.agents.baselines import NoopPolicy, RandomPolicy

__all__ = ["NoopPolicy", "Policy", "RandomPolicy", "action"]
