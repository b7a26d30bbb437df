"""Re-index memory files changed outside memstore (editors, git) while a server runs."""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from watchfiles import Change, watch

from memstore.config import STORE_CONFIG
from memstore.errors import MemstoreError
from memstore.search import upkeep as search
from memstore.storage.files import lock_file
from memstore.storage.store import Store

log = logging.getLogger(__name__)

DEBOUNCE_MS = 200
"""How long a burst of changes (a `git checkout`) may settle before one catch-up runs."""
LEADER_LOCK = "watch.lock"
"""In the store's cache folder: held by the one watcher that keeps the shared index current."""
FOLLOWER_LOCK = "watchers.lock"
"""In the store's cache folder: held shared by every other watcher of the store."""


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

    The servers of one store share its index, and each runs a watcher, which sees every
    change. One of them, the leader (holding `LEADER_LOCK`), indexes what changed; the others
    follow, and the first to see the leader gone (stopped, or killed) leads, catching up with
    whatever changed meanwhile. Eight servers each indexing every other's writes spent a fifth
    of their CPU on the same Whoosh commits. A leader leaves its own process's writes to that
    process's next search when no other watcher follows it.

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
        self.leading = False
        """Whether this watcher is the one that indexes the store's changes."""
        self._leader_fd: int | None = None
        self._follower_fd: int | None = None
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 10.0) -> Watcher:
        """Start watching and catch up once; returns when changes from now on will be seen."""
        self._thread = threading.Thread(target=self.run, name="memstore-watch", daemon=True)
        search.upkeep(self.store).first_look = self.ready
        self._thread.start()
        self.ready.wait(timeout)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the thread to end and wait for it."""
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        up = search.upkeep(self.store)
        up.watched = False
        if up.first_look is self.ready:
            up.first_look = None

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
        try:
            for batch in changes:
                # The first yield (a change, or the empty timeout set) means the watch is in
                # place; the catch-up then covers anything changed before it was. A follower
                # that comes to lead catches up too: its leader may have missed the last
                # changes.
                if not self.ready.is_set():
                    self._lead()
                    self._catch_up(None)
                elif not self.leading:
                    if self._lead():
                        self._catch_up(None)
                elif batch:
                    self._seen(batch, root)
                if not self.ready.is_set():
                    search.upkeep(self.store).watched = True
                    self.ready.set()
        finally:
            self.ready.set()
            for fd in (self._leader_fd, self._follower_fd):
                if fd is not None:
                    os.close(fd)
            self._leader_fd = self._follower_fd = None
            self.leading = False

    def _seen(self, batch: set[tuple[Change, str]], root: Path) -> None:
        """The leader's catch-up after a burst of changes. Files this process just wrote need
        no re-index when no other server follows: its next search indexes them
        (`Store.written`)."""
        rels = memory_files(batch, root)
        if rels and self._followed():
            self._catch_up(rels)
            return
        others = None if rels is None else [r for r in rels if not self.store.written.own(r)]
        if others is None or others:
            self._catch_up(others)
        elif rels:
            with self._changed:
                self.own_writes_seen += 1
                self._changed.notify_all()

    def _lead(self) -> bool:
        """Lead when no other watcher of the store does (else follow); whether it now leads.
        Where the locks cannot be taken, every watcher leads, as each did on its own."""
        cache = self.store.cache
        try:
            cache.mkdir(exist_ok=True)
            fd = lock_file(cache / LEADER_LOCK, 0)
            if fd is None:
                if self._follower_fd is None:
                    follower = os.open(
                        cache / FOLLOWER_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644
                    )
                    fcntl.flock(follower, fcntl.LOCK_SH)
                    self._follower_fd = follower
                return False
        except OSError as e:
            log.info("indexing changes without the other servers' watchers: %s", e)
            self.leading = True
            return True
        self._leader_fd, self.leading = fd, True
        if self._follower_fd is not None:
            os.close(self._follower_fd)
            self._follower_fd = None
        return True

    def _followed(self) -> bool:
        """Whether another watcher of the store follows this one (holds `FOLLOWER_LOCK`)."""
        try:
            fd = os.open(
                self.store.cache / FOLLOWER_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644
            )
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            os.close(fd)  # lets go of the lock taken to look
        return False

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
