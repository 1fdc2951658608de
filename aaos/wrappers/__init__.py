"""Adapters from AAOS environments to other RL libraries' interfaces (optional dependencies)."""
