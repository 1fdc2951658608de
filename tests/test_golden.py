"""Whole trajectories are unchanged by changes meant to be invisible (tests/golden.py records them)."""

from __future__ import annotations

import json

import pytest
from golden import GOLDEN, digest, episodes, key, version

RECORDED = json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("env_id", sorted(RECORDED))
def test_trajectories_match_the_recorded_digests(env_id: str) -> None:
    recorded = RECORDED[env_id]
    if recorded["version"] != version(env_id):
        pytest.fail(f"{env_id} is now version {version(env_id)} but the digests are of {recorded['version']}: "
                    f"if the change was deliberate, rerun `python tests/golden.py {env_id}`")
    changed = [key(*e) for e in episodes(env_id) if digest(env_id, *e) != recorded["episodes"][key(*e)]]
    assert not changed, f"{len(changed)} of {len(recorded['episodes'])} episodes differ, e.g. {changed[:3]}"
