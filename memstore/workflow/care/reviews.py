"""Review requests and deferrals: `reviews.jsonl` beside the ledger, committed and
append-only, so the whole team sees who was asked to review what and who put what off.

A deferral (`defer`) takes a memory out of the inbox and briefing of whoever deferred it until a
moment ("seen, not now"; the others still see it); a request (`ask`) puts it first in the named
reviewer's. Neither changes the
memory file, so no version a reviewer read goes stale and no confirmation is touched. A line
says who wrote it, and its commit is by that identity; neither is a move of the state machine,
so nothing here grants or withholds trust.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memstore.errors import InvalidMemory, InvalidQuery, SelfApproval
from memstore.model import when
from memstore.model.identity import check_identity, identity_key, same_identity
from memstore.model.memory import now
from memstore.model.status import Status
from memstore.storage import transaction
from memstore.storage.files import REVIEWS_FILE, read_regular
from memstore.storage.store import Store, subject

DEFER = "defer"
ASK = "ask"
LATER = "3d"
"""How long "later" puts a memory off: the interactive review's `l`, and `memory_promote`'s
`to: later`."""
DEFER_MAX_DAYS = 90
"""A deferral longer than this is a deprecation that dares not say so."""


@dataclass(frozen=True, slots=True)
class Request:
    """One line of `reviews.jsonl`: `actor` deferred `name` until `until`, or asked `reviewer`
    to review it."""

    at: str
    actor: str
    kind: str
    name: str
    until: str | None = None
    reviewer: str | None = None


@dataclass(frozen=True, slots=True)
class Reviews:
    """What the record says now, by memory name."""

    deferred: dict[str, dict[str, str]] = field(default_factory=dict[str, dict[str, str]])
    """Memory name → identity key → until (the latest deferral of each identity)."""
    asked: dict[str, dict[str, str]] = field(default_factory=dict[str, dict[str, str]])
    """Memory name → reviewer's identity key → who asked."""

    def deferred_by(self, name: str, identity: str | None, at: datetime) -> str | None:
        """When `identity`'s deferral of `name` ends, if it still holds at `at`."""
        if not identity:
            return None
        until = self.deferred.get(name, {}).get(identity_key(identity))
        return until if until is not None and until > when.stamp(at) else None

    def asked_by(self, name: str, identity: str | None) -> str | None:
        """Who asked `identity` to review `name` (None: nobody did)."""
        if not identity:
            return None
        return self.asked.get(name, {}).get(identity_key(identity))


def _line(record: Request) -> str:
    data: dict[str, Any] = {
        "at": record.at,
        "actor": record.actor,
        "kind": record.kind,
        "name": record.name,
    }
    if record.until:
        data["until"] = record.until
    if record.reviewer:
        data["for"] = record.reviewer
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def read(store: Store) -> Reviews:
    """The record as it stands (a line that is not a record is skipped: lint's to report)."""
    data = read_regular(store.root / REVIEWS_FILE)
    out = Reviews()
    if not data:
        return out
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            raw: Any = json.loads(line)
        except ValueError:
            continue
        if not isinstance(raw, dict):
            continue
        item: dict[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
        name, actor = item.get("name"), item.get("actor")
        if not isinstance(name, str) or not isinstance(actor, str):
            continue
        if item.get("kind") == DEFER and isinstance(item.get("until"), str):
            out.deferred.setdefault(name, {})[identity_key(actor)] = str(item["until"])
        elif item.get("kind") == ASK and isinstance(item.get("for"), str):
            out.asked.setdefault(name, {})[identity_key(str(item["for"]))] = actor
    return out


def until(text: str, at: datetime | None = None) -> str:
    """The moment a deferral of `text` (`3d`, `2w`, `12h`, or a date or time) ends; `now`
    ends an earlier deferral.

    Raises:
        InvalidQuery: for anything else, a moment past, or past DEFER_MAX_DAYS.
    """
    start = at or when.utcnow()
    if text.strip() == "now":
        return when.stamp(start)
    span = when.seconds(text.strip(), "hdw")
    if span is not None:
        end = start + timedelta(seconds=span)
    else:
        try:
            end = when.moment(text, start, "defer")
        except InvalidQuery:
            raise InvalidQuery(
                f"defer {text!r} must be a span (12h, 3d, 2w) or a date or UTC time ahead"
            ) from None
    if end <= start:
        raise InvalidQuery(f"defer {text!r} is not ahead of now")
    if end - start > timedelta(days=DEFER_MAX_DAYS):
        raise InvalidQuery(
            f"defer at most {DEFER_MAX_DAYS} days; a memory not worth reviewing in that time "
            "is worth deprecating"
        )
    return when.stamp(end)


def defer(store: Store, names: Iterable[str], span: str) -> list[Request]:
    """Take drafts `names` out of the acting identity's inbox until `span` from now, in one
    commit. Returns the records written.

    Raises:
        InvalidQuery (a bad span), MemoryNotFound, InvalidMemory (not awaiting review),
        NoIdentity, StoreLocked, GitError.
    """
    end = until(span)

    def record(actor: str, name: str) -> Request:
        return Request(now(), actor, DEFER, name, end)

    return _append(store, names, record)


def ask(store: Store, names: Iterable[str], reviewer: str) -> list[Request]:
    """Ask `reviewer` to review drafts `names`, in one commit: they come first in that
    reviewer's inbox and briefing. Returns the records written.

    Raises:
        InvalidMemory (a bad identity, a memory not awaiting review), SelfApproval (asking
        a memory's author to review it), MemoryNotFound, NoIdentity, StoreLocked, GitError.
    """
    who = check_identity(reviewer)

    def record(actor: str, name: str) -> Request:
        return Request(now(), actor, ASK, name, reviewer=who)

    return _append(store, names, record, who)


def _append(
    store: Store,
    names: Iterable[str],
    make: Callable[[str, str], Request],
    reviewer: str | None = None,
) -> list[Request]:
    chosen = list(dict.fromkeys(names))
    if not chosen:
        raise InvalidMemory("name the memories")
    actor = store.require_identity()
    out: list[Request] = []
    with transaction.locked(store):
        for name in chosen:
            memory = store.get(name)
            if memory.status == Status.DEPRECATED:
                raise InvalidMemory(f"'{name}' is deprecated: it awaits no review")
            if reviewer is not None and same_identity(memory.owner, reviewer):
                raise SelfApproval(
                    f"'{name}' is {memory.owner}'s: nobody reviews their own memory; ask "
                    "someone else"
                )
            out.append(make(actor, name))
        kind = out[0].kind
        verb = "defer" if kind == DEFER else f"ask {reviewer} to review"
        detail = ", ".join(chosen)
        message = subject(f"review: {verb}", detail)
        change = transaction.Append(store.root / REVIEWS_FILE, "".join(_line(r) for r in out))
        transaction.commit(store, [change], message, actor)
    return out
