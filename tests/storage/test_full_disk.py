"""A disk that fills up, or refuses a write, in the middle of a write: the write fails with a
one-line error and leaves nothing half-written (no journal, no temp file, no git lock, the
memory files, git's index and HEAD as they were).

Two ways: a real file system that is full (a small tmpfs, where this machine lets a test
mount one), and, everywhere, a failure injected into each of the write path's own calls to
the OS in turn (every `open` for writing, `write`, `fsync`, `link`, `rename`, ...)."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from memstore.errors import MemstoreError, WriteFailed
from memstore.storage import transaction
from memstore.storage.store import Store
from memstore.workflow.ledger import book as ledger_io
from tests.conftest import GIT_ENV, git
from tests.state import snapshot

CALLS = (
    "open",
    "write",
    "pwrite",
    "fsync",
    "link",
    "rename",
    "replace",
    "ftruncate",
    "truncate",
    "mkdir",
    "fchmod",
)
"""The OS calls that write, whose failure the write path must survive."""
WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class Faults:
    """Count the write path's writing OS calls; make the one numbered `at` fail (ENOSPC)."""

    def __init__(self, at: int | None) -> None:
        self.at = at
        self.count = 0
        self.active = False
        self.fired: str | None = None

    def wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            writing = name != "open" or bool(args[1] & WRITING)
            if self.active and writing:
                self.count += 1
                if self.count - 1 == self.at and self.fired is None:
                    self.fired = name
                    raise OSError(errno.ENOSPC, "No space left on device")
            return real(*args, **kwargs)

        return call


@contextlib.contextmanager
def faults(monkeypatch: pytest.MonkeyPatch, at: int | None) -> Iterator[Faults]:
    """The write path, inside `transaction._apply`, with its `at`-th writing call failing."""
    injected = Faults(at)
    with monkeypatch.context() as m:
        for name in CALLS:
            m.setattr(os, name, injected.wrap(name, getattr(os, name)))
        real = transaction._apply  # pyright: ignore[reportPrivateUsage]

        def apply(*args: Any, **kwargs: Any) -> Any:
            injected.active = True
            try:
                return real(*args, **kwargs)
            finally:
                injected.active = False

        m.setattr(transaction, "_apply", apply)
        yield injected


def leftovers(store: Store) -> list[str]:
    """What a write must never leave: its journal, temp files, git lock files or marks."""
    git_dir = store.root / ".git"
    found = [p.name for p in store.root.rglob(".*.tmp") if ".git" not in p.parts]
    found += [p.relative_to(git_dir).as_posix() for p in git_dir.rglob("*.lock")]
    found += [p.name for p in git_dir.glob("memstore-index.*")]
    found += [p.name for p in git_dir.rglob("tmp_obj_*")]
    if (store.cache / transaction.JOURNAL).exists():
        found.append(transaction.JOURNAL)
    return found


def _add(store: Store, i: int) -> None:
    store.add(f"new-{i}", type="fact", description=f"added on a full disk {i}")


def _edit(store: Store, i: int) -> None:
    store.edit("kept", body=f"edited on a full disk {i}")


def _deprecate(store: Store, i: int) -> None:
    store.deprecate(f"old-{i}", "replaced", superseded_by=f"next-{i}")


def _forget(store: Store, i: int) -> None:
    store.forget(f"gone-{i}", "a duplicate")


def _record(store: Store, i: int) -> None:
    ledger_io.record(store, "publish", f"pkg@{i}", evidence=f"https://example.com/{i}")


def _prepare(store: Store, kind: str, i: int) -> None:
    if kind == "deprecate":
        store.add(f"old-{i}", type="fact", description="the old way")
        store.add(f"next-{i}", type="fact", description="the new way")
    elif kind == "forget":
        store.add(f"gone-{i}", type="fact", description="to forget")


WRITES: dict[str, Callable[[Store, int], None]] = {
    "add": _add,
    "edit": _edit,
    "deprecate": _deprecate,
    "forget": _forget,
    "record": _record,
}


@pytest.mark.parametrize("kind", list(WRITES))
def test_each_write_call_failing_in_turn_leaves_nothing_half_written(
    store: Store, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    store.add("kept", type="fact", description="edited on a full disk")
    _record(store, -1)  # the ledger exists: an append, not a new file
    failed = 0
    for at in range(200):
        _prepare(store, kind, at)
        before = snapshot(store)
        with faults(monkeypatch, at) as injected:
            try:
                WRITES[kind](store, at)
            except MemstoreError as e:
                error: MemstoreError | None = e
            else:
                error = None
        if injected.fired is None:  # every call went through: the write landed
            assert error is None
            assert at > 5
            break
        where = f"{kind}: {injected.fired} (call {at})"
        if error is None:  # a failure the write path does without (a cache): it landed whole
            assert git(store.root, "status", "--porcelain") == "", where
        else:
            failed += 1
            assert isinstance(error, WriteFailed), (where, error)
            message = str(error)
            assert "\n" not in message and "No space left on device" in message, where
            assert "nothing was changed" in message, where
            assert snapshot(store) == before, where
        assert leftovers(store) == [], where
    else:
        raise AssertionError("the write never got through")
    assert failed > 3
    git(store.root, "fsck", "--strict")
    assert git(store.root, "status", "--porcelain") == ""


# -- a real full disk -------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Generator[Path]:
    """A 2 MB tmpfs mounted at a temp folder (root only: where it cannot be mounted, the
    injected failures above stand in for it)."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(store), "--agent", "alice", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **GIT_ENV},
        check=False,
    )


def fill(disk: Path, leave: int) -> None:
    """Fill the disk, then free `leave` bytes of it."""
    filler = disk / "filler"
    filler.unlink(missing_ok=True)
    with filler.open("wb", buffering=0) as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 65536)
    with contextlib.suppress(OSError), filler.open("r+b") as f:
        f.truncate(max(filler.stat().st_size - leave, 0))


@pytest.mark.parametrize("verb", ["add", "edit"])
def test_a_full_disk_is_a_one_line_error_and_changes_nothing(small_disk: Path, verb: str) -> None:
    root = small_disk / "memory"
    store = Store.init(root, agent="alice")
    store.add("kept", type="fact", description="edited on a full disk")
    landed = refused = 0
    for leave in range(0, 48 * 1024, 2048):
        fill(small_disk, leave)
        head = git(root, "rev-parse", "HEAD")
        if verb == "add":
            done = cli(root, "add", f"n{leave}", "--type", "fact", "-d", "on a full disk")
        else:
            done = cli(root, "edit", "kept", "--body", f"edited with {leave} bytes free")
        (small_disk / "filler").unlink()
        assert "Traceback" not in done.stderr, done.stderr
        if done.returncode == 0:
            landed += 1
            assert git(root, "rev-parse", "HEAD") != head
        else:
            refused += 1
            assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1, done.stderr
            assert git(root, "rev-parse", "HEAD") == head
        assert git(root, "status", "--porcelain", "--untracked-files=all") == "", leave
        assert leftovers(store) == [], leave
    assert landed and refused
    git(root, "fsck", "--strict")
