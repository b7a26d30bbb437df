"""A project's own documents (`docs:` globs in memstore.yaml), read-only: which files the globs
name, and each file's sections (one per heading) for the search index.

memstore never writes or commits these files; it only reads them.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from memstore.errors import UnsafePath
from memstore.storage.files import SKIPPED_FOLDERS, Stamp, read_regular

DOC_MAX = 1024 * 1024
"""A larger file is not indexed (a generated or vendored file, not a page someone reads)."""
SECTION_MAX = 32 * 1024
"""The most of one section's text indexed, in characters."""


@dataclass(frozen=True, slots=True)
class Section:
    """One heading of a document and the text under it (up to the next heading of any level)."""

    heading: str
    """The heading's text; for text before the first heading, the file's title or name."""
    anchor: str
    """The heading as a URL fragment (`rollback-steps`), made unique within the file."""
    text: str
    line: int
    """The heading's line number (1 for text before the first heading)."""


_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def anchor(heading: str) -> str:
    """A heading's fragment as GitHub makes it: lower case, punctuation dropped, spaces '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.lower().strip())
    return re.sub(r" ", "-", text) or "section"


def sections(text: str, fallback: str) -> list[Section]:
    """The sections of a Markdown text, split at ATX headings outside code blocks. Text before
    the first heading is a section named `fallback` (the file's name)."""
    found: list[Section] = []
    heading, start = fallback, 1
    lines: list[str] = []
    in_code = False
    seen: dict[str, int] = {}

    def flush() -> None:
        body = "\n".join(lines).strip()
        if body or heading != fallback:
            base = anchor(heading)
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.append(
                Section(heading, base if n == 0 else f"{base}-{n}", body[:SECTION_MAX], start)
            )

    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            in_code = not in_code
        m = None if in_code else _HEADING.match(line)
        if m:
            flush()
            heading, start, lines = m.group(2).strip() or fallback, number, []
        else:
            lines.append(line)
    flush()
    return found


def find(top: Path, globs: tuple[str, ...], exclude: Path | None = None) -> dict[str, Stamp]:
    """Every regular file under `top` one of `globs` names (paths relative to `top`, with '/'),
    and its stamp. Symlinks are never followed; hidden folders, dependencies and `exclude`
    (the store itself) are left out."""
    found: dict[str, Stamp] = {}
    skip = exclude.resolve() if exclude is not None else None
    linked: dict[Path, bool] = {}  # each folder's answer, once per scan
    for pattern in globs:
        for path in sorted(top.glob(pattern)):
            rel = path.relative_to(top)
            if any(p in SKIPPED_FOLDERS or p.startswith(".") for p in rel.parts[:-1]):
                continue
            if skip is not None and (path == skip or skip in path.parents):
                continue
            folders = _between(top, path)
            for folder in folders:
                if folder not in linked:
                    linked[folder] = folder.is_symlink()
            if any(linked[folder] for folder in folders):
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_size > DOC_MAX:
                continue
            found[rel.as_posix()] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return found


def _between(top: Path, path: Path) -> list[Path]:
    """The folders from `top` (excluded) down to `path`'s parent."""
    out: list[Path] = []
    for parent in path.parents:
        if parent == top:
            break
        out.append(parent)
    return out


def read(path: Path) -> list[Section]:
    """The sections of the document at `path` (none when it is gone, binary or too large)."""
    try:
        data = read_regular(path)
    except (OSError, UnsafePath):  # gone, or a symlink swapped in since the scan
        return []
    if data is None or len(data) > DOC_MAX:
        return []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return []
    return sections(text, path.name)
