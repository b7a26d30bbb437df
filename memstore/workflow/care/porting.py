"""Moving knowledge into and out of a store: `import_path` (instruction files, ADR folders,
memstore's own export) and `export` (JSON Lines, JSON, one Markdown context file).

Every import is one commit through the write path, as the importing identity; what the store
already holds is left out, so importing the same source twice creates nothing new.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstore.errors import InvalidMemory, InvalidName, MemoryNotFound, SecretFound
from memstore.limits import DEFAULT_SEVERITY
from memstore.model.fields import (
    check_body,
    check_description,
    check_links,
    check_name,
    check_tags,
)
from memstore.model.memory import FILE_MAX, Memory, evolve, now, parse, render
from memstore.model.status import Status
from memstore.search import upkeep as search
from memstore.search.upkeep import Query
from memstore.storage import transaction
from memstore.storage.files import SKIPPED_FOLDERS, memory_files, read_regular
from memstore.workflow.care import import_automemory, import_graph, import_notes, sources
from memstore.workflow.rules import rules as workflow

if TYPE_CHECKING:
    from memstore.storage.store import Store

FORMATS = ("jsonl", "json", "markdown")
EXPORT_MARK = "memstore_export"
"""The key that marks memstore's own export (its value is the format's version)."""
EXPORT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Copy:
    """A memory file from memstore's export, to write back byte for byte."""

    path: str
    """`<type>/<name>.md`, relative to the store."""
    text: str
    source: str


@dataclass(frozen=True, slots=True)
class Imported:
    """What an import (or a session's close) found and saved."""

    created: tuple[str, ...] = ()
    """`<type>/<name>` of each new draft (or file), in order."""
    descriptions: tuple[str, ...] = ()
    """The description of each of `created`."""
    skipped: tuple[tuple[str, str], ...] = ()
    """(what, why) for each thing found and left out: already in the store, a duplicate."""
    found: int = 0
    """How many rules, records or memories the sources held."""
    sources: tuple[str, ...] = ()
    """The files read."""
    by_type: dict[str, int] = field(default_factory=dict[str, int])
    """How many of the created ones are of each type."""
    commit: str | None = None
    dry_run: bool = False
    origins: tuple[str, ...] = ()
    """For each of `created`: where it came from and how it was mapped (`file:line: entity
    "Ada" (person → fact)`), its links after; '' for an export's memory file."""
    formats: tuple[str, ...] = ()
    """The formats read: instructions, adr, memstore-export, memory-server, basic-memory,
    claude-code-memory."""


# -- reading the sources ----------------------------------------------------------------------


def _files(path: Path) -> Iterator[Path]:
    """`path`, or the files under a folder (hidden folders, dependencies and git left out)."""
    if path.is_file():
        yield path
        return
    for folder, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
        here = Path(folder)
        if (here / ".memstore").is_dir() and here != path:
            dirs[:] = []  # another store: its own export is the way in
            continue
        for name in sorted(names):
            yield here / name


GRAPH_MAX = 64 * 1024 * 1024
"""The largest JSON or JSON Lines file read (a memory server graph grows with every session)."""


def _read(path: Path, limit: int = 16 * FILE_MAX) -> str | None:
    data = read_regular(path)
    if data is None or len(data) > limit:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _label(path: Path, base: Path) -> str:
    try:
        rel = path.absolute().relative_to(base.absolute())
        return (Path(base.name) / rel).as_posix() if base.is_dir() else path.name
    except ValueError:
        return path.as_posix()


@dataclass
class Gathered:
    """What a path holds to import: candidate drafts, export records, the files read and
    (what, why) for each thing found there and left out."""

    candidates: list[sources.Candidate] = field(default_factory=list[sources.Candidate])
    copies: list[Copy] = field(default_factory=list[Copy])
    read: list[str] = field(default_factory=list[str])
    skipped: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    formats: list[str] = field(default_factory=list[str])
    """The formats found, in order (`Imported.formats`)."""

    def found(self, label: str, kind: str) -> None:
        self.read.append(label)
        if kind not in self.formats:
            self.formats.append(kind)


def gather(path: Path) -> Gathered:
    """The drafts and export records found at `path` (a file or a folder), each file's format
    told by its name and text: agent instruction files, ADRs, memstore's export, the official
    memory server's `memory.jsonl`, basic-memory notes, Claude Code's auto memory folder
    (a folder holding `MEMORY.md`, or that file).

    Raises:
        InvalidMemory: when `path` does not exist, or a file is not what its format says
            (`file:line: …`).
    """
    if not path.exists():
        raise InvalidMemory(f"nothing to import at {path}: give a file or a folder")
    taken: set[str] = set()
    out = Gathered()
    files = list(_files(path))
    # A folder holding MEMORY.md is Claude Code's auto memory: its Markdown files are topics.
    memory_folders = {f.parent for f in files if f.name == import_automemory.INDEX}
    if path.is_file() and path.name == import_automemory.INDEX:
        pointed = import_automemory.pointers(_read(path) or "")
        # Topic files sit beside the index: a pointer elsewhere is not followed.
        files += [path.parent / n for n in pointed if "/" not in n and (path.parent / n).is_file()]
    topics: dict[Path, list[import_automemory.Topic]] = {folder: [] for folder in memory_folders}
    notes: list[import_notes.Note] = []
    for file in files:
        name = file.name
        label = _label(file, path)
        is_instructions = name in sources.INSTRUCTION_FILES or (
            name.endswith(".mdc") and file.parent.name == "rules"
        )
        if name.endswith((".jsonl", ".json")):
            text = _read(file, GRAPH_MAX)
            if text is None and path.is_file():
                raise InvalidMemory(
                    f"{label}: not UTF-8 text, not a regular file, or larger than "
                    f"{GRAPH_MAX // 1024 // 1024} MiB"
                )
            if text is not None and import_graph.is_graph(text):
                found, skipped = import_graph.graph_candidates(text, label, taken)
                out.candidates += found
                out.skipped += skipped
                out.found(label, "memory-server")
                continue
            records = _export_records(text or "", label, explicit=path.is_file())
            if records is not None:
                out.copies.extend(records)
                out.found(label, "memstore-export")
            continue
        if not (is_instructions or name.endswith(".md")):
            continue
        text = _read(file)
        if text is None:
            continue
        if is_instructions:
            out.candidates.extend(sources.instruction_candidates(text, label, taken))
            out.found(label, "instructions")
        elif file.parent in topics:
            topics[file.parent].append(import_automemory.Topic(name, label, text))
            out.found(label, "claude-code-memory")
        elif import_notes.is_note(text) and (
            "permalink" in text.split("\n---", 1)[0] or not sources.is_adr(text)
        ):
            notes.append(import_notes.read_note(text, label, file.stem))
            out.found(label, "basic-memory")
        elif sources.is_adr(text):
            out.candidates.append(sources.adr_candidate(text, file.stem, label, taken))
            out.found(label, "adr")
    out.candidates += import_notes.note_candidates(notes, taken)
    for folder, found_topics in topics.items():
        index = next((t for t in found_topics if t.file == import_automemory.INDEX), None)
        rest = [t for t in found_topics if t.file != import_automemory.INDEX]
        label = index.label if index else _label(folder / import_automemory.INDEX, path)
        made, skipped = import_automemory.memory_candidates(
            index.text if index else None, label, rest, taken
        )
        out.candidates += made
        out.skipped += skipped
    return out


def _export_records(text: str, label: str, explicit: bool) -> list[Copy] | None:
    """The memory files of a memstore export (JSON Lines or JSON), or None for another file.

    Raises:
        InvalidMemory: for a file given by name that is not memstore's export.
    """
    records: list[Any] = []
    marked = False
    try:
        stripped = text.lstrip()
        first = stripped.split("\n", 1)[0]
        if first.startswith("{") and EXPORT_MARK in first and "\n{" in stripped:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
            marked = True
        else:
            data: Any = json.loads(text)
            if isinstance(data, dict) and EXPORT_MARK in data:
                mapping: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
                listed: Any = mapping.get("memories") or []
                records = list(listed) if isinstance(listed, list) else []  # pyright: ignore[reportUnknownArgumentType]
                marked = True
    except (ValueError, RecursionError) as e:
        if explicit:
            where = f"{label}:{e.lineno}" if isinstance(e, json.JSONDecodeError) else label
            why = e.msg if isinstance(e, json.JSONDecodeError) else type(e).__name__
            raise InvalidMemory(f"{where}: {NOT_EXPORT}; not JSON there ({why})") from e
        return None
    if not marked:
        if explicit:
            raise InvalidMemory(f"{label}: {NOT_EXPORT}; no '{EXPORT_MARK}' mark")
        return None
    copies: list[Copy] = []
    for i, record in enumerate(records, start=1):
        fields: dict[str, Any] = record if isinstance(record, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        if EXPORT_MARK in fields and "path" not in fields:
            continue  # the JSON Lines header
        path, text_ = fields.get("path"), fields.get("text")
        if not isinstance(path, str) or not isinstance(text_, str):
            raise InvalidMemory(f"{label}: record {i} has no 'path' and 'text'")
        copies.append(Copy(path, text_, f"{label}:{i}"))
    return copies


NOT_EXPORT = (
    "neither memstore's export nor the memory server's graph (one JSON object a line, "
    '{"type": "entity", …} or {"type": "relation", …})'
)


# -- saving -----------------------------------------------------------------------------------


def _memory(candidate: sources.Candidate, actor: str, at: str) -> Memory:
    """The draft a candidate becomes, its fields checked as `Store.add` checks them.

    Raises:
        InvalidMemory, InvalidName.
    """
    extra: dict[str, Any] = {}
    if candidate.type in workflow.RULE_TYPES:
        extra = workflow.rule_fields(
            DEFAULT_SEVERITY[candidate.type], list(candidate.applies_when), None
        )
    extra.update(dict(candidate.extra))
    if candidate.source:
        extra["source"] = candidate.source
    try:
        return Memory(
            name=check_name(candidate.name),
            description=check_description(candidate.description),
            type=candidate.type,
            status=Status.DRAFT.value,
            owner=actor,
            created=at,
            updated=at,
            tags=check_tags(list(candidate.tags)),
            links=check_links(list(candidate.links)),
            body=check_body(candidate.body),
            extra=extra,
        )
    except (InvalidMemory, InvalidName) as e:
        if not candidate.source:
            raise
        raise InvalidMemory(f"{candidate.source}: {e}") from e


class _Names:
    """The store's memory files by name (`<type>/<name>.md`), each name looked up when asked
    (a stat per type folder): saving a few drafts never walks a large store."""

    def __init__(self, store: Store) -> None:
        self._root = store.root
        self._folders: list[str] | None = None
        self._known: dict[str, str | None] = {}

    def get(self, name: str) -> str | None:
        if name not in self._known:
            if self._folders is None:
                self._folders = sorted(
                    e.name
                    for e in os.scandir(self._root)
                    if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
                )
            self._known[name] = next(
                (
                    f"{folder}/{name}.md"
                    for folder in self._folders
                    if os.path.isfile(p := self._root / folder / f"{name}.md")
                    and not os.path.islink(p)
                ),
                None,
            )
        return self._known[name]

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def __setitem__(self, name: str, where: str) -> None:
        self._known[name] = where


def _near(store: Store, description: str) -> list[str]:
    """The descriptions of the memories (deprecated ones too) that best match `description`,
    from the search index: a store of any size is not read file by file."""
    # Only the words: a description's quotes, colons and brackets would be query syntax.
    text = " ".join(re.findall(r"\w+", description.lower()))
    if not text:
        return []
    hits = search.search(store, Query(text, limit=10, include_deprecated=True))
    return [h.description for h in hits if h.kind == "memory"]


def save(
    store: Store,
    candidates: list[sources.Candidate],
    copies: list[Copy],
    message: str,
    *,
    dry_run: bool = False,
    allow_secret: bool = False,
    loose: bool = False,
    exact: bool = False,
    skip_secrets: bool = False,
) -> Imported:
    """Save the candidates, and the memories of the export's records, as drafts owned by the
    acting identity, all in one commit; what the store already holds is skipped. `exact`
    writes the export's files as they were instead, byte for byte. `loose` also skips a
    candidate whose description shares most words with an existing one; `skip_secrets` leaves
    out a candidate that looks like it holds a credential instead of refusing them all.

    Raises:
        NoIdentity, SecretFound (nothing is written), InvalidMemory, StoreLocked, Conflict.
    """
    actor = store.require_identity()
    at = now()
    fallback = "fact" if "fact" in store.types else store.types[0]
    candidates = [c if c.type in store.types else replace(c, type=fallback) for c in candidates]
    memories = [(c, _memory(c, actor, at)) for c in candidates]
    checked = [(copy, _checked_copy(store, copy)) for copy in copies]
    held: list[tuple[str, str]] = []
    for candidate, memory in list(memories):
        try:
            _refuse(store, candidate.source, memory, allow_secret)
        except SecretFound as e:
            if not skip_secrets:
                raise
            memories.remove((candidate, memory))
            held.append((f"{candidate.source}: {memory.name}", str(e)))
    for copy, memory in checked:
        _refuse(store, copy.source, memory, allow_secret)
    with transaction.locked(store):
        names = _Names(store)
        keys: list[tuple[str, frozenset[str]]] = []  # of the drafts saved by this call
        created: list[str] = []
        skipped: list[tuple[str, str]] = list(held)
        writes: list[transaction.Write] = []
        by_type: dict[str, int] = {}
        new_descriptions: list[str] = []
        origins: list[str] = []
        for copy, memory in checked:
            where = names.get(memory.name)
            if where is not None:
                same = read_regular(store.root / where) == copy.text.encode("utf-8")
                skipped.append((copy.path, "already in the store" if same else f"{where} exists"))
                continue
            if not exact and memory.status == Status.DEPRECATED:
                skipped.append((copy.path, "deprecated (import it with --exact to keep it)"))
                continue
            names[memory.name] = copy.path
            text = copy.text if exact else render(as_draft(memory, actor))
            writes.append(transaction.Write(store.root / copy.path, text))
            created.append(copy.path.removesuffix(".md"))
            origins.append("")
            new_descriptions.append(memory.description)
            by_type[memory.type] = by_type.get(memory.type, 0) + 1
        kept: list[tuple[sources.Candidate, Memory]] = []
        final: dict[str, str] = {}  # a kept candidate's name → the name it is saved under
        # The link targets the store held before this call (names are looked up, not listed).
        before = {link for _, m in memories for link in m.links if link in names}
        for candidate, memory in memories:
            what = f"{candidate.source or candidate.name}: {memory.description}"
            mine = sources.key(memory.description)
            known = keys + [sources.key(d) for d in _near(store, memory.description)]
            if any(sources.duplicate(mine, other, loose) for other in known):
                skipped.append((what, "already in the store"))
                continue
            name = memory.name
            for n in range(2, 1000):
                if name not in names:
                    break
                name = f"{memory.name[: 64 - len(str(n)) - 1]}-{n}"
            keys.append(mine)
            final[memory.name] = name
            names[name] = f"{memory.type}/{name}.md"
            kept.append((candidate, memory))
        for candidate, memory in kept:
            # A link follows its target's rename; one to a draft left out stays only if the
            # store holds that name (an earlier import of the same source made it).
            links = tuple(
                final.get(link, link) for link in memory.links if link in final or link in before
            )
            memory = evolve(memory, name=final[memory.name], links=links)
            path = store.root / memory.type / f"{memory.name}.md"
            writes.append(transaction.Write(path, render(memory)))
            created.append(f"{memory.type}/{memory.name}")
            shown = f"{candidate.source}: {candidate.origin}" if candidate.origin else ""
            origins.append(shown + (f"; links: {', '.join(links)}" if shown and links else ""))
            new_descriptions.append(memory.description)
            by_type[memory.type] = by_type.get(memory.type, 0) + 1
        sha = None
        if writes and not dry_run:
            for write in writes:
                transaction.check_path(store, write.path)
            sha = transaction.commit(store, writes, message, actor)
    return Imported(
        created=tuple(created),
        descriptions=tuple(new_descriptions),
        skipped=tuple(skipped),
        found=len(candidates) + len(copies),
        by_type=by_type,
        commit=sha,
        dry_run=dry_run,
        origins=tuple(origins),
    )


def as_draft(memory: Memory, actor: str) -> Memory:
    """`memory` as a new draft of `actor`'s: its content kept, its review trail dropped (this
    store's history backs none of it)."""
    return evolve(
        memory,
        status=Status.DRAFT.value,
        owner=actor,
        confirmed_by=None,
        confirmed_at=None,
        confirmed_reason=None,
        confirmed_hash=None,
        deprecated_by=None,
        deprecated_at=None,
        deprecated_reason=None,
        superseded_by=None,
        restored_by=None,
        restored_at=None,
        restored_reason=None,
    )


def _checked_copy(store: Store, copy: Copy) -> Memory:
    """The memory an export record holds, checked to fit this store.

    Raises:
        InvalidMemory: for a path that is not `<type>/<name>.md` of a known type, or text that
            is not that memory.
    """
    folder, _, file = copy.path.partition("/")
    if not file.endswith(".md") or "/" in file or folder not in store.types:
        raise InvalidMemory(
            f"{copy.source}: {copy.path!r} is not a memory file of this store "
            f"(<type>/<name>.md; types are: {', '.join(store.types)})"
        )
    if len(copy.text.encode("utf-8")) > FILE_MAX:
        raise InvalidMemory(f"{copy.source}: {copy.path} is larger than {FILE_MAX} bytes")
    try:
        check_name(file.removesuffix(".md"))
        memory = parse(copy.text)
    except (InvalidMemory, InvalidName) as e:
        raise InvalidMemory(f"{copy.source}: {copy.path}: {e}") from e
    if memory.name != file.removesuffix(".md") or memory.type != folder:
        raise InvalidMemory(
            f"{copy.source}: {copy.path} holds {memory.type}/{memory.name}, not what its path says"
        )
    return memory


def _refuse(store: Store, source: str, memory: Memory, allow_secret: bool) -> None:
    where = f"{source} " if source else ""
    texts: dict[str, str | tuple[str, ...] | list[str] | None] = {
        f"{where}description": memory.description,
        f"{where}body": memory.body,
        f"{where}tags": memory.tags,
    }
    for key, value in memory.extra.items():
        if isinstance(value, str):
            texts[f"{where}{key}"] = value
        elif isinstance(value, list):
            items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
            texts[f"{where}{key}"] = [v for v in items if isinstance(v, str)]
    store.refuse_secrets(texts, allow_secret)


FORMAT_NAMES = {
    "instructions": "agent instruction files",
    "adr": "ADRs",
    "memstore-export": "memstore export",
    "memory-server": "official memory server graph",
    "basic-memory": "basic-memory notes",
    "claude-code-memory": "Claude Code auto memory",
}
"""Each format `gather` tells apart, as a commit message names it."""


def import_path(
    store: Store,
    path: Path,
    *,
    dry_run: bool = False,
    allow_secret: bool = False,
    exact: bool = False,
) -> Imported:
    """Import what `path` (a file or a folder) holds, its format told by `gather`: rules,
    decisions, notes, graph entities and exported memories become drafts owned by the acting
    identity (with `exact`, exported memories are written back byte for byte); one commit for
    the whole source. What the store already holds is skipped.

    Raises:
        InvalidMemory (nothing importable, a bad file: `file:line: …`), SecretFound (nothing
        is written), NoIdentity, StoreLocked.
    """
    found = gather(path)
    if not found.read:
        raise InvalidMemory(
            f"found nothing to import at {path}: give CLAUDE.md, AGENTS.md, .cursorrules, an ADR "
            "folder (docs/adr), a file `memstore export` wrote, the memory server's "
            "memory.jsonl, a folder of basic-memory notes or Claude Code's memory folder "
            "(~/.claude/projects/<project>/memory)"
        )
    read = found.read
    shown = read[0] if len(read) == 1 else f"{len(read)} files from {path.name or path}"
    kinds = ", ".join(FORMAT_NAMES[f] for f in found.formats)
    result = save(
        store,
        found.candidates,
        found.copies,
        f"memory: import {shown} ({kinds})",
        dry_run=dry_run,
        allow_secret=allow_secret,
        exact=exact,
    )
    return replace(
        result,
        skipped=(*found.skipped, *result.skipped),
        sources=tuple(read),
        formats=tuple(found.formats),
    )


# -- export -----------------------------------------------------------------------------------


def _selected(
    store: Store, type: str | None, status: str | None, tags: tuple[str, ...]
) -> Iterable[tuple[str, bytes, Memory]]:
    """Each memory file that passes the filters: its path, bytes and memory as shown (its
    status as the history supports it)."""
    if type is not None and type not in store.types:
        raise InvalidMemory(f"unknown type {type!r}; types are: {', '.join(store.types)}")
    for entry in memory_files(store.root, [type] if type else None):
        try:
            memory, data = store.read_file(entry.path)
        except (InvalidMemory, OSError, MemoryNotFound):
            continue  # lint names it; an export carries the files that are memories
        if status is not None and memory.status != status:
            continue
        if not all(t in memory.tags for t in tags):
            continue
        yield entry.rel, data, memory


def export(
    store: Store,
    format: str,
    *,
    type: str | None = None,
    status: str | None = None,
    tags: tuple[str, ...] = (),
) -> str:
    """The store's memories (or those that pass the filters) as one text: `jsonl` and `json`
    carry each file's exact text (import restores them byte for byte), `markdown` is one
    context file for tools that read a single file.

    Raises:
        InvalidMemory: for an unknown format or type.
    """
    if format not in FORMATS:
        raise InvalidMemory(f"unknown format {format!r}; formats are: {', '.join(FORMATS)}")
    chosen = list(_selected(store, type, status, tags))
    if format == "markdown":
        # Deprecated memories only when asked for: a context file states what holds.
        return _markdown([c for c in chosen if status or c[2].status != Status.DEPRECATED])
    records = [
        {
            "path": rel,
            "name": memory.name,
            "type": memory.type,
            "status": memory.status,
            "text": data.decode("utf-8"),
        }
        for rel, data, memory in chosen
    ]
    if format == "json":
        body = {EXPORT_MARK: EXPORT_VERSION, "memories": records}
        return json.dumps(body, ensure_ascii=False, indent=2) + "\n"
    lines = [json.dumps({EXPORT_MARK: EXPORT_VERSION, "count": len(records)})]
    lines += [json.dumps(r, ensure_ascii=False) for r in records]
    return "\n".join(lines) + "\n"


def check_output(store: Store, path: Path) -> Path:
    """`path` if an export may be written there: outside the store, whose files only the
    write path writes.

    Raises:
        InvalidMemory: for a path inside the store.
    """
    resolved = path.expanduser().absolute().resolve()
    if resolved == store.root or store.root in resolved.parents:
        raise InvalidMemory(
            f"{path} is inside the store: write the export outside it (e.g. ../export.jsonl)"
        )
    return resolved


MARKDOWN_ORDER = ("correction", "warning", "decision", "runbook")
"""Types a context file puts first: the rules, then the settled knowledge."""


def _markdown(chosen: list[tuple[str, bytes, Memory]]) -> str:
    """One Markdown file: memories grouped by type (rules first), each with its status."""
    shown = [m for _, _, m in chosen]
    types = sorted(
        {m.type for m in shown},
        key=lambda t: (MARKDOWN_ORDER.index(t) if t in MARKDOWN_ORDER else 99, t),
    )
    out = [
        "# Project memory",
        "",
        "Exported from memstore. Each entry says its status: `confirmed` was reviewed by "
        "someone other than its author; `draft` is a hypothesis.",
    ]
    for kind in types:
        out += ["", f"## {kind.capitalize()}"]
        for m in sorted((m for m in shown if m.type == kind), key=lambda m: m.name):
            out += ["", f"### {m.description}", "", f"`{m.name}` · {m.status} · {m.owner}"]
            applies: Any = m.extra.get("applies_when")
            if isinstance(applies, list) and applies:
                out.append(f"Applies when: {', '.join(str(a) for a in applies)}")  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            if m.body:
                out += ["", _demoted(m.body)]
    return "\n".join(out) + "\n"


def _demoted(body: str) -> str:
    """A body's headings moved below the file's own (`#` → `####`)."""
    lines: list[str] = []
    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and line.startswith("#"):
            line = "###" + line
        lines.append(line)
    return "\n".join(lines)
