"""The determinism checks: the seeded random-policy episode replays step by step in this process and in
subprocesses with other PYTHONHASHSEEDs."""

from __future__ import annotations

from aaos.check.child import HASH_SEEDS, Children, fingerprints, first_difference, read_children
from aaos.check.common import Subject
from aaos.check.report import CheckFailed
from aaos.envs import make


def check_determinism(subject: Subject) -> str:
    env = make(subject.task, scenario=subject.scenario, seed=subject.seed, env=subject.env_id)
    episode = (subject.env_id, subject.task, subject.scenario, subject.seed)
    first = fingerprints(*episode, env)
    again = fingerprints(*episode, env)
    fresh = fingerprints(*episode)
    for label, other in (("reset() of the same environment", again), ("a second, fresh environment", fresh)):
        difference = first_difference(first, other)
        if difference:
            raise CheckFailed(f"the same seeded episode played twice in one process differs ({label}): "
                              f"{difference}; draw every random number from aaos.core.seeding.rng, never from "
                              f"the global random module or the clock; {subject.driver.at(len(first) - 1)}")
    subject.in_process = first
    return f"3 runs of the seeded random-policy episode ({len(first) - 1} steps) are identical, step by step"


def check_cross_process(subject: Subject, children: Children | str) -> str | None:
    """None when skipped (the reason is in subject.skip_reason)."""
    if isinstance(children, str):
        subject.skip_reason = children
        return None
    outputs = read_children(children)
    if subject.in_process is None:
        subject.skip_reason = "the determinism check within one process did not pass (see determinism)"
        return None
    (seed_a, first), (seed_b, second) = outputs.items()
    for label, a, b in ((f"PYTHONHASHSEED={seed_a} and PYTHONHASHSEED={seed_b}", first, second),
                        (f"PYTHONHASHSEED={seed_a} and this process", first, subject.in_process)):
        difference = first_difference(a, b)
        if difference:
            raise CheckFailed(f"the seeded episode differs between processes ({label}): {difference}; look for "
                              f"hash() of strings, iteration over sets of strings, or id()-based ordering; "
                              f"{subject.driver.at(len(a) - 1)} in two processes with different PYTHONHASHSEED")
    return (f"subprocesses with PYTHONHASHSEED {' and '.join(HASH_SEEDS)} replay the episode "
            f"({len(first) - 1} steps) identically to this process")
