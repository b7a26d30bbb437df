"""The Whoosh (BM25F) search index: a derived cache of the memory files, kept in step with
them (open, sync, rebuild), and the search entry, which runs a query's stages in order:
parse it (`query`), find the candidates that pass its filters (`postings`), rank and fuse them
(`rank`, `fusion`).

One module because its writers and its readers share one piece of state under one lock: the
Whoosh segments, the manifest that says which file versions they hold, the DIRTY marker
between the two, and the searcher reopened when another process commits. Every way of
bringing the index in step (`sync`, `sync_some`, `sync_few`, `rebuild`) ends in the one
locked step `_bring`/`_apply` that writes all three; the search entry reads the same state."""

# Whoosh ships no type information; the unknown-type reports would flag every call into it.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingTypeStubs=false
# pyright: reportUnknownParameterType=false, reportMissingParameterType=false
# pyright: reportUnknownLambdaType=false

from __future__ import annotations

import gc
import json
import logging
import os
import pickle
import struct
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memstore.errors import IndexUnavailable, InvalidMemory, InvalidQuery
from memstore.model import when
from memstore.model.fields import UNSCOPED
from memstore.model.memory import Memory, expiry
from memstore.search import bulk, manifest, rank
from memstore.search.manifest import Manifest, Stamp
from memstore.search.postings import Cache
from memstore.search.query import Hit, Query, fit_tokens, parse_query, plain_terms
from memstore.search.rank import Dense
from memstore.search.schema import (
    DOC_PREFIX,
    DocSection,
    doc_document,
    document,
    document_parts,
    index_schema,
    weighting,
)
from memstore.search.stubs import without_unused_modules

with without_unused_modules():
    from whoosh import index as windex
    from whoosh.query import And, Or, QueryError, Term, TermRange
    from whoosh.reading import ReaderClosed
    from whoosh.searching import Searcher
    from whoosh.writing import CLEAR

log = logging.getLogger(__name__)


Loader = Callable[[str], tuple[Memory | None, Stamp, str]]
"""Reads the file at a store-relative path: its memory (None if the file is gone), stamp and
content digest.

Raises InvalidMemory or OSError for a file that cannot be indexed."""

Digest = Callable[[str], str]
"""The content digest of the file at a store-relative path (`""` when it cannot be read)."""


RACY_NS = 2_000_000_000
"""A file modified this close to the moment it was indexed may change again within the same
timestamp (a file system's clock ticks every few milliseconds, or once a second or two), size
and all: its stamp cannot tell, so its content is compared too until it is older than this.
This is the window for a file system whose times are whole seconds (FAT, some network file
systems); one with finer times gets `RACY_FINE_NS` (see `racy_window`)."""
RACY_FINE_NS = 100_000_000
"""The window where file times have sub-second parts: Linux stamps files from a clock that
ticks every 1-10 ms, so 100 ms covers it with room."""


def _folder_time(folder: Path) -> int:
    """A folder's modification time in nanoseconds, -1 if it cannot be read."""
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return -1


def racy_window(mtime_ns: int) -> int:
    """How long after its modification a file's stamp may not tell a later edit apart: a
    time with no sub-second part suggests a file system that keeps whole seconds."""
    return RACY_NS if mtime_ns % 1_000_000_000 == 0 else RACY_FINE_NS


Progress = Callable[[int, int], None]
"""Called with (done, total) while a rebuild reads files or writes the index."""
_Note = tuple[Stamp, str, "manifest.Fields | None", "str | None"]
"""What a rebuild keeps of each file: its stamp, content digest, the memory's fields in the
manifest (None when it gave no memory), and why it could not be indexed (None when it could)."""


@dataclass(frozen=True, slots=True)
class Sync:
    """What a catch-up or rebuild did."""

    rebuilt: bool = False
    indexed: int = 0
    removed: int = 0
    skipped: tuple[str, ...] = ()
    """Files that could not be indexed (malformed), by store-relative path."""


# -- the index --------------------------------------------------------------------------------


def _restamped(
    files: Manifest, changed: Iterable[str], disk: dict[str, Stamp], digest: Digest
) -> dict[str, Stamp]:
    """Of the files whose stamps moved, those whose content did not (a store copied, moved or
    restored: new inodes and times, the same bytes), with their new stamps. Indexing them
    again cost a parse and a document each (seconds for a store of thousands) and left every
    old document deleted in its segment for good."""
    found: dict[str, Stamp] = {}
    for path in changed:
        before, known = files.stamps.get(path), files.digests.get(path)
        stamp = disk[path]
        if before is None or not known or before[1] != stamp[1]:
            continue  # new, unreadable when indexed, or of another size: changed
        if digest(path) == known:
            found[path] = stamp
    return found


def _suspects(
    files: Manifest, disk: dict[str, Stamp], digest: Digest, verify: AbstractSet[str]
) -> tuple[list[str], list[str]]:
    """Files whose stamps match `disk` but whose content must be compared (racy ones, and
    those in `verify`): (those whose content changed, racy ones now settled)."""
    changed: list[str] = []
    settled: list[str] = []
    now = time.time_ns()
    for path in sorted(files.racy | verify):
        stamp = disk.get(path)
        if stamp is None or files.stamps.get(path) != stamp:
            continue  # gone or re-stamped: re-indexed anyway
        if digest(path) != files.digests.get(path):
            changed.append(path)
        elif path in files.racy and stamp[0] + racy_window(stamp[0]) <= now:
            settled.append(path)
    return changed, settled


class Index:
    """The index in `directory`, with a manifest of the file stamps it reflects.

    `lock` is a context manager factory that orders writers across processes; every write to
    the index and the manifest happens under it, between a DIRTY marker's creation and removal.
    """

    def __init__(
        self,
        directory: Path,
        lock: Callable[[], AbstractContextManager[None]],
        vectors: bool = True,
    ):
        self.dir = directory
        self.vectors = vectors
        """Whether documents keep their term vectors, for feedback (see `schema.index_schema`)."""
        self.manifest_path = directory / manifest.FILE
        self.docs_path = directory / "docs.json"
        """The project documents the index holds: each file's stamp (see `sync_docs`)."""
        self.dirty_path = directory / "DIRTY"
        self._lock = lock
        self._mutex = threading.RLock()
        self._searcher: Searcher | None = None
        self._current_at = -1
        """The index folder's modification time when the searcher was last found current
        (-1: never): while it stays, and is older than a clock tick, no commit came since
        and the searcher needs no look at the tables of contents (a folder listing)."""
        self._cache = Cache()
        """What the current searcher has worked out, replaced with it (keeping what its
        segments hold)."""
        self._seen: Manifest | None = None
        """The manifest as this process last wrote or read it: files that still have these
        stamps need no look at the manifest (a JSON file as long as the store)."""
        self._seen_state: manifest.State | None = None
        """The manifest's files then: unchanged, they need not be read again; grown, only
        what its log gained is."""

    # -- state on disk --

    def _read_manifest(self) -> Manifest | None:
        """The manifest on disk, as a copy the caller may change; None if it is unreadable
        (the index is then rebuilt)."""
        known = (
            None
            if self._seen is None or self._seen_state is None
            else (self._seen, self._seen_state)
        )
        found = manifest.load(self.manifest_path, known)
        if found is None:
            return None
        self._seen, self._seen_state = found
        return found[0].copy()

    def _write_manifest(self, files: Manifest) -> None:
        # Under the index lock: no other process changes it meanwhile.
        state = manifest.write(self.manifest_path, files)
        if files.whole:
            self._seen, self._seen_state = files.copy(), state
        else:  # a part: the next look reads the whole again
            self._seen, self._seen_state = None, None

    def position(self) -> manifest.State | None:
        """The manifest's state as this process last read or wrote it (None: not yet): what
        its log gains after it, `manifest.logged_since` says."""
        return self._seen_state

    def recent(self, since_ns: int) -> set[str]:
        """The files, as this process last saw the manifest, indexed with a modification time
        at or after `since_ns`."""
        seen = self._seen
        if seen is None:
            return set()
        return {p for p, s in seen.stamps.items() if s[0] >= since_ns}

    def holds(self, disk: Mapping[str, Stamp], paths: AbstractSet[str], digest: Digest) -> bool:
        """Whether the index holds each of `paths` as `disk` stamps it (absent from both, or
        the same stamp; a racy entry's content compared by `digest`), read from their entries
        alone, without the lock; False when it cannot tell (then `sync_some` looks)."""
        if not self._usable():
            return False
        found = manifest.entries(self.manifest_path, paths)
        if found is None or not self._usable():
            return False
        for path in paths:
            entry, racy = found[path]
            stamp = disk.get(path)
            if entry is None or stamp is None:
                if entry is not None or stamp is not None:
                    return False
                continue
            if (int(entry[0]), int(entry[1]), int(entry[2])) != stamp:
                return False
            if racy and digest(path) != str(entry[3]):
                return False
        return True

    def settled(self) -> bool:
        """Whether the index is whole on disk: built, and no writer left it half-written."""
        return self._usable() and self.manifest_path.exists()

    def _usable(self) -> bool:
        return not self.dirty_path.exists() and _exists(self.dir)

    def close(self) -> None:
        """Release the open searcher, if any."""
        with self._mutex:
            self._drop_searcher()

    def _unavailable(self, e: Exception) -> IndexUnavailable:
        return IndexUnavailable(
            f"the search index at {self.dir} could not be read ({e}); run `memstore reindex`"
        )

    def _drop_searcher(self) -> None:
        """Forget the searcher; closing it may find its readers closed already (see
        `_OPEN_ERRORS`), which is what closing wants anyway."""
        searcher, self._searcher = self._searcher, None
        self._current_at = -1
        if searcher is not None:
            try:
                searcher.close()
            except _OPEN_ERRORS as e:
                log.debug("closing a searcher whose readers were closed: %s", e)

    # -- writing --

    def _open_for_write(self) -> Any:
        self.dir.mkdir(parents=True, exist_ok=True)
        if _exists(self.dir):
            try:
                ix = windex.open_dir(str(self.dir))
                if ix.schema == index_schema(self.vectors):
                    return ix
            except _OPEN_ERRORS as e:
                log.warning(
                    "search index at %s is unreadable (%s); rebuilding it", self.dir, str(e)
                )
        return windex.create_in(str(self.dir), index_schema(self.vectors))

    def _apply(
        self,
        files: Manifest,
        updates: list[tuple[str, Memory | None, Stamp, str]],
        removed: list[str],
        clear: bool = False,
        settled: Iterable[str] = (),
        restamped: Mapping[str, Stamp] | None = None,
        progress: Progress | None = None,
    ) -> None:
        """Write documents and the manifest between the DIRTY marker's creation and removal.
        `settled` racy files and `restamped` ones (their new stamps) change no document."""
        settled = set(settled)
        files.racy -= settled
        if files.changed is not None:
            files.changed |= settled
            files.changed.update(restamped or ())
            files.changed.update(removed)
            files.changed.update(path for path, *_ in updates)
        now = time.time_ns()
        for path, stamp in (restamped or {}).items():
            files.stamps[path] = stamp
            if stamp[0] + racy_window(stamp[0]) > now:
                files.racy.add(path)
            else:
                files.racy.discard(path)
        if not updates and not removed and not clear:
            self._write_manifest(files)  # no document changes
            return
        self.dirty_path.parent.mkdir(parents=True, exist_ok=True)
        self.dirty_path.touch()
        ix = self._open_for_write()
        writer = ix.writer(limitmb=128)
        total = len(updates)
        try:
            if not clear:
                _delete(writer, "path", [*removed, *(path for path, *_ in updates)])
            for path in removed:
                files.stamps.pop(path, None)
                files.digests.pop(path, None)
                files.racy.discard(path)
                files.fields.pop(path, None)
            now = time.time_ns()
            for done, (path, memory, stamp, digest) in enumerate(updates, 1):
                if progress is not None and (done % 500 == 0 or done == total):
                    progress(done, total)
                if memory is not None:
                    writer.add_document(**document(path, memory))
                    files.fields[path] = (
                        memory.name,
                        memory.type,
                        memory.status,
                        memory.description,
                        expiry(memory),
                    )
                else:
                    files.fields.pop(path, None)
                files.stamps[path], files.digests[path] = stamp, digest
                if stamp[0] + racy_window(stamp[0]) > now:
                    files.racy.add(path)
                else:
                    files.racy.discard(path)
        except BaseException:
            writer.cancel()
            raise
        if clear:
            writer.commit(mergetype=CLEAR)
            self.docs_path.unlink(missing_ok=True)  # the documents went with it
        else:
            writer.commit()
        self._write_manifest(files)
        self.dirty_path.unlink()

    def update(self, entries: list[tuple[str, Memory, Stamp, str]]) -> bool:
        """Index these memories (store-relative path, memory, file stamp, content digest) in
        place of old ones.

        Does nothing and returns False when the index is not built yet or not trustworthy:
        the next `sync` builds it from the files.
        """
        with self._mutex, self._lock():
            files = self._read_manifest()
            if files is None or not self._usable():
                return False
            self._apply(files, [(p, m, s, d) for p, m, s, d in entries], [])
            return True

    def remove(self, paths: list[str]) -> bool:
        """Drop the documents of these store-relative paths; False if the index is not built."""
        with self._mutex, self._lock():
            files = self._read_manifest()
            if files is None or not self._usable():
                return False
            self._apply(files, [], paths)
            return True

    def sync(
        self, disk: dict[str, Stamp], load: Loader, digest: Digest, progress: Progress | None = None
    ) -> Sync:
        """Catch up with the files: re-index those added, changed, renamed or deleted.

        `disk` maps every memory file (store-relative path) to its stamp; a file whose stamp
        was taken within RACY_NS of its indexing also has its content compared (`digest`). A
        missing, foreign or half-written (DIRTY) index is rebuilt instead.
        """
        result = self._sync(disk, load, digest, None, frozenset())
        if result is not None:
            return result
        if self.dirty_path.exists():
            log.warning("search index at %s was left half-written; rebuilding", self.dir)
        return self.rebuild(disk, load, digest, progress)

    def sync_some(
        self,
        disk: dict[str, Stamp],
        within: Callable[[str], bool],
        load: Loader,
        digest: Digest,
        verify: AbstractSet[str] = frozenset(),
    ) -> Sync | None:
        """`sync` for the files whose paths `within` accepts (a folder, a few paths): `disk`
        holds just those, and the index keeps its other files as they are. The content of the
        files in `verify` (seen to change) is compared even when their stamps match.

        Returns None, changing nothing, when the index must be rebuilt from every file.
        """
        return self._sync(disk, load, digest, within, verify)

    def sync_few(
        self, disk: dict[str, Stamp], paths: AbstractSet[str], load: Loader, digest: Digest
    ) -> Sync | None:
        """`sync_some` for a few `paths` (`disk` stamps those on disk), their entries read
        and written alone: the manifest is not parsed whole. None, changing nothing, when
        that cannot be done (no index, or a log to fold first): `sync_some` then does it."""
        with self._mutex, self._lock():
            if not self._usable():
                return None
            files = manifest.partial(self.manifest_path, paths)
            if files is None or not manifest.appendable(self.manifest_path, files.token):
                return None
            gone = [p for p in paths if p in files.stamps and p not in disk]
            return self._bring(files, disk, gone, load, digest, frozenset())

    def _sync(
        self,
        disk: dict[str, Stamp],
        load: Loader,
        digest: Digest,
        within: Callable[[str], bool] | None,
        verify: AbstractSet[str],
    ) -> Sync | None:
        seen = self._seen
        if seen is not None:
            current = not self.dirty_path.exists() and self.manifest_path.exists()
        else:  # this process's first look: the manifest, without the lock
            seen = self._read_manifest()
            current = seen is not None and self._usable()
        if seen is not None and current:
            stamps = seen.stamps
            if within is not None:
                stamps = {p: s for p, s in stamps.items() if within(p)}
            if stamps == disk and _suspects(seen, disk, digest, verify) == ([], []):
                return Sync()
        with self._mutex, self._lock():
            files = self._read_manifest()
            if files is None or not self._usable():
                return None
            gone = [p for p in files.stamps if p not in disk and (within is None or within(p))]
            return self._bring(files, disk, gone, load, digest, verify)

    def _bring(
        self,
        files: Manifest,
        disk: dict[str, Stamp],
        gone: list[str],
        load: Loader,
        digest: Digest,
        verify: AbstractSet[str],
    ) -> Sync:
        """Index what `disk` shows changed against `files` (all or part of the manifest, read
        under the lock held), and drop the `gone`."""
        stamps = files.stamps
        changed = [p for p, s in disk.items() if stamps.get(p) != s]
        restamped = _restamped(files, changed, disk, digest)
        changed = [p for p in changed if p not in restamped]
        reread, settled = _suspects(files, disk, digest, verify)
        changed.extend(reread)
        if not changed and not gone and not settled and not restamped:
            return Sync()
        updates, skipped = self._load_all(changed, disk, load, digest, None)
        self._apply(files, updates, gone, settled=settled, restamped=restamped)
        indexed = sum(1 for _, m, _, _ in updates if m is not None)
        return Sync(indexed=indexed, removed=len(gone), skipped=skipped)

    def sync_docs(
        self, disk: dict[str, Stamp], load: Callable[[str], list[DocSection]]
    ) -> Sync | None:
        """Catch the project documents up with `disk` (each file, relative to the repository's
        top, and its stamp): a changed file's sections are replaced, a gone file's dropped.
        `load` reads a file's sections. Returns None, changing nothing, when the index is not
        built yet (a memory catch-up builds it first).
        """
        if (self._read_docs() or {}) == disk and self._usable():
            return Sync()
        with self._mutex, self._lock():
            if self._read_manifest() is None or not self._usable():
                return None
            stamps = self._read_docs() or {}
            changed = sorted(p for p, s in disk.items() if stamps.get(p) != s)
            gone = sorted(p for p in stamps if p not in disk)
            if not changed and not gone:
                return Sync()
            self.dirty_path.touch()
            writer = self._open_for_write().writer(limitmb=128)
            now = time.time_ns()
            try:
                _delete(writer, "source", [f"{DOC_PREFIX}{path}" for path in [*gone, *changed]])
                for path in [*gone, *changed]:
                    stamps.pop(path, None)
                for path in changed:
                    stamp = disk[path]
                    updated = datetime.fromtimestamp(stamp[0] / 1e9, UTC)
                    at = updated.strftime("%Y-%m-%dT%H:%M:%SZ")
                    for number, section in enumerate(load(path)):
                        writer.add_document(**doc_document(section, number, at))
                    # Read within its timestamp's tick, a file may change again unseen: its
                    # stamp is not kept, so the next look reads it once more.
                    stamps[path] = stamp if stamp[0] + racy_window(stamp[0]) <= now else (0, 0, 0)
            except BaseException:
                writer.cancel()
                raise
            writer.commit()
            tmp = self.dir / f".docs.{os.getpid()}.{threading.get_ident()}.tmp"
            tmp.write_text(json.dumps(stamps, separators=(",", ":")), encoding="utf-8")
            os.replace(tmp, self.docs_path)
            self.dirty_path.unlink()
            return Sync(indexed=len(changed), removed=len(gone))

    def _read_docs(self) -> dict[str, Stamp] | None:
        """The documents' stamps on disk; None when there are none (not indexed yet)."""
        try:
            data: Any = json.loads(self.docs_path.read_text(encoding="utf-8"))
            return {str(p): (int(s[0]), int(s[1]), int(s[2])) for p, s in data.items()}
        except (OSError, ValueError, LookupError, TypeError, AttributeError):
            return None

    def rebuild(
        self,
        disk: dict[str, Stamp],
        load: Loader,
        digest: Digest,
        progress: Progress | None = None,
        procs: int = 1,
        written: Progress | None = None,
    ) -> Sync:
        """Index every file afresh (readers keep the old index until the new one is committed),
        in `procs` processes for a large store (see `bulk.build`); `progress(done, total)`
        follows the files as they are read, `written(done, total)` the documents as the
        index is written."""
        with self._mutex, self._lock():
            return self._rebuild(disk, load, digest, progress, procs, written)

    def _rebuild(
        self,
        disk: dict[str, Stamp],
        load: Loader,
        digest: Digest,
        progress: Progress | None,
        procs: int = 1,
        written: Progress | None = None,
    ) -> Sync:
        paths = sorted(disk)

        def read(path: str) -> tuple[bulk.Document | None, _Note]:
            try:
                memory, stamp, content = load(path)
            except (InvalidMemory, OSError) as e:
                # Remembered as seen, so the file is not retried until it changes.
                return None, (disk[path], digest(path), None, str(e))
            if memory is None:
                return None, (stamp, content, None, None)
            fields = (memory.name, memory.type, memory.status, memory.description, expiry(memory))
            return document_parts(path, memory), (stamp, content, fields, None)

        self.dirty_path.parent.mkdir(parents=True, exist_ok=True)
        self.dirty_path.touch()
        ix = self._open_for_write()
        writer = ix.writer()
        now = time.time_ns()  # before any file is read: a file changed since is racy
        try:
            segments, notes = bulk.build(
                writer.storage, writer.indexname, ix.schema, paths, read, procs, progress, written
            )
        except BaseException:
            writer.cancel()
            raise
        # The table of contents lists the new segments only (as Whoosh's CLEAR merge would
        # leave it, with the documents added): readers keep the old ones until then.
        writer.commit(mergetype=lambda _writer, _segments: segments)
        self.docs_path.unlink(missing_ok=True)  # the documents went with it
        files = Manifest({}, {}, set(), {})
        skipped: list[str] = []
        for path, (stamp, content, fields, problem) in zip(paths, notes, strict=True):
            if problem is not None:
                log.warning("not indexing %s: %s", path, problem)
                skipped.append(path)
            files.stamps[path], files.digests[path] = stamp, content
            if fields is not None:
                files.fields[path] = fields
            if stamp[0] + racy_window(stamp[0]) > now:
                files.racy.add(path)
        self._write_manifest(files)
        self.dirty_path.unlink()
        return Sync(rebuilt=True, indexed=len(files.fields), skipped=tuple(skipped))

    def _load_all(
        self,
        paths: list[str],
        disk: dict[str, Stamp],
        load: Loader,
        digest: Digest,
        progress: Progress | None,
    ) -> tuple[list[tuple[str, Memory | None, Stamp, str]], tuple[str, ...]]:
        updates: list[tuple[str, Memory | None, Stamp, str]] = []
        skipped: list[str] = []
        total = len(paths)
        for done, path in enumerate(paths, 1):
            try:
                memory, stamp, content = load(path)
            except (InvalidMemory, OSError) as e:
                log.warning("not indexing %s: %s", path, e)
                skipped.append(path)
                # Remembered as seen, so the file is not retried until it changes.
                memory, stamp, content = None, disk[path], digest(path)
            updates.append((path, memory, stamp, content))
            if progress is not None and (done % 500 == 0 or done == total):
                progress(done, total)
        return updates, tuple(skipped)

    # -- reading --

    def _current_searcher(self) -> Searcher:
        """A searcher on the latest committed index, reopened when another writer committed."""
        last: Exception | None = None
        for _ in range(20):
            try:
                folder = _folder_time(self.dir)
                if self._searcher is None:
                    ix = windex.open_dir(str(self.dir))
                    self._searcher = ix.searcher(weighting=weighting())
                    self._cache = Cache(self._searcher, self._cache.segments)
                elif (
                    0 <= folder == self._current_at
                    and folder + racy_window(folder) < time.time_ns()
                ):
                    pass  # no commit since the last look: it would have added a file
                elif not self._searcher.up_to_date():
                    self._searcher = self._searcher.refresh()
                    self._cache = Cache(self._searcher, self._cache.segments)
                # Taken before the look, so a commit during it moves the time past this one.
                self._current_at = folder
                return self._searcher
            except _OPEN_ERRORS as e:
                # A concurrent commit can remove a segment between reading the table of
                # contents and opening it; the next attempt sees the new generation.
                last = e
                self._drop_searcher()
        raise IndexUnavailable(
            f"the search index at {self.dir} cannot be opened ({last}); run `memstore reindex`"
        )

    def count(self, field: str, value: str) -> int:
        """How many indexed memories hold `value` in `field` (e.g. status, draft): documents
        counted from the filter cache, with no ranking and no stored field read."""
        with self._mutex:
            if self._searcher is None and not _exists(self.dir):
                return 0
            for attempt in range(3):
                searcher = self._current_searcher()
                try:
                    cache = self._cache
                    found = cache.docset(searcher, Term(field, value))
                    return len(found) - sum(
                        1
                        for _, start, _, deleted in cache.leaves
                        for d in deleted
                        if start + d in found
                    )
                except _OPEN_ERRORS as e:
                    if attempt == 2:
                        raise self._unavailable(e) from e
                    self.close()
        return 0

    def outside(self, scopes: Iterable[str]) -> set[str]:
        """The paths of the indexed memories whose scopes name none of `scopes` (a memory with
        no scope is never among them): what an agent of those scopes does not see. Reads the
        scope field's terms and only the documents of the other scopes."""
        allowed = {s.lower() for s in scopes} | {UNSCOPED}
        with self._mutex:
            if self._searcher is None and not _exists(self.dir):
                return set()
            for attempt in range(3):
                searcher = self._current_searcher()
                try:
                    cache = self._cache
                    inside = cache.docset(searcher, Or([Term("scope", s) for s in allowed]))
                    gone = {start + d for _, start, _, deleted in cache.leaves for d in deleted}
                    out: set[str] = set()
                    reader = searcher.reader()
                    for raw in reader.lexicon("scope"):
                        term = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
                        if term in allowed:
                            continue
                        for docnum in cache.docset(searcher, Term("scope", term)):
                            if docnum not in inside and docnum not in gone:
                                out.add(str(reader.stored_fields(docnum)["path"]))
                    return out
                except _OPEN_ERRORS as e:
                    if attempt == 2:
                        raise self._unavailable(e) from e
                    self.close()
        return set()

    def expired_count(self, today: str | None = None) -> int:
        """How many indexed memories are past their `expires` date (deprecated ones too)."""
        today = today or when.utcnow().strftime("%Y-%m-%d")
        with self._mutex:
            if self._searcher is None and not _exists(self.dir):
                return 0
            searcher = self._current_searcher()
            return len(self._cache.docset(searcher, TermRange("expires", "0", today, endexcl=True)))

    def state(self) -> object:
        """The manifest files' stamps (None without them): unchanged, so is what they list."""
        try:
            log_stat = self.manifest_path.with_name(manifest.LOG).stat()
            return (_file_stamp(self.manifest_path.stat()), (log_stat.st_ino, log_stat.st_size))
        except OSError:
            return None

    def files(self) -> tuple[object, dict[str, str]] | None:
        """The manifest's state (its file's stamp) and each indexed memory's content digest by
        store-relative path, as last committed; None when there is no usable index."""
        with self._mutex:
            if self._read_manifest() is None or self._seen is None:
                return None
            return self._seen_state, self._seen.digests

    def search(
        self, query: Query, today: str | None = None, dense: Dense | None = None
    ) -> list[Hit]:
        """The best `query.size` memories for `query.text` that pass every filter, best first.

        Deprecated and expired memories are left out unless `include_deprecated` (or
        `status="deprecated"`). With `graph`, memories linked to the text matches (1-2 hops)
        join with decaying scores. With `max_tokens`, only the leading whole hits that fit.
        `dense` adds semantic recall's list to the fusion, for a query of plain words.

        Raises:
            InvalidQuery: for query text Whoosh cannot run, naming the problem.
        """
        today = today or when.utcnow().strftime("%Y-%m-%d")
        hidden: list[Any] = []
        if not query.include_deprecated and query.status != "deprecated":
            hidden.append(Term("status", "deprecated"))
            hidden.append(TermRange("expires", "0", today, endexcl=True))
        hits = self._search(query, today, _filters(query), hidden, dense)
        if query.max_tokens is not None:
            hits = fit_tokens(hits, query.max_tokens, query.index_view)
        return hits

    def expired(self, query: Query, today: str | None = None) -> list[Hit]:
        """The best `query.size` memories past their `expires` date, not deprecated, that
        match `query.text` and its filters, by the words' score alone (no feedback, links or
        meaning): what a search that leaves them out can name as left out.

        Raises:
            InvalidQuery: for query text Whoosh cannot run, naming the problem.
        """
        today = today or when.utcnow().strftime("%Y-%m-%d")
        filters = [*_filters(query), TermRange("expires", "0", today, endexcl=True)]
        wanted = replace(query, feedback=False, graph=False, explain=False, max_tokens=None)
        return self._search(wanted, today, filters, [Term("status", "deprecated")], None)

    def _search(
        self,
        query: Query,
        today: str,
        filters: list[Any],
        hidden: list[Any],
        dense: Dense | None,
    ) -> list[Hit]:
        text = parse_query(query.text)
        words = plain_terms(query.text, text) if query.feedback else []
        hits: list[Hit] = []
        with self._mutex:
            if self._searcher is None and not _exists(self.dir):
                return []
            for attempt in range(3):
                searcher = self._current_searcher()
                try:
                    hits = self._ranked(searcher, text, filters, hidden, query, today, words, dense)
                    break
                except QueryError as e:
                    raise InvalidQuery(f"cannot search {query.text!r}: {e}") from e
                except _OPEN_ERRORS as e:
                    # A segment removed by another process's commit under a searcher that had
                    # not opened it yet: reopen on the new generation and run the query again.
                    if attempt == 2:
                        raise self._unavailable(e) from e
                    self.close()
        return hits

    def _ranked(
        self,
        searcher: Searcher,
        text: Any,
        filters: list[Any],
        hidden: list[Any],
        query: Query,
        today: str,
        words: list[str],
        dense: Dense | None = None,
    ) -> list[Hit]:
        """The candidates (the documents that pass the filters and are not hidden), ranked."""
        cache = self._cache
        allowed = cache.docset(searcher, And(filters)) if filters else None
        if allowed is not None and not allowed:
            return []  # Whoosh reads an empty filter as no filter at all
        mask = cache.docset(searcher, Or(hidden)) if hidden else None
        return rank.rank(
            searcher,
            cache,
            text,
            query,
            allowed=allowed,
            mask=mask,
            today=today,
            words=words,
            dense=dense,
        )


# What opening a damaged index can raise: it is then rebuilt from the files.
_OPEN_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    AttributeError,
    ImportError,
    pickle.UnpicklingError,
    struct.error,
    windex.IndexError,
    # Whoosh's reader refresh, retried after a concurrent commit removed a segment, closes the
    # old readers it did not reuse a second time and raises this: reopen from scratch.
    ReaderClosed,
)


def _filters(query: Query) -> list[Any]:
    """The filters `query` asks for, as Whoosh queries (every one must match)."""
    filters: list[Any] = []
    if query.type:
        filters.append(Term("type", query.type))
    if query.status:
        filters.append(Term("status", query.status))
    if query.owner:
        filters.append(Term("owner", query.owner))
    filters += [Term("tags", tag) for tag in query.tags]
    if query.since:
        filters.append(TermRange("updated", query.since, None))
    if query.scopes:
        wanted = dict.fromkeys([*(s.lower() for s in query.scopes), UNSCOPED])
        filters.append(Or([Term("scope", s) for s in wanted]))
    return filters


def _delete(writer: Any, field: str, values: Iterable[str]) -> None:
    """Delete the committed documents whose `field` holds one of `values`, through one
    searcher: Whoosh's `update_document` and `delete_by_term` each open a reader on every
    segment, per document."""
    values = list(values)
    if not values:
        return
    with writer.searcher() as searcher:
        for value in values:
            writer.delete_by_term(field, value, searcher=searcher)


def _file_stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    # A replaced file has a new inode (the old one was still in place when it was written)
    # and, a clock tick later, new times.
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _exists(directory: Path) -> bool:
    # Whoosh leaves a damaged table of contents open when reading it fails; its file object
    # is collected here rather than warning later, somewhere unrelated.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            return windex.exists_in(str(directory))
        except _OPEN_ERRORS as e:
            problem = str(e)
        gc.collect()
    if (directory, problem) not in _WARNED:  # once a process: each open asks again
        _WARNED.add((directory, problem))
        log.warning(
            "search index at %s is unreadable (%s); it is rebuilt from the memory files",
            directory,
            problem,
        )
    return False


_WARNED: set[tuple[Path, str]] = set()
"""The unreadable indexes this process has already named."""
