"""The AAOS organisation simulation (the flagship environment); its kit is aaos.envs.org.kit.KIT."""

from aaos.envs.org.env import OrgEnv, org_spec

__all__ = ["OrgEnv", "org_spec"]
