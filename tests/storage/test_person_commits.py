"""A person committing with plain git while an agent writes: memstore holds git's index lock
from before it writes a file until HEAD moved and the index is in step, as `git commit`
does, so the person's git is refused (and retried) and never takes the agent's change into
the person's commit."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memstore.git import refs, repository
from memstore.storage import transaction
from memstore.storage.store import Store
from tests.conftest import GIT_ENV, git

Prepared = Callable[[], None] | None

PERSON = {
    "allow-empty": [["commit", "-q", "--allow-empty", "-m", "person"]],
    "add-all": [["add", "-A"], ["commit", "-q", "-m", "person"]],
    "commit-all": [["commit", "-q", "-a", "-m", "person"]],
}


def person(root: Path, style: str) -> subprocess.CompletedProcess[str]:
    """The person's commit in `style`, once: git's answer (the first step that failed)."""
    if style != "allow-empty":
        with (root / "notes.txt").open("a", encoding="utf-8") as f:
            f.write("a line by hand\n")
    done = subprocess.CompletedProcess[str]([], 0, "", "")
    for step in PERSON[style]:
        done = subprocess.run(
            ["git", *step],
            cwd=root,
            env={**os.environ, **GIT_ENV},
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            break
    return done


@pytest.fixture
def project(store: Store) -> Store:
    """The store with a tracked file of the person's and two memories: one to edit."""
    (store.root / "notes.txt").write_text("notes\n", encoding="utf-8")
    git(store.root, "add", "notes.txt")
    git(store.root, "commit", "-qm", "notes")
    store.add("kept", type="fact", description="edited while the person commits")
    return store


def during(monkeypatch: pytest.MonkeyPatch, moment: str, act: Callable[[], None]) -> None:
    """Run `act` once, at `moment` of the next write: `written` (the memory file in place,
    nothing committed yet) or `staged` (the index entries written, HEAD not moved yet)."""
    done: list[bool] = []

    def once() -> None:
        if not done:
            done.append(True)
            act()

    if moment == "written":
        real_write = transaction.atomic_write

        def write(*args: Any, **kwargs: Any) -> Path | None:
            kept = real_write(*args, **kwargs)
            once()
            return kept

        monkeypatch.setattr(transaction, "atomic_write", write)
    else:
        real_swap = refs._swap  # pyright: ignore[reportPrivateUsage]

        def swap(
            repo: repository.Repo, new: str, old: str, subject: str, prepared: Prepared = None
        ) -> tuple[int, str]:
            once()
            return real_swap(repo, new, old, subject, prepared)

        monkeypatch.setattr(refs, "_swap", swap)


@pytest.mark.parametrize("moment", ["written", "staged"])
@pytest.mark.parametrize("style", list(PERSON))
@pytest.mark.parametrize("write", ["add", "edit"])
def test_a_persons_commit_during_a_write_is_refused_by_git_and_comes_after_it(
    project: Store, monkeypatch: pytest.MonkeyPatch, style: str, moment: str, write: str
) -> None:
    answers: list[subprocess.CompletedProcess[str]] = []
    during(monkeypatch, moment, lambda: answers.append(person(project.root, style)))
    if write == "add":
        project.add("new-one", type="fact", description="added while the person commits")
        rel = "fact/new-one.md"
    else:
        project.edit("kept", body="changed while the person commits")
        rel = "fact/kept.md"
    (answer,) = answers
    assert answer.returncode != 0 and "index.lock" in answer.stderr, answer
    # The agent's change is the agent's commit, whole; the person's has not happened yet.
    assert git(project.root, "log", "-1", "--format=%an %s").startswith(f"alice memory: {write}")
    assert git(project.root, "show", "--name-only", "--format=", "HEAD").split() == [rel]
    # The person retries, as git tells them to: the commit comes after the agent's.
    retried = person(project.root, style)
    assert retried.returncode == 0, retried
    assert git(project.root, "log", "-1", "--format=%an").strip() == "human"
    touched = git(project.root, "show", "--name-only", "--format=", "HEAD").split()
    assert rel not in touched
    assert git(project.root, "log", "--format=%an", "--", rel).split()[0] == "alice"
    assert git(project.root, "status", "--porcelain") == ""
    assert not list((project.root / ".git").glob("*.lock"))
    git(project.root, "fsck", "--strict")


def test_a_write_waits_while_a_persons_git_holds_the_index_and_then_commits_alone(
    project: Store,
) -> None:
    # `git add -A` holds index.lock while it looks at the working tree: a write in that time
    # waits, writing nothing, so git never sees the agent's file half-way.
    lock = project.root / ".git" / "index.lock"
    lock.write_text("", encoding="utf-8")  # the person's git, at work
    seen: list[bool] = []

    def add() -> None:
        project.add("after", type="fact", description="waited for the person's git")

    writer = threading.Thread(target=add)
    writer.start()
    writer.join(0.5)
    seen.append((project.root / "fact" / "after.md").exists())
    lock.unlink()  # the person's git is done
    writer.join(30)
    assert seen == [False]  # nothing written while the person's git held the index
    assert git(project.root, "log", "-1", "--format=%an %s").startswith("alice memory: add")
    assert git(project.root, "status", "--porcelain") == ""


def _stale_index_written_back(store: Store, change: Callable[[], object]) -> None:
    """Make `change`, then put back the index as it was before it: what a person's
    `git commit` does when it read the index before memstore's write and took the lock
    after it (git reads first, locks second, and writes its refreshed read back at once)."""
    index = store.repo.git_dir / "index"
    before = index.read_bytes()
    change()
    index.write_bytes(before)


def test_a_stale_index_written_back_by_git_does_not_lose_the_last_write(store: Store) -> None:
    root = store.repo.top
    store.add("first", type="fact", description="The first memory")
    _stale_index_written_back(
        store, lambda: store.add("lost", type="fact", description="Written between")
    )
    store.add("next", type="fact", description="The next write repairs the index")
    assert git(root, "status", "--porcelain") == ""  # the index is HEAD again
    person(root, "allow-empty")
    lost = (store.root / "fact" / "lost.md").relative_to(root).as_posix()
    assert lost in git(root, "ls-tree", "-r", "--name-only", "HEAD").split()  # nothing deleted
    added = git(root, "log", "--diff-filter=A", "--format=%an", "--", lost)
    assert added.split() == ["alice"]


def test_a_removal_undone_by_a_stale_index_is_removed_again(store: Store) -> None:
    root = store.repo.top
    store.add("gone", type="fact", description="To be forgotten")
    _stale_index_written_back(store, lambda: store.forget("gone", "not needed"))
    store.add("next", type="fact", description="The next write repairs the index")
    assert git(root, "status", "--porcelain") == ""
    person(root, "allow-empty")
    gone = (store.root / "fact" / "gone.md").relative_to(root).as_posix()
    assert gone not in git(root, "ls-tree", "-r", "--name-only", "HEAD").split()


def test_a_persons_own_staged_change_to_a_memory_is_left_as_staged(store: Store) -> None:
    root = store.repo.top
    store.add("mine", type="fact", description="A memory the person edits")
    path = store.root / "fact" / "mine.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nA line by hand.\n", encoding="utf-8")
    git(root, "add", str(path))
    store.add("other", type="fact", description="Another write meanwhile")
    assert git(root, "status", "--porcelain", "--", str(path)).startswith("M ")  # still staged


def test_what_memstore_commits_is_not_reported_changed_by_git_diff_index(store: Store) -> None:
    # The catalog asks `git diff-index HEAD` what may have changed: an agent's writes, with no
    # `git status` run since, are not in its answer, and a person's edit is.
    for i in range(3):
        store.add(f"written-{i}", type="fact", description=f"an agent's write {i}")
    listed = git(store.root, "diff-index", "--name-only", "HEAD").split()
    assert not [p for p in listed if p.startswith("fact/")]
    path = store.root / "fact" / "written-1.md"
    path.write_text(path.read_text(encoding="utf-8") + "more\n", encoding="utf-8")
    listed = git(store.root, "diff-index", "--name-only", "HEAD").split()
    assert [p for p in listed if p.startswith("fact/")] == ["fact/written-1.md"]


def test_files_checked_out_in_the_second_of_gits_index_are_not_listed_changed_after_a_write(
    store: Store,
) -> None:
    # A fresh clone's files are checked out within the second its index is written: every
    # entry is racy. A write keeps the stat data of those whose files still hold their blobs,
    # as git does, so `git diff-files` (a stat of each file, no content read) lists none.
    (store.root / "fact").mkdir(exist_ok=True)
    for i in range(20):
        (store.root / "fact" / f"cloned-{i}.md").write_text(f"note {i}\n", encoding="utf-8")
    edited = store.root / "fact" / "cloned-3.md"
    git(store.root, "add", "fact")
    git(store.root, "commit", "-qm", "cloned")
    newest = max(p.stat().st_mtime_ns for p in (store.root / "fact").iterdir())
    index = Path(git(store.root, "rev-parse", "--absolute-git-dir").strip()) / "index"
    os.utime(index, ns=(newest, newest))  # the entries are racy now
    stamp = edited.stat().st_mtime_ns
    edited.write_text("note 9\n", encoding="utf-8")  # the same size, in the same tick
    os.utime(edited, ns=(stamp, stamp))
    store.add("later", type="fact", description="a write that rewrites git's index")
    listed = git(store.root, "diff-files", "--name-only").split()
    assert [p for p in listed if "cloned" in p] == ["fact/cloned-3.md"]
    assert " M fact/cloned-3.md" in git(store.root, "status", "--porcelain").splitlines()


def test_an_edit_of_the_same_size_in_the_same_second_is_still_seen_by_git(
    store: Store,
) -> None:
    # Racily clean: the entry's stat data and the edit share a second; the next write reuses
    # the index this process wrote, which smudges that entry, so git compares the content.
    store.add("racy", type="fact", description="written then edited at once")
    path = store.root / "fact" / "racy.md"
    text = path.read_text(encoding="utf-8")
    before = path.stat()
    index = Path(git(store.root, "rev-parse", "--absolute-git-dir").strip()) / "index"
    os.utime(index, ns=(before.st_atime_ns, before.st_mtime_ns))  # written in that second
    path.write_text(text.replace("at once", "at 0nce"), encoding="utf-8")  # and edited in it
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    time.sleep(1.05 - time.time() % 1)  # the next index is written a second later
    store.add("later", type="fact", description="a later write by the same process")
    assert "racy.md" in git(store.root, "status", "--porcelain")
    assert "racy.md" in git(store.root, "diff-index", "--name-only", "HEAD")
