"""Moments and spans people type: `24h` or `7d` back from now, a date, or a UTC time. One
parser for every `--since` and `--as-of`, every duration (a claim's time to live, an expiry)
and one clock, so they all read a value the same way."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from memstore.errors import InvalidQuery

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_LONGEST = 1000 * 366 * 86400
"""A span past a thousand years is a typo, and could not be added to a date."""
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def seconds(text: str, units: str = "smhdw") -> float | None:
    """The seconds a duration names (`90s`, `30m`, `2h`, `7d`, `2w`), for a unit in `units`; a
    bare number is seconds when `units` holds `s`. None for anything else: each caller says in
    its own words which forms it takes."""
    match = _DURATION.match(text)
    if not match:
        return None
    unit = match.group(2) or "s"
    if unit not in units:
        return None
    span = float(match.group(1)) * _UNITS[unit]
    return span if span <= _LONGEST else None


def moment(text: str, now: datetime | None = None, what: str = "since") -> datetime:
    """The UTC moment `text` names: a duration back from `now` (`90m`, `24h`, `7d`, `2w`; a
    bare number is seconds), a date (`2026-11-30`: the start of that day, UTC) or a time
    (`2026-11-30T08:00:00Z`; without a zone, UTC).

    Raises:
        InvalidQuery: for anything else, naming `what` and the forms allowed.
    """
    value = text.strip()
    span = seconds(value)
    if span is not None:
        return (now or utcnow()) - timedelta(seconds=span)
    try:
        if _DATE.match(value):
            found = datetime.strptime(value, "%Y-%m-%d")
        else:
            found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        found = None
    if found is None:
        raise InvalidQuery(
            f"{what} {text!r} must be a duration back from now (24h, 7d), a date (2026-11-30: "
            "the start of that day, UTC) or a UTC time (2026-11-30T08:00:00Z)"
        )
    return found.replace(tzinfo=UTC) if found.tzinfo is None else found.astimezone(UTC)


def stamp(at: datetime) -> str:
    """`at` in the form memories' `created`/`updated` fields use: `2026-11-30T08:00:00Z`."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def since_stamp(text: str | None, now: datetime | None = None) -> str | None:
    """`moment(text)` as a `stamp`, or None for no `text`.

    Raises:
        InvalidQuery: as `moment` does.
    """
    return None if text is None else stamp(moment(text, now))
