"""git's index as memstore rewrites it: only the changed entries' run of the file is spliced,
the rest written as it was, and what git reads back is what `git update-index` would make."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from memstore.git import indexfile, objects
from memstore.git.repository import Repo, find_repo
from tests.conftest import git


def project(tmp_path: Path, files: int) -> Repo:
    """A repository of `files` committed files in three folders, through git itself."""
    top = tmp_path / "project"
    for i in range(files):
        path = top / ("ab"[i % 2] if i % 3 else "c") / f"f{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"file {i}\n", encoding="utf-8")
    git(top, "init", "-q")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "files")
    repo = find_repo(top)
    assert repo is not None
    return repo


def staged_entries(repo: Repo) -> dict[str, str]:
    out = git(repo.top, "ls-files", "--stage")  # git checks the file's checksum first
    found: dict[str, str] = {}
    for line in out.splitlines():
        meta, _, path = line.partition("\t")
        found[path] = meta.split()[1]
    return found


def test_many_writes_to_a_large_index_leave_what_git_update_index_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexfile, "_BLOCK", 8)  # runs of 8 entries: many, split often
    repo = project(tmp_path, 300)
    expected = staged_entries(repo)
    rng = random.Random(5)
    for step in range(60):
        blobs: dict[str, str | None] = {}
        for _ in range(rng.choice((1, 1, 2, 5))):
            choice = rng.random()
            if choice < 0.3 and expected:
                blobs[rng.choice(sorted(expected))] = None  # removed
            elif choice < 0.6 and expected:
                blobs[rng.choice(sorted(expected))] = objects.blob_sha(b"%d" % step)
            else:  # new: many in one folder, next to each other, to grow one run past its size
                blobs[f"a/f{rng.randrange(10_000):05d}x{step}.md"] = objects.blob_sha(b"new")
        indexfile.sync_index(repo, blobs, time.monotonic() + 10)
        for path, sha in blobs.items():
            if sha is None:
                expected.pop(path, None)
            else:
                expected[path] = sha
        assert staged_entries(repo) == expected, f"step {step}"
    for i in range(40):  # one run grows to several times its size
        indexfile.sync_index(repo, {f"b/g{i:05d}.md": objects.blob_sha(b"g")}, time.monotonic() + 5)
        expected[f"b/g{i:05d}.md"] = objects.blob_sha(b"g")
    assert staged_entries(repo) == expected


def test_an_index_git_rewrote_to_the_same_size_is_read_again_not_trusted(tmp_path: Path) -> None:
    repo = project(tmp_path, 60)
    indexfile.sync_index(repo, {"a/new.md": objects.blob_sha(b"one")}, time.monotonic() + 10)
    before = (repo.git_dir / "index").stat().st_size
    # A person stages another version of a file: same entry sizes, so the same file size.
    (repo.top / "person.txt").write_text("a person's version\n", encoding="utf-8")
    other = git(repo.top, "hash-object", "-w", "person.txt").strip()
    git(repo.top, "update-index", "--cacheinfo", f"100644,{other},b/f00001.md")
    assert (repo.git_dir / "index").stat().st_size == before
    indexfile.sync_index(repo, {"a/next.md": objects.blob_sha(b"two")}, time.monotonic() + 10)
    entries = staged_entries(repo)
    assert entries["b/f00001.md"] == other  # the person's staged change stays
    assert entries["a/next.md"] == objects.blob_sha(b"two")
    assert entries["a/new.md"] == objects.blob_sha(b"one")
