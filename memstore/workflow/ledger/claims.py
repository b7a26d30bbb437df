"""What the ledger says about one action on one target, and the claim, release and record
events it allows: the first `done` wins, a claim holds until it expires or its actor lets go.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from memstore.errors import AlreadyExecuted, ClaimHeld, InvalidLedgerEntry, LedgerCorrupt
from memstore.workflow.ledger.lines import (
    CLAIMED,
    DONE,
    FAILED,
    RELEASED,
    Event,
    new_event,
    parse_time,
)
from memstore.workflow.ledger.trust import View, ignored_text, lost_warning


class State(StrEnum):
    """What the ledger says about one action on one target."""

    NOT_EXECUTED = "NOT_EXECUTED"
    IN_PROGRESS = "IN_PROGRESS"
    EXECUTED = "EXECUTED"


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
    warnings: list[str] = [lost_warning(view)] if view.lost else []
    warnings += [
        f"{ignored_text(item)}; run `memstore ledger verify`"
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
    """A `done` (or `failed`) event, and a warning when it was already recorded done.

    A record needs no claim, but while someone else's claim is live only they may record:
    they are acting on it now, and a second record would say it ran twice.

    Raises:
        ClaimHeld: naming the holder and until when their claim holds.
    """
    warnings: list[str] = []
    state = check(view, action, target, now)
    if state.state == State.EXECUTED and not failed:
        warnings.append(
            f"'{action} {target}' was already recorded done by {state.actor} at {state.at} "
            f"({state.evidence}): it may have run twice"
        )
    if state.state == State.IN_PROGRESS and state.actor != actor:
        raise ClaimHeld(
            f"'{action} {target}' is claimed by {state.actor} since {state.at} until "
            f"{state.until}: only they may record it while the claim holds; nothing was "
            "written. Wait for them to record or release it, or for the claim to expire"
        )
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
