"""`memstore serve` over stdio answers a client's opening requests while the SDK loads.

Importing the `mcp` SDK and declaring the tools takes most of a second, yet the opening
requests of a session (`initialize` or `server/discover`, then `tools/list`) get the same
answers every time from the same code, store settings and client. So `serve` puts two pipes
between the client and the SDK. Every byte the client sends reaches the SDK unchanged, so its
session is what it would have been. An opening request the SDK answered in an earlier run (the
answers are kept in `<store>/.memstore/answers.json`, under a fingerprint of memstore's and the
SDK's files and the store's `memstore.yaml`) is answered at once, and the SDK's own answer to
it, when it comes, is dropped. An SDK answer that differs from the one sent replaces it for the
next run, and for `tools/list` the client is sent `notifications/tools/list_changed`, so a
client that heeds it asks again (the SDK's capabilities do not declare `listChanged`, so a
strict client may not: the fingerprint is what keeps a kept answer from going stale). The
SDK's first answers are what fills the file.

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
LIST_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'


def fingerprint(store: Path, grouped: bool) -> str:
    """What the opening answers depend on, as a digest: memstore's modules and the SDK's
    packages (name, size and modification time of their files), Python's version, the
    store's `memstore.yaml` (its types are in `memory_store`'s schema) and the grouped mode."""
    parts = [sys.version, f"grouped={grouped}"]
    package = Path(__file__).parents[1]
    for path in sorted(package.rglob("*.py")):
        parts.append(_stamp(str(path)))
    for name in SDK_PACKAGES:
        spec = importlib.util.find_spec(name)
        parts.append(f"{name}={_stamp(spec.origin) if spec and spec.origin else None}")
    parts.append(_stamp(str(store / "memstore.yaml")))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _stamp(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}:-"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


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
        """Request key -> the `result` the SDK gave, as JSON text."""
        self.changed = False
        self.pending: dict[str, tuple[str, str, bool]] = {}
        """Opening requests awaiting the SDK's answer, by id (JSON text): key, method, and
        whether the client was answered already."""
        self.watched = 0
        self.opening: list[Any] | None = None
        """The connection's first request (method and params), part of every request's key."""
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
        self._writer.join(5)

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
            return False
        method: Any = message.get("method")
        if "id" not in message or not isinstance(method, str):
            return "id" not in message and isinstance(method, str)  # a notification
        params: Any = message.get("params")
        key = json.dumps([self.opening, method, params], sort_keys=True, ensure_ascii=False)
        if self.opening is None:
            self.opening = [method, params]
        if method not in OPENING or (isinstance(params, dict) and "cursor" in params):
            return False
        ident = json.dumps(message["id"])
        answer = self.answers.get(key)
        with self.lock:
            self.pending[ident] = (key, method, answer is not None)
        if answer is not None:
            self._to_client(f'{{"jsonrpc":"2.0","id":{ident},"result":{answer}}}\n'.encode())
        return answer is not None

    # -- SDK -> client ----------------------------------------------------------------------

    def _write(self) -> None:
        poller = select.poll()
        poller.register(self.from_server, select.POLLIN)
        partial = _Lines()
        while True:
            if not poller.poll(0 if self.done.is_set() else 200):
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
        with self.lock:
            found = self.pending.pop(json.dumps(message["id"]), None)
        if found is None:
            return False
        key, method, sent = found
        if "result" not in message:
            if self.answers.pop(key, None) is not None:
                self.changed = True
            return sent
        result = json.dumps(message["result"], ensure_ascii=False, separators=(",", ":"))
        if result != self.answers.get(key):
            if sent:
                log.warning("the SDK's answer to %s differs from the one sent early", method)
                if method == "tools/list":
                    self._to_client(LIST_CHANGED)
            self.answers.pop(key, None)
            self.answers[key] = result  # the newest last, for the cap on the file
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
