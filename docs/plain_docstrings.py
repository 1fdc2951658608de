"""A griffe extension for the API reference (mkdocs.yml loads it): the project's docstrings are plain text, in
Gymnasium's style, and this turns their field lists into Markdown lists without changing the docstrings.

A field list is a paragraph whose first line is `name: what it is` (or `a, b: ...`, or `name(args): ...`), each
entry's further lines indented; a plain line among the entries stays a paragraph of its own. Markdown would run
such a paragraph into one line."""

from __future__ import annotations

import re
from typing import Any

import griffe

ENTRY = re.compile(r"(?P<names>[a-z_]\w*(?:\([^)]*\))?(?:, [a-z_]\w*(?:\([^)]*\))?)*): (?P<text>.*)")


def field_lists(text: str) -> str:
    """The docstring with each field-list paragraph as a Markdown list; every other paragraph as it was."""
    return "\n\n".join(_paragraph(paragraph) for paragraph in text.split("\n\n"))


def _paragraph(paragraph: str) -> str:
    lines = paragraph.split("\n")
    if not ENTRY.fullmatch(lines[0]):
        return paragraph
    blocks: list[str] = []
    for line in lines:
        entry = ENTRY.fullmatch(line)
        if entry:
            blocks.append(f"- `{entry['names']}`: {entry['text']}")
        elif line.startswith(" ") and blocks:
            blocks[-1] += " " + line.strip()
        else:
            blocks.append(f"\n{line}\n")
    return "\n".join(blocks)


class FieldLists(griffe.Extension):
    """Rewrites every loaded object's docstring with `field_lists`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = field_lists(obj.docstring.value)
