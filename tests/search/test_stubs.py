"""Whoosh as memstore loads it: a memory-mapped segment's files are read in place, never
copied into memory, and read as a file would be."""

from __future__ import annotations

import io
import pickle

import pytest
from whoosh.filedb.compound import CompoundStorage
from whoosh.filedb.filestore import FileStorage

from memstore.search import upkeep as search
from memstore.search.stubs import Window
from memstore.search.upkeep import Query
from memstore.storage.store import Store


def test_a_segments_files_are_read_where_they_are_mapped(store: Store) -> None:
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"] * 4
    for i, word in enumerate(words[:30]):
        store.add(f"note-{i}", type="fact", description=f"note on the {word}{i} pipeline")
    search.reindex(store)  # one segment, in one compound file
    storage = FileStorage(str(store.cache / "index"))
    (segment,) = [n for n in storage.list() if n.endswith(".seg")]
    compound = CompoundStorage(storage.open_file(segment), use_mmap=True)
    try:
        for name in compound.list():
            f = compound.open_file(name)
            assert isinstance(f.file, Window)  # over the mapping, not a copy of it
            offset, length = compound.range(name)
            assert f.read(length + 5) == compound._source[offset : offset + length]  # pyright: ignore[reportPrivateUsage, reportOptionalSubscript]
    finally:
        compound.close()
    assert [h.name for h in search.search(Store(store.root), Query("hotel7"))] == ["note-7"]


@pytest.mark.parametrize("size", [0, 1, 700])
def test_a_window_reads_as_a_bytes_file_does(size: int) -> None:
    data = pickle.dumps({"a": list(range(size)), "b": "line\nbreak"}) + b"x\ny\n" + bytes(size)
    window, plain = Window(memoryview(data)), io.BytesIO(data)
    assert pickle.load(window) == pickle.load(plain)
    assert window.tell() == plain.tell()
    assert window.readline() == plain.readline() and window.readline() == plain.readline()
    for whence, offset in ((0, 3), (1, 2), (2, -4), (0, len(data) + 9)):
        assert window.seek(offset, whence) == plain.seek(offset, whence)
        assert window.read(5) == plain.read(5) and window.read() == plain.read()
    window.seek(1), plain.seek(1)
    a, b = bytearray(9), bytearray(9)
    assert window.readinto(a) == plain.readinto(b) and a == b
    window.seek(0), plain.seek(0)
    assert list(window) == list(plain)
