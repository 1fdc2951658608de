"""Seeds: where randomness comes from, and which seeds belong to which split.

Every random draw in AAOS comes from a `random.Random` built here from a label and a seed, never
from the global generator, so the same label and seed give the same draws in any process.

The holdout salt re-draws every holdout variant. Without one the holdout is *public*: anyone can draw the same
variants from the code (reproducible, but an agent can recognise an episode by its first observation and replay a
twin). With one it is *salted*: the salt comes from AAOS_HOLDOUT_SALT, or for one evaluation (an evaluation
server, one benchmark run) from `salted(new_salt())`, which holds it in a context variable, never in the
process's environment, a log or a file; results carry only its fingerprint and say which holdout they are of
(`split_label`).
"""

from __future__ import annotations

import hashlib
import os
import random
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

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


_SALT: ContextVar[str | None] = ContextVar("aaos_holdout_salt", default=None)
"""The salt of the evaluation running in this context (`salted`); None: AAOS_HOLDOUT_SALT's."""


def holdout_salt() -> str:
    """The holdout salt in force: the evaluation's (`salted`), else AAOS_HOLDOUT_SALT ("" when neither is set:
    holdout variants are then the public ones)."""
    salt = _SALT.get()
    return os.environ.get(HOLDOUT_SALT_ENV, "") if salt is None else salt


@contextmanager
def salted(salt: str) -> Iterator[None]:
    """Holdout variants drawn within (in this thread or asyncio task, and the tasks it starts) use `salt`. An
    environment draws its variant when it is built and reset: build and reset it within."""
    if not salt:
        raise ValueError("a holdout salt must not be empty (an empty one is the public holdout)")
    token = _SALT.set(salt)
    try:
        yield
    finally:
        _SALT.reset(token)


SALT_BYTES = 16


def new_salt() -> str:
    """A fresh secret salt from the operating system's randomness (a secret, not simulation randomness: nothing
    reproduces it, which is the point; only its fingerprint may be shown)."""
    return secrets.token_hex(SALT_BYTES)


def salt_fingerprint(salt: str | None = None) -> str | None:
    """What results and logs may say about the salt: a short hash of it, never the salt (None when unset)."""
    salt = holdout_salt() if salt is None else salt
    return hashlib.sha256(("aaos-holdout-salt\x1f" + salt).encode()).hexdigest()[:12] if salt else None


PUBLIC_HOLDOUT, SALTED_HOLDOUT = "public holdout", "salted holdout"


def split_label(split: str | None, fingerprint: str | None) -> str | None:
    """What a result is of, as records and leaderboards say it: "train", "public holdout" (no salt: reproducible
    from the public code, so an agent may have seen its episodes) or "salted holdout" (under a secret salt)."""
    if split != "holdout":
        return split
    return SALTED_HOLDOUT if fingerprint else PUBLIC_HOLDOUT
