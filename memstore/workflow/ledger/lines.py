"""The handoff ledger: append-only, hash-linked JSONL records of external actions.

Pure functions over the file's bytes and the lines git has committed. `ledger_io` reads git and
appends through the store's one write transaction (`transaction.py`); see docs/ledger.md.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from memstore.errors import (
    AlreadyExecuted,
    ClaimHeld,
    InvalidLedgerEntry,
    InvalidMemory,
    InvalidQuery,
    LedgerCorrupt,
)
from memstore.git import gitlog
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


class State(StrEnum):
    """What the ledger says about one action on one target."""

    NOT_EXECUTED = "NOT_EXECUTED"
    IN_PROGRESS = "IN_PROGRESS"
    EXECUTED = "EXECUTED"


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
class Check:
    """The answer to "may I do ACTION on TARGET?".

    `actor`, `at` and `evidence` describe the claim (IN_PROGRESS, with `until`) or the first
    `done` record (EXECUTED); all are None for NOT_EXECUTED.
    """

    state: State
    action: str
    target: str
    actor: str | None = None
    at: str | None = None
    until: str | None = None
    evidence: str | None = None
    note: str | None = None
    event: str | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Verification:
    """The result of `verify`: `ok` is False when `problems` is not empty."""

    ok: bool
    lines: int
    events: int
    heads: int
    committed: int
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Line:
    """One non-blank line of the ledger file: its event, or why it cannot be trusted."""

    number: int
    text: str
    event: Event | None
    error: str | None
    stated_hash: str | None


@dataclass(frozen=True, slots=True)
class Ignored:
    """A sound line that does not count: no commit by its actor added it."""

    event: Event
    line: int | None
    """Its line in the working file; None when only git history has it."""
    committed: bool
    """Whether git has it (added by someone else's commit) or only the working file does."""
    reason: str


@dataclass(frozen=True, slots=True)
class View:
    """The ledger as the working file and git history together tell it."""

    lines: tuple[Line, ...]
    events: tuple[Event, ...]
    """Every event that counts (a commit by its actor added it): the file's in file order,
    then those only git still has."""
    lost: tuple[Event, ...]
    """Events that count and that the working file lacks (a restore, a hand edit, a merge)."""
    dropped: tuple[Event, ...]
    """Of `lost`, those HEAD's file lacks too: a merge or a commit dropped them."""
    ignored: tuple[Ignored, ...]
    """Sound lines that do not count: committed by someone else, or not committed at all."""
    damage: tuple[str, ...]
    """Lines that cannot be read or trusted, and links to lines that are nowhere."""
    heads: tuple[str, ...]
    """Hashes of the file's events that no later event links to: the next `prev`."""
    committed: int
    uncommitted: int
    duplicates: int
    history_notes: tuple[str, ...]
    ends_with_newline: bool
    name: str
    """The file as git names it, for messages."""


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


def _short(value: str, limit: int = 60) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "…")


def _utf8(value: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidLedgerEntry(f"{what} {_short(value)} is not valid UTF-8 text") from e


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
            f"{what} {_short(text)} must be a single line without control characters"
        )
    if len(text) > TEXT_MAX:
        raise InvalidLedgerEntry(
            f"{what} {_short(text)} has {len(text)} characters; at most {TEXT_MAX} are allowed"
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
            f"evidence {_short(url)} is not an http(s) URL; give the page, run or commit that "
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
            f"note {_short(note)} must be text of at most {NOTE_MAX} characters without NUL"
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


# -- the view: the file and git together --------------------------------------------------------


def view(
    data: bytes,
    committed: Sequence[gitlog.Added] = (),
    at_head: Sequence[str] | None = None,
    name: str = LEDGER_FILE,
) -> View:
    """Combine the working file's bytes with every ledger line git has committed.

    `committed` holds each line a commit added, with that commit (any order, repeats
    allowed); `at_head` the lines of the file at HEAD, when known. An event counts only when
    a commit by its actor (`gitlog.is_by`) added its line; any other sound line is
    `ignored`. Read git before the file: a line is committed only after it is written, so
    nothing git has is missing from the file by a race.
    """
    lines = tuple(read_lines(data))
    damage: list[str] = []
    working: dict[str, Event] = {}
    where: dict[str, int] = {}
    by_id: dict[str, tuple[str, int]] = {}
    duplicates = 0
    for line in lines:
        if line.event is None:
            damage.append(f"line {line.number}: {line.error}")
            continue
        event = line.event
        if event.hash in working:
            duplicates += 1  # a union merge can repeat a line both branches had
            continue
        seen = by_id.get(event.id)
        if seen is not None:
            damage.append(
                f"line {line.number}: id {event.id} is also the id of line {seen[1]} with "
                "different content"
            )
        by_id[event.id] = (event.hash, line.number)
        working[event.hash] = event
        where[event.hash] = line.number

    git_events: dict[str, Event] = {}
    adders: dict[str, list[gitlog.Commit]] = {}
    notes: list[str] = []
    known = {line.text: line.event for line in lines if line.event is not None}
    for added in committed:
        event = _committed_event(added.text, known, notes)
        if event is not None:
            git_events.setdefault(event.hash, event)
            adders.setdefault(event.hash, []).append(added.commit)
    head_hashes: set[str] | None = None
    if at_head is not None:
        head_hashes = set()
        for text in at_head:
            event = _committed_event(text, known, notes)
            if event is not None:
                git_events.setdefault(event.hash, event)
                head_hashes.add(event.hash)

    verdicts: dict[tuple[str, str, str, str, str], bool] = {}

    def by_actor(commit: gitlog.Commit, actor: str) -> bool:
        key = (commit.author, commit.committer, commit.signer or "", str(commit.signed), actor)
        if key not in verdicts:
            verdicts[key] = gitlog.is_by(commit, actor)
        return verdicts[key]

    counted = {
        h for h, e in git_events.items() if any(by_actor(c, e.actor) for c in adders.get(h, ()))
    }
    every = working | {h: e for h, e in git_events.items() if h not in working}
    ignored: list[Ignored] = []
    for h, event in every.items():
        if h not in counted:
            reason = _not_counted(event, adders.get(h), h in git_events)
            ignored.append(Ignored(event, where.get(h), h in git_events, reason))
    lost = tuple(e for h, e in git_events.items() if h not in working and h in counted)
    dropped = () if head_hashes is None else tuple(e for e in lost if e.hash not in head_hashes)
    events = (*(e for h, e in working.items() if h in counted), *lost)
    present = set(working) | set(git_events)
    present |= {line.stated_hash for line in lines if line.stated_hash}
    for h, event in every.items():
        for link in event.prev:
            if link not in present:
                place = f"line {where[h]}" if h in where else f"committed event {event.id}"
                damage.append(
                    f"{place}: it was appended after a line (hash {link[:12]}…) that is in "
                    "neither the file nor git history: a line before it was deleted"
                )
    linked = {link for event in working.values() for link in event.prev}
    return View(
        lines=lines,
        events=events,
        lost=lost,
        dropped=dropped,
        ignored=tuple(ignored),
        damage=tuple(damage),
        heads=tuple(h for h in working if h not in linked),
        committed=len(git_events),
        uncommitted=sum(1 for h in working if h not in git_events),
        duplicates=duplicates,
        history_notes=tuple(notes),
        ends_with_newline=not data or data.endswith(b"\n"),
        name=name,
    )


def _committed_event(text: str, known: dict[str, Event], notes: list[str]) -> Event | None:
    """The event on a line git holds; None (and a note) when it cannot be read."""
    if not text.strip():
        return None
    event = known.get(text)
    if event is not None:  # the same text as a sound line of the file: no need to parse it
        return event
    try:
        event = parse_line(text)
    except LedgerCorrupt as e:
        note = f"git history holds an unreadable ledger line ({e}): {_short(text, 80)}"
        if note not in notes:
            notes.append(note)
        return None
    known[text] = event
    return event


def _not_counted(event: Event, adders: list[gitlog.Commit] | None, committed: bool) -> str:
    """Why a sound line does not count."""
    if not committed:
        return (
            "it is not committed to git, and a line counts only once a commit by its actor adds it"
        )
    if not adders:
        return "git has it at HEAD, but no commit in HEAD's history added it (a shallow clone?)"
    first = adders[0]
    author, committer = first.author or "?", first.committer or "?"
    by = author if author == committer else f"{author} (committed by {committer})"
    more = f" and {len(adders) - 1} other commit(s)" if len(adders) > 1 else ""
    return (
        f"the commit that added it, {first.sha[:10]} by {by}{more}, is not by "
        f"{event.actor}: a line counts only when a commit by its actor adds it"
    )


def _ignored_text(item: Ignored) -> str:
    event = item.event
    place = f"line {item.line}" if item.line is not None else f"event {event.id} (only in git)"
    return (
        f"{place} ({event.status} {event.action} {event.target} by {event.actor} at "
        f"{event.at}) is ignored: {item.reason}"
    )


def _lost(view: View) -> str:
    if view.dropped:
        return (
            f"the working {view.name} lacks {len(view.lost)} line(s) that git has committed, "
            f"{len(view.dropped)} of them missing at HEAD too (dropped by a merge, e.g. `git "
            "merge -s ours`, or by a commit)"
        )
    return (
        f"the working {view.name} lacks {len(view.lost)} line(s) that git has committed (a "
        "restored backup or a bad hand edit?)"
    )


def _lost_warning(view: View) -> str:
    repair = (
        "add the lines back from git history (verify names each one)"
        if view.dropped
        else f"put the lines back, e.g. `git checkout HEAD -- {view.name}` if it has no "
        "uncommitted lines"
    )
    return (
        f"WARNING: {_lost(view)}; this answer includes them. Run `memstore ledger verify`, then "
        f"{repair}."
    )


def _ordered(view: View, action: str, target: str) -> list[Event]:
    mine = [
        (parse_time(e.at), i, e)
        for i, e in enumerate(view.events)
        if e.action == action and e.target == target
    ]
    return [e for _, _, e in sorted(mine, key=lambda t: (t[0], t[1]))]


def check(view: View, action: str, target: str, now: datetime) -> Check:
    """What the ledger says about `action` on `target` at `now`.

    Any `done` makes it EXECUTED. Otherwise the latest claim holds it IN_PROGRESS until it
    expires or its actor releases it or records a failure.

    Raises:
        LedgerCorrupt: when damaged lines might hide a `done` record and the readable ones do
            not prove EXECUTED (fail closed: never NOT_EXECUTED, never IN_PROGRESS).
    """
    history = _ordered(view, action, target)
    warnings: list[str] = [_lost_warning(view)] if view.lost else []
    warnings += [
        f"{_ignored_text(item)}; run `memstore ledger verify`"
        for item in view.ignored
        if item.event.action == action and item.event.target == target
    ]
    done = [e for e in history if e.status == DONE]
    if done:
        first = done[0]
        if len(done) > 1:
            who = ", ".join(f"{e.actor} at {e.at}" for e in done)
            warnings.append(f"recorded done {len(done)} times ({who}): it may have run twice")
        if view.damage:
            warnings.append(
                f"the ledger is damaged ({view.damage[0]}); run `memstore ledger verify`"
            )
        return Check(
            State.EXECUTED,
            action,
            target,
            actor=first.actor,
            at=first.at,
            evidence=first.evidence,
            note=first.note,
            event=first.id,
            warnings=tuple(warnings),
        )
    if view.damage:
        first_damage, count = view.damage[0], len(view.damage)
        more = f" (and {count - 1} more)" if count > 1 else ""
        raise LedgerCorrupt(
            f"cannot tell whether '{action} {target}' was executed: the ledger is damaged at "
            f"{first_damage}{more}; run `memstore ledger verify` and repair it from git"
        )
    holder: Event | None = None
    failure: Event | None = None
    for event in history:
        if event.status == CLAIMED:
            holder = event
        elif event.status in (RELEASED, FAILED) and holder and holder.actor == event.actor:
            holder = None
        if event.status == FAILED:
            failure = event
    if failure is not None:
        warnings.append(
            f"last attempt failed: {failure.actor} at {failure.at}: {failure.note or 'no note'}"
        )
    if holder is not None and holder.expires is not None:
        if parse_time(holder.expires) > now:
            return Check(
                State.IN_PROGRESS,
                action,
                target,
                actor=holder.actor,
                at=holder.at,
                until=holder.expires,
                note=holder.note,
                event=holder.id,
                warnings=tuple(warnings),
            )
        warnings.append(
            f"a claim by {holder.actor} from {holder.at} expired at {holder.expires} with no "
            "record: if they acted, record it with its evidence before doing it again"
        )
    return Check(State.NOT_EXECUTED, action, target, warnings=tuple(warnings))


def require_intact(view: View) -> None:
    """Refuse to append to a ledger that is damaged or lost committed lines.

    Raises:
        LedgerCorrupt: naming the first problem; nothing has been written.
    """
    problems = [*view.damage, *([_lost(view)] if view.lost else [])]
    problems += [
        f"line {item.line} ({item.event.status} {item.event.action} {item.event.target} by "
        f"{item.event.actor}) is not committed to git, and the append would commit it as the "
        f"appender's: commit it yourself (`git commit -- {view.name}`) or remove it"
        for item in view.ignored
        if not item.committed
    ]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise LedgerCorrupt(
            f"refusing to append to a damaged ledger: {problems[0]}{more}; nothing was written "
            "— run `memstore ledger verify` and repair the ledger from git first"
        )


def claim(view: View, actor: str, action: str, target: str, ttl: float, now: datetime) -> Event:
    """A `claimed` event for `actor`; the same actor re-claiming refreshes its claim.

    Raises:
        AlreadyExecuted, ClaimHeld (by someone else, still valid).
    """
    state = check(view, action, target, now)
    if state.state == State.EXECUTED:
        raise AlreadyExecuted(
            f"'{action} {target}' was already executed by {state.actor} at {state.at} "
            f"(evidence {state.evidence}); not claiming it"
        )
    if state.state == State.IN_PROGRESS and state.actor != actor:
        raise ClaimHeld(
            f"'{action} {target}' is claimed by {state.actor} since {state.at} until "
            f"{state.until}; wait for it to be recorded or released, or for the claim to expire"
        )
    return new_event(
        actor=actor,
        action=action,
        target=target,
        status=CLAIMED,
        at=now,
        prev=view.heads,
        expires=now + timedelta(seconds=ttl),
    )


def release(view: View, actor: str, action: str, target: str, now: datetime) -> Event:
    """A `released` event giving up `actor`'s valid claim.

    Raises:
        InvalidLedgerEntry: when `actor` holds no valid claim on it.
    """
    state = check(view, action, target, now)
    if state.state != State.IN_PROGRESS or state.actor != actor:
        holder = f"claimed by {state.actor}" if state.state == State.IN_PROGRESS else state.state
        raise InvalidLedgerEntry(
            f"{actor} holds no valid claim on '{action} {target}' (it is {holder}); "
            "nothing to release"
        )
    return new_event(
        actor=actor, action=action, target=target, status=RELEASED, at=now, prev=view.heads
    )


def record(
    view: View,
    actor: str,
    action: str,
    target: str,
    now: datetime,
    evidence: str | None,
    note: str | None,
    failed: bool,
) -> tuple[Event, list[str]]:
    """A `done` (or `failed`) event, and warnings when it was already done or claimed by another.

    A record is always accepted: the action happened, so the ledger must say so.
    """
    warnings: list[str] = []
    state = check(view, action, target, now)
    if state.state == State.EXECUTED and not failed:
        warnings.append(
            f"'{action} {target}' was already recorded done by {state.actor} at {state.at} "
            f"({state.evidence}): it may have run twice"
        )
    if state.state == State.IN_PROGRESS and state.actor != actor:
        warnings.append(f"'{action} {target}' is claimed by {state.actor} until {state.until}")
    event = new_event(
        actor=actor,
        action=action,
        target=target,
        status=FAILED if failed else DONE,
        at=now,
        prev=view.heads,
        evidence=evidence,
        note=note,
    )
    return event, warnings


def verify(view: View, merge_attribute: str | None) -> Verification:
    """Check every line's hash, every link, and that the file holds every line git committed."""
    problems = list(view.damage)
    dropped = {e.hash for e in view.dropped}
    for event in view.lost:
        problem = (
            f"git has committed event {event.id} ({event.status} {event.action} {event.target} "
            f"by {event.actor} at {event.at}) but the working ledger lacks it"
        )
        if event.hash in dropped:
            problem += (
                f", and so does HEAD's: a merge dropped it (`git merge -s ours`, a conflict "
                f"resolved without it) or a commit deleted it; add the line back (`git log "
                f"--full-history -p -S {event.id} -- {view.name}` shows it) and commit"
            )
        problems.append(problem)
    problems += [_ignored_text(item) for item in view.ignored if item.committed]
    warnings = list(view.history_notes)
    if view.uncommitted:
        warnings.append(
            f"{view.uncommitted} line(s) are not committed to git yet: a line counts only once "
            "a commit by its actor adds it"
        )
    if view.duplicates:
        warnings.append(f"{view.duplicates} line(s) repeat an earlier line exactly")
    if not view.ends_with_newline:
        warnings.append("the file does not end with a newline")
    if merge_attribute != "union":
        warnings.append(
            f"git's merge attribute for the ledger is {merge_attribute or 'unset'}, not union: "
            "add `ledger.jsonl text eol=lf merge=union` to the store's .gitattributes"
        )
    return Verification(
        ok=not problems,
        lines=len(view.lines),
        events=len(view.events),
        heads=len(view.heads),
        committed=view.committed,
        problems=tuple(problems),
        warnings=tuple(warnings),
    )


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
