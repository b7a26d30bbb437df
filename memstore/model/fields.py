"""A memory's front-matter fields one by one: their keys in order, their limits, and the
checks a value passes before it is written (the characters no field may hold among them)."""

from __future__ import annotations

import math
import re
from datetime import date
from typing import Any

from memstore.errors import InvalidMemory, InvalidName
from memstore.model import when


def quoted(value: object) -> str:
    """`value` quoted in an error message: its repr, but an empty YAML value as `(empty)`, never
    Python's `None`."""
    if value is None:
        return "(empty)"
    if isinstance(value, list | dict):  # YAML's own spelling of what it holds: null, not None
        import json

        return json.dumps(value, ensure_ascii=False, default=str)
    return repr(value)


def type_name(value: object) -> str:
    """What `value` is, for an error message: `an empty value` for None, else its type's name."""
    return "an empty value" if value is None else type(value).__name__


NAME_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
NAME_RE = re.compile(NAME_PATTERN)
DESCRIPTION_MAX = 200
BODY_MAX = 64 * 1024
TAGS_MAX = 32
TAG_RE = re.compile(r"^[\w][\w./:+-]{0,63}$")
LINKS_MAX = 64
EXTRA_KEY_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
EXTRA_MAX = 16
# Names Windows reserves for devices: `con.md` cannot be checked out there.
RESERVED_NAMES = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{d}{i}" for d in ("com", "lpt") for i in range(10)]
)


# Core keys first, then the known optional keys; keys a human added follow in their own order.
CORE_KEYS = ("name", "description", "type", "status", "owner", "created", "updated", "tags")
TRAIL_KEYS = (
    "links",
    "pinned",
    "confirmed_by",
    "confirmed_at",
    "confirmed_reason",
    "confirmed_hash",
    "verified_by",
    "verified_at",
    "verified_reason",
    "deprecated_by",
    "deprecated_at",
    "deprecated_reason",
    "superseded_by",
    "supersedes",
    "deprecation_proposed_by",
    "deprecation_proposed_at",
    "deprecation_proposed_reason",
    "deprecation_proposed_successor",
    "restored_by",
    "restored_at",
    "restored_reason",
)
KEY_ORDER = CORE_KEYS + TRAIL_KEYS

CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Control characters (C0, DEL, C1) and the Unicode line and paragraph separators: what breaks
a line or drives a terminal. Every one-line check and every one-line printer uses it."""


def control(text: str, allowed: str = "") -> bool:
    """Whether `text` holds a `CONTROL_RE` character other than those in `allowed`."""
    # One regex scan instead of a Python loop per character: lint checks every body.
    return any(c not in allowed for c in CONTROL_RE.findall(text))


def check_name(name: object, what: str = "name") -> str:
    """Return `name` if it is a valid memory name.

    Raises:
        InvalidName: with the offending value and the allowed pattern.
    """
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InvalidName(
            f"invalid {what} {quoted(name)}: use 1-64 characters of lower-case letters, digits and "
            "'-', starting with a letter or digit (e.g. 'use-zod-for-validation')"
        )
    if name in RESERVED_NAMES:
        raise InvalidName(
            f"invalid {what} {quoted(name)}: Windows reserves it as a device name, so the file "
            "could not be checked out there; choose another"
        )
    return name


def check_links(links: object) -> tuple[str, ...]:
    """Return links as a tuple of memory names, at most 64 of them.

    Raises:
        InvalidMemory, InvalidName: naming the problem.
    """
    if not isinstance(links, list | tuple):
        raise InvalidMemory(f"links must be a list, got {type_name(links)}")
    items: list[Any] = list(links)  # pyright: ignore[reportUnknownArgumentType]
    if len(items) > LINKS_MAX:
        raise InvalidMemory(f"{len(items)} links given; at most {LINKS_MAX} are allowed")
    return tuple(dict.fromkeys(check_name(link, "link") for link in items))


def check_extra(extra: object) -> dict[str, Any]:
    """Return extra front-matter fields if each is a new key with plain YAML values.

    Raises:
        InvalidMemory: for a key memstore owns (`status`, `confirmed_by`, ...), a key that is
            not snake_case, or a value that is not text, a number, a boolean or a short list.
    """
    if extra is None:
        return {}
    if not isinstance(extra, dict):
        raise InvalidMemory(f"extra fields must be a mapping, got {type_name(extra)}")
    items: dict[Any, Any] = extra  # pyright: ignore[reportUnknownVariableType]
    if len(items) > EXTRA_MAX:
        raise InvalidMemory(f"{len(items)} extra fields given; at most {EXTRA_MAX} are allowed")
    for key, value in items.items():
        if not isinstance(key, str) or not EXTRA_KEY_RE.fullmatch(key):
            raise InvalidMemory(f"invalid extra field name {quoted(key)}: use snake_case, up to 32")
        if key in KEY_ORDER:
            raise InvalidMemory(
                f"extra field {quoted(key)} is one memstore sets itself; pick another"
            )
        if not _plain(value):
            raise InvalidMemory(
                f"extra field {quoted(key)} must be text, a number, a boolean or a list of those "
                f"(at most {TAGS_MAX} items of {DESCRIPTION_MAX * 10} characters)"
            )
    return dict(items)


def _plain(value: object, depth: int = 0) -> bool:
    if value is None or isinstance(value, bool | int | float):
        return True
    if isinstance(value, str):
        return len(value) <= DESCRIPTION_MAX * 10 and not control(value, allowed="\t\n")
    if isinstance(value, list) and depth == 0:
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return len(items) <= TAGS_MAX and all(_plain(v, 1) for v in items)
    return False


def check_line(value: str, what: str) -> str:
    """Return `value` if it is one line of printable text (a reason, a note).

    Raises:
        InvalidMemory: naming `what`.
    """
    if control(value.strip()):
        raise InvalidMemory(
            f"{what} must be one line of printable text, without line breaks or control characters"
        )
    return value


def check_description(description: object) -> str:
    """Return `description` if it is one non-empty line of at most 200 characters.

    Raises:
        InvalidMemory: naming the problem.
    """
    if not isinstance(description, str) or not description.strip():
        raise InvalidMemory("description must be a non-empty line of text")
    if "\n" in description or "\r" in description or control(description):
        raise InvalidMemory(
            "description must be one line of printable text (no line breaks or control "
            "characters); put details in the body"
        )
    if len(description) > DESCRIPTION_MAX:
        raise InvalidMemory(
            f"description is {len(description)} characters; the limit is {DESCRIPTION_MAX} "
            "(it is what search results show; put details in the body)"
        )
    return description


def check_tags(tags: object, what: str = "tag") -> tuple[str, ...]:
    """Return tags as a tuple, each a short single word, at most 32 of them.

    Raises:
        InvalidMemory: naming the first bad tag.
    """
    if tags is None:
        return ()
    if not isinstance(tags, list | tuple):
        raise InvalidMemory(f"{what}s must be a list, got {type_name(tags)}")
    items: list[Any] = list(tags)  # pyright: ignore[reportUnknownArgumentType]
    if len(items) > TAGS_MAX:
        raise InvalidMemory(f"{len(items)} {what}s given; at most {TAGS_MAX} are allowed")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str) or not TAG_RE.fullmatch(item):
            raise InvalidMemory(
                f"invalid {what} {quoted(item)}: use up to 64 letters, digits or . / : + - _, "
                "no spaces"
            )
        if item not in out:
            out.append(item)
    return tuple(out)


SCOPE_KEY = "scope"
"""The front-matter key naming the agents' areas a memory is for (`scope: [deploy]`)."""
UNSCOPED = "-"
"""What the index holds for a memory with no scope: every agent recalls it."""


def check_scope(value: object) -> tuple[str, ...]:
    """A memory's scopes as given to a write: a word or a list of words (like tags, compared
    lower-case), or nothing: a memory with no scope is for every agent.

    Raises:
        InvalidMemory: naming the first bad scope.
    """
    if value is None or value == "":
        return ()
    items: object = [value] if isinstance(value, str) else value
    return tuple(dict.fromkeys(s.lower() for s in check_tags(items, "scope")))


def scopes_of(extra: dict[str, Any]) -> tuple[str, ...]:
    """The scopes a memory's front matter names (`scope: deploy` or `scope: [deploy, web]`);
    a value of another shape names none (lint reports it), so the memory is not hidden."""
    try:
        return check_scope(extra.get(SCOPE_KEY))
    except InvalidMemory:
        return ()


def check_body(body: object) -> str:
    """Return the body stripped of surrounding blank lines, if it is text under the size limit.

    Raises:
        InvalidMemory: for a non-string or over-long body.
    """
    if body is None:
        return ""
    if not isinstance(body, str):
        raise InvalidMemory(f"body must be text, got {type_name(body)}")
    size = len(body.encode("utf-8"))
    if size > BODY_MAX:
        raise InvalidMemory(
            f"body is {size} bytes; the limit is {BODY_MAX} (one memory holds one fact: "
            "split it, or link to a document)"
        )
    if "\0" in body:
        raise InvalidMemory("body must not contain NUL characters")
    if control(body, allowed="\t\n\r"):
        raise InvalidMemory(
            "body must not contain control characters other than tab and newline (e.g. the "
            "ANSI escapes of pasted terminal output: they would rewrite the reader's screen)"
        )
    return body.replace("\r\n", "\n").strip("\n")


IMPORTANCE = ("high", "normal", "low")
"""The values of the `importance` key: `high` ranks higher and survives briefing budgets."""
FILES_MAX = 32
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
EXPIRES_UNITS = "hdw"
"""The units of an expiry from now (`24h`, `7d`, `2w`): it names one, as a bare number (seconds
to `when.seconds`) would read as days to a person writing a file."""


def check_expires(value: object, today: date | None = None) -> str:
    """The `expires` date (`YYYY-MM-DD`) that `value` gives: a date, or `7d`, `2w`, `24h` from
    `today` (UTC), rounded up to a whole day and at least one.

    Raises:
        InvalidMemory: for anything else, or a date that is not a real day.
    """
    text = str(value).strip() if isinstance(value, str | date) else ""
    span = when.seconds(text, EXPIRES_UNITS)
    if span is not None:
        from datetime import timedelta  # only an expiry needs it

        today = today or when.utcnow().date()
        return (today + timedelta(days=max(1, math.ceil(span / 86400)))).isoformat()
    if _DAY.fullmatch(text):
        try:
            return date.fromisoformat(text).isoformat()
        except ValueError:
            pass
    raise InvalidMemory(
        f"invalid expiry {quoted(value)}: use a date (2026-12-31) or a time from now (24h, 7d, 2w)"
    )


def check_files(files: object) -> tuple[str, ...]:
    """Return repository paths or globs (`src/api/*.py`), relative to the repository's top.

    Raises:
        InvalidMemory: for an absolute path, `..`, a leading `-` or `:`, or more than 32.
    """
    if files is None:
        return ()
    if isinstance(files, str):
        files = [files]
    if not isinstance(files, list | tuple):
        raise InvalidMemory(f"files must be a list of paths, got {type_name(files)}")
    items: list[Any] = list(files)  # pyright: ignore[reportUnknownArgumentType]
    if len(items) > FILES_MAX:
        raise InvalidMemory(f"{len(items)} files given; at most {FILES_MAX} are allowed")
    out: list[str] = []
    for item in items:
        text = item.strip().removeprefix("./") if isinstance(item, str) else ""
        parts = text.split("/")
        if (
            not text
            or len(text) > 200
            or text.startswith(("/", "-", ":"))
            or "\\" in text
            or ".." in parts
            or control(text)
        ):
            raise InvalidMemory(
                f"invalid file {quoted(item)}: give a path or glob relative to the repository's "
                "top (e.g. src/api/*.py), without '..', a leading '/', '-' or ':'"
            )
        if text not in out:
            out.append(text)
    return tuple(out)


def check_importance(value: object) -> str:
    """Return `value` if it is an importance level.

    Raises:
        InvalidMemory: naming the levels.
    """
    if value not in IMPORTANCE:
        raise InvalidMemory(
            f"invalid importance {quoted(value)}; use one of: {', '.join(IMPORTANCE)}"
        )
    return str(value)
