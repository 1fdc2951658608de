"""What the conformance checker reports: one result per check, and the report of one environment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["passed", "failed", "skipped"]
CHECKS: tuple[str, ...] = (
    "determinism", "cross_process_determinism", "malformed_input", "serialisable", "clone", "legal_actions",
    "contracts", "reward_range", "return_is_score", "ladder", "hidden_ids",
)
"""The checks, in the order they run and are reported."""
LABELS: dict[Status, str] = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP"}


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check: passed (message says what was checked), failed (what is wrong and how to reproduce it) or
    skipped (why it could not run)."""

    name: str
    status: Status
    message: str

    def __str__(self) -> str:
        return f"{LABELS[self.status]} {self.name}: {self.message}"


@dataclass(frozen=True, slots=True)
class CheckReport:
    """What `check_env` found: one result per check, in the order of CHECKS."""

    env: str
    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        """No check failed (a skipped check is not a failure)."""
        return not self.failed

    @property
    def failed(self) -> list[str]:
        """The names of the failed checks."""
        return [r.name for r in self.results if r.status == "failed"]

    def result(self, name: str) -> CheckResult:
        for result in self.results:
            if result.name == name:
                return result
        raise KeyError(f"no check named {name!r}; checks are: {', '.join(CHECKS)}")

    def __str__(self) -> str:
        counts = ", ".join(f"{sum(r.status == status for r in self.results)} {status}" for status in LABELS)
        failed = f"; failed: {', '.join(self.failed)}" if self.failed else ""
        return "\n".join([f"aaos check {self.env}", *(str(r) for r in self.results), counts + failed])


class CheckFailed(Exception):
    """A check found a problem (the message says what, and how to reproduce it)."""
