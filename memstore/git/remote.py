"""git's side of `sync`: fetching and pushing one branch (never forced, never prompting), and
what a merge needs to know about two commits."""

from __future__ import annotations

import os
import re
import subprocess

from memstore.errors import GitError
from memstore.git.repository import SEP, Repo, check_rel, check_sha, git

_NETWORK_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANGUAGE": "C"}
"""git talking to a remote never waits for a password typed at a terminal nobody watches."""


def _check_ref_part(value: str, what: str) -> None:
    # Never an option, never a refspec or a path trick: the names git itself accepts, minus those.
    if (
        not value
        or value.startswith("-")
        or not re.fullmatch(r"[A-Za-z0-9._/-]+", value)
        or ".." in value
        or value.endswith((".lock", "/", "."))
    ):
        raise GitError(f"refusing {what} name {value!r}")


def network(repo: Repo, args: list[str], keep: tuple[int, ...] = ()) -> tuple[int, str]:
    """Run a git command that talks to a remote (`fetch`, `push`); (exit code, its stderr and
    stdout). No terminal prompt: a missing credential fails instead of hanging."""
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=repo.top,
            capture_output=True,
            env={**os.environ, **_NETWORK_ENV},
            check=False,
            start_new_session=True,
            pass_fds=keep,
        )
    except OSError as e:
        raise GitError(f"cannot run git: {e}") from e
    out = proc.stderr.decode("utf-8", "replace") + proc.stdout.decode("utf-8", "replace")
    return proc.returncode, out.strip()


def fetch_args(remote: str, branch: str) -> list[str]:
    """`git fetch` of one branch into its remote-tracking ref, nothing else (no tags)."""
    _check_ref_part(remote, "remote")
    _check_ref_part(branch, "branch")
    return [
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        remote,
        f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}",
    ]


def tracking(repo: Repo, remote: str, branch: str) -> str | None:
    """The sha the remote-tracking ref of `branch` holds, or None."""
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"refs/remotes/{remote}/{branch}")
    except GitError:
        return None


def push_args(remote: str, sha: str, branch: str) -> list[str]:
    """`git push` of one commit to one branch; never forced, so a moved branch refuses it."""
    _check_ref_part(remote, "remote")
    _check_ref_part(branch, "branch")
    check_sha(sha)
    return ["push", "--porcelain", "--no-verify", remote, f"{sha}:refs/heads/{branch}"]


def remote_url(repo: Repo, remote: str) -> str | None:
    """The URL git fetches `remote` from, or None when there is no such remote."""
    try:
        return git(repo, "remote", "get-url", "--", remote) or None
    except GitError:
        return None


def merge_base(repo: Repo, one: str, other: str) -> str | None:
    """The best common ancestor of two commits, or None when they share no history."""
    check_sha(one)
    check_sha(other)
    try:
        return git(repo, "merge-base", one, other) or None
    except GitError:
        return None


def tree_blobs(repo: Repo, commit_sha: str, prefix: str) -> dict[str, str]:
    """Every file under `prefix` (repository-relative, "" for all) at a commit: path → blob."""
    check_sha(commit_sha)
    args = ["ls-tree", "-r", "-z", "--full-tree", commit_sha]
    if prefix:
        args += ["--", prefix.rstrip("/")]
    found: dict[str, str] = {}
    for entry in git(repo, *args).split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == "blob":
            found[path] = fields[2]
    return found


def changed_between(repo: Repo, old: str, new: str) -> list[str]:
    """The paths that differ between two commits' trees."""
    check_sha(old)
    check_sha(new)
    out = git(repo, "diff", "--name-only", "-z", "--no-renames", old, new)
    return [p for p in out.split("\0") if p]


def last_change(repo: Repo, since: str, until: str, rel: str) -> tuple[str, str] | None:
    """The newest commit in `since..until` that changed `rel`, and its author; None if none."""
    check_sha(since)
    check_sha(until)
    check_rel(rel)
    out = git(repo, "log", "-1", f"--format=%H{SEP}%an", f"{since}..{until}", "--", rel)
    sha, _, author = out.partition(SEP)
    return (sha, author) if sha else None
