"""The memory model: one Markdown file with YAML front matter, parsed and rendered canonically."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Any, cast

from memstore.errors import InvalidMemory, InvalidName

NAME_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
NAME_RE = re.compile(NAME_PATTERN)
DESCRIPTION_MAX = 200
BODY_MAX = 64 * 1024
TAGS_MAX = 32
TAG_RE = re.compile(r"^[\w][\w./:+-]{0,63}$")
IDENTITY_MAX = 64
LINKS_MAX = 64
FILE_MAX = 2 * BODY_MAX
"""A file larger than this is not read as a memory (lint reports it)."""
EXTRA_KEY_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
EXTRA_MAX = 16
# Names Windows reserves for devices: `con.md` cannot be checked out there.
RESERVED_NAMES = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{d}{i}" for d in ("com", "lpt") for i in range(10)]
)

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
    "restored_by",
    "restored_at",
    "restored_reason",
)
KEY_ORDER = CORE_KEYS + TRAIL_KEYS


def _without_timestamps(cls: Any) -> Any:
    # Dates stay strings, so `created: 2026-11-30T08:00:00Z` round-trips unquoted and unchanged.
    cls.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in cls.yaml_implicit_resolvers.items()
    }
    return cls


_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_SCALARS = frozenset(
    (
        "tag:yaml.org,2002:null",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
    )
)


_FENCE = re.compile(r"^-{3,}\s*$", re.MULTILINE)
"""python-frontmatter's YAML fence (`YAMLHandler.FM_BOUNDARY`)."""


class _NotPlain(Exception):
    """A node `_Loader`'s quick path leaves to PyYAML's own construction."""


@functools.cache
def _yaml() -> tuple[Any, Any]:
    """memstore's YAML loader and dumper, made on the first parse or render: PyYAML loads then,
    so a process that only searches its index or prints help never pays for importing it."""
    import yaml

    # libyaml's C loader/dumper when present: parsing is the cost of listing a large store.
    base_loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    base_dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    @_without_timestamps
    class _Loader(base_loader):
        def get_single_data(self) -> Any:
            """As PyYAML's, with a quick path for front matter of plain mappings, lists,
            strings, booleans, numbers and nulls (what memstore writes): building each value
            through the constructor's generic machinery costs more than libyaml's parse.
            Anything else (an alias, a merge key, another tag) or any error is left to PyYAML's
            construction, so the values and the errors are the same either way."""
            node = self.get_single_node()
            if node is None:
                return None
            try:
                return self._plain(node, set())
            except Exception:  # noqa: BLE001 - PyYAML's own path decides what is wrong
                self.constructed_objects = {}
                self.recursive_objects = {}
                return self.construct_document(node)

        def _plain(self, node: Any, seen: set[int]) -> Any:
            tag = node.tag
            if tag == _STR and isinstance(node, yaml.ScalarNode):
                return node.value
            if id(node) in seen:  # an alias: the same object twice, as `_refuse_aliases` expects
                raise _NotPlain
            seen.add(id(node))
            if tag == _MAP and isinstance(node, yaml.MappingNode):
                data: dict[Any, Any] = {}
                for key, value in node.value:
                    if key.tag != _STR or not isinstance(key, yaml.ScalarNode):
                        raise _NotPlain
                    data[key.value] = self._plain(value, seen)
                return data
            if tag == _SEQ and isinstance(node, yaml.SequenceNode):
                return [self._plain(item, seen) for item in node.value]
            if tag in _SCALARS and isinstance(node, yaml.ScalarNode):
                return self.construct_object(node)
            raise _NotPlain

    @_without_timestamps
    class _Dumper(base_dumper):
        pass

    _Dumper.add_representer(str, _represent_str)
    return _Loader, _Dumper


# Front matter of plain strings and lists of them (what a memory's fields mostly are) is
# written and read without PyYAML, whose import costs a short-lived command such as `memstore
# add` a sixth of its CPU. Only values that PyYAML writes unquoted and reads back unchanged take
# this path, in exactly the form PyYAML gives them (tests/model/test_memory.py compares the two);
# anything else (quotes, numbers, booleans, line breaks, other characters) goes through PyYAML.
_QUICK_ASCII = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.,;/()'\"!?+=&%@$~*<>^|\\"
)
_QUICK_STAMP = re.compile(r"\d{4}-\d\d-\d\d(?:T\d\d:\d\d:\d\dZ)?", re.ASCII)
_QUICK_KEY = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_YAML_WORDS = frozenset(("y", "n", "yes", "no", "true", "false", "on", "off", "null"))
"""Words YAML 1.1 reads as booleans or null, in any case."""
_QUICK_MAX = 1000
"""Longer values go through PyYAML (it folds a line past its width)."""


def _quick_scalar(value: str) -> bool:
    """Whether PyYAML writes `value` unquoted and reads that back as the same string: it
    starts with an ASCII letter, holds no `:` or `#` (or is a date or `now()` time), no
    other character that YAML gives a meaning, no control character or line break."""
    if _QUICK_STAMP.fullmatch(value):
        return True
    if not value or len(value) > _QUICK_MAX or value[-1] == " ":
        return False
    if not ("a" <= value[0] <= "z" or "A" <= value[0] <= "Z") or value.lower() in _YAML_WORDS:
        return False
    if value.isascii():
        return _QUICK_ASCII.issuperset(value)
    return all(
        c in _QUICK_ASCII
        or ("\xa0" <= c <= "\ud7ff" and c not in "\u2028\u2029")
        or ("\ue000" <= c <= "\ufffd" and c != "\ufeff")
        for c in value
    )


def _quick_key(key: object) -> bool:
    return isinstance(key, str) and bool(_QUICK_KEY.fullmatch(key)) and key not in _YAML_WORDS


def _quick_dump(data: dict[str, Any]) -> str | None:
    """`data` as PyYAML dumps it for `render`, when every key is a plain word and every value
    a `_quick_scalar` string or a list of them; else None."""
    lines: list[str] = []
    for key, value in data.items():
        if not _quick_key(key):
            return None
        if type(value) is str and _quick_scalar(value):
            lines.append(f"{key}: {value}")
            continue
        if type(value) is not list:
            return None
        items = cast(list[object], value)
        if not all(type(v) is str and _quick_scalar(v) for v in items):
            return None
        lines.append(f"{key}:" if items else f"{key}: []")
        lines.extend(f"- {v}" for v in items)
    return "\n".join(lines) + "\n"


def _quick_load(head: str) -> dict[str, Any] | None:
    """The mapping front matter `head` holds, when it has only the shapes `_quick_dump`
    writes (each line `key: value`, `key: []`, or `key:` then `- value` lines, no key
    twice); else None, and PyYAML reads it."""
    data: dict[str, Any] = {}
    items: list[str] | None = None
    for line in head.split("\n"):
        if line.startswith("- "):
            if items is None or not _quick_scalar(line[2:]):
                return None
            items.append(line[2:])
            continue
        if items is not None and not items:
            return None  # `key:` and no item: a null
        items = None
        if not line:
            continue
        key, colon, value = line.partition(":")
        if not colon or not _quick_key(key) or key in data:
            return None
        if not value:
            data[key] = items = []
        elif value == " []":
            data[key] = []
        elif value[0] == " " and _quick_scalar(value[1:]):
            data[key] = value[1:]
        else:
            return None
    if items is not None and not items:
        return None
    return data or None  # no key at all: PyYAML reads a null


def _represent_str(dumper: Any, value: str) -> Any:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


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
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_name(name: object, what: str = "name") -> str:
    """Return `name` if it is a valid memory name.

    Raises:
        InvalidName: with the offending value and the allowed pattern.
    """
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InvalidName(
            f"invalid {what} {name!r}: use 1-64 characters of lower-case letters, digits and "
            "'-', starting with a letter or digit (e.g. 'use-zod-for-validation')"
        )
    if name in RESERVED_NAMES:
        raise InvalidName(
            f"invalid {what} {name!r}: Windows reserves it as a device name, so the file could "
            "not be checked out there; choose another"
        )
    return name


def check_links(links: object) -> tuple[str, ...]:
    """Return links as a tuple of memory names, at most 64 of them.

    Raises:
        InvalidMemory, InvalidName: naming the problem.
    """
    if not isinstance(links, list | tuple):
        raise InvalidMemory(f"links must be a list, got {type(links).__name__}")
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
        raise InvalidMemory(f"extra fields must be a mapping, got {type(extra).__name__}")
    items: dict[Any, Any] = extra  # pyright: ignore[reportUnknownVariableType]
    if len(items) > EXTRA_MAX:
        raise InvalidMemory(f"{len(items)} extra fields given; at most {EXTRA_MAX} are allowed")
    for key, value in items.items():
        if not isinstance(key, str) or not EXTRA_KEY_RE.fullmatch(key):
            raise InvalidMemory(f"invalid extra field name {key!r}: use snake_case, up to 32")
        if key in KEY_ORDER:
            raise InvalidMemory(f"extra field {key!r} is one memstore sets itself; pick another")
        if not _plain(value):
            raise InvalidMemory(
                f"extra field {key!r} must be text, a number, a boolean or a list of those "
                f"(at most {TAGS_MAX} items of {DESCRIPTION_MAX * 10} characters)"
            )
    return dict(items)


def _plain(value: object, depth: int = 0) -> bool:
    if value is None or isinstance(value, bool | int | float):
        return True
    if isinstance(value, str):
        return len(value) <= DESCRIPTION_MAX * 10 and not _control(value, allowed="\t\n")
    if isinstance(value, list) and depth == 0:
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return len(items) <= TAGS_MAX and all(_plain(v, 1) for v in items)
    return False


def _control(text: str, allowed: str = "") -> bool:
    """Whether `text` holds a control character, or a Unicode line or paragraph separator."""
    # One regex scan instead of a Python loop per character: lint checks every body.
    return any(c not in allowed for c in _CONTROL_RE.findall(text))


_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def check_line(value: str, what: str) -> str:
    """Return `value` if it is one line of printable text (a reason, a note).

    Raises:
        InvalidMemory: naming `what`.
    """
    if _control(value.strip()):
        raise InvalidMemory(
            f"{what} must be one line of printable text, without line breaks or control characters"
        )
    return value


def check_identity(identity: object) -> str:
    """Return a stripped identity if it can author commits and appear in a file.

    Raises:
        InvalidMemory: for an empty, multi-line, over-long or `<>`-containing identity, or one
            holding an invisible character (a zero-width space, a direction mark) that would
            let two names look alike.
    """
    if not isinstance(identity, str) or not identity.strip():
        raise InvalidMemory("identity must be a non-empty name")
    value = identity.strip()
    if len(value) > IDENTITY_MAX or any(c in value for c in "<>") or _control(value):
        raise InvalidMemory(
            f"invalid identity {identity!r}: use one line of at most {IDENTITY_MAX} characters "
            "without '<' or '>'"
        )
    hidden = next((c for c in value if unicodedata.category(c) in _INVISIBLE), None)
    if hidden is not None:
        raise InvalidMemory(
            f"invalid identity {identity!r}: it holds an invisible character "
            f"(U+{ord(hidden):04X}); use a name that reads as it is written"
        )
    return value


_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Unicode categories that print as nothing: control, format (zero-width, direction marks),
surrogates, private use and unassigned."""


def identity_key(identity: str) -> str:
    """The form two identities are compared in: NFKC, case-folded, trimmed.

    `Alice`, `alice` and a full-width `ａｌｉｃｅ` are one person: nobody confirms their own
    memory by spelling their name another way.
    """
    return unicodedata.normalize("NFKC", identity).casefold().strip()


def same_identity(a: str | None, b: str | None) -> bool:
    """Whether `a` and `b` name the same identity (False when either is missing)."""
    return bool(a) and bool(b) and identity_key(a or "") == identity_key(b or "")


def check_description(description: object) -> str:
    """Return `description` if it is one non-empty line of at most 200 characters.

    Raises:
        InvalidMemory: naming the problem.
    """
    if not isinstance(description, str) or not description.strip():
        raise InvalidMemory("description must be a non-empty line of text")
    if "\n" in description or "\r" in description or _control(description):
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
        raise InvalidMemory(f"{what}s must be a list, got {type(tags).__name__}")
    items: list[Any] = list(tags)  # pyright: ignore[reportUnknownArgumentType]
    if len(items) > TAGS_MAX:
        raise InvalidMemory(f"{len(items)} {what}s given; at most {TAGS_MAX} are allowed")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str) or not TAG_RE.fullmatch(item):
            raise InvalidMemory(
                f"invalid {what} {item!r}: use up to 64 letters, digits or . / : + - _, no spaces"
            )
        if item not in out:
            out.append(item)
    return tuple(out)


def check_body(body: object) -> str:
    """Return the body stripped of surrounding blank lines, if it is text under the size limit.

    Raises:
        InvalidMemory: for a non-string or over-long body.
    """
    if body is None:
        return ""
    if not isinstance(body, str):
        raise InvalidMemory(f"body must be text, got {type(body).__name__}")
    size = len(body.encode("utf-8"))
    if size > BODY_MAX:
        raise InvalidMemory(
            f"body is {size} bytes; the limit is {BODY_MAX} (one memory holds one fact: "
            "split it, or link to a document)"
        )
    if "\0" in body:
        raise InvalidMemory("body must not contain NUL characters")
    if _control(body, allowed="\t\n\r"):
        raise InvalidMemory(
            "body must not contain control characters other than tab and newline (e.g. the "
            "ANSI escapes of pasted terminal output: they would rewrite the reader's screen)"
        )
    return body.replace("\r\n", "\n").strip("\n")


def _text(value: object, key: str) -> str:
    if type(value) is str:  # nearly always: the quick test first
        return value
    if isinstance(value, date | datetime):
        return value.isoformat()
    if not isinstance(value, str):
        raise InvalidMemory(f"front-matter key '{key}' must be text, got {type(value).__name__}")
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
        raise InvalidMemory(f"front-matter key 'pinned' must be true or false, got {value!r}")
    return True


def split(text: str) -> tuple[dict[str, Any], str]:
    """Split a memory file into its front-matter mapping and its body.

    Raises:
        InvalidMemory: when the front matter is missing, is not YAML, or is not a mapping.
    """
    text = text.replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    if _FENCE.match(text):
        parts = _FENCE.split(text, 2)
        if len(parts) == 3:
            data = _quick_load(parts[1])
            if data is not None:
                return data, parts[2]
    # python-frontmatter finds the fences (the quick path above uses its pattern); imported
    # here, on the first file read, so a process that only searches its index or prints help
    # never loads it.
    import frontmatter.default_handlers
    import yaml

    handler = frontmatter.default_handlers.YAMLHandler()
    if not handler.detect(text):
        raise InvalidMemory("no YAML front matter: the file must start with a '---' line")
    try:
        head, body = handler.split(text)
    except ValueError as e:
        raise InvalidMemory("front matter is not closed by a '---' line") from e

    try:
        data = yaml.load(head, Loader=_yaml()[0])  # noqa: S506 - a SafeLoader
    except RecursionError as e:
        raise InvalidMemory("front matter is nested too deeply to be a memory") from e
    except yaml.YAMLError as e:
        # The context mark is where the broken construct starts, the line a person must fix.
        mark = getattr(e, "context_mark", None) or getattr(e, "problem_mark", None)
        # The front matter starts on the opening "---" line: 0-based line + 1 is the file line.
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise InvalidMemory(f"front matter is not valid YAML{where}: {problem}") from e
    if not isinstance(data, dict):
        raise InvalidMemory("front matter must be a mapping of keys to values")
    _refuse_aliases(data)  # pyright: ignore[reportUnknownArgumentType]
    return data, body  # pyright: ignore[reportUnknownVariableType]


def _refuse_aliases(data: object) -> None:
    """Raise if a list or mapping appears twice: a YAML alias (`*a`), which memstore never
    writes, and which could expand exponentially ("billion laughs") once printed."""
    seen: set[int] = set()
    stack: list[Any] = [data]
    while stack:
        item: Any = stack.pop()
        if isinstance(item, dict | list):
            if id(item) in seen:  # pyright: ignore[reportUnknownArgumentType]
                raise InvalidMemory("front matter uses a YAML alias (*name); write the value out")
            seen.add(id(item))  # pyright: ignore[reportUnknownArgumentType]
            stack.extend(item.values() if isinstance(item, dict) else item)  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]


def parse(text: str) -> Memory:
    """Parse a memory file's text into a `Memory`.

    Raises:
        InvalidMemory: naming the first problem (missing key, wrong shape, bad name).
    """
    data, body = split(text)
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
    data = to_dict(memory)
    head = _quick_dump(data)
    if head is None:
        import yaml

        head = yaml.dump(
            data,
            Dumper=_yaml()[1],
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=10_000,
        )
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


IMPORTANCE = ("high", "normal", "low")
"""The values of the `importance` key: `high` ranks higher and survives briefing budgets."""
FILES_MAX = 32
_DURATION = re.compile(r"(\d{1,4})([hdw])")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def check_expires(value: object, today: date | None = None) -> str:
    """The `expires` date (`YYYY-MM-DD`) that `value` gives: a date, or `7d`, `2w`, `24h` from
    `today` (UTC).

    Raises:
        InvalidMemory: for anything else, or a date that is not a real day.
    """
    today = today or datetime.now(UTC).date()
    text = str(value).strip() if isinstance(value, str | date) else ""
    match = _DURATION.fullmatch(text)
    if match:
        from datetime import timedelta  # only an expiry needs it

        amount, unit = int(match.group(1)), match.group(2)
        days = {"h": amount / 24, "d": amount, "w": amount * 7}[unit]
        return (today + timedelta(days=max(1, math.ceil(days)))).isoformat()
    if _DAY.fullmatch(text):
        try:
            return date.fromisoformat(text).isoformat()
        except ValueError:
            pass
    raise InvalidMemory(
        f"invalid expiry {value!r}: use a date (2026-12-31) or a time from now (24h, 7d, 2w)"
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
        raise InvalidMemory(f"files must be a list of paths, got {type(files).__name__}")
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
            or _control(text)
        ):
            raise InvalidMemory(
                f"invalid file {item!r}: give a path or glob relative to the repository's top "
                "(e.g. src/api/*.py), without '..', a leading '/', '-' or ':'"
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
        raise InvalidMemory(f"invalid importance {value!r}; use one of: {', '.join(IMPORTANCE)}")
    return str(value)
