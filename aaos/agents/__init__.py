"""Policies that act in AAOS environments."""

from aaos.agents.base import Policy, action
from aaos.agents.baselines import NoopPolicy, RandomPolicy
from aaos.agents.heuristic import OrgChampion

__all__ = ["NoopPolicy", "OrgChampion", "Policy", "RandomPolicy", "action"]
