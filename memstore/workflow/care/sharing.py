"""The catalog's word index of the memories, read for the duplicate hint after a write
(`steward.similar`) without opening the catalog: no word tables, rules, trust or history
reader loaded, and the catalog not brought in step (the files that differ from its last
look's HEAD are named for the hint to read itself). `catalog` writes the index (a `keys` row
of kind ALIKE for each word of each memory not deprecated)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from memstore.errors import UnsafePath
from memstore.git import refs
from memstore.git.objects import blob_sha
from memstore.git.repository import READ_ONLY, git, repo_path
from memstore.storage.files import is_memory_path, read_regular

if TYPE_CHECKING:
    from memstore.storage.store import Store

CATALOG = "catalog.sqlite"
"""`catalog.FILE`, spelled here so that a hint loads no catalog code."""
ALIKE = "a"
"""The kind of the `keys` rows that hold a memory's words (`likeness.words`)."""
META = "alike"
VERSION = "1"
"""Written in the catalog's `meta` under META with its tables: a catalog without it (an older
one, rebuilt at its next opening) is not read."""


Sharing = tuple[list[tuple[str, str, str, str, str]], set[str]]
"""Name, type, status, description and expiry day of memories, and paths to read instead."""


def sharing(store: Store, mine: frozenset[str]) -> Sharing | None:
    """The memories not deprecated that share at least half of `mine` (`likeness.words`), as
    the catalog last saw them, without bringing it in step; and the memory files that may
    differ from that (those that differ between its last look's HEAD and HEAD, those loose
    then), whose rows are left out for the caller to read. None when there is no catalog of
    this version yet.

    A memory at least half as alike as the hint asks (Jaccard 0.5) shares at least half of
    `mine`: the words' rows in the `keys` index say which, not a look at every memory.

    Raises:
        GitError: when git cannot say what the commits since changed.
    """
    path = store.cache / CATALOG
    if not mine or not path.is_file():
        return None
    import sqlite3  # here: a store without a catalog never loads it

    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=store.lock_timeout)
    except sqlite3.Error:
        return None
    try:
        found = db.execute("SELECT key, value FROM meta WHERE key IN (?, 'look')", (META,))
        meta = {str(k): str(v) for k, v in found}
        look: dict[str, Any] = json.loads(meta.get("look") or "{}")
        seen, loose = str(look["head"]), [str(p) for p in look["loose"]]
        if meta.get(META) != VERSION:
            return None
        marks = ", ".join("?" * len(mine))
        sql = (
            f"SELECT path FROM keys WHERE kind = ? AND key IN ({marks}) "
            "GROUP BY path HAVING COUNT(*) >= ?"
        )
        paths = [p for (p,) in db.execute(sql, (ALIKE, *sorted(mine), (len(mine) + 1) // 2))]
        rows: dict[str, tuple[str, str, str, str, str]] = {}
        for first in range(0, len(paths), 500):
            chunk = paths[first : first + 500]
            sql = (
                "SELECT path, name, type, status, description, expires FROM memories "
                f"WHERE name IS NOT NULL AND path IN ({', '.join('?' * len(chunk))})"
            )
            rows.update((r[0], tuple(r[1:])) for r in db.execute(sql, chunk))
        head = refs.head(store.repo)
        if head is None:
            return None
        maybe = set(loose) | (_differing(store, seen, head) if head != seen else set[str]())
        changed = _changed(store, db, maybe)
    except (sqlite3.Error, ValueError, TypeError, KeyError):  # a damaged file, no look
        return None
    finally:
        db.close()
    return [r for p, r in rows.items() if p not in changed], changed


def _changed(store: Store, db: Any, paths: set[str]) -> set[str]:
    """Those of `paths` whose file is not the blob the catalog read (a file memstore
    committed shows as differing from HEAD until git refreshes its index's stat data, so a
    look's loose files are mostly the same as their rows): a read and a hash each."""
    held: dict[str, str] = {}
    ordered = sorted(paths)
    for first in range(0, len(ordered), 500):
        chunk = ordered[first : first + 500]
        sql = f"SELECT path, blob FROM memories WHERE path IN ({', '.join('?' * len(chunk))})"
        held.update((str(p), str(b)) for p, b in db.execute(sql, chunk))
    changed: set[str] = set()
    for rel in ordered:
        try:
            data = read_regular(store.root / rel)
        except (OSError, UnsafePath):
            data = None
        if data is None:
            if rel in held:
                changed.add(rel)  # gone: its row is left out
            continue
        if held.get(rel) != blob_sha(data):
            changed.add(rel)
    return changed


def _differing(store: Store, old: str, new: str) -> set[str]:
    """The memory files (store-relative) whose versions differ between two commits: one
    `git diff-tree`, which compares the trees in C.

    Raises:
        GitError: when git fails (`old` gone).
    """
    prefix = repo_path(store.repo, store.root).rstrip("/")
    args = ["diff-tree", "-r", "--no-renames", "--name-only", "-z", old, new]
    out = git(store.repo, *args, "--", prefix or ".", env=READ_ONLY)
    lead = f"{prefix}/" if prefix and prefix != "." else ""
    return {
        rel for p in out.split("\0") if p.startswith(lead) and is_memory_path(rel := p[len(lead) :])
    }
