"""git's objects: blobs, trees and commits written as loose objects in-process (and packed by
git in the background once there are many), and read in-process when loose, through one
long-running `git cat-file --batch` when packed."""

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
from dataclasses import dataclass
from pathlib import Path

from memstore.errors import GitError
from memstore.git.refs import head
from memstore.git.repository import Repo, git, repo_path, stop

# One reader at a time of the tree cache and of each repository's cat-file pipe.
_objects_lock = threading.RLock()


def write_object(repo: Repo, kind: bytes, data: bytes) -> str:
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
            blob = zlib.compress(raw, 0 if len(raw) > STORED_ABOVE else 1)
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

STORED_ABOVE = 64 * 1024
"""An object larger than this (a folder's tree of a few thousand memories) is written
uncompressed (zlib's level 0, as git's `core.looseCompression=0` writes objects): a
12,000-entry tree takes 10 ms to compress for a third of its size, and a loose object lives
only until git packs it."""


GC_AUTO = 6700
"""git's default `gc.auto`: about this many loose objects make `git gc --auto` pack them."""
GC_ASKED = "gc-asked"
"""A stamp file (in the store's cache folder) of the last time a write started a packing."""
GC_EVERY = 600.0
"""At most one packing is started per this many seconds (git may decline one: its
`gc.auto` set higher or to 0, a `gc.log` of a failed run)."""


def pack_when_due(repo: Repo, cache: Path) -> bool:
    """Start `git gc --auto` in the background when the loose objects are about as many as
    git packs at (True when it was started); never waits for it.

    The count is git's own estimate: the objects in one of the 256 fan-out folders
    (`objects/17`), times 256, one folder listing. git then checks again with the
    repository's own `gc.auto` and packs in the background (`gc.autoDetach`), under its
    `gc.pid` lock; a write meanwhile reads a packed object through `git cat-file`."""
    try:
        found = len(os.listdir(repo.common_dir / "objects" / "17"))
    except OSError:
        return False
    if found * 256 <= GC_AUTO:
        return False
    stamp = cache / GC_ASKED
    try:
        if time.time() - stamp.stat().st_mtime < GC_EVERY:
            return False
    except OSError:
        pass
    _packers[:] = [proc for proc in _packers if proc.poll() is None]  # reap those done
    try:
        stamp.touch()
        proc = subprocess.Popen(
            ["git", "gc", "--auto", "--quiet"],
            cwd=repo.top,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return False
    _packers.append(proc)
    return True


_packers: list[subprocess.Popen[bytes]] = []
"""The packings this process started, until it sees them end."""


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
_TREE_ENTRY = re.compile(rb"([0-7]+) ([^\0]+)\0(.{20})", re.S)
"""A tree's entry: mode, a space, the name, a NUL and the 20-byte sha."""
_TREE = re.compile(rb"(?:[0-7]+ [^\0]+\0.{20})*", re.S)
"""A whole tree: its entries, one after another."""


def tree_entries(repo: Repo, tree_sha: str | None) -> TreeEntries:
    """A tree's entries (a copy: the caller may change it); none for None."""
    if tree_sha is None:
        return {}
    with _objects_lock:
        cached = _trees.get(tree_sha)
        built = _built.get(tree_sha) if cached is None else None
    if cached is not None:
        return dict(cached)
    if built is not None:  # written by this process: no need to read it back
        _remember(tree_sha, entries := built.entries())
        return dict(entries)
    kind, data = read_object(repo, tree_sha)
    if kind != "tree":
        raise GitError(f"{tree_sha} is not a tree")
    # Read in C: a sixth of a loop's time over a folder of 11,000 files.
    if _TREE.fullmatch(data) is None:
        raise GitError(f"tree {tree_sha} is malformed")
    found = _TREE_ENTRY.findall(data)
    entries: TreeEntries = {name: (mode, sha) for mode, name, sha in found}
    _remember(tree_sha, entries)
    return dict(entries)


def _remember(tree_sha: str, entries: TreeEntries) -> None:
    with _objects_lock:
        if len(_trees) >= _TREES_KEPT:
            del _trees[next(iter(_trees))]
        _trees[tree_sha] = entries


_FILE_MODE = b"100644"
TREE_MODE = b"40000"


@dataclass(frozen=True, slots=True)
class _Tree:
    """A tree object's bytes with each entry's sort key (its name, a folder's with `/` after
    it, as git orders them) and where it ends in them: a change is spliced into the bytes,
    not written out again entry by entry."""

    data: bytes
    keys: list[bytes]
    ends: list[int]

    @staticmethod
    def parse(data: bytes) -> _Tree:
        keys: list[bytes] = []
        ends: list[int] = []
        i = 0
        while i < len(data):
            space = data.index(b" ", i)
            nul = data.index(b"\0", space)
            name = data[space + 1 : nul]
            keys.append(name + b"/" if data[i:space] == TREE_MODE else name)
            i = nul + 21
            ends.append(i)
        return _Tree(data, keys, ends)

    def find(self, name: bytes) -> int | None:
        for key in (name, name + b"/"):
            j = bisect.bisect_left(self.keys, key)
            if j < len(self.keys) and self.keys[j] == key:
                return j
        return None

    def entry(self, j: int) -> tuple[bytes, bytes]:
        """Entry `j`'s mode and binary sha."""
        start = self.ends[j - 1] if j else 0
        end = self.ends[j]
        return self.data[start : self.data.index(b" ", start)], self.data[end - 20 : end]

    def put(self, name: bytes, mode: bytes | None, binsha: bytes = b"") -> _Tree:
        """This tree with `name` set to (mode, binsha), or removed when `mode` is None."""
        keys, ends, data = self.keys, self.ends, self.data
        j = self.find(name)
        if j is not None:
            start = ends[j - 1] if j else 0
            cut = ends[j] - start
            data = data[:start] + data[ends[j] :]
            keys = keys[:j] + keys[j + 1 :]
            ends = ends[:j] + [e - cut for e in ends[j + 1 :]]
        if mode is None:
            return _Tree(data, keys, ends)
        key = name + b"/" if mode == TREE_MODE else name
        j = bisect.bisect_left(keys, key)
        start = ends[j - 1] if j else 0
        raw = b"%s %s\0%s" % (mode, name, binsha)
        return _Tree(
            data[:start] + raw + data[start:],
            [*keys[:j], key, *keys[j:]],
            [*ends[:j], start + len(raw), *(e + len(raw) for e in ends[j:])],
        )

    def entries(self) -> TreeEntries:
        found: TreeEntries = {}
        for j, key in enumerate(self.keys):
            mode, binsha = self.entry(j)
            found[key[:-1] if mode == TREE_MODE else key] = (mode, binsha)
        return found


_built: dict[str, _Tree] = {}
"""Trees this process built or spliced lately, by sha (the next write's base)."""


def _tree_of(repo: Repo, tree_sha: str | None) -> _Tree:
    if tree_sha is None:
        return _Tree(b"", [], [])
    with _objects_lock:
        found = _built.get(tree_sha)
    if found is not None:
        return found
    kind, data = read_object(repo, tree_sha)
    if kind != "tree":
        raise GitError(f"{tree_sha} is not a tree")
    found = _Tree.parse(data)
    _keep_built(tree_sha, found)
    return found


def _keep_built(tree_sha: str, tree: _Tree) -> None:
    with _objects_lock:
        if len(_built) >= _TREES_KEPT:
            del _built[next(iter(_built))]
        _built[tree_sha] = tree


def tree_with(
    repo: Repo, base: str | None, changes: dict[tuple[str, ...], str | None]
) -> str | None:
    """The tree `base` with each path set to a blob (or removed); None for an empty tree.

    Each changed entry is spliced into the base's bytes (kept in order as git sorts them), so
    a folder of 10,000 files costs a copy of its bytes and a compression, not a sort."""
    tree = _tree_of(repo, base)
    below: dict[bytes, dict[tuple[str, ...], str | None]] = {}
    for parts, sha in changes.items():
        name = parts[0].encode("utf-8")
        if len(parts) == 1:
            tree = tree.put(name, None if sha is None else _FILE_MODE, bytes.fromhex(sha or ""))
        else:
            below.setdefault(name, {})[parts[1:]] = sha
    for name, inner in below.items():
        j = tree.find(name)
        mode, binsha = tree.entry(j) if j is not None else (TREE_MODE, b"")
        old = binsha.hex() if binsha and mode == TREE_MODE else None
        sub = tree_with(repo, old, inner)
        tree = tree.put(name, None if sub is None else TREE_MODE, bytes.fromhex(sub or ""))
    if not tree.keys:
        return None
    sha = write_object(repo, b"tree", tree.data)
    _keep_built(sha, tree)
    return sha


def write_blob(repo: Repo, data: bytes) -> str:
    """Store `data` as a blob; its sha."""
    return write_object(repo, b"blob", data)


def blob_sha(data: bytes) -> str:
    """The sha git gives a blob of `data`."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def read_blob(repo: Repo, sha: str) -> bytes:
    """A blob's bytes, read in-process when loose, else through the long-running cat-file.

    Raises:
        GitError: when there is no such blob.
    """
    kind, data = read_object(repo, sha)
    if kind != "blob":
        raise GitError(f"{sha} is a {kind}, not a blob")
    return data


def read_blobs(repo: Repo, shas: list[str]) -> dict[str, bytes]:
    """Many blobs' bytes through one `git cat-file --batch` (one fork, no round trip each).

    Raises:
        GitError: when git fails.
    """
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
    sha = blob_at(repo, commit_sha.lower(), repo_path(repo, path))
    if sha is None:
        return None
    kind, data = read_object(repo, sha)
    return data if kind == "blob" else None


def blob_at(repo: Repo, commit_sha: str, rel: str) -> str | None:
    """The sha of the blob at `rel` (repository-relative) in a commit's tree, or None when
    the commit holds no file there. Runs no git for loose objects."""
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
