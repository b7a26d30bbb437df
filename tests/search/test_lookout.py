"""A new process catches its search index up from the index's kept look and what git says
changed since, not from a stat of every file; whatever changed, it ends where a look at every
file ends."""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path

import pytest
from conftest import git

from memstore.search import lookout, manifest
from memstore.search import upkeep as search
from memstore.storage import files, worktree
from memstore.storage.store import Store
from tests.search.test_index import names, write_memory


@pytest.fixture(autouse=True)
def _every_store_large(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lookout, "LARGE", 0)


Scans = list[object]


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> Scans:
    """The folders each stamp of files was taken for, from now on (None: every folder)."""
    seen: Scans = []
    real = files.stamps

    def counted(
        root: Path, folders: object, only: object = None
    ) -> dict[str, tuple[int, int, int]]:
        seen.append(None if only is None else sorted(only))  # pyright: ignore[reportArgumentType]
        return real(root, folders, only)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(search, "stamps", counted)
    return seen


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A", ".")
    git(root, "commit", "-q", "--allow-empty", "-m", message)


def held(store: Store) -> dict[str, str]:
    """What the index holds: each memory's content digest, by path."""
    found = search.upkeep(store).index.files()
    assert found is not None
    return {p: d for p, d in found[1].items()}


def on_disk(store: Store) -> dict[str, str]:
    return {
        e.rel: files.version_of(Path(e.path).read_bytes()) for e in files.memory_files(store.root)
    }


def caught_up(root: Path) -> Store:
    """A new process's store, its index caught up."""
    fresh = Store(root)
    search.catch_up(fresh)
    return fresh


@pytest.fixture
def looked(store: Store) -> Store:
    """A store of a few committed memories whose index keeps a look."""
    for i, word in enumerate(["otter", "puffin", "quokka", "raven", "stoat", "tapir"]):
        write_memory(store, f"note-{i}", f"The {word} widget is blue")
    commit_all(store.root, "notes")
    aged(store.root)
    caught_up(store.root)  # builds the index: it was not large yet
    assert lookout.read(store.cache / "index") is None
    caught_up(store.root)
    assert lookout.read(store.cache / "index") is not None
    return store


def aged(root: Path) -> None:
    """Date the memory files and their folders a minute back, as a store's files are once
    they have been there a while (a time within a clock tick of a look cannot vouch)."""
    then = time.time_ns() - 60 * 1_000_000_000
    for path in [*root.glob("*/*.md"), *(p for p in root.iterdir() if p.is_dir())]:
        os.utime(path, ns=(then, then), follow_symlinks=False)
    git(root, "status", "--porcelain")  # git's index takes the files' new times


def test_a_new_process_with_nothing_changed_looks_at_no_file(looked: Store, scans: Scans) -> None:
    fresh = caught_up(looked.root)
    assert scans == []
    assert held(fresh) == on_disk(fresh)
    assert names(fresh, "raven") == ["note-3"]


def test_another_processs_write_is_checked_by_its_entry_not_by_parsing_the_manifest(
    looked: Store, scans: Scans, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = Store(looked.root, agent="bob")
    writer.add("pelican-note", type="fact", description="The pelican widget is grey")
    names(writer, "pelican")  # indexed by the process that wrote it
    parsed: list[Path] = []
    whole = manifest._whole  # pyright: ignore[reportPrivateUsage]

    def counted(path: Path, base: object) -> object:
        parsed.append(path)
        return whole(path, base)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(manifest, "_whole", counted)
    fresh = caught_up(looked.root)
    assert scans == [] and parsed == []
    assert names(fresh, "pelican") == ["pelican-note"]
    assert held(fresh) == on_disk(fresh)


def test_an_edit_in_place_with_no_commit_is_found_by_git_not_by_a_stat_of_every_file(
    looked: Store, scans: Scans
) -> None:
    path = looked.root / "fact" / "note-2.md"
    path.write_text(path.read_text().replace("blue", "green tangerine"), encoding="utf-8")
    fresh = caught_up(looked.root)
    assert None not in scans  # no folder was listed whole: its time did not move
    assert names(fresh, "tangerine") == ["note-2"]
    assert held(fresh) == on_disk(fresh)


def test_a_persons_commit_a_new_file_and_a_deletion_are_found(looked: Store) -> None:
    path = looked.root / "fact" / "note-1.md"
    path.write_text(path.read_text().replace("blue", "committed saffron"), encoding="utf-8")
    commit_all(looked.root, "a person's edit")
    write_memory(looked, "by-hand", "A hand made walrus note", type="decision")
    (looked.root / "fact" / "note-4.md").unlink()
    fresh = caught_up(looked.root)
    assert names(fresh, "saffron") == ["note-1"]
    assert names(fresh, "walrus") == ["by-hand"]
    assert "fact/note-4.md" not in held(fresh)
    assert held(fresh) == on_disk(fresh)


def test_an_edit_a_watcher_indexed_then_undone_in_place_is_not_left_in_the_index(
    looked: Store,
) -> None:
    # A server's watcher indexed an edit; the edit was then undone in place (no folder time
    # moves) and `git status` refreshed git's index, so git lists nothing: only the index's
    # log says what was indexed since the look.
    other = caught_up(looked.root)  # a server, caught up before the edit
    path = looked.root / "fact" / "note-5.md"
    before = path.read_bytes()
    path.write_bytes(before.replace(b"blue", b"fleeting ochre"))
    search.upkeep(other).changed(other, ["fact/note-5.md"])  # as its watcher does
    assert names(other, "ochre") == ["note-5"]
    path.write_bytes(before)
    git(looked.root, "status", "--porcelain")
    assert git(looked.root, "diff-files", "--name-only") == ""
    fresh = caught_up(looked.root)
    assert names(fresh, "ochre") == []
    assert held(fresh) == on_disk(fresh)


def test_a_second_edit_within_the_same_clock_tick_is_found_by_its_content(
    looked: Store,
) -> None:
    other = caught_up(looked.root)  # a server, caught up before the edits
    path = looked.root / "fact" / "note-2.md"
    path.write_bytes(path.read_bytes().replace(b"blue", b"lilac"))
    search.upkeep(other).changed(other, ["fact/note-2.md"])  # indexed as it was just made
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"lilac", b"khaki"))  # same size, in place
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # within the same tick: same stamp
    fresh = caught_up(looked.root)
    assert names(fresh, "khaki") == ["note-2"]
    assert held(fresh) == on_disk(fresh)


def test_an_edit_reverted_by_git_checkout_is_not_left_in_the_index(looked: Store) -> None:
    path = looked.root / "fact" / "note-4.md"
    path.write_text(path.read_text().replace("blue", "passing umber"), encoding="utf-8")
    assert names(Store(looked.root), "umber") == ["note-4"]  # a search elsewhere indexed it
    git(looked.root, "checkout", "--", "fact/note-4.md")
    git(looked.root, "status", "--porcelain")
    fresh = caught_up(looked.root)
    assert names(fresh, "umber") == []
    assert held(fresh) == on_disk(fresh)


def edit_then_undo(path: Path) -> tuple[bytes, Path]:
    before = path.read_bytes()
    path.write_bytes(before.replace(b"blue", b"momentary sepia"))
    return before, path


@pytest.mark.parametrize("catch_up", ["every file", "since the look"])
def test_an_edit_while_a_catch_up_runs_then_undone_is_not_left_in_the_index(
    looked: Store, monkeypatch: pytest.MonkeyPatch, catch_up: str
) -> None:
    """An edit after git was asked what is loose, indexed by the same catch-up, then undone
    in place: the look counts it loose by its time, as git no longer lists it."""
    root = looked.root
    target = root / "fact" / "note-1.md"
    if catch_up == "every file":
        (looked.cache / "index" / lookout.FILE).unlink()
        asked = lookout.begin
    else:  # the file is one the look says to look at: a person's commit since
        target.write_text(target.read_text().replace("blue", "blue too"), encoding="utf-8")
        commit_all(root, "a person's edit")
        asked = lookout.since
    undo: list[bytes] = []

    def then_edited(*args: object, **kw: object) -> object:
        found = asked(*args, **kw)  # pyright: ignore[reportArgumentType]
        undo.append(edit_then_undo(target)[0])
        return found

    monkeypatch.setattr(lookout, asked.__name__, then_edited)
    assert names(Store(root), "sepia") == ["note-1"]
    monkeypatch.undo()
    monkeypatch.setattr(lookout, "LARGE", 0)
    target.write_bytes(undo[0])
    git(root, "status", "--porcelain")
    assert git(root, "diff-files", "--name-only") == ""
    fresh = caught_up(root)
    assert names(fresh, "sepia") == []
    assert held(fresh) == on_disk(fresh)


def test_a_file_never_committed_stays_watched_after_the_look(looked: Store) -> None:
    path = write_memory(looked, "scratch", "Untracked scratch about herons")
    then = time.time_ns() - 60 * 1_000_000_000
    os.utime(path, ns=(then, then))  # copied in with its times kept (`cp -p`)
    caught_up(looked.root)  # a look that holds it as loose
    kept = lookout.read(looked.cache / "index")
    assert kept is not None and "fact/scratch.md" in kept.look.loose
    # Edited in place: no folder time moves and git does not track it.
    path.write_text(path.read_text().replace("herons", "egrets"), encoding="utf-8")
    fresh = caught_up(looked.root)
    assert names(fresh, "egrets") == ["scratch"]
    assert held(fresh) == on_disk(fresh)


def test_a_history_rewritten_under_the_look_is_caught_up_with(looked: Store) -> None:
    path = looked.root / "fact" / "note-0.md"
    path.write_text(path.read_text().replace("blue", "amended violet"), encoding="utf-8")
    commit_all(looked.root, "to be undone")
    caught_up(looked.root)
    git(looked.root, "reset", "-q", "--hard", "HEAD~1")
    fresh = caught_up(looked.root)
    assert names(fresh, "violet") == []
    assert held(fresh) == on_disk(fresh)


def test_a_manifest_rewritten_since_the_look_sends_it_to_every_file(
    looked: Store, scans: Scans
) -> None:
    idx = search.upkeep(Store(looked.root)).index
    found = idx.files()
    assert found is not None
    assert lookout.manifest.logged_since(idx.manifest_path, lookout.read(idx.dir).state) is not None  # pyright: ignore[reportOptionalMemberAccess]
    shutil.copy(idx.manifest_path, idx.manifest_path.with_suffix(".bak"))
    shutil.move(idx.manifest_path.with_suffix(".bak"), idx.manifest_path)  # a new file
    fresh = caught_up(looked.root)
    assert scans == [None]
    assert held(fresh) == on_disk(fresh)


def test_a_damaged_look_is_ignored(looked: Store, scans: Scans) -> None:
    (looked.cache / "index" / lookout.FILE).write_text("{not json", encoding="utf-8")
    fresh = caught_up(looked.root)
    assert scans == [None]
    assert held(fresh) == on_disk(fresh)
    assert lookout.read(looked.cache / "index") is not None  # kept again


def test_a_small_store_keeps_no_look(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lookout, "LARGE", 1 << 30)
    write_memory(store, "one", "A small store")
    commit_all(store.root, "one")
    caught_up(store.root)
    assert lookout.read(store.cache / "index") is None


def test_reindex_keeps_a_look(looked: Store) -> None:
    (looked.cache / "index" / lookout.FILE).unlink()
    search.reindex(Store(looked.root))
    kept = lookout.read(looked.cache / "index")
    assert kept is not None
    assert kept.state[0] == manifest.load(looked.cache / "index" / manifest.FILE)[1][0]  # pyright: ignore[reportOptionalSubscript]


@pytest.mark.parametrize("tick", [None, 0.06])
def test_any_mix_of_changes_ends_where_a_look_at_every_file_ends(
    store: Store, monkeypatch: pytest.MonkeyPatch, tick: float | None
) -> None:
    """Random hand edits, commits, checkouts, renames, new and deleted files, and searches in
    other processes between them: after each step a new process's catch-up holds exactly
    what is on disk. With a `tick`, the clock is trusted to 50 ms and each step waits out
    the tick, so the looks vouch for their folders' times and git's answers carry them."""
    if tick is not None:
        monkeypatch.setattr(worktree, "RACY_NS", 50_000_000)
    rng = random.Random(5)
    root = store.root
    for i in range(8):
        write_memory(store, f"m-{i}", f"Memory {i} about lanterns")
    commit_all(root, "start")
    caught_up(root)
    words = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor"]

    def memory_paths() -> list[Path]:
        return sorted(p for p in root.glob("*/*.md"))

    for step in range(40):
        action = rng.choice(["edit", "commit", "checkout", "new", "delete", "rename", "search"])
        paths = memory_paths()
        if action == "edit" and paths:
            path = rng.choice(paths)
            path.write_text(path.read_text() + f"\n{rng.choice(words)}\n", encoding="utf-8")
        elif action == "commit":
            commit_all(root, f"step {step}")
        elif action == "checkout":
            git(root, "checkout", "--", ".")
            git(root, "status", "--porcelain")
        elif action == "new":
            write_memory(store, f"n-{step}", f"New {rng.choice(words)} memory")
        elif action == "delete" and paths:
            rng.choice(paths).unlink()
        elif action == "rename" and paths:
            path = rng.choice(paths)
            path.rename(path.with_name(f"r-{step}.md"))
        elif action == "search":
            names(Store(root), rng.choice(words))
        if tick is not None:
            time.sleep(tick)
        fresh = caught_up(root)
        assert held(fresh) == on_disk(fresh), f"step {step}: {action}"
