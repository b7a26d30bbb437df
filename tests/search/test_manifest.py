"""The index's manifest: a write appends its few entries to a log, never rewriting a file as
long as the store, and every reader sees the same files as a full read would."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memstore.search import manifest
from memstore.search import upkeep as search
from memstore.search.upkeep import Query
from memstore.storage.store import Store


def files(store: Store) -> tuple[Path, Path]:
    folder = store.cache / "index"
    return folder / manifest.FILE, folder / manifest.LOG


def indexed(store: Store) -> dict[str, tuple[str, ...]]:
    """What a process that never read the manifest before finds in it, by path."""
    found = manifest.read(files(store)[0])
    assert found is not None
    return {
        p: (*map(str, s), found.digests[p], *found.fields.get(p, ()), str(p in found.racy))
        for p, s in found.stamps.items()
    }


def test_a_write_appends_to_the_log_and_leaves_the_manifest_file_alone(store: Store) -> None:
    for i in range(20):  # the three changes below are few of its files
        store.add(f"seed-{i}", type="fact", description=f"seed number {i} of the store")
    search.search(store, Query("seed"))  # built: a whole manifest.json
    time.sleep(0.2)  # past the racy window: the next look settles them all (written whole)
    search.catch_up(store)
    whole, log = files(store)
    before = (whole.stat().st_ino, whole.stat().st_mtime_ns, whole.read_bytes())
    lines = len(log.read_bytes().splitlines())
    store.add("pool-size", type="fact", description="Database pool size is 20")
    store.edit("seed-1", description="seed one, edited")
    store.forget("seed-2", reason="not needed")
    assert [h.name for h in search.search(store, Query("pool"))] == ["pool-size"]
    assert (whole.stat().st_ino, whole.stat().st_mtime_ns, whole.read_bytes()) == before
    assert len(log.read_bytes().splitlines()) > lines
    # Another process reads the file and its log: the same as this one's, and what was written.
    listed = indexed(store)
    assert "fact/pool-size.md" in listed and "fact/seed-2.md" not in listed
    assert listed["fact/seed-1.md"][7] == "seed one, edited"
    mine = search.upkeep(store).index._seen  # pyright: ignore[reportPrivateUsage]
    assert mine is not None and manifest.read(whole) == mine
    assert [h.name for h in search.search(Store(store.root), Query("pool"))] == ["pool-size"]


def test_a_long_log_is_folded_into_a_new_manifest_file(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add("seed", type="fact", description="something to start with")
    search.search(store, Query("seed"))
    whole, log = files(store)
    monkeypatch.setattr(manifest, "LOG_MIN", 600)
    first = whole.read_bytes()
    for i in range(12):
        store.add(f"note-{i}", type="fact", description=f"note number {i} on the build")
        search.search(store, Query("note"))
    assert whole.read_bytes() != first  # folded at least once
    assert log.stat().st_size <= max(600, whole.stat().st_size // manifest.LOG_SHARE) + 400
    assert len(indexed(store)) == 13
    assert [h.name for h in search.search(Store(store.root), Query("number 11"))][0] == "note-11"


def test_a_log_left_by_an_older_manifest_file_is_not_read(store: Store) -> None:
    store.add("seed", type="fact", description="something to start with")
    search.search(store, Query("seed"))
    whole, log = files(store)
    store.add("pool-size", type="fact", description="Database pool size is 20")
    search.search(store, Query("pool"))
    old_log = log.read_bytes()
    search.reindex(store)  # a new manifest.json, holding everything, and a new log
    log.write_bytes(old_log)  # as if the fold stopped between its two files
    assert set(indexed(store)) == {"fact/seed.md", "fact/pool-size.md"}
    assert [h.name for h in search.search(Store(store.root), Query("pool"))] == ["pool-size"]


def test_a_line_still_being_appended_is_not_read_and_a_cut_one_rebuilds(store: Store) -> None:
    store.add("seed", type="fact", description="something to start with")
    search.search(store, Query("seed"))
    whole, log = files(store)
    with log.open("ab") as f:
        f.write(b'[["fact/ghost.md",[1,2,3,"d","ghost","fact","draft","x",""],false]]')
    assert "fact/ghost.md" not in indexed(store)  # no newline yet: not a whole line
    with log.open("ab") as f:
        f.write(b"\n")
    assert "fact/ghost.md" in indexed(store)
    log.write_bytes(log.read_bytes() + b'[["fact/cut.md",[1,2\n')
    assert manifest.read(whole) is None  # unreadable: the index is rebuilt from the files
    assert [h.name for h in search.search(Store(store.root), Query("seed"))] == ["seed"]
    assert set(indexed(store)) == {"fact/seed.md"}


def test_a_reader_reads_only_what_the_log_gained(store: Store) -> None:
    store.add("seed", type="fact", description="something to start with")
    search.search(store, Query("seed"))
    whole, _ = files(store)
    found = manifest.load(whole)
    assert found is not None
    other = Store(store.root, agent="bob")  # another process's writes
    other.add("pool-size", type="fact", description="Database pool size is 20")
    search.search(other, Query("pool"))
    later = manifest.load(whole, found)
    assert later is not None and "fact/pool-size.md" in later[0].stamps
    assert "fact/pool-size.md" not in found[0].stamps  # what was known is left as it was
    assert later[0] == manifest.read(whole)
    assert manifest.load(whole, later) == later  # nothing new: nothing read


def test_a_manifest_file_written_before_the_log_is_read_as_it_is(store: Store) -> None:
    import json

    store.add("seed", type="fact", description="something to start with")
    search.search(store, Query("seed"))
    whole, log = files(store)
    data = json.loads(whole.read_text(encoding="utf-8"))
    del data["token"]  # as memstore wrote it before it kept a log: no index rebuilt
    whole.write_text(json.dumps(data), encoding="utf-8")
    log.unlink()
    later = Store(store.root, agent="alice")
    assert [h.name for h in search.search(later, Query("seed"))] == ["seed"]
    assert not search.catch_up(later).rebuilt
    later.add("pool-size", type="fact", description="Database pool size is 20")
    assert [h.name for h in search.search(later, Query("pool"))] == ["pool-size"]
    assert log.exists() and set(indexed(store)) == {"fact/seed.md", "fact/pool-size.md"}


def test_a_change_to_most_files_writes_the_manifest_whole(store: Store) -> None:
    for i in range(8):
        store.add(f"seed-{i}", type="fact", description=f"seed number {i} of the store")
    search.search(store, Query("seed"))
    whole, log = files(store)
    first = whole.read_bytes()
    for path in store.root.glob("fact/*.md"):  # restored from a copy: new times, same bytes
        os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    assert search.catch_up(Store(store.root)).indexed == 0
    assert whole.read_bytes() != first and len(log.read_bytes().splitlines()) == 1
    assert {s[0] for s in manifest.read(whole).stamps.values()} == {1_700_000_000_000_000_000}  # pyright: ignore[reportOptionalMemberAccess]


@pytest.mark.parametrize("finds", [8, 0], ids=["a find each", "one pass"])
def test_entries_found_in_the_text_are_those_a_full_read_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, finds: int
) -> None:
    """Keys with quotes, backslashes and other scripts, descriptions that hold a key's text,
    racy files, and a log that changes and drops entries: each file's entry is the one a full
    read gives, whether each is searched for or all are found in one pass."""
    monkeypatch.setattr(manifest, "_FINDS", finds)
    odd = ['fact/quote"d.md', "fact/back\\slash.md", "fact/日本語.md", "fact/plain.md"]
    decoy = 'fact/plain.md":[1,2,3,"x"]'
    files_ = manifest.Manifest({}, {}, set(), {})
    filler = [f"fact/filler-{i}.md" for i in range(10)]  # two changes are few of its files
    for i, p in enumerate([*odd, "fact/other.md", "fact/gone.md", *filler]):
        files_.put(p, [i + 1, 10 + i, 100 + i, f"d{i}", p, "fact", "draft", decoy, ""], i == 2)
    path = tmp_path / manifest.FILE
    manifest.write(path, files_)
    loaded = manifest.read(path)
    assert loaded is not None
    loaded.changed = set()
    loaded.put("fact/other.md", [7, 7, 7, "new", "other", "fact", "draft", "", ""], True)
    loaded.put("fact/gone.md", None, False)
    loaded.changed.update({"fact/other.md", "fact/gone.md"})
    manifest.write(path, loaded)  # appended to the log
    assert path.with_name(manifest.LOG).read_text().count("\n") == 2
    whole = manifest.read(path)
    assert whole is not None
    wanted = [*odd, "fact/other.md", "fact/gone.md", "fact/never.md", "fact/filler-9.md"]
    found = manifest.entries(path, wanted)
    assert found is not None
    assert found == {p: (whole.entry(p), p in whole.racy) for p in wanted}
    assert found["fact/gone.md"] == (None, False)
    assert found["fact/other.md"][1] is True
    path.write_text('{"schema":1,' + path.read_text()[len('{"schema":10,') :])
    assert manifest.entries(path, wanted) is None  # another version: not read
