"""The drafts a session is asked to review, and why each matters: those the agent relied on
(it heeded the rule, or recalled the draft and read it whole), those someone asked it to
review, and those bearing on its task. Never its own, nor those it put off."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memstore.errors import InvalidMemory
from memstore.model import when
from memstore.model.identity import same_identity
from memstore.model.render_text import word
from memstore.model.status import Status
from memstore.storage import uses
from memstore.workflow.care import reviews
from memstore.workflow.rules import concepts
from memstore.workflow.rules import rules as workflow
from memstore.workflow.session import agent as session

if TYPE_CHECKING:
    from memstore.storage.store import Store
    from memstore.workflow.care import catalog

log = logging.getLogger(__name__)

WORTH_RECALLS = 2
"""A draft recalled this often is offered for review whatever the task: the team relies on it
(as is a rule, which acts already); other drafts only when they bear on the task."""


@dataclass(frozen=True, slots=True)
class Offer:
    """A draft offered for review, with why its review matters now."""

    entry: catalog.Entry
    why: str


@dataclass(frozen=True, slots=True)
class Offers:
    """`relied`: drafts the agent relied on, to confirm or deprecate now; `others`: drafts it
    can review, most worth it first; `more`: how many others await it beyond those."""

    relied: tuple[Offer, ...]
    others: tuple[Offer, ...]
    more: int


def offers(
    store: Store,
    identity: str | None,
    drafts: list[catalog.Entry],
    for_text: str | None,
    found: catalog.Catalog,
    shown: int,
) -> Offers:
    """The drafts among `drafts` (the catalog's) that `identity` can review, as `Offers`, at
    most `shown` of each kind: with a task, those asked of it, those that bear on the task,
    then rules and drafts recalled WORTH_RECALLS times or more; the others only counted."""
    moment = when.utcnow()
    record = reviews.read(store)
    counted = uses.counts(store)
    heeded = _heeded(store, identity)
    used = counted.used(identity)
    mine: list[catalog.Entry] = []
    for e in drafts:
        if e.status != Status.DRAFT or (identity and same_identity(e.owner, identity)):
            continue
        if record.deferred_by(e.name, identity, moment):
            continue
        mine.append(e)
    relied: list[Offer] = []
    rest: list[catalog.Entry] = []
    for e in mine:
        if e.name in heeded:
            relied.append(Offer(e, "you recorded heeding it"))
        elif e.name in used:
            relied.append(Offer(e, "you recalled it and read it whole"))
        else:
            rest.append(e)
    task = {f for f in concepts.features(for_text or "") if len(f) > 2 and not f.isdigit()}
    shared = found.shared(task) if task else {}
    rest.sort(key=lambda e: (e.updated, e.name))  # the longest waiting first, all else equal
    rest.sort(
        key=lambda e: (
            record.asked_by(e.name, identity) is None,
            -shared.get(e.path, 0),
            e.type not in workflow.RULE_TYPES,
            -counted.recalled[e.name],
        )
    )
    others: list[Offer] = []
    for e in rest:
        asker = record.asked_by(e.name, identity)
        worth = e.type in workflow.RULE_TYPES or counted.recalled[e.name] >= WORTH_RECALLS
        if for_text and not asker and not shared.get(e.path) and not worth:
            continue
        why = [f"{word(asker)} asked you"] if asker else []
        if shared.get(e.path):
            why.append("bears on your task")
        if e.type in workflow.RULE_TYPES:
            why.append("a rule: it acts already")
        if counted.recalled[e.name]:
            why.append(f"recalled {counted.recalled[e.name]}×")
        others.append(Offer(e, ", ".join(why) or "awaits review"))
    return Offers(tuple(relied[:shown]), tuple(others[:shown]), len(rest) - len(others[:shown]))


def _heeded(store: Store, identity: str | None) -> set[str]:
    """The draft rules `identity` recorded heeding while they were drafts."""
    if not identity:
        return set()
    try:
        records = session.outcomes(store)
    except InvalidMemory as e:  # a bad outcome line must not cost a session its briefing
        log.warning("cannot read outcomes: %s", e)
        return set()
    return {
        r.name
        for r in records
        if r.outcome == "heeded" and r.status == Status.DRAFT and same_identity(r.actor, identity)
    }
