"""Closing a session: what it learned becomes drafts, and what it left open is named.

`close(store, text)` reads a session's summary or transcript excerpt (rule-based, no model
call), saves the corrections, decisions and failures-with-fixes it finds as drafts in one
commit (leaving out what the store already holds), asks for the outcomes of the corrections
that applied, and lists the caller's ledger claims still open.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memstore.errors import InvalidMemory, MemstoreError
from memstore.model.render_text import Bullet, fence_for, kind, stamp, word
from memstore.workflow.care import porting, sources
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.ledger.claims import Check
from memstore.workflow.rules import rules as workflow
from memstore.workflow.session import agent as session

if TYPE_CHECKING:
    from memstore.storage.store import Store

TEXT_MAX = 400_000
"""The most of a session's text read, in characters (its end: the latest part)."""


@dataclass(frozen=True, slots=True)
class Closing:
    """What closing a session did and what it asks of the agent."""

    saved: porting.Imported
    """The drafts saved (or, with `dry_run`, proposed) and what was left out."""
    outcomes: tuple[workflow.Rule, ...] = ()
    """Corrections and warnings the session's text matches: record whether each was heeded."""
    claims: tuple[Check, ...] = ()
    """The caller's ledger claims still in progress: record or release each."""
    problems: tuple[str, ...] = field(default=())
    """What could not be looked at (a damaged ledger)."""


def close(store: Store, text: str, *, dry_run: bool = False) -> Closing:
    """Close a session described by `text` (a summary, or a transcript excerpt).

    Raises:
        InvalidMemory: for an empty text.
        NoIdentity, StoreLocked.
    """
    if not text.strip():
        raise InvalidMemory(
            "give the session's summary or transcript: what was decided, corrected, broken, fixed"
        )
    text = text[-TEXT_MAX:]
    candidates = sources.session_candidates(text, set())
    count = len(candidates)
    saved = porting.save(
        store,
        candidates,
        [],
        f"memory: close session — {count} proposed draft{'s' if count != 1 else ''}",
        dry_run=dry_run,
        loose=True,
        skip_secrets=True,
    )
    created = {path.partition("/")[2] for path in saved.created}
    applied = tuple(
        rule
        for rule in session.rules(store)
        if rule.name not in created and workflow.first_match(rule, text) is not None
    )
    problems: list[str] = []
    try:
        claims = tuple(_open_claims(store))
    except MemstoreError as e:
        claims = ()
        problems.append(f"the ledger cannot be read: {e}")
    return Closing(saved, applied, claims, tuple(problems))


def _open_claims(store: Store) -> list[Check]:
    """The acting identity's claims with no record yet."""
    identity = store.identity
    return [c for c in ledger_io.open_claims(store) if identity is not None and c.actor == identity]


def text(closing: Closing, fenced: bool = False) -> str:
    """What closing did, for a person or (`fenced`) for an agent: what agents and people wrote
    is fenced as data, on a line after memstore's own."""
    saved = closing.saved
    bullets: list[Bullet] = []
    verb = "would save" if saved.dry_run else "saved"
    lead = (
        f"{verb} {len(saved.created)} draft(s) from the session (someone else confirms them); "
        f"left out {len(saved.skipped)} already in the store"
    )
    for path, description in zip(saved.created, saved.descriptions, strict=True):
        type_, _, name = path.partition("/")
        bullets.append(Bullet(f"- {kind(type_)} `{word(name)}` [draft]", description))
    if closing.outcomes:
        bullets.append(
            Bullet(
                "Corrections that applied this session — record whether each was heeded "
                "(tool `outcome`, or `memstore outcome NAME heeded|recurred`):"
            )
        )
        for rule in closing.outcomes:
            own = f"- {rule.severity} {kind(rule.type)} `{word(rule.name)}` [{rule.shown_status}]"
            bullets.append(Bullet(own, rule.description))
    if closing.claims:
        bullets.append(
            Bullet(
                "Your claims still open in the ledger — record each (done/failed) or release it:"
            )
        )
        for c in closing.claims:
            bullets.append(
                Bullet(f"- claimed until {stamp(c.until or '?', 24)}", f"{c.action} {c.target}")
            )
    bullets.extend(Bullet(f"- {p}") for p in closing.problems)
    if not fenced:
        return "\n".join([lead, *(b.render() for b in bullets)]) + "\n"
    fence = fence_for([lead, *(f"{b.own} {b.data}" for b in bullets)])
    lines = [lead]
    if any(b.data for b in bullets):
        lines.append(fence.preamble)
    lines += [b.render(fence) for b in bullets]
    return "\n".join(lines) + "\n"
