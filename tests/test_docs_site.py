"""The front door: README.md is a landing page (the Hub Space's front matter first, at most 12 KB, every relative
link and image resolving), the documentation site builds with `mkdocs build --strict` (no broken link, anchor or
reference), and every code block either runs in tests/test_docs_code.py or says why not."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docs_blocks import MODES, NEEDS_REASON, REFUSED, REPO_ROOT, blocks, documents, stray_directives

README = REPO_ROOT / "README.md"
README_LIMIT_BYTES = 12 * 1024
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(?P<title>.+?) *$", re.M)
TEST_TALLY = re.compile(r"\b\d[\d,]* (?:tests|passed)\b")
"""A count of tests in prose: it is stale within a day (CI prints the count)."""


def github_anchor(title: str) -> str:
    """The anchor GitHub (and the Hub) give a heading: lowercase, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(document: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", document.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {github_anchor(match["title"]) for match in HEADING.finditer(text)}


def test_the_readme_is_a_landing_page_within_12_kb() -> None:
    data = README.read_bytes()
    assert data.startswith(b"---\ntitle: AAOS\n"), "the Hub Space's front matter must stay at the top of README.md"
    assert len(data) <= README_LIMIT_BYTES, f"README.md is {len(data):,} bytes; move detail into docs/"


def test_every_relative_link_of_the_readme_resolves() -> None:
    targets = [match["target"] for match in LINK.finditer(README.read_text(encoding="utf-8"))]
    assert targets, "README.md links to nothing"
    broken = []
    for target in targets:
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = README if not path else (REPO_ROOT / path)
        if not file.is_file() or (anchor and anchor not in anchors(file)):
            broken.append(target)
    assert not broken, f"README.md links that do not resolve: {broken}"


@pytest.mark.parametrize("document", documents(), ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_every_code_block_names_its_language_and_any_skip_its_reason(document: Path) -> None:
    for block in blocks(document):
        assert block.language, f"{block.where}: name the block's language (python, bash, text, json, ...)"
        assert block.language not in REFUSED, f"{block.where}: write `python` or `bash`, not {block.language!r}"
        assert block.mode in (None, *MODES), f"{block.where}: unknown directive {block.mode!r}; one of {MODES}"
        if block.mode in NEEDS_REASON:
            assert block.reason, f"{block.where}: `{block.mode}` needs a reason: <!-- test: {block.mode}; why -->"
        assert block.mode is None or block.runnable, f"{block.where}: a directive before a {block.language} block"
    assert not stray_directives(document), f"{document}: a test directive with no fence right after it"


@pytest.mark.parametrize("document", documents(), ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_no_document_states_a_test_count(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    assert not TEST_TALLY.findall(text), f"{document}: test counts go stale; CI's output has them"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the [docs] extra (requirements-docs.txt) builds the site")
    pytest.importorskip("mkdocstrings_handlers.python", reason="the [docs] extra (requirements-docs.txt)")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO_ROOT, capture_output=True, text=True,
                          env=dict(os.environ, NO_MKDOCS_2_WARNING="1"), timeout=300)
    assert done.returncode == 0, done.stderr[-5000:]
    reference = (tmp_path / "site" / "reference" / "kit" / "index.html").read_text(encoding="utf-8")
    assert 'id="aaos.core.kit.EnvKit"' in reference, "the API reference was not rendered from the docstrings"
    assert "<li><code>environment</code>: " in reference, "docs/plain_docstrings.py did not list EnvKit's fields"
