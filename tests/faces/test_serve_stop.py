"""`memstore serve` stops on the first Ctrl-C at a terminal and on SIGTERM, cleanly; `make
serve` keeps stdout for the MCP wire alone.

Ctrl-C is typed into a real pseudo-terminal (the server's controlling terminal, its process
group in the foreground), so the terminal driver sends SIGINT to the process group as it does
for a person; nothing here signals the server directly except the SIGTERM a client sends."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from memstore.storage.store import Store
from tests.conftest import REPO

WAIT = 60
"""Seconds a process is given to show a line or to exit before the test fails (a hang)."""

# Become the session leader with the pty (fd 0) as controlling terminal, then run the command:
# the terminal's foreground process group is then the command's, as in a shell.
ON_TERMINAL = (
    "import fcntl, os, sys, termios; os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "terminal", "version": "1"},
    },
}


def _env(**extra: str) -> dict[str, str]:
    # Without the flags of a make this runs under (`make test` passes -s down to every make).
    kept = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return {
        **kept,
        "MEMSTORE_AGENT": "claude-code",
        "PYTHONPATH": str(REPO),
        "TERM": "dumb",
        **extra,
    }


class Terminal:
    """A command running on a pseudo-terminal, what it writes collected as it comes."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-c", ON_TERMINAL, *command],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=cwd,
            close_fds=True,
        )
        os.close(slave)
        self.output = b""
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: every holder of the terminal is gone
                return
            if not chunk:
                return
            with self.lock:
                self.output += chunk

    def text(self) -> str:
        with self.lock:
            return self.output.decode("utf-8", "replace")

    def wait_for(self, words: str) -> None:
        deadline = time.monotonic() + WAIT
        while words not in self.text():
            assert self.process.poll() is None, f"exited early:\n{self.text()}"
            assert time.monotonic() < deadline, f"never said {words!r}:\n{self.text()}"
            time.sleep(0.05)

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def exit_status(self) -> int:
        try:
            return self.process.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"still running {WAIT} s after one Ctrl-C:\n{self.text()}")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the module's servers (they only read it)."""
    root = tmp_path_factory.mktemp("served") / "memory"
    Store.init(root, agent="alice")
    return root


@pytest.fixture
def terminal() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for t in opened:
        t.close()


def _assert_clean(t: Terminal) -> None:
    said = t.text()
    assert "Traceback" not in said, said
    assert "Aborted!" not in said, said
    assert "KeyboardInterrupt" not in said, said


def test_one_ctrl_c_stops_stdio_serve_at_a_terminal(served: Path, terminal: list[Terminal]) -> None:
    t = Terminal([sys.executable, "-m", "memstore", "--store", str(served), "serve"], _env(), REPO)
    terminal.append(t)
    t.wait_for("Press Ctrl-C to stop")
    # The SDK reads what is typed: it answers an initialize typed at the terminal.
    t.type(json.dumps(INITIALIZE).encode() + b"\n")
    t.wait_for('"serverInfo"')
    t.type(b"\x03")
    assert t.exit_status() == 130
    _assert_clean(t)
    # Said once: the banner, not the server's start line again.
    assert t.text().count("serving") == 1, t.text()


@pytest.mark.parametrize("after", [0.0, 0.03, 0.1, 0.25])
def test_one_ctrl_c_stops_http_serve_at_a_terminal(
    served: Path, terminal: list[Terminal], after: float
) -> None:
    """At any moment of the start-up: the app built, the event loop being made, serving."""
    command = [sys.executable, "-m", "memstore", "--store", str(served), "serve", "--http"]
    t = Terminal([*command, "--port", "0"], _env(), REPO)
    terminal.append(t)
    t.wait_for("(Ctrl-C stops)")
    time.sleep(after)
    t.type(b"\x03")
    assert t.exit_status() == 130
    _assert_clean(t)


def test_one_ctrl_c_stops_make_serve_at_a_terminal(
    tmp_path: Path, terminal: list[Terminal]
) -> None:
    t = Terminal(["make", *_make_serve(tmp_path)], _env(), tmp_path)
    terminal.append(t)
    t.wait_for("Press Ctrl-C to stop")
    t.type(b"\x03")
    t.exit_status()  # make's own status after an interrupt is make's
    _assert_clean(t)
    assert "stopping" in t.text()


def test_sigterm_stops_a_client_started_serve_cleanly(served: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "memstore", "--store", str(served), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        process.stdin.flush()
        assert b'"serverInfo"' in process.stdout.readline()
        process.send_signal(signal.SIGTERM)  # the client stops it, keeping its stdin open
        try:
            status = process.wait(WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail(f"still running {WAIT} s after SIGTERM")
        _, said = process.communicate()
    assert status == 0
    assert b"Traceback" not in said, said.decode()


def _make_version() -> tuple[int, ...]:
    first = subprocess.run(["make", "--version"], capture_output=True, text=True).stdout
    return tuple(int(part) for part in first.split()[2].split(".") if part.isdigit())


QUIET_ON_ITS_OWN = _make_version() >= (4, 4, 1)
"""Whether this make reads `MAKEFLAGS += --no-print-directory` before saying "Entering
directory" (4.4.1 on); an older one says it first, and `-s` (the documented form) keeps it
quiet."""


def _make_serve(tmp_path: Path, quiet: bool = not QUIET_ON_ITS_OWN) -> list[str]:
    """`make -C REPO serve` (with -s where this make needs it) with this interpreter's
    environment as the one it serves from, never installing anything (the runtime stamp is
    newer than pyproject.toml)."""
    stamp = tmp_path / "runtime-stamp"
    stamp.touch()
    return [
        *(["-s"] if quiet else []),
        "-C",
        str(REPO),
        "serve",
        f"BIN={Path(sys.executable).parent}",
        f"RUNTIME={stamp}",
    ]


def test_make_serve_writes_nothing_but_the_wire_on_stdout(tmp_path: Path) -> None:
    done = subprocess.run(
        ["make", *_make_serve(tmp_path)],
        stdin=subprocess.DEVNULL,  # the client left at once: the server has nothing to say
        capture_output=True,
        env=_env(),
        cwd=tmp_path,
        timeout=WAIT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""


def test_an_old_make_under_dash_c_says_how_to_keep_stdout_clean(tmp_path: Path) -> None:
    done = subprocess.run(
        ["make", *_make_serve(tmp_path, quiet=False)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=_env(),
        cwd=tmp_path,
        timeout=WAIT,
    )
    assert done.returncode == 0, done.stderr
    if QUIET_ON_ITS_OWN:
        assert done.stdout == b""
    else:
        assert b"Entering directory" in done.stdout
        assert b"make -s -C DIR serve" in done.stderr


@pytest.mark.anyio
async def test_make_serve_as_the_sdk_clients_command(tmp_path: Path) -> None:
    received: list[object] = []

    async def handler(message: object) -> None:
        received.append(message)

    params = StdioServerParameters(command="make", args=_make_serve(tmp_path), env=_env())
    async with Client(params, read_timeout_seconds=WAIT, message_handler=handler) as client:
        tools = await client.list_tools()
    assert tools.tools
    # A line on stdout that is no JSON-RPC reaches the session as an exception.
    assert not [m for m in received if isinstance(m, Exception)]
