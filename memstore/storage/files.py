"""The store's files: the one walker over its type folders, reading a file that must be a plain
file, writing one so a crash leaves the old content or the new, and naming a content version."""

from __future__ import annotations

import errno
import fcntl
import functools
import hashlib
import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import EllipsisType

from memstore.errors import Conflict, UnsafePath

LEDGER_FILE = "ledger.jsonl"
"""The store's append-only ledger of external actions, at its root."""
OUTCOMES_FILE = "outcomes.jsonl"
"""The store's append-only record of correction outcomes, at its root."""
REVIEWS_FILE = "reviews.jsonl"
"""The store's append-only record of review requests and deferrals, at its root."""
SKIPPED_FOLDERS = frozenset({".git", ".memstore", "node_modules", ".venv", "venv", "__pycache__"})
"""Folders a look through a project's own files never enters (its documents, a folder to
import): git's, a store's cache, dependencies and bytecode."""


def shown(path: Path) -> str:
    """`path` as the person reading a message would type it from where they stand: relative
    to the current directory (with `../` where it climbs, as git prints paths), else absolute."""
    try:
        return Path(os.path.relpath(path.absolute())).as_posix()
    except (OSError, ValueError):
        return str(path)


def version_of(data: bytes) -> str:
    """The version of a file's content: the first 12 hex digits of its SHA-256."""
    return hashlib.sha256(data).hexdigest()[:12]


def _mode_for(path: Path) -> int:
    """The permission bits a new version of `path` gets: the current file's, else the usual
    0666 less the process umask."""
    try:
        st = os.lstat(path)
    except OSError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    return 0o666 & ~_umask()


def _umask() -> int:
    # Linux shows the umask without changing it; elsewhere reading it means setting it, which
    # another thread creating a file in that instant would see.
    try:
        with open("/proc/self/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def lock_file(path: Path, timeout: float, waiting: Callable[[], None] | None = None) -> int | None:
    """Take the exclusive `flock` of `path` (created if missing, never through a symlink);
    when another process holds it, call `waiting`, then wait up to `timeout` seconds.
    Returns the descriptor that holds it (closing it lets go), or None when it stayed taken.

    A waiter sleeps in the kernel until the lock is let go, instead of trying again every
    few milliseconds: eight waiting processes polling would take the CPU from the holder.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        os.close(fd)
    except BaseException:
        os.close(fd)
        raise
    if timeout <= 0:
        return None
    if waiting is not None:
        waiting()
    return _LockWait(path).within(timeout)


class _LockWait:
    """A thread blocked in `flock` on a descriptor of its own; one given up on closes its
    descriptor as soon as it gets the lock, so a timed-out wait never keeps it."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        self.guard = threading.Lock()
        self.done = threading.Event()
        self.taken = False
        self.given_up = False

    def within(self, timeout: float) -> int | None:
        threading.Thread(target=self._wait, name="memstore-lock-wait", daemon=True).start()
        self.done.wait(max(timeout, 0.0))
        with self.guard:
            if self.taken:
                return self.fd
            self.given_up = True
            if self.done.is_set():  # flock failed: the thread has let the descriptor be
                os.close(self.fd)
        return None

    def _wait(self) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            taken = True
        except OSError:
            taken = False
        with self.guard:
            if not self.given_up:
                self.taken = taken
                self.done.set()
                return
        os.close(self.fd)


def atomic_write(
    path: Path,
    text: str | bytes,
    unchanged: bytes | None | EllipsisType = ...,
    *,
    keep: bool = False,
) -> Path | None:
    """Write `text` (or exact bytes) to `path` via a hidden temp file in the same folder,
    fsync and rename.

    With `unchanged` (the bytes the caller read, or None for no file), a file someone else
    saved since (an editor does not take memstore's lock) is never replaced: nothing is
    written. POSIX has no compare-and-rename; on Linux the new file is swapped in
    (`renameat2` RENAME_EXCHANGE) and what it took out of place is compared, then put back if
    it differs; elsewhere the file is checked right before the rename, which leaves the
    moment in between open. A new file is linked into place, never over one that appeared.

    With `keep`, the file replaced is not deleted but kept at a hidden name beside it, which
    is returned (None when there was no file): renaming it back undoes the write without
    writing a byte, as a write that failed on a full disk must.

    Raises:
        Conflict: when the file no longer holds `unchanged`.
        OSError: when the file cannot be written (nothing changed then).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temp_for(path)
    try:
        # What memstore writes is shared through git, so it gets the mode any editor would
        # give it: the old file's, else 0666 less the umask (#17).
        os.fchmod(fd, _mode_for(path))
        data = text.encode("utf-8") if isinstance(text, str) else text
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if unchanged is None:
            try:
                os.link(tmp, path)  # fails if a file appeared: creation without a window
            except FileExistsError:
                raise _changed(path) from None
            except OSError:  # no hard links on this file system: check, then rename
                pass
            else:
                os.unlink(tmp)
                return None
        if unchanged is not ... and read_regular(path) != unchanged:
            raise _changed(path)
        if isinstance(unchanged, bytes) and _exchange(tmp, path):
            # The swap is atomic: what it took out of place is exactly what the file held at
            # that instant, so a save that landed after the check above is found, and put back.
            if not _holds(Path(tmp), unchanged):
                try:
                    back = _exchange(tmp, path)
                except Conflict:  # the new file was deleted meanwhile
                    back = False
                if not back:
                    os.replace(tmp, path)
                raise _changed(path)
            if keep:
                return Path(tmp)  # the old file, at the temp name
            os.unlink(tmp)
            return None
        backup = _backup_of(path) if keep else None
        os.replace(tmp, path)
        return backup
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _backup_of(path: Path) -> Path | None:
    """A hidden second name (a hard link) for the file at `path`, or None when there is
    none; where hard links cannot be made, a copy."""
    if not path.exists():
        return None
    fd, backup = _temp_for(path)
    os.close(fd)
    os.unlink(backup)
    try:
        os.link(path, backup)
    except FileNotFoundError:
        return None
    except OSError:
        import shutil

        try:
            shutil.copy2(path, backup)
        except BaseException:
            Path(backup).unlink(missing_ok=True)
            raise
    return Path(backup)


def _temp_for(path: Path) -> tuple[int, str]:
    """A new, uniquely named hidden file (mode 0600) next to `path`, open for writing: its
    descriptor and path. The pid in the name tells a temp file of a killed writer from one
    being written. (`tempfile.mkstemp` does the same, but importing it costs a short-lived
    command more than the write.)"""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    while True:
        tmp = str(path.parent / f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue


def _holds(path: Path, data: bytes) -> bool:
    try:
        return read_regular(path) == data
    except (OSError, UnsafePath):
        return False


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    import ctypes  # here: only replacing a file needs it, and every command would pay for it

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        found = libc.renameat2
    except (OSError, AttributeError):  # not Linux, or a C library without it
        return None
    found.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    found.restype = ctypes.c_int
    return found


def _exchange(a: str | Path, b: str | Path) -> bool:
    """Swap the files at two paths in one step (Linux `renameat2` with RENAME_EXCHANGE);
    False, changing nothing, where the system or file system cannot.

    Raises:
        Conflict: when `b` is gone (someone deleted the file).
    """
    call = _renameat2()
    if call is None:
        return False
    if call(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    import ctypes

    err = ctypes.get_errno()
    if err == errno.ENOENT:
        raise _changed(Path(b))
    return False  # EINVAL, ENOSYS, EOPNOTSUPP…: fall back to a check and a rename


def _changed(path: Path) -> Conflict:
    return Conflict(
        f"{path.parent.name}/{path.name} was saved by someone else while memstore was writing "
        "it (a hand edit?); nothing was written: commit or discard that edit, then retry"
    )


def read_regular(path: Path) -> bytes | None:
    """The bytes of regular file `path`, or None when it does not exist.

    Never follows a symlink at `path` and never blocks on a FIFO: a store file is a file.

    Raises:
        UnsafePath: for a symlink, a FIFO, a folder or another special file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:
        if path.is_symlink():
            raise UnsafePath(f"{shown(path)} is a symlink; memstore reads only plain files") from e
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(f"{shown(path)} is not a regular file (a folder, FIFO or device)")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


class Kind(StrEnum):
    """What the walker found at a place where a memory file could be."""

    MEMORY = "memory"
    """A regular `<type>/<name>.md` file: the only kind anything reads."""
    TEMP = "temp"
    """A hidden `.*.tmp` file an interrupted write left."""
    SYMLINK = "symlink"
    """A symlinked `.md` file or type folder: never followed."""
    SPECIAL = "special"
    """A `.md` name that is not a regular file (a FIFO, a folder, a device)."""


Stamp = tuple[int, int, int]
"""A file's (mtime in ns, size, inode): when it changes, the file may have."""
FullStamp = tuple[int, int, int, int]
"""A `Stamp` and the ctime in ns, which every write moves: an edit that keeps the size and
puts the mtime back shows in it."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One thing the walker found: its path (as a string, `where`), `<folder>/<file>` and
    kind, and for a memory file its stamp."""

    where: str
    rel: str
    kind: Kind
    stamp: FullStamp = (0, 0, 0, 0)

    @property
    def path(self) -> Path:
        # Made on demand: a walk of a large store that needs only `rel` and the stamp (a
        # cached check) would spend more on path objects than on the walk itself.
        return Path(self.where)


def walk(root: Path, folders: Iterable[str] | None = None) -> Iterator[Entry]:
    """Every memory file in the store's type folders (or only in `folders`), sorted, plus what
    lint must report: leftover temp files, symlinks and special files.

    Hidden folders (`.git`, `.memstore`) and hidden files are skipped; nothing is followed
    through a symlink and nothing is opened, so a FIFO never blocks the walk.
    """
    if folders is None:
        try:
            with os.scandir(root) as found:
                tops = sorted((e for e in found if not e.name.startswith(".")), key=_name)
        except OSError:
            return
    else:
        tops = [_Place(root / name, name) for name in folders]
    for top in tops:
        if top.is_symlink():
            yield Entry(top.path, top.name, Kind.SYMLINK)
            continue
        if not top.is_dir(follow_symlinks=False):
            continue
        try:
            with os.scandir(top.path) as found:
                entries = sorted(found, key=_name)
        except OSError:
            continue
        for e in entries:
            rel = f"{top.name}/{e.name}"
            if e.name.startswith("."):
                if e.name.endswith(".tmp"):
                    yield Entry(e.path, rel, Kind.TEMP)
                continue
            if not e.name.endswith(".md"):
                continue
            if e.is_symlink():
                yield Entry(e.path, rel, Kind.SYMLINK)
            elif e.is_file(follow_symlinks=False):
                st = e.stat(follow_symlinks=False)
                stamp = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
                yield Entry(e.path, rel, Kind.MEMORY, stamp)
            else:
                yield Entry(e.path, rel, Kind.SPECIAL)


def is_memory_path(rel: str) -> bool:
    """Whether a store-relative path names a memory file: `<folder>/<name>.md`."""
    folder, _, name = rel.partition("/")
    return (
        bool(folder)
        and not folder.startswith(".")
        and name.endswith(".md")
        and not name.startswith(".")
        and "/" not in name
    )


def folder_times(root: Path) -> dict[str, int]:
    """The store root's (`.`) and each type folder's modification time in ns, by name."""
    # Adding, deleting, renaming or atomically replacing a file (memstore, git checkout,
    # git pull, most editors) changes its folder's mtime; in-place edits are the watcher's.
    found = {".": root.stat().st_mtime_ns}
    with os.scandir(root) as entries:
        for e in entries:
            if not e.name.startswith(".") and e.is_dir(follow_symlinks=False):
                found[e.name] = e.stat(follow_symlinks=False).st_mtime_ns
    return found


def stamps(
    root: Path, folders: Iterable[str], only: Iterable[str] | None = None
) -> dict[str, tuple[int, int, int]]:
    """Every memory file (store-relative path) in the type `folders` (or in `only` of them;
    `.` is skipped) and its stamp (mtime in ns, size, inode), as `Store.memories` finds them."""
    wanted = None if only is None else set(only)
    found: dict[str, tuple[int, int, int]] = {}
    for name in sorted(folders):
        if name == "." or (wanted is not None and name not in wanted):
            continue
        try:
            entries = os.scandir(root / name)
        except (FileNotFoundError, NotADirectoryError):
            continue  # gone since it was listed: the root's time moved, the next look sees it
        with entries:
            for e in entries:
                if (
                    e.name.endswith(".md")
                    and not e.name.startswith(".")
                    and e.is_file(follow_symlinks=False)
                ):
                    st = e.stat(follow_symlinks=False)
                    found[f"{name}/{e.name}"] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return found


def memory_files(root: Path, folders: Iterable[str] | None = None) -> Iterator[Entry]:
    """The memory files `walk` finds: regular `.md` files in plain type folders."""
    return (e for e in walk(root, folders) if e.kind == Kind.MEMORY)


class _Place:
    """A named folder given by the caller, with the `os.DirEntry` methods `walk` uses."""

    def __init__(self, path: Path, name: str) -> None:
        self.path, self.name = str(path), name

    def is_symlink(self) -> bool:
        return os.path.islink(self.path)

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        del follow_symlinks  # called after is_symlink
        return os.path.isdir(self.path)


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name
