"""git as the history: one commit per change, authored by the acting identity."""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import itertools
import os
import re
import subprocess
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import TYPE_CHECKING

from memstore.errors import GitError
from memstore.memory import same_identity

if TYPE_CHECKING:
    import logging


def _log() -> logging.Logger:
    """This module's logger. `logging` loads with the first warning: a command that logs
    none (a `memstore add`) never pays for importing it."""
    import logging

    return logging.getLogger(__name__)


_SEP = "\x1f"
_REC = "\x1e"

Signer = Callable[[bytes], bytes]
"""Signs a commit's text and returns the armored signature (see `signing.signer`)."""


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


def git_identity(repo: Repo) -> str | None:
    """git's `user.name` for this repository, if set."""
    return _git_user(repo)[0]


def author_email(repo: Repo, author: str) -> str:
    """The e-mail to commit as `author`: git's `user.email` when `author` is git's `user.name`
    (#17), else the synthetic `email_for(author)`; another identity never borrows the address."""
    name, email = _git_user(repo)
    if email and same_identity(author, name):
        return email
    return email_for(author)


_ConfigStamp = tuple[int, int, int] | None
# git's user.name and user.email per repository, read once per process: a write forks no git
# for them (#17). A change to the repository's own config file (a stat, no fork) reads them
# again; a change to the global config is seen by the next process.
_git_users: dict[Path, tuple[_ConfigStamp, tuple[str | None, str | None]]] = {}
_git_users_lock = threading.Lock()


def _config_stamp(repo: Repo) -> _ConfigStamp:
    try:
        st = (repo.common_dir / "config").stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _git_user(repo: Repo) -> tuple[str | None, str | None]:
    stamp = _config_stamp(repo)
    with _git_users_lock:
        seen = _git_users.get(repo.top)
        if seen is not None and seen[0] == stamp:
            return seen[1]
    try:
        out = _git(repo, "config", "--get-regexp", r"^user\.(name|email)$")
    except GitError:  # exit 1: neither is set
        out = ""
    found: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if value.strip() and not re.search(r"[<>\n\0]", value):
            found[key.lower()] = value.strip()  # the last one wins, as in `git config --get`
    user = (found.get("user.name"), found.get("user.email"))
    with _git_users_lock:
        _git_users[repo.top] = (stamp, user)
    return user


def hooks_dir(repo: Repo) -> Path:
    """The folder git runs this repository's hooks from: `core.hooksPath` when set, else the
    hooks folder every worktree shares.

    Raises:
        GitError: when git fails.
    """
    return repo.top / _git(repo, "rev-parse", "--git-path", "hooks")


def _run(cwd: Path, args: list[str], env: dict[str, str] | None = None) -> str:
    """Run git in `cwd` and return its output (stripped of one final newline).

    Raises:
        GitError: with git's message when it fails.
    """
    try:
        proc = subprocess.run(
            ["git", *_PLAIN_PATHS, *args],
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
# git still quotes (a quote, a backslash, a control character) are unquoted by `_diff_path`.
_PLAIN_PATHS = ("-c", "core.quotePath=false")


def _git(repo: Repo, *args: str, env: dict[str, str] | None = None) -> str:
    return _run(repo.top, list(args), env)


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


_rel = repo_path


def changed_paths(repo: Repo, under: Path) -> set[str]:
    """Paths under `under` (relative to the repository) that differ from HEAD or are untracked."""
    out = _git(
        repo,
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--",
        _rel(repo, under) or ".",
        env=_READ_ONLY,
    )
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


@dataclass(frozen=True, slots=True)
class Staged:
    """One entry of git's index (what the next commit holds) under a folder."""

    path: str
    """Relative to the repository's top folder."""
    mode: str
    """As git writes it: `100644` or `100755` a file, `120000` a symlink, `160000` a submodule."""
    stage: int
    """0, or 1–3 for the sides of a merge conflict."""
    data: bytes | None
    """The blob's bytes for a file (stage 0); None otherwise."""


def staged(repo: Repo, under: Path) -> list[Staged]:
    """Every index entry under `under`, with the content of each file, as the next commit
    would hold it (the temporary index of `git commit -a` or `git commit <paths>` when a
    hook runs, as git passes it in GIT_INDEX_FILE). Two git processes, whatever the count.

    Raises:
        GitError: when git fails.
    """
    out = _git(repo, "ls-files", "--stage", "-z", "--", _rel(repo, under) or ".", env=_READ_ONLY)
    entries: list[tuple[str, str, str, int]] = []
    for record in out.split("\0"):
        meta, tab, path = record.partition("\t")
        fields = meta.split(" ")
        if not tab or len(fields) != 3 or not fields[2].isdigit():
            continue
        entries.append((path, fields[0], fields[1], int(fields[2])))
    wanted = sorted({sha for _, mode, sha, stage in entries if stage == 0 and mode[:3] == "100"})
    blobs = _cat_blobs(repo, wanted)
    return [
        Staged(path, mode, stage, blobs.get(sha) if stage == 0 and mode[:3] == "100" else None)
        for path, mode, sha, stage in entries
    ]


def read_blobs(repo: Repo, shas: list[str]) -> dict[str, bytes]:
    """Many blobs' bytes through one `git cat-file --batch` (one fork, no round trip each).

    Raises:
        GitError: when git fails.
    """
    return _cat_blobs(repo, shas)


def _cat_blobs(repo: Repo, shas: list[str]) -> dict[str, bytes]:
    """The content of each blob, through one `git cat-file --batch`."""
    if not shas:
        return {}
    try:
        proc = subprocess.run(
            ["git", "cat-file", "--batch"],
            cwd=repo.top,
            input="".join(f"{sha}\n" for sha in shas).encode("ascii"),
            capture_output=True,
            check=False,
        )
    except OSError as e:
        raise GitError(f"cannot run git: {e}") from e
    if proc.returncode != 0:
        raise GitError(f"git cat-file failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
    out, at = proc.stdout, 0
    found: dict[str, bytes] = {}
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) != 3:
            continue  # "<sha> missing": an index naming a blob git lost; its file reads as gone
        size = int(header[2])
        found[header[0].decode("ascii")] = out[at : at + size]
        at += size + 1
    return found


def commit(
    repo: Repo,
    paths: list[Path],
    message: str,
    author: str,
    lock_wait: float = 10.0,
    keep: tuple[int, ...] = (),
    sign: Signer | None = None,
) -> str | None:
    """Commit exactly `paths` (their working-tree content; a missing file is removed) and
    return the new commit's sha, or None when HEAD already holds that content.

    See `commit_files`, which this reads the files for.

    Raises:
        GitError: as `commit_files` does.
    """
    files: dict[str, bytes | None] = {}
    for path in paths:
        try:
            files[repo_path(repo, path)] = path.read_bytes() if path.is_file() else None
        except OSError as e:
            raise GitError(f"cannot read {path} to commit it: {e}") from e
    return commit_files(repo, files, message, author, lock_wait, keep, sign)


def commit_files(
    repo: Repo,
    files: dict[str, bytes | None],
    message: str,
    author: str,
    lock_wait: float = 10.0,
    keep: tuple[int, ...] = (),
    sign: Signer | None = None,
) -> str | None:
    """Commit `files` (repository-relative path: new bytes, or None to remove) on top of HEAD
    as `author`, and return the new commit's sha; None when HEAD already holds that content.
    With `sign`, the commit carries its signature of the commit text in a `gpgsig` header,
    as `git commit -S` writes it.

    The commit is built without git's index: objects are written directly, and HEAD moves by
    `git update-ref HEAD NEW OLD`, git's compare-and-swap, rebuilding on the new HEAD when
    another commit landed first. Nothing else in the repository changes, staged or not. The
    index entries of `files` are then brought in step first, so `git status` stays clean.
    No lock file is ever deleted: a git lock in the way is waited for up to `lock_wait`
    seconds, then named in the error.

    Raises:
        GitError: with git's message, or naming the lock file that stayed in the way.
    """
    for rel in files:
        _check_rel(rel)
    stamp = _stamp(author, author_email(repo, author))
    deadline = time.monotonic() + lock_wait
    blobs = {
        rel: (None if data is None else _write_object(repo, b"blob", data))
        for rel, data in files.items()
    }
    _sync_index(repo, blobs, deadline, keep)
    while True:
        parent = head(repo)
        base = _commit_tree(repo, parent) if parent else None
        tree = _tree_with(repo, base, {tuple(rel.split("/")): sha for rel, sha in blobs.items()})
        if tree == base:
            if parent is not None:
                _log().warning(
                    "%s already committed by someone else; no new commit", ", ".join(files)
                )
            return None
        body = f"tree {tree}\n"
        if parent:
            body += f"parent {parent}\n"
        body += f"author {stamp}\ncommitter {stamp}\n\n{message.rstrip()}\n"
        data = body.encode("utf-8")
        if sign is not None:
            data = _signed(data, sign(data))
        sha = _write_object(repo, b"commit", data)
        if _move_head(repo, sha, parent, message, deadline):
            return sha


def _signed(payload: bytes, signature: bytes) -> bytes:
    """The commit text with `signature` as its `gpgsig` header, after the others: git verifies
    the text with that header taken out, which is `payload` again."""
    headers, _, message = payload.partition(b"\n\n")
    lines = signature.rstrip(b"\n").split(b"\n")
    return headers + b"\ngpgsig " + b"\n ".join(lines) + b"\n\n" + message


_ZERO = "0" * 40
_FILE_MODE = b"100644"
_TREE_MODE = b"40000"
# One reader at a time of the tree cache and of each repository's cat-file pipe.
_objects_lock = threading.RLock()


def _check_rel(rel: str) -> None:
    parts = rel.split("/")
    if not rel or rel.startswith("-") or any(p in ("", ".", "..", ".git") for p in parts):
        raise GitError(f"refusing to commit path {rel!r}")


def _stamp(author: str, email: str) -> str:
    if re.search(r"[<>\n\0]", author):
        raise GitError(f"refusing author name {author!r}")
    offset = time.localtime().tm_gmtoff
    sign = "+" if offset >= 0 else "-"
    zone = f"{sign}{abs(offset) // 3600:02d}{abs(offset) % 3600 // 60:02d}"
    return f"{author} <{email}> {int(time.time())} {zone}"


def _write_object(repo: Repo, kind: bytes, data: bytes) -> str:
    """Store a loose object and return its sha; an object git already has changes nothing.

    Written as git writes one: compressed to a temp file in its folder, created read-only,
    then renamed into place, so a reader never sees half an object.
    """
    raw = b"%s %d\0" % (kind, len(data)) + data
    sha = hashlib.sha1(raw).hexdigest()
    folder = os.path.join(repo.common_dir, "objects", sha[:2])
    path = os.path.join(folder, sha[2:])
    if os.path.exists(path):
        return sha
    # The pid and a counter make the name unique; `tmp_obj_` is the prefix git's own
    # `git gc` removes when a killed writer leaves one.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    while True:
        tmp = os.path.join(folder, f"tmp_obj_{os.getpid()}_{next(_object_names)}")
        try:
            fd = os.open(tmp, flags, 0o444)
            break
        except FileNotFoundError:  # the object's folder is new
            os.makedirs(folder, exist_ok=True)
        except FileExistsError:  # left by a killed process that had this pid
            continue
    try:
        try:
            blob = zlib.compress(raw, 1)
            written = 0
            while written < len(blob):
                written += os.write(fd, blob[written:])
        finally:
            os.close(fd)
        # Over an object another writer stored meanwhile: the same object replaces it.
        os.rename(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return sha


_object_names = itertools.count()


def _read_object(repo: Repo, sha: str) -> tuple[str, bytes]:
    """An object's type and content. A loose object (every one memstore writes) is read
    in-process; a packed one through one long-running `git cat-file --batch` per repository.

    Raises:
        GitError: when the object is missing.
    """
    path = repo.common_dir / "objects" / sha[:2] / sha[2:]
    try:
        raw = zlib.decompress(path.read_bytes())
    except (OSError, zlib.error):
        return _batch(repo).read(sha)
    header, _, data = raw.partition(b"\0")
    return header.split(b" ", 1)[0].decode("ascii"), data


class _Batch:
    """A `git cat-file --batch` process that answers object reads without a fork each."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.proc: subprocess.Popen[bytes] | None = None

    def read(self, sha: str) -> tuple[str, bytes]:
        with _objects_lock:
            for attempt in (1, 2):
                proc = self._started()
                assert proc.stdin is not None and proc.stdout is not None
                try:
                    proc.stdin.write(f"{sha}\n".encode("ascii"))
                    proc.stdin.flush()
                    header = proc.stdout.readline().split()
                    if len(header) == 2 and header[1] == b"missing":
                        raise GitError(f"git object {sha} is missing from {self.repo.common_dir}")
                    if len(header) != 3:
                        raise OSError("cat-file ended")
                    data = proc.stdout.read(int(header[2]))
                    proc.stdout.read(1)
                    return header[1].decode("ascii"), data
                except OSError:
                    self.close()
                    if attempt == 2:
                        raise GitError(f"cannot read git object {sha}") from None
        raise AssertionError("unreachable")

    def _started(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=self.repo.top,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            weakref.finalize(self.repo, _stop, self.proc)
        return self.proc

    def close(self) -> None:
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


_batches: weakref.WeakKeyDictionary[Repo, _Batch] = weakref.WeakKeyDictionary()


def _batch(repo: Repo) -> _Batch:
    with _objects_lock:
        found = _batches.get(repo)
        if found is None:
            found = _batches[repo] = _Batch(repo)
        return found


def _commit_tree(repo: Repo, commit_sha: str) -> str:
    kind, data = _read_object(repo, commit_sha)
    if kind != "commit" or not data.startswith(b"tree "):
        raise GitError(f"{commit_sha} is not a commit")
    return data[5:45].decode("ascii")


def parents(repo: Repo, commit_sha: str) -> list[str]:
    """The parents of a commit, read without running git for a loose commit."""
    kind, data = _read_object(repo, commit_sha)
    if kind != "commit":
        raise GitError(f"{commit_sha} is not a commit")
    found: list[str] = []
    for line in data.split(b"\n"):
        if not line:
            break
        if line.startswith(b"parent "):
            found.append(line[7:].decode("ascii"))
    return found


TreeEntries = dict[bytes, tuple[bytes, bytes]]
"""A tree's entries: name → (mode as git writes it, binary sha), names as raw bytes."""
_trees: dict[str, TreeEntries] = {}
"""Trees read or written lately, by sha: a write changes one path, so its folders are reused."""
_TREES_KEPT = 8


def _tree_entries(repo: Repo, tree_sha: str | None) -> TreeEntries:
    if tree_sha is None:
        return {}
    with _objects_lock:
        cached = _trees.get(tree_sha)
    if cached is not None:
        return dict(cached)
    kind, data = _read_object(repo, tree_sha)
    if kind != "tree":
        raise GitError(f"{tree_sha} is not a tree")
    entries: TreeEntries = {}
    i = 0
    while i < len(data):
        space = data.index(b" ", i)
        nul = data.index(b"\0", space)
        entries[data[space + 1 : nul]] = (data[i:space], data[nul + 1 : nul + 21])
        i = nul + 21
    _remember(tree_sha, entries)
    return dict(entries)


def _remember(tree_sha: str, entries: TreeEntries) -> None:
    with _objects_lock:
        if len(_trees) >= _TREES_KEPT:
            del _trees[next(iter(_trees))]
        _trees[tree_sha] = entries


def _tree_with(
    repo: Repo, base: str | None, changes: dict[tuple[str, ...], str | None]
) -> str | None:
    """The tree `base` with each path set to a blob (or removed); None for an empty tree."""
    entries = _tree_entries(repo, base)
    below: dict[bytes, dict[tuple[str, ...], str | None]] = {}
    for parts, sha in changes.items():
        name = parts[0].encode("utf-8")
        if len(parts) == 1:
            if sha is None:
                entries.pop(name, None)
            else:
                entries[name] = (_FILE_MODE, bytes.fromhex(sha))
        else:
            below.setdefault(name, {})[parts[1:]] = sha
    for name, inner in below.items():
        mode, binsha = entries.get(name, (_TREE_MODE, b""))
        old = binsha.hex() if binsha and mode == _TREE_MODE else None
        sub = _tree_with(repo, old, inner)
        if sub is None:
            entries.pop(name, None)
        else:
            entries[name] = (_TREE_MODE, bytes.fromhex(sub))
    if not entries:
        return None
    # git sorts a tree's entries by name, a folder's name as if it ended with "/".
    ordered = sorted(entries, key=lambda n: n + b"/" if entries[n][0] == _TREE_MODE else n)
    data = b"".join(b"%s %s\0%s" % (entries[n][0], n, entries[n][1]) for n in ordered)
    sha = _write_object(repo, b"tree", data)
    _remember(sha, entries)
    return sha


def _run_git(
    repo: Repo, args: list[str], stdin: bytes | None = None, keep: tuple[int, ...] = ()
) -> tuple[int, str]:
    """Run git in the repository's top folder; (exit code, stderr).

    git runs in a session of its own: a kill aimed at memstore's process group never stops it
    midway, holding a lock file nobody would remove. It inherits the file descriptors `keep`
    (a lifeline: a lock held as long as any git the write started still runs).
    """
    proc = subprocess.run(
        ["git", *args],
        cwd=repo.top,
        input=stdin,
        capture_output=True,
        env={**os.environ, "LC_ALL": "C", "LANGUAGE": "C"},
        check=False,
        start_new_session=True,
        pass_fds=keep,
    )
    return proc.returncode, proc.stderr.decode("utf-8", "replace").strip()


def _sync_index(
    repo: Repo, blobs: dict[str, str | None], deadline: float, keep: tuple[int, ...] = ()
) -> None:
    """Point the index entries of these paths at the new blobs, waiting out `index.lock`:
    in-process when the index is one `_indexed` can rewrite, else by `git update-index`."""
    waited = False
    while True:
        try:
            if _write_index(repo, blobs):
                return
            break
        except FileExistsError:
            waited = _wait_for_lock(repo.git_dir / "index.lock", deadline, waited)
    _update_index(repo, blobs, deadline, keep)


def _update_index(
    repo: Repo, blobs: dict[str, str | None], deadline: float, keep: tuple[int, ...] = ()
) -> None:
    """`_sync_index` by a forked `git update-index --index-info`."""
    # NUL-terminated: a path is taken as it is, whatever characters it holds.
    lines = "".join(
        f"0 {_ZERO}\t{rel}\0" if sha is None else f"100644 {sha}\t{rel}\0"
        for rel, sha in blobs.items()
    )
    waited = False
    while True:
        code, err = _run_git(
            repo,
            ["update-index", "-z", "--add", "--remove", "--index-info"],
            lines.encode("utf-8"),
            keep,
        )
        if code == 0:
            return
        lock = repo.git_dir / "index.lock"
        if "index.lock" not in err and not lock.exists():
            raise GitError(f"git update-index failed: {err}")
        waited = _wait_for_lock(lock, deadline, waited)


INDEX_MARK = "memstore-index"
"""The prefix of the file a writer links to `index.lock` to take it (see `_write_index`)."""
# Extensions a rewrite keeps as they are; the other optional ones (the cache tree, the
# untracked and fsmonitor caches, offset tables) are caches git rebuilds, and are left out.
_KEPT_EXTENSIONS = (b"REUC",)


def _write_index(repo: Repo, blobs: dict[str, str | None]) -> bool:
    """Point the index entries of these paths at the blobs (None: remove), as
    `git update-index --index-info` does, without forking it; False (nothing changed) when
    the index is not one this rewrites (see `_indexed`).

    git's lock protocol is kept: `index.lock` is created exclusively, the new index written
    into it and renamed over `index`. The lock is taken by linking a file named with this
    pid to it, so `release_dead_index_lock` can tell a lock a killed writer left from any
    other by its inode, never by a guess.

    Raises:
        FileExistsError: while another git holds `index.lock`.
    """
    if "GIT_INDEX_FILE" in os.environ or os.environ.get("GIT_DIR"):
        return False
    index, lock = repo.git_dir / "index", repo.git_dir / "index.lock"
    mark = repo.git_dir / f"{INDEX_MARK}.{os.getpid()}.{threading.get_ident()}.tmp"
    fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
    try:
        try:
            os.link(mark, lock)
        except FileExistsError:
            raise
        except OSError:
            return False  # no hard links here: git's own update-index takes the lock
        try:
            parsed = _index_of(repo)
            data = None if parsed is None else _indexed(parsed, blobs)
            if parsed is None or data is None:
                lock.unlink()
                return False
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            lock.replace(index)
            with _last_index_lock:
                _last_index[index] = (data, parsed)
        except BaseException:
            lock.unlink(missing_ok=True)
            raise
    finally:
        os.close(fd)
        mark.unlink(missing_ok=True)
    return True


def _index_of(repo: Repo) -> _Index | None:
    """The repository's index parsed (call with `index.lock` held): the one this process
    wrote last when the file is still that one, else read."""
    path = repo.git_dir / "index"
    try:
        with path.open("rb") as f:
            data, written = f.read(), os.fstat(f.fileno()).st_mtime_ns // 1_000_000_000
    except OSError:
        return None
    with _last_index_lock:
        last = _last_index.pop(path, None)
    if last is not None and last[0] == data:
        return last[1]  # as this process wrote it, racily clean entries smudged then
    if data[:4] != b"DIRC" or data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
        return None
    return _parse_index(data, written)


def release_dead_index_lock(repo: Repo) -> None:
    """Remove the `index.lock` a writer killed inside `_write_index` left, and its mark.

    Only a lock that is the very file (same inode) a dead pid's mark names is removed: git
    never links its lock files, so it is that writer's, and no live process holds it."""
    if not Path("/proc").is_dir():
        return
    lock = repo.git_dir / "index.lock"
    for mark in repo.git_dir.glob(f"{INDEX_MARK}.*.tmp"):
        pid = mark.name.split(".")[1]
        if not pid.isdigit() or Path("/proc", pid).exists():
            continue
        try:
            if os.path.samefile(mark, lock):
                _log().warning("removing %s, left by a killed memstore writer", lock)
                lock.unlink()
        except OSError:
            pass  # no lock, or it went
        mark.unlink(missing_ok=True)


@dataclass(slots=True)
class _Index:
    """A parsed index: its header, each entry's name and bytes (in git's order), and the
    extensions kept."""

    head: bytes
    names: list[bytes]
    raws: list[bytes]
    extensions: list[bytes]


_last_index: dict[Path, tuple[bytes, _Index]] = {}
"""The index this process wrote last, by path, with its bytes: a writer alone on a store
reads back its own index, and need not parse it again."""
_last_index_lock = threading.Lock()


def _parse_index(index: bytes | None, written: int = 0) -> _Index | None:
    """The entries and kept extensions of a version 2 or 3 index; None for one this does not
    rewrite (none yet, a split or sparse index, a required extension, no checksum).

    An entry whose file's time is not older than `written` (the index file's modification
    time, whole seconds) may be "racily clean": the file changed within the tick its stat
    data was taken. It is smudged (size 0), as git does when it rewrites an index, so git
    compares its content again instead of trusting stat data a newer index would vouch for."""
    if index is None or len(index) < 32 or index[-20:] == bytes(20):
        return None
    if hashlib.sha1(index[:-20]).digest() != index[-20:]:
        return None
    extended = index[7] >= 3
    names: list[bytes] = []
    raws: list[bytes] = []
    at = 12
    for _ in range(int.from_bytes(index[8:12], "big")):
        high = index[at + 60]
        start = at + 64 if extended and high & 0x40 else at + 62
        length = (high & 0x0F) << 8 | index[at + 61]
        if length == 0x0FFF:
            length = index.index(b"\0", start) - start
        end = at + ((start - at + length + 8) & ~7)
        names.append(index[start : start + length])
        if int.from_bytes(index[at + 8 : at + 12], "big") >= written:
            raws.append(index[at : at + 36] + bytes(4) + index[at + 40 : end])
        else:
            raws.append(index[at:end])
        at = end
    extensions: list[bytes] = []
    while at < len(index) - 20:
        sig, size = index[at : at + 4], int.from_bytes(index[at + 4 : at + 8], "big")
        if not b"A" <= sig[:1] <= b"Z":
            return None  # required: a split index ("link"), a sparse one ("sdir"), ...
        if sig in _KEPT_EXTENSIONS:
            extensions.append(index[at : at + 8 + size])
        at += 8 + size
    if at != len(index) - 20:
        return None
    return _Index(index[:8], names, raws, extensions)


def _indexed(parsed: _Index, blobs: dict[str, str | None]) -> bytes | None:
    """The index `parsed` with these paths' entries set to the blobs at stage 0 (or
    removed), in git's order and checksummed as git writes it; `parsed` becomes that index.
    None (`parsed` unchanged) when a path's folder is a file in the index or the reverse:
    git's rules for that, not these."""
    names, raws = parsed.names, parsed.raws
    for rel in blobs:
        path = rel.encode("utf-8")
        folders = path.split(b"/")[:-1]
        below = bisect.bisect_left(names, path + b"/")
        if (below < len(names) and names[below].startswith(path + b"/")) or any(
            _has(names, b"/".join(folders[: i + 1])) for i in range(len(folders))
        ):
            return None
    for rel, sha in blobs.items():
        path = rel.encode("utf-8")
        # Every stage of the path goes: a stage-0 entry replaces a conflict's, as in git.
        lo = bisect.bisect_left(names, path)
        hi = bisect.bisect_right(names, path, lo)
        new: list[bytes] = []
        if sha is not None:
            # Stat data left zero, as update-index --index-info leaves it: git compares the
            # content the next time it looks, and records the stat data then.
            raw = (
                bytes(24)
                + (0o100644).to_bytes(4, "big")
                + bytes(12)
                + bytes.fromhex(sha)
                + min(len(path), 0x0FFF).to_bytes(2, "big")
                + path
            )
            new.append(raw + bytes(8 - len(raw) % 8))
        names[lo:hi] = [path] * len(new)
        raws[lo:hi] = new
    body = b"".join([parsed.head, len(raws).to_bytes(4, "big"), *raws, *parsed.extensions])
    return body + hashlib.sha1(body).digest()


def _has(names: list[bytes], name: bytes) -> bool:
    at = bisect.bisect_left(names, name)
    return at < len(names) and names[at] == name


def _move_head(repo: Repo, new: str, old: str | None, message: str, deadline: float) -> bool:
    """Compare-and-swap HEAD from `old` to `new`; False when another commit moved it first."""
    subject = message.splitlines()[0] if message else ""
    waited = False
    while True:
        code, err = _swap(repo, new, old or _ZERO, subject)
        if code == 0:
            return True
        match = _LOCK_RE.search(err)
        if match is not None:
            waited = _wait_for_lock(Path(match.group(1)), deadline, waited)
        elif "but expected" in err or "already exists" in err:
            return False  # HEAD moved: rebuild on top of the new one
        else:
            raise GitError(f"git update-ref failed: {err}")


def _swap(repo: Repo, new: str, old: str, subject: str) -> tuple[int, str]:
    """`git update-ref HEAD NEW OLD` in one transaction of the repository's long-running
    `git update-ref --stdin`; (0, "") when HEAD moved, else (exit code, git's message)."""
    with _objects_lock:
        found = _swappers.get(repo)
        if found is None:
            found = _swappers[repo] = _Swapper(repo)
    return found.swap(new, old, subject)


class _Swapper:
    """A `git update-ref --stdin` process: each swap is one transaction, with no fork.

    git ends the process when a transaction fails (a moved HEAD, a lock in the way); the next
    swap starts another. It runs in a session of its own: a kill of memstore leaves it
    reading end-of-input, and git then aborts the open transaction and removes its locks.
    """

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    def swap(self, new: str, old: str, subject: str) -> tuple[int, str]:
        with self.lock:
            proc = self._started()
            assert proc.stdin is not None and proc.stdout is not None
            # "commit" goes only after "prepare" succeeded, so git holds HEAD's lock from
            # before it may commit until it did: a writer killed before sending "commit" leaves
            # a git that aborts at end of input, and one killed after leaves a git whose lock
            # shows it may still commit (see `settle`).
            request = f"start\nupdate HEAD {new} {old}\nprepare\n"
            try:
                proc.stdin.write(request.encode("ascii"))
                proc.stdin.flush()
                answers = [proc.stdout.readline() for _ in range(2)]
                if answers == [b"start: ok\n", b"prepare: ok\n"]:
                    proc.stdin.write(b"commit\n")
                    proc.stdin.flush()
                    answers.append(proc.stdout.readline())
            except OSError:
                answers = []
            if answers == [b"start: ok\n", b"prepare: ok\n", b"commit: ok\n"]:
                return 0, ""
            return self._ended()

    def _started(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                ["git", "update-ref", "-m", "commit (memstore)", "--stdin"],
                cwd=self.repo.top,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**os.environ, "LC_ALL": "C", "LANGUAGE": "C"},
                start_new_session=True,
            )
            weakref.finalize(self.repo, _stop, self.proc)
        return self.proc

    def _ended(self) -> tuple[int, str]:
        proc, self.proc = self.proc, None
        if proc is None:
            return 1, "git update-ref did not start"
        err = b""
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            if proc.stderr is not None:
                err = proc.stderr.read()
        except OSError:
            pass
        _stop(proc)
        return proc.returncode or 1, err.decode("utf-8", "replace").strip()


_swappers: weakref.WeakKeyDictionary[Repo, _Swapper] = weakref.WeakKeyDictionary()


def _wait_for_lock(lock: Path, deadline: float, waited: bool) -> bool:
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


def settle(repo: Repo, lock_wait: float) -> None:
    """Wait until no git holds the lock of HEAD or of the branch it names: a git a killed
    writer left may be committing, and what HEAD holds is known only once it is done.

    Raises:
        GitError: when a lock stays for `lock_wait` seconds, naming it.
    """
    deadline = time.monotonic() + lock_wait
    locks = [repo.git_dir / "HEAD.lock"]
    try:
        target = (repo.git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        target = ""
    if target.startswith("ref:"):
        locks.append(repo.common_dir / f"{target[4:].strip()}.lock")
    waited = False
    for lock in locks:
        while lock.exists():
            waited = _wait_for_lock(lock, deadline, waited)


def dirty(repo: Repo, paths: list[Path]) -> bool:
    """Whether any of `paths` differs from HEAD (changed, added, removed or untracked), in
    the working tree or in the index (a staged change).

    Compares each file's content and index entry with HEAD's blob, without running git.

    Raises:
        GitError: when a file cannot be read.
    """
    parent = head(repo)
    index = _read_index(repo)
    for path in paths:
        rel = repo_path(repo, path)
        committed = _blob_sha(repo, parent, rel) if parent else None
        staged = _staged(index, rel) if index is not None else ...
        if staged is ... or staged != committed:
            if staged is not ... or _status_dirty(repo, rel):
                return True
        try:
            data = path.read_bytes() if path.is_file() else None
        except OSError as e:
            raise GitError(f"cannot read {path}: {e}") from e
        here = None if data is None else _hash_blob(data)
        # Bytes that differ may still be clean once git's filters ran (a CRLF file under
        # `eol=lf`): only then ask git.
        if here != committed and (data is None or committed is None or _status_dirty(repo, rel)):
            return True
    return False


def _read_index(repo: Repo) -> bytes | None:
    """git's index file, if it is one this module can read (version 2 or 3)."""
    try:
        data = (repo.git_dir / "index").read_bytes()
    except OSError:
        return None
    if len(data) < 12 or data[:4] != b"DIRC" or data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
        return None
    return data


def _staged(index: bytes, rel: str) -> str | None | EllipsisType:
    """The blob sha the index holds for `rel` (stage 0), None when it holds none, or `...`
    when it cannot tell (a conflict, or a match it cannot be sure of)."""
    name = rel.encode("utf-8")
    needle = name + b"\0"
    found: str | None | EllipsisType = None
    at = index.find(needle, 12)
    while at != -1:
        # An entry is 40 bytes of stat data, the 20-byte sha, 2 bytes of flags (the name's
        # length in the low 12 bits), 2 more when the extended bit is set, then the name.
        for flags_at, extended in ((at - 2, False), (at - 4, True)):
            flags = int.from_bytes(index[flags_at : flags_at + 2], "big")
            if (
                flags_at >= 12 + 40
                and bool(flags & 0x4000) == extended
                and flags & 0x0FFF == min(len(name), 0x0FFF)
                and index[at - 1] != ord("/")
            ):
                if flags & 0x3000 or found is not None:
                    return ...  # a merge conflict's stages, or two candidates
                found = index[flags_at - 20 : flags_at].hex()
        at = index.find(needle, at + 1)
    return found


def _status_dirty(repo: Repo, rel: str) -> bool:
    out = _git(repo, "status", "--porcelain=v1", "--untracked-files=all", "--", rel, env=_READ_ONLY)
    return bool(out.strip())


def _hash_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _blob_sha(repo: Repo, commit_sha: str, rel: str) -> str | None:
    tree: str | None = _commit_tree(repo, commit_sha)
    parts = rel.split("/")
    for i, name in enumerate(parts):
        entry = _tree_entries(repo, tree).get(name.encode("utf-8"))
        if entry is None:
            return None
        mode, binsha = entry
        if i == len(parts) - 1:
            return binsha.hex() if mode != _TREE_MODE else None
        if mode != _TREE_MODE:
            return None
        tree = binsha.hex()
    return None


def unstage(repo: Repo, paths: list[Path], lock_wait: float = 10.0) -> None:
    """Reset the index entries of `paths` to HEAD, waiting up to `lock_wait` seconds for a
    git that holds the index; a failure is logged, not raised."""
    parent = head(repo)
    blobs: dict[str, str | None] = {}
    for path in paths:
        rel = repo_path(repo, path)
        blobs[rel] = _blob_sha(repo, parent, rel) if parent else None
    try:
        _sync_index(repo, blobs, time.monotonic() + lock_wait)
    except GitError as e:
        _log().warning("could not unstage %s: %s", paths, e)


def blob(repo: Repo, commit_sha: str, path: Path) -> bytes | None:
    """The exact bytes of `path` at `commit_sha` (a sha or HEAD), or None if it did not exist
    there. Loose objects are read in-process, packed ones through a long-running
    `git cat-file`; only an abbreviated sha or `HEAD~n` runs a git of its own."""
    if commit_sha == "HEAD":
        resolved = head(repo)
        if resolved is None:
            return None
        commit_sha = resolved
    elif not re.fullmatch(r"[0-9a-fA-F]{40}", commit_sha):
        if not re.fullmatch(r"[0-9a-fA-F]{4,40}|HEAD(~\d+)?", commit_sha):
            raise GitError(f"not a commit id: {commit_sha!r}")
        try:
            commit_sha = _git(
                repo, "rev-parse", "--verify", "--quiet", f"{commit_sha}^{{commit}}"
            ).strip()
        except GitError:
            return None
    sha = _blob_sha(repo, commit_sha.lower(), repo_path(repo, path))
    if sha is None:
        return None
    kind, data = _read_object(repo, sha)
    return data if kind == "blob" else None


# Reads must not take git's optional index lock: it would make a concurrent commit fail.
_READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0"}
_LOCK_RE = re.compile(r"Unable to create '([^']+\.lock)'")
LOCK_POLL = 0.02


def log(repo: Repo, path: Path, limit: int | None = None) -> list[Revision]:
    """The commits that touched `path`, newest first, following renames."""
    args = ["--follow", f"--format=%H{_SEP}%an{_SEP}%aI{_SEP}%B{_REC}"]
    if limit is not None:
        args.append(f"-n{limit}")
    try:
        out = _git(repo, "log", *args, "--", _rel(repo, path))
    except GitError as e:
        if "does not have any commits" in str(e):
            return []
        raise
    revisions: list[Revision] = []
    for record in out.split(_REC):
        record = record.strip("\n")
        if not record:
            continue
        sha, author, when, message = record.split(_SEP, 3)
        revisions.append(Revision(sha, author, when, message.strip()))
    return revisions


def show(repo: Repo, commit_sha: str, path: Path) -> str | None:
    """The content of `path` at `commit_sha`, or None if it did not exist there."""
    if not re.fullmatch(r"[0-9a-fA-F]{4,40}|HEAD(~\d+)?", commit_sha):
        raise GitError(f"not a commit id: {commit_sha!r}")
    try:
        return _git(repo, "show", f"{commit_sha}:{_rel(repo, path)}")
    except GitError:
        return None


def confirmations(repo: Repo, store: Path) -> dict[str, Confirmation]:
    """For each file under `store`, the latest commit whose diff set `status: confirmed`.

    Keys are paths relative to the repository root. One `git log -p` over the store.
    """
    try:
        rel = _rel(repo, store)
        out = _git(
            repo,
            "log",
            "--no-renames",
            "--format=" + _REC + "%H" + _SEP + "%an",
            "-p",
            "--unified=0",
            "--",
            rel or ".",
        )
    except GitError as e:
        if "does not have any commits" in str(e):
            return {}
        raise
    found: dict[str, Confirmation] = {}
    for chunk in out.split(_REC):
        header, _, diff = str(chunk).partition("\n")
        sha, _, author = header.partition(_SEP)
        # Each file's section starts at "diff --git"; git log lists newest first, so the first
        # confirmation seen for a file is its latest.
        sections: list[str] = diff.split("\ndiff --git ")[1:] if diff else []
        for section in sections:
            lines = section.splitlines()
            target = _diff_path(lines, "+++ ", "b/")
            if target is None or target in found or "+status: confirmed" not in lines:
                continue
            claims = [x.split(":", 1)[1] for x in lines if x.startswith("+confirmed_by:")]
            claimed = claims[0].strip().strip("'\"") if claims else None
            found[target] = Confirmation(target, sha, author, claimed)
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


_NULL_SHA = re.compile(r"0+")


def store_commits(
    repo: Repo, store: Path, since: str | None = None, until: str | None = None
) -> list[StoreCommit]:
    """The commits that changed files under `store`, oldest first (parents before children),
    after `since` (exclusive) up to `until` (HEAD when None: name the commit you read, so a
    commit landing meanwhile is not taken in). One `git log`, NUL-separated, paths unquoted.

    Raises:
        GitError: when git fails (e.g. `since` is not in this history).
    """
    end = until or head(repo)
    if end is None:
        return []
    rel = _rel(repo, store) if store.absolute() != repo.top else ""
    span = f"{since}..{end}" if since else end
    out = _git(
        repo,
        "-c",
        "core.quotePath=false",
        "log",
        "--reverse",
        "--topo-order",
        "-c",
        "--raw",
        "-z",
        "--no-renames",
        "--no-abbrev",
        "--no-ext-diff",
        "--format=%x1e%H%x00%P%x00%an%x00%cn%x00%ct%x00%B%x00",
        span,
        "--",
        rel or ".",
    )
    commits: list[StoreCommit] = []
    for chunk in out.split("\x1e")[1:]:
        fields = chunk.split("\0")
        if len(fields) < 4:
            continue
        if len(fields) < 6:
            continue
        sha, parents, author, committer, when, message = fields[:6]
        changes: list[PathChange] = []
        tokens = iter(fields[6:])
        for token in tokens:
            meta = token.strip()
            if not meta.startswith(":"):
                continue
            path = next(tokens, "")
            colons = len(meta) - len(meta.lstrip(":"))
            parts = meta[colons:].split()
            blobs = parts[colons + 1 : colons + 1 + colons + 1]
            if len(blobs) != colons + 1:
                continue
            olds = tuple(None if _NULL_SHA.fullmatch(b) else b for b in blobs[:-1])
            after = None if _NULL_SHA.fullmatch(blobs[-1]) else blobs[-1]
            changes.append(PathChange(path, olds, after))
        commits.append(
            StoreCommit(
                sha,
                tuple(parents.split()),
                author,
                committer,
                tuple(changes),
                int(when) if when.isdigit() else 0,
                message.strip(),
            )
        )
    return commits


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
    out = _git(repo, "log", "-1", "--first-parent", f"--before={moment}", "--format=%H %ct", "HEAD")
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
    rel = _rel(repo, store) if store.absolute() != repo.top else ""
    prefix = f"{rel}/" if rel else ""
    args = ["ls-tree", "-r", "-z", "--full-tree", commit_sha]
    out = _git(repo, *args, *(["--", rel] if rel else []))
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
    prefix = _rel(repo, store) if store.absolute() != repo.top else ""
    parts = [p for p in prefix.split("/") if p]
    chain: list[tuple[str, str, str, str, str]] = []
    sha = until
    try:
        while sha != since:
            if len(chain) >= limit:
                return None
            kind, data = _read_object(repo, sha)
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
            old = _subtree(repo, _commit_tree(repo, parent), parts)
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
        entry = _tree_entries(repo, tree).get(name.encode("utf-8"))
        if entry is None or entry[0] != _TREE_MODE:
            return None
        tree = entry[1].hex()
    return tree


def _folder_changes(repo: Repo, old: str | None, new: str | None, prefix: str) -> list[PathChange]:
    """The files directly inside the type folders of two store trees that differ."""
    if old == new:
        return []
    before = _tree_entries(repo, old) if old else {}
    after = _tree_entries(repo, new) if new else {}
    changes: list[PathChange] = []
    lead = f"{prefix}/" if prefix else ""
    for folder in sorted(set(before) | set(after)):
        a, b = before.get(folder), after.get(folder)
        if a == b:
            continue
        files_a = _tree_entries(repo, a[1].hex()) if a and a[0] == _TREE_MODE else {}
        files_b = _tree_entries(repo, b[1].hex()) if b and b[0] == _TREE_MODE else {}
        for name in sorted(set(files_a) | set(files_b)):
            x, y = files_a.get(name), files_b.get(name)
            old_blob = x[1].hex() if x and x[0] != _TREE_MODE else None
            new_blob = y[1].hex() if y and y[0] != _TREE_MODE else None
            if old_blob != new_blob:
                path = f"{lead}{folder.decode('utf-8')}/{name.decode('utf-8')}"
                changes.append(PathChange(path, (old_blob,), new_blob))
    return changes


def shallow_commits(repo: Repo) -> frozenset[str]:
    """The commits whose parents a shallow clone left out (git's `shallow` file), if any."""
    try:
        text = (repo.common_dir / "shallow").read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def read_blob(repo: Repo, sha: str) -> bytes:
    """A blob's bytes, read in-process when loose, else through the long-running cat-file.

    Raises:
        GitError: when there is no such blob.
    """
    kind, data = _read_object(repo, sha)
    if kind != "blob":
        raise GitError(f"{sha} is a {kind}, not a blob")
    return data


def blob_sha(data: bytes) -> str:
    """The sha git gives a blob of `data`."""
    return _hash_blob(data)


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


def head(repo: Repo) -> str | None:
    """The sha of the commit HEAD points at, or None before the first commit.

    Read from git's ref files (loose or packed) without running git.
    """
    ref = "HEAD"
    for _ in range(5):  # a symbolic ref may point at another
        folder = repo.git_dir if ref == "HEAD" else repo.common_dir
        try:
            value = (folder / ref).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            value = _packed_ref(repo, ref) or ""
        except (OSError, UnicodeDecodeError):
            return None
        if value.startswith("ref:"):
            ref = value[4:].strip()
            continue
        return value if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", value) else None
    return None


def _packed_ref(repo: Repo, ref: str) -> str | None:
    try:
        text = (repo.common_dir / "packed-refs").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha
    return None


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
    args.append("--format=" + _REC + "%H" + _SEP + "%an" + _SEP + "%aI" + _SEP + "%s")
    if since_date:
        args.append(f"--since={since_date}")
    if since_commit:
        if not re.fullmatch(r"[0-9a-fA-F]{4,40}", since_commit):
            raise GitError(f"not a commit id: {since_commit!r}")
        args.append(f"{since_commit}..HEAD")
    try:
        out = _git(repo, "log", *args, "--", _rel(repo, store) or ".")
    except GitError as e:
        if "does not have any commits" in str(e):
            return []
        raise
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


def is_ancestor(repo: Repo, older: str, newer: str) -> bool:
    """Whether commit `older` is reachable from commit `newer` (both full shas)."""
    for sha in (older, newer):
        if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
            raise GitError(f"not a full commit id: {sha!r}")
    try:
        _git(repo, "merge-base", "--is-ancestor", older, newer)
    except GitError:
        return False
    return True


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
    out = _git(
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
        f"--format={_REC}%H{_SEP}%an{_SEP}%cn",
        "-p",
        "--unified=0",
        span,
        "--",
        _rel(repo, path),
    )
    lines: list[Added] = []
    commit = Commit("", "", "")
    parents = 0  # 0 outside a hunk; else how many columns of +/- a hunk's lines start with
    for line in out.split("\n"):
        if line.startswith(_REC):
            sha, *names = line[1:].split(_SEP)
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


def attribute(repo: Repo, path: Path, name: str) -> str | None:
    """The value git's attributes give `path` for `name` (e.g. `merge`), or None if unset."""
    out = _git(repo, "check-attr", "-z", name, "--", _rel(repo, path))
    fields = str(out).split("\0")  # path, attribute, value
    value = fields[2] if len(fields) > 2 else ""
    return None if value in ("unspecified", "unset", "") else value


# -- remotes and merges (for `sync`) ----------------------------------------------------------

_NETWORK_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANGUAGE": "C"}
"""git talking to a remote never waits for a password typed at a terminal nobody watches."""


def _check_sha(sha: str) -> None:
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
        raise GitError(f"not a full commit id: {sha!r}")


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


def current_branch(repo: Repo) -> str | None:
    """The branch HEAD is on (`main`), or None when HEAD is detached. Runs no git process."""
    try:
        value = (repo.git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    prefix = "ref: refs/heads/"
    return value[len(prefix) :] if value.startswith(prefix) else None


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
        return _git(repo, "rev-parse", "--verify", "--quiet", f"refs/remotes/{remote}/{branch}")
    except GitError:
        return None


def push_args(remote: str, sha: str, branch: str) -> list[str]:
    """`git push` of one commit to one branch; never forced, so a moved branch refuses it."""
    _check_ref_part(remote, "remote")
    _check_ref_part(branch, "branch")
    _check_sha(sha)
    return ["push", "--porcelain", "--no-verify", remote, f"{sha}:refs/heads/{branch}"]


def remote_url(repo: Repo, remote: str) -> str | None:
    """The URL git fetches `remote` from, or None when there is no such remote."""
    try:
        return _git(repo, "remote", "get-url", "--", remote) or None
    except GitError:
        return None


def merge_base(repo: Repo, one: str, other: str) -> str | None:
    """The best common ancestor of two commits, or None when they share no history."""
    _check_sha(one)
    _check_sha(other)
    try:
        return _git(repo, "merge-base", one, other) or None
    except GitError:
        return None


def tree_blobs(repo: Repo, commit_sha: str, prefix: str) -> dict[str, str]:
    """Every file under `prefix` (repository-relative, "" for all) at a commit: path → blob."""
    _check_sha(commit_sha)
    args = ["ls-tree", "-r", "-z", "--full-tree", commit_sha]
    if prefix:
        args += ["--", prefix.rstrip("/")]
    found: dict[str, str] = {}
    for entry in _git(repo, *args).split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == "blob":
            found[path] = fields[2]
    return found


def changed_between(repo: Repo, old: str, new: str) -> list[str]:
    """The paths that differ between two commits' trees."""
    _check_sha(old)
    _check_sha(new)
    out = _git(repo, "diff", "--name-only", "-z", "--no-renames", old, new)
    return [p for p in out.split("\0") if p]


def last_change(repo: Repo, since: str, until: str, rel: str) -> tuple[str, str] | None:
    """The newest commit in `since..until` that changed `rel`, and its author; None if none."""
    _check_sha(since)
    _check_sha(until)
    _check_rel(rel)
    out = _git(repo, "log", "-1", f"--format=%H{_SEP}%an", f"{since}..{until}", "--", rel)
    sha, _, author = out.partition(_SEP)
    return (sha, author) if sha else None


def write_blob(repo: Repo, data: bytes) -> str:
    """Store `data` as a blob; its sha."""
    return _write_object(repo, b"blob", data)


def build_commit(
    repo: Repo,
    parents: list[str],
    files: dict[str, bytes | None],
    message: str,
    author: str,
    sign: Signer | None = None,
    existing: dict[str, str] | None = None,
) -> str:
    """Write (without moving any ref) a commit whose tree is the first parent's with `files`
    set (None removes one), with `parents`, authored and committed by `author`; its sha.
    `existing` names blobs git already has for some of `files` (path → sha), not written
    again."""
    for rel in files:
        _check_rel(rel)
    for sha in parents:
        _check_sha(sha)
    known = existing or {}
    blobs = {
        tuple(rel.split("/")): (
            None
            if data is None
            else known[rel]
            if rel in known
            else _write_object(repo, b"blob", data)
        )
        for rel, data in files.items()
    }
    base = _commit_tree(repo, parents[0]) if parents else None
    tree = _tree_with(repo, base, blobs) or _write_object(repo, b"tree", b"")
    stamp = _stamp(author, author_email(repo, author))
    body = f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents)
    body += f"author {stamp}\ncommitter {stamp}\n\n{message.rstrip()}\n"
    data = body.encode("utf-8")
    if sign is not None:
        data = _signed(data, sign(data))
    return _write_object(repo, b"commit", data)


def move_to(
    repo: Repo,
    files: dict[str, bytes | None],
    new: str,
    old: str | None,
    lock_wait: float = 10.0,
    keep: tuple[int, ...] = (),
) -> bool:
    """Point the index entries of `files` at their new bytes, then move HEAD from `old` to the
    existing commit `new` (a compare-and-swap); False when HEAD was no longer `old`.

    Raises:
        GitError: with git's message, or naming the lock file that stayed in the way.
    """
    _check_sha(new)
    deadline = time.monotonic() + lock_wait
    # `new`'s tree holds these blobs already (fetched, or written when it was built): only
    # their names are needed here.
    blobs = {rel: (None if data is None else _hash_blob(data)) for rel, data in files.items()}
    for rel in blobs:
        _check_rel(rel)
    if blobs:
        _sync_index(repo, blobs, deadline, keep)
    return _move_head(repo, new, old, f"sync: {new[:10]}", deadline)


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
        *_PLAIN_PATHS,
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
        _stop(proc)
    if finished and code != 0:
        message = err.decode("utf-8", "replace").strip()
        raise GitError(f"git log failed: {message or f'exit {code}'}")


@dataclass(frozen=True, slots=True)
class PathLog:
    """One commit of `path_log`: its sha, its commit time (Unix seconds), the paths changed."""

    sha: str
    at: int
    paths: tuple[str, ...]
