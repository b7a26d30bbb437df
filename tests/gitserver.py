"""A real git server on loopback for sync tests and benchmarks: `git daemon` serving a bare
repository from a temporary folder, with receive-pack enabled, on a free port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "human",
    "GIT_AUTHOR_EMAIL": "human@example.com",
    "GIT_COMMITTER_NAME": "human",
    "GIT_COMMITTER_EMAIL": "human@example.com",
}


def git(cwd: Path, *args: str) -> str:
    """Run git as a human would in `cwd` and return its stdout."""
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class GitServer:
    """`git daemon` over `base` (holding `store.git`), started and stopped on demand."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.bare = base / "store.git"
        if not self.bare.exists():
            git(base, "init", "--quiet", "--bare", "--initial-branch=main", str(self.bare))
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"git://127.0.0.1:{self.port}/store.git"

    def start(self) -> GitServer:
        self.proc = subprocess.Popen(
            [
                "git",
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--enable=receive-pack",
                f"--base-path={self.base}",
                "--listen=127.0.0.1",
                f"--port={self.port}",
                str(self.base),
            ],
            env={**os.environ, **GIT_ENV},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: `kill` also ends its children
        )
        deadline = time.monotonic() + 10
        while True:  # ready once it accepts a connection
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("git daemon did not start") from None
                time.sleep(0.02)

    def kill(self) -> None:
        """End the daemon and every connection it serves, as a crashed server would."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None

    def clone(self, to: Path) -> Path:
        git(to.parent, "clone", "--quiet", self.url, str(to))
        return to


def claimer() -> None:
    """A machine's claiming agent: `python -c 'from tests.gitserver import claimer; claimer()'
    STORE AGENT`; claims `deploy <line>` through the remote for each line read, and answers
    `won`, `held <message>` or `error <message>` on one line."""
    import sys

    from memstore.errors import ClaimHeld, MemstoreError
    from memstore.storage.store import Store
    from memstore.workflow.ledger import sync

    store = Store(Path(sys.argv[1]), agent=sys.argv[2], lock_timeout=120)
    for line in sys.stdin:
        try:
            sync.claim(store, "deploy", line.strip(), 600, remote=True)
            answer = "won"
        except ClaimHeld as e:
            answer = f"held {e}"
        except MemstoreError as e:
            answer = f"error {type(e).__name__}: {e}"
        print(answer, flush=True)


def editor() -> None:
    """A machine's busy agent: `... editor()' STORE AGENT ROUNDS`; each round adds a memory,
    records a ledger line and syncs; prints one line per failed sync (none expected)."""
    import sys

    from memstore.errors import MemstoreError
    from memstore.storage.store import Store
    from memstore.workflow.ledger import book as ledger_io
    from memstore.workflow.ledger import sync

    store = Store(Path(sys.argv[1]), agent=sys.argv[2], lock_timeout=120)
    for i in range(int(sys.argv[3])):
        store.add(f"{sys.argv[2]}-{i}", type="decision", description=f"note {i}")
        ledger_io.record(store, "publish", f"{sys.argv[2]}-{i}", evidence="https://example.com/x")
        try:
            sync.sync(store)
        except MemstoreError as e:
            print(f"sync failed: {e}", flush=True)


def run_helper(name: str, *args: str) -> subprocess.Popen[str]:
    """Start `claimer` or `editor` in a process of its own, from the repository's top."""
    import sys

    return subprocess.Popen(
        [sys.executable, "-c", f"from tests.gitserver import {name}; {name}()", *args],
        cwd=Path(__file__).resolve().parents[1],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **GIT_ENV},
    )
