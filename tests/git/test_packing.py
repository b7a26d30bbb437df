"""memstore writes git objects loose, as git does; once they are as many as git packs at
(`gc.auto`), a write starts git's own `git gc --auto` in the background, so a store that grows
for years does not pile up tens of thousands of loose objects."""

from __future__ import annotations

import time

from memstore.git import objects
from memstore.storage.store import Store
from tests.conftest import git


def counted(store: Store) -> dict[str, int]:
    out = git(store.root, "count-objects", "-v")
    return {k: int(v) for k, v in (line.split(": ") for line in out.splitlines())}


def test_many_loose_objects_are_packed_by_git_in_the_background(store: Store) -> None:
    # Years of writes, in a moment: 7,500 blobs, reachable from a branch of their own.
    repo = store.repo
    entries = b""
    for i in range(7500):
        sha = objects.write_object(repo, b"blob", f"a memory, version {i}\n".encode())
        entries += b"100644 f%05d\0" % i + bytes.fromhex(sha)
    tree = objects.write_object(repo, b"tree", entries)
    commit = objects.write_object(
        repo,
        b"commit",
        f"tree {tree}\nauthor a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\n\nold\n".encode(),
    )
    git(store.root, "update-ref", "refs/heads/history", commit)
    before = counted(store)
    assert before["count"] > objects.GC_AUTO
    store.add("after", type="fact", description="the write that finds them")
    for _ in range(1200):  # git packs in the background: wait for it, bounded
        if counted(store)["count"] < 100 and not (store.root / ".git" / "gc.pid").exists():
            break
        time.sleep(0.1)
    after = counted(store)
    assert after["count"] < 100 and after["in-pack"] >= before["count"]
    # The store reads and writes on, packed objects and all.
    assert store.get("after").description == "the write that finds them"
    store.edit("after", body="edited once packed")
    assert git(store.root, "status", "--porcelain") == ""
    git(store.root, "fsck", "--strict")


def test_a_few_loose_objects_start_no_packing(store: Store) -> None:
    for i in range(5):
        store.add(f"m{i}", type="fact", description=f"memory {i}")
    assert not objects.pack_when_due(store.repo, store.cache)
    assert not (store.cache / objects.GC_ASKED).exists()
