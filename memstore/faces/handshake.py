"""`memstore serve` over stdio answers a client's opening requests while the SDK loads.

Importing the `mcp` SDK and declaring the tools takes most of a second, yet the opening
requests of a session (`initialize` or `server/discover`, then `tools/list`) get the same
answers every time from the same code, store settings and client. So `serve` puts two pipes
between the client and the SDK. Every byte the client sends reaches the SDK unchanged, so its
session is what it would have been. An opening request the SDK answered in an earlier run is
answered at once with the very bytes the SDK sent then, and the SDK's own answer, when it
comes, is dropped. The answers are kept in `<store>/.memstore/answers.json`, each under what
it was computed from: a fingerprint of every file of memstore and of the SDK's packages, the
installed versions, Python's, the `--grouped` mode and the content of `memstore.yaml`, and
everything the client sent up to the request. So a kept answer is what the SDK would answer;
one that differs (the file was edited) is logged and replaced for the next run, and nothing is
announced: a `tools/list_changed` notification would contradict the SDK, whose `initialize`
advertises `tools.listChanged: false` and which, on a `server/discover` connection, sends
change notifications only on a `subscriptions/listen` stream the client opened.

It serves the target "first `tools/list` ≤ 0.5 s at 10,000 memories" and the serve start of
~50 ms. Measured with the SDK's `Client` over stdio against `memstore serve` on a 10,000-memory
store (index built), 12 alternating runs each, medians, load average 1.1–2.4 on 2 cores, with
answers kept: first `tools/list` 58 ms (server CPU 40 ms) against 510 ms (480 ms) without
this module, first `memory_recall` 694 against 736 ms (`server/discover` client); 51 against
525 ms and 701 against 700 ms with `mode="legacy"` (`initialize`). A server with no answer kept
(the first after an install, a code or `memstore.yaml` change, or of a new client) answers
when the SDK has loaded, as if this module were not there.

Only the first `WATCHED` messages each way are read as JSON; after them, bytes pass through.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import select
import sys
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

ANSWERS = "answers.json"
"""The file in the store's cache folder holding the SDK's opening answers."""
OPENING = frozenset({"initialize", "server/discover", "tools/list"})
"""The requests answered early: what a client sends before its first tool call."""
WATCHED = 16
"""How many of the client's first messages are read; the rest pass through unread."""
LINE_MAX = 1 << 20
"""A first message longer than this (bytes) is passed through unread, with all after it."""
KEPT = 8
"""How many fingerprints' answers the file keeps (other versions, the grouped mode)."""
KEPT_ANSWERS = 64
"""How many answers a fingerprint keeps (each client's opening differs), the newest."""
SDK_PACKAGES = ("mcp", "mcp_types", "pydantic", "pydantic_core")
"""Whose files, besides memstore's, the answers are built from."""


def fingerprint(store: Path, grouped: bool) -> str:
    """What the opening answers depend on, as a digest: every file of memstore's package and
    of the SDK's packages (name, size and modification time), the versions installed,
    Python's version, the content of the store's `memstore.yaml` (its types are in
    `memory_store`'s schema) and the grouped mode."""
    parts = [sys.version, f"grouped={grouped}"]
    parts += _stamps(str(Path(__file__).parents[1]))
    for name in SDK_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            parts.append(f"{name}=-")
            continue
        folder = os.path.dirname(spec.origin)
        parts += _stamps(folder)
        # The installed version, which an in-place reinstall keeping stamps would not show.
        parts += sorted(e for e in _listing(os.path.dirname(folder)) if _dist_info(e, name))
    try:
        settings = (store / "memstore.yaml").read_bytes()
    except OSError:
        settings = b"-"
    parts.append(hashlib.sha256(settings).hexdigest())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _stamps(folder: str) -> list[str]:
    """Each file under `folder` (bytecode caches aside) as path, size and modification time."""
    found: list[str] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return [f"{folder}:-"]
    for entry in entries:
        if entry.name == "__pycache__":
            continue
        if entry.is_dir(follow_symlinks=False):
            found += _stamps(entry.path)
            continue
        try:
            st = entry.stat()
        except OSError:
            found.append(f"{entry.path}:-")
            continue
        found.append(f"{entry.path}:{st.st_size}:{st.st_mtime_ns}")
    return found


def _listing(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _dist_info(entry: str, name: str) -> bool:
    """Whether `entry` is the metadata folder of distribution `name` (`name-1.2.dist-info`)."""
    return entry.startswith(f"{name}-") and entry.endswith(".dist-info")


def begin(store: Path, grouped: bool) -> Wire | None:
    """Put the pipes in place on fd 0 and 1 and start answering; None (nothing changed) when
    the store has no cache folder yet to keep answers in, or stdin and stdout are not fd 0
    and 1."""
    cache = store.resolve() / ".memstore"
    if not cache.is_dir() or not _on_std_fds():
        return None
    try:
        return Wire(cache / ANSWERS, fingerprint(store, grouped))
    except OSError as e:  # no stdin or stdout to take over: the SDK serves them as they are
        log.debug("serving stdio directly: %s", e)
        return None


class Wire:
    """The client's stdin and stdout, with the SDK behind a pipe on each (fd 0 and fd 1).

    Two daemon threads: one copies what the client sends to the SDK, answering the opening
    requests it knows; one copies what the SDK sends to the client, dropping its answers to
    requests already answered and keeping its opening answers for the next run.
    """

    def __init__(self, path: Path, fingerprint: str) -> None:
        self.path = path
        self.fingerprint = fingerprint
        self.answers = self._load()
        """Request key -> the `result` the SDK gave, the JSON text as it wrote it."""
        self.changed = False
        self.pending: dict[str, tuple[str, str, bool]] = {}
        """Opening requests awaiting the SDK's answer, by id (JSON text): key, method, and
        whether the client was answered already."""
        self.watched = 0
        self.history: list[Any] = []
        """What the client sent so far, each message without its id (the client's numbering,
        not what it asks): with the request itself, a request's key."""
        self.lock = threading.Lock()
        """Guards `pending`."""
        self.out_lock = threading.Lock()
        """Orders whole lines to the client (early answers and the SDK's output)."""
        self.closed = threading.Event()
        """Set when the client closed its end (the SDK then reads the end of its input)."""
        self.asked = False
        """Whether the client sent anything only the SDK can answer (a request not answered
        early, or bytes not read)."""
        self.done = threading.Event()
        self._wake, self._waker = os.pipe()
        """Written once by `finish`: the writer's wait for the SDK's output ends at once."""
        self.client_in = os.dup(0)
        self.client_out = os.dup(1)
        read_end, self.to_server = os.pipe()
        os.dup2(read_end, 0)
        os.close(read_end)
        self.from_server, write_end = os.pipe()
        os.dup2(write_end, 1)
        os.close(write_end)
        self._reader = threading.Thread(target=self._read, name="memstore-wire-in", daemon=True)
        self._writer = threading.Thread(target=self._write, name="memstore-wire-out", daemon=True)
        self._reader.start()
        self._writer.start()

    def finish(self) -> None:
        """After the SDK stopped: pass on what it still wrote and keep the answers."""
        self.done.set()
        os.write(self._waker, b"\0")
        self._writer.join(5)
        os.close(self._waker)
        os.close(self._wake)

    # -- client -> SDK ----------------------------------------------------------------------

    def _read(self) -> None:
        partial = _Lines()
        try:
            while chunk := os.read(self.client_in, 65536):
                if self.watched >= WATCHED or partial.size > LINE_MAX:
                    self.watched = WATCHED  # a long first message: pass the rest through
                    self.asked = True
                    _write_all(self.to_server, partial.take() + chunk)
                    continue
                whole = partial.add(chunk)
                for line in whole.split(b"\n")[:-1]:
                    if not self._request(line):
                        self.asked = True
                _write_all(self.to_server, whole)
            rest = partial.take()
            if rest.strip():
                self.asked = True
            _write_all(self.to_server, rest)
        except OSError as e:
            log.debug("client input ended: %s", e)
        finally:
            self.closed.set()
            os.close(self.to_server)

    def _request(self, line: bytes) -> bool:
        """Answer `line` at once when it is an opening request answered before; whether it
        needs nothing more (answered, a notification or a blank line)."""
        if not line.strip():
            return True
        self.watched += 1
        message = _message(line)
        if message is None:
            self.history.append(line.decode("utf-8", "replace"))
            return False
        method: Any = message.get("method")
        params: Any = message.get("params")
        self.history.append(["id" in message, {k: v for k, v in message.items() if k != "id"}])
        if "id" not in message or not isinstance(method, str):
            return "id" not in message and isinstance(method, str)  # a notification
        if method not in OPENING or (isinstance(params, dict) and "cursor" in params):
            return False
        key = json.dumps(self.history, sort_keys=True, ensure_ascii=False)
        ident = json.dumps(message["id"])
        answer = self.answers.get(key)
        with self.lock:
            if ident in self.pending:  # an id used twice: what the SDK does with it is its own
                return False
            self.pending[ident] = (key, method, answer is not None)
        if answer is not None:
            self._to_client(f'{{"jsonrpc":"2.0","id":{ident},"result":{answer}}}\n'.encode())
        return answer is not None

    # -- SDK -> client ----------------------------------------------------------------------

    def _write(self) -> None:
        poller = select.poll()
        poller.register(self.from_server, select.POLLIN)
        poller.register(self._wake, select.POLLIN)
        partial = _Lines()
        while True:
            ready = poller.poll(0 if self.done.is_set() else 200)
            if not any(fd == self.from_server for fd, _ in ready):
                if self.done.is_set():
                    break
                continue
            chunk = os.read(self.from_server, 65536)
            if not chunk:
                break
            # Whole lines only: an early answer never lands inside one of the SDK's.
            whole = partial.add(chunk)
            if not whole:
                continue
            with self.lock:
                awaiting = bool(self.pending)
            if not awaiting:
                self._to_client(whole)
                continue
            for line in whole.split(b"\n")[:-1]:
                if not self._answered(line):
                    self._to_client(line + b"\n")
        self._to_client(partial.take())
        self._save()

    def _answered(self, line: bytes) -> bool:
        """Note the SDK's answer to an opening request; True when the client had it already."""
        message = _message(line)
        if message is None or "method" in message or "id" not in message:
            return False
        ident = json.dumps(message["id"])
        with self.lock:
            found = self.pending.pop(ident, None)
        if found is None:
            return False
        key, method, sent = found
        # Kept as the SDK wrote it, so an early answer is the line it would send, byte for
        # byte; an answer in any other shape is not kept.
        envelope = f'{{"jsonrpc":"2.0","id":{ident},"result":'.encode()
        answer = None
        if len(message) == 3 and "result" in message and line.startswith(envelope):
            answer = line[len(envelope) : line.rindex(b"}")].decode("utf-8")
        if answer != self.answers.get(key):
            if sent:
                # Every input of the answer is in the fingerprint or the key, so the file was
                # edited: the client keeps what it was sent (no notification can tell it
                # otherwise, see above) and the next server sends the SDK's answer.
                log.warning("the answer to %s kept in %s was not the SDK's", method, self.path)
            self.answers.pop(key, None)
            if answer is not None:
                self.answers[key] = answer  # the newest last, for the cap on the file
            self.changed = True
        if not self.pending:
            self._save()
        return sent

    def _to_client(self, data: bytes) -> None:
        with self.out_lock:
            try:
                _write_all(self.client_out, data)
            except OSError as e:
                log.debug("client output closed: %s", e)

    # -- the answers file -------------------------------------------------------------------

    def _load(self) -> dict[str, str]:
        entry: Any = _read_file(self.path).get(self.fingerprint)
        found: Any = entry.get("answers") if isinstance(entry, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if not isinstance(found, dict):
            return {}
        return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}  # pyright: ignore[reportUnknownVariableType]

    def _save(self) -> None:
        """Keep the answers when they changed (atomically; the last server to save wins)."""
        if not self.changed:
            return
        self.changed = False
        data = _read_file(self.path)
        data.pop(self.fingerprint, None)
        data[self.fingerprint] = {"answers": dict(list(self.answers.items())[-KEPT_ANSWERS:])}
        kept = dict(list(data.items())[-KEPT:])
        temporary = self.path.with_name(f".{ANSWERS}.{os.getpid()}.tmp")
        try:
            temporary.write_text(json.dumps(kept, ensure_ascii=False), encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError as e:
            log.info("cannot keep the opening answers: %s", e)
            temporary.unlink(missing_ok=True)


class _Lines:
    """Bytes read in chunks, handed on in whole lines (each chunk looked at once)."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.size = 0

    def add(self, chunk: bytes) -> bytes:
        """The lines completed by `chunk` (ending with a newline), or b"" when none is."""
        end = chunk.rfind(b"\n") + 1
        if not end:
            self.pieces.append(chunk)
            self.size += len(chunk)
            return b""
        whole = b"".join([*self.pieces, chunk[:end]])
        self.pieces = [chunk[end:]] if end < len(chunk) else []
        self.size = len(chunk) - end
        return whole

    def take(self) -> bytes:
        """What is held (no newline at its end), emptying it."""
        rest = b"".join(self.pieces)
        self.pieces, self.size = [], 0
        return rest


def _on_std_fds() -> bool:
    """Whether `sys.stdin` and `sys.stdout` are fd 0 and 1 (not streams put in their place,
    as a test runner does): only those are taken over."""
    try:
        return sys.stdin.fileno() == 0 and sys.stdout.fileno() == 1
    except (AttributeError, OSError, ValueError):
        return False


def _message(line: bytes) -> dict[str, Any] | None:
    """A JSON-RPC message as a mapping; None for anything else."""
    try:
        message: Any = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None  # pyright: ignore[reportUnknownVariableType]


def _read_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
