"""The whole verdicts taken apart (a server's warm-up): reads meanwhile neither wait for it nor
take them again, and a commit landing meanwhile is judged at the next read."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memstore.storage import verdicts
from memstore.storage.store import Store
from tests.conftest import as_agent, git


def _forge(store: Store, name: str) -> None:
    """Confirm `name` by hand, in a commit by its own owner: the history does not back it."""
    path = store.root / f"fact/{name}.md"
    path.write_text(path.read_text(encoding="utf-8").replace("status: draft", "status: confirmed"))
    git(store.root, "commit", "-qam", "confirm it myself")


def _statuses(store: Store) -> dict[str, str]:
    return {m.name: m.status for m in store.memories()}


def _in_thread(fn: Any) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def test_reads_during_a_warm_up_and_a_commit_landing_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Store.init(tmp_path / "s", agent="alice")
    writer = Store(tmp_path / "s", agent="alice")
    writer.add("kept", type="fact", description="Confirmed by bob")
    writer.add("forged", type="fact", description="Confirmed by its owner")
    writer.add("later", type="fact", description="Forged while warming")
    names = [f"n-{i}" for i in range(verdicts.PARTIAL_READS + 2)]
    for name in names:
        writer.add(name, type="fact", description=name)
        as_agent(writer, "bob").confirm(name, reason="checked")
    as_agent(writer, "bob").confirm("kept", reason="checked")
    _forge(writer, "forged")
    Store(tmp_path / "s", agent="alice").trust.current()  # the verdicts kept in .memstore/

    server = Store(tmp_path / "s", agent="alice")
    loading = threading.Event()
    release = threading.Event()
    load = verdicts.load

    def slow_load(*args: Any, **kwargs: Any) -> Any:
        loading.set()
        assert release.wait(60)
        return load(*args, **kwargs)

    monkeypatch.setattr(verdicts, "load", slow_load)
    warming = _in_thread(server.trust.warm)
    assert loading.wait(60)
    # Reads of one memory each while the whole verdicts load: more than a process's few
    # partial reads, none waiting for the warm-up or loading the whole verdicts again.
    seen: list[str] = []
    reads = _in_thread(
        lambda: seen.extend(server.read(n).memory.status for n in [*names, "kept", "forged"])
    )
    reads.join(60)
    assert not reads.is_alive()
    assert seen == ["confirmed"] * (len(names) + 1) + ["unverified"]
    # A forged confirmation lands before the warm-up ends: the next read judges it.
    _forge(writer, "later")
    release.set()
    warming.join(60)
    assert not warming.is_alive() and server.trust.trust is not None
    shown = _statuses(server)
    assert (shown["kept"], shown["forged"], shown["later"]) == (
        "confirmed",
        "unverified",
        "unverified",
    )
    assert _statuses(server) == _statuses(Store(tmp_path / "s", agent="alice"))


def test_a_warm_up_after_the_verdicts_are_taken_changes_nothing(tmp_path: Path) -> None:
    Store.init(tmp_path / "s", agent="alice")
    store = Store(tmp_path / "s", agent="alice")
    store.add("one", type="fact", description="One")
    taken = store.trust.current()
    store.trust.warm()
    assert store.trust.trust is taken


def test_a_second_warm_up_while_one_runs_takes_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Store.init(tmp_path / "s", agent="alice")
    store = Store(tmp_path / "s", agent="alice")
    store.add("one", type="fact", description="One")
    loading = threading.Event()
    release = threading.Event()
    loads: list[int] = []
    load = verdicts.load

    def slow_load(*args: Any, **kwargs: Any) -> Any:
        loads.append(1)
        loading.set()
        assert release.wait(60)
        return load(*args, **kwargs)

    monkeypatch.setattr(verdicts, "load", slow_load)
    first = _in_thread(store.trust.warm)
    assert loading.wait(60)
    store.trust.warm()  # returns at once: one warm-up at a time (an HTTP server's sessions)
    release.set()
    first.join(60)
    assert not first.is_alive() and loads == [1] and store.trust.trust is not None


def _kept_head(store: Store) -> str | None:
    header = (store.root / ".memstore" / "trust.json").read_text(encoding="utf-8")
    return json.loads(header.partition("\n")[0])["head"]


def test_a_warm_up_keeps_the_verdicts_it_extended_a_while_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.git import refs

    Store.init(tmp_path / "s", agent="alice")
    writer = Store(tmp_path / "s", agent="alice")
    writer.add("first", type="fact", description="one")
    Store(tmp_path / "s", agent="alice").trust.current()  # the verdicts kept in .memstore/
    old = _kept_head(writer)
    as_agent(writer, "bob").add("second", type="fact", description="two")  # kept ones behind
    head = refs.head(writer.repo)
    assert head != old

    monkeypatch.setattr(verdicts, "KEEP_AFTER", 3600.0)
    server = Store(tmp_path / "s", agent="alice")
    server.trust.warm()
    assert server.trust.trust is not None and server.trust.trust.head == head
    assert _kept_head(writer) == old  # not written while the first requests are served
    server.trust.keep()
    assert _kept_head(writer) == head

    as_agent(writer, "bob").add("third", type="fact", description="three")
    monkeypatch.setattr(verdicts, "KEEP_AFTER", 0.05)
    later = Store(tmp_path / "s", agent="alice")
    later.trust.warm()
    third = refs.head(writer.repo)
    for _ in range(400):
        if _kept_head(writer) == third:
            break
        time.sleep(0.05)
    assert _kept_head(writer) == third
