"""The memory model: one Markdown file with YAML front matter, parsed and rendered canonically.

Its fields' checks are `fields` (and `identity`); the YAML text is `memory_yaml`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any

from memstore.errors import InvalidMemory
from memstore.model import memory_yaml, when
from memstore.model.fields import (
    BODY_MAX,
    CORE_KEYS,
    KEY_ORDER,
    TRAIL_KEYS,
    check_name,
    quoted,
    type_name,
)

FILE_MAX = 2 * BODY_MAX
"""A file larger than this is not read as a memory (lint reports it)."""
DEFAULT_TYPES = (
    "decision",
    "fact",
    "pattern",
    "runbook",
    "incident",
    "postmortem",
    "correction",
    "warning",
    "reference",
    "working",
)

RULE_TYPES = ("correction", "warning")
"""The types that act as rules before an action (see `workflow`)."""


@dataclass(frozen=True, slots=True)
class Memory:
    """One memory: its front-matter fields and its Markdown body."""

    name: str
    description: str
    type: str
    status: str
    owner: str
    created: str
    updated: str
    tags: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    body: str = ""
    confirmed_by: str | None = None
    confirmed_at: str | None = None
    confirmed_reason: str | None = None
    confirmed_hash: str | None = None
    """The `content_hash` of what its confirmer confirmed: a later change shows."""
    verified_by: str | None = None
    """Who last re-verified a confirmed memory (still true), when and why: not content."""
    verified_at: str | None = None
    verified_reason: str | None = None
    pinned: bool | None = None
    """Ranks higher in recall and survives briefing budgets; None when not pinned."""
    deprecated_by: str | None = None
    deprecated_at: str | None = None
    deprecated_reason: str | None = None
    superseded_by: str | None = None
    supersedes: tuple[str, ...] = ()
    deprecation_proposed_by: str | None = None
    """Who proposed deprecating a rule that binds them (see `storage.binding`): it stays in force
    until a person, or for an agent's rule another identity, agrees. When and why, and the
    successor proposed, follow."""
    deprecation_proposed_at: str | None = None
    deprecation_proposed_reason: str | None = None
    deprecation_proposed_successor: str | None = None
    restored_by: str | None = None
    restored_at: str | None = None
    restored_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict[str, Any])
    """Every other front-matter key (expires, importance, scope, severity, keys a human added)."""

    @property
    def path_parts(self) -> tuple[str, str]:
        """The memory's place in the store: (type folder, file name)."""
        return self.type, f"{self.name}.md"


def now() -> str:
    """The current UTC time as an ISO 8601 string with a `Z` suffix, to the second."""
    return when.stamp(when.utcnow())


def _text(value: object, key: str) -> str:
    if type(value) is str:  # nearly always: the quick test first
        return value
    if isinstance(value, date | datetime):
        return value.isoformat()
    if not isinstance(value, str):
        raise InvalidMemory(f"front-matter key '{key}' must be text, got {type_name(value)}")
    return value


def _optional_text(value: object, key: str) -> str | None:
    return None if value is None else _text(value, key)


def _names(value: object, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise InvalidMemory(f"front-matter key '{key}' must be a list of memory names")
    items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
    return tuple(check_name(item, f"{key} entry") for item in items)


def _tags(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidMemory("front-matter key 'tags' must be a list")
    items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
    return tuple(str(t) for t in items)


def _pinned(value: object) -> bool | None:
    if value is None or value is False:
        return None
    if value is not True:
        raise InvalidMemory(f"front-matter key 'pinned' must be true or false, got {quoted(value)}")
    return True


def parse(text: str) -> Memory:
    """Parse a memory file's text into a `Memory`.

    Raises:
        InvalidMemory: naming the first problem (missing key, wrong shape, bad name).
    """
    data, body = memory_yaml.split(text)
    missing = [k for k in CORE_KEYS if k not in data and k != "tags"]
    if missing:
        raise InvalidMemory(f"front matter lacks required key(s): {', '.join(missing)}")
    known = set(KEY_ORDER)
    extra = {str(k): v for k, v in data.items() if k not in known}
    return Memory(
        name=check_name(_text(data["name"], "name")),
        description=_text(data["description"], "description"),
        type=_text(data["type"], "type"),
        status=_text(data["status"], "status"),
        owner=_text(data["owner"], "owner"),
        created=_text(data["created"], "created"),
        updated=_text(data["updated"], "updated"),
        tags=_tags(data.get("tags")),
        links=_names(data.get("links"), "links"),
        body=body.strip("\n"),
        confirmed_by=_optional_text(data.get("confirmed_by"), "confirmed_by"),
        confirmed_at=_optional_text(data.get("confirmed_at"), "confirmed_at"),
        confirmed_reason=_optional_text(data.get("confirmed_reason"), "confirmed_reason"),
        confirmed_hash=_optional_text(data.get("confirmed_hash"), "confirmed_hash"),
        verified_by=_optional_text(data.get("verified_by"), "verified_by"),
        verified_at=_optional_text(data.get("verified_at"), "verified_at"),
        verified_reason=_optional_text(data.get("verified_reason"), "verified_reason"),
        pinned=_pinned(data.get("pinned")),
        deprecated_by=_optional_text(data.get("deprecated_by"), "deprecated_by"),
        deprecated_at=_optional_text(data.get("deprecated_at"), "deprecated_at"),
        deprecated_reason=_optional_text(data.get("deprecated_reason"), "deprecated_reason"),
        superseded_by=(
            check_name(data["superseded_by"], "superseded_by")
            if data.get("superseded_by") is not None
            else None
        ),
        supersedes=_names(data.get("supersedes"), "supersedes"),
        deprecation_proposed_by=_optional_text(
            data.get("deprecation_proposed_by"), "deprecation_proposed_by"
        ),
        deprecation_proposed_at=_optional_text(
            data.get("deprecation_proposed_at"), "deprecation_proposed_at"
        ),
        deprecation_proposed_reason=_optional_text(
            data.get("deprecation_proposed_reason"), "deprecation_proposed_reason"
        ),
        deprecation_proposed_successor=(
            check_name(data["deprecation_proposed_successor"], "deprecation_proposed_successor")
            if data.get("deprecation_proposed_successor") is not None
            else None
        ),
        restored_by=_optional_text(data.get("restored_by"), "restored_by"),
        restored_at=_optional_text(data.get("restored_at"), "restored_at"),
        restored_reason=_optional_text(data.get("restored_reason"), "restored_reason"),
        extra=extra,
    )


def to_dict(memory: Memory) -> dict[str, Any]:
    """The front matter of `memory` in canonical key order; empty optional keys are left out."""
    data: dict[str, Any] = {
        "name": memory.name,
        "description": memory.description,
        "type": memory.type,
        "status": memory.status,
        "owner": memory.owner,
        "created": memory.created,
        "updated": memory.updated,
        "tags": list(memory.tags),
    }
    for key in TRAIL_KEYS:
        value = getattr(memory, key)
        if isinstance(value, tuple):
            if value:
                data[key] = list(value)  # pyright: ignore[reportUnknownArgumentType]
        elif value is not None:
            data[key] = value
    for key, value in memory.extra.items():
        if key not in data:
            data[key] = value
    return data


def render(memory: Memory) -> str:
    """The canonical file text of `memory`: `render(parse(text)) == text` for canonical files."""
    head = memory_yaml.dump(to_dict(memory))
    body = memory.body.strip("\n")
    return f"---\n{head}---\n" + (f"\n{body}\n" if body else "")


CONTENT_KEYS = ("name", "type", "owner", "created", "description", "body")
"""What a confirmation vouches for, with every key outside the trail (`extra`: rule fields,
expiry, keys a human added). Status, trail, `updated`, tags and links are not content."""


def content_hash(memory: Memory) -> str:
    """A digest of what a reviewer confirms (see CONTENT_KEYS): 16 hex digits of SHA-256."""
    data = {key: getattr(memory, key) for key in CONTENT_KEYS}
    data["extra"] = memory.extra
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def expiry(memory: Memory) -> str:
    """The `YYYY-MM-DD` day after which `memory` leaves searches ("" for none)."""
    value = memory.extra.get("expires")
    if value is None:
        return ""
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return text[:10]


def evolve(memory: Memory, **changes: Any) -> Memory:
    """A copy of `memory` with `changes` applied."""
    return replace(memory, **changes)


_BODY_LINK = re.compile(r"\[\[([a-z0-9][a-z0-9-]{0,63})\]\]")


def links_in_body(body: str) -> tuple[str, ...]:
    """The `[[name]]` references in a body, in order of first appearance."""
    seen: list[str] = []
    for match in _BODY_LINK.finditer(body):
        if match.group(1) not in seen:
            seen.append(match.group(1))
    return tuple(seen)


def rename_links(body: str, names: dict[str, str]) -> str:
    """`body` with each `[[old]]` reference in `names` (old name → new) pointing at the new."""
    if not names:
        return body
    return _BODY_LINK.sub(lambda m: f"[[{names.get(m.group(1), m.group(1))}]]", body)


def renamed(memory: Memory, names: dict[str, str]) -> Memory:
    """`memory` as it reads after the renames in `names` (old name → new): its own name, its
    `links`, `supersedes`, `superseded_by` and the `[[name]]` references in its body."""
    if not names:
        return memory

    def one(name: str | None) -> str | None:
        return None if name is None else names.get(name, name)

    return evolve(
        memory,
        name=names.get(memory.name, memory.name),
        links=tuple(names.get(n, n) for n in memory.links),
        supersedes=tuple(names.get(n, n) for n in memory.supersedes),
        superseded_by=one(memory.superseded_by),
        body=rename_links(memory.body, names),
    )
