"""A writer killed midway leaves a journal; the next writer undoes its change.
Updates carry the version they read: a stale one is a conflict that shows what changed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from memstore.errors import Conflict
from memstore.faces.cli.main import main
from memstore.faces.server import build_server
from memstore.storage import transaction
from memstore.storage.files import version_of
from memstore.storage.store import Store
from memstore.storage.transaction import JOURNAL
from memstore.workflow.care import lint
from memstore.workflow.ledger import book as ledger_io
from tests.conftest import GIT_ENV, as_agent, git
from tests.state import snapshot

BLOCKED = """
import sys
from pathlib import Path
from memstore.workflow.ledger import book as ledger_io
from memstore.storage.store import Store
store = Store(Path(sys.argv[1]), agent="bob", lock_timeout=600)
store.deprecate("old-way", "replaced", superseded_by="new-way")
"""


@contextmanager
def live_git(cwd: Path) -> Iterator[None]:
    proc = subprocess.Popen(
        ["git", "hash-object", "--stdin"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    try:
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)


def kill_inside_commit(store: Store, code: str) -> None:
    """Run `code` in another process and kill it (-9) while it waits inside its commit for
    HEAD's lock: after its files (and journal) are written, before they are committed, git's
    index lock held."""
    lock = store.root / ".git" / "HEAD.lock"
    with live_git(store.root):
        lock.write_text("", encoding="utf-8")
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(store.root)],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **GIT_ENV},
        )
        assert proc.stderr is not None
        for line in proc.stderr:  # wait until it is stuck inside its commit
            if "git busy" in line:
                break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stderr.close()
        lock.unlink()  # the live git finishes and releases its lock
    assert (store.root / ".memstore" / JOURNAL).exists()


@pytest.fixture
def crashed(store: Store) -> Store:
    """A store where bob's two-file deprecate was killed inside its commit."""
    store.add("old-way", type="fact", description="the old way", body="old")
    store.add("new-way", type="fact", description="the new way", body="new")
    kill_inside_commit(store, BLOCKED)
    assert "status: deprecated" in (store.root / "fact" / "old-way.md").read_text("utf-8")
    return store


def subjects(store: Store) -> list[str]:
    return git(store.root, "log", "--format=%an %s").splitlines()


@pytest.mark.parametrize("next_writer", ["alice", "bob"])
def test_a_change_killed_before_its_commit_is_undone_by_the_next_writer(
    crashed: Store, next_writer: str
) -> None:
    # Not even bob's own next process commits it: nothing proves bob's process wrote it.
    as_agent(crashed, next_writer).add("later", type="fact", description="the next write")
    log = subjects(crashed)
    assert log[0].startswith(f"{next_writer} memory: add fact/later")
    assert not any("deprecate" in line for line in log)
    assert crashed.read("old-way").memory.status == "draft"
    assert crashed.read("new-way").memory.supersedes == ()
    assert git(crashed.root, "status", "--porcelain") == ""
    assert not (crashed.root / ".memstore" / JOURNAL).exists()
    assert not (crashed.root / ".git" / "index.lock").exists()
    assert lint.lint_store(crashed) == []
    git(crashed.root, "fsck", "--strict")


def test_a_forged_journal_is_never_committed_in_the_name_it_gives(store: Store) -> None:
    # The attack: alice hand-edits her own draft to "confirmed by bob", then writes a journal
    # that names bob, hoping the next write commits it in bob's name.
    store.add("mine", type="fact", description="alice's claim", body="trust me")
    path = store.root / "fact" / "mine.md"
    committed = path.read_bytes()
    forged = path.read_text("utf-8").replace("status: draft", "status: confirmed")
    forged = forged.replace("tags: []", "tags: []\nconfirmed_by: bob\nconfirmed_at: now")
    path.write_text(forged, encoding="utf-8")
    journal = {
        "message": "memory: confirm fact/mine — looks right",
        "actor": "bob",
        "files": [{"path": "fact/mine.md", "old": "", "new": version_of(forged.encode())}],
    }
    (store.root / ".memstore" / JOURNAL).write_text(json.dumps(journal), encoding="utf-8")
    for who in ("carol", "bob"):  # by a third identity, and even by bob's own process
        (store.root / ".memstore" / JOURNAL).write_text(json.dumps(journal), encoding="utf-8")
        path.write_text(forged, encoding="utf-8")
        result = CliRunner().invoke(main, ["--store", str(store.root), "--agent", who, "recover"])
        assert result.exit_code == 0, result.output
        assert not any("confirm" in line for line in subjects(store))
        assert path.read_bytes() == committed  # put back as HEAD holds it
        assert not (store.root / ".memstore" / JOURNAL).exists()
    assert store.get("mine").status == "draft"
    assert git(store.root, "status", "--porcelain") == ""


def test_lint_reports_a_cut_short_write_and_recover_undoes_it(crashed: Store) -> None:
    problems = [p for p in lint.lint_store(crashed) if p.path == ".memstore/pending.json"]
    assert len(problems) == 1 and "memory: deprecate fact/old-way" in problems[0].message
    head = git(crashed.root, "rev-parse", "HEAD")
    args = ["--store", str(crashed.root), "--agent", "bob", "recover"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and "undone: memory: deprecate fact/old-way" in result.output
    assert git(crashed.root, "rev-parse", "HEAD") == head
    assert git(crashed.root, "status", "--porcelain") == ""
    assert lint.lint_store(crashed) == []
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and "nothing to recover" in result.output


def test_recover_never_deletes_a_git_lock(store: Store) -> None:
    # git writes no owner into its lock files: a lock may be a live git's, so only a person
    # who knows no git runs may delete it.
    (store.root / ".git" / "index.lock").write_text("", encoding="utf-8")
    assert transaction.undo_pending(store) is None
    assert (store.root / ".git" / "index.lock").exists()


def test_a_change_only_partly_written_is_undone_by_the_next_writer(crashed: Store) -> None:
    # As if killed between its two files: the successor still holds its committed content.
    (crashed.root / "fact" / "new-way.md").write_bytes(
        git(crashed.root, "show", "HEAD:fact/new-way.md").encode()
    )
    crashed.add("later", type="fact", description="the next write")
    assert not any("deprecate" in s for s in subjects(crashed))
    assert crashed.read("old-way").memory.status == "draft"
    assert git(crashed.root, "status", "--porcelain") == ""


def test_a_file_someone_changed_since_the_crash_is_left_alone(crashed: Store) -> None:
    path = crashed.root / "fact" / "old-way.md"
    hand = path.read_text("utf-8").replace("the old way", "the old way, edited by hand")
    path.write_text(hand, encoding="utf-8")
    crashed.add("later", type="fact", description="the next write")
    assert path.read_text("utf-8") == hand  # the hand edit stays, uncommitted, for its author
    assert "supersedes" not in (crashed.root / "fact" / "new-way.md").read_text("utf-8")
    assert not (crashed.root / ".memstore" / JOURNAL).exists()


def test_a_change_git_committed_after_its_writer_died_is_not_committed_twice(
    crashed: Store, tmp_path: Path
) -> None:
    # Killing the writer alone lets its `git update-ref` finish: HEAD moves, the journal
    # outlives the commit, and git's index (whose lock the dead writer held) is left behind.
    # The commit is made here from a copy of the index, as the writer's git lands it.
    theirs = tmp_path / "index"
    theirs.write_bytes((crashed.root / ".git" / "index").read_bytes())
    env = {**os.environ, **GIT_ENV, "GIT_INDEX_FILE": str(theirs)}
    for args in (["add", "fact"], ["commit", "-qm", "memory: deprecate fact/old-way — replaced"]):
        subprocess.run(["git", *args], cwd=crashed.root, env=env, check=True)
    count = len(subjects(crashed))
    crashed.add("later", type="fact", description="the next write")
    assert len(subjects(crashed)) == count + 1
    assert git(crashed.root, "status", "--porcelain") == ""  # the index brought in step


def test_temp_files_of_a_killed_write_are_reported_by_lint_and_cleaned_by_recovery(
    crashed: Store,
) -> None:
    stray = crashed.root / "fact" / ".old-way.md.k3j2h1.tmp"
    stray.write_text("---\nname: old-w", encoding="utf-8")
    assert any(p.path == "fact/.old-way.md.k3j2h1.tmp" for p in lint.lint_store(crashed))
    crashed.add("later", type="fact", description="the next write")
    assert not stray.exists()


@pytest.mark.parametrize(
    "journal",
    [
        {
            "message": "m",
            "actor": "eve",
            "files": [{"path": "../../outside.md", "old": None, "new": "0" * 12}],
        },
        {"message": "m", "actor": "eve\nx", "files": []},
        {"files": "nope"},
        "not json",
    ],
    ids=["traversal", "bad-actor", "bad-shape", "not-json"],
)
def test_a_journal_that_is_not_memstores_own_is_ignored(
    store: Store, tmp_path: Path, journal: object
) -> None:
    text = journal if isinstance(journal, str) else json.dumps(journal)
    (store.root / ".memstore" / JOURNAL).write_text(text, encoding="utf-8")
    before = snapshot(store)
    store.add("x", type="fact", description="d")
    assert not (tmp_path / "outside.md").exists()
    assert len(subjects(store)) == 2 and snapshot(store)[2].keys() - before[2].keys() == {
        "fact/x.md"
    }


RECORD = """
import sys
from pathlib import Path
from memstore.workflow.ledger import book as ledger_io
from memstore.storage.store import Store
store = Store(Path(sys.argv[1]), agent="deployer", lock_timeout=600)
ledger_io.record(store, "publish", "post-1", evidence="https://example.com/post-1")
"""


@pytest.mark.parametrize("next_writer", ["alice", "deployer"])
def test_a_ledger_line_appended_but_not_committed_is_cut_off(
    store: Store, next_writer: str
) -> None:
    ledger_io.record(store, "publish", "post-0", evidence="https://example.com/post-0")
    kill_inside_commit(store, RECORD)
    assert "post-1" in (store.root / "ledger.jsonl").read_text("utf-8")
    as_agent(store, next_writer).add("later", type="fact", description="the next write")
    assert not any("post-1" in line for line in subjects(store))
    path = store.root / "ledger.jsonl"
    assert path.read_bytes() == git(store.root, "show", "HEAD:ledger.jsonl").encode()
    assert ledger_io.check(store, "publish", "post-1").state == "NOT_EXECUTED"
    assert ledger_io.verify(store).ok
    assert git(store.root, "status", "--porcelain") == ""


def test_a_torn_ledger_line_is_cut_off_by_the_next_writer(store: Store) -> None:
    ledger_io.record(store, "publish", "post-0", evidence="https://example.com/post-0")
    kill_inside_commit(store, RECORD)
    path = store.root / "ledger.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole[: whole.rindex(b"post-1")])  # as if the write had been cut short
    store.add("later", type="fact", description="the next write")
    assert path.read_bytes() == git(store.root, "show", "HEAD:ledger.jsonl").encode()
    assert ledger_io.verify(store).ok
    assert ledger_io.check(store, "publish", "post-1").state == "NOT_EXECUTED"


# -- versions and conflicts ---------------------------------------------------------------------


def test_cli_edit_conflict_prints_the_diff_and_exits_1(store: Store) -> None:
    store.add("x", type="fact", description="d", body="first")
    read = store.read("x").version
    as_agent(store, "bob").edit("x", body="changed by bob")
    before = snapshot(store)
    result = CliRunner().invoke(
        main,
        [
            "--store",
            str(store.root),
            "--agent",
            "alice",
            "edit",
            "x",
            "--expect-version",
            read,
            "--body",
            "mine",
        ],
    )
    assert result.exit_code == 1
    assert f"version {read}, which you read" in result.output
    assert "-first" in result.output and "+changed by bob" in result.output
    assert "Error: 'x' changed since you read it" in result.output
    assert snapshot(store) == before


def test_a_conflict_with_an_unknown_version_shows_the_current_file(store: Store) -> None:
    store.add("x", type="fact", description="d", body="current body")
    with pytest.raises(Conflict) as e:
        store.edit("x", body="mine", expected_version="0123456789ab")
    assert e.value.current_version == store.read("x").version
    assert "not in the history" in e.value.detail and "current body" in e.value.detail


def test_a_reviewer_cannot_confirm_a_version_they_did_not_read(store: Store) -> None:
    store.add("x", type="fact", description="d", body="what bob reviews")
    seen = store.read("x").version
    store.edit("x", body="changed after the review started")
    before = snapshot(store)
    with pytest.raises(Conflict, match="changed since you read it"):
        as_agent(store, "bob").confirm("x", "looks right", expected_version=seen)
    assert snapshot(store) == before
    as_agent(store, "bob").confirm("x", "looks right", expected_version=store.read("x").version)


@pytest.mark.parametrize("verb", ["deprecate", "restore"])
def test_every_status_move_checks_the_version(store: Store, verb: str) -> None:
    store.add("x", type="fact", description="d")
    if verb == "restore":
        store.deprecate("x", "stale")
    stale = store.read("x").version
    store.edit("x", tags=["changed"], force=True)  # a deprecated one needs force
    with pytest.raises(Conflict):
        getattr(store, verb)("x", "why", expected_version=stale)


def test_a_hand_edit_committed_with_git_makes_a_stale_update_a_conflict(store: Store) -> None:
    store.add("x", type="fact", description="d", body="one")
    read = store.read("x").version
    path = store.root / "fact" / "x.md"
    path.write_text(path.read_text("utf-8").replace("one", "two, by hand"), encoding="utf-8")
    git(store.root, "commit", "-qam", "hand edit")
    with pytest.raises(Conflict) as e:
        store.edit("x", body="three", expected_version=read)
    assert "+two, by hand" in e.value.detail
    assert "two, by hand" in path.read_text("utf-8")


def test_an_uncommitted_hand_edit_is_never_overwritten_or_swept_into_a_commit(
    store: Store,
) -> None:
    store.add("x", type="fact", description="d", body="one")
    path = store.root / "fact" / "x.md"
    hand = path.read_text("utf-8").replace("one", "half-way through a hand edit")
    path.write_text(hand, encoding="utf-8")
    before = snapshot(store)
    for write in (
        lambda: store.edit("x", tags=["t"]),
        lambda: as_agent(store, "bob").confirm("x", "ok"),
        lambda: store.deprecate("x", "stale"),
    ):
        with pytest.raises(Conflict, match="not committed"):
            write()
    assert snapshot(store) == before and path.read_text("utf-8") == hand


def test_cli_edit_without_a_version_replaces_only_the_fields_given(store: Store) -> None:
    store.add("x", type="fact", description="d", body="bob's body stays")
    result = CliRunner().invoke(
        main, ["--store", str(store.root), "--agent", "carol", "edit", "x", "--tags", "a,b"]
    )
    assert result.exit_code == 0, result.output
    memory = store.read("x").memory
    assert memory.tags == ("a", "b") and memory.body == "bob's body stays"


def test_cache_temp_files_of_dead_processes_are_removed_and_live_ones_kept(store: Store) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead, live = done.stdout.strip(), str(os.getpid())
    cache = store.root / ".memstore"
    (cache / "index").mkdir(exist_ok=True)
    left = [
        cache / f".ledger-history.json.{dead}.x1y2.tmp",
        cache / "index" / f".manifest.{dead}.7.tmp",
    ]
    kept = [
        cache / f".ledger-history.json.{live}.x1y2.tmp",
        cache / "index" / f".manifest.{live}.7.tmp",
    ]
    for path in left + kept:
        path.write_text("partial", encoding="utf-8")
    store.add("x", type="fact", description="any write")
    assert [p.exists() for p in left] == [False, False]
    assert [p.exists() for p in kept] == [True, True]


@pytest.mark.anyio
async def test_an_agent_promoting_a_version_it_did_not_review_gets_a_conflict(
    store: Store,
) -> None:
    store.add("x", type="fact", description="d", body="what bob reviews")
    seen = store.read("x").version
    store.edit("x", body="changed after the review started")
    before = snapshot(store)
    async with Client(build_server(as_agent(store, "bob"), watch=False)) as client:
        stale = await client.call_tool(
            "memory_promote", {"name": "x", "to": "confirmed", "reason": "ok", "version": seen}
        )
        assert stale.is_error and "changed since you read it" in str(stale.content[0])
        assert snapshot(store) == before
        fresh = store.read("x").version
        done = await client.call_tool(
            "memory_promote", {"name": "x", "to": "confirmed", "reason": "ok", "version": fresh}
        )
        assert not done.is_error
    assert store.read("x").memory.confirmed_by == "bob"


def test_an_undo_cut_short_between_the_file_and_the_index_is_finished(store: Store) -> None:
    # A writer staged its new version (the index first, as every write does) and was killed;
    # the next writer's undo put the file back and was killed too, before the index: the
    # journal is still there, the file is as HEAD has it, the index is not.
    store.add("x", type="fact", description="d", body="one")
    path = store.root / "fact" / "x.md"
    committed = path.read_text("utf-8")
    new = committed.replace("one", "two")
    path.write_text(new, encoding="utf-8")
    git(store.root, "add", "fact/x.md")
    path.write_text(committed, encoding="utf-8")
    journal = {
        "message": "memory: edit fact/x — body",
        "actor": "alice",
        "files": [{"path": "fact/x.md", "old": committed, "new": version_of(new.encode())}],
    }
    (store.root / ".memstore" / JOURNAL).write_text(json.dumps(journal), encoding="utf-8")
    assert git(store.root, "status", "--porcelain").strip() == "MM fact/x.md"
    store.add("later", type="fact", description="the next write")
    assert git(store.root, "status", "--porcelain") == ""
    assert path.read_text("utf-8") == committed
