"""Keeping a store's search index in step with its files: scans, catch-ups, rebuilds, and
indexing what the write path just wrote.

`index.py` is Whoosh; this module decides when and what to (re)index, from the files' stamps
and the type folders' modification times.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock, Timeout

from memstore.errors import InvalidQuery, StoreLocked
from memstore.index import BUDGETS, Hit, Index, Progress, Stamp, Sync, fit_tokens
from memstore.memory import Memory, render
from memstore.status import Status

if TYPE_CHECKING:
    from memstore.store import Store

log = logging.getLogger(__name__)

RESCAN_SECONDS = 2.0
"""Without a watcher, how old a search's view of in-place edits may be."""


class Upkeep:
    """One store's search index and how current this process last saw it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.index = Index(store.cache / "index", self._locked)
        self.seen_dirs: tuple[tuple[str, int], ...] | None = None
        """The folders' modification times at this process's last catch-up."""
        self.scanned_at = 0.0

    @contextmanager
    def _locked(self) -> Generator[None]:
        # Its own lock, so searches catching up never wait for a git commit; writers take the
        # store lock first, then this one.
        cache, timeout = self.store.cache, self.store.lock_timeout
        cache.mkdir(exist_ok=True)
        lock = FileLock(cache / "index.lock", timeout=timeout)
        try:
            with lock:
                yield
        except Timeout as e:
            raise StoreLocked(
                f"search index busy: could not take {lock.lock_file} within "
                f"{timeout:g}s; another memstore process is indexing — try again"
            ) from e

    def _folders(self) -> list[os.DirEntry[str]]:
        with os.scandir(self.store.root) as entries:
            return sorted(
                (
                    e
                    for e in entries
                    if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
                ),
                key=lambda e: e.name,
            )

    def _scan(self) -> dict[str, Stamp]:
        """Every memory file (store-relative path) and its stamp, as `Store.memories` finds
        them."""
        found: dict[str, Stamp] = {}
        for folder in self._folders():
            with os.scandir(folder.path) as entries:
                for e in entries:
                    if (
                        e.name.endswith(".md")
                        and not e.name.startswith(".")
                        and e.is_file(follow_symlinks=False)
                    ):
                        st = e.stat(follow_symlinks=False)
                        found[f"{folder.name}/{e.name}"] = (st.st_mtime_ns, st.st_size, st.st_ino)
        return found

    def _dir_stamps(self) -> tuple[tuple[str, int], ...]:
        # Adding, deleting, renaming or atomically replacing a file (memstore, git checkout,
        # git pull, most editors) changes its folder's mtime; in-place edits are the watcher's.
        folders = self._folders()
        root = (".", self.store.root.stat().st_mtime_ns)
        return (root, *((f.name, f.stat(follow_symlinks=False).st_mtime_ns) for f in folders))

    def _load(self, rel: str) -> tuple[Memory | None, Stamp]:
        path = self.store.root / rel
        try:
            st = path.stat()
        except FileNotFoundError:
            return None, (0, 0, 0)
        return self.store.read_file(path)[0], (st.st_mtime_ns, st.st_size, st.st_ino)

    def written(self, changes: list[tuple[Path, Memory]]) -> None:
        """Index files memstore just wrote; a failure leaves the work to the next catch-up."""
        entries: list[tuple[str, Memory, Stamp]] = []
        for path, memory in changes:
            try:
                st = path.stat()
                same = path.read_bytes() == render(memory).encode("utf-8")
            except OSError:
                continue
            if same:  # else someone changed it already: the catch-up will index that version
                rel = self.store.rel(path)
                entries.append((rel, memory, (st.st_mtime_ns, st.st_size, st.st_ino)))
        try:
            self.index.update(entries)
        except (StoreLocked, OSError) as e:
            log.warning("search index not updated (%s); the next search catches up", e)

    def catch_up(self, progress: Progress | None = None) -> Sync:
        """`Store.catch_up`: re-index what changed since the index last saw the files."""
        seen, at = self._dir_stamps(), time.monotonic()
        result = self.index.sync(self._scan(), self._load, progress)
        self.seen_dirs, self.scanned_at = seen, at
        return result

    def reindex(self, progress: Progress | None = None) -> Sync:
        """`Store.reindex`: rebuild the index from every file."""
        seen, at = self._dir_stamps(), time.monotonic()
        result = self.index.rebuild(self._scan(), self._load, progress)
        self.seen_dirs, self.scanned_at = seen, at
        return result

    def search(
        self,
        query: str,
        *,
        type: str | None,
        status: str | None,
        tags: tuple[str, ...],
        owner: str | None,
        since: str | None,
        limit: int | None,
        budget: str | None,
        max_tokens: int | None,
        include_deprecated: bool,
        explain: bool,
        graph: bool,
        index_view: bool,
    ) -> list[Hit]:
        """`Store.search`: check the filters, catch up when the files may have moved on, then
        search and fit the results to `max_tokens`."""
        types = self.store.types
        if type is not None and type not in types:
            raise InvalidQuery(f"unknown type {type!r}; types are: {', '.join(types)}")
        if status is not None and status not in {s.value for s in Status}:
            raise InvalidQuery(
                f"unknown status {status!r}; statuses are: {', '.join(s.value for s in Status)}"
            )
        if budget is not None and budget not in BUDGETS:
            raise InvalidQuery(f"unknown budget {budget!r}; budgets are: {', '.join(BUDGETS)}")
        if limit is None:
            limit = BUDGETS[budget or "normal"]
        if limit < 1:
            raise InvalidQuery(f"limit must be at least 1, got {limit}")
        if max_tokens is not None and max_tokens < 1:
            raise InvalidQuery(f"max_tokens must be at least 1, got {max_tokens}")
        if since is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}(T[0-9:]+Z?)?", since):
            raise InvalidQuery(f"invalid date {since!r}: use YYYY-MM-DD (e.g. 2026-11-30)")
        # A folder's mtime moves with every file created, deleted, renamed or replaced in it;
        # an edit in place does not move it, so without a watcher a full scan also runs when
        # the last one is older than RESCAN_SECONDS.
        stale = not self.store.watched and time.monotonic() - self.scanned_at > RESCAN_SECONDS
        if stale or self.seen_dirs is None or self._dir_stamps() != self.seen_dirs:
            try:
                self.catch_up()
            except StoreLocked as e:
                log.warning("searching the index as it is: %s", e)
        hits = self.index.search(
            query,
            type=type,
            status=status,
            tags=tags,
            owner=owner,
            since=since,
            limit=limit,
            include_deprecated=include_deprecated,
            explain=explain,
            graph=graph,
        )
        if max_tokens is not None:
            hits = fit_tokens(hits, max_tokens, index_view)
        return hits
