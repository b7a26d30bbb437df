"""Lock waits are bounded and reported; a dead holder blocks nobody; git's own lock files left
by a killed git are recovered, and a live git's are waited for or explained."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from memstore.errors import GitError, StoreLocked
from memstore.storage import files
from memstore.storage.store import Store
from memstore.workflow.care import lint
from tests.conftest import GIT_ENV, as_agent, git
from tests.state import snapshot

HOLD = """
import sys
from pathlib import Path
from memstore.storage import transaction
from memstore.storage.store import Store
store = Store(Path(sys.argv[1]), agent="holder")
with transaction.locked(store):
    print("held", flush=True)
    sys.stdin.readline()
"""


@contextmanager
def holder(store: Store) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the store's lock until its stdin closes (or it is killed)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(store.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **GIT_ENV},
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_a_busy_store_says_so_then_times_out_naming_the_lock_file(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    before = snapshot(store)
    impatient = Store(store.root, agent="alice", lock_timeout=0.3)
    with holder(store) as proc, caplog.at_level(logging.WARNING):
        started = time.monotonic()
        with pytest.raises(StoreLocked) as e:
            impatient.add("x", type="fact", description="d")
        waited = time.monotonic() - started
    assert 0.3 <= waited < 5
    lock = ".memstore/lock"  # named relative to the store, as every error does
    assert lock in str(e.value) and "store busy" in str(e.value)
    assert f"pid {proc.pid} (holder)" in str(e.value)
    assert any("store busy" in r.message and "retrying" in r.message for r in caplog.records)
    assert snapshot(store) == before


def test_a_waiting_writer_goes_ahead_once_the_holder_lets_go(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    waiting = Store(store.root, agent="alice", lock_timeout=30)
    with holder(store) as proc, caplog.at_level(logging.WARNING), ThreadPoolExecutor() as pool:
        writer = pool.submit(waiting.add, "x", type="fact", description="d")
        wait_for(lambda: any("store busy" in r.message for r in caplog.records))
        assert proc.stdin is not None
        proc.stdin.close()  # the holder releases the lock and exits
        writer.result(timeout=30)
    assert store.read("x").memory.owner == "alice"


def test_a_lock_held_by_a_process_killed_with_sigkill_blocks_nobody(store: Store) -> None:
    with holder(store) as proc:
        with pytest.raises(StoreLocked):
            Store(store.root, agent="alice", lock_timeout=0.2).add(
                "x", type="fact", description="d"
            )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        started = time.monotonic()
        Store(store.root, agent="alice", lock_timeout=5).add("x", type="fact", description="d")
        assert time.monotonic() - started < 5
    assert git(store.root, "log", "-1", "--format=%an %s").startswith("alice memory: add fact/x")


def test_cli_reports_a_busy_store_on_stderr_and_exits_1(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSTORE_LOCK_TIMEOUT", "0.3")
    with holder(store):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "memstore",
                "--store",
                str(store.root),
                "--agent",
                "alice",
                "add",
                "x",
                "--type",
                "fact",
                "-d",
                "d",
            ],
            capture_output=True,
            text=True,
            env={**os.environ, **GIT_ENV},
            timeout=30,
        )
    assert result.returncode == 1 and result.stdout == ""
    assert "store busy" in result.stderr and "retrying" in result.stderr
    assert "Error: store busy: could not take .memstore/lock" in result.stderr


def test_threads_of_one_process_take_turns(store: Store) -> None:
    def write(agent: str) -> None:
        mine = as_agent(store, agent)
        for i in range(5):
            mine.add(f"{agent}-{i}", type="fact", description=f"fact {i}")

    with ThreadPoolExecutor(max_workers=3) as pool:
        for future in [pool.submit(write, a) for a in ("alice", "bob", "carol")]:
            future.result(timeout=60)
    assert len(store.list()) == 15
    assert git(store.root, "status", "--porcelain") == ""


# -- git's own lock files -----------------------------------------------------------------------


@contextmanager
def live_git(cwd: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A git process working in `cwd` until we close its stdin."""
    proc = subprocess.Popen(
        ["git", "hash-object", "--stdin"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.parametrize("lock", ["index.lock", "HEAD.lock", "refs/heads/main.lock"])
def test_a_git_lock_in_the_way_is_never_deleted_and_the_refused_write_changes_nothing(
    store: Store, lock: str
) -> None:
    store.add("x", type="fact", description="d")
    before = snapshot(store)
    held = store.root / ".git" / lock
    held.write_text("", encoding="utf-8")  # a live git's, or one a killed git left: git can't tell
    impatient = Store(store.root, agent="alice", lock_timeout=0.3)
    with pytest.raises(GitError) as e:
        impatient.edit("x", body="new body")
    with pytest.raises(GitError):
        impatient.add("y", type="fact", description="d")
    assert held.exists()
    message = str(e.value)
    shown = held.relative_to(store.root)  # named relative to the store, as every error does
    assert f"lock {shown} is in the way" in message
    assert "let it finish" in message and f"delete {shown}" in message
    held.unlink()
    assert snapshot(store) == before  # the edited file was put back, the new one removed
    assert git(store.root, "status", "--porcelain") == ""
    store.edit("x", body="new body")  # and once the lock is gone, all is well
    assert git(store.root, "status", "--porcelain") == ""
    assert "memory: edit fact/x" in git(store.root, "log", "-1", "--format=%s")


def test_a_writer_killed_inside_its_ref_update_leaves_no_lock(store: Store) -> None:
    # memstore's git runs in a session of its own: killing the writer's process group (as a
    # terminal's Ctrl-C or a supervisor does) while git holds HEAD's lock leaves git reading
    # end-of-input, and git then aborts the transaction and removes its lock.
    code = (
        "import sys, os, signal\n"
        "from pathlib import Path\n"
        "from memstore.git import refs\n"
        "from memstore.storage.store import Store\n"
        "def swap(self, new, old, subject, prepared=None):\n"
        "    proc = self._started()\n"
        "    proc.stdin.write(f'start\\nupdate HEAD {new} {old}\\nprepare\\n'.encode())\n"
        "    proc.stdin.flush()\n"
        "    proc.stdout.readline(); proc.stdout.readline()  # HEAD is locked now\n"
        "    print('locked', flush=True)\n"
        "    os.killpg(0, signal.SIGKILL)\n"
        "refs._Swapper.swap = swap\n"
        "Store(Path(sys.argv[1]), agent='bob').add('x', type='fact', description='d')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(store.root)],
        env={**os.environ, **GIT_ENV},
        start_new_session=True,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == -9 and "locked" in proc.stdout
    git_dir = store.root / ".git"
    locks = lambda: [*git_dir.glob("*.lock"), *git_dir.glob("refs/heads/*.lock")]  # noqa: E731
    ref_locks = lambda: [p for p in locks() if p.name != "index.lock"]  # noqa: E731
    wait_for(lambda: not ref_locks())
    # The writer held git's index lock too (as git commit does): its own, which the next
    # write's recovery tells by its mark and removes.
    store.add("y", type="fact", description="the next write")  # undoes the killed one
    assert not locks()
    assert git(store.root, "status", "--porcelain") == ""
    assert "memory: add fact/y" in git(store.root, "log", "-1", "--format=%s")


def test_a_writer_waits_while_a_live_git_finishes(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    lock = store.root / ".git" / "index.lock"
    patient = Store(store.root, agent="alice", lock_timeout=30)
    with ThreadPoolExecutor() as pool:
        with live_git(store.root), caplog.at_level(logging.WARNING):
            lock.write_text("", encoding="utf-8")
            writer = pool.submit(patient.add, "x", type="fact", description="d")
            wait_for(lambda: any("git busy" in r.message for r in caplog.records))
            lock.unlink()  # the live git finishes its work
        writer.result(timeout=30)
    assert git(store.root, "status", "--porcelain") == ""


def test_reads_do_not_take_gits_index_lock(store: Store) -> None:
    # `git status` refreshes the index under index.lock unless told not to; lint runs it while
    # other processes commit.
    store.add("x", type="fact", description="d")
    lock = store.root / ".git" / "index.lock"
    with live_git(store.root):
        lock.write_text("", encoding="utf-8")
        assert lint.lint_store(store) == []
        assert lock.exists()
    lock.unlink()


@pytest.mark.parametrize("lock", ["index.lock", "HEAD.lock", "refs/heads/main.lock"])
def test_a_git_lock_is_named_when_git_speaks_another_language(
    store: Store, lock: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGUAGE", "de")  # "Konnte '…/index.lock' nicht erstellen: …"
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    held = store.root / ".git" / lock
    held.write_text("", encoding="utf-8")
    with pytest.raises(GitError, match="in the way"):
        Store(store.root, agent="alice", lock_timeout=0.2).add("x", type="fact", description="d")
    assert held.exists()


def test_a_waiting_writer_sleeps_until_the_lock_is_let_go_instead_of_polling(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Eight writers trying the lock every few milliseconds take the CPU from the one holding it.
    tries: list[int] = []
    real = files.fcntl.flock

    def counting(fd: int, operation: int) -> None:
        tries.append(operation)
        real(fd, operation)

    monkeypatch.setattr(files.fcntl, "flock", counting)
    waiting = Store(store.root, agent="alice", lock_timeout=30)
    with holder(store) as proc, ThreadPoolExecutor() as pool:
        writer = pool.submit(waiting.add, "x", type="fact", description="d")
        wait_for(lambda: len(tries) >= 2)
        time.sleep(0.5)  # a writer polling every 2 ms would try 250 times meanwhile
        assert proc.stdin is not None
        proc.stdin.close()
        writer.result(timeout=30)
    assert len(tries) <= 3  # one try, then one wait in the kernel
    assert store.read("x").memory.owner == "alice"


def test_a_writer_that_gave_up_waiting_never_keeps_the_lock(store: Store) -> None:
    lock = store.cache / "lock"
    with holder(store) as proc:
        assert files.lock_file(lock, 0.2) is None  # timed out; its waiting thread stays
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
    # The waiting thread gets the lock once the holder exits, and lets it go at once.
    deadline = time.monotonic() + 10
    while (fd := files.lock_file(lock, 0)) is None:
        assert time.monotonic() < deadline, "the abandoned wait kept the lock"
        time.sleep(0.01)
    os.close(fd)
    Store(store.root, agent="alice", lock_timeout=1).add("x", type="fact", description="d")
