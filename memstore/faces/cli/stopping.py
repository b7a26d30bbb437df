"""Stopping `memstore serve` on the first Ctrl-C or SIGTERM: cleanly, exit 130 or 0, no traceback.

Over stdio the SDK reads stdin in a worker thread that a signal cannot interrupt: a
KeyboardInterrupt in the main thread cancels the server, whose cancellation then waits for that
read, and the interpreter's exit waits for the thread again. The one stop the SDK handles well
is the end of its input, as when a client closes the pipe. So `serve` puts a pipe between
stdin and the SDK (`Relay`): a daemon thread copies stdin into it, and a stop replaces the
pipe's only write end with /dev/null (one `dup2`, safe in a signal handler and against the
copying thread), which the SDK reads as the end of its input: it finishes the calls under way
and returns. A second signal during that stops the process at once (each write of the store is
one transaction, so nothing is left half done).

Over HTTP uvicorn catches the signals itself, shuts down gracefully and then raises the signal
again for the handler it found; `stop_on_signals` puts one there that ends the command quietly
rather than Python's `KeyboardInterrupt` (click's `Aborted!` and exit 1).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Generator
from contextlib import contextmanager
from types import FrameType

INTERRUPTED = 130
"""The exit status after Ctrl-C (128 + SIGINT), as shells report an interrupted command."""
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(BaseException):
    """Raised by the handler where no relay can end the server: unwinds to `serve`'s end."""


class Relay:
    """A pipe on fd 0 between the real stdin and the SDK, fed by a daemon thread."""

    def __init__(self) -> None:
        self.source = os.dup(0)
        read_end, self.sink = os.pipe()
        os.dup2(read_end, 0)
        os.close(read_end)
        self._thread = threading.Thread(target=self._copy, name="memstore-stdin", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        try:
            while chunk := os.read(self.source, 65536):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(self.sink, view) :]
        except OSError:
            pass  # stdin closed or the stop came first: either way the input ends here
        self.end()

    def end(self) -> None:
        """End the SDK's input. Idempotent; the write end stays a valid descriptor (on
        /dev/null), so a late write of the copying thread lands nowhere, never on a reused fd."""
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self.sink)
        finally:
            os.close(null)


class Stop:
    """What the signal handler saw: the first stop signal, and how `serve` should exit."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.relay: Relay | None = None

    @property
    def status(self) -> int:
        """0 when nothing or SIGTERM stopped the server (a client's orderly stop), 130 after
        Ctrl-C."""
        return INTERRUPTED if self.signal == signal.SIGINT else 0

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.signal is not None:  # asked twice: the calls under way are not waited for
            _say("memstore: stopped at once")
            os._exit(self.status)
        self.signal = signum
        if self.relay is None:
            raise Stopped
        if sys.stderr.isatty():
            _say("memstore: stopping (Ctrl-C again to stop at once)")
        self.relay.end()


@contextmanager
def stop_on_signals(relay: bool) -> Generator[Stop]:
    """Handle SIGINT and SIGTERM while inside: with `relay` (stdio, fd 0 and 1 real) the SDK's
    input is ended; otherwise `Stopped` unwinds the main thread, caught here. The handlers
    found are put back on the way out."""
    stop = Stop()
    if relay:
        try:
            stop.relay = Relay()
        except OSError:
            stop.relay = None  # no stdin to stand between: the handler unwinds instead
    previous = {sig: signal.signal(sig, stop.handle) for sig in STOP_SIGNALS}
    try:
        yield stop
    except Stopped:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _say(line: str) -> None:
    try:
        os.write(2, (line + "\n").encode())
    except OSError:
        pass
