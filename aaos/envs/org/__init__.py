"""The AAOS organisation simulation (the flagship environment)."""

from aaos.envs.org.env import OrgEnv, org_spec

__all__ = ["OrgEnv", "org_spec"]
