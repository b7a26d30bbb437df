"""What the search index reflects, in `manifest.json` next to it: each memory file's stamp
and content digest, the files indexed too soon after a change to trust their stamp alone
(racy), and each memory's name, type, status, description and expiry — what a write's
duplicate hint compares (`steward.similar`), read without loading Whoosh.

Written by `index.Index` under the index lock, by replacing the file: a reader without the
lock sees one whole version.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 9
"""Bump when the index's schema, its analyzer or this file's form changes: an index of
another version is rebuilt."""

FILE = "manifest.json"

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

    def copy(self) -> Manifest:
        return Manifest(dict(self.stamps), dict(self.digests), set(self.racy), dict(self.fields))


def read(path: Path) -> Manifest | None:
    """The manifest in file `path`; None when it is missing, unreadable or of another
    version (the index is then rebuilt)."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        if data.get("schema") != SCHEMA_VERSION:  # not a mapping: AttributeError
            return None
        files: dict[str, list[Any]] = data["files"]
        racy: list[str] = data["racy"]
        return Manifest(
            {p: (int(f[0]), int(f[1]), int(f[2])) for p, f in files.items()},
            {p: str(f[3]) for p, f in files.items()},
            {str(p) for p in racy if p in files},
            {
                p: (str(f[4]), str(f[5]), str(f[6]), str(f[7]), str(f[8]))
                for p, f in files.items()
                if len(f) == 9
            },
        )
    except (OSError, ValueError, LookupError, TypeError, AttributeError):
        return None


_kept: dict[Path, tuple[tuple[int, int, int, int], Manifest]] = {}
_kept_lock = threading.Lock()


def current(path: Path) -> Manifest | None:
    """`read(path)`, parsed again only when the file changed (a server's duplicate hint
    reads it on every write). The caller must not change what it returns."""
    try:
        st = path.stat()
    except OSError:
        return None
    stamp = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
    with _kept_lock:
        kept = _kept.get(path)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    found = read(path)
    if found is not None:
        with _kept_lock:
            _kept[path] = (stamp, found)
    return found


def write(path: Path, manifest: Manifest) -> None:
    """Replace file `path` with `manifest` (call with the index lock held)."""
    files = {
        p: [*s, manifest.digests.get(p, ""), *manifest.fields.get(p, ())]
        for p, s in manifest.stamps.items()
    }
    data = {"schema": SCHEMA_VERSION, "files": files, "racy": sorted(manifest.racy)}
    # `.manifest.<pid>.<thread>.tmp`: a dead writer's is found by its pid (see transaction).
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    os.replace(tmp, path)
