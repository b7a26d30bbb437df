"""git's index file: its lock held across a commit as git holds it, its entries brought in
step with the commit (rewritten in-process, else by `git update-index` on a copy), what it
stages, and whether a path differs from HEAD.

One module for one file format: the parse, git's racily-clean rule and the rewrite share the
entries' layout and the lock, and splitting them would pass that layout between modules."""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import re
import stat
import struct
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import EllipsisType
from typing import TYPE_CHECKING, Any

from memstore.errors import GitError
from memstore.git.objects import blob_at, blob_sha, read_blobs
from memstore.git.refs import ZERO, head
from memstore.git.repository import READ_ONLY, Repo, git, repo_path, run_git, wait_for_lock

if TYPE_CHECKING:
    import logging


def _log() -> logging.Logger:
    """This module's logger. `logging` loads with the first warning: a command that logs
    none (a `memstore add`) never pays for importing it."""
    import logging

    return logging.getLogger(__name__)


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
    out = git(repo, "ls-files", "--stage", "-z", "--", repo_path(repo, under) or ".", env=READ_ONLY)
    entries: list[tuple[str, str, str, int]] = []
    for record in out.split("\0"):
        meta, tab, path = record.partition("\t")
        fields = meta.split(" ")
        if not tab or len(fields) != 3 or not fields[2].isdigit():
            continue
        entries.append((path, fields[0], fields[1], int(fields[2])))
    wanted = sorted({sha for _, mode, sha, stage in entries if stage == 0 and mode[:3] == "100"})
    blobs = read_blobs(repo, wanted)
    return [
        Staged(path, mode, stage, blobs.get(sha) if stage == 0 and mode[:3] == "100" else None)
        for path, mode, sha, stage in entries
    ]


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
        committed = blob_at(repo, parent, rel) if parent else None
        staged = _staged(index, rel) if index is not None else ...
        if staged is ... or staged != committed:
            if staged is not ... or _status_dirty(repo, rel):
                return True
        try:
            data = path.read_bytes() if path.is_file() else None
        except OSError as e:
            raise GitError(f"cannot read {path}: {e}") from e
        here = None if data is None else blob_sha(data)
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
    out = git(repo, "status", "--porcelain=v1", "--untracked-files=all", "--", rel, env=READ_ONLY)
    return bool(out.strip())


def unstage(repo: Repo, paths: list[Path], lock_wait: float = 10.0) -> None:
    """Reset the index entries of `paths` to HEAD, waiting up to `lock_wait` seconds for a
    git that holds the index; a failure is logged, not raised."""
    parent = head(repo)
    blobs: dict[str, str | None] = {}
    for path in paths:
        rel = repo_path(repo, path)
        blobs[rel] = blob_at(repo, parent, rel) if parent else None
    try:
        sync_index(repo, blobs, time.monotonic() + lock_wait)
    except (GitError, OSError) as e:
        _log().warning("could not unstage %s: %s", paths, e)


def sync_index(
    repo: Repo, blobs: dict[str, str | None], deadline: float, keep: tuple[int, ...] = ()
) -> None:
    """Point the index entries of these paths at the blobs (None: remove), under git's
    `index.lock`, waiting out a git that holds it until `deadline`."""
    with hold(repo, deadline) as index:
        index.stage(blobs, keep)
        index.commit()


INDEX_MARK = "memstore-index"
"""The prefix of the file a writer links to `index.lock` to take it (see `hold`)."""


class IndexLock:
    """git's `index.lock`, held: what a commit writes as the next index goes into it, and
    `commit` renames it over the index, as git does (see `hold`)."""

    def __init__(self, repo: Repo, fd: int | None, mark: Path | None, deadline: float) -> None:
        self.repo = repo
        self.deadline = deadline
        self.fd = fd
        """The lock file's descriptor; None when git's environment names another index
        (GIT_INDEX_FILE or GIT_DIR): then nothing is held, and `stage` runs git's own
        `update-index`, which takes that index's lock for itself."""
        self.mark = mark
        """This writer's name for the lock file (None where hard links cannot be made)."""
        self.lock = repo.git_dir / "index.lock"
        self.staged: _Written | None = None
        self.recorded: dict[str, str | None] = {}
        """memstore's last staged entries with this write's, kept at `commit` (see `_lost`)."""
        self.done = False
        self.placed = fd is None
        """Whether the index file may differ from what it was (a staged index put in place,
        or, with nothing held, `update-index` run on it)."""

    @property
    def held(self) -> bool:
        return self.fd is not None

    def stage(self, blobs: dict[str, str | None], keep: tuple[int, ...] = ()) -> None:
        """Write into the lock the index with these paths' entries pointing at the blobs
        (None: removed), as `git update-index --index-info` would; `commit` puts it in place.
        The index is read under the lock, so no other git's change to it is lost.

        Raises:
            GitError: when git cannot rewrite an index of a form this does not read.
            OSError: when the lock file cannot be written (a full disk).
        """
        if self.fd is None:
            _update_index(self.repo, blobs, self.deadline, keep)
            return
        parsed = _index_of(self.repo)
        recent = _recent(self.repo)
        if parsed is not None:
            # A stale index another git wrote back over this one's last writes (see `_lost`).
            blobs = {**_lost(self.repo, parsed, recent), **blobs}
        parts = None if parsed is None else _indexed(parsed, blobs, self.repo.top)
        if parts is None:
            parsed, parts = None, [_indexed_by_git(self.repo, blobs, keep)]
        os.ftruncate(self.fd, 0)
        size, digest = _write_parts(self.fd, parts, checksum=parsed is not None)
        self.staged = _Written(size, digest, parsed)
        self.recorded = {**recent, **blobs}

    def commit(self) -> None:
        """Put the staged index in place (renamed over `index`) and let the lock go; with
        nothing staged, just let it go.

        Raises:
            OSError: when the rename fails; the lock is let go, the index left as it was.
        """
        if self.fd is None or self.done:
            return
        self.done = True
        try:
            if self.staged is not None:
                _keep_recent(self.repo, self.recorded)  # under the lock, as the index
                self.lock.replace(self.repo.git_dir / "index")
                self.placed = True
                if self.staged.parsed is not None:
                    with _last_index_lock:
                        _last_index[self.repo.git_dir / "index"] = self.staged
            else:
                self.lock.unlink(missing_ok=True)
        except BaseException:
            self.lock.unlink(missing_ok=True)
            raise
        finally:
            self._close()

    def rollback(self) -> None:
        """Let the lock go, the index unchanged."""
        if self.fd is None or self.done:
            return
        self.done = True
        try:
            self.lock.unlink(missing_ok=True)
        finally:
            self._close()

    def _close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        if self.mark is not None:
            self.mark.unlink(missing_ok=True)


@contextmanager
def hold(repo: Repo, deadline: float) -> Generator[IndexLock]:
    """Hold git's `index.lock` (waiting out a git that holds it until `deadline`) for as long
    as the block runs, as `git commit` holds it from staging until HEAD moved and the new
    index is in place: no other git reads a half-made change as staged, or writes an index
    over it. Left without `commit`, the lock is let go and the index is unchanged.

    The lock is created exclusively, as git creates it: by linking to it a file named with
    this pid (`link` fails when the lock exists, as `O_EXCL` does), so that
    `release_dead_index_lock` can tell a lock a killed writer left from any other by its
    inode, never by a guess; where hard links cannot be made, with `O_CREAT | O_EXCL`.

    Raises:
        GitError: naming the lock when it stays in the way until `deadline`.
        OSError: when the lock cannot be created (a full disk, a read-only folder).
    """
    if "GIT_INDEX_FILE" in os.environ or os.environ.get("GIT_DIR"):
        index = IndexLock(repo, None, None, deadline)
    else:
        index = _take(repo, deadline)
    try:
        yield index
    finally:
        index.rollback()


def _take(repo: Repo, deadline: float) -> IndexLock:
    lock = repo.git_dir / "index.lock"
    mark = repo.git_dir / f"{INDEX_MARK}.{os.getpid()}.{threading.get_ident()}.tmp"
    waited = False
    while True:
        fd = os.open(mark, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
        try:
            os.link(mark, lock)
            return IndexLock(repo, fd, mark, deadline)
        except FileExistsError:
            os.close(fd)
            mark.unlink(missing_ok=True)
        except OSError:  # no hard links on this file system: the lock is created as git does
            os.close(fd)
            mark.unlink(missing_ok=True)
            try:
                flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                return IndexLock(repo, os.open(lock, flags, 0o666), None, deadline)
            except FileExistsError:
                pass
        waited = wait_for_lock(lock, deadline, waited)


def _update_index(
    repo: Repo, blobs: dict[str, str | None], deadline: float, keep: tuple[int, ...] = ()
) -> None:
    """`IndexLock.stage` by a forked `git update-index --index-info`, on the index git's
    environment names (it takes that index's lock itself, which is waited out)."""
    waited = False
    while True:
        args = ["update-index", "-z", "--add", "--remove", "--index-info"]
        code, err = run_git(repo, args, _info(blobs), keep)
        if code == 0:
            return
        match = re.search(r"'([^']+\.lock)'", err)
        if match is None or "exists" not in err:
            raise GitError(f"git update-index failed: {err}")
        waited = wait_for_lock(Path(match.group(1)), deadline, waited)


def _info(blobs: dict[str, str | None]) -> bytes:
    # NUL-terminated: a path is taken as it is, whatever characters it holds.
    return "".join(
        f"0 {ZERO}\t{rel}\0" if sha is None else f"100644 {sha}\t{rel}\0"
        for rel, sha in blobs.items()
    ).encode("utf-8")


def _indexed_by_git(repo: Repo, blobs: dict[str, str | None], keep: tuple[int, ...]) -> bytes:
    """The index with these entries, for an index in a form `_indexed` does not rewrite
    (version 4, split, sparse): `git update-index` runs on a copy of it (GIT_INDEX_FILE),
    whose bytes are returned; the real index stays locked meanwhile.

    Raises:
        GitError: when git fails.
    """
    copy = repo.git_dir / f"{INDEX_MARK}.{os.getpid()}.{threading.get_ident()}.next.tmp"
    import shutil  # here: only an index of a rarer form needs it, and every write would pay

    try:
        try:
            shutil.copyfile(repo.git_dir / "index", copy)
        except FileNotFoundError:
            copy.unlink(missing_ok=True)
        code, err = run_git(
            repo,
            ["update-index", "-z", "--add", "--remove", "--index-info"],
            _info(blobs),
            keep,
            env={"GIT_INDEX_FILE": str(copy)},
        )
        if code != 0:
            raise GitError(f"git update-index failed: {err}")
        return copy.read_bytes()
    finally:
        copy.unlink(missing_ok=True)
        Path(f"{copy}.lock").unlink(missing_ok=True)


# Extensions a rewrite keeps as they are; the other optional ones (the cache tree, the
# untracked and fsmonitor caches, offset tables) are caches git rebuilds, and are left out.
_KEPT_EXTENSIONS = (b"REUC",)


def _index_of(repo: Repo) -> _Index | None:
    """The repository's index parsed (call with `index.lock` held): the one this process
    wrote last when the file is still that one, else read.

    The file is that one when its size and trailing checksum (git's SHA-1 of everything
    before it) are those written: two reads of a few bytes, not of the whole index."""
    path = repo.git_dir / "index"
    with _last_index_lock:
        last = _last_index.pop(path, None)
    try:
        with path.open("rb") as f:
            st = os.fstat(f.fileno())
            if last is not None and last.parsed is not None and st.st_size == last.size:
                f.seek(-20, os.SEEK_END)
                if f.read(20) == last.digest:
                    # As this process wrote it: racily clean entries smudged then, and
                    # those it gave stat data checked now.
                    last.parsed.smudge_racy(st.st_mtime_ns // 1_000_000_000, repo.top)
                    return last.parsed
                f.seek(0)
            data, written = f.read(), st.st_mtime_ns // 1_000_000_000
    except OSError:
        return None
    if data[:4] != b"DIRC" or data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
        return None
    return _parse_index(data, written, repo.top)


def release_dead_index_lock(repo: Repo) -> None:
    """Remove the `index.lock` a writer killed while it held it (see `hold`) left, and its
    mark.

    Only a lock that is the very file (same inode) a dead pid's mark names is removed: git
    never links its lock files, so it is that writer's, and no live process holds it."""
    if not Path("/proc").is_dir():
        return
    lock = repo.git_dir / "index.lock"
    try:
        names = os.listdir(repo.git_dir)  # each write looks: a listing, not a glob's matching
    except OSError:
        return
    for name in names:
        if not (name.startswith(f"{INDEX_MARK}.") and name.endswith(".tmp")):
            continue
        mark = repo.git_dir / name
        pid = name.split(".")[1]
        if not pid.isdigit() or Path("/proc", pid).exists():
            continue
        try:
            if os.path.samefile(mark, lock):
                _log().warning("removing %s, left by a killed memstore writer", lock)
                lock.unlink()
        except OSError:
            pass  # no lock, or it went
        mark.unlink(missing_ok=True)


_BLOCK = 512
"""Entries a block of a parsed index holds (up to twice as many after insertions): a write
joins again only the block it changes, and writes the others' bytes as they are."""


@dataclass(slots=True)
class _Block:
    """A run of consecutive index entries: their bytes as the file holds them, and where each
    one ends in them."""

    data: bytes
    ends: list[int]

    def raw(self, j: int) -> bytes:
        return self.data[self.ends[j - 1] if j else 0 : self.ends[j]]

    def replace(self, a: int, z: int, new: list[bytes]) -> None:
        """Entries a..z (z excluded) replaced by `new`."""
        ends = self.ends
        lo = ends[a - 1] if a else 0
        hi = ends[z - 1] if z else 0
        joined = b"".join(new)
        self.data = self.data[:lo] + joined + self.data[hi:]
        added: list[int] = []
        at = lo
        for raw in new:
            at += len(raw)
            added.append(at)
        shift = len(joined) - (hi - lo)
        ends[a:] = added + [e + shift for e in ends[z:]]

    def split(self) -> _Block:
        """Keep the first half; return the second as a block of its own."""
        half = len(self.ends) // 2
        cut = self.ends[half - 1]
        second = _Block(self.data[cut:], [e - cut for e in self.ends[half:]])
        self.data, self.ends = self.data[:cut], self.ends[:half]
        return second


@dataclass(slots=True)
class _Index:
    """A parsed index: its header, each entry's name (in git's order) and its bytes in blocks,
    and the extensions kept."""

    head: bytes
    names: list[bytes]
    blocks: list[_Block]
    starts: list[int]
    """The position of each block's first entry among all the entries."""
    extensions: list[bytes]
    fresh: dict[bytes, int] = field(default_factory=dict[bytes, int])
    """The entries this process gave stat data, by name, with their files' times (whole
    seconds): one not older than the index file written after it is racily clean, and is
    smudged before this index is written again (`smudge_racy`), as git does."""

    def smudge_racy(self, written: int, top: Path) -> None:
        """Of the `fresh` entries whose time is not older than `written` (the index file's
        time: racily clean, their stat data cannot tell an edit made within that second),
        smudge (size 0) those whose file no longer holds their blob, so git compares it, as
        git does when it writes an index; the rest stay fresh for the next index. Older
        ones are safe from here on."""
        kept: dict[bytes, int] = {}
        for name, seconds in self.fresh.items():
            if seconds < written:
                continue
            at = bisect.bisect_left(self.names, name)
            if at >= len(self.names) or self.names[at] != name:
                continue
            raw = self.raw(at)
            try:
                same = blob_sha((top / name.decode("utf-8")).read_bytes()) == raw[40:60].hex()
            except (OSError, UnicodeDecodeError):
                same = False
            if same:
                kept[name] = seconds
            else:
                self.splice(at, at + 1, name, [raw[:36] + bytes(4) + raw[40:]])
        self.fresh = kept

    def block_of(self, i: int) -> int:
        return max(bisect.bisect_right(self.starts, i) - 1, 0)

    def raw(self, i: int) -> bytes:
        k = self.block_of(i)
        return self.blocks[k].raw(i - self.starts[k])

    def splice(self, lo: int, hi: int, path: bytes, new: list[bytes]) -> None:
        """Entries lo..hi (hi excluded) replaced by `new`, entries of `path`."""
        self.names[lo:hi] = [path] * len(new)
        blocks, starts = self.blocks, self.starts
        while hi > lo:
            k = self.block_of(hi - 1)
            a = max(lo, starts[k])
            blocks[k].replace(a - starts[k], hi - starts[k], [])
            self._moved(k, a - hi)
            hi = a
            if not blocks[k].ends and len(blocks) > 1:
                del blocks[k], starts[k]
        if new:
            k = self.block_of(lo)
            j = lo - starts[k]
            blocks[k].replace(j, j, new)
            self._moved(k, len(new))
            if len(blocks[k].ends) > 2 * _BLOCK:
                blocks.insert(k + 1, blocks[k].split())
                starts.insert(k + 1, starts[k] + len(blocks[k].ends))

    def _moved(self, k: int, by: int) -> None:
        starts = self.starts
        for i in range(k + 1, len(starts)):
            starts[i] += by

    def parts(self) -> list[bytes]:
        """The index file's bytes but its checksum, in pieces."""
        count = len(self.names).to_bytes(4, "big")
        return [self.head, count, *(b.data for b in self.blocks), *self.extensions]


@dataclass(frozen=True, slots=True)
class _Written:
    """An index this process wrote: its size and trailing checksum, and its entries parsed
    (None for one git rewrote)."""

    size: int
    digest: bytes
    parsed: _Index | None


def _write_parts(fd: int, parts: list[bytes], checksum: bool) -> tuple[int, bytes]:
    """Write `parts` at the start of `fd`, then their SHA-1 when `checksum` (an index's
    trailer); the bytes written and the file's last 20 bytes. Written as they are, in one
    system call per 512 pieces: no copy of the whole index is made."""
    if checksum:
        hasher = hashlib.sha1()
        for part in parts:
            hasher.update(part)
        parts = [*parts, hasher.digest()]
    at = 0
    for first in range(0, len(parts), 512):
        chunk: list[bytes | memoryview] = list(parts[first : first + 512])
        want = sum(len(p) for p in chunk)
        done = 0
        while done < want:
            wrote = os.pwritev(fd, chunk, at + done)
            done += wrote
            while chunk and wrote >= len(chunk[0]):
                wrote -= len(chunk[0])
                chunk.pop(0)
            if chunk and wrote:
                chunk[0] = memoryview(chunk[0])[wrote:]
        at += want
    tail = parts[-1][-20:] if parts and len(parts[-1]) >= 20 else b""
    return at, tail


_last_index: dict[Path, _Written] = {}
"""The index this process wrote last, by path: a writer alone on a store reads back its own
index, and need not parse it again."""
_last_index_lock = threading.Lock()


_SECONDS = struct.Struct(">I")
"""An entry's modification time, whole seconds, 8 bytes into it."""


def _parse_index(index: bytes | None, written: int = 0, top: Path | None = None) -> _Index | None:
    """The entries and kept extensions of a version 2 or 3 index; None for one this does not
    rewrite (none yet, a split or sparse index, a required extension, no checksum).

    An entry whose file's time is not older than `written` (the index file's modification
    time, whole seconds) may be "racily clean": the file changed within the tick its stat
    data was taken. Such an entry whose file (under `top`) no longer holds its blob is
    smudged (size 0), as git does when it rewrites an index, so git compares its content
    again instead of trusting stat data a newer index would vouch for. One whose file still
    holds it keeps its stat data, as in git: smudging every racy entry (all of a fresh
    clone's, checked out within the second its index was written) left git listing each as
    changed (`git diff-files`) until a `git status` refreshed them. Without `top`, every
    racy entry is smudged."""
    if index is None or len(index) < 32 or index[-20:] == bytes(20):
        return None
    if hashlib.sha1(index[:-20]).digest() != index[-20:]:
        return None
    extended = index[7] >= 3
    names: list[bytes] = []
    ends: list[int] = []
    racy: list[int] = []
    # The loop a new process runs over every entry: bound methods, no slice per number.
    add_name, add_end, mtime = names.append, ends.append, _SECONDS.unpack_from
    at = 12
    for _ in range(int.from_bytes(index[8:12], "big")):
        high = index[at + 60]
        start = at + 64 if extended and high & 0x40 else at + 62
        length = (high & 0x0F) << 8 | index[at + 61]
        if length == 0x0FFF:
            length = index.index(b"\0", start) - start
        add_name(index[start : start + length])
        if mtime(index, at + 8)[0] >= written:
            racy.append(at)
        at += (start - at + length + 8) & ~7
        add_end(at)
    extensions: list[bytes] = []
    entries_end = at
    while at < len(index) - 20:
        sig, size = index[at : at + 4], int.from_bytes(index[at + 4 : at + 8], "big")
        if not b"A" <= sig[:1] <= b"Z":
            return None  # required: a split index ("link"), a sparse one ("sdir"), ...
        if sig in _KEPT_EXTENSIONS:
            extensions.append(index[at : at + 8 + size])
        at += 8 + size
    if at != len(index) - 20:
        return None
    if racy and top is not None:
        racy = [entry for entry in racy if _changed(index, entry, top)]
    if racy:
        smudged = bytearray(index[:entries_end])
        for entry in racy:
            smudged[entry + 36 : entry + 40] = bytes(4)
        index = bytes(smudged)
    blocks: list[_Block] = []
    starts: list[int] = []
    for first in range(0, max(len(ends), 1), _BLOCK):
        begin = ends[first - 1] if first else 12
        run = ends[first : first + _BLOCK]
        blocks.append(_Block(index[begin : run[-1] if run else begin], [e - begin for e in run]))
        starts.append(first)
    return _Index(index[:8], names, blocks, starts, extensions)


def _changed(index: bytes, entry: int, top: Path) -> bool:
    """Whether the file of the index entry at offset `entry` no longer holds its blob (or is
    not a plain file, or cannot be read)."""
    high = index[entry + 60]
    start = entry + 64 if index[7] >= 3 and high & 0x40 else entry + 62
    name = index[start : index.index(b"\0", start)]
    try:
        path = top / name.decode("utf-8")
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return True
        return blob_sha(path.read_bytes()) != index[entry + 40 : entry + 60].hex()
    except (OSError, UnicodeDecodeError, ValueError):
        return True


def _indexed(
    parsed: _Index, blobs: dict[str, str | None], top: Path | None = None
) -> list[bytes] | None:
    """The index `parsed` with these paths' entries set to the blobs at stage 0 (or
    removed), in git's order, in pieces (`_Index.parts`); `parsed` becomes that index.
    None (`parsed` unchanged) when a path's folder is a file in the index or the reverse:
    git's rules for that, not these. Each entry carries its file's stat data (under `top`,
    see `_stat_data`)."""
    names = parsed.names
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
            data = _stat_data(top / rel if top is not None else None, sha)
            if data is not _ZERO_STAT:
                parsed.fresh[path] = struct.unpack_from(">I", data, 8)[0]
            raw = data + bytes.fromhex(sha) + min(len(path), 0x0FFF).to_bytes(2, "big") + path
            new.append(raw + bytes(8 - len(raw) % 8))
        parsed.splice(lo, hi, path, new)
    return parsed.parts()


_ZERO_STAT = bytes(24) + (0o100644).to_bytes(4, "big") + bytes(12)
"""An entry's stat data left zero, as `update-index --index-info` leaves it: git compares
the file's content the next time it looks, and `git diff-index` reports it changed until a
`git status` refreshes it."""


def _stat_data(path: Path | None, sha: str) -> bytes:
    """The 40 bytes of stat data of the file at `path` for its entry pointing at blob `sha`,
    as `git add` records them, when the file holds that blob and did not change while it was
    read (its stat the same before and after); `_ZERO_STAT` otherwise (an executable file, a
    link, one a person changed meanwhile), which makes git compare the content.

    Recorded, the files memstore commits are not reported changed by `git diff-index`
    (which the catalog asks) nor hashed again by a person's `git status`. A file changed
    within the tick of its stat keeps git's own guard: an entry whose time is not older
    than the index file's is racily clean, and git compares its content."""
    if path is None:
        return _ZERO_STAT
    try:
        before = os.lstat(path)
        if not stat.S_ISREG(before.st_mode) or before.st_mode & 0o111:
            return _ZERO_STAT
        content = path.read_bytes()
        after = os.lstat(path)
    except OSError:
        return _ZERO_STAT
    seen = (before.st_mtime_ns, before.st_ctime_ns, before.st_size, before.st_ino)
    if seen != (after.st_mtime_ns, after.st_ctime_ns, after.st_size, after.st_ino):
        return _ZERO_STAT
    if len(content) != after.st_size or blob_sha(content) != sha:
        return _ZERO_STAT
    m = 0xFFFFFFFF
    return struct.pack(
        ">10I",
        int(after.st_ctime_ns // 1_000_000_000) & m,
        int(after.st_ctime_ns % 1_000_000_000),
        int(after.st_mtime_ns // 1_000_000_000) & m,
        int(after.st_mtime_ns % 1_000_000_000),
        after.st_dev & m,
        after.st_ino & m,
        0o100644,
        after.st_uid & m,
        after.st_gid & m,
        after.st_size & m,
    )


RECENT = "memstore/staged.json"
"""The entries memstore staged last (path → blob, or null for a removal), in `.git`."""
RECENT_MAX = 64


def _recent(repo: Repo) -> dict[str, str | None]:
    try:
        data: Any = json.loads((repo.git_dir / RECENT).read_text(encoding="utf-8"))
        return {str(k): (None if v is None else str(v)) for k, v in dict(data).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def _keep_recent(repo: Repo, recorded: dict[str, str | None]) -> None:
    """Keep the newest RECENT_MAX of `recorded`. Written in place, under the index lock (only
    its holder reads or writes it): a writer killed half-way leaves no temp file, only a
    record `_recent` cannot read, which loses the repair's memory and nothing else."""
    kept = dict(list(recorded.items())[-RECENT_MAX:])
    path = repo.git_dir / RECENT
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(kept), encoding="utf-8")
    except OSError:
        pass


def _lost(repo: Repo, parsed: _Index, recent: dict[str, str | None]) -> dict[str, str | None]:
    """The entries of memstore's recent writes that the index lost since, to put back.

    `git commit` reads the index before it takes `index.lock`, and a commit of the index as
    it is writes that read back at once (refreshed stat data) even when the commit itself
    then fails on a moved HEAD: a memstore write that landed in between is gone from the
    index while its file and commit stay, and the next commit of that index would delete
    it. An entry is put back only when the file still holds what memstore wrote (a removed
    file still gone), so a person's own change to it is never undone."""
    lost: dict[str, str | None] = {}
    for rel, sha in recent.items():
        path = rel.encode("utf-8")
        at = bisect.bisect_left(parsed.names, path)
        there = at < len(parsed.names) and parsed.names[at] == path
        if sha is None:
            if there and not (repo.top / rel).exists():
                lost[rel] = None
            continue
        if there and parsed.raw(at)[40:60].hex() == sha:
            continue
        try:
            content = (repo.top / rel).read_bytes()
        except OSError:
            continue
        if blob_sha(content) == sha:
            lost[rel] = sha
    return lost


def _has(names: list[bytes], name: bytes) -> bool:
    at = bisect.bisect_left(names, name)
    return at < len(names) and names[at] == name
