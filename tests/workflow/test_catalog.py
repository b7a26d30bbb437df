"""The catalog follows every way a store's files change without reading or stat-ing every file
(git says what may differ from HEAD), and `list` and `stats` read it in SQL."""

from __future__ import annotations

import os
import statistics
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.faces.cli.main import main
from memstore.model import when
from memstore.search import upkeep
from memstore.storage import files, worktree
from memstore.storage.store import Store
from memstore.workflow.care import catalog, steward
from memstore.workflow.session import agent as session
from tests.conftest import as_agent, git


def _descriptions(store: Store) -> dict[str, str]:
    with catalog.opened(store) as found:
        return {e.name: e.description for e in found.entries()}


def _edit_in_place(path: Path, old: str, new: str) -> None:
    """Rewrite the file's bytes through the same inode, as an editor saving in place does:
    its folder's modification time does not move."""
    folder = path.parent.stat().st_mtime_ns
    text = path.read_text(encoding="utf-8").replace(old, new)
    with path.open("r+", encoding="utf-8") as f:
        f.write(text)
        f.truncate()
    assert path.parent.stat().st_mtime_ns == folder


def test_an_edit_in_place_with_no_commit_is_listed(store: Store) -> None:
    store.add("one", type="fact", description="Before the edit")
    store.add("two", type="fact", description="Left alone")
    assert _descriptions(store)["one"] == "Before the edit"
    _edit_in_place(store.root / "fact/one.md", "Before the edit", "After the edit!")
    assert _descriptions(store) == {"one": "After the edit!", "two": "Left alone"}
    out = CliRunner().invoke(main, ["--store", str(store.root), "list"])
    assert "After the edit!" in out.stdout
    # Edited again, then put back as HEAD has it: both followed.
    _edit_in_place(store.root / "fact/one.md", "After the edit!", "Edited twice!!!")
    assert _descriptions(store)["one"] == "Edited twice!!!"
    git(store.root, "checkout", "--", "fact/one.md")
    assert _descriptions(store)["one"] == "Before the edit"


def test_a_staged_edit_and_a_commit_by_git_are_listed(store: Store) -> None:
    store.add("one", type="fact", description="First words")
    assert _descriptions(store)["one"] == "First words"
    _edit_in_place(store.root / "fact/one.md", "First words", "Staged words")
    git(store.root, "add", "fact/one.md")
    assert _descriptions(store)["one"] == "Staged words"
    git(store.root, "commit", "-qm", "edit by hand")
    assert _descriptions(store)["one"] == "Staged words"
    _edit_in_place(store.root / "fact/one.md", "Staged words", "Commit words")
    git(store.root, "commit", "-qam", "edit by hand again")
    assert _descriptions(store)["one"] == "Commit words"


def test_files_made_and_removed_by_hand_and_a_history_reset(store: Store) -> None:
    store.add("kept", type="fact", description="Kept all along")
    assert set(_descriptions(store)) == {"kept"}
    text = (store.root / "fact/kept.md").read_text(encoding="utf-8")
    made = store.root / "decision/by-hand.md"
    made.parent.mkdir(exist_ok=True)
    made.write_text(
        text.replace("name: kept", "name: by-hand").replace("Kept all along", "Made by hand"),
        encoding="utf-8",
    )
    assert _descriptions(store)["by-hand"] == "Made by hand"
    # Never committed: an edit in place is still seen, and so is its removal.
    _edit_in_place(made, "Made by hand", "Made by hand, then edited")
    assert _descriptions(store)["by-hand"] == "Made by hand, then edited"
    made.unlink()
    assert set(_descriptions(store)) == {"kept"}
    before = git(store.root, "rev-parse", "HEAD").strip()
    store.add("later", type="fact", description="Added then reset away")
    assert set(_descriptions(store)) == {"kept", "later"}
    git(store.root, "reset", "-q", "--hard", before)
    assert set(_descriptions(store)) == {"kept"}
    (store.root / "fact/kept.md").unlink()
    assert _descriptions(store) == {}


def test_a_store_in_a_folder_of_a_larger_repository(tmp_path: Path) -> None:
    top = tmp_path / "project"
    top.mkdir()
    git(top, "init", "-q")
    (top / "README").write_text("code\n", encoding="utf-8")
    git(top, "add", "README")
    git(top, "commit", "-qm", "code")
    store = Store.init(top / "memory", agent="alice")
    store.add("one", type="fact", description="In a folder")
    assert _descriptions(store) == {"one": "In a folder"}
    _edit_in_place(store.root / "fact/one.md", "In a folder", "Edited here")
    (top / "README").write_text("more code\n", encoding="utf-8")
    assert _descriptions(store) == {"one": "Edited here"}


def test_a_file_made_in_the_same_tick_as_the_last_look_is_found(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add("one", type="fact", description="One")
    folder = store.root / "fact"
    at = folder.stat().st_mtime_ns
    monkeypatch.setattr(worktree, "_clock", lambda: at + 1000)  # looked just after it changed
    with catalog.opened(store):
        pass
    monkeypatch.undo()
    text = (folder / "one.md").read_text(encoding="utf-8")
    (folder / "two.md").write_text(text.replace("name: one", "name: two"), encoding="utf-8")
    os.utime(folder, ns=(at, at))  # a clock with coarse ticks: the folder's time did not move
    assert set(_descriptions(store)) == {"one", "two"}


def test_nothing_changed_reads_nothing_and_writes_nothing(store: Store) -> None:
    store.add("one", type="fact", description="One")
    with catalog.opened(store):
        pass
    stamp = (store.cache / catalog.FILE).stat().st_mtime_ns
    with catalog.opened(store) as found:
        assert [e.name for e in found.entries()] == ["one"]
    assert (store.cache / catalog.FILE).stat().st_mtime_ns == stamp


def test_list_filters_and_pages_in_sql_as_the_memories_show(store: Store) -> None:
    bob = as_agent(store, "bob")
    for i in range(5):
        store.add(f"api-{i}", type="fact", description=f"api {i}", tags=["api"])
    store.add("other", type="decision", description="no tag")
    for i in (0, 1):
        bob.confirm(f"api-{i}", reason="checked")
    path = store.root / "fact/api-2.md"
    path.write_text(path.read_text().replace("status: draft", "status: confirmed"))
    git(store.root, "commit", "-qam", "confirm it myself")
    run = CliRunner()
    base = ["--store", str(store.root), "list"]
    confirmed = run.invoke(main, [*base, "--status", "confirmed"]).stdout
    assert sorted(line.split()[0] for line in confirmed.splitlines()) == ["api-0", "api-1"]
    unverified = run.invoke(main, [*base, "--status", "unverified"]).stdout
    assert [line.split()[0] for line in unverified.splitlines()] == ["api-2"]
    tagged = run.invoke(main, [*base, "--tag", "api", "--limit", "2"])
    assert len(tagged.stdout.splitlines()) == 2 and "3 more" in tagged.stderr
    typed = run.invoke(main, [*base, "--type", "decision"]).stdout
    assert [line.split()[0] for line in typed.splitlines()] == ["other"]
    with catalog.opened(store) as found:
        page, total = found.page(limit=3)
        every = sorted(found.entries(), key=lambda e: (e.updated, e.name), reverse=True)
    assert total == 6 and [e.name for e in page] == [e.name for e in every[:3]]


def test_stats_counted_in_sql_match_the_memories_as_shown(store: Store) -> None:
    bob = as_agent(store, "bob")
    for i in range(6):
        (store if i % 2 else bob).add(
            f"m-{i}", type="fact" if i < 4 else "runbook", description="x"
        )
    for i in (0, 2, 4):
        store.confirm(f"m-{i}", reason="checked")
    store.deprecate("m-5", reason="gone")
    figures = steward.figures(store)
    with catalog.opened(store) as found:
        shown = found.entries()
    now = when.utcnow()

    def days(a: str, b: datetime) -> float:
        return max(0.0, (b - datetime.fromisoformat(a.replace("Z", "+00:00"))).total_seconds())

    drafts = [e for e in shown if e.status == "draft"]
    confirmed = [e for e in shown if e.status == "confirmed"]
    assert figures.memories == len(shown)
    assert figures.by_status == dict(Counter(e.status for e in shown))
    assert figures.by_owner == dict(Counter(e.owner for e in shown))
    assert figures.by_type == dict(Counter(e.type for e in shown))
    assert figures.drafts_awaiting_review == len(drafts) == 2
    age = statistics.median(days(e.created, now) for e in drafts) / 86400
    assert figures.draft_median_age_days == round(age, 1)
    latency = statistics.median(
        days(e.created, datetime.fromisoformat(e.confirmed_at.replace("Z", "+00:00")))
        for e in confirmed
    )
    assert figures.confirmation_latency_median_days == round(latency / 86400, 2)


def test_keeping_it_in_step_never_scans_every_file(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add("one", type="fact", description="One")
    with catalog.opened(store):
        pass
    _edit_in_place(store.root / "fact/one.md", "One", "Uno")

    def refused(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("scanned every file")

    # Neither the search index's catch-up (a stamp of every file, the whole manifest) nor a
    # walk of the folders: git says what may have changed.
    monkeypatch.setattr(files, "stamps", refused)
    monkeypatch.setattr(files, "walk", refused)
    monkeypatch.setattr(upkeep.Upkeep, "fresh", refused)
    assert _descriptions(store) == {"one": "Uno"}
    out = CliRunner().invoke(main, ["--store", str(store.root), "stats"])
    assert out.exit_code == 0 and "memories: 1" in out.stdout


def test_a_rule_sharing_one_word_of_its_description_is_not_looked_up(store: Store) -> None:
    session.correct(
        store,
        "ledger-nightly",
        description="The billing ledger reconciles nightly",
        severity="p2",
        applies_when=["invoices"],
    )
    with catalog.opened(store) as found:
        assert found.rule_candidates("open the billing page") == set()  # one word: never related
        assert found.rule_candidates("reconcile the billing ledger") == {
            "correction/ledger-nightly.md"
        }
        assert found.rule_candidates("send the invoices") == {"correction/ledger-nightly.md"}


def test_a_rule_with_a_glob_is_looked_up_only_for_a_task_its_glob_matches(store: Store) -> None:
    session.correct(
        store,
        "sql-files",
        description="Review them",
        severity="p2",
        applies_when=["migrations/*.sql"],
    )
    session.correct(store, "always-on", description="Write tests", severity="p2", applies_when=[])
    with catalog.opened(store) as found:
        assert found.rule_candidates("water the garden") == {"correction/always-on.md"}
        assert found.rule_candidates("edit db/migrations/001_init.sql") == {
            "correction/always-on.md",
            "correction/sql-files.md",
        }


def test_a_build_of_many_rows_keeps_every_index_and_row(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A first build of a large store puts its rows in before the indexes: they must be
    # there after, the same, and used.
    for i in range(6):
        store.add(f"api-{i}", type="fact", description=f"the api answers {i}", tags=["api"])
    store.add("rule", type="correction", description="never deploy the api on fridays")

    def indexes() -> list[tuple[str, str]]:
        with catalog.opened(store) as found:
            rows = found.db.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name"
            )
            return [(str(n), str(s)) for n, s in rows]

    def contents() -> tuple[list[object], list[object]]:
        with catalog.opened(store) as found:
            memories = found.db.execute("SELECT * FROM memories ORDER BY path").fetchall()
            keys = found.db.execute("SELECT * FROM keys ORDER BY kind, key, path").fetchall()
            return memories, keys

    before, rows = indexes(), contents()
    (store.cache / catalog.FILE).unlink()
    monkeypatch.setattr(catalog, "BULK", 1)
    assert contents() == rows and indexes() == before
    store.add("late", type="fact", description="written once the catalog was built")
    with catalog.opened(store) as found:
        assert "late" in {e.name for e in found.entries()} and found.page(limit=1)[1] == 8
        plan = found.db.execute(
            "EXPLAIN QUERY PLAN SELECT path FROM keys WHERE kind = 'a' AND key = 'api'"
        ).fetchall()
    assert "keys_by_key" in str(plan)
