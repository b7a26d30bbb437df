"""The pre-commit hook, run by real `git commit`s: what it checks, where it goes, its removal,
and what it does once memstore is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memstore.storage.store import Store
from memstore.workflow.care import lint
from tests.conftest import GIT_ENV, git


def memstore(store: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(store), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def commit(cwd: Path, author: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`git commit` as `author` would run it, hooks and all."""
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": author, "GIT_COMMITTER_NAME": author}
    return subprocess.run(
        ["git", "commit", "-qm", "hand commit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def nested(tmp_path: Path) -> Store:
    """A store in `memory/` of a repository that holds other work too."""
    git(tmp_path, "init", "-q", "--initial-branch=main", "repo")
    return Store.init(tmp_path / "repo" / "memory", agent="alice")


def confirm_by_hand(store: Store, name: str, confirmer: str) -> tuple[Path, str]:
    """Write a confirmation by `confirmer` into memory `name`; its path and the text before."""
    path = next(store.root.glob(f"*/{name}.md"))
    before = path.read_text(encoding="utf-8")
    text = before.replace("status: draft", "status: confirmed")
    path.write_text(text.replace("tags: []", f"tags: []\nconfirmed_by: {confirmer}"), "utf-8")
    return path, before


def test_the_hook_checks_what_is_staged_not_the_working_file(store: Store) -> None:
    assert memstore(store.root, "install-hook").returncode == 0
    store.add("claim", type="fact", description="A claim")
    path, before = confirm_by_hand(store, "claim", "bob")
    git(store.root, "add", "--", str(path))
    path.write_text(before, encoding="utf-8")  # the working file back as it was; the index not
    head = git(store.root, "rev-parse", "HEAD")
    done = commit(store.root, "alice")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "fact/claim.md: self-approval" in done.stderr
    assert git(store.root, "rev-parse", "HEAD") == head
    assert "status: confirmed" in git(store.root, "show", ":fact/claim.md")


def test_lint_staged_reads_the_index_and_passes_what_the_working_tree_would_fail(
    store: Store,
) -> None:
    store.add("claim", type="fact", description="A claim")
    path, before = confirm_by_hand(store, "claim", "bob")
    git(store.root, "add", "--", str(path))
    path.write_text(before.replace("owner: alice", "owner: ''"), encoding="utf-8")
    as_bob = Store(store.root, agent="bob")
    assert [str(p) for p in lint.lint_store(as_bob, staged=True)] == []
    assert any("owner is empty" in str(p) for p in lint.lint_store(as_bob))
    as_alice = Store(store.root, agent="alice")
    staged = [str(p) for p in lint.lint_store(as_alice, staged=True)]
    assert len(staged) == 1 and staged[0].startswith("fact/claim.md: self-approval:"), staged


def test_the_hook_checks_the_temporary_index_of_commit_a(store: Store) -> None:
    assert memstore(store.root, "install-hook").returncode == 0
    store.add("claim", type="fact", description="A claim")
    confirm_by_hand(store, "claim", "bob")
    assert commit(store.root, "alice", "-a").returncode == 1
    assert commit(store.root, "bob", "-a").returncode == 0


def test_install_hook_honours_core_hooks_path(store: Store) -> None:
    git(store.root, "config", "core.hooksPath", ".githooks")
    done = memstore(store.root, "install-hook")
    assert done.returncode == 0, done.stderr
    hook = store.repo.top / ".githooks" / "pre-commit"
    assert done.stdout == f"installed {hook}\n"
    assert not (store.repo.git_dir / "hooks" / "pre-commit").exists()
    store.add("claim", type="fact", description="A claim")
    confirm_by_hand(store, "claim", "bob")
    git(store.root, "add", "-A", "--", "fact")
    assert "self-approval" in commit(store.root, "alice").stderr


def test_a_hook_installed_from_a_linked_worktree_checks_that_worktree(tmp_path: Path) -> None:
    main = nested(tmp_path)
    git(tmp_path / "repo", "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    side = Store(tmp_path / "side" / "memory", agent="alice")
    done = memstore(side.root, "install-hook")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"installed {tmp_path / 'repo' / '.git' / 'hooks' / 'pre-commit'}\n"
    side.add("side-claim", type="fact", description="A claim on the side branch")
    confirm_by_hand(side, "side-claim", "bob")
    git(side.root, "add", "-A", ".")
    refused = commit(side.root, "alice")
    assert "fact/side-claim.md: self-approval" in refused.stderr
    main.add("main-claim", type="fact", description="A claim on main")
    confirm_by_hand(main, "main-claim", "bob")
    git(main.root, "add", "-A", ".")
    refused = commit(main.root, "alice")
    assert "fact/main-claim.md: self-approval" in refused.stderr


def test_uninstall_hook_finds_the_repository_of_a_store_already_deleted(tmp_path: Path) -> None:
    import shutil

    store = nested(tmp_path)
    hook = store.repo.git_dir / "hooks" / "pre-commit"
    assert memstore(store.root, "install-hook").returncode == 0
    shutil.rmtree(store.root)
    done = memstore(store.root, "uninstall-hook")
    assert (done.returncode, done.stdout) == (0, f"removed {hook}\n")
    assert not hook.exists()


def test_uninstall_hook_outside_any_repository_is_an_error(tmp_path: Path) -> None:
    done = memstore(tmp_path / "memory", "uninstall-hook")
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: {tmp_path} is not in a git repository; there is no hook to remove\n"
    )


def test_uninstall_hook_removes_only_a_hook_memstore_installed(store: Store) -> None:
    hook = store.repo.git_dir / "hooks" / "pre-commit"
    assert memstore(store.root, "install-hook").returncode == 0
    done = memstore(store.root, "uninstall-hook")
    assert (done.returncode, done.stdout) == (0, f"removed {hook}\n")
    assert not hook.exists()
    done = memstore(store.root, "uninstall-hook")
    assert done.returncode == 0 and "nothing to remove" in done.stdout
    hook.write_text("#!/bin/sh\nexec make check\n", encoding="utf-8")
    done = memstore(store.root, "uninstall-hook")
    assert done.returncode == 1
    assert done.stderr == f"Error: {hook} is not a hook memstore installed; leaving it alone\n"
    assert hook.read_text(encoding="utf-8") == "#!/bin/sh\nexec make check\n"
    done = memstore(store.root, "install-hook")
    assert done.returncode == 1 and "not memstore's; pass --force" in done.stderr
    assert hook.read_text(encoding="utf-8") == "#!/bin/sh\nexec make check\n"


def test_install_hook_replaces_its_own_hook_without_force(store: Store) -> None:
    assert memstore(store.root, "install-hook").returncode == 0
    assert memstore(store.root, "install-hook").returncode == 0


def test_a_hook_whose_memstore_is_gone_says_so_and_blocks_only_store_commits(
    tmp_path: Path,
) -> None:
    store = nested(tmp_path)
    assert memstore(store.root, "install-hook").returncode == 0
    hook = store.repo.git_dir / "hooks" / "pre-commit"
    gone = store.repo.top / "old-venv" / "bin" / "python"  # the virtual environment deleted
    text = hook.read_text(encoding="utf-8")
    hook.write_text(text.replace(f"python={sys.executable}", f"python={gone}"), encoding="utf-8")
    (store.repo.top / "notes.txt").write_text("unrelated work\n", encoding="utf-8")
    git(store.repo.top, "add", "notes.txt")
    done = commit(store.repo.top, "alice")
    assert done.returncode == 0, done.stderr
    assert f"{gone} -m memstore is gone" in done.stderr
    assert "goes ahead" in done.stderr and "memstore uninstall-hook" in done.stderr
    store.add("claim", type="fact", description="A claim")
    confirm_by_hand(store, "claim", "bob")
    git(store.root, "add", "-A", ".")
    done = commit(store.repo.top, "bob")
    assert done.returncode == 1
    assert "cannot be checked" in done.stderr and "git commit --no-verify" in done.stderr
    assert memstore(store.root, "uninstall-hook").returncode == 0
    assert commit(store.repo.top, "bob").returncode == 0


def test_the_hook_leaves_commits_that_touch_no_store_file_alone(tmp_path: Path) -> None:
    store = nested(tmp_path)
    assert memstore(store.root, "install-hook").returncode == 0
    (store.root / "fact").mkdir(exist_ok=True)
    (store.root / "fact" / "broken.md").write_text("not a memory\n", encoding="utf-8")
    (store.repo.top / "notes.txt").write_text("unrelated work\n", encoding="utf-8")
    git(store.repo.top, "add", "notes.txt")
    assert commit(store.repo.top, "alice").returncode == 0
