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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import TYPE_CHECKING

from memstore.errors import GitError
from memstore.model.memory import same_identity

if TYPE_CHECKING:
    import logging


def _log() -> logging.Logger:
    """This module's logger. `logging` loads with the first warning: a command that logs
    none (a `memstore add`) never pays for importing it."""
    import logging

    return logging.getLogger(__name__)


SEP = "\x1f"

Signer = Callable[[bytes], bytes]
"""Signs a commit's text and returns the armored signature (see `signing.signer`)."""


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
        out = git(repo, "config", "--get-regexp", r"^user\.(name|email)$")
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
    out = git(repo, "ls-files", "--stage", "-z", "--", _rel(repo, under) or ".", env=_READ_ONLY)
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
        base = commit_tree(repo, parent) if parent else None
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
TREE_MODE = b"40000"
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


def read_object(repo: Repo, sha: str) -> tuple[str, bytes]:
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
            weakref.finalize(self.repo, stop, self.proc)
        return self.proc

    def close(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None


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


_batches: weakref.WeakKeyDictionary[Repo, _Batch] = weakref.WeakKeyDictionary()


def _batch(repo: Repo) -> _Batch:
    with _objects_lock:
        found = _batches.get(repo)
        if found is None:
            found = _batches[repo] = _Batch(repo)
        return found


def commit_tree(repo: Repo, commit_sha: str) -> str:
    """The sha of a commit's tree, read without running git for a loose commit."""
    kind, data = read_object(repo, commit_sha)
    if kind != "commit" or not data.startswith(b"tree "):
        raise GitError(f"{commit_sha} is not a commit")
    return data[5:45].decode("ascii")


def parents(repo: Repo, commit_sha: str) -> list[str]:
    """The parents of a commit, read without running git for a loose commit."""
    kind, data = read_object(repo, commit_sha)
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


def tree_entries(repo: Repo, tree_sha: str | None) -> TreeEntries:
    """A tree's entries (a copy: the caller may change it); none for None."""
    if tree_sha is None:
        return {}
    with _objects_lock:
        cached = _trees.get(tree_sha)
    if cached is not None:
        return dict(cached)
    kind, data = read_object(repo, tree_sha)
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
    entries = tree_entries(repo, base)
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
        mode, binsha = entries.get(name, (TREE_MODE, b""))
        old = binsha.hex() if binsha and mode == TREE_MODE else None
        sub = _tree_with(repo, old, inner)
        if sub is None:
            entries.pop(name, None)
        else:
            entries[name] = (TREE_MODE, bytes.fromhex(sub))
    if not entries:
        return None
    # git sorts a tree's entries by name, a folder's name as if it ended with "/".
    ordered = sorted(entries, key=lambda n: n + b"/" if entries[n][0] == TREE_MODE else n)
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
            weakref.finalize(self.repo, stop, self.proc)
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
        stop(proc)
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
    out = git(repo, "status", "--porcelain=v1", "--untracked-files=all", "--", rel, env=_READ_ONLY)
    return bool(out.strip())


def _hash_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _blob_sha(repo: Repo, commit_sha: str, rel: str) -> str | None:
    tree: str | None = commit_tree(repo, commit_sha)
    parts = rel.split("/")
    for i, name in enumerate(parts):
        entry = tree_entries(repo, tree).get(name.encode("utf-8"))
        if entry is None:
            return None
        mode, binsha = entry
        if i == len(parts) - 1:
            return binsha.hex() if mode != TREE_MODE else None
        if mode != TREE_MODE:
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
            commit_sha = git(
                repo, "rev-parse", "--verify", "--quiet", f"{commit_sha}^{{commit}}"
            ).strip()
        except GitError:
            return None
    sha = _blob_sha(repo, commit_sha.lower(), repo_path(repo, path))
    if sha is None:
        return None
    kind, data = read_object(repo, sha)
    return data if kind == "blob" else None


# Reads must not take git's optional index lock: it would make a concurrent commit fail.
_READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0"}
_LOCK_RE = re.compile(r"Unable to create '([^']+\.lock)'")
LOCK_POLL = 0.02


def read_blob(repo: Repo, sha: str) -> bytes:
    """A blob's bytes, read in-process when loose, else through the long-running cat-file.

    Raises:
        GitError: when there is no such blob.
    """
    kind, data = read_object(repo, sha)
    if kind != "blob":
        raise GitError(f"{sha} is a {kind}, not a blob")
    return data


def blob_sha(data: bytes) -> str:
    """The sha git gives a blob of `data`."""
    return _hash_blob(data)


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


def is_ancestor(repo: Repo, older: str, newer: str) -> bool:
    """Whether commit `older` is reachable from commit `newer` (both full shas)."""
    for sha in (older, newer):
        if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
            raise GitError(f"not a full commit id: {sha!r}")
    try:
        git(repo, "merge-base", "--is-ancestor", older, newer)
    except GitError:
        return False
    return True


def attribute(repo: Repo, path: Path, name: str) -> str | None:
    """The value git's attributes give `path` for `name` (e.g. `merge`), or None if unset."""
    out = git(repo, "check-attr", "-z", name, "--", _rel(repo, path))
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
        return git(repo, "rev-parse", "--verify", "--quiet", f"refs/remotes/{remote}/{branch}")
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
        return git(repo, "remote", "get-url", "--", remote) or None
    except GitError:
        return None


def merge_base(repo: Repo, one: str, other: str) -> str | None:
    """The best common ancestor of two commits, or None when they share no history."""
    _check_sha(one)
    _check_sha(other)
    try:
        return git(repo, "merge-base", one, other) or None
    except GitError:
        return None


def tree_blobs(repo: Repo, commit_sha: str, prefix: str) -> dict[str, str]:
    """Every file under `prefix` (repository-relative, "" for all) at a commit: path → blob."""
    _check_sha(commit_sha)
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
    _check_sha(old)
    _check_sha(new)
    out = git(repo, "diff", "--name-only", "-z", "--no-renames", old, new)
    return [p for p in out.split("\0") if p]


def last_change(repo: Repo, since: str, until: str, rel: str) -> tuple[str, str] | None:
    """The newest commit in `since..until` that changed `rel`, and its author; None if none."""
    _check_sha(since)
    _check_sha(until)
    _check_rel(rel)
    out = git(repo, "log", "-1", f"--format=%H{SEP}%an", f"{since}..{until}", "--", rel)
    sha, _, author = out.partition(SEP)
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
    base = commit_tree(repo, parents[0]) if parents else None
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
