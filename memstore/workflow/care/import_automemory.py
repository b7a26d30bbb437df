"""Claude Code's auto memory (`~/.claude/projects/<project>/memory/`) read into candidate
memories: each topic file a draft, each line of the `MEMORY.md` index that is no pointer to a
topic file a draft of its own. Pure functions: nothing here opens a store.

A topic file has front matter `name`, `description` and `type` (`user`, `feedback`,
`project`, `reference`), or none (older folders: `debugging.md`, `patterns.md`); the index
lists them as `- [Title](file.md) — hook`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memstore.model.fields import BODY_MAX
from memstore.workflow.care import sources
from memstore.workflow.care.import_notes import split_front_matter

INDEX = "MEMORY.md"
SOURCE = "Claude Code auto memory"
_POINTER = re.compile(
    r"\[(?P<title>[^\]]+)\]\((?P<file>[^)\s]+\.md)\)\s*(?:[-—–:]+\s*)?(?P<hook>.*)$"
)
KINDS = {"user": "fact", "project": "fact", "reference": "reference"}
"""Claude Code's memory types and the memstore type of each (`feedback`: see `_kind`)."""


@dataclass(frozen=True, slots=True)
class Topic:
    """A topic file of the folder: its file name and text."""

    file: str
    label: str
    text: str


def pointers(index: str) -> dict[str, tuple[int, str, str]]:
    """The topic files `MEMORY.md` points to: file name → (line, title, hook)."""
    found: dict[str, tuple[int, str, str]] = {}
    for number, line in enumerate(index.splitlines(), start=1):
        if m := _POINTER.search(line):
            file = m.group("file").removeprefix("./")
            found.setdefault(file, (number, m.group("title").strip(), m.group("hook").strip()))
    return found


def _kind(declared: str, text: str) -> str:
    """The memstore type of a topic file of Claude Code's type `declared` ('' when none)."""
    if declared == "feedback":
        # A person's guidance: a rule when it reads as one, else a way of working.
        return "correction" if sources.is_imperative(text) else "pattern"
    if declared in KINDS:
        return KINDS[declared]
    return sources.kind_of(declared)


def memory_candidates(
    index: str | None, index_label: str, topics: list[Topic], taken: set[str]
) -> tuple[list[sources.Candidate], list[tuple[str, str]]]:
    """A draft for each topic file and each index line that points to none, and (what, why)
    for each pointer to a file that is not there. `taken` holds the names used (extended).

    Raises:
        InvalidMemory: for a topic file's bad front matter, naming the file and line.
    """
    pointed = pointers(index) if index is not None else {}
    out: list[sources.Candidate] = []
    present = {t.file for t in topics}
    skipped = [
        (f"{index_label}:{line}: {file}", "the index points to a file that is not in the folder")
        for file, (line, _, _) in pointed.items()
        if file not in present
    ]
    for topic in topics:
        meta, content, _ = split_front_matter(topic.text, topic.label)
        stem = topic.file.removesuffix(".md")
        inner: Any = meta.get("metadata")
        nested: dict[str, Any] = inner if isinstance(inner, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        declared = str(meta.get("type") or nested.get("type") or "").strip().lower()
        if not declared and "_" in stem:  # `feedback_testing.md`: the convention names it
            prefix = stem.split("_", 1)[0].lower()
            declared = prefix if prefix in (*KINDS, "feedback") else ""
        line, title, hook = pointed.get(topic.file, (0, "", ""))
        name_field = str(meta.get("name") or "").strip()
        heading = re.search(r"^#\s+(.+?)\s*$", content, re.MULTILINE)
        title = (
            name_field
            or (sources.plain_line(heading.group(1)) if heading else "")
            or title
            or stem.replace("_", " ").replace("-", " ")
        )
        summary = str(meta.get("description") or "").strip() or hook
        if not summary:
            said = [x for x in content.splitlines() if x.strip() and not x.lstrip().startswith("#")]
            summary = sources.plain_line(said[0].strip().lstrip("-*+ ")) if said else ""
        summary = summary or title
        kind = _kind(declared, summary)
        description = sources.describe(
            summary if title.lower() in summary.lower() else f"{title}: {summary}"
        )
        body = content.strip()
        if len(body) > BODY_MAX - 300:
            body = body[: BODY_MAX - 300].rsplit("\n", 1)[0] + "\n\n[…]"
        listed = f", listed at {index_label}:{line}" if line else ""
        out.append(
            sources.Candidate(
                name=sources.unique(sources.slug(name_field or stem), taken),
                type=kind,
                description=description,
                body=f"{body}\n\nImported from `{topic.label}` ({SOURCE}{listed}).",
                tags=("imported", "claude-code", *([declared] if declared else [])),
                applies_when=sources.patterns_of(summary) if kind == "correction" else (),
                source=topic.label,
                origin=(
                    f"topic file {json.dumps(title, ensure_ascii=False)} "
                    f"(type {declared or 'none'} → {kind})"
                ),
            )
        )
    if index is not None:
        out += _index_lines(index, index_label, taken)
    return out, skipped


def _index_lines(index: str, label: str, taken: set[str]) -> list[sources.Candidate]:
    """A draft for each line of `MEMORY.md` that states something itself (no pointer)."""
    out: list[sources.Candidate] = []
    for number, heading, line in sources.rule_lines(index):
        if _POINTER.search(line):
            continue
        text = sources.plain_line(line)
        rule = sources.is_imperative(line)
        kind = "correction" if rule else "fact"
        section = f", section “{heading}”" if heading else ""
        tag = sources.slug(heading, 32) if heading else ""
        out.append(
            sources.Candidate(
                name=sources.unique(sources.slug(text), taken),
                type=kind,
                description=sources.describe(text),
                body=f"{text}\n\nImported from `{label}` (line {number}{section}; {SOURCE}).",
                tags=("imported", "claude-code", *([tag] if tag and tag != "note" else [])),
                applies_when=sources.patterns_of(line) if rule else (),
                source=f"{label}:{number}",
                origin=f"index line ({'a rule' if rule else 'a statement'} → {kind})",
            )
        )
    return out
