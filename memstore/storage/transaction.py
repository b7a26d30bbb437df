"""The one write path: lock → journal → write or append → git commit → index notice, and undo
on failure. Every byte memstore writes into a store goes through `commit` here.

The journal (`.memstore/pending.json`) names each file's old content and new version, or the
bytes appended to a record file, before anything is touched, and is deleted once the commit
landed. A writer that finds one (its writer was killed before the commit) puts back what
HEAD holds: a cut-short change is never committed (see `recover`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memstore.errors import (
    Conflict,
    InvalidMemory,
    MemstoreError,
    NotAStore,
    StoreLocked,
    UnsafePath,
    WriteFailed,
)
from memstore.git import commit as git_commit
from memstore.git import indexfile, objects, refs, repository
from memstore.model.identity import check_identity
from memstore.storage.files import (
    LEDGER_FILE,
    OUTCOMES_FILE,
    REVIEWS_FILE,
    atomic_write,
    lock_file,
    read_regular,
    shown,
    version_of,
)
from memstore.storage.written import Written

if TYPE_CHECKING:
    import logging


def _log() -> logging.Logger:
    """This module's logger. `logging` loads with the first warning: a command that logs
    none (a `memstore add`) never pays for importing it."""
    import logging

    return logging.getLogger(__name__)


JOURNAL = "pending.json"
"""The change the lock holder is writing; a writer that finds it left over undoes it."""
HOLDER = "holder"
"""Who holds the store's lock (pid and identity), for the "store busy" message."""
RECORD_FILES = (LEDGER_FILE, OUTCOMES_FILE, REVIEWS_FILE)
"""The append-only record files at the store's root."""
LOCK_POLL = 0.002
"""How often recovery looks again whether the gits a killed writer started have ended."""

_MEMORY_PATH = re.compile(r"[a-z0-9][a-z0-9-]{0,63}/[a-z0-9][a-z0-9-]{0,63}\.md")
SETTINGS_FILES = (".gitignore", ".gitattributes")
"""Files at the store's root that `memstore init` writes."""
SYNCED_FILES = ("memstore.yaml", "allowed_signers")
"""Other files at the store's root that a sync may bring from another clone."""


class Site(Protocol):
    """What the write path needs of a store (`Store` is one)."""

    @property
    def root(self) -> Path: ...
    @property
    def cache(self) -> Path: ...
    @property
    def repo(self) -> repository.Repo: ...
    @property
    def lock_timeout(self) -> float: ...
    @property
    def holder(self) -> str: ...
    @property
    def signer(self) -> git_commit.Signer | None: ...
    @property
    def written(self) -> Written: ...


@dataclass(frozen=True, slots=True)
class Write:
    """Replace a memory file's whole content with `text` (create it if missing)."""

    path: Path
    text: str


@dataclass(frozen=True, slots=True)
class Append:
    """Add `text` (whole lines) at the end of a record file, creating it if missing."""

    path: Path
    text: str


@dataclass(frozen=True, slots=True)
class Remove:
    """Delete a memory file (a moved memory's old name, a forgotten memory, or another clone's
    removal that a sync brings); its history stays."""

    path: Path


Change = Write | Append | Remove


def rel(site: Site, path: Path) -> str:
    """`path` relative to the store root, with forward slashes."""
    try:
        return path.relative_to(site.root).as_posix()
    except ValueError:
        return str(path)


# -- the lock ---------------------------------------------------------------------------------


@contextmanager
def locked(site: Site) -> Generator[None]:
    """Hold the store's write lock, undoing first what a killed writer left.

    Raises:
        StoreLocked: naming the lock file when it is not free within the timeout.
    """
    if site.cache.is_symlink() or (site.cache.exists() and not site.cache.is_dir()):
        raise NotAStore(
            f"{site.cache} is a symlink or not a folder; memstore keeps its lock in a folder"
        )
    try:
        site.cache.mkdir(exist_ok=True)
    except OSError as e:
        raise _write_failed(e) from e
    path = site.cache / "lock"

    def waiting() -> None:
        # Reported, then bounded: a writer that died released its flock with its process.
        _log().warning(
            "store busy: %s is held by %s; retrying for up to %gs",
            path,
            _holder(site),
            site.lock_timeout,
        )

    try:
        fd = lock_file(path, site.lock_timeout, waiting)
    except OSError as e:  # no flock here (some network mounts), or no access
        if e.errno in _DISK_REFUSED:
            raise _write_failed(e) from e
        raise StoreLocked(
            f"cannot lock {path}: {e.strerror or e}; memstore needs a file system with flock "
            "locks (a local disk) and write access to it"
        ) from e
    if fd is None:
        raise StoreLocked(
            f"store busy: could not take {path} within {site.lock_timeout:g}s "
            f"(held by {_holder(site)}); another memstore process is writing — try again, "
            "or raise MEMSTORE_LOCK_TIMEOUT"
        )
    try:
        with contextlib.suppress(OSError):  # only for the "store busy" message (a full disk)
            (site.cache / HOLDER).write_text(f"pid {os.getpid()} ({site.holder})\n", "utf-8")
        try:
            recover(site)
        except OSError as e:
            raise _write_failed(e, "undoing a cut-short write") from e
        yield
    finally:
        os.close(fd)  # closing the descriptor lets the flock go


def _holder(site: Site) -> str:
    try:
        return (site.cache / HOLDER).read_text(encoding="utf-8").strip() or "another process"
    except OSError:
        return "another process"


# -- paths ------------------------------------------------------------------------------------


def check_path(site: Site, path: Path) -> Path:
    """`path` if memstore may write it: inside the store, reached through plain folders only,
    and a regular file or absent.

    Raises:
        UnsafePath: naming the symlink, special file or outside path.
    """
    try:
        parts = path.relative_to(site.root).parts
    except ValueError:
        raise UnsafePath(
            f"{path} is outside the store {site.root}; memstore writes only inside it"
        ) from None
    if not parts or any(p in ("", ".", "..") for p in parts):
        raise UnsafePath(f"{path} is not a file path inside the store {site.root}")
    where = site.root
    for i, part in enumerate(parts):
        where = where / part
        try:
            st = os.lstat(where)
        except FileNotFoundError:
            return path
        here = shown(where)
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePath(
                f"{here} in the store is a symlink; memstore does not write through "
                "symlinks: replace it with a plain file or folder"
            )
        last = i == len(parts) - 1
        if last and not stat.S_ISREG(st.st_mode):
            raise UnsafePath(
                f"{here} in the store is not a regular file (a folder, FIFO or device); "
                "memstore writes only regular files: remove it"
            )
        if not last and not stat.S_ISDIR(st.st_mode):
            raise UnsafePath(f"{here} in the store is not a folder; remove or rename it")
    return path


def refuse_uncommitted(site: Site, paths: list[Path]) -> None:
    """Raise Conflict if a file to be written has changes nobody committed yet.

    Such a change is someone's work in progress (a hand edit, a file not yet added):
    writing over it would lose it, or sweep it into this identity's commit.
    """
    existing = [p for p in paths if p.exists()]
    if existing and indexfile.dirty(site.repo, existing):
        where = " ".join(shown(p) for p in existing)
        raise Conflict(
            f"{where} has changes that are not committed (a hand edit in progress?); "
            f"commit them (git commit -- {where}) or discard them, then retry"
        )


# -- the transaction --------------------------------------------------------------------------


def commit(site: Site, changes: Sequence[Change], message: str, actor: str) -> str | None:
    """Write every change and commit them as one, as `actor`. Call with the lock held.

    Memory files are replaced atomically; record files get whole lines appended (a line
    after a last line without its newline starts a line of its own). A failure puts every
    file back as it was, so a refused write changes nothing. Returns the commit's sha, or None
    when HEAD already held the content.

    Raises:
        UnsafePath, Conflict (uncommitted changes in a memory file to replace), GitError,
        SigningError (signatures required and no key: refused before anything is written),
        WriteFailed (the disk refused a write: full, read-only, an I/O error).
    """
    sign = site.signer

    def finish(
        files: dict[str, bytes | None], keep: tuple[int, ...], index: indexfile.IndexLock
    ) -> str | None:
        return git_commit.commit_files(
            site.repo, files, message, actor, index, site.lock_timeout, keep, sign
        )

    return _apply(site, changes, message, actor, finish)


def land(
    site: Site, changes: Sequence[Write | Append | Remove], target: str, old: str, actor: str
) -> None:
    """Write `changes` and move HEAD from `old` to the existing commit `target`, whose tree
    holds exactly the bytes written (a fast-forward or a merge `sync` built). Call with the
    lock held. A failure puts every file back, as `commit` does.

    Raises:
        UnsafePath, Conflict (uncommitted changes in a file to replace, or HEAD moved since
        `old`), GitError, WriteFailed.
    """

    def finish(
        files: dict[str, bytes | None], keep: tuple[int, ...], index: indexfile.IndexLock
    ) -> str | None:
        if not git_commit.move_to(site.repo, files, target, old, index, site.lock_timeout, keep):
            raise Conflict(
                "HEAD moved while sync was integrating (a git commit at that moment?); "
                "nothing was changed: run sync again"
            )
        return target

    _apply(site, changes, f"sync: {target[:10]}", actor, finish, strict=True)


Finish = Callable[[dict[str, bytes | None], tuple[int, ...], indexfile.IndexLock], str | None]
"""Commit (or move HEAD to) what was written: the files' new bytes by repository path, the
lifeline to pass to the gits it starts, and git's index lock, held."""


def _apply(
    site: Site,
    changes: Sequence[Write | Append | Remove],
    message: str,
    actor: str,
    finish: Finish,
    *,
    strict: bool = False,
) -> str | None:
    """Take git's index lock, journal, write every change, then `finish` (commit, or move
    HEAD); undo on failure. `strict`: a record file to append to must hold no uncommitted
    lines either (the commit `finish` lands was built from HEAD's copy).

    git's `index.lock` is held from before the first file is written until HEAD moved and
    the index is in step, as `git commit` holds it: a person's `git commit`, `git commit -a`
    or `git add` meanwhile is refused by git (and retried) or waited for, so it comes
    entirely before or after this change, never takes part of it into the person's commit.
    """
    for change in changes:
        check_path(site, change.path)
    deadline = time.monotonic() + site.lock_timeout
    try:
        with indexfile.hold(site.repo, deadline) as index:
            return _locked_apply(site, changes, message, actor, finish, index, strict)
    except OSError as e:
        raise _write_failed(e) from e


def _locked_apply(
    site: Site,
    changes: Sequence[Write | Append | Remove],
    message: str,
    actor: str,
    finish: Finish,
    index: indexfile.IndexLock,
    strict: bool,
) -> str | None:
    """`_apply` with git's index lock held."""
    # Each file's bytes are read before it is compared with HEAD, and compared with what it
    # holds once more right before its rename: a hand save at any moment up to then makes the
    # write a Conflict instead of being replaced (see docs/reliability.md).
    olds: list[bytes | None] = []
    entries: list[dict[str, Any]] = []
    for change in changes:
        if isinstance(change, Write | Remove):
            data = read_regular(change.path)
            if isinstance(change, Remove) and data is None and not strict:
                raise Conflict(f"{shown(change.path)} is gone already; nothing to remove")
            olds.append(data)
            old = None if data is None else data.decode("utf-8")
            new = version_of(change.text.encode("utf-8")) if isinstance(change, Write) else None
            entries.append({"path": rel(site, change.path), "old": old, "new": new})
        else:
            olds.append(None)
            size = change.path.stat().st_size if change.path.exists() else 0
            text = change.text if _ends_with_newline(change.path) else "\n" + change.text
            entries.append({"path": rel(site, change.path), "size": size, "append": text})
    refuse_uncommitted(site, [c.path for c in changes if strict or not isinstance(c, Append)])
    record = {"message": message, "actor": actor, "files": entries}
    _write_journal(site.cache / JOURNAL, json.dumps(record, ensure_ascii=False))
    memories = [str(e["path"]) for e in entries if str(e["path"]).endswith(".md")]
    site.written.begin(memories)
    try:
        return _write_and_finish(site, changes, entries, olds, memories, finish, index)
    finally:
        site.written.end(memories)


def _write_and_finish(
    site: Site,
    changes: Sequence[Write | Append | Remove],
    entries: list[dict[str, Any]],
    olds: list[bytes | None],
    memories: list[str],
    finish: Finish,
    index: indexfile.IndexLock,
) -> str | None:
    """`_apply`'s writes and `finish`, journaled already; undo on failure.

    The file each write replaces or removes is kept (a hard link or the swapped-out file,
    hidden beside it) until the commit landed, so an undo puts it back by a rename: a write
    that fails because the disk is full needs no space to be undone."""
    kept: dict[Path, Path] = {}
    try:
        files: dict[str, bytes | None] = {}
        for change, entry, old_data in zip(changes, entries, olds, strict=True):
            if isinstance(change, Write):
                backup = atomic_write(change.path, change.text, unchanged=old_data, keep=True)
                if backup is not None:
                    kept[change.path] = backup
                # The bytes written are committed, not the file read back: a hand save just
                # after the rename stays in the working tree as the person's own change.
                files[repository.repo_path(site.repo, change.path)] = change.text.encode("utf-8")
            elif isinstance(change, Remove):
                if old_data is not None:
                    kept[change.path] = _remove_unchanged(change.path, old_data)
                files[repository.repo_path(site.repo, change.path)] = None
            else:
                _append(change.path, str(entry["append"]))
                files[repository.repo_path(site.repo, change.path)] = change.path.read_bytes()
        with _lifeline(site) as keep:
            sha = finish(files, keep, index)
    except BaseException:
        try:
            undo(site, entries, kept, index_untouched=not index.placed)
        except (MemstoreError, OSError) as e:
            # The journal stays: the next writer's recovery undoes what is left.
            _log().warning(
                "could not put back all a failed write changed (%s); the next "
                "write undoes the rest",
                e,
            )
        else:
            _clear(site)
            _drop(kept)
        raise
    _drop(kept)
    _clear(site)
    site.written.landed(memories)
    if sha is not None:
        objects.pack_when_due(site.repo, site.cache)
    return sha


def _drop(kept: dict[Path, Path]) -> None:
    for backup in kept.values():
        backup.unlink(missing_ok=True)


_DISK_REFUSED = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO)
"""The errors of a disk that refuses a write (rather than of a file system without locks)."""


def _write_failed(e: OSError, doing: str = "") -> WriteFailed:
    """The one-line error for an I/O failure on the write path (its files already put back)."""
    where = f" ({shown(Path(e.filename))})" if e.filename else ""
    why = (e.strerror or str(e)) + (f" while {doing}" if doing else "")
    hint = ""
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = ": free some space on that disk, then retry"
    elif e.errno == errno.EROFS:
        hint = ": the store is on a read-only file system"
    elif e.errno in (errno.EACCES, errno.EPERM):
        hint = ": memstore needs write access to the store and its .git folder"
    return WriteFailed(f"could not write the store: {why}{where}; nothing was changed{hint}")


def _write_journal(path: Path, text: str) -> None:
    """Write the journal in place. It needs no temp file and rename: it is whole before any
    file changes, and one a kill cut short (nothing changed yet) is dropped as unreadable.
    Nor an fsync: a killed writer's journal is in the page cache for the next writer; a power
    cut can lose it, and then a file cut short shows as an uncommitted change (git status,
    lint) instead of being rolled back, never committed either way. One that cannot be
    written whole (a full disk) is removed before the error goes on: nothing changed yet."""
    data = text.encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    try:
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)


def _remove_unchanged(path: Path, expected: bytes) -> Path:
    """Move `path` out of place, to a hidden name beside it that is returned (the commit
    landed: deleted; a failure: renamed back), unless a hand save changed it since it was
    read (then a Conflict)."""
    if read_regular(path) != expected:
        raise Conflict(f"{shown(path)} changed while it was being removed; read it again and retry")
    backup = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    os.rename(path, backup)
    return backup


LIFELINE = "inflight"
"""A lock the writer holds, and every short-lived git it starts inherits, while it commits."""


@contextmanager
def _lifeline(site: Site) -> Generator[tuple[int, ...]]:
    """Hold `.memstore/inflight` while committing, and let the gits started inherit it: if the
    writer is killed, the lock stays held until the last of them ends, so recovery (which
    takes it first) never undoes a file whose index entry a surviving git is still writing."""
    fd = os.open(site.cache / LIFELINE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield (fd,)
    finally:
        os.close(fd)  # closing the last descriptor of it releases the lock


def _wait_for_survivors(site: Site) -> None:
    """Wait until no git a killed writer started still runs: its lifeline is free, and no
    lock on HEAD says a swap it handed over may still land.

    Raises:
        StoreLocked: when they are still at work after the lock timeout.
        GitError: from `refs.settle`.
    """
    path = site.cache / LIFELINE
    if path.exists():
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
        try:
            deadline = time.monotonic() + site.lock_timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise StoreLocked(
                            f"a git started by a killed memstore writer still holds {path}; "
                            "let it finish, then retry"
                        ) from None
                    time.sleep(LOCK_POLL)
        finally:
            os.close(fd)
    refs.settle(site.repo, site.lock_timeout)


def _ends_with_newline(path: Path) -> bool:
    """Whether a record file is empty or ends with a newline (a hand edit may drop it)."""
    try:
        with path.open("rb") as f:
            if f.seek(0, os.SEEK_END) == 0:
                return True
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"
    except FileNotFoundError:
        return True


def _append(path: Path, text: str) -> None:
    # O_APPEND, so a line is never interleaved with another writer's; O_NOFOLLOW and
    # O_NONBLOCK, so a symlink or FIFO swapped in after the check is refused, not followed.
    data = text.encode("utf-8")
    created = not path.exists()
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    fd = os.open(path, flags, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(f"{shown(path)} is not a regular file; memstore appends only to files")
        written = os.write(fd, data)
        while written < len(data):  # a regular file takes it whole; this is for odd file systems
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _clear(site: Site) -> None:
    (site.cache / JOURNAL).unlink(missing_ok=True)


# -- recovery ---------------------------------------------------------------------------------


def pending(cache: Path) -> str | None:
    """The commit message of a write a killed process left unfinished, else None.

    Only a journal no live writer holds counts: the lock is tried, never waited for.
    """
    journal = cache / JOURNAL
    if not journal.is_file() or cache.is_symlink():
        return None
    fd = lock_file(cache / "lock", 0)
    if fd is None:
        return None  # a writer is at work; its journal is not left over
    try:
        data: Any = json.loads(journal.read_text(encoding="utf-8"))
        return str(data["message"]).splitlines()[0]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return "(an unreadable journal)"
    finally:
        os.close(fd)


def undo_pending(site: Site) -> str | None:
    """Undo what a killed writer left, as any write would first; returns what it was (its
    commit message), or None when nothing was pending.

    Raises:
        StoreLocked, GitError.
    """
    left = pending(site.cache)
    with locked(site):
        pass  # taking the lock undoes what a killed writer left
    return left


def _load(site: Site) -> tuple[str, str, list[dict[str, Any]]] | None:
    journal = site.cache / JOURNAL
    if not journal.exists():
        return None
    try:
        record: dict[str, Any] = json.loads(journal.read_text(encoding="utf-8"))
        entries: list[dict[str, Any]] = list(record["files"])
        message, actor = str(record["message"]), str(record["actor"])
        check_identity(actor)
        for entry in entries:
            path = str(entry["path"])
            if "append" in entry:
                if path not in RECORD_FILES:
                    raise ValueError(f"an append to {path!r}, not a record file")
                int(entry["size"])
                str(entry["append"])
            elif not _MEMORY_PATH.fullmatch(path) and path not in (
                *SETTINGS_FILES,
                *SYNCED_FILES,
                *RECORD_FILES,
            ):
                raise ValueError("a path that is not <type>/<name>.md")
    except (ValueError, KeyError, TypeError, OSError, InvalidMemory) as e:
        _log().warning("ignoring unreadable journal %s: %s", journal, e)
        journal.unlink(missing_ok=True)
        return None
    return message, actor, entries


def recover(site: Site) -> None:
    """Undo a change whose writer died before its commit, as its journal says. Call with the
    lock held.

    A cut-short change is never committed, by anyone: the journal is a file any process can
    write, so finishing it could commit in an identity's name what that identity did not
    write. memstore reports a write done only once its commit landed, so undoing loses
    nothing that was reported. What is put back is what HEAD holds (see `undo`). A file
    that holds neither version was changed by someone else since, and is left alone.
    """
    remove_dead_temp_files(site.cache)
    # A writer holds git's index lock from before its journal is written: one killed in
    # between leaves the lock and no journal.
    indexfile.release_dead_index_lock(site.repo)
    loaded = _load(site)
    if loaded is None:
        return
    message, _, entries = loaded
    _wait_for_survivors(site)
    for entry in entries:
        path = site.root / str(entry["path"])
        for stray in path.parent.glob(f".{path.name}.*.tmp"):
            stray.unlink(missing_ok=True)
    try:
        states = [_state(site, entry) for entry in entries]
        if "new" in states or "torn" in states:
            _log().warning("undoing a change its writer did not commit: %s", message)
        if "new" in states or "torn" in states or "old" in states:
            undo(site, entries)  # "old": the file is back, its index entry may not be
    except UnsafePath as e:
        _log().warning("not recovering %r: %s", message, e)
    _clear(site)


def _state(site: Site, entry: dict[str, Any]) -> str:
    """`new` (the journal's new content or append in place), `old` (untouched), or `other`."""
    path = site.root / str(entry["path"])
    if path.is_symlink() or (path.exists() and not path.is_file()):
        return "other"
    if "append" in entry:
        data = path.read_bytes() if path.is_file() else b""
        size, appended = int(entry["size"]), str(entry["append"]).encode("utf-8")
        tail = data[size:]
        if tail.startswith(appended):
            return "new"
        if not tail or appended.startswith(tail):
            return "torn" if tail else "old"
        return "other"
    if not path.is_file():
        if entry["new"] is None:  # a removal
            return "new" if entry["old"] is not None else "old"
        return "old" if entry["old"] is None else "other"
    data = path.read_bytes()
    if entry["new"] is not None and version_of(data) == entry["new"]:
        return "new"
    old = entry["old"]
    return "old" if old is not None and data == str(old).encode("utf-8") else "other"


def undo(
    site: Site,
    entries: list[dict[str, Any]],
    kept: dict[Path, Path] | None = None,
    *,
    index_untouched: bool = False,
) -> None:
    """Put back each file of a change that holds its new, uncommitted content (or cut off a
    line appended, whole or torn), and reset its index entry to HEAD.

    What is put back is the file the write replaced, when it kept it (`kept`: path → the
    hidden file it was moved to, by a write failing in this process), else what HEAD holds
    (the write path only replaces committed files), never text from the journal, and a cut
    never reaches into committed bytes: a forged journal can make memstore undo, but not
    write. `index_untouched`: the write held git's index lock and never put its index in
    place, so no index entry needs resetting.
    """
    touched: list[Path] = []
    backups = kept or {}
    for entry in entries:
        path = site.root / str(entry["path"])
        state = _state(site, entry)
        if state == "old":
            # The file is as HEAD has it, but its index entry may not be: a killed writer's
            # index update landed, or an undo was itself killed between the file and the index.
            if objects.blob(site.repo, "HEAD", path) is not None or "append" not in entry:
                touched.append(path)
            continue
        if state not in ("new", "torn"):
            continue
        committed = objects.blob(site.repo, "HEAD", path)
        if "append" in entry:
            if committed is not None and committed == path.read_bytes():
                touched.append(path)  # the commit landed after all; its index entry may not
                continue
            os.truncate(path, max(int(entry["size"]), len(committed or b"")))
        else:
            if (entry["new"] is None and committed is None) or (
                committed is not None and version_of(committed) == entry["new"]
            ):
                touched.append(path)  # the commit landed after all; its index entry may not
                continue
            backup = backups.get(path)
            if backup is not None:
                os.replace(backup, path)  # a rename: no space needed on a full disk
            elif committed is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write(path, committed)
        touched.append(path)
    if touched and not index_untouched:
        indexfile.unstage(site.repo, touched, site.lock_timeout)


def remove_dead_temp_files(cache: Path) -> None:
    """Remove the temp files that killed processes left in the cache folder.

    `atomic_write` names them `.<file>.<pid>.<random>.tmp`, the index its manifest's
    `.manifest.<pid>.<thread>.tmp`: the pid is third from the end. Needs /proc to tell a
    dead pid.
    """
    if not Path("/proc").is_dir():
        return
    for folder in (cache, cache / "index"):
        try:
            names = os.listdir(folder)  # each lock looks: a listing, not a glob's matching
        except OSError:
            continue
        for name in names:
            if name.startswith(".") and name.endswith(".tmp"):
                _remove_if_dead(folder / name)


def _remove_if_dead(stray: Path) -> None:
    """Remove a temp file whose writer's pid (third from the end of its name) no longer runs."""
    parts = stray.name.split(".")
    if len(parts) >= 4:
        pid = parts[-3]
        if pid.isdigit() and not Path("/proc", pid).exists():
            stray.unlink(missing_ok=True)
