"""The fenced code blocks of README.md and the documentation site (docs/), and what the docs tests may do with
each: run it in the fast tier, run it in the slow tier, run it against a real server, or leave it with a reason.

A Python or shell block runs as it stands unless the line right before its fence is a directive:

    <!-- test: skip; REASON -->     never run (it installs packages, trains for minutes, needs a token...)
    <!-- test: slow; REASON -->     run in the slow tier (python -m pytest -m slow)
    <!-- test: server -->           run against a real `aaos serve` that the test starts on a free port; the
                                    block's `127.0.0.1:8000` and `localhost:8000` are rewritten to it
    <!-- test: continue -->         a block that goes on from the page's previous runnable block: they run
                                    together, as one test, in one scratch folder (Python blocks in one
                                    namespace), in the tier of the first

Every fence names its language; `python` and `bash` are the runnable ones (`py`, `sh`, `shell` and `console`
are refused, so no block can slip past under another name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = REPO_ROOT / "docs"
RUNNABLE = ("python", "bash")
REFUSED = ("py", "python3", "sh", "shell", "console", "zsh")
"""Languages that would be runnable under another name: a block must say python or bash."""
MODES = ("skip", "slow", "server", "continue")
NEEDS_REASON = ("skip", "slow")
DIRECTIVE = re.compile(r"<!-- test: (?P<mode>[a-z]+)(?:; (?P<reason>.*?))? -->")
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^`\n]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, the directive before it (if any) and its text."""

    document: Path
    line: int
    language: str
    mode: str | None
    reason: str | None
    body: str

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(REPO_ROOT)}:{self.line}"

    @property
    def runnable(self) -> bool:
        return self.language in RUNNABLE


def documents() -> list[Path]:
    """README.md and every page of the site."""
    return [REPO_ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(document: Path) -> list[Block]:
    """The fenced blocks of one document, in order."""
    text = document.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip(" ").splitlines()
        directive = DIRECTIVE.fullmatch(before[-1].strip()) if before else None
        body = "\n".join(row.removeprefix(match["indent"]) for row in match["body"].splitlines())
        found.append(Block(document, line, match["info"].strip().split(" ")[0], directive and directive["mode"],
                           directive and directive["reason"], body + "\n"))
    return found


def stray_directives(document: Path) -> list[int]:
    """Lines holding a directive that no fence follows."""
    lines = document.read_text(encoding="utf-8").splitlines()
    # a fence's 0-based index is the 1-based number of the line before it
    before_a_fence = {index for index, line in enumerate(lines) if line.lstrip().startswith("```")}
    return [number for number, line in enumerate(lines, 1)
            if DIRECTIVE.fullmatch(line.strip()) and number not in before_a_fence]


def chains(document: Path) -> list[list[Block]]:
    """The runnable blocks of a document as tests: each block with the `continue` blocks that follow it."""
    found: list[list[Block]] = []
    for block in blocks(document):
        if not block.runnable:
            continue
        if block.mode == "continue":
            assert found, f"{block.where}: `continue` needs a runnable block before it on the page"
            found[-1].append(block)
        else:
            found.append([block])
    return found
