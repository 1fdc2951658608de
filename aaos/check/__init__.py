"""The conformance checker: does an environment honour the protocol the platform relies on?

    import aaos
    report = aaos.check_env("toy")
    print(report)              # one line per check: PASS / FAIL / SKIP, what was checked or what is wrong
    assert report.passed

Like Gymnasium's check_env, but for what AAOS needs of an environment: determinism within a process and across
processes (PYTHONHASHSEED), malformed input that never raises and never pays, JSON-only state and observations,
independent clones, legal actions that are accepted, the info and observation contracts, rewards whose sum is
the score, a reward ladder (noop < random < champion), and ground truth that no observation shows too early.
Every failure says what is wrong and how to reproduce it. `aaos check ENV` runs it from the command line.

One function per check, each taking the `Subject` (the environment under check): determinism.py (in process;
across processes, whose subprocesses live in child.py), malformed.py (with the fuzzer in fuzz.py), clones.py,
legal.py, and episodes.py (the checks made on every step of the ladder's shared episodes, and the ladder).
"""

from __future__ import annotations

from collections.abc import Callable

from aaos.check.child import start_children, stop_children
from aaos.check.clones import check_clone
from aaos.check.common import Subject, raised
from aaos.check.determinism import check_cross_process, check_determinism
from aaos.check.episodes import PER_STEP, check_ladder, check_per_step
from aaos.check.legal import check_legal_actions
from aaos.check.malformed import check_malformed_input
from aaos.check.report import CHECKS, CheckFailed, CheckReport, CheckResult
from aaos.envs import DEFAULT_ENV, kit_of, spec

__all__ = ["CHECKS", "CheckFailed", "CheckReport", "CheckResult", "check_env"]


def _run(name: str, check: Callable[[], str | None], skipped: Callable[[], str]) -> CheckResult:
    try:
        passed = check()
    except CheckFailed as failure:
        return CheckResult(name, "failed", str(failure))
    except Exception as error:
        return CheckResult(name, "failed", f"raised {raised(error)}")
    if passed is None:
        return CheckResult(name, "skipped", skipped())
    return CheckResult(name, "passed", passed)


def check_env(env_id: str = DEFAULT_ENV, *, episodes: int = 6, seed: int = 0, fuzz: int = 2000) -> CheckReport:
    """Check a registered environment against the protocol; see the module's docstring for the checks.

    episodes: episodes per policy (noop, random, champion) for the ladder and the per-step checks, on train seeds
        of the default task, cycling through the train scenarios.
    seed: the seed of the episodes played by the determinism, malformed-input, clone and legal-actions checks.
    fuzz: how many malformed joint actions the malformed-input check sends.
    """
    if episodes < 2:
        raise ValueError(f"episodes must be at least 2 (the ladder needs intervals), got {episodes}")
    if seed < 0 or fuzz < 1:
        raise ValueError(f"seed must be non-negative and fuzz positive, got seed={seed}, fuzz={fuzz}")
    subject = Subject(env_id, kit_of(env_id), spec(env_id), episodes, seed, fuzz)
    children = start_children(env_id, subject.task, subject.scenario, seed)
    checks: dict[str, Callable[[], str | None]] = {
        "determinism": lambda: check_determinism(subject),
        "cross_process_determinism": lambda: check_cross_process(subject, children),
        "malformed_input": lambda: check_malformed_input(subject),
        "clone": lambda: check_clone(subject),
        "legal_actions": lambda: check_legal_actions(subject),
        "ladder": lambda: check_ladder(subject),
        **{name: (lambda name=name: check_per_step(subject, name)) for name in PER_STEP},
    }
    try:
        results = tuple(_run(name, checks[name], lambda: subject.skip_reason) for name in CHECKS)
    finally:
        stop_children(children)
    return CheckReport(env_id, results)
