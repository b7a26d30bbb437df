"""The session briefing: sections of Markdown bullets fitted to a token budget."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memstore.history import Change, FileChange

DEFAULT_BUDGET = 1500
"""Tokens: about 6,000 characters, small enough to push into every session."""

LIST_MAX = 50
"""At most this many bullets per section before budgeting (a busy store has hundreds)."""

FIRST_SESSION_SINCE = "7 days ago"
"""How far back "changes since your last session" looks when there was no last session."""

CHARS_PER_TOKEN = 4
"""Approximate tokens as characters / 4: close enough for English Markdown, and tokenizer-free."""

MIN_BUDGET = 100
"""Room for the header, the rules heading and a short note of what was cut."""


@dataclass(frozen=True, slots=True)
class Section:
    """A titled list of bullets; `priority` 1 is kept longest when the budget is tight."""

    title: str
    priority: int
    lines: tuple[str, ...]
    empty: str | None = None
    """What to say when there is nothing to list (None: leave the section out)."""


@dataclass(frozen=True, slots=True)
class Briefing:
    """The briefing's Markdown, its approximate size, and what was cut to fit the budget."""

    text: str
    tokens: int
    budget: int
    cut: tuple[str, ...] = ()


def tokens(text: str) -> int:
    """Approximate token count of `text` (characters / 4, rounded up)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def _render(header: str, sections: list[Section], kept: dict[str, int], note: str) -> str:
    parts = [header]
    for s in sections:
        n = kept[s.title]
        if n == 0 and not (s.empty and not s.lines):
            continue
        body = list(s.lines[:n]) if n else [s.empty or ""]
        parts.append(f"## {s.title}\n" + "\n".join(body))
    if note:
        parts.append(f"_Cut to fit the budget: {note}._")
    return "\n\n".join(parts) + "\n"


def _cut_notes(sections: list[Section], kept: dict[str, int]) -> list[str]:
    notes: list[str] = []
    for s in sorted(sections, key=lambda x: x.priority):
        dropped = len(s.lines) - kept[s.title]
        if dropped == len(s.lines) and dropped:
            notes.append(f"{s.title.lower()} ({dropped})")
        elif dropped:
            notes.append(f"{dropped} of {len(s.lines)} {s.title.lower()}")
    return notes


def _short_note(sections: list[Section], kept: dict[str, int]) -> str:
    dropped = [len(s.lines) - kept[s.title] for s in sections]
    items, parts = sum(dropped), sum(1 for d in dropped if d)
    return f"{items} item(s) from {parts} section(s)" if items else ""


def fit(header: str, sections: list[Section], budget: int) -> Briefing:
    """Render `sections` in their given order within `budget` tokens.

    Drops bullets from the end of the least important section first (highest `priority`
    number), then the next, until the text, including a line naming what was cut, fits; when
    even that line is too long, it shrinks to a count. The header is always kept.
    """
    budget = max(budget, MIN_BUDGET)
    kept = {s.title: len(s.lines) for s in sections}
    text = _render(header, sections, kept, "")
    order = sorted(sections, key=lambda s: s.priority, reverse=True)
    while tokens(text) > budget:
        victim = next((s for s in order if kept[s.title] > 0), None)
        if victim is None:
            text = _render(header, sections, kept, _short_note(sections, kept))
            break
        kept[victim.title] -= 1
        text = _render(header, sections, kept, "; ".join(_cut_notes(sections, kept)))
    notes = _cut_notes(sections, kept)
    return Briefing(text=text, tokens=tokens(text), budget=budget, cut=tuple(notes))


def change_lines(change: Change, rel: str, f: FileChange, outcomes_file: str) -> list[str]:
    """Bullets for what one commit did to one file (`rel`, relative to the store)."""
    when = change.date[:16].replace("T", " ")
    if f.kind != "appended":
        name = rel[:-3] if rel.endswith(".md") else rel
        return [f"- {when} {change.author} {f.kind} `{name}`"]
    out: list[str] = []
    for line in f.added_lines:
        try:
            data: Any = json.loads(line)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        record: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
        if rel == outcomes_file:
            what = f"outcome: `{record.get('name')}` {record.get('outcome')}"
        else:
            parts = [str(record.get(k)) for k in ("action", "target", "status") if record.get(k)]
            what = f"{rel}: {' '.join(parts)}"
        out.append(f"- {when} {change.author} {what}")
    return out
