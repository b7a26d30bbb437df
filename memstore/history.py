"""git as the history: one commit per change, authored by the acting identity."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import git

from memstore.errors import GitError

_SEP = "\x1f"
_REC = "\x1e"


@dataclass(frozen=True, slots=True)
class Revision:
    """One commit that touched a memory file."""

    commit: str
    author: str
    date: str
    message: str


@dataclass(frozen=True, slots=True)
class Confirmation:
    """The latest commit that set a file's status to confirmed, and what it claimed."""

    path: str
    commit: str
    author: str
    confirmed_by: str | None


def email_for(identity: str) -> str:
    """A stable, obviously synthetic e-mail address for an identity without one."""
    slug = re.sub(r"[^a-z0-9]+", "-", identity.lower()).strip("-") or "agent"
    return f"{slug}@memstore.invalid"


def find_repo(path: Path) -> git.Repo | None:
    """The git repository containing `path`, or None."""
    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None


def init_repo(path: Path) -> git.Repo:
    """Create a git repository at `path` with `main` as its first branch."""
    try:
        return git.Repo.init(path, initial_branch="main")
    except git.GitCommandError as e:
        raise GitError(f"git init failed in {path}: {e.stderr.strip()}") from e


def git_identity(repo: git.Repo) -> str | None:
    """git's `user.name` for this repository, if set."""
    try:
        name = repo.git.config("--get", "user.name").strip()
    except git.GitCommandError:
        return None
    return name or None


def _env(author: str) -> dict[str, str]:
    email = email_for(author)
    return {
        "GIT_AUTHOR_NAME": author,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": author,
        "GIT_COMMITTER_EMAIL": email,
    }


def repo_path(repo: git.Repo, path: Path) -> str:
    """`path` relative to the repository's top folder, as git names it."""
    top = Path(repo.working_tree_dir or ".").resolve()
    rel = path.resolve().relative_to(top).as_posix()
    if rel.startswith("-"):
        raise GitError(f"refusing to pass path {rel!r} to git")
    return rel


_rel = repo_path


def changed_paths(repo: git.Repo, under: Path) -> set[str]:
    """Paths under `under` (relative to the repository) that differ from HEAD or are untracked."""
    try:
        out = repo.git.status(
            "--porcelain=v1", "-z", "--untracked-files=all", "--", _rel(repo, under) or "."
        )
    except git.GitCommandError as e:
        raise GitError(f"git status failed: {(e.stderr or str(e)).strip()}") from e
    paths: set[str] = set()
    entries = out.split("\0")
    skip = False
    for entry in entries:
        if skip:
            skip = False
            continue
        if len(entry) < 4:
            continue
        paths.add(entry[3:])
        if entry[0] in "RC":
            skip = True  # a rename's second field is its old path
    return paths


def commit(repo: git.Repo, paths: list[Path], message: str, author: str) -> str:
    """Commit exactly `paths` (their working-tree content) and return the new commit's sha.

    Whatever else is staged or changed in the repository stays as it was: `git commit --only`
    builds the commit from HEAD plus these paths and leaves the rest of the index alone.

    Raises:
        GitError: with git's message when a command fails.
    """
    rels = [_rel(repo, p) for p in paths]
    env = _env(author)
    try:
        existing = [r for r, p in zip(rels, paths, strict=True) if p.exists()]
        if existing:
            repo.git.add("--", *existing, env=env)
        repo.git.execute(
            [
                "git",
                "-c",
                "commit.gpgsign=false",
                "commit",
                "--quiet",
                "--no-verify",
                "--only",
                "-m",
                message,
                "--",
                *rels,
            ],
            env={**os.environ, **env},
        )
        return repo.git.rev_parse("HEAD")
    except git.GitCommandError as e:
        detail = (e.stderr or e.stdout or str(e)).strip()
        raise GitError(f"git commit failed: {detail}") from e


def log(repo: git.Repo, path: Path, limit: int | None = None) -> list[Revision]:
    """The commits that touched `path`, newest first, following renames."""
    args = ["--follow", f"--format=%H{_SEP}%an{_SEP}%aI{_SEP}%B{_REC}"]
    if limit is not None:
        args.append(f"-n{limit}")
    try:
        out = repo.git.log(*args, "--", _rel(repo, path))
    except git.GitCommandError as e:
        if "does not have any commits" in (e.stderr or ""):
            return []
        raise GitError(f"git log failed: {(e.stderr or str(e)).strip()}") from e
    revisions: list[Revision] = []
    for record in out.split(_REC):
        record = record.strip("\n")
        if not record:
            continue
        sha, author, when, message = record.split(_SEP, 3)
        revisions.append(Revision(sha, author, when, message.strip()))
    return revisions


def show(repo: git.Repo, commit_sha: str, path: Path) -> str | None:
    """The content of `path` at `commit_sha`, or None if it did not exist there."""
    if not re.fullmatch(r"[0-9a-fA-F]{4,40}|HEAD(~\d+)?", commit_sha):
        raise GitError(f"not a commit id: {commit_sha!r}")
    try:
        return repo.git.show(f"{commit_sha}:{_rel(repo, path)}")
    except git.GitCommandError:
        return None


def confirmations(repo: git.Repo, store: Path) -> dict[str, Confirmation]:
    """For each file under `store`, the latest commit whose diff set `status: confirmed`.

    Keys are paths relative to the repository root. One `git log -p` over the store.
    """
    try:
        rel = _rel(repo, store)
        out = repo.git.log(
            "--no-renames",
            "--format=" + _REC + "%H" + _SEP + "%an",
            "-p",
            "--unified=0",
            "--",
            rel or ".",
        )
    except git.GitCommandError as e:
        if "does not have any commits" in (e.stderr or ""):
            return {}
        raise GitError(f"git log failed: {(e.stderr or str(e)).strip()}") from e
    found: dict[str, Confirmation] = {}
    for chunk in out.split(_REC):
        header, _, diff = str(chunk).partition("\n")
        sha, _, author = header.partition(_SEP)
        # Each file's section starts at "diff --git"; git log lists newest first, so the first
        # confirmation seen for a file is its latest.
        sections: list[str] = diff.split("\ndiff --git ")[1:] if diff else []
        for section in sections:
            lines = section.splitlines()
            target = next((x[6:] for x in lines if x.startswith("+++ b/")), None)
            if target is None or target in found or "+status: confirmed" not in lines:
                continue
            claims = [x.split(":", 1)[1] for x in lines if x.startswith("+confirmed_by:")]
            claimed = claims[0].strip().strip("'\"") if claims else None
            found[target] = Confirmation(target, sha, author, claimed)
    return found


def head(repo: git.Repo) -> str | None:
    """The sha of the commit HEAD points at, or None before the first commit."""
    try:
        return repo.git.rev_parse("--verify", "--quiet", "HEAD^{commit}").strip() or None
    except git.GitCommandError:
        return None


def is_ancestor(repo: git.Repo, older: str, newer: str) -> bool:
    """Whether commit `older` is reachable from commit `newer` (both full shas)."""
    for sha in (older, newer):
        if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
            raise GitError(f"not a full commit id: {sha!r}")
    try:
        repo.git.merge_base("--is-ancestor", older, newer)
    except git.GitCommandError:
        return False
    return True


def added_lines(repo: git.Repo, path: Path, until: str, since: str | None = None) -> list[str]:
    """Every line a commit reachable from `until` (and not from `since`) added to `path`,
    oldest first. Merge commits show no diff here, so a union merge adds nothing of its own.

    One `git log -p`; its cost grows with the number of commits times the file's size, so
    callers pass `since` to read only what is new.
    """
    for sha in (until, since):
        if sha is not None and not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
            raise GitError(f"not a full commit id: {sha!r}")
    span = f"{since}..{until}" if since else until
    try:
        out = repo.git.log(
            "--reverse",
            "--no-renames",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--format=%x1e",
            "-p",
            "--unified=0",
            span,
            "--",
            _rel(repo, path),
        )
    except git.GitCommandError as e:
        raise GitError(f"git log failed: {(e.stderr or str(e)).strip()}") from e
    lines: list[str] = []
    in_hunk = False
    for line in out.split("\n"):
        if line.startswith(_REC) or line.startswith("diff --git "):
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            lines.append(line[1:])
    return lines


def attribute(repo: git.Repo, path: Path, name: str) -> str | None:
    """The value git's attributes give `path` for `name` (e.g. `merge`), or None if unset."""
    try:
        out = repo.git.check_attr(name, "--", _rel(repo, path))
    except git.GitCommandError as e:
        raise GitError(f"git check-attr failed: {(e.stderr or str(e)).strip()}") from e
    value = str(out).rsplit(": ", 1)[-1].strip()
    return None if value in ("unspecified", "unset", "") else value
