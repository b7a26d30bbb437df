"""Counts in messages agree with their number: `1 memory`, never `1 memories`."""

from __future__ import annotations

import ast

from memstore.model.words import plural
from tests.conftest import REPO

COUNTED = ("memories", "files", "problems", "events", "lines", "drafts", "heads", "commits")
"""Nouns a message counts: after a value in an f-string, they go through `plural`."""
SEVERAL = {
    "files given; at most": "refused for more than the limit: always several",
    "memories match but are deprecated": "the branch after the one for a single match",
    "files from {path": "the branch after the one for a single file",
    "{who} files sync does not move": "`who` is a word (your, their), not a count",
    "RULE_TYPES)} memories": "a list of types, not a count",
}
"""f-strings whose count is several by construction, and why."""


def test_plural_spells_the_number() -> None:
    assert plural(1, "memory") == "1 memory"
    assert plural(0, "memory") == "0 memories"
    assert plural(2, "file") == "2 files"
    assert plural(1, "problem") == "1 problem"


def test_no_message_puts_a_plural_noun_after_a_bare_count() -> None:
    """`f"{n} memories"` says `1 memories`; `f"{done}/{total} files"` (a pace) and
    a count of a constant or of several by construction are what they are."""
    found = []
    for path in sorted((REPO / "memstore").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.JoinedStr):
                continue
            parts = node.values
            for before, value, after in zip(
                [None, *parts[:-1]], parts, [*parts[1:], None], strict=True
            ):
                if not (isinstance(value, ast.FormattedValue) and isinstance(after, ast.Constant)):
                    continue
                if isinstance(before, ast.Constant) and str(before.value).endswith("/"):
                    continue  # done/total
                if ast.unparse(value.value).isupper():
                    continue  # a constant limit
                word = str(after.value).split()[0] if str(after.value).strip() else ""
                text = ast.unparse(node)
                if any(known in text for known in SEVERAL):
                    continue
                if str(after.value).startswith(" ") and word in COUNTED:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "\n".join(found)
