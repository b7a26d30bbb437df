"""The watcher re-indexes files changed by hand while a server runs."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from watchfiles import Change

from memstore.errors import GitError
from memstore.git import commit
from memstore.search import index
from memstore.search.watch import Watcher, memory_files, relevant
from memstore.storage.store import Store
from tests.search.test_index import names, same_size_same_mtime_edit, write_memory


def edit_in_place(path: Path, old: str, new: str) -> None:
    """Rewrite a file in place (same inode, folder untouched), as many editors do."""
    text = path.read_text(encoding="utf-8")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text.replace(old, new))


def test_a_hand_edit_is_found_while_the_watcher_runs(store: Store) -> None:
    path = write_memory(store, "pool-size", "Database pool size is 20")
    assert names(store, "pool") == ["pool-size"]
    with Watcher(store) as watcher:
        edit_in_place(path, "size is 20", "size is pgbouncer")
        assert watcher.wait(lambda: names(store, "pgbouncer") == ["pool-size"], timeout=5)


def test_files_created_and_deleted_while_watching_come_and_go(store: Store) -> None:
    old = write_memory(store, "old-note", "Widgets were green")
    assert names(store, "widgets") == ["old-note"]
    with Watcher(store) as watcher:
        write_memory(store, "new-note", "Widgets are blue")
        old.unlink()
        assert watcher.wait(lambda: names(store, "widgets") == ["new-note"], timeout=5)


def test_the_watcher_catches_up_when_it_starts(store: Store) -> None:
    write_memory(store, "early", "Written before the watcher")
    with Watcher(store) as watcher:
        assert watcher.catch_ups >= 1
        assert names(store, "watcher") == ["early"]


def test_the_watcher_ignores_the_cache_git_and_temp_files(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    assert relevant(Change.modified, str(root / "fact" / "a.md"), root)
    assert not relevant(Change.modified, str(root / ".memstore" / "index" / "x.seg"), root)
    assert not relevant(Change.added, str(root / ".git" / "index"), root)
    assert not relevant(Change.added, str(root / "fact" / ".a.md.x1y2.tmp"), root)
    assert not relevant(Change.added, str(tmp_path / "elsewhere.md"), root)


def test_stopping_the_watcher_ends_its_thread(store: Store) -> None:
    watcher = Watcher(store).start()
    thread = watcher._thread  # pyright: ignore[reportPrivateUsage]
    watcher.stop()
    assert thread is not None and not thread.is_alive()


def test_the_watcher_leaves_the_servers_own_writes_to_its_next_search(store: Store) -> None:
    # Re-indexing its own write in the background would compete with the next request; the
    # next search indexes it anyway.
    path = write_memory(store, "pool-size", "Database pool size is 20")
    with Watcher(store) as watcher:
        before = watcher.catch_ups
        store.add("cache-ttl", type="fact", description="Cache entries live 24 hours")
        assert watcher.wait(lambda: watcher.own_writes_seen >= 1, timeout=5)
        assert watcher.catch_ups == before
        assert names(store, "cache") == ["cache-ttl"]
        edit_in_place(path, "size is 20", "size is pgbouncer")  # a hand edit still counts
        assert watcher.wait(lambda: watcher.catch_ups == before + 1, timeout=5)
        assert names(store, "pgbouncer") == ["pool-size"]


def test_a_write_whose_commit_is_slow_is_still_the_servers_own(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The files change before the commit lands: a watcher that saw them then (a commit slower
    # than its debounce, on a busy machine) indexed them in its own thread, a Whoosh commit
    # beside the writes that follow.
    write_memory(store, "pool-size", "Database pool size is 20")
    real = commit.commit_files

    def slow_commit(*args: Any, **kwargs: Any) -> str | None:
        time.sleep(Watcher(store).debounce_ms / 1000 * 3)
        return real(*args, **kwargs)

    with Watcher(store) as watcher:
        before = watcher.catch_ups
        monkeypatch.setattr(commit, "commit_files", slow_commit)
        store.add("cache-ttl", type="fact", description="Cache entries live 24 hours")
        assert watcher.wait(lambda: watcher.own_writes_seen >= 1, timeout=5)
        assert watcher.catch_ups == before
        assert names(store, "cache") == ["cache-ttl"]


def test_a_failed_write_leaves_its_files_to_the_watcher_again(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add("pool-size", type="fact", description="Database pool size is 20")
    path = store.root / "fact" / "pool-size.md"
    assert names(store, "pool") == ["pool-size"]

    def failing_commit(*args: Any, **kwargs: Any) -> str | None:
        raise GitError("the commit failed")

    with Watcher(store) as watcher:
        monkeypatch.setattr(commit, "commit_files", failing_commit)
        with pytest.raises(GitError):
            store.edit("pool-size", description="Database pool size is 40")
        monkeypatch.undo()
        before = watcher.catch_ups
        edit_in_place(path, "size is 20", "size is pgbouncer")
        assert watcher.wait(lambda: watcher.catch_ups > before, timeout=5)
        assert watcher.wait(lambda: names(store, "pgbouncer") == ["pool-size"], timeout=5)


def test_record_files_at_the_root_are_not_memories(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    assert not relevant(Change.modified, str(root / "ledger.jsonl"), root)
    assert not relevant(Change.modified, str(root / "outcomes.jsonl"), root)
    assert relevant(Change.modified, str(root / "memstore.yaml"), root)
    assert relevant(Change.added, str(root / "runbook"), root)


def test_a_burst_of_changes_names_the_memory_files_or_asks_for_a_full_look(
    tmp_path: Path,
) -> None:
    root = tmp_path / "memory"
    (root / "fact").mkdir(parents=True)
    (root / "ledger.jsonl").write_text("", encoding="utf-8")
    batch = {
        (Change.modified, str(root / "fact" / "a.md")),
        (Change.added, str(root / "fact" / "notes.txt")),
        (Change.modified, str(root / "ledger.jsonl")),
    }
    assert memory_files(batch, root) == ["fact/a.md"]
    assert memory_files({(Change.added, str(root / "fact"))}, root) is None
    assert memory_files({(Change.deleted, str(root / "decision"))}, root) is None


def test_a_type_folder_made_while_watching_is_found(store: Store) -> None:
    write_memory(store, "old-note", "Widgets were green")
    assert names(store, "widgets") == ["old-note"]
    with Watcher(store) as watcher:
        write_memory(store, "runbook-note", "Widgets are restarted weekly", type="runbook")
        assert watcher.wait(lambda: len(names(store, "widgets")) == 2, timeout=5)


def test_an_edit_that_keeps_the_size_and_mtime_is_found_while_the_watcher_runs(
    store: Store,
) -> None:
    path = write_memory(store, "pool-size", "Database pool size is 20")
    old = time.time_ns() - 10 * index.RACY_NS  # long settled: its stamp alone would pass
    os.utime(path, ns=(old, old))
    assert names(store, "pool") == ["pool-size"]
    with Watcher(store) as watcher:
        same_size_same_mtime_edit(path, "size is 20", "size is 30")
        assert watcher.wait(lambda: names(store, "30") == ["pool-size"], timeout=10)


def test_of_two_servers_watchers_one_indexes_and_the_other_takes_over_when_it_stops(
    store: Store,
) -> None:
    # Each server of a store runs a watcher, and each sees every change: eight of them all
    # indexing the same changes spent a fifth of the servers' CPU on the same Whoosh commits.
    path = write_memory(store, "pool-size", "Database pool size is 20")
    other = Store(store.root, agent="bob")
    first = Watcher(store).start()
    second = Watcher(other).start()
    try:
        assert (first.leading, second.leading) == (True, False)
        before = (first.catch_ups, second.catch_ups)
        edit_in_place(path, "size is 20", "size is pgbouncer")
        assert first.wait(lambda: first.catch_ups == before[0] + 1, timeout=5)
        assert second.catch_ups == before[1]
        assert names(other, "pgbouncer") == ["pool-size"]

        first.stop()  # the leader's server ends: the follower leads, and sees what it missed
        edit_in_place(path, "size is pgbouncer", "size is forty")
        assert second.wait(lambda: second.leading and names(other, "forty") == ["pool-size"], 5)
    finally:
        first.stop()
        second.stop()


def test_a_followed_leader_indexes_its_own_servers_writes_too(store: Store) -> None:
    # The other servers' duplicate hints read the shared index as the leader keeps it.
    other = Store(store.root, agent="bob")
    with Watcher(store) as leader, Watcher(other):
        before = leader.catch_ups
        store.add("cache-ttl", type="fact", description="Cache entries live 24 hours")
        assert leader.wait(lambda: leader.catch_ups == before + 1, timeout=5)
        assert leader.own_writes_seen == 0


def test_a_servers_first_search_waits_for_the_watchers_first_look_not_scanning_beside_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.search import upkeep as search

    write_memory(store, "seed", "Widgets are blue")
    search.catch_up(Store(store.root))  # an index from before the server started
    write_memory(store, "pool-size", "Database pool size is 20")  # changed while it was off
    server = Store(store.root)
    catch_up = search.Upkeep.catch_up
    scans: list[str] = []

    def slow_catch_up(self: search.Upkeep, *args: Any, **kwargs: Any) -> Any:
        scans.append(threading.current_thread().name)
        if threading.current_thread().name == "memstore-watch":
            time.sleep(0.5)  # a large store's scan: the search comes while it runs
        return catch_up(self, *args, **kwargs)

    monkeypatch.setattr(search.Upkeep, "catch_up", slow_catch_up)
    watcher = Watcher(server).start(timeout=0)  # as a server starts it
    try:
        assert names(server, "pool") == ["pool-size"]  # what changed before it started
        assert scans[0] == "memstore-watch"
        assert threading.current_thread().name not in scans  # the search scanned no file
    finally:
        watcher.stop()
