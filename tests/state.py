"""What a refused write must leave unchanged: HEAD, git status and every file in the store."""

from __future__ import annotations

import hashlib
from pathlib import Path

from memstore.storage.store import Store
from tests.conftest import git


def snapshot(store: Store) -> tuple[str, str, dict[str, str]]:
    """HEAD, `git status --porcelain` and a hash of every file under the store (cache aside)."""
    head = git(store.root, "rev-parse", "HEAD").strip()
    status = git(store.root, "status", "--porcelain", "--untracked-files=all", "--ignored")
    # The derived caches under `.memstore/` (a server warms its verdicts at start) aside.
    status = "".join(line for line in status.splitlines(True) if ".memstore/" not in line)
    files = {
        p.relative_to(store.root).as_posix(): _digest(p)
        for p in sorted(store.root.rglob("*"))
        if not p.is_dir() and ".memstore" not in p.parts and ".git" not in p.parts
    }
    return head, status, files


def _digest(path: Path) -> str:
    if path.is_symlink():
        return "symlink -> " + str(path.readlink())
    if not path.is_file():
        return "special"
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]
