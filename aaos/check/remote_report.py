"""What `aaos check --url` reports: one result per check (pass, fail or not applicable, with its evidence and,
for a failure, how to fix it), as Markdown for people and JSON for machines."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["pass", "fail", "not applicable"]

REMOTE_CHECKS: dict[str, str] = {
    "published": "GET /health, /metadata and /schema answer; /schema gives the action and observation schemas; "
                 "WS /ws opens a session and answers a reset.",
    "contract": "Every reset and step answer (WS, and HTTP where the server has the routes) is an observation "
                "object with `done` a boolean and `reward` a finite number or null; the observation carries "
                "what its published schema requires, with the declared types; `state` answers an object.",
    "determinism": "The same reset seed and the same actions give the same observations and rewards, on two "
                   "fresh sessions (where reset takes a seed; said as not seedable otherwise).",
    "session_isolation": "Two WebSocket sessions played interleaved each get what they get when played alone.",
    "malformed_actions": "Schema-derived hostile actions (wrong types, missing and unknown fields, values past "
                         "their bounds, huge and deeply nested values): an action the schema forbids is refused "
                         "with an error frame and changes nothing (state before and after, and the episode "
                         "replayed around it, are unchanged); none closes the connection or goes unanswered.",
    "malformed_frames": "WebSocket frames outside the protocol (not JSON, not an object, unknown type, no data, a "
                        "binary frame, deep nesting) get an error frame and leave the session playable.",
    "malformed_http": "Hostile HTTP bodies on /reset and /step (bad JSON, wrong types, hostile actions, deep "
                      "nesting, a wrong Content-Type) never get a 5xx; an action the schema forbids gets a 4xx and, "
                      "where HTTP sessions are stateful, changes nothing.",
    "step_after_done": "A step after `done` is refused with an error (or answered done again), never crashes "
                       "the session or continues the episode, and a reset starts a new one.",
    "ladder": "A random-legal policy (actions sampled from the action schema, seeded) and a noop policy (the "
              "least action the schema allows) play paired episodes: the reward must respond to the actions.",
    "return_vs_score": "Where the server reports a score (`score` in the final observation, its `info` or "
                       "`metadata`), the episode's return (the sum of its rewards) equals it.",
}
"""Every check, in the order they run and are reported, with what it verifies."""
LABELS: dict[Status, str] = {"pass": "PASS", "fail": "FAIL", "not applicable": "N/A"}


@dataclass(frozen=True, slots=True)
class RemoteResult:
    """One check's outcome: `summary` in a sentence, `evidence` (what was sent and what came back), and for a
    failure `fix` (how to fix it)."""

    name: str
    status: Status
    summary: str
    evidence: tuple[str, ...] = ()
    fix: str = ""


@dataclass(frozen=True, slots=True)
class RemoteReport:
    """Every check's result for the server at `url`; `server` is what its /metadata says, `settings` how it was
    checked."""

    url: str
    results: tuple[RemoteResult, ...]
    server: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """No check failed (not applicable is not a failure)."""
        return not self.failed

    @property
    def failed(self) -> list[str]:
        return [r.name for r in self.results if r.status == "fail"]

    def result(self, name: str) -> RemoteResult:
        for result in self.results:
            if result.name == name:
                return result
        raise KeyError(f"no check named {name!r}; checks are: {', '.join(REMOTE_CHECKS)}")

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "passed": self.passed, "failed": self.failed, "server": self.server,
                "settings": self.settings,
                "checks": [{**asdict(r), "evidence": list(r.evidence), "checks_that": REMOTE_CHECKS[r.name]}
                           for r in self.results]}

    def json_text(self) -> str:
        return json.dumps(self.to_json(), indent=2, default=str) + "\n"

    def markdown(self) -> str:
        name = self.server.get("name") or "unnamed server"
        version = f" {self.server['version']}" if self.server.get("version") else ""
        counts = ", ".join(f"{sum(r.status == status for r in self.results)} {status}" for status in LABELS)
        settings = ", ".join(f"{key} {value}" for key, value in self.settings.items())
        lines = [f"# aaos check --url {self.url}", "",
                 f"Server: **{name}**{version}. Checked with {settings}.", "",
                 f"**{'PASSED' if self.passed else 'FAILED'}**: {counts}.", "",
                 "| check | status | summary |", "|---|---|---|",
                 *(f"| {r.name} | {LABELS[r.status]} | {_cell(r.summary)} |" for r in self.results)]
        for result in self.results:
            lines += ["", f"## {result.name}: {LABELS[result.status]}", "",
                      f"Checks that: {REMOTE_CHECKS[result.name]}", "", result.summary]
            if result.evidence:
                lines += ["", "Evidence:", *(f"- {_inline(line)}" for line in result.evidence)]
            if result.fix:
                lines += ["", f"How to fix: {result.fix}"]
        return "\n".join(lines) + "\n"


def _inline(text: str) -> str:
    return text.replace("\n", " ")


def _cell(text: str) -> str:
    return _inline(text).replace("|", "\\|")
