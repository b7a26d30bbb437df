"""What may differ between a store's memory files and its search index, asked of git and of
the index's own log rather than of every file: a new process's first search at 100,000
memories spent most of a second on a stat of every file and on reading the manifest whole.

After a catch-up, the index keeps a look (`look.json` beside it): the `worktree.Look` taken
before that catch-up looked at the files (HEAD, the type folders' times, the loose files) and
the manifest's state once it was done. Since then, a file can differ from what the index
holds only if

- `worktree` says it may have changed: a commit since touched it, it differs from HEAD now,
  it was loose at the look, or its folder's time moved (every file of that folder is then
  looked at);
- or the manifest's log says a process indexed it since (a write, a watcher): what it
  indexed may be an edit since reverted, which git then no longer lists.

A file is loose at a look if it differed from HEAD (edited, staged, never committed) when the
look began, or git does not track it. Whatever the catch-up itself indexed must be looked at
again next time too (an edit made while it ran, since undone, would otherwise stay):

- after a catch-up since a look, the look is taken against the manifest as its log stood
  before that catch-up, so what it indexed is in the log after it;
- after a look at every file, the manifest may have been written whole (every entry new), so
  the look is taken against the manifest as that left it, and the files it holds with a
  modification time at most `worktree.RACY_NS` before the look, or later, count as loose.

Every other file the index holds as the look's HEAD has it, and so as HEAD has it now unless
one of the above lists it.

The look is kept only for a large store (`LARGE`): below it, a stat of every file costs less
than the git processes that answer instead.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstore.errors import GitError
from memstore.search import manifest
from memstore.storage import worktree

if TYPE_CHECKING:
    from memstore.storage.reading import Reader

FILE = "look.json"
LARGE = 4 << 20
"""A manifest at least this long (about 25,000 memories) keeps a look. At 10,000 memories
(1.6 MB) git's answers cost more than a stat of every file and a parse of the manifest
(`memstore search` 0.33 against 0.28 s); at 100,000 (16 MB) a tenth of it (0.1 against 1.5 s)."""
MOST = 20_000
"""Past this many files to look at, every file is looked at instead (a long absence). A
fresh clone's `reindex` leaves the files checked out within the racy window of its look
loose (5,596 and 18,597 of 100,000 in two tries): 18,597 are compared by their entries in
0.54 s, where a look at every file takes 1.2-1.5 s."""


@dataclass(frozen=True, slots=True)
class Kept:
    """A look the index keeps, and the manifest's state it was taken against."""

    look: worktree.Look
    state: manifest.State


@dataclass(frozen=True, slots=True)
class Begun:
    """A look begun before the files are looked at; `loose` is completed after (`keep`)."""

    head: str
    folders: dict[str, int]
    at: int
    loose: set[str]
    """The files that differed from HEAD when the look began."""


@dataclass(frozen=True, slots=True)
class Since:
    """What may have changed since a kept look."""

    paths: set[str]
    """The files to look at."""
    begun: Begun
    """The look this one begins."""
    state: manifest.State
    """The manifest's state when its log was read (every file it logged before is in
    `paths`)."""


def large(directory: Path) -> bool:
    """Whether the index in `directory` is large enough to keep a look."""
    try:
        return (directory / manifest.FILE).stat().st_size >= LARGE
    except OSError:
        return False


def begin(store: Reader) -> Begun | None:
    """A look, before any file is looked at; None when git cannot give one (no commit yet,
    git failing): the caller looks at every file and keeps no look. Its loose files are the
    ones that differ from HEAD and those git does not track."""
    try:
        head = worktree.head(store)
        if head is None:
            return None
        folders, at = worktree.folders(store)
        loose = worktree.dirty(store) | worktree.untracked(store)
    except (GitError, OSError):
        return None
    return Begun(head, folders, at, loose)


def read(directory: Path) -> Kept | None:
    """The look kept beside the index in `directory`; None if there is none or it is damaged."""
    try:
        data: Any = json.loads((directory / FILE).read_text(encoding="utf-8"))
        look = worktree.Look.from_json(data["look"])
        base, log = data["state"]
        state = (
            (int(base[0]), int(base[1]), int(base[2]), int(base[3])),
            (int(log[0]), int(log[1])),
        )
    except (OSError, ValueError, LookupError, TypeError, AttributeError):
        return None
    return None if look is None else Kept(look, state)


def keep(directory: Path, begun: Begun, loose: set[str], state: manifest.State) -> None:
    """Keep a look beside the index: `begun`, with `loose` added to its loose files, taken
    against the manifest in `state`. A look that cannot be written is not kept (the next
    catch-up looks at every file)."""
    look = worktree.Look(begun.head, begun.folders, begun.at, tuple(sorted(begun.loose | loose)))
    data = {"look": look.to_json(), "state": [list(state[0]), list(state[1])]}
    tmp = directory / f".{FILE}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        tmp.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, directory / FILE)
    except OSError:
        tmp.unlink(missing_ok=True)


def forget(directory: Path) -> None:
    """Drop the kept look (the index is about to be rebuilt)."""
    (directory / FILE).unlink(missing_ok=True)


def since(store: Reader, directory: Path, kept: Kept) -> Since | None:
    """What may differ from what the index in `directory` holds since `kept` was taken; None
    when every file must be looked at (the manifest folded or rebuilt since, no commit yet,
    git failing, or more than `MOST` files)."""
    old = kept.look
    logged = manifest.logged_since(directory / manifest.FILE, kept.state)
    if logged is None:
        return None
    indexed, state = logged
    from concurrent.futures import ThreadPoolExecutor

    try:  # HEAD and the folders first: what git says next is at least as new
        head = worktree.head(store)
        folders, at = worktree.folders(store)
    except (GitError, OSError):
        return None
    if head is None:
        return None
    moved = {
        name
        for name in set(folders) | set(old.folders)
        if folders.get(name) != old.folders.get(name) or old.unsure(name)
    }
    with ThreadPoolExecutor(1) as pool:  # git's answers at once: each is mostly git's time
        history = pool.submit(_since_history, store, old.head, head, moved & set(folders))
        try:
            dirty: set[str] | None = worktree.dirty(store)
        except GitError:
            dirty = None
        since_history = history.result()
    if dirty is None or since_history is None:
        return None
    begun = Begun(head, folders, at, dirty)
    touched, made = since_history
    paths = set(old.loose) | indexed | touched | begun.loose | made
    if len(paths) > MOST:
        return None
    return Since(paths, begun, state)


def _since_history(
    store: Reader, old: str, new: str, moved: set[str]
) -> tuple[set[str], set[str]] | None:
    """The files commits after `old` up to `new` touched (or that differ between the two,
    for a history rewritten), and the files git does not track in the `moved` folders; None
    when git fails."""
    try:
        touched = worktree.touched(store, old, new)
        if touched is None:  # a history rewritten: what differs between the two
            touched = worktree.differing(store, old, new)
        # A folder's time moves when a file in it is made, removed or renamed. What git
        # tracks and what the index logged are counted apart, and the files not tracked at
        # the look were loose then: what is left is a file made since that git does not track.
        return touched, worktree.untracked(store, moved)
    except GitError:
        return None


def untracked(store: Reader, present: set[str]) -> set[str] | None:
    """Which of the `present` files git does not track; None when git fails (no look is
    kept then)."""
    try:
        return present - worktree.tracked(store, present)
    except GitError:
        return None


__all__ = [
    "FILE",
    "LARGE",
    "Begun",
    "Kept",
    "Since",
    "begin",
    "forget",
    "keep",
    "large",
    "read",
    "since",
    "untracked",
]
