"""The opt-in git pre-commit hook: its script, and installing and removing it where git looks."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

from memstore.errors import GitError, HookInTheWay
from memstore.git import repository

MARK = "installed by `memstore install-hook`"
"""In every hook memstore writes (this one and earlier ones): only such a hook is replaced
without `--force`, or removed."""

SCRIPT = """#!/bin/sh
# memstore pre-commit hook ({mark}; `memstore uninstall-hook` removes it):
# refuse a commit whose staged store files are invalid, or confirm a memory on behalf of
# someone else. Commits that touch no file of the store are not checked.
python={python}
package={package}
store={store}
if [ ! -x "$python" ] || [ ! -f "$package/__main__.py" ]; then
    gone="memstore pre-commit hook: $python -m memstore is gone (moved, uninstalled, or its \
virtual environment deleted)"
    fix="Install memstore again and run 'memstore --store $store install-hook', or remove this \
hook ('memstore uninstall-hook', or delete $0)"
    if git diff --cached --quiet -- "$store"; then
        echo "$gone. This commit touches no file of the store $store and goes ahead. $fix." >&2
        exit 0
    fi
    echo "$gone, so the staged changes to the store $store cannot be checked and this commit \
is refused. $fix; or commit unchecked once with 'git commit --no-verify'." >&2
    exit 1
fi
git diff --cached --quiet -- "$store" && exit 0
if [ ! -d "$store" ]; then
    echo "memstore pre-commit hook: the store $store is gone from the working tree; not checked" >&2
    exit 0
fi
agent="${{GIT_AUTHOR_NAME:-$(git config user.name)}}"
exec "$python" -m memstore --store "$store" --agent "$agent" lint --staged
"""


def hook_path(repo: repository.Repo) -> Path:
    """Where git runs the pre-commit hook from for this repository: `core.hooksPath` when
    set, else the common `.git/hooks` (shared by every worktree)."""
    return repository.hooks_dir(repo) / "pre-commit"


def script(repo: repository.Repo, store_root: Path, python: str, package: Path) -> str:
    """The hook's text, naming the store relative to the working tree's top folder (git runs
    a hook there), so the one hook serves every worktree of the repository."""
    rel = repository.repo_path(repo, store_root) or "."
    return SCRIPT.format(
        mark=MARK,
        python=shlex.quote(python),
        package=shlex.quote(str(package)),
        store=shlex.quote(rel),
    )


def ours(hook: Path) -> bool:
    """Whether the file at `hook` is a hook memstore installed."""
    try:
        head = hook.read_bytes()[:400]
    except OSError:
        return False
    return MARK.encode("utf-8") in head


def install(
    repo: repository.Repo, store_root: Path, python: str, package: Path, force: bool
) -> Path:
    """Write the hook (replacing one memstore installed; another only with `force`) and return
    its path.

    Raises:
        HookInTheWay: when another pre-commit hook is there and `force` is not given.
    """
    hook = hook_path(repo)
    if (hook.exists() or hook.is_symlink()) and not force and not ours(hook):
        raise HookInTheWay(
            f"{hook} exists and is not memstore's; pass --force to replace it, or call "
            f"'memstore lint --staged' from it"
        )
    hook.parent.mkdir(parents=True, exist_ok=True)
    text = script(repo, store_root, python, package)
    tmp = hook.with_name(f".pre-commit.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    tmp.chmod(0o755)
    os.replace(tmp, hook)
    return hook


def uninstall(repo: repository.Repo) -> Path | None:
    """Remove the hook if memstore installed it; return its path, or None when there is none.

    Raises:
        HookInTheWay: when the pre-commit hook there is not memstore's (it is left alone).
    """
    hook = hook_path(repo)
    if not hook.exists() and not hook.is_symlink():
        return None
    if hook.is_symlink() or not stat.S_ISREG(hook.stat().st_mode) or not ours(hook):
        raise HookInTheWay(f"{hook} is not a hook memstore installed; leaving it alone")
    hook.unlink()
    return hook


def uninstall_from(store_root: Path) -> tuple[Path, bool]:
    """Remove memstore's hook from the repository that holds the store, or held it: the hook's
    path, and whether there was one to remove.

    Raises:
        GitError: when no git repository is around where the store is or was.
        HookInTheWay: when the pre-commit hook there is not memstore's (it is left alone).
    """
    # The store may be gone already: the repository around where it was is enough.
    where = store_root
    while not where.exists() and where != where.parent:
        where = where.parent
    repo = repository.find_repo(where)
    if repo is None:
        raise GitError(f"{where} is not in a git repository; there is no hook to remove")
    hook = uninstall(repo)
    return (hook_path(repo), False) if hook is None else (hook, True)


def state(repo: repository.Repo, store_root: Path) -> tuple[bool, str]:
    """Whether the pre-commit hook checks this store, and a line saying what is there."""
    hook = hook_path(repo)
    if not hook.exists() and not hook.is_symlink():
        return False, "not installed (optional: `memstore install-hook` checks hand edits)"
    if not ours(hook):
        return False, f"{hook} is another tool's hook; it does not run `memstore lint --staged`"
    if not os.access(hook, os.X_OK):
        return False, f"{hook} is memstore's but not executable: git skips it"
    values = dict(_assignments(hook.read_text(encoding="utf-8", errors="replace")))
    python, package = values.get("python", ""), values.get("package", "")
    if not os.access(python, os.X_OK) or not (Path(package) / "__main__.py").is_file():
        return False, f"installed, but the memstore it runs ({python}) is gone: install it again"
    store = repository.repo_path(repo, store_root) or "."
    if values.get("store") != store:
        return False, f"installed for the store {values.get('store')}, not this one ({store})"
    return True, f"installed, checks this store on every commit ({hook})"


def _assignments(text: str) -> list[tuple[str, str]]:
    """The hook's `name=value` lines, with shell quoting removed."""
    found: list[tuple[str, str]] = []
    for line in text.splitlines():
        name, eq, value = line.partition("=")
        if eq and name in ("python", "package", "store"):
            try:
                words = shlex.split(value)
            except ValueError:
                continue
            found.append((name, words[0] if words else ""))
    return found
