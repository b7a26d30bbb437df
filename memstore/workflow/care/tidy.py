"""Tidying a store in batches: choosing memories by tag, type, status and age for a bulk
deprecation, confirming or deprecating several in one commit, and the review queue (drafts
awaiting someone other than their owner), ranked by what a confirmation is worth."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memstore.errors import InvalidMemory, InvalidQuery, InvalidTransition, MemstoreError
from memstore.model import when
from memstore.model.fields import check_line
from memstore.model.identity import same_identity
from memstore.model.memory import RULE_TYPES, Memory, links_in_body, now
from memstore.model.render_text import proposal
from memstore.model.status import Status, transition
from memstore.storage import binding, settings, transaction
from memstore.storage.store import Store, check_version, subject
from memstore.storage.trust import UNVERIFIED
from memstore.storage.uses import counts
from memstore.workflow.care import reviews


@dataclass(frozen=True, slots=True)
class Batch:
    """A bulk deprecation: what was (or, in a dry run, would be) deprecated, what was refused."""

    deprecated: tuple[Memory, ...]
    refused: tuple[tuple[str, str], ...]
    """(name, why not) for each memory chosen that could not be deprecated."""
    dry_run: bool


def select(
    store: Store,
    *,
    tag: str | None = None,
    type: str | None = None,
    status: str | None = None,
    older_than: str | None = None,
    now: datetime | None = None,
) -> list[Memory]:
    """The memories matching every filter given, oldest update first: `status` as the history
    supports it (`unverified` included), `older_than` (`30d`, a date) on the last update.

    Raises:
        InvalidQuery: for no filter at all, an unknown type or status, or an unreadable age.
    """
    if tag is None and type is None and status is None and older_than is None:
        raise InvalidQuery(
            "choose the memories: give --tag, --type, --status or --older-than (or NAMEs)"
        )
    statuses = [s.value for s in Status] + [UNVERIFIED]
    if status is not None and status not in statuses:
        raise InvalidQuery(f"unknown status {status!r}; statuses are: {', '.join(statuses)}")
    if type is not None and type not in store.types:
        raise InvalidQuery(f"unknown type {type!r}; types are: {', '.join(store.types)}")
    before = when.stamp(when.moment(older_than, now, "older-than")) if older_than else None
    found = [
        m
        for m in store.memories([type] if type else None)
        if (tag is None or tag in m.tags)
        and (status is None or m.status == status)
        and (before is None or m.updated < before)
    ]
    return sorted(found, key=lambda m: (m.updated, m.name))


def deprecate(
    store: Store,
    names: list[str],
    reason: str,
    *,
    tag: str | None = None,
    type: str | None = None,
    status: str | None = None,
    older_than: str | None = None,
    dry_run: bool = False,
    allow_secret: bool = False,
) -> Batch:
    """Deprecate the memories named, else those `select` chooses by the filters given, in one
    commit (see `deprecate_many`). Each memory chosen is deprecated or refused.

    Raises:
        InvalidQuery (no names and no filter, or a bad filter), InvalidMemory, SecretFound,
        NoIdentity, StoreLocked, GitError.
    """
    chosen = names or [
        m.name for m in select(store, tag=tag, type=type, status=status, older_than=older_than)
    ]
    done, refused = deprecate_many(
        store, chosen, reason, dry_run=dry_run, allow_secret=allow_secret
    )
    return Batch(tuple(done), tuple(refused), dry_run)


def deprecate_many(
    store: Store,
    names: Iterable[str],
    reason: str,
    *,
    dry_run: bool = False,
    allow_secret: bool = False,
) -> tuple[list[Memory], list[tuple[str, str]]]:
    """Deprecate every memory named, in one commit, as the acting identity. A memory that
    cannot be (already deprecated, uncommitted hand edits, a broken file) is left out and
    reported, and the others still go. With `dry_run`, nothing is written. Returns the
    memories deprecated (or that would be) and (name, why not) for each refused.

    Raises:
        InvalidMemory (a reason that is not one line), SecretFound, NoIdentity,
        StoreLocked, GitError.
    """
    check_line(reason, "reason")
    store.refuse_secrets({"reason": reason}, allow_secret)
    actor = store.require_identity()
    done: list[tuple[Path, Memory]] = []
    refused: list[tuple[str, str]] = []
    with transaction.locked(store):
        at = now()
        for name in names:
            try:
                current = store.read(name, raw=True)
                path = store.root / current.path
                transaction.refuse_uncommitted(store, [path])
                # A rule that binds the acting agent is deprecated only by a proposal that
                # another identity agrees to: one at a time (`memstore deprecate NAME`).
                store.refuse_lift(current, actor, "deprecate in a batch")
                new = transition(
                    current.memory, Status.DEPRECATED, actor=actor, reason=reason, at=at
                )
            except MemstoreError as e:
                refused.append((name, str(e)))
                continue
            done.append((path, new))
        if done and not dry_run:
            listed = ", ".join(m.name for _, m in done)
            message = subject(f"memory: deprecate {len(done)}", reason.strip())
            store.commit_memories(done, f"{message}\n\n{listed}", actor)
    return [m for _, m in done], refused


def promote_many(
    store: Store,
    names: Iterable[str],
    to: Status | str,
    reason: str,
    *,
    versions: dict[str, str] | None = None,
    allow_secret: bool = False,
) -> tuple[list[Memory], list[tuple[str, str]]]:
    """Confirm (or deprecate) every memory named, in one commit as the acting identity, each
    judged as a single move is: a memory that cannot move (your own, by its history; not a
    draft; changed since the version in `versions`; a rule that binds you, for a deprecation)
    is refused with the reason and the others still go. Returns those moved and the refused.

    Raises:
        InvalidTransition (a move other than confirm or deprecate), InvalidMemory (a reason
        that is not one line), SecretFound, NoIdentity, StoreLocked, GitError.
    """
    target = Status(str(to)) if str(to) in {s.value for s in Status} else None
    if target is Status.DEPRECATED:
        return deprecate_many(store, names, reason, allow_secret=allow_secret)
    if target is not Status.CONFIRMED:
        raise InvalidTransition("several memories move at once only to confirmed or deprecated")
    check_line(reason, "reason")
    store.refuse_secrets({"reason": reason}, allow_secret)
    actor = store.require_identity()
    done: list[tuple[Path, Memory]] = []
    refused: list[tuple[str, str]] = []
    with transaction.locked(store):
        at = now()
        for name in dict.fromkeys(names):
            try:
                current = store.read(name, raw=True)
                check_version(store, name, current, (versions or {}).get(name))
                old = store.as_history_says(current, actor, Status.CONFIRMED)
                new = transition(old, Status.CONFIRMED, actor=actor, reason=reason, at=at)
            except MemstoreError as e:
                refused.append((name, str(e).split("\n", 1)[0]))
                continue
            done.append((store.root / current.path, new))
        if done:
            listed = ", ".join(m.name for _, m in done)
            message = subject(f"memory: confirm {len(done)}", reason.strip())
            store.commit_memories(done, f"{message}\n\n{listed}", actor)
    return [m for _, m in done], refused


def _awaits(memory: Memory, me: str | None, humans: tuple[str, ...]) -> bool:
    """Whether `me` can agree to the deprecation an agent proposed for `memory` (a rule that
    binds it): not its proposer, and a person for a person's rule (see `binding`)."""
    if not proposal(memory) or not me or same_identity(memory.deprecation_proposed_by, me):
        return False
    return binding.is_person(me, humans) or not binding.is_person(memory.owner, humans)


@dataclass(frozen=True, slots=True)
class Waiting:
    """A memory in the review queue, with why its review matters."""

    memory: Memory
    why: tuple[str, ...]
    """`asked by bob`, `a rule: it acts already`, `recalled 4 times`, `linked from 2`."""


def review_queue(store: Store) -> list[Memory]:
    """The memories of `inbox`, in its order."""
    return [w.memory for w in inbox(store)]


def inbox(store: Store, *, deferred: bool = False, at: datetime | None = None) -> list[Waiting]:
    """The drafts awaiting the acting identity's review (never its own; the owner as history
    says), confirmations the history does not back, and the deprecations proposed for rules
    that bind the agents which the acting identity can agree to, ranked by what a review is
    worth: those someone asked you to review, then rules (they act already), then the most
    recalled (see `storage.uses`), then the most linked to, then the longest waiting. Those
    you deferred are left out until their time (with `deferred`, kept, last)."""
    me = store.identity
    moment = at or when.utcnow()
    everything = list(store.memories())
    linked = Counter(target for m in everything for target in {*m.links, *links_in_body(m.body)})
    try:
        humans = settings.store_humans(store.root)
    except InvalidMemory:
        humans = ()
    record = reviews.read(store)
    uses = counts(store)
    out: list[tuple[tuple[object, ...], Waiting]] = []
    for m in everything:
        mine = bool(me and same_identity(m.owner, me))
        if not ((m.status in (Status.DRAFT, UNVERIFIED) and not mine) or _awaits(m, me, humans)):
            continue
        later = record.deferred_by(m.name, me, moment)
        if later and not deferred:
            continue
        asker = record.asked_by(m.name, me)
        why: list[str] = []
        if asker:
            why.append(f"asked by {asker}")
        if m.type in RULE_TYPES:
            why.append("a rule: it acts already")
        if uses.recalled[m.name]:
            why.append(f"recalled {uses.recalled[m.name]} times")
        if linked[m.name]:
            why.append(f"linked from {linked[m.name]}")
        if later:
            why.append(f"deferred until {later[:10]}")
        key = (
            bool(later),
            not asker,
            m.type not in RULE_TYPES,
            -uses.recalled[m.name],
            -linked[m.name],
            m.updated,
            m.name,
        )
        out.append((key, Waiting(m, tuple(why))))
    out.sort(key=lambda kw: kw[0])
    return [w for _, w in out]
