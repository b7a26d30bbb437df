"""The drafts a session is asked to review, and why each matters: those the agent relied on
(it heeded the rule, or recalled the draft and read it whole), those someone asked it to
review, and those bearing on its task. Never its own, nor those it put off."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memstore.errors import InvalidMemory
from memstore.model import when
from memstore.model.identity import same_identity
from memstore.model.render_text import word
from memstore.model.status import Status
from memstore.storage import uses
from memstore.workflow.care import catalog, reviews
from memstore.workflow.rules import concepts
from memstore.workflow.rules import rules as workflow
from memstore.workflow.session import agent as session

if TYPE_CHECKING:
    from memstore.storage.store import Store

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
    found: catalog.Catalog,
    where: str,
    args: tuple[Any, ...],
    for_text: str | None,
    shown: int,
) -> Offers:
    """The drafts among the catalog's rows passing `where` that `identity` can review, as
    `Offers`, at most `shown` of each kind: with a task, those asked of it, those that bear on
    the task, then rules and drafts recalled WORTH_RECALLS times or more; the others only
    counted. Only the rows shown are read from the catalog, ranked there
    (`Catalog.awaiting_review`)."""
    moment = when.utcnow()
    record = reviews.read(store)
    counted = uses.counts(store)
    heeded = _heeded(store, identity)
    used = counted.used(identity)
    mine, mine_args = f"({where}) AND {catalog.SHOWN_STATUS} = ?", (*args, Status.DRAFT)
    if identity:
        own = [o for o in found.owners() if same_identity(o, identity)]
        deferred = [n for n in record.deferred if record.deferred_by(n, identity, moment)]
        for column, values in ((catalog.SHOWN_OWNER, own), ("name", deferred)):
            clause, more = catalog.not_in(column, values)
            mine, mine_args = f"{mine} AND {clause}", (*mine_args, *more)
    leaned = sorted(heeded | used)
    relied = [
        Offer(
            e,
            "you recorded heeding it" if e.name in heeded else "you recalled it and read it whole",
        )
        for e in found.entries(
            f"{mine} AND name IN (SELECT value FROM json_each(?))", (*mine_args, json.dumps(leaned))
        )
    ]
    clause, more = catalog.not_in("name", leaned)
    task = {f for f in concepts.features(for_text or "") if len(f) > 2 and not f.isdigit()}
    asked = {n: a for n in record.asked if (a := record.asked_by(n, identity)) is not None}
    ranked, waiting = found.awaiting_review(
        f"{mine} AND {clause}",
        (*mine_args, *more),
        asked=asked,
        recalled=dict(counted.recalled),
        features=task,
        worth=WORTH_RECALLS if for_text else None,
        limit=shown,
    )
    others: list[Offer] = []
    for r in ranked:
        e = r.entry
        asker = asked.get(e.name)
        why = [f"{word(asker)} asked you"] if asker else []
        if r.shared:
            why.append("bears on your task")
        if e.type in workflow.RULE_TYPES:
            why.append("a rule: it acts already")
        if counted.recalled[e.name]:
            why.append(f"recalled {counted.recalled[e.name]}×")
        others.append(Offer(e, ", ".join(why) or "awaits review"))
    return Offers(tuple(relied[:shown]), tuple(others), waiting - len(others))


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
