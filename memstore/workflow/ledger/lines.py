"""The handoff ledger's lines: append-only, hash-linked JSONL records of external actions.

An event's fields and their checks, its line (canonical JSON sealed by its hash, linked to the
heads before it) written and read back. `trust` combines the lines with git's history, `claims`
holds the rules; `book` reads git and appends through the store's one write transaction
(`transaction.py`); see docs/ledger.md.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from memstore.errors import InvalidLedgerEntry, InvalidMemory, InvalidQuery, LedgerCorrupt
from memstore.model import when
from memstore.model.fields import control
from memstore.model.identity import check_identity
from memstore.storage import files

LEDGER_FILE = files.LEDGER_FILE
"""The ledger's file, at the store's root and committed with it."""
TEXT_MAX = 200
NOTE_MAX = 2000
URL_MAX = 2000
TTL_DEFAULT = 30 * 60
TTL_MAX = 7 * 24 * 3600
HASH_LEN = 32

CLAIMED, DONE, FAILED, RELEASED = "claimed", "done", "failed", "released"
STATUSES = (CLAIMED, DONE, FAILED, RELEASED)
KEY_ORDER = (
    "id",
    "at",
    "actor",
    "action",
    "target",
    "status",
    "evidence",
    "note",
    "expires",
    "prev",
    "hash",
)
_OPTIONAL = frozenset({"evidence", "note", "expires"})
_HASH_RE = re.compile(rf"^[0-9a-f]{{{HASH_LEN}}}$")
_ID_RE = re.compile(r"^[0-9A-Za-z_-]{1,64}$")
_TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$")
_URL_BREAKERS = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class Event:
    """One ledger line: who did what to which target, when, with what evidence."""

    id: str
    at: str
    actor: str
    action: str
    target: str
    status: str
    evidence: str | None = None
    note: str | None = None
    expires: str | None = None
    prev: tuple[str, ...] = ()
    hash: str = ""


@dataclass(frozen=True, slots=True)
class Line:
    """One non-blank line of the ledger file: its event, or why it cannot be trusted."""

    number: int
    text: str
    event: Event | None
    error: str | None
    stated_hash: str | None


# -- time and input ------------------------------------------------------------------------------


def format_time(moment: datetime) -> str:
    """`moment` as UTC ISO 8601 with milliseconds and a `Z`: `2026-11-30T08:43:02.123Z`."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_time(text: str) -> datetime:
    """Parse a ledger timestamp.

    Raises:
        InvalidLedgerEntry: for anything but UTC ISO 8601 with a `Z`.
    """
    if not _TIME_RE.match(text):
        raise InvalidLedgerEntry(f"time {text!r} is not UTC ISO 8601 like 2026-11-30T08:43:02Z")
    return datetime.fromisoformat(text[:-1] + "+00:00")


def short(value: str, limit: int = 60) -> str:
    """`value` quoted for a message, cut to `limit` characters."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


def _utf8(value: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidLedgerEntry(f"{what} {short(value)} is not valid UTF-8 text") from e


def check_text(value: object, what: str) -> str:
    """Return an action or target stripped, if it is one line of at most TEXT_MAX characters.

    Raises:
        InvalidLedgerEntry: naming the value and what is allowed.
    """
    if not isinstance(value, str) or not value.strip():
        raise InvalidLedgerEntry(f"{what} must be a non-empty line of text, got {value!r}")
    text = value.strip()
    _utf8(text, what)
    if control(text):
        raise InvalidLedgerEntry(
            f"{what} {short(text)} must be a single line without control characters"
        )
    if len(text) > TEXT_MAX:
        raise InvalidLedgerEntry(
            f"{what} {short(text)} has {len(text)} characters; at most {TEXT_MAX} are allowed"
        )
    return text


def check_evidence(value: object) -> str:
    """Return `value` stripped if it is an http(s) URL with a host.

    Raises:
        InvalidLedgerEntry: for anything else.
    """
    if not isinstance(value, str) or not value.strip():
        raise InvalidLedgerEntry(
            f"evidence must be an http(s) URL showing the result, got {value!r}"
        )
    url = value.strip()
    _utf8(url, "evidence")
    bad = len(url) > URL_MAX or bool(_URL_BREAKERS.search(url))
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        bad, parts, host = True, None, None
    if bad or parts is None or parts.scheme not in ("http", "https") or not host:
        raise InvalidLedgerEntry(
            f"evidence {short(url)} is not an http(s) URL; give the page, run or commit that "
            f"shows the result, like https://example.com/post-1 (at most {URL_MAX} characters)"
        )
    if parts.password is not None:  # the ledger is append-only: a secret could never leave it
        raise InvalidLedgerEntry(
            "evidence URL carries a password (user:password@host); give a URL without it"
        )
    return url


def check_note(value: object) -> str | None:
    """Return a note stripped (None when empty); it may span lines.

    Raises:
        InvalidLedgerEntry: for a note that is too long or not text.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidLedgerEntry(f"note must be text, got {value!r}")
    note = value.strip()
    _utf8(note, "note")
    if "\0" in note or len(note) > NOTE_MAX:
        raise InvalidLedgerEntry(
            f"note {short(note)} must be text of at most {NOTE_MAX} characters without NUL"
        )
    return note or None


def check_ttl(value: object) -> float:
    """Return a claim's time to live in seconds, between 1 s and TTL_MAX.

    Raises:
        InvalidLedgerEntry: for anything else.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value <= TTL_MAX:
        raise InvalidLedgerEntry(
            f"ttl {value!r} must be a number of seconds from 1 to {TTL_MAX} (7 days)"
        )
    return float(value)


def parse_duration(text: str) -> float:
    """Seconds in `90`, `90s`, `30m`, `2h` or `1d`.

    Raises:
        InvalidLedgerEntry: for anything else.
    """
    span = when.seconds(text, "smhd")
    if span is None:
        raise InvalidLedgerEntry(
            f"duration {text!r} must be a number with a unit, like 90s, 30m, 2h or 1d "
            "(a bare number is seconds)"
        )
    return span


def parse_since(text: str, now: datetime) -> datetime:
    """A moment from `2026-11-30` (the start of that day), `2026-11-30T08:00:00Z` or a
    duration back from `now` (`24h`, `7d`): `when.moment`, with the ledger's error.

    Raises:
        InvalidLedgerEntry: for anything else.
    """
    try:
        return when.moment(text, now)
    except InvalidQuery as e:
        raise InvalidLedgerEntry(str(e)) from e


# -- lines ---------------------------------------------------------------------------------------


def digest(fields: dict[str, Any]) -> str:
    """The hash of a line's fields (all but `hash`): SHA-256 of canonical JSON, 32 hex digits."""
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:HASH_LEN]


def _fields(event: Event) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key in KEY_ORDER[:-1]:
        value = getattr(event, key)
        if key in _OPTIONAL and value is None:
            continue
        data[key] = list(value) if key == "prev" else value
    return data


def new_event(
    *,
    actor: str,
    action: str,
    target: str,
    status: str,
    at: datetime,
    prev: Sequence[str],
    evidence: str | None = None,
    note: str | None = None,
    expires: datetime | None = None,
) -> Event:
    """A new event with a fresh id, linked to `prev` (the ledger's heads) and sealed by its hash."""
    event = Event(
        id=secrets.token_hex(8),
        at=format_time(at),
        actor=actor,
        action=action,
        target=target,
        status=status,
        evidence=evidence,
        note=note,
        expires=format_time(expires) if expires is not None else None,
        prev=tuple(prev),
    )
    return replace(event, hash=digest(_fields(event)))


def render(event: Event) -> str:
    """The event as one JSON line (no newline), keys in a fixed order, absent fields omitted."""
    return json.dumps({**_fields(event), "hash": event.hash}, ensure_ascii=False)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise LedgerCorrupt(message)


def parse_line(text: str) -> Event:
    """The event on one ledger line.

    Raises:
        LedgerCorrupt: saying why the line is not JSON, not a ledger event, or was edited.
    """
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as e:
        raise LedgerCorrupt(f"not JSON ({e.msg} at column {e.colno})") from e
    _require(isinstance(data, dict), "not a JSON object")
    fields: dict[str, Any] = data
    stated = fields.get("hash")
    _require(isinstance(stated, str) and bool(_HASH_RE.match(stated)), "no valid 'hash' field")
    unknown = sorted(set(fields) - set(KEY_ORDER))
    _require(not unknown, f"unknown field(s): {', '.join(unknown)}")
    body = {k: v for k, v in fields.items() if k != "hash"}
    _require(
        digest(body) == stated,
        "its content does not match its hash: the line was edited after it was written",
    )
    missing = [k for k in KEY_ORDER if k not in fields and k not in _OPTIONAL]
    _require(not missing, f"missing field(s): {', '.join(missing)}")
    try:
        event = _event(fields)
    except (InvalidLedgerEntry, InvalidMemory) as e:
        raise LedgerCorrupt(f"a sealed line with a bad value: {e}") from e
    return event


def _event(fields: dict[str, Any]) -> Event:
    ident, at, status, prev = fields["id"], fields["at"], fields["status"], fields["prev"]
    _require(isinstance(ident, str) and bool(_ID_RE.match(ident)), f"bad id {ident!r}")
    _require(isinstance(at, str), f"bad time {at!r}")
    parse_time(at)
    _require(status in STATUSES, f"status {status!r} is not one of {', '.join(STATUSES)}")
    _require(
        isinstance(prev, list) and all(isinstance(p, str) and _HASH_RE.match(p) for p in prev),  # pyright: ignore[reportUnknownVariableType]
        "'prev' must be a list of hashes",
    )
    evidence, note, expires = fields.get("evidence"), fields.get("note"), fields.get("expires")
    if evidence is not None or status == DONE:
        evidence = check_evidence(evidence)
    if expires is not None or status == CLAIMED:
        if not isinstance(expires, str):
            raise LedgerCorrupt("a claim needs 'expires', a UTC time")
        parse_time(expires)
    action, target = fields["action"], fields["target"]
    _require(
        check_text(action, "action") == action and check_text(target, "target") == target,
        "action and target must not start or end with spaces",
    )
    return Event(
        id=ident,
        at=at,
        actor=check_identity(fields["actor"]),
        action=action,
        target=target,
        status=status,
        evidence=evidence,
        note=check_note(note),
        expires=expires,
        prev=tuple(prev),  # pyright: ignore[reportUnknownArgumentType]
        hash=fields["hash"],
    )


def _stated_hash(text: str) -> str | None:
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    fields: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
    value = fields.get("hash")
    return value if isinstance(value, str) else None


def read_lines(data: bytes) -> list[Line]:
    """Every non-blank line of the ledger file, parsed; a bad line carries its error."""
    chunks = data.split(b"\n")
    lines: list[Line] = []
    for number, chunk in enumerate(chunks, start=1):
        if not chunk.strip():
            continue
        torn = number == len(chunks)  # no newline after it: a write may have been cut short
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError:
            lines.append(Line(number, repr(chunk), None, "not UTF-8 text", None))
            continue
        try:
            lines.append(Line(number, text, parse_line(text), None, None))
        except LedgerCorrupt as e:
            error = f"{e} (an incomplete last line: a write cut short?)" if torn else str(e)
            lines.append(Line(number, text, None, error, _stated_hash(text)))
    return lines


def commit_message(event: Event) -> str:
    """`ledger: done publish post-1 — https://…`; a cut first line is repeated whole below."""
    detail = {
        CLAIMED: f"until {event.expires}",
        DONE: event.evidence,
        FAILED: (event.note or "").splitlines()[0] if event.note else event.evidence,
        RELEASED: None,
    }[event.status]
    line = f"ledger: {event.status} {event.action} {event.target}"
    line += f" — {detail}" if detail else ""
    head = line if len(line) <= 72 else line[:71].rstrip() + "…"
    full = f"{line}\n" if head != line else ""
    return f"{head}\n\n{full}ledger event {event.id}"
