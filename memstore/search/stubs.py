"""Loading Whoosh as memstore uses it: without the two modules it loads for nothing, and
reading a memory-mapped segment in place rather than copying each of its files into memory.
Every module importing Whoosh does so under `without_unused_modules`, whichever of them a
process loads first."""

from __future__ import annotations

import sys
import types
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

_UNUSED = {"urllib.request": "urlretrieve", "whoosh.lang.morph_en": "variations"}
"""Modules whoosh imports at load time for one function memstore never calls, and that
function: whoosh's py2/py3 shim loads `urllib.request` (with http.client and the email
package) for a download helper, and its query module compiles the English morphology rules
(a regex of some 200 alternatives) for `Variations` queries. Together about 80 ms and 7 MB a
process."""


def _stub(name: str, attr: str) -> types.ModuleType:
    stub = types.ModuleType(name)

    def load_then_call(*args: Any, **kwargs: Any) -> Any:
        import importlib

        if sys.modules.get(name) is stub:
            del sys.modules[name]
        return getattr(importlib.import_module(name), attr)(*args, **kwargs)

    setattr(stub, attr, load_then_call)
    return stub


@contextmanager
def without_unused_modules() -> Generator[None]:
    """While whoosh loads, each module in `_UNUSED` not yet loaded is a stub whose function
    loads the real module when called; afterwards, importing the module loads the real one."""
    stubs = {n: _stub(n, a) for n, a in _UNUSED.items() if n not in sys.modules}
    sys.modules.update(stubs)
    try:
        yield
    finally:
        for name, stub in stubs.items():
            if sys.modules.get(name) is stub:
                del sys.modules[name]
    _read_in_place()


class Window:
    """A read-only file over a buffer (a part of a memory-mapped segment), read in place: what
    Whoosh's `BufferFile` reads through (`read`, `readline`, `readinto`, `seek`, `tell`)."""

    __slots__ = ("_buf", "_pos")

    def __init__(self, buf: Any) -> None:
        self._buf = memoryview(buf).cast("B")
        self._pos = 0

    def read(self, size: int | None = -1) -> bytes:
        start = self._pos
        end = len(self._buf) if size is None or size < 0 else min(len(self._buf), start + size)
        if end <= start:
            return b""
        self._pos = end
        return self._buf[start:end].tobytes()

    def readinto(self, target: Any) -> int:
        start = self._pos
        out = memoryview(target).cast("B")
        count = max(0, min(len(out), len(self._buf) - start))
        out[:count] = self._buf[start : start + count]
        self._pos = start + count
        return count

    def readline(self, size: int | None = -1) -> bytes:
        start = self._pos
        end = len(self._buf) if size is None or size < 0 else min(len(self._buf), start + size)
        pos = start
        while pos < end:  # a chunk at a time: a line is rarely read (pickle's text opcodes)
            chunk = self._buf[pos : min(end, pos + 256)].tobytes()
            found = chunk.find(b"\n")
            if found >= 0:
                pos += found + 1
                break
            pos += len(chunk)
        self._pos = pos
        return self._buf[start:pos].tobytes()

    def __iter__(self) -> Iterator[bytes]:
        while line := self.readline():
            yield line

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._pos, len(self._buf))[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        pass


def _read_in_place() -> None:
    """Make Whoosh's `BufferFile` (each file of a memory-mapped segment) read the mapping in
    place. It copied the file into a `BytesIO`: a searcher held every file of every segment
    twice, the mapping's pages and the copy (about 500 MB at 100,000 memories), and each
    opening copied them all again."""
    from whoosh.filedb import structfile  # pyright: ignore[reportMissingTypeStubs]

    buffer_file: Any = structfile.BufferFile
    if getattr(buffer_file, "_in_place", False):
        return
    original = buffer_file.__init__

    def __init__(self: Any, buf: Any, name: str | None = None, onclose: Any = None) -> None:
        original(self, b"", name=name, onclose=onclose)
        self._buf = buf
        self.file = Window(buf)

    buffer_file.__init__ = __init__
    buffer_file._in_place = True
