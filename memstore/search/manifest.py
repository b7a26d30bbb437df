"""What the search index reflects, in `manifest.json` next to it: each memory file's stamp
and content digest, the files indexed too soon after a change to trust their stamp alone
(racy), and each memory's name, type, status, description and expiry — what a write's
duplicate hint compares (`steward.similar`), read without loading Whoosh.

A write to the index changes a few files' entries: those are appended to `manifest.log` as one
line (rewriting the whole file, as long as the store, cost every write a tenth of a second at
10,000 memories and seconds at 100,000), and the two are folded into a new `manifest.json`
once the log has grown to a share of it. The log's first line names the `manifest.json` it
extends (a token both hold): a log left from an older one is ignored.

Written by `index.Index` under the index lock: `manifest.json` by replacing the file, the log by
appending whole lines. A reader without the lock sees one whole version: a line still being
appended (no newline yet) is not read, and a `manifest.json` replaced while it read is read
again.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 10
"""Bump when the index's schema, its analyzer or this file's form changes: an index of
another version is rebuilt."""

FILE = "manifest.json"
LOG = "manifest.log"
"""Next to `FILE`: the changes since it was written, a line per index write."""
LOG_SHARE = 4
"""The log is folded into `FILE` once it is longer than `FILE` divided by this..."""
LOG_MIN = 1 << 20
"""...or than this many bytes, whichever is more."""

Stamp = tuple[int, int, int]
"""What a file looked like when it was indexed: (mtime in ns, size in bytes, inode)."""

Fields = tuple[str, str, str, str, str]
"""An indexed memory's name, type, status, description and expiry day (`""` for none)."""


@dataclass(slots=True)
class Manifest:
    """The index's files: stamps and content digests, which were indexed within the racy
    window of their modification (their content is compared as well), and each memory's
    `Fields` (a file that could not be indexed has none)."""

    stamps: dict[str, Stamp]
    digests: dict[str, str]
    racy: set[str]
    fields: dict[str, Fields]
    token: str = ""
    """The token `FILE` and its log share (see the module's docstring)."""
    changed: set[str] | None = field(default=None, compare=False)
    """The files whose entries changed since this was read (for `write` to append), None
    when it must be written whole (a rebuild)."""
    whole: bool = field(default=True, compare=False)
    """False for a part of the manifest (`partial`): some files' entries, which `write` only
    appends to the log."""

    def copy(self) -> Manifest:
        """A copy to change (its `changed` starts empty)."""
        return Manifest(
            dict(self.stamps),
            dict(self.digests),
            set(self.racy),
            dict(self.fields),
            self.token,
            set(),
            self.whole,
        )

    def entry(self, path: str) -> list[Any] | None:
        """`path`'s line in the files: stamp, digest, fields (None when it is not listed)."""
        stamp = self.stamps.get(path)
        if stamp is None:
            return None
        return [*stamp, self.digests.get(path, ""), *self.fields.get(path, ())]

    def put(self, path: str, entry: list[Any] | None, racy: bool) -> None:
        """Set `path`'s entry as `entry` gives it (None: drop it)."""
        if entry is None:
            self.stamps.pop(path, None)
            self.digests.pop(path, None)
            self.fields.pop(path, None)
            self.racy.discard(path)
            return
        self.stamps[path] = (int(entry[0]), int(entry[1]), int(entry[2]))
        self.digests[path] = str(entry[3])
        if len(entry) == 9:
            self.fields[path] = (
                str(entry[4]),
                str(entry[5]),
                str(entry[6]),
                str(entry[7]),
                str(entry[8]),
            )
        else:
            self.fields.pop(path, None)
        if racy:
            self.racy.add(path)
        else:
            self.racy.discard(path)


State = tuple[tuple[int, int, int, int], tuple[int, int]]
"""What `FILE` looked like (mtime, ctime, size, inode) and how much of its log was read
(inode, bytes): the same state, the same manifest."""


def read(path: Path) -> Manifest | None:
    """The manifest in file `path` and its log; None when it is missing, unreadable or of
    another version (the index is then rebuilt)."""
    found = load(path)
    return None if found is None else found[0]


def load(path: Path, known: tuple[Manifest, State] | None = None) -> tuple[Manifest, State] | None:
    """The manifest in file `path` and its log, with the state it was read in. With `known`
    (a manifest and the state it was read in, left unchanged), only what the log gained
    since is read. None when it is unreadable (as `read`)."""
    for _ in range(5):
        try:
            base = _stamp(path.stat())
        except OSError:
            return None
        found: tuple[Manifest, State] | None
        if known is not None and known[1][0] == base:
            found = _extended(path.with_name(LOG), known)
        else:
            found = _whole(path, base)
        try:
            again = _stamp(path.stat())
        except OSError:
            return None
        if again == base:  # not replaced while it was read
            return found
        known = None
    return None


def _whole(path: Path, base: tuple[int, int, int, int]) -> tuple[Manifest, State] | None:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        if data.get("schema") != SCHEMA_VERSION:  # not a mapping: AttributeError
            return None
        files: dict[str, list[Any]] = data["files"]
        racy: list[str] = data["racy"]
        found = Manifest(
            {p: (int(f[0]), int(f[1]), int(f[2])) for p, f in files.items()},
            {p: str(f[3]) for p, f in files.items()},
            {str(p) for p in racy if p in files},
            {
                p: (str(f[4]), str(f[5]), str(f[6]), str(f[7]), str(f[8]))
                for p, f in files.items()
                if len(f) == 9
            },
            str(data.get("token", "")),
        )
    except (OSError, ValueError, LookupError, TypeError, AttributeError):
        return None
    return _extended(path.with_name(LOG), (found, (base, (0, 0))), whole=True)


def _extended(
    log_path: Path, known: tuple[Manifest, State], whole: bool = False
) -> tuple[Manifest, State] | None:
    """`known` with the lines its log gained since it was read (`known` itself when none;
    else a copy). `whole`: `known` was just read and is this call's to change."""
    files, (base, (inode, offset)) = known
    try:
        with open(log_path, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_ino != inode:
                offset = 0  # another log: read from its start
            elif st.st_size == offset:
                return known
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return (files, (base, (0, 0))) if not files.token else None
    except OSError:
        return None
    end = data.rfind(b"\n") + 1  # a line still being appended is read next time
    lines = data[:end].splitlines()
    if offset == 0:
        if not lines or _header(lines[0]) != files.token or not files.token:
            # A log of another manifest.json (left by a fold that stopped halfway): it is
            # older than this one, which holds what it says.
            return files, (base, (st.st_ino, end))
        lines = lines[1:]
    if not lines:
        return files, (base, (st.st_ino, offset + end))
    found = files if whole else files.copy()
    try:
        for line in lines:
            changes: Any = json.loads(line)
            for item in changes:
                found.put(str(item[0]), item[1], bool(item[2]))
    except (ValueError, LookupError, TypeError, AttributeError):
        return None  # a line cut short by a writer that died: the index is rebuilt
    found.changed = set()
    return found, (base, (st.st_ino, offset + end))


def logged_since(path: Path, state: State) -> tuple[set[str], State] | None:
    """The files whose entries the log of manifest `path` gained since it was in `state`,
    and the state it is in now; None when `path` was replaced since (a fold or a rebuild:
    what changed cannot be told from the log) or cannot be read."""
    base, (inode, offset) = state
    try:
        if _stamp(path.stat()) != base:
            return None
        with open(path.with_name(LOG), "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_ino != inode or st.st_size < offset or offset == 0:
                return None  # another log, or one whose header was not read
            f.seek(offset)
            data = f.read()
    except OSError:
        return None
    end = data.rfind(b"\n") + 1  # a line still being appended is read next time
    paths: set[str] = set()
    try:
        for line in data[:end].splitlines():
            changes: Any = json.loads(line)
            paths.update(str(item[0]) for item in changes)
    except (ValueError, LookupError, TypeError, AttributeError):
        return None
    return paths, (base, (inode, offset + end))


def entries(path: Path, paths: Iterable[str]) -> dict[str, tuple[list[Any] | None, bool]] | None:
    """The entries of manifest `path` and its log for `paths` (as `Manifest.entry` gives
    them; None for a file not listed) and whether each is racy, found in its text rather
    than by parsing it whole. None when it cannot be read, is of another version, or was
    replaced while it was read."""
    found = _found(path, paths)
    return None if found is None else found[1]


def partial(path: Path, paths: Iterable[str]) -> Manifest | None:
    """The part of manifest `path` (with its log) that holds `paths`, found as `entries`
    finds them; `write` appends its changes to the log. None as `entries`."""
    found = _found(path, paths)
    if found is None:
        return None
    token, listed = found
    part = Manifest({}, {}, set(), {}, token, set(), whole=False)
    for p, (entry, racy) in listed.items():
        part.put(p, entry, racy)
    part.changed = set()
    return part


def _found(
    path: Path, paths: Iterable[str]
) -> tuple[str, dict[str, tuple[list[Any] | None, bool]]] | None:
    try:
        base = _stamp(path.stat())
        text = path.read_text(encoding="utf-8")
        log = path.with_name(LOG).read_bytes()
        if _stamp(path.stat()) != base:
            return None
        head = f'{{"schema":{SCHEMA_VERSION},"token":'
        if not text.startswith(head):
            return None
        decoder = json.JSONDecoder()
        token = str(decoder.raw_decode(text, len(head))[0])
        at = text.rfind(',"racy":')
        if at <= 0 or not token:
            return None
        racy_list: Any = decoder.raw_decode(text, at + len(',"racy":'))[0]
        racy = {str(p) for p in racy_list}
        wanted = list(paths)
        found: dict[str, tuple[list[Any] | None, bool]] = {}
        if len(wanted) <= _FINDS:
            for p in wanted:
                found[p] = (_entry(text, p, decoder), p in racy)
        else:
            entries = _entries(text, {json.dumps(p)[1:-1]: p for p in wanted})
            if entries is None:
                return None
            for p in wanted:
                found[p] = (entries.get(p), p in racy)
        lines = log[: log.rfind(b"\n") + 1].splitlines()
        if lines and _header(lines[0]) == token:
            for line in lines[1:]:
                for item in json.loads(line):
                    if (p := str(item[0])) in found:
                        found[p] = (item[1], bool(item[2]))
    except (OSError, ValueError, LookupError, TypeError, AttributeError):
        return None
    return token, found


_FINDS = 8
"""Up to this many files are found by a search of the text each (5-10 ms at 100,000
memories); more by one pass over every entry (0.1 s), which costs the same for any number."""


def _entries(text: str, keys: dict[str, str]) -> dict[str, list[Any]] | None:
    """The entries of the files whose keys (as the text spells them, JSON-escaped) `keys`
    maps to their paths, in one pass: the entries split where one ends and the next key
    begins (`],"`, which no string holds, each `"` in one being escaped)."""
    start = text.find('"files":{')
    end = text.rfind(']},"racy":')
    if start < 0 or end < start:
        return None if start < 0 else {}
    found: dict[str, list[Any]] = {}
    body = text[start + len('"files":{') + 1 : end]  # from the first key, past its quote
    for piece in body.split('],"'):
        cut = piece.find('":[')
        path = keys.get(piece[:cut])
        if path is not None:
            found[path] = json.loads(f"[{piece[cut + 3 :]}]")
    return found


def _entry(text: str, path: str, decoder: json.JSONDecoder) -> list[Any] | None:
    """`path`'s entry in the text of a manifest: its key, where a key can be (after `{` or
    `,`; inside a string every `"` is escaped, so the key's text cannot occur in one)."""
    key = json.dumps(path) + ":["
    at = text.find(key)
    while at > 0 and text[at - 1] not in "{,":
        at = text.find(key, at + 1)
    if at <= 0:
        return None
    entry, _ = decoder.raw_decode(text, at + len(key) - 1)
    return list(entry)


def _header(line: bytes) -> str | None:
    try:
        data: Any = json.loads(line)
        return str(data["manifest"])
    except (ValueError, LookupError, TypeError, AttributeError):
        return None


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


_kept: dict[Path, tuple[Manifest, State]] = {}
_kept_lock = threading.Lock()


def current(path: Path) -> Manifest | None:
    """`read(path)`, parsed again only as far as it changed (a server's duplicate hint reads
    it on every write). The caller must not change what it returns."""
    with _kept_lock:
        kept = _kept.get(path)
    found = load(path, kept)
    if found is None:
        return None
    with _kept_lock:
        _kept[path] = found
    return found[0]


def write(path: Path, manifest: Manifest) -> State:
    """Save `manifest` in file `path` (call with the index lock held): the entries of its
    `changed` files appended to the log, or the whole of it in `path` (a new log begun) when
    it has no `changed`, they are more than a `LOG_SHARE`-th of its files (a store copied:
    every stamp moved) or the log has grown long. Returns the state it is now in."""
    changed = manifest.changed
    if not manifest.whole:  # a part: its changes go to the log, or nowhere
        appended = None if changed is None else _append(path, manifest, changed)
        if appended is None:
            raise OSError(f"cannot append to {path.with_name(LOG)}")
        manifest.changed = set()
        return appended
    if changed is not None and manifest.token and len(changed) * LOG_SHARE <= len(manifest.stamps):
        appended = _append(path, manifest, changed)
        if appended is not None:
            manifest.changed = set()
            return appended
    manifest.token = os.urandom(8).hex()
    files = {
        p: [*s, manifest.digests.get(p, ""), *manifest.fields.get(p, ())]
        for p, s in manifest.stamps.items()
    }
    data = {
        "schema": SCHEMA_VERSION,
        "token": manifest.token,
        "files": files,
        "racy": sorted(manifest.racy),
    }
    # `.manifest.<pid>.<thread>.tmp`: a dead writer's is found by its pid (see transaction).
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    os.replace(tmp, path)
    base = _stamp(path.stat())
    # The log after the file it extends: a reader that finds the old log with the new file
    # sees another token and reads the file alone, which holds everything.
    header = (json.dumps({"manifest": manifest.token}) + "\n").encode()
    log_tmp = path.with_name(f".{LOG}.{os.getpid()}.{threading.get_ident()}.tmp")
    log_tmp.write_bytes(header)
    os.replace(log_tmp, path.with_name(LOG))
    manifest.changed = set()
    return base, (path.with_name(LOG).stat().st_ino, len(header))


def _append(path: Path, manifest: Manifest, changed: Iterable[str]) -> State | None:
    """Append the entries of the `changed` files to the log; None when the log should be
    folded into `path` instead (long, missing, or of another manifest)."""
    log_path = path.with_name(LOG)
    try:
        base = _stamp(path.stat())
        fd = os.open(log_path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not _takes(fd, st, base):
            return None  # long, or cut short: folded
        items = [[p, manifest.entry(p), p in manifest.racy] for p in sorted(changed)]
        line = (json.dumps(items, separators=(",", ":")) + "\n").encode()
        if not items:
            return base, (st.st_ino, st.st_size)
        os.write(fd, line)  # one write of one line, under the index lock
        return base, (st.st_ino, st.st_size + len(line))
    except OSError:
        return None
    finally:
        os.close(fd)


def _takes(fd: int, st: os.stat_result, base: tuple[int, int, int, int]) -> bool:
    """Whether the log open at `fd` takes another line: not long, and not cut short."""
    return st.st_size <= max(LOG_MIN, base[2] // LOG_SHARE) and (
        st.st_size > 0 and os.pread(fd, 1, st.st_size - 1) == b"\n"
    )


def appendable(path: Path, token: str) -> bool:
    """Whether the log of manifest `path` is the one of `token` and takes another line (call
    with the index lock held: then it still does when a part is written)."""
    log_path = path.with_name(LOG)
    try:
        base = _stamp(path.stat())
        fd = os.open(log_path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        first = os.pread(fd, 4096, 0)
        return _takes(fd, st, base) and _header(first.split(b"\n", 1)[0]) == token
    except OSError:
        return False
    finally:
        os.close(fd)
