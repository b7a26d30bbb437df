"""What the write path refuses before it writes: a target through a symlink or outside the
store, a stale `expected_version` (with the diff since), and files with uncommitted edits."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from memstore import history
from memstore.errors import Conflict, InvalidMemory
from memstore.files import version_of

if TYPE_CHECKING:
    from memstore.store import Store, Versioned


def target(store: Store, type: str, name: str) -> Path:
    """The path a new memory is written to, refusing symlinks and anything outside the store.

    Raises:
        InvalidMemory: when the type folder or the file is a symlink or not a plain folder/file.
    """
    folder = store.root / type
    path = folder / f"{name}.md"
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise InvalidMemory(
            f"{type}/ in the store is a symlink or not a folder; memstore does not write "
            "through it: replace it with a plain folder"
        )
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise InvalidMemory(
            f"{type}/{name}.md is a symlink or not a regular file; memstore does not write "
            "through it: remove it"
        )
    if not path.resolve().is_relative_to(store.root):
        raise InvalidMemory(f"{type}/{name}.md resolves outside the store {store.root}")
    return path


def check_version(store: Store, name: str, current: Versioned, expected: str | None) -> None:
    """Raise Conflict, showing what changed, if `current` is not at version `expected`."""
    if expected is None or expected == current.version:
        return
    text = (store.root / current.path).read_bytes().decode("utf-8")
    old = text_at_version(store, store.root / current.path, expected)
    if old is None:
        detail = f"version {expected} is not in the history; the file now reads:\n{text}"
    else:
        detail = "".join(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                text.splitlines(keepends=True),
                f"{current.path} (version {expected}, which you read)",
                f"{current.path} (version {current.version}, now)",
            )
        )
    raise Conflict(
        f"'{name}' changed since you read it (you read version {expected}, it is now "
        f"{current.version}); read it again and reapply your change",
        current.version,
        detail,
    )


def text_at_version(store: Store, path: Path, version: str, depth: int = 50) -> str | None:
    """The committed content of `path` whose version is `version`, among recent commits."""
    if not re.fullmatch(r"[0-9a-f]{12}", version):
        return None
    for revision in history.log(store.repo, path, limit=depth):
        data = history.blob(store.repo, revision.commit, path)
        if data is not None and version_of(data) == version:
            return data.decode("utf-8", "replace")
    return None


def refuse_uncommitted(store: Store, paths: list[Path]) -> None:
    """Raise Conflict if a file to be written has changes nobody committed yet.

    Such a change is someone's work in progress (a hand edit, a file not yet added):
    writing over it would lose it, or sweep it into this identity's commit.
    """
    existing = [p for p in paths if p.exists()]
    if existing and history.dirty(store.repo, existing):
        where = ", ".join(store.rel(p) for p in existing)
        raise Conflict(
            f"{where} has changes that are not committed (a hand edit in progress?); "
            f"commit them (git commit -- {where}) or discard them, then retry"
        )
