"""git as the history: one commit per change, authored by the acting identity."""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import git

from memstore.errors import GitError

logger = logging.getLogger(__name__)

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
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--",
            _rel(repo, under) or ".",
            env=_READ_ONLY,
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


def commit(
    repo: git.Repo, paths: list[Path], message: str, author: str, lock_wait: float = 10.0
) -> str:
    """Commit exactly `paths` (their working-tree content) and return the new commit's sha.

    Whatever else is staged or changed in the repository stays as it was: `git commit --only`
    builds the commit from HEAD plus these paths and leaves the rest of the index alone.
    A git lock file (`index.lock`, a ref's `.lock`) in the way is waited for while a git
    process works in the repository, and removed when none does (a killed git left it).

    Raises:
        GitError: with git's message when a command fails, or saying what to do about a lock
            that a live git process holds for longer than `lock_wait` seconds.
    """
    rels = [_rel(repo, p) for p in paths]
    deadline = time.monotonic() + lock_wait
    waited = False
    while True:
        try:
            return _commit_once(repo, paths, rels, message, author)
        except git.GitCommandError as e:
            detail = (e.stderr or e.stdout or str(e)).strip()
            lock = _lock_in_the_way(repo, detail)
            if lock is not None:
                waited = _clear_git_lock(repo, lock, deadline, waited)
                continue
            if re.search(r"nothing (added )?to commit", detail) and not _dirty(repo, rels):
                # Someone (a human's `git commit -a`) already committed this content.
                logger.warning("%s already committed by someone else; no new commit", rels)
                return repo.git.rev_parse("HEAD")
            raise GitError(f"git commit failed: {detail}") from e


def _commit_once(
    repo: git.Repo, paths: list[Path], rels: list[str], message: str, author: str
) -> str:
    env = _env(author)
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


def _dirty(repo: git.Repo, rels: list[str]) -> bool:
    out = repo.git.status("--porcelain=v1", "--untracked-files=all", "--", *rels, env=_READ_ONLY)
    return bool(out.strip())


def dirty(repo: git.Repo, paths: list[Path]) -> bool:
    """Whether any of `paths` differs from HEAD (changed, added or untracked).

    Raises:
        GitError: when git status fails.
    """
    try:
        return _dirty(repo, [_rel(repo, p) for p in paths])
    except git.GitCommandError as e:
        raise GitError(f"git status failed: {(e.stderr or str(e)).strip()}") from e


def unstage(repo: git.Repo, paths: list[Path]) -> None:
    """Reset the index entries of `paths` to HEAD; a failure is logged, not raised."""
    try:
        repo.git.reset("-q", "--", *[_rel(repo, p) for p in paths])
    except git.GitCommandError as e:
        logger.warning("could not unstage %s: %s", paths, (e.stderr or str(e)).strip())


def blob(repo: git.Repo, commit_sha: str, path: Path) -> bytes | None:
    """The exact bytes of `path` at `commit_sha`, or None if it did not exist there."""
    if not re.fullmatch(r"[0-9a-fA-F]{4,40}|HEAD(~\d+)?", commit_sha):
        raise GitError(f"not a commit id: {commit_sha!r}")
    try:
        data: bytes = repo.git.show(
            f"{commit_sha}:{_rel(repo, path)}",
            stdout_as_string=False,
            strip_newline_in_stdout=False,
        )
    except git.GitCommandError:
        return None
    return data


# Reads must not take git's optional index lock: it would make a concurrent commit fail.
_READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0"}
_LOCK_RE = re.compile(r"Unable to create '([^']+\.lock)': File exists")
LOCK_POLL = 0.05


def _lock_in_the_way(repo: git.Repo, detail: str) -> Path | None:
    """The git lock file a failed command ran into, if it is inside the git directory.

    git names it in its "File exists" message; when that message is translated (another
    locale), the lock files a commit takes are looked for instead.
    """
    match = _LOCK_RE.search(detail)
    if match is None:
        git_dir, common = Path(repo.git_dir), Path(repo.common_dir)
        candidates = [git_dir / "index.lock", git_dir / "HEAD.lock", common / "HEAD.lock"]
        try:
            candidates.append(common / f"{repo.active_branch.path}.lock")
        except (TypeError, ValueError):
            pass  # a detached HEAD has no branch lock
        return next((c for c in candidates if c.exists()), None)
    lock = Path(match.group(1))
    git_dirs = {Path(repo.git_dir).resolve(), Path(repo.common_dir).resolve()}
    parent = lock.parent.resolve()
    if not any(parent == d or d in parent.parents for d in git_dirs):
        return None
    return lock


def _clear_git_lock(repo: git.Repo, lock: Path, deadline: float, waited: bool) -> bool:
    """Wait a moment for a live git process to release `lock`, or remove it when no git
    process runs. Returns whether it has said it is waiting.

    Raises:
        GitError: when a git process still works in the repository at `deadline`.
    """
    if not lock.exists():
        return waited
    if not Path("/proc").is_dir():
        # No way to see processes here: a person's git may be running, so wait, then explain.
        if time.monotonic() >= deadline:
            raise GitError(
                f"git's lock {lock} is in the way, and memstore cannot tell here whether a git "
                f"process still runs: if no git command is running in this repository, delete "
                f"{lock} and retry"
            )
        time.sleep(LOCK_POLL)
        return True
    holders = git_processes(repo)
    if not holders:
        try:
            lock.unlink()
        except FileNotFoundError:
            return waited
        logger.warning("removed %s, left by a git process that no longer runs", lock)
        return waited
    if time.monotonic() >= deadline:
        who = ", ".join(f"pid {pid} ({cmd})" for pid, cmd in holders[:3])
        raise GitError(
            f"git's lock {lock} is in the way and a git process still works in this repository "
            f"({who}): wait for it to finish and retry; if it is stuck, stop it "
            f"(kill {holders[0][0]}) and delete {lock}"
        )
    if not waited:
        logger.warning("git busy: %s exists while %s runs; retrying", lock.name, holders[0][1])
    time.sleep(LOCK_POLL)
    return True


def remove_stale_locks(repo: git.Repo) -> list[Path]:
    """Remove the lock files a killed `git commit` leaves, when no git process works here.

    `index.lock`, `HEAD.lock` and branch `.lock` files block every later commit;
    `next-index-PID.lock` (from `git commit --only`) blocks nothing but would pile up. Needs
    /proc to tell; returns the files removed.
    """
    if not Path("/proc").is_dir() or git_processes(repo):
        return []
    git_dir = Path(repo.git_dir)
    candidates = [
        git_dir / "index.lock",
        Path(repo.common_dir) / "HEAD.lock",
        git_dir / "HEAD.lock",
    ]
    candidates += Path(repo.common_dir, "refs", "heads").rglob("*.lock")
    candidates += git_dir.glob("next-index-*.lock")
    removed: list[Path] = []
    for lock in dict.fromkeys(candidates):
        if lock.is_file():
            lock.unlink(missing_ok=True)
            logger.warning("removed %s, left by a git process that no longer runs", lock)
            removed.append(lock)
    return removed


def git_processes(repo: git.Repo) -> list[tuple[int, str]]:
    """Running git processes whose working folder is inside this repository: (pid, command).

    Reads /proc, so it finds nothing where /proc does not exist. `git cat-file` helpers (kept
    open by GitPython) are left out: they read objects and never take a lock.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    roots = {Path(repo.git_dir).resolve(), Path(repo.common_dir).resolve()}
    if repo.working_tree_dir:
        roots.add(Path(repo.working_tree_dir).resolve())
    found: list[tuple[int, str]] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (entry / "comm").read_text(encoding="utf-8").strip() != "git":
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue  # gone, or not ours to inspect
        command = " ".join(a.decode("utf-8", "replace") for a in argv if a)
        if b"cat-file" in argv:
            continue
        if any(cwd == r or r in cwd.parents for r in roots):
            found.append((int(entry.name), command))
    return found


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


@dataclass(frozen=True, slots=True)
class FileChange:
    """What one commit did to one file under the store: `added`, `confirmed`, `deprecated`,
    `restored`, `edited` or `deleted` for a memory; `appended` for a JSONL record file."""

    path: str
    kind: str
    added_lines: tuple[str, ...] = ()
    """For a `.jsonl` file, the lines the commit appended."""


@dataclass(frozen=True, slots=True)
class Change:
    """One commit under the store and what it did to each file."""

    commit: str
    author: str
    date: str
    subject: str
    files: tuple[FileChange, ...]


def head(repo: git.Repo) -> str | None:
    """The sha of the commit HEAD points at, or None before the first commit."""
    try:
        return repo.git.rev_parse("--verify", "--quiet", "HEAD^{commit}").strip() or None
    except git.GitCommandError:
        return None


def _file_change(section: str) -> FileChange | None:
    lines = section.splitlines()
    target = next((x[6:] for x in lines if x.startswith("+++ b/")), None)
    gone = next((x[6:] for x in lines if x.startswith("--- a/")), None)
    if target is None and gone is None:
        return None
    path = target or gone or ""
    added = tuple(x[1:] for x in lines if x.startswith("+") and not x.startswith("+++ "))
    if path.endswith(".jsonl"):
        return FileChange(path, "appended", added)
    if target is None:
        kind = "deleted"
    elif any(x.startswith("new file mode") for x in lines):
        kind = "added"
    elif "status: confirmed" in added:
        kind = "confirmed"
    elif "status: deprecated" in added:
        kind = "deprecated"
    elif "status: draft" in added and any(x.startswith("restored_by:") for x in added):
        kind = "restored"
    else:
        kind = "edited"
    return FileChange(path, kind)


def changes(
    repo: git.Repo,
    store: Path,
    *,
    since_commit: str | None = None,
    since_date: str | None = None,
    limit: int = 200,
) -> list[Change]:
    """The commits touching `store` after `since_commit` (or since `since_date`), newest first.

    Paths are relative to the repository root. A `since_commit` that is not an ancestor of HEAD
    (history rewritten) raises, so the caller can fall back to a date.

    Raises:
        GitError: when git fails or `since_commit` is unknown.
    """
    args = ["--no-renames", f"-n{limit}", "-p", "--unified=0"]
    args.append("--format=" + _REC + "%H" + _SEP + "%an" + _SEP + "%aI" + _SEP + "%s")
    if since_date:
        args.append(f"--since={since_date}")
    if since_commit:
        if not re.fullmatch(r"[0-9a-fA-F]{4,40}", since_commit):
            raise GitError(f"not a commit id: {since_commit!r}")
        args.append(f"{since_commit}..HEAD")
    try:
        out = repo.git.log(*args, "--", _rel(repo, store) or ".")
    except git.GitCommandError as e:
        if "does not have any commits" in (e.stderr or ""):
            return []
        raise GitError(f"git log failed: {(e.stderr or str(e)).strip()}") from e
    found: list[Change] = []
    for chunk in out.split(_REC):
        header, _, diff = str(chunk).partition("\n")
        if not header.strip():
            continue
        sha, author, when, subject = (header.split(_SEP, 3) + ["", "", ""])[:4]
        sections: list[str] = diff.split("\ndiff --git ")
        files = tuple(f for f in (_file_change(s) for s in sections) if f is not None)
        found.append(Change(sha, author, when, subject, files))
    return found


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
