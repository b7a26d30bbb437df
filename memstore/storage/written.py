"""The record of what this process's writes changed, kept beside the store for the search index:
the write path fills it in; search's upkeep takes it, and the watcher tells its own writes by it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

WROTE_KEPT = 4096
"""How many of its own recent writes a store remembers for the watcher."""


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class Written:
    """The memory files (store-relative) one process is writing, and those it wrote."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._written: list[str] = []
        self._wrote: dict[str, tuple[int, int, int] | None] = {}
        self._writing: Counter[str] = Counter()
        """Memory files a write of this process is changing now (see `begin`)."""
        self._lock = threading.Lock()

    def begin(self, rels: Iterable[str]) -> None:
        """Mark memory files a write of this process is about to change, until `end`: a
        watcher's event for them meanwhile is this process's own. A write's files change
        before its commit lands; a watcher that saw them then would index them again, in its
        own thread, beside the writes that follow."""
        with self._lock:
            self._writing.update(rels)

    def end(self, rels: Iterable[str]) -> None:
        """End `begin`'s mark (the write landed, and `landed` was told, or it failed and put
        the files back)."""
        with self._lock:
            self._writing.subtract(rels)
            self._writing = +self._writing  # only the marks still held

    def landed(self, rels: Iterable[str]) -> None:
        """Remember memory files this process wrote, for the search index, with the stamp
        each has now."""
        with self._lock:
            for rel in rels:
                self._written.append(rel)
                self._wrote[rel] = _stamp(self.root / rel)
                if len(self._wrote) > WROTE_KEPT:
                    del self._wrote[next(iter(self._wrote))]

    def own(self, rel: str) -> bool:
        """Whether the file at `rel` is being written by this process or is as this process
        last wrote it (a watcher's event for it is this process's own write)."""
        with self._lock:
            if self._writing[rel] > 0:
                return True
            seen = self._wrote.get(rel)
        return seen is not None and seen == _stamp(self.root / rel)

    def take(self) -> list[str]:
        """The memory files this process wrote since the last call."""
        with self._lock:
            taken, self._written = self._written, []
        return taken
