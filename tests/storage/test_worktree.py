"""What `worktree` says differs from HEAD is what `git diff-index HEAD` says, asked more cheaply."""

from __future__ import annotations

from conftest import git

from memstore.storage import worktree
from memstore.storage.store import Store
from tests.search.test_index import write_memory


def test_dirty_lists_what_diff_index_head_lists(store: Store) -> None:
    root = store.root
    for name in ("edited", "staged", "deleted", "staged-back", "kept", "unstaged-rm"):
        write_memory(store, name, f"The {name} one")
    git(root, "add", "-A", ".")
    git(root, "commit", "-q", "-m", "six")
    (root / "fact" / "edited.md").write_text("changed in place\n", encoding="utf-8")
    (root / "fact" / "staged.md").write_text("staged\n", encoding="utf-8")
    git(root, "add", "fact/staged.md")
    (root / "fact" / "deleted.md").unlink()
    back = root / "fact" / "staged-back.md"
    original = back.read_bytes()
    back.write_text("staged, then put back in the tree\n", encoding="utf-8")
    git(root, "add", "fact/staged-back.md")
    back.write_bytes(original)
    git(root, "rm", "-q", "--cached", "fact/unstaged-rm.md")
    write_memory(store, "never-added", "Not in git")
    listed = git(root, "diff-index", "--name-only", "HEAD", "--", ".").split()
    expected = {p for p in listed if p.endswith(".md")}
    assert worktree.dirty(store) == expected
    assert expected == {
        "fact/edited.md",
        "fact/staged.md",
        "fact/deleted.md",
        "fact/staged-back.md",
        "fact/unstaged-rm.md",
    }
    assert worktree.untracked(store) == {"fact/unstaged-rm.md", "fact/never-added.md"}
    many = {f"fact/x-{i}.md" for i in range(300)} | {"fact/kept.md"}  # a folder's listing
    assert worktree.tracked(store, many) == {"fact/kept.md"}
    assert worktree.tracked(store, {"fact/kept.md", "fact/never-added.md"}) == {"fact/kept.md"}
