"""The command line's words for paths: a path as the person would type it (relative to the
working directory when under it). Counts are `model.words.plural`."""

from __future__ import annotations

import os
from pathlib import Path


def shown_path(path: Path) -> str:
    """`path` relative to the working directory when it lies under it, else as it is."""
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except (OSError, ValueError):
        return str(path)
