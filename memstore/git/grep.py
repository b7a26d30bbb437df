"""Finding the files that mention some words with `git grep`: git reads the working tree in C,
so a change that must find what refers to a few memories reads no file that does not."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from memstore.git.repository import PLAIN_PATHS, READ_ONLY


def files_naming(folder: Path, words: Iterable[str]) -> list[Path] | None:
    """The files under `folder`, a folder of a git working tree (tracked, or untracked and not
    ignored), whose text holds any of `words` as they are; None when git cannot say (the caller
    then looks itself)."""
    patterns = [arg for w in dict.fromkeys(words) for arg in ("-e", w)]
    if not patterns:
        return []
    try:
        proc = subprocess.run(
            ["git", *PLAIN_PATHS, "grep", "--untracked", "-l", "-z", "-F", *patterns, "--", "."],
            cwd=folder,  # (git prints the paths relative to it)
            capture_output=True,
            env={**os.environ, **READ_ONLY},
            check=False,
        )
    except OSError:
        return None
    if proc.returncode == 1:  # git grep's "nothing matched"
        return []
    if proc.returncode != 0:
        return None
    return [folder / p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p]
