"""A commit's trees are HEAD's with the changed entries spliced in, in git's order; a large
one is written uncompressed. git reads them back as it would its own (`fsck --strict` checks
each tree's order)."""

from __future__ import annotations

import random
import zlib

from memstore.git import objects
from memstore.storage.store import Store
from tests.conftest import git


def listed(store: Store, commit: str) -> dict[str, str]:
    out = git(store.root, "ls-tree", "-r", "--full-tree", commit)
    return {line.partition("\t")[2]: line.split()[2] for line in out.splitlines()}


def test_trees_with_spliced_entries_are_the_trees_git_would_write(store: Store) -> None:
    repo = store.repo
    # Names around git's ordering quirk: the folder `x/a` sorts as if it were `a/`, after
    # `a.md` and before `a0.md`.
    names = ["a-b.md", "a.md", "a0.md", "b.md", *(f"n{i:04d}.md" for i in range(300))]
    rng = random.Random(3)
    expected = listed(store, "HEAD")
    parent = git(store.root, "rev-parse", "HEAD").strip()
    for step in range(80):
        changes: dict[tuple[str, ...], str | None] = {}
        for _ in range(rng.choice((1, 2, 4))):
            name = rng.choice(names)
            path = ("x", name) if rng.random() < 0.7 else ("x", "a", name)
            if rng.random() < 0.3:
                changes[path] = None
            else:
                changes[path] = objects.write_blob(repo, b"%d %s\n" % (step, name.encode()))
        base = objects.commit_tree(repo, parent)
        tree = objects.tree_with(repo, base, changes) or objects.write_object(repo, b"tree", b"")
        body = f"tree {tree}\nparent {parent}\nauthor a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\n"
        parent = objects.write_object(repo, b"commit", f"{body}\nstep {step}\n".encode())
        for path, sha in changes.items():
            rel = "/".join(path)
            if sha is None:
                expected.pop(rel, None)
            else:
                expected[rel] = sha
        assert listed(store, parent) == expected, f"step {step}"
    git(store.root, "update-ref", "refs/heads/spliced", parent)
    git(store.root, "fsck", "--strict", "--no-dangling")


def test_a_large_tree_is_stored_uncompressed_and_read_by_git(store: Store) -> None:
    repo = store.repo
    many = {("big", f"m{i:05d}.md"): objects.write_blob(repo, b"%d\n" % i) for i in range(2000)}
    tree = objects.tree_with(repo, None, many)
    assert tree is not None
    big = git(store.root, "rev-parse", f"{tree}:big").strip()
    raw = (repo.common_dir / "objects" / big[:2] / big[2:]).read_bytes()
    assert len(raw) > objects.STORED_ABOVE  # level 0: as long as the tree itself
    assert zlib.decompress(raw).startswith(b"tree ")
    assert len(git(store.root, "ls-tree", big).splitlines()) == 2000
    git(store.root, "fsck", "--strict", "--no-dangling")
