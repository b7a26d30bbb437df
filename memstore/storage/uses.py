"""Which drafts each identity recalled and read whole, counted in the git-ignored cache: how
often a draft is relied on is what its confirmation is worth, and a draft someone used is one
they can judge."""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memstore.model.identity import identity_key

if TYPE_CHECKING:
    from memstore.storage.reading import Reader

log = logging.getLogger(__name__)

USES_FILE = "uses.log"
"""One line per draft recalled (`r`) or read whole (`g`): `kind<TAB>identity<TAB>name`."""
TAIL = 1 << 20
"""Only the last this many bytes are read: the counts follow recent use, and a read stays
small however long the log grows."""

RECALL = "r"
GET = "g"


def note(store: Reader, kind: str, names: Iterable[str]) -> None:
    """Count `names` (drafts) as recalled or read by the acting identity. Never raises: a
    read-only checkout still recalls."""
    lines = "".join(f"{kind}\t{store.identity or '-'}\t{n}\n" for n in dict.fromkeys(names))
    if not lines:
        return
    path = store.cache / USES_FILE
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
    try:
        try:
            fd = os.open(path, flags, 0o644)
        except FileNotFoundError:  # no cache folder yet
            store.cache.mkdir(exist_ok=True)
            fd = os.open(path, flags, 0o644)
        try:
            os.write(fd, lines.encode("utf-8"))  # O_APPEND: concurrent writers never tear it
        finally:
            os.close(fd)
    except OSError as e:
        log.info("cannot count the use: %s", e)


@dataclass(frozen=True, slots=True)
class Uses:
    """How often each draft was recalled, and which identities read which whole."""

    recalled: Counter[str] = field(default_factory=Counter[str])
    recalled_by: dict[str, set[str]] = field(default_factory=dict[str, set[str]])
    """Identity key → the drafts its recalls returned."""
    read_by: dict[str, set[str]] = field(default_factory=dict[str, set[str]])
    """Identity key → the drafts it read whole (`memory_get`)."""

    def used(self, identity: str | None) -> set[str]:
        """The drafts `identity` recalled and read whole."""
        if not identity:
            return set()
        key = identity_key(identity)
        return self.read_by.get(key, set()) & self.recalled_by.get(key, set())


def counts(store: Reader) -> Uses:
    """What the cache's log says (the end of it, see TAIL)."""
    path = store.cache / USES_FILE
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL))
            data = f.read()
    except OSError:
        return Uses()
    if len(data) == TAIL:
        data = data.partition(b"\n")[2]  # a line cut by the tail is no line
    out = Uses()
    for line in data.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            continue
        kind, who, name = parts
        if kind == RECALL:
            out.recalled[name] += 1
            out.recalled_by.setdefault(identity_key(who), set()).add(name)
        elif kind == GET:
            out.read_by.setdefault(identity_key(who), set()).add(name)
    return out
