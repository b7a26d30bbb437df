"""A git repository and running git in it safely: finding the repository, its paths as git
names them (nothing that starts with `-` reaches git), git's output read plainly, and waiting
out a lock file another git holds."""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memstore.errors import GitError

if TYPE_CHECKING:
    import logging


def _log() -> logging.Logger:
    """This module's logger. `logging` loads with the first warning: a command that logs
    none (a `memstore add`) never pays for importing it."""
    import logging

    return logging.getLogger(__name__)


SEP = "\x1f"
"""Between the fields of a `--format` git fills in: no name, date or subject holds it."""


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Repo:
    """A git repository with a working tree: where it is, and where git keeps its data."""

    top: Path
    """The working tree's top folder."""
    git_dir: Path
    """`.git` (or a worktree's own folder inside the main repository's)."""
    common_dir: Path
    """Where objects and branches live (the main `.git` for a linked worktree)."""


def find_repo(path: Path) -> Repo | None:
    """The git repository whose working tree contains `path`, or None. Runs no git process."""
    here = path.resolve()
    for top in (here, *here.parents):
        dot = top / ".git"
        if dot.is_dir():
            git_dir = dot
        elif dot.is_file():
            try:
                line = dot.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            if not line.startswith("gitdir:"):
                return None
            git_dir = (top / line[len("gitdir:") :].strip()).resolve()
        else:
            continue
        if not (git_dir / "HEAD").is_file():
            return None
        common = git_dir
        if (git_dir / "commondir").is_file():
            text = (git_dir / "commondir").read_text(encoding="utf-8").strip()
            common = (git_dir / text).resolve()
        return Repo(top, git_dir, common)
    return None


def init_repo(path: Path) -> Repo:
    """Create a git repository at `path` with `main` as its first branch.

    Raises:
        GitError: when git init fails.
    """
    _run(path, ["init", "--quiet", "--initial-branch=main"])
    repo = find_repo(path)
    if repo is None:
        raise GitError(f"git init made no repository in {path}")
    return repo


def hooks_dir(repo: Repo) -> Path:
    """The folder git runs this repository's hooks from: `core.hooksPath` when set, else the
    hooks folder every worktree shares.

    Raises:
        GitError: when git fails.
    """
    return repo.top / git(repo, "rev-parse", "--git-path", "hooks")


def _run(cwd: Path, args: list[str], env: dict[str, str] | None = None) -> str:
    """Run git in `cwd` and return its output (stripped of one final newline).

    Raises:
        GitError: with git's message when it fails.
    """
    try:
        proc = subprocess.run(
            ["git", *PLAIN_PATHS, *args],
            cwd=cwd,
            capture_output=True,
            env={**os.environ, **(env or {})},
            check=False,
        )
    except OSError as e:
        raise GitError(f"cannot run git: {e}") from e
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {args[0]} failed: {err or f'exit {proc.returncode}'}")
    out = proc.stdout.decode("utf-8", "replace")
    return out[:-1] if out.endswith("\n") else out


# Paths in git's output as they are (`mémoire/`, not `"m\\303\\251moire/"`); the few characters
# git still quotes (a quote, a backslash, a control character) are unquoted by `gitlog`.
PLAIN_PATHS = ("-c", "core.quotePath=false")


def git(repo: Repo, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in the repository's top folder and return its output (see `_run`).

    Raises:
        GitError: with git's message when it fails.
    """
    return _run(repo.top, list(args), env)


# Reads must not take git's optional index lock: it would make a concurrent commit fail.
READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0"}


def attribute(repo: Repo, path: Path, name: str) -> str | None:
    """The value git's attributes give `path` for `name` (e.g. `merge`), or None if unset."""
    out = git(repo, "check-attr", "-z", name, "--", repo_path(repo, path))
    fields = str(out).split("\0")  # path, attribute, value
    value = fields[2] if len(fields) > 2 else ""
    return None if value in ("unspecified", "unset", "") else value


def repo_path(repo: Repo, path: Path) -> str:
    """`path` relative to the repository's top folder, as git names it."""
    top = repo.top
    # The folder is resolved, the name is not: a symlink is named, never followed outside.
    try:
        rel = (path.parent.resolve() / path.name).relative_to(top).as_posix()
    except ValueError:
        raise GitError(f"{path} is outside the repository {top}") from None
    if rel.startswith("-"):
        raise GitError(f"refusing to pass path {rel!r} to git")
    return rel


def check_rel(rel: str) -> None:
    """Refuse a repository-relative path that is empty, starts with `-`, or steps outside
    (`..`, `.git`, an empty part)."""
    parts = rel.split("/")
    if not rel or rel.startswith("-") or any(p in ("", ".", "..", ".git") for p in parts):
        raise GitError(f"refusing to commit path {rel!r}")


def check_sha(sha: str) -> None:
    """Refuse anything but a full commit id: never an option, a range or a ref name."""
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
        raise GitError(f"not a full commit id: {sha!r}")


def run_git(
    repo: Repo,
    args: list[str],
    stdin: bytes | None = None,
    keep: tuple[int, ...] = (),
    env: dict[str, str] | None = None,
) -> tuple[int, str]:
    """Run git in the repository's top folder (with `env` added to the environment); (exit
    code, stderr).

    git runs in a session of its own: a kill aimed at memstore's process group never stops it
    midway, holding a lock file nobody would remove. It inherits the file descriptors `keep`
    (a lifeline: a lock held as long as any git the write started still runs).
    """
    proc = subprocess.run(
        ["git", *args],
        cwd=repo.top,
        input=stdin,
        capture_output=True,
        env={**os.environ, **(env or {}), "LC_ALL": "C", "LANGUAGE": "C"},
        check=False,
        start_new_session=True,
        pass_fds=keep,
    )
    return proc.returncode, proc.stderr.decode("utf-8", "replace").strip()


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Close a git process's pipes and wait for it to end (killed after 5 s)."""
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


LOCK_POLL = 0.02


def wait_for_lock(lock: Path, deadline: float, waited: bool) -> bool:
    """Sleep a moment while a git lock file is in the way; returns True once it has said so.

    Raises:
        GitError: when the lock is still there at `deadline`, saying what to do.
    """
    if time.monotonic() >= deadline:
        raise GitError(
            f"git's lock {lock} is in the way: a git command is working in this repository "
            f"(a commit waiting for its message?); let it finish and retry. If no git command "
            f"is running, a killed one left it: delete {lock} and retry"
        )
    if not waited:
        _log().warning("git busy: %s exists; retrying", lock.name)
    time.sleep(LOCK_POLL)
    return True
