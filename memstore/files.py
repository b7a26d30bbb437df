"""Writing a file so a crash leaves the old content or the new, and naming a content version."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

from memstore.errors import UnsafePath


def version_of(data: bytes) -> str:
    """The version of a file's content: the first 12 hex digits of its SHA-256."""
    return hashlib.sha256(data).hexdigest()[:12]


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` via a hidden temp file in the same folder, fsync and rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # The pid in the name tells a temp file of a killed writer from one being written.
    fd, tmp = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp"
    )
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
            raise UnsafePath(f"{path} is a symlink; memstore reads only plain files") from e
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(f"{path} is not a regular file (a folder, FIFO or device)")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)
