"""The command line's words for counts and paths: `1 memory`, `2 memories`, and a path as the
person would type it (relative to the working directory when under it)."""

from __future__ import annotations

import os
from pathlib import Path

IRREGULAR = {"memory": "memories", "identity": "identities", "entry": "entries"}
"""Plurals that are not the word and an `s`."""


def plural(count: int, word: str) -> str:
    """`1 memory`, `0 memories`, `2 files`: the count and the word in its number."""
    return f"{count} {word if count == 1 else IRREGULAR.get(word, word + 's')}"


def shown_path(path: Path) -> str:
    """`path` relative to the working directory when it lies under it, else as it is."""
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except (OSError, ValueError):
        return str(path)
