"""Searching the store as it was at a past moment, read from git: the tree of the last commit
at or before that time, indexed on its own under `.memstore/asof/` (never the live index or
the working tree), with the statuses the history supported then."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock, Timeout

from memstore.errors import InvalidMemory, StoreLocked
from memstore.git import gitlog, objects
from memstore.model import when
from memstore.model.memory import Memory
from memstore.model.status import Status
from memstore.search.index import Index, Loader
from memstore.search.manifest import Stamp
from memstore.search.query import Hit, Query, since_read
from memstore.storage import trust
from memstore.storage import verdicts as kept
from memstore.storage.files import version_of

if TYPE_CHECKING:
    from memstore.storage.store import Store

log = logging.getLogger(__name__)

FOLDER = "asof"
KEPT = 8
"""How many past trees' indexes the cache keeps (the least recently used go first)."""
READY = "READY"


@dataclass(frozen=True, slots=True)
class AsOf:
    """A search answered from the store as it was at `at`: the commit it read, and the hits."""

    at: str
    """The moment asked for, as a UTC time."""
    commit: str | None
    """The last commit at or before `at` (None: the store had no commit yet)."""
    committed: str | None
    """When that commit was made (UTC)."""
    hits: tuple[Hit, ...]


def search(store: Store, query: Query, as_of: str, now: datetime | None = None) -> AsOf:
    """The memories that best matched `query` at the moment `as_of` names (`2026-11-01`: the
    start of that day, UTC; `7d`: a week ago; a UTC time), best first.

    Deprecated memories (then) are left out unless the query asks for them; a confirmation
    shows as confirmed only when the history up to then supported it.

    Raises:
        InvalidQuery: for a moment or query that cannot be read.
        GitError: when git cannot read the history.
    """
    at = when.stamp(when.moment(as_of, now, "as-of"))
    # A past tree's index keeps no term vectors (indexing it is what a cold ask waits for), so
    # a moment is searched by the words alone, without pseudo-relevance feedback.
    query = since_read(replace(query, feedback=False))
    query.check(store.types)
    found = gitlog.commit_at(store.repo, at)
    if found is None:
        return AsOf(at, None, None, ())
    commit, committed = found
    # The history's verdicts up to the commit are worked out beside the index, so git's
    # side of that replay runs while this process indexes the tree.
    # Both sides parse memory versions: the tree's are among the history's, parsed once.
    parsed: dict[str, Memory | None] = {}
    with ThreadPoolExecutor(1) as pool:
        replayed = pool.submit(_verdicts, store, commit, parsed)
        try:
            index, blobs = _index_of(store, commit, parsed)
        finally:
            verdicts, kept = replayed.result()
    if not kept:
        _keep(store, commit, verdicts)
    try:
        hits = index.search(query, today=at[:10])
    finally:
        index.close()
    prefix = store.trust.prefix
    shown = tuple(_shown(h, verdicts, prefix + h.path, blobs.get(h.path)) for h in hits)
    return AsOf(at, commit, when.stamp(datetime.fromtimestamp(committed, UTC)), shown)


def _verdicts(
    store: Store, commit: str, parsed: dict[str, Memory | None]
) -> tuple[trust.Trust, bool]:
    """What the history up to `commit` supports, and whether it was read from beside that
    commit's index (else replayed: `_keep` it there once the index is built)."""
    file = store.cache / FOLDER / commit / kept.CACHE_FILE
    found = kept.load(
        file,
        store.trust.signers is not None,
        gitlog.shallow_commits(store.repo),
        store.trust.basis(),
    )
    if found is not None and found.head == commit:
        return found, True
    return trust.full(store.repo, store.root, store.trust.signers, commit, parsed), False


def _keep(store: Store, commit: str, verdicts: trust.Trust) -> None:
    """Keep `verdicts` beside the index of `commit` (see `_verdicts`)."""
    file = store.cache / FOLDER / commit / kept.CACHE_FILE
    with _held(store.cache):
        if file.parent.is_dir():  # pruned meanwhile: nothing to keep it beside
            signed = store.trust.signers is not None
            cut = gitlog.shallow_commits(store.repo)
            kept.save(file, verdicts, signed, cut, store.trust.basis())


def _shown(hit: Hit, verdicts: trust.Trust, path: str, blob: str | None) -> Hit:
    """`hit` as the history up to the commit supported it (see `kept.judged`)."""
    owner = verdicts.owners.get(path, hit.owner)
    status = hit.status
    if status == Status.CONFIRMED:
        verdict = verdicts.verdicts.get(f"{path}\0{blob}")
        if verdict is None or not verdict.ok or verdicts.blobs.get(path) != blob:
            status = trust.UNVERIFIED
    if (status, owner) == (hit.status, hit.owner):
        return hit
    return replace(hit, status=status, owner=owner)


def _index_of(
    store: Store, commit: str, parsed: dict[str, Memory | None]
) -> tuple[Index, dict[str, str]]:
    """The search index of commit `commit`'s tree (built on first use, under
    `.memstore/asof/<commit>/`) and the tree's memory files with their blobs (`parsed`:
    memories by blob, shared with the history's replay)."""
    folder = store.cache / FOLDER
    where = folder / commit
    blobs = gitlog.tree_files(store.repo, commit, store.root)
    # Built only under `_held`, which the index's own writes need not take again.
    # Feedback is refused as of a moment: its term vectors would cost a tenth of the build.
    index = Index(where / "index", nullcontext, vectors=False)
    if (where / READY).exists():
        os.utime(where)  # the most recently used are kept
        return index, blobs
    with _held(store.cache):
        if not (where / READY).exists():
            shutil.rmtree(where, ignore_errors=True)
            disk = {rel: _stamp(blob) for rel, blob in blobs.items()}
            load = _loader(store, blobs, parsed)

            def digest(rel: str) -> str:
                return blobs.get(rel, "")[:12]

            seed = _nearest(folder)
            if seed is None:
                index.rebuild(disk, load, digest)
            else:
                # Another moment's index, brought to this tree: stamps stand for blobs, so
                # only the memories that differ between the two trees are indexed again.
                shutil.copytree(seed / "index", where / "index")
                index.sync(disk, load, digest)
            (where / READY).write_text(commit + "\n", encoding="utf-8")
        _prune(folder)
    return index, blobs


def _nearest(folder: Path) -> Path | None:
    """The most recently used past index that is complete, if any. Call with the lock held."""
    try:
        ready = [p for p in folder.iterdir() if (p / READY).exists()]
    except OSError:
        return None
    return max(ready, key=lambda p: p.stat().st_mtime, default=None)


def _stamp(blob: str) -> Stamp:
    # No file: the blob stands in for its identity, and time 0 is never "just written".
    return (0, 0, int(blob[:12], 16))


def _loader(store: Store, blobs: dict[str, str], parsed: dict[str, Memory | None]) -> Loader:
    read: dict[str, bytes] = {}

    def load(rel: str) -> tuple[Memory | None, Stamp, str]:
        if not read:  # the tree's blobs in one `git cat-file --batch`, not one round trip each
            read.update(objects.read_blobs(store.repo, sorted(set(blobs.values()))))
        blob = blobs[rel]
        data = read.get(blob)
        if data is None:
            data = objects.read_blob(store.repo, blob)
        if blob in parsed:
            memory = parsed[blob]
        else:
            memory = parsed[blob] = trust.parse_bytes(data)
        if memory is None:
            raise InvalidMemory(f"{rel} was not a valid memory then")
        return memory, _stamp(blobs[rel]), version_of(data)

    return load


@contextmanager
def _held(cache: Path) -> Generator[None]:
    """The lock under which past indexes are built and pruned (one for them all)."""
    cache.mkdir(exist_ok=True)
    lock = FileLock(cache / f"{FOLDER}.lock", timeout=30)
    try:
        with lock.acquire(poll_interval=0.01):
            yield
    except Timeout as e:
        raise StoreLocked(
            f"could not take {lock.lock_file} within 30s: another process is indexing a past "
            "tree; try again"
        ) from e


def _prune(folder: Path) -> None:
    """Drop the least recently used past indexes beyond KEPT. Call with the lock held."""
    try:
        built = sorted(
            (p for p in folder.iterdir() if p.is_dir()),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
    except OSError:
        return
    for old in built[KEPT:]:
        shutil.rmtree(old, ignore_errors=True)
