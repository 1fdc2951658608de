"""Seeds: where randomness comes from, and which seeds belong to which split.

Every random draw in AAOS comes from a `random.Random` built here from a label and a seed, never
from the global generator, so the same label and seed give the same draws in any process.
"""

from __future__ import annotations

import hashlib
import os
import random

from aaos.core.spec import Split

HOLDOUT_SEED_START = 10_000
"""Seeds below this draw training variants; seeds at or above it draw holdout variants."""


def seed_split(seed: int) -> Split:
    return "holdout" if seed >= HOLDOUT_SEED_START else "train"


def split_seeds(split: Split, count: int, start: int = 0) -> list[int]:
    """`count` consecutive seeds of a split, from offset `start` within it."""
    if start < 0 or count < 0:
        raise ValueError(f"start and count must be non-negative, got start={start}, count={count}")
    if split == "train" and start + count > HOLDOUT_SEED_START:
        raise ValueError(f"only {HOLDOUT_SEED_START} train seeds exist; start + count = {start + count}")
    base = HOLDOUT_SEED_START if split == "holdout" else 0
    return [base + start + i for i in range(count)]


def rng(*labels: object) -> random.Random:
    """A generator seeded by a stable hash of the labels (e.g. rng("variant", scenario_id, seed))."""
    digest = hashlib.sha256("\x1f".join(str(label) for label in labels).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


HOLDOUT_SALT_ENV = "AAOS_HOLDOUT_SALT"
"""The environment variable holding the secret salt that re-draws every holdout variant (train ones ignore it)."""


def holdout_salt() -> str:
    """The holdout salt in force ("" when none is set: holdout variants are then the public ones)."""
    return os.environ.get(HOLDOUT_SALT_ENV, "")


def salt_fingerprint(salt: str | None = None) -> str | None:
    """What results and logs may say about the salt: a short hash of it, never the salt (None when unset)."""
    salt = holdout_salt() if salt is None else salt
    return hashlib.sha256(("aaos-holdout-salt\x1f" + salt).encode()).hexdigest()[:12] if salt else None
