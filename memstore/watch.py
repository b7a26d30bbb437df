"""Re-index memory files changed outside memstore (editors, git) while a server runs."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from watchfiles import Change, watch

from memstore import search
from memstore.config import STORE_CONFIG
from memstore.errors import MemstoreError
from memstore.store import Store

log = logging.getLogger(__name__)

DEBOUNCE_MS = 200
"""How long a burst of changes (a `git checkout`) may settle before one catch-up runs."""


def relevant(change: Change, path: str, root: Path) -> bool:
    """Whether a change can affect the index: a memory file or a type folder, not the cache,
    git, a temp file or a record file at the root."""
    del change
    # Called for every event under the store, git's object and lock files among them (several
    # dozen a write, in each server): string tests, no path objects.
    top = str(root)
    if not path.startswith(top) or path[len(top) : len(top) + 1] != os.sep:
        return False
    parts = path[len(top) + 1 :].split(os.sep)
    if not parts[0] or parts[0].startswith("."):
        return False
    if len(parts) == 1:  # a type folder comes or goes; a root file (ledger.jsonl) is no memory
        return "." not in parts[0] or parts[0] == STORE_CONFIG
    return not parts[-1].startswith(".")


def memory_files(batch: Iterable[tuple[Change, str]], root: Path) -> list[str] | None:
    """The memory files (`<type>/<name>.md`, store-relative) a burst of changes touched, or
    None when a folder itself came or went, and every folder must be looked at again."""
    found: list[str] = []
    for _, path in batch:
        try:
            parts = Path(path).relative_to(root).parts
        except ValueError:
            continue
        if len(parts) == 1 and not Path(path).is_file():
            return None  # a type folder created, deleted or renamed (or a file deleted)
        if len(parts) == 2 and parts[1].endswith(".md"):
            found.append("/".join(parts))
    return found


class Watcher:
    """A background thread that catches the index up whenever files under the store change.

    `start()` returns once the file system is being watched; `stop()` ends the thread.
    Also a context manager: `with Watcher(store): ...`.
    """

    def __init__(self, store: Store, debounce_ms: int = DEBOUNCE_MS) -> None:
        self.store = store
        self.debounce_ms = debounce_ms
        self.stop_event = threading.Event()
        self.ready = threading.Event()
        self.catch_ups = 0
        """How many catch-ups the watcher has run."""
        self.own_writes_seen = 0
        """How many bursts of changes were this process's own writes (no catch-up needed)."""
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 10.0) -> Watcher:
        """Start watching and catch up once; returns when changes from now on will be seen."""
        self._thread = threading.Thread(target=self.run, name="memstore-watch", daemon=True)
        self._thread.start()
        self.ready.wait(timeout)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the thread to end and wait for it."""
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        search.upkeep(self.store).watched = False

    def wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until `predicate()` holds, re-checking after each catch-up; False on timeout."""
        with self._changed:
            return self._changed.wait_for(predicate, timeout)

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run(self) -> None:
        """Watch until `stop_event` is set (blocking; `start()` runs it in a thread)."""
        root = self.store.root
        changes = watch(
            root,
            watch_filter=lambda change, path: relevant(change, path, root),
            debounce=self.debounce_ms,
            step=50,
            stop_event=self.stop_event,
            rust_timeout=200,
            yield_on_timeout=True,
            raise_interrupt=False,
        )
        for batch in changes:
            # The first yield (a change, or the empty timeout set) means the watch is in place;
            # the catch-up then covers anything changed before it was. Files this process just
            # wrote need no re-index: its next search indexes them (`Store.take_written`).
            if not self.ready.is_set():
                self._catch_up(None)
            elif batch:
                rels = memory_files(batch, root)
                others = None if rels is None else [r for r in rels if not self.store.wrote(r)]
                if others is None or others:
                    self._catch_up(others)
                elif rels:
                    with self._changed:
                        self.own_writes_seen += 1
                        self._changed.notify_all()
            if not self.ready.is_set():
                search.upkeep(self.store).watched = True
                self.ready.set()
        self.ready.set()

    def _catch_up(self, rels: list[str] | None) -> None:
        """Index the memory files `rels`, or catch up with every folder when None."""
        try:
            if rels is None:
                result = search.catch_up(self.store)
            else:
                result = search.upkeep(self.store).changed(self.store, rels)
            # Embedded here, off any query's path: the next recall finds the vectors current.
            search.upkeep(self.store).embed(self.store)
        except (MemstoreError, OSError) as e:
            log.warning("could not re-index after a change: %s", e)
            return
        with self._changed:
            self.catch_ups += 1
            self._changed.notify_all()
        if result.indexed or result.removed:
            log.info("re-indexed %d and removed %d file(s)", result.indexed, result.removed)
