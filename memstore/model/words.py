"""Counts in words: `1 memory`, `2 memories`, the one spelling every message uses."""

from __future__ import annotations

IRREGULAR = {"memory": "memories", "identity": "identities", "entry": "entries"}
"""Plurals that are not the word and an `s`."""


def plural(count: int, word: str) -> str:
    """`1 memory`, `0 memories`, `2 files`: the count and the word in its number."""
    return f"{count} {word if count == 1 else IRREGULAR.get(word, word + 's')}"
