"""basic-memory's Markdown notes read into candidate memories: each note a draft (its text the
body), its front matter's `type` and its observations' categories the memstore type, its
tags and observations' `#tags` the tags, its relations and `[[wiki links]]` to other notes of
the same import the links. Pure functions: nothing here opens a store.

A note is front matter (`title`, `type`, `tags`, `permalink`) then Markdown, where a list item
`- [category] text #tag (context)` is an observation and `- relation_type [[Target]]
(context)` a relation; `[[Target]]` elsewhere is a link too (basic-memory's `links_to`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import yaml

from memstore.errors import InvalidMemory
from memstore.model.fields import BODY_MAX, LINKS_MAX, TAGS_MAX
from memstore.workflow.care import sources

SOURCE = "basic-memory"
_OBSERVATION = re.compile(
    r"^\s*[-*]\s+\[(?P<category>[^\[\]]*[^\[\]\sxX][^\[\]]*)\]\s+(?P<text>\S.*)$"
)
_RELATION = re.compile(r"^\s*[-*]\s+(?P<relation>[A-Za-z_][\w-]*)\s+\[\[(?P<target>[^\[\]]+)\]\]")
_WIKI = re.compile(r"\[\[(?P<target>[^\[\]|]+)(?:\|[^\[\]]*)?\]\]")
_HASHTAG = re.compile(r"(?:^|\s)#(?P<tag>[\w][\w/-]*)")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True, slots=True)
class Note:
    """One note as read: where it is, its front matter and its parts."""

    label: str
    stem: str
    meta: dict[str, Any]
    content: str
    observations: tuple[tuple[str, str], ...]
    """(category, text) of each observation."""
    relations: tuple[tuple[str, str], ...]
    """(relation type, target) of each relation and wiki link (`links_to` for the latter)."""
    hashtags: tuple[str, ...]

    @property
    def title(self) -> str:
        title = self.meta.get("title")
        if isinstance(title, str) and title.strip():
            return " ".join(title.split())
        heading = re.search(r"^#\s+(.+?)\s*$", self.content, re.MULTILINE)
        return sources.plain_line(heading.group(1)) if heading else self.stem

    @property
    def permalink(self) -> str:
        value = self.meta.get("permalink")
        return value.strip() if isinstance(value, str) else ""


def split_front_matter(text: str, label: str) -> tuple[dict[str, Any], str, int]:
    """A Markdown file's front matter (a mapping), the text after it, and the line it starts.

    Raises:
        InvalidMemory: `label:line: …` for front matter that is unclosed, not YAML or not a
            mapping.
    """
    if not text.startswith("---\n") and not text.startswith("---\r\n"):
        return {}, text, 1
    lines = text.splitlines(keepends=True)
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise InvalidMemory(f"{label}:1: front matter opened with '---' is never closed")
    try:
        data: Any = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as e:
        mark: Any = getattr(e, "problem_mark", None)
        line = 2 + (mark.line if mark is not None else 0)
        problem = getattr(e, "problem", None) or "invalid YAML"
        raise InvalidMemory(f"{label}:{line}: front matter is not valid YAML ({problem})") from e
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidMemory(f"{label}:2: front matter must be a mapping of keys to values")
    return data, "".join(lines[end + 1 :]), end + 2  # pyright: ignore[reportUnknownVariableType]


def read_note(text: str, label: str, stem: str) -> Note:
    """A note's parts.

    Raises:
        InvalidMemory: for bad front matter (see `split_front_matter`).
    """
    meta, content, _ = split_front_matter(text, label)
    observations: list[tuple[str, str]] = []
    relations: list[tuple[str, str]] = []
    hashtags: list[str] = []
    fenced = False
    for line in content.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        if relation := _RELATION.match(line):
            relations.append((relation.group("relation"), relation.group("target").strip()))
            continue
        if observed := _OBSERVATION.match(line):
            words = observed.group("text")
            hashtags += [m.group("tag") for m in _HASHTAG.finditer(words)]
            words = re.sub(r"\s*\([^()]*\)\s*$", "", _HASHTAG.sub("", words)).strip()
            observations.append((observed.group("category").strip(), words))
        relations += [("links_to", m.group("target").strip()) for m in _WIKI.finditer(line)]
    return Note(
        label, stem, meta, content.strip(), tuple(observations), tuple(relations), tuple(hashtags)
    )


def is_note(text: str) -> bool:
    """Whether a Markdown file reads as a basic-memory note: front matter with a `permalink`
    (basic-memory writes one into every note it syncs), or front matter with a `title`,
    `type` or `tags` and an observation or relation line. Plain Markdown is no note: a
    README's `- [WIP] …` item is not an observation."""
    if not text.startswith("---"):
        return False
    head = text.split("\n---", 1)[0]
    if re.search(r"^permalink:", head, re.M):
        return True
    if not re.search(r"^(?:title|type|tags):", head, re.M):
        return False
    return any(_OBSERVATION.match(line) or _RELATION.match(line) for line in text.splitlines())


def _tags(note: Note) -> tuple[str, ...]:
    raw: Any = note.meta.get("tags")
    listed: list[Any] = []
    if isinstance(raw, str):
        listed = raw.split(",")
    elif isinstance(raw, list):
        listed = list(raw)  # pyright: ignore[reportUnknownArgumentType]
    found = [sources.slug(str(t), 32) for t in [*listed, *note.hashtags] if str(t).strip()]
    return tuple(dict.fromkeys(["imported", *found]))[:TAGS_MAX]


def _kind(note: Note) -> tuple[str, str]:
    """The memstore type of a note, and what it was taken from."""
    declared = str(note.meta.get("type") or "note")
    kind = sources.kind_of(declared, "")
    if kind:
        return kind, f"type {declared}"
    mapped = Counter(k for c, _ in note.observations if (k := sources.kind_of(c, "")))
    if mapped:
        kind, _ = mapped.most_common(1)[0]
        return kind, f"type {declared}, observations mostly {kind}"
    return "fact", f"type {declared}"


def note_candidates(notes: list[Note], taken: set[str]) -> list[sources.Candidate]:
    """A draft for each note: named after its permalink (else its title), its relations and
    wiki links to other notes of `notes` (by title, permalink or file name) as links. `taken`
    holds the names already used (it is extended)."""
    # A permalink's last part: `deploy/deploy-pipeline` is the note `deploy-pipeline`.
    names = [
        sources.unique(sources.slug(n.permalink.rsplit("/", 1)[-1] or n.title), taken)
        for n in notes
    ]
    known: dict[str, str] = {}
    for note, name in zip(notes, names, strict=True):
        for key in (note.title, note.permalink, note.stem, name):
            if key:
                known.setdefault(key.casefold(), name)
    out: list[sources.Candidate] = []
    for note, name in zip(notes, names, strict=True):
        targets = [t for _, t in note.relations]
        links = [
            known[t.casefold()]
            for t in targets
            if t.casefold() in known and known[t.casefold()] != name
        ]
        unresolved = sum(1 for t in targets if t.casefold() not in known)
        kind, why = _kind(note)
        first = note.observations[0][1] if note.observations else ""
        summary = f"{note.title}: {first}" if first and first != note.title else note.title
        body = note.content
        if len(body) > BODY_MAX - 300:
            body = body[: BODY_MAX - 300].rsplit("\n", 1)[0] + "\n\n[…]"
        where = f", permalink {note.permalink}" if note.permalink else ""
        extra = (("permalink", note.permalink),) if note.permalink else ()
        out.append(
            sources.Candidate(
                name=name,
                type=kind,
                description=sources.describe(summary),
                body=f"{body}\n\nImported from `{note.label}` ({SOURCE} note{where}).",
                tags=_tags(note),
                source=note.label,
                extra=extra,
                links=tuple(dict.fromkeys(links))[:LINKS_MAX],
                origin=(
                    f"note {json.dumps(note.title, ensure_ascii=False)} ({why} → {kind}), "
                    f"{len(note.observations)} observation(s), {len(targets)} relation(s)"
                    + (f", {unresolved} to notes not imported" if unresolved else "")
                ),
            )
        )
    return out
