"""The one write path: every store file is written through it, it refuses what is not a plain
file, commits by git's compare-and-swap, and leaves the rest of the repository as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memstore.errors import Conflict, UnsafePath
from memstore.git import indexfile, refs, repository
from memstore.search.query import Query
from memstore.search.upkeep import search
from memstore.storage import files, transaction
from memstore.storage.store import Store
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.session import agent as session
from tests.conftest import GIT_ENV, git, processes_started

Prepared = Callable[[], None] | None


def memstore(store: Store, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would, in its own process, bounded: a hang fails the test."""
    return subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(store.root), "--agent", "bob", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **GIT_ENV},
        check=False,
    )


def rule(store: Store) -> None:
    session.correct(
        store,
        "no-friday-deploys",
        description="Never deploy on a Friday",
        severity="p1",
        applies_when=["deploy"],
    )


def test_a_fifo_among_the_memories_does_not_hang_check_or_search(store: Store) -> None:
    rule(store)
    os.mkfifo(store.root / "correction" / "x.md")
    os.mkfifo(store.root / "fact.md")
    done = memstore(store, "check", "deploy the api")
    assert done.returncode == 3, done.stderr  # WARN, from the p1 rule
    assert "no-friday-deploys" in done.stdout
    assert "Traceback" not in done.stderr
    done = memstore(store, "search", "friday")
    assert done.returncode == 0 and "no-friday-deploys" in done.stdout


def test_a_fifo_ledger_is_refused_with_an_error_not_a_hang(store: Store) -> None:
    os.mkfifo(store.root / "ledger.jsonl")
    done = memstore(store, "ledger", "check", "publish", "pkg@1")
    assert done.returncode == 1 and done.stderr.startswith("Error:"), done.stderr
    assert "not a regular file" in done.stderr and "Traceback" not in done.stderr
    done = memstore(store, "ledger", "record", "publish", "pkg@1", "--evidence", "https://x.io/1")
    assert done.returncode == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("record", ["ledger.jsonl", "outcomes.jsonl"])
def test_a_symlinked_record_file_is_never_written_through(
    store: Store, tmp_path: Path, record: str
) -> None:
    rule(store)
    outside = tmp_path / "outside.jsonl"
    outside.write_text("", encoding="utf-8")
    (store.root / record).symlink_to(outside)
    head = git(store.root, "rev-parse", "HEAD")
    for args in (
        ("outcome", "no-friday-deploys", "heeded"),
        ("ledger", "record", "publish", "pkg@1", "--evidence", "https://x.io/1"),
        ("ledger", "claim", "publish", "pkg@2"),
        ("ledger", "check", "publish", "pkg@1"),
        ("ledger", "list"),
    ):
        done = memstore(store, *args)
        assert "Traceback" not in done.stderr, done.stderr
        if args[0] == "outcome" and record == "ledger.jsonl":
            assert done.returncode == 0  # the other record file is fine
            continue
        if args[0] == "ledger" and record == "outcomes.jsonl":
            continue
        assert done.returncode == 1 and done.stderr.startswith("Error:"), (args, done.stderr)
        assert "symlink" in done.stderr
    assert outside.read_text(encoding="utf-8") == ""
    if record == "ledger.jsonl":
        assert "outcome:" in git(store.root, "log", "-1", "--format=%s")
    else:
        assert git(store.root, "rev-parse", "HEAD") != head  # the ledger lines landed


def test_a_memory_file_replaced_by_a_fifo_is_refused_by_the_write_path(store: Store) -> None:
    store.add("x", type="fact", description="d")
    path = store.root / "fact" / "x.md"
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(UnsafePath, match="not a regular file"):
        store.add("x", type="fact", description="d")


def test_staged_work_elsewhere_stays_staged_and_out_of_memstores_commit(store: Store) -> None:
    readme = store.root / "README.txt"
    readme.write_text("draft readme\n", encoding="utf-8")
    git(store.root, "add", "README.txt")
    store.add("x", type="fact", description="d")
    assert git(store.root, "show", "--name-only", "--format=", "HEAD").split() == ["fact/x.md"]
    assert git(store.root, "status", "--porcelain").splitlines() == ["A  README.txt"]


def test_a_commit_landing_between_build_and_swap_is_kept_and_built_upon(
    store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A person's `git commit` that took git's index lock (and let it go) before memstore took
    # it, moving HEAD while memstore builds its commit: git writes such a commit from the
    # index it read, so it is made here from a copy of the index.
    (store.root / "notes.txt").write_text("by hand\n", encoding="utf-8")
    git(store.root, "add", "notes.txt")
    theirs = tmp_path / "their-index"
    theirs.write_bytes((store.root / ".git" / "index").read_bytes())
    real = refs._swap  # pyright: ignore[reportPrivateUsage]
    raced: list[str] = []

    def swap(
        repo: repository.Repo, new: str, old: str, subject: str, prepared: Prepared = None
    ) -> tuple[int, str]:
        if not raced:
            env = {**os.environ, **GIT_ENV, "GIT_INDEX_FILE": str(theirs)}
            subprocess.run(
                ["git", "commit", "-qm", "a human commit"], cwd=store.root, env=env, check=True
            )
            raced.append(git(store.root, "rev-parse", "HEAD"))
        return real(repo, new, old, subject, prepared)

    monkeypatch.setattr(refs, "_swap", swap)
    store.add("x", type="fact", description="d")
    assert git(store.root, "rev-parse", "HEAD~1") == raced[0]
    assert git(store.root, "log", "-2", "--format=%s").splitlines() == [
        "memory: add fact/x — d",
        "a human commit",
    ]
    assert git(store.root, "show", "HEAD:notes.txt") == "by hand\n"
    assert git(store.root, "status", "--porcelain") == ""
    git(store.root, "fsck", "--strict")


def test_reads_fork_no_git_process(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store.add("x", type="fact", description="widgets are blue")
    ledger_io.record(store, "publish", "pkg@1", evidence="https://x.io/1")
    fresh = Store(store.root, agent="bob")
    search(fresh, Query("widgets"))  # the first search builds the index
    ledger_io.check(fresh, "publish", "pkg@1")
    forks: list[object] = []
    real = subprocess.Popen.__init__

    def spy(self: subprocess.Popen[bytes], *args: object, **kwargs: object) -> None:
        forks.append(args[0] if args else kwargs.get("args"))
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    assert [h.name for h in search(fresh, Query("widgets"))] == ["x"]
    assert fresh.get("x").description == "widgets are blue"
    assert ledger_io.check(fresh, "publish", "pkg@1").state.value == "EXECUTED"
    assert forks == []


@pytest.mark.parametrize("index_version", ["2", "3", "4"])
def test_a_staged_change_is_never_written_over(store: Store, index_version: str) -> None:
    store.add("x", type="fact", description="d")
    git(store.root, "update-index", "--index-version", index_version)
    path = store.root / "fact" / "x.md"
    committed = path.read_text(encoding="utf-8")
    path.write_text(committed.replace("description: d", "description: staged"), "utf-8")
    git(store.root, "add", "fact/x.md")
    path.write_text(committed, encoding="utf-8")  # the working file is back to HEAD's
    with pytest.raises(Conflict, match="not committed"):
        store.edit("x", body="new body")
    assert "description: staged" in git(store.root, "show", ":fact/x.md")
    assert path.read_text(encoding="utf-8") == committed
    git(store.root, "reset", "-q", "--", "fact/x.md")
    store.edit("x", body="new body")  # once the staged change is gone, all is well
    assert git(store.root, "status", "--porcelain") == ""


class HandSaving:
    """The store as the write path sees it, with a person saving `path` by hand at one moment
    of the write: `when="journal"` as the journal is written (after the file was read and
    compared with HEAD, before its rename), `when="renamed"` once the new file is in place."""

    def __init__(self, store: Store, path: Path, when: str, hand: str) -> None:
        self.store, self.path, self.when, self.hand = store, path, when, hand
        self.root, self.lock_timeout, self.holder = store.root, store.lock_timeout, store.holder
        self.signer, self.written = store.signer, store.written
        self.saved = False
        self.old = path.read_text(encoding="utf-8") if path.exists() else ""

    def _save(self, now: str) -> None:
        if self.when == now and not self.saved:
            self.saved = True
            tmp = self.path.with_name(self.path.name + "~")  # as an editor saves
            tmp.write_text(self.hand, encoding="utf-8")
            os.replace(tmp, self.path)

    @property
    def cache(self) -> Path:
        self._save("journal")
        return self.store.cache

    @property
    def repo(self) -> repository.Repo:
        if self.path.exists() and self.path.read_text(encoding="utf-8") != self.old:
            self._save("renamed")
        return self.store.repo


def test_a_hand_save_between_the_read_and_the_rename_makes_the_write_a_conflict(
    store: Store,
) -> None:
    store.add("shared", type="fact", description="Edited by hand and by an agent")
    path = store.root / "fact" / "shared.md"
    hand = path.read_text(encoding="utf-8") + "A line saved by hand.\n"
    site = HandSaving(store, path, "journal", hand)
    head = git(store.root, "rev-parse", "HEAD")
    with transaction.locked(store), pytest.raises(Conflict, match="saved by someone else"):
        transaction.commit(site, [transaction.Write(path, site.old + "Agent.\n")], "m", "bob")
    assert site.saved
    assert path.read_text(encoding="utf-8") == hand
    assert git(store.root, "rev-parse", "HEAD") == head
    assert not list(path.parent.glob(".*.tmp")) and not (store.cache / "pending.json").exists()


def test_a_file_created_by_hand_during_an_add_is_never_replaced(store: Store) -> None:
    store.add("other", type="fact", description="Makes the folder")
    path = store.root / "fact" / "new-one.md"
    site = HandSaving(store, path, "journal", "Written by hand.\n")
    with transaction.locked(store), pytest.raises(Conflict, match="saved by someone else"):
        transaction.commit(site, [transaction.Write(path, "agent\n")], "m", "bob")
    assert path.read_text(encoding="utf-8") == "Written by hand.\n"


def test_the_commit_holds_what_memstore_wrote_even_if_a_hand_save_follows_the_rename(
    store: Store,
) -> None:
    store.add("shared", type="fact", description="Edited by hand and by an agent")
    path = store.root / "fact" / "shared.md"
    hand = path.read_text(encoding="utf-8") + "A line saved by hand.\n"
    site = HandSaving(store, path, "renamed", hand)
    agent = site.old + "Agent.\n"
    with transaction.locked(store):
        transaction.commit(site, [transaction.Write(path, agent)], "memory: edit", "bob")
    assert site.saved
    assert git(store.root, "show", "HEAD:fact/shared.md") == agent  # the agent's write, whole
    assert path.read_text(encoding="utf-8") == hand  # the person's save, uncommitted
    assert git(store.root, "log", "-1", "--format=%an") == "bob\n"


def test_the_last_step_of_a_write_swaps_the_files_in_one_step(tmp_path: Path) -> None:
    new, old = tmp_path / "new", tmp_path / "old"
    new.write_text("new", encoding="utf-8")
    old.write_text("saved by hand", encoding="utf-8")
    if not files._exchange(new, old):  # pyright: ignore[reportPrivateUsage]
        pytest.skip("this system cannot swap two files in one step; a check and a rename it is")
    assert (new.read_text(encoding="utf-8"), old.read_text(encoding="utf-8")) == (
        "saved by hand",
        "new",
    )
    with pytest.raises(Conflict, match="saved by someone else"):
        files._exchange(new, tmp_path / "deleted")  # pyright: ignore[reportPrivateUsage]


# -- git's index, rewritten in-process -------------------------------------------------------


def staged_entries(root: Path) -> list[str]:
    return git(root, "ls-files", "-s", "--", ".").splitlines()


def test_writes_keep_git_index_in_step_without_forking_git(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    (store.root / "notes.txt").write_text("a person's work\n", encoding="utf-8")
    git(store.root, "add", "-N", "notes.txt")  # intent to add: an index of version 3
    started = processes_started(monkeypatch)
    store.add("first", type="fact", description="one")
    store.add("second", type="fact", description="two")
    store.edit("first", body="changed")
    store.forget("second", "a duplicate")
    assert not [c for c in started if "update-index" in str(c)]
    entries = staged_entries(store.root)
    blob = git(store.root, "hash-object", "fact/first.md").strip()
    assert f"100644 {blob} 0\tfact/first.md" in entries
    assert not [e for e in entries if "second" in e]
    assert git(store.root, "status", "--porcelain") == " A notes.txt\n"  # still intended
    git(store.root, "fsck", "--strict")
    git(store.root, "write-tree")  # git reads the index it was given


def test_an_index_git_keeps_in_a_form_memstore_does_not_rewrite_goes_through_git(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(store.root, "update-index", "--index-version", "4")
    started = processes_started(monkeypatch)
    store.add("first", type="fact", description="one")
    assert [c for c in started if "update-index" in str(c)]
    assert git(store.root, "status", "--porcelain") == ""


def test_a_writer_killed_holding_git_index_lock_leaves_a_lock_the_next_write_removes(
    store: Store,
) -> None:
    # The kill lands while the writer holds index.lock, its journal written, its commit not.
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from memstore.git import indexfile\n"
        "from memstore.storage.store import Store\n"
        "indexfile._indexed = lambda *a: os.kill(os.getpid(), signal.SIGKILL)\n"
        "Store(Path(sys.argv[1]), agent='bob').add('cut', type='fact', description='cut')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(store.root)], capture_output=True, timeout=60
    )
    assert done.returncode == -9, done.stderr
    lock = store.root / ".git" / "index.lock"
    assert lock.exists()
    store.add("next", type="fact", description="after the kill")
    assert not lock.exists()
    assert not (store.root / "fact" / "cut.md").exists()  # never committed: undone
    assert not list((store.root / ".git").glob(f"{indexfile.INDEX_MARK}.*"))
    assert git(store.root, "status", "--porcelain") == ""


def test_a_git_index_lock_is_removed_only_when_it_is_a_dead_writers_own(store: Store) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    lock = store.root / ".git" / "index.lock"
    lock.write_bytes(b"a git at work")
    other = store.root / ".git" / f"{indexfile.INDEX_MARK}.{dead}.1.tmp"
    other.write_bytes(b"a dead writer's mark, another file")
    live = store.root / ".git" / f"{indexfile.INDEX_MARK}.{os.getpid()}.1.tmp"
    os.link(lock, live)  # this process is alive: its lock is not left over
    indexfile.release_dead_index_lock(store.repo)
    assert lock.exists() and live.exists() and not other.exists()
    live.unlink()
    os.link(lock, other)  # the same file as a dead pid's mark: that writer's, left by a kill
    indexfile.release_dead_index_lock(store.repo)
    assert not lock.exists() and not other.exists()


def test_a_change_git_could_take_for_clean_by_its_stat_data_is_still_seen_after_a_write(
    store: Store,
) -> None:
    # "Racily clean": a file changed within the tick its index entry's stat data was taken
    # (same size, same mtime; ctime not trusted here, as on some file systems). An index
    # rewritten later would vouch for that stat data unless the entry is smudged.
    git(store.root, "config", "core.trustctime", "false")
    notes = store.root / "notes.txt"
    notes.write_text("first\n", encoding="utf-8")
    git(store.root, "add", "notes.txt")
    git(store.root, "commit", "-qm", "notes")
    stamp = notes.stat().st_mtime_ns
    os.utime(store.root / ".git" / "index", ns=(stamp, stamp))  # the entry is racy now
    with notes.open("r+", encoding="utf-8") as f:
        f.write("other\n")  # same size, same inode
    os.utime(notes, ns=(stamp, stamp))
    store.add("later", type="fact", description="a write that rewrites git's index")
    assert git(store.root, "status", "--porcelain") == " M notes.txt\n"
