"""git's commit-graph and its changed-path filters: what makes a file's history quick to read.

`git log -- PATH` looks at every commit and, without help, compares each commit's tree with its
parent's down to the file: in a store of 100,000 memories (type folders of 11,000 files) that
costs over a second per file, for a history of 8,000 commits. The commit-graph's changed-path
(Bloom) filters let git skip the commits that did not touch the file: 45 ms. git (2.39) uses
them for a single path only, so a history of several files is read a path at a time
(`gitlog.store_commits`).

A fresh clone has no commit-graph (`git clone` writes none); `ensure` writes one with the
filters, once, under git's own lock, when the tree is large enough to need them. Once a graph
holds filters, git keeps writing them (`git gc --auto`, which a write starts when loose objects
pile up, writes the graph again).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from memstore.errors import GitError
from memstore.git.repository import Repo, git

_CHUNK = 12
"""A chunk's entry in a commit-graph file's table: a 4-byte id, an 8-byte offset."""


def _layers(repo: Repo) -> list[Path]:
    info = repo.common_dir / "objects" / "info"
    single = info / "commit-graph"
    layers = [single] if single.is_file() else []
    chain = info / "commit-graphs" / "commit-graph-chain"
    try:
        names = chain.read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        names = []
    layers.extend(chain.parent / f"graph-{name}.graph" for name in names)
    return layers


def _has_filters(path: Path) -> bool:
    """Whether the commit-graph file at `path` carries changed-path filters (a BIDX chunk)."""
    try:
        with path.open("rb") as f:
            head = f.read(8)
            if len(head) < 8 or head[:4] != b"CGPH":
                return False
            chunks = head[6]
            table = f.read(_CHUNK * (chunks + 1))
    except OSError:
        return False
    ids = {struct.unpack_from(">4s", table, i * _CHUNK)[0] for i in range(len(table) // _CHUNK)}
    return b"BIDX" in ids and b"BDAT" in ids


def has_filters(repo: Repo) -> bool:
    """Whether the repository's commit-graph carries changed-path filters (reads a few bytes
    of each of its files)."""
    return any(_has_filters(layer) for layer in _layers(repo))


LARGE_INDEX = 2 << 20
"""The size of git's index (bytes; about 100 per file) from which `ensure` writes the filters:
below, a log of several files costs milliseconds without them (0.15 s for ten files of a store
of 10,000 memories and 800 commits, whose index is 1 MB)."""


def ensure(repo: Repo) -> bool:
    """Write the commit-graph with changed-path filters when the repository has none and its
    tree is large (every reachable commit: once, about 9 s for 8,000 commits over 100,000
    files on 2 cores, where a log of ten files without them costs 14 s each time; a large
    tree with a short history is quick either way). True when filters are there afterwards;
    False for a small tree or when git could not write them (another process holds git's
    lock, a read-only repository): the history is then read as before, only slower.
    """
    if has_filters(repo):
        return True
    try:
        if os.stat(repo.git_dir / "index").st_size < LARGE_INDEX:
            return False
    except OSError:
        return False
    if repo.common_dir in _failed or not os.access(repo.common_dir / "objects", os.W_OK):
        return False
    try:
        git(repo, "commit-graph", "write", "--reachable", "--changed-paths", "--no-progress")
    except GitError:
        pass
    if has_filters(repo):
        return True
    _failed.add(repo.common_dir)  # a shallow clone, say: not asked again by this process
    return False


_failed: set[Path] = set()
"""The repositories where this process could not write the filters."""
