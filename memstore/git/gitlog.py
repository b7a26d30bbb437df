"""Reading a store's git history: the commits that touched a file or the store, what each
one changed and who made it, and the lines each commit added."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memstore.errors import GitError
from memstore.git import graph
from memstore.git.objects import (
    TREE_MODE,
    blob,
    commit_tree,
    parents,
    read_blobs,
    read_object,
    tree_entries,
)
from memstore.git.refs import head
from memstore.git.repository import PLAIN_PATHS, SEP, Repo, git, repo_path, stop
from memstore.model.identity import same_identity

_REC = "\x1e"


@dataclass(frozen=True, slots=True)
class Revision:
    """One commit that touched a memory file."""

    commit: str
    author: str
    date: str
    message: str


def log(repo: Repo, path: Path, limit: int | None = None) -> list[Revision]:
    """The commits that touched `path`, newest first, following renames."""
    args = ["--follow", f"--format=%H{SEP}%an{SEP}%aI{SEP}%B{_REC}"]
    if limit is not None:
        args.append(f"-n{limit}")
    try:
        out = git(repo, "log", *args, "--", repo_path(repo, path))
    except GitError as e:
        if "does not have any commits" in str(e):
            return []
        raise
    revisions: list[Revision] = []
    for record in out.split(_REC):
        record = record.strip("\n")
        if not record:
            continue
        sha, author, when, message = record.split(SEP, 3)
        revisions.append(Revision(sha, author, when, message.strip()))
    return revisions


@dataclass(frozen=True, slots=True)
class FileRevision:
    """One commit that changed a file, with the file's bytes before it (in its first parent)
    and after it."""

    revision: Revision
    before: bytes | None
    after: bytes


def file_revisions(repo: Repo, path: Path, limit: int | None = None) -> list[FileRevision]:
    """The commits that changed `path`, newest first, each with the file before and after
    (what `git log -p` shows). A commit `--follow` took for a rename of a similar file, which
    holds no `path`, is not this file's past and is left out."""
    found: list[FileRevision] = []
    for rev in log(repo, path, limit=limit):
        first = parents(repo, rev.commit)[:1]
        old = blob(repo, first[0], path) if first else None
        new = blob(repo, rev.commit, path)
        if new is not None:
            found.append(FileRevision(rev, old, new))
    return found


@dataclass(frozen=True, slots=True)
class PathChange:
    """One file a commit changed: its blob in each parent (None where absent) and after."""

    path: str
    """Relative to the repository's top folder."""
    before: tuple[str | None, ...]
    after: str | None


@dataclass(frozen=True, slots=True)
class StoreCommit:
    """A commit that changed files under the store, with who it names and what it changed.

    A merge lists only the files whose result differs from every parent: what the merge
    itself wrote (a conflict resolution); a version taken whole from one side is that side's.
    """

    sha: str
    parents: tuple[str, ...]
    author: str
    committer: str
    changes: tuple[PathChange, ...]
    time: int = 0
    """When it was committed (Unix seconds); 0 when not read (`linear_commits`)."""
    message: str = ""
    """Its whole message; empty when not read (`linear_commits`)."""


def prefetch(
    repo: Repo,
    commits: Iterable[StoreCommit],
    wanted: Callable[[str], bool],
    known: Container[str] = (),
    more_than: int = 0,
) -> dict[str, bytes]:
    """The bytes of each version `commits` changed (before and after) at a path `wanted`
    accepts, but those `known`, through one `git cat-file --batch`. None are read when no more
    than `more_than` versions changed: a few are cheaper read in-process one at a time."""
    blobs = {
        blob
        for commit in commits
        for change in commit.changes
        if wanted(change.path)
        for blob in (change.after, *change.before)
        if blob is not None
    }
    if len(blobs) <= more_than:
        return {}
    return read_blobs(repo, sorted(b for b in blobs if b not in known))


_NULL_SHA = re.compile(r"0+")


def store_commits(
    repo: Repo,
    store: Path,
    since: str | None = None,
    until: str | None = None,
    paths: Iterable[str] | None = None,
) -> list[StoreCommit]:
    """The commits that changed files under `store`, oldest first (parents before children),
    after `since` (exclusive) up to `until` (HEAD when None: name the commit you read, so a
    commit landing meanwhile is not taken in). One `git log`, NUL-separated, paths unquoted
    (one a file for several `paths` where git's changed-path filters make that quicker:
    `_path_by_path`).

    Every merge is listed, with every path in the store's folders whose version differs from
    any parent's (read from the trees in-process): a merge taking a file whole from one
    parent changes it against the others. Parents are git's rewritten ones: the nearest
    commits that changed the store (or, for a range, the commits where it starts).

    `paths` (relative to the repository): only the commits that changed one of these files,
    and only their changes to them (a merge's changes are still every file that differs).

    Raises:
        GitError: when git fails (e.g. `since` is not in this history).
    """
    end = until or head(repo)
    if end is None:
        return []
    rel = repo_path(repo, store) if store.absolute() != repo.top else ""
    if paths is not None:
        paths = sorted(set(paths))
        if since is None and len(paths) > 1 and graph.has_filters(repo):
            return _path_by_path(repo, rel, end, paths)
    span = f"{since}..{end}" if since else end
    pathspec = [f":(literal){p}" for p in paths] if paths is not None else [rel or "."]
    return _parse(repo, rel, git(repo, *_LOG, span, "--", *pathspec))


_LOG = (
    "log",
    "--reverse",
    "--topo-order",
    "--full-history",
    "--parents",
    "--raw",
    "-z",
    "--no-renames",
    "--no-abbrev",
    "--no-ext-diff",
    "--format=%x1e%H%x00%P%x00%an%x00%cn%x00%ct%x00%B%x00",
)
PATH_READERS = 4
"""How many one-path `git log`s `_path_by_path` runs at once."""


def _path_by_path(repo: Repo, rel: str, end: str, paths: list[str]) -> list[StoreCommit]:
    """`store_commits` for several files, read a file at a time: git (2.39) uses the
    commit-graph's changed-path filters for one path only (`graph`), and a log of one file
    then costs milliseconds where a log of ten costs seconds in a long history.

    The result is the one log of every path would give: the commits that changed one of the
    files and every merge (`--full-history` keeps them all), each non-merge with its changes
    to the files, parents rewritten as git rewrites them (a parent that changed none of the
    files stands for its own nearest one that did), in an order with parents first.
    """
    from concurrent.futures import ThreadPoolExecutor

    def one(path: str) -> list[StoreCommit]:
        return _parse(repo, rel, git(repo, *_LOG, end, "--", f":(literal){path}"), merges=False)

    with ThreadPoolExecutor(min(PATH_READERS, len(paths))) as pool:
        logs = list(pool.map(one, paths))
    found: dict[str, StoreCommit] = {}
    changes: dict[str, list[PathChange]] = {}
    for commits in logs:
        for c in commits:
            found.setdefault(c.sha, c)
            changes.setdefault(c.sha, []).extend(c.changes)
    # The whole graph's real parents, a line per commit, parents first.
    order: list[str] = []
    real: dict[str, list[str]] = {}
    for line in git(repo, "rev-list", "--topo-order", "--reverse", "--parents", end).splitlines():
        sha, *ps = line.split()
        order.append(sha)
        real[sha] = ps
    nearest: dict[str, tuple[str, ...]] = {}
    for sha in order:  # parents first: each commit's parents are settled before it
        if sha in found:
            nearest[sha] = (sha,)
        else:
            nearest[sha] = tuple(dict.fromkeys(n for p in real[sha] for n in nearest.get(p, ())))
    result: list[StoreCommit] = []
    for sha in order:
        c = found.get(sha)
        if c is None:
            continue
        rewritten = tuple(dict.fromkeys(n for p in real[sha] for n in nearest.get(p, ())))
        if len(rewritten) > 1:
            merged = tuple(merge_changes(repo, rel, sha, rewritten))
        else:
            merged = tuple(sorted(changes[sha], key=lambda x: x.path))
        result.append(StoreCommit(sha, rewritten, c.author, c.committer, merged, c.time, c.message))
    return result


def _parse(repo: Repo, rel: str, out: str, merges: bool = True) -> list[StoreCommit]:
    """The commits of a `_LOG` output; a merge's changes read from the trees (not when
    `merges` is False: `_path_by_path` reads them once it knows the merge's parents)."""
    commits: list[StoreCommit] = []
    for chunk in out.split("\x1e")[1:]:
        fields = chunk.split("\0")
        if len(fields) < 6:
            continue
        sha, parents, author, committer, when, message = fields[:6]
        changes: list[PathChange] = []
        rest = iter(fields[6:])
        for field in rest:
            meta = field.strip()
            if not meta.startswith(":"):
                continue
            path = next(rest, "")
            colons = len(meta) - len(meta.lstrip(":"))
            parts = meta[colons:].split()
            blobs = parts[colons + 1 : colons + 1 + colons + 1]
            if len(blobs) != colons + 1:
                continue
            olds = tuple(None if _NULL_SHA.fullmatch(b) else b for b in blobs[:-1])
            after = None if _NULL_SHA.fullmatch(blobs[-1]) else blobs[-1]
            changes.append(PathChange(path, olds, after))
        parent_list = tuple(parents.split())
        if len(parent_list) > 1 and merges:
            changes = merge_changes(repo, rel, sha, parent_list)
        commits.append(
            StoreCommit(
                sha,
                parent_list,
                author,
                committer,
                tuple(changes),
                int(when) if when.isdigit() else 0,
                message.strip(),
            )
        )
    return commits


def deleted_files(repo: Repo, shas: Iterable[str], prefix: str) -> dict[str, list[str]]:
    """The files under `prefix` (relative to the repository) each of the single-parent
    commits `shas` removed, by commit (those that removed none are left out); one `git log`.

    Raises:
        GitError: when git fails.
    """
    wanted = [s for s in shas if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", s)]
    if not wanted:
        return {}
    out = git(
        repo,
        "log",
        "--no-walk=unsorted",
        "--no-renames",
        "--diff-filter=D",
        "--name-only",
        "-z",
        "--format=%x1e%H",
        *wanted,
    )
    found: dict[str, list[str]] = {}
    for chunk in out.split("\x1e")[1:]:
        sha, _, rest = chunk.partition("\0")
        gone = [t.strip("\n") for t in rest.split("\0")]
        gone = [t for t in gone if t and t.startswith(prefix)]
        if gone:
            found[sha.strip()] = gone
    return found


def commit_at(repo: Repo, moment: str) -> tuple[str, int] | None:
    """The newest commit on HEAD's first-parent line committed at or before `moment` (a UTC
    time, `2026-11-01T00:00:00Z`) and when it was committed (Unix seconds); None when that
    history starts later (or there is no commit).

    Raises:
        GitError: when git fails.
    """
    if head(repo) is None:
        return None
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", moment):
        raise GitError(f"not a UTC time: {moment!r}")
    out = git(repo, "log", "-1", "--first-parent", f"--before={moment}", "--format=%H %ct", "HEAD")
    sha, _, when = out.strip().partition(" ")
    return (sha, int(when)) if sha and when.isdigit() else None


def tree_files(repo: Repo, commit_sha: str, store: Path) -> dict[str, str]:
    """The memory files (`<type>/<name>.md`, relative to `store`) in commit `commit_sha`'s
    tree, each with its blob sha. One `git ls-tree`.

    Raises:
        GitError: when git fails (e.g. no such commit).
    """
    if not re.fullmatch(r"[0-9a-f]{40}", commit_sha):
        raise GitError(f"not a commit id: {commit_sha!r}")
    rel = repo_path(repo, store) if store.absolute() != repo.top else ""
    prefix = f"{rel}/" if rel else ""
    args = ["ls-tree", "-r", "-z", "--full-tree", commit_sha]
    out = git(repo, *args, *(["--", rel] if rel else []))
    found: dict[str, str] = {}
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) != 3 or parts[1] != "blob" or not path.startswith(prefix):
            continue
        inner = path[len(prefix) :]
        folder, _, name = inner.partition("/")
        if folder and not folder.startswith(".") and name.endswith(".md") and "/" not in name:
            if not name.startswith("."):
                found[inner] = parts[2]
    return found


_PERSON = re.compile(rb"^(author|committer) (.*) <[^>]*> \d+ [+-]\d{4}$")


def linear_commits(
    repo: Repo, store: Path, since: str, until: str, limit: int = 64
) -> list[StoreCommit] | None:
    """The commits after `since` up to `until` that changed files under `store`, oldest
    first, read in-process (no git runs) when they form a chain of single-parent commits no
    longer than `limit`; None otherwise (a merge, a rewritten history, a longer chain), and
    the caller asks `store_commits`.

    Only files directly in the store's folders (`<folder>/<file>`) are compared: memory files.
    """
    prefix = repo_path(repo, store) if store.absolute() != repo.top else ""
    parts = [p for p in prefix.split("/") if p]
    chain: list[tuple[str, str, str, str, str]] = []
    sha = until
    try:
        while sha != since:
            if len(chain) >= limit:
                return None
            kind, data = read_object(repo, sha)
            if kind != "commit":
                return None
            head_text, _, _ = data.partition(b"\n\n")
            tree, parents, names = "", list[str](), {b"author": "", b"committer": ""}
            for line in head_text.split(b"\n"):
                if line.startswith(b"tree "):
                    tree = line[5:].decode("ascii")
                elif line.startswith(b"parent "):
                    parents.append(line[7:].decode("ascii"))
                else:
                    match = _PERSON.match(line)
                    if match is not None:
                        names[match.group(1)] = match.group(2).decode("utf-8", "replace")
            if len(parents) != 1:
                return None
            chain.append((sha, tree, parents[0], names[b"author"], names[b"committer"]))
            sha = parents[0]
        found: list[StoreCommit] = []
        for sha, tree, parent, author, committer in reversed(chain):
            old = _subtree(repo, commit_tree(repo, parent), parts)
            new = _subtree(repo, tree, parts)
            changes = _folder_changes(repo, old, new, prefix)
            if changes:
                found.append(StoreCommit(sha, (parent,), author, committer, tuple(changes)))
        return found
    except (GitError, ValueError, UnicodeDecodeError):
        return None


def _subtree(repo: Repo, tree: str | None, parts: list[str]) -> str | None:
    for name in parts:
        if tree is None:
            return None
        entry = tree_entries(repo, tree).get(name.encode("utf-8"))
        if entry is None or entry[0] != TREE_MODE:
            return None
        tree = entry[1].hex()
    return tree


def merge_changes(repo: Repo, prefix: str, sha: str, parents: tuple[str, ...]) -> list[PathChange]:
    """The files directly inside the type folders of the store at `prefix` (relative to the
    repository, '' at its top) whose version in merge `sha` differs from any parent's, each
    with its blob in every parent. Read in-process from the trees.

    Raises:
        GitError: when an object is missing.
    """
    parts = [p for p in prefix.split("/") if p]
    try:
        new = _subtree(repo, commit_tree(repo, sha), parts)
        olds = [_subtree(repo, commit_tree(repo, p), parts) for p in parents]
    except (ValueError, UnicodeDecodeError) as e:
        raise GitError(f"cannot read the trees of merge {sha}: {e}") from e
    return _folder_changes_n(repo, olds, new, prefix)


def _folder_changes(repo: Repo, old: str | None, new: str | None, prefix: str) -> list[PathChange]:
    """The files directly inside the type folders of two store trees that differ."""
    return _folder_changes_n(repo, [old], new, prefix)


def _files(repo: Repo, entry: tuple[bytes, bytes] | None) -> dict[bytes, tuple[bytes, bytes]]:
    return tree_entries(repo, entry[1].hex()) if entry and entry[0] == TREE_MODE else {}


def _blob_of(entry: tuple[bytes, bytes] | None) -> str | None:
    return entry[1].hex() if entry and entry[0] != TREE_MODE else None


def _folder_changes_n(
    repo: Repo, olds: list[str | None], new: str | None, prefix: str
) -> list[PathChange]:
    """The files directly inside the type folders of store trees `olds` whose version in
    `new` differs from any of theirs."""
    if all(old == new for old in olds):
        return []
    befores = [tree_entries(repo, old) if old else {} for old in olds]
    after = tree_entries(repo, new) if new else {}
    changes: list[PathChange] = []
    lead = f"{prefix}/" if prefix else ""
    for folder in sorted(set(after).union(*befores)):
        b = after.get(folder)
        were = [before.get(folder) for before in befores]
        if all(a == b for a in were):
            continue
        files_were = [_files(repo, a) for a in were]
        files_b = _files(repo, b)
        # The names whose entries differ from some side's, compared as sets in C: a folder
        # of 11,000 files holds a commit's few changes (95 ms a commit name by name).
        differ: set[bytes] = set()
        for files in files_were:
            differ.update(name for name, _ in files_b.items() ^ files.items())
        for name in sorted(differ):
            new_blob = _blob_of(files_b.get(name))
            old_blobs = tuple(_blob_of(files.get(name)) for files in files_were)
            if any(old != new_blob for old in old_blobs):
                path = f"{lead}{folder.decode('utf-8')}/{name.decode('utf-8')}"
                changes.append(PathChange(path, old_blobs, new_blob))
    return changes


def shallow_commits(repo: Repo) -> frozenset[str]:
    """The commits whose parents a shallow clone left out (git's `shallow` file), if any."""
    try:
        text = (repo.common_dir / "shallow").read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


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


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _diff_path(lines: list[str], marker: str, side: str) -> str | None:
    """The path on a diff's `--- a/…` or `+++ b/…` line, unquoted; None for /dev/null.

    git ends a name holding a space with a tab, and quotes one holding a quote, a backslash
    or a control character C-style (`"b/a\\tb"`, octal escapes for bytes).
    """
    line = next((x for x in lines if x.startswith(marker)), None)
    if line is None:
        return None
    name = line[len(marker) :]
    if name.endswith("\t"):
        name = name[:-1]
    if len(name) > 1 and name.startswith('"') and name.endswith('"'):
        name = _unquote(name[1:-1])
    return name[len(side) :] if name.startswith(side) else None


def _unquote(quoted: str) -> str:
    out = bytearray()
    i = 0
    while i < len(quoted):
        c = quoted[i]
        if c == "\\" and i + 1 < len(quoted):
            nxt = quoted[i + 1]
            if nxt in "0123" and re.fullmatch(r"[0-7]{3}", quoted[i + 1 : i + 4]):
                out.append(int(quoted[i + 1 : i + 4], 8))
                i += 4
                continue
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
        out.extend(c.encode("utf-8"))
        i += 1
    return out.decode("utf-8", "replace")


def _file_change(section: str) -> FileChange | None:
    lines = section.splitlines()
    target = _diff_path(lines, "+++ ", "b/")
    gone = _diff_path(lines, "--- ", "a/")
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
    repo: Repo,
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
    args.append("--format=" + _REC + "%H" + SEP + "%an" + SEP + "%aI" + SEP + "%s")
    if since_date:
        args.append(f"--since={since_date}")
    if since_commit:
        if not re.fullmatch(r"[0-9a-fA-F]{4,40}", since_commit):
            raise GitError(f"not a commit id: {since_commit!r}")
        args.append(f"{since_commit}..HEAD")
    try:
        out = git(repo, "log", *args, "--", repo_path(repo, store) or ".")
    except GitError as e:
        if "does not have any commits" in str(e):
            return []
        raise
    found: list[Change] = []
    for chunk in out.split(_REC):
        header, _, diff = str(chunk).partition("\n")
        if not header.strip():
            continue
        sha, author, when, subject = (header.split(SEP, 3) + ["", "", ""])[:4]
        sections: list[str] = diff.split("\ndiff --git ")
        files = tuple(f for f in (_file_change(s) for s in sections) if f is not None)
        found.append(Change(sha, author, when, subject, files))
    return found


@dataclass(frozen=True, slots=True)
class Commit:
    """Who a commit names: its author and its committer (names, as git records them), and,
    when the store requires signatures, the identity whose allowed key signed it."""

    sha: str
    author: str
    committer: str
    signer: str | None = None
    signed: bool = False
    """Whether signatures are required: then `signer` must name the identity too."""


@dataclass(frozen=True, slots=True)
class Added:
    """One line a commit added to a file, and that commit."""

    text: str
    commit: Commit


def is_by(commit: Commit, identity: str) -> bool:
    """Whether `commit` is by `identity`: its author and its committer both name it, and,
    when signatures are required, that identity's allowed key signed it."""
    if not (same_identity(commit.author, identity) and same_identity(commit.committer, identity)):
        return False
    return not commit.signed or same_identity(commit.signer, identity)


def added_lines(repo: Repo, path: Path, until: str, since: str | None = None) -> list[Added]:
    """Every line a commit reachable from `until` (and not from `since`) added to `path`, with
    that commit, oldest first.

    Every parent of every merge is read (`--full-history`), so a line a merge dropped
    (`git merge -s ours`, a conflict resolved without it) is still found on its branch. A
    merge's own lines are those it added against all its parents; a union merge adds none.
    One `git log -p`; its cost grows with the number of commits times the file's size, so
    callers pass `since` to read only what is new.
    """
    for sha in (until, since):
        if sha is not None and not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
            raise GitError(f"not a full commit id: {sha!r}")
    span = f"{since}..{until}" if since else until
    out = git(
        repo,
        "log",
        "--reverse",
        "--full-history",
        "--no-renames",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-mailmap",
        "--cc",
        f"--format={_REC}%H{SEP}%an{SEP}%cn",
        "-p",
        "--unified=0",
        span,
        "--",
        repo_path(repo, path),
    )
    lines: list[Added] = []
    commit = Commit("", "", "")
    parents = 0  # 0 outside a hunk; else how many columns of +/- a hunk's lines start with
    for line in out.split("\n"):
        if line.startswith(_REC):
            sha, *names = line[1:].split(SEP)
            # A name holding the separator cannot be told apart: the commit is by nobody.
            commit = Commit(sha, names[0], names[1]) if len(names) == 2 else Commit(sha, "", "")
            parents = 0
        elif line.startswith("diff --"):
            parents = 0
        elif line.startswith("@@"):
            parents = len(line) - len(line.lstrip("@")) - 1
        elif parents and line[:parents] == "+" * parents:
            lines.append(Added(line[parents:], commit))
    return lines


def path_log(repo: Repo, pathspecs: list[str], revisions: str = "HEAD") -> Iterator[PathLog]:
    """The commits in `revisions` (newest first) that changed files matching `pathspecs`
    (git glob pathspecs, relative to the repository's top), each with the paths it changed.

    Streams: a caller that stops early stops git.

    Raises:
        GitError: when git cannot run or fails.
    """
    if any(spec.startswith("-") for spec in pathspecs) or revisions.startswith("-"):
        raise GitError("refusing to pass an argument starting with '-' to git")
    args = [
        "git",
        *PLAIN_PATHS,
        "log",
        "--no-renames",
        f"--format={_REC}%H %ct",
        "--name-only",
        revisions,
        "--",
        *(f":(glob){spec}" for spec in pathspecs),
    ]
    try:
        proc = subprocess.Popen(
            args,
            cwd=repo.top,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as e:
        raise GitError(f"cannot run git: {e}") from e
    assert proc.stdout is not None
    current: tuple[str, int] | None = None
    paths: list[str] = []
    finished = False
    try:
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith(_REC):
                if current is not None:
                    yield PathLog(current[0], current[1], tuple(paths))
                sha, _, at = line[1:].partition(" ")
                current, paths = (sha, int(at or 0)), []
            elif line:
                paths.append(_unquote(line[1:-1]) if line.startswith('"') else line)
        if current is not None:
            yield PathLog(current[0], current[1], tuple(paths))
        finished = True
    finally:
        if not finished:
            proc.kill()
        err = proc.stderr.read() if proc.stderr is not None else b""
        code = proc.wait()
        stop(proc)
    if finished and code != 0:
        message = err.decode("utf-8", "replace").strip()
        raise GitError(f"git log failed: {message or f'exit {code}'}")


@dataclass(frozen=True, slots=True)
class PathLog:
    """One commit of `path_log`: its sha, its commit time (Unix seconds), the paths changed."""

    sha: str
    at: int
    paths: tuple[str, ...]
