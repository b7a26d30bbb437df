"""The session briefing: sections of Markdown bullets fitted to a budget of LLM tokens.

For an agent (`fenced=True`) every bullet's status is a line of memstore's own and what agents
or people wrote follows it inside a per-briefing fence, so no description can forge a status.
"""

from __future__ import annotations

import bisect
import heapq
import json
import logging
import re
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from memstore.errors import GitError, InvalidMemory, MemstoreError
from memstore.git import commit, gitlog, refs, repository
from memstore.git.gitlog import Change, FileChange
from memstore.limits import BRIEFING_BUDGET, BRIEFING_BUDGET_MIN, CHARS_PER_TOKEN, estimate_tokens
from memstore.model import when
from memstore.model.memory import Memory, now
from memstore.model.render_text import (
    STATUSES,
    Bullet,
    Fence,
    fence_for,
    kind,
    stamp,
    unshown,
    word,
)
from memstore.model.status import Status
from memstore.search import upkeep as search
from memstore.search.query import Hit
from memstore.storage import settings
from memstore.storage.files import REVIEWS_FILE, atomic_write
from memstore.workflow.care import catalog, stats, steward
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.ledger import claims
from memstore.workflow.ledger import lines as ledger
from memstore.workflow.rules import rules as workflow
from memstore.workflow.session import agent as session
from memstore.workflow.session import offers as review
from memstore.workflow.session import touches

if TYPE_CHECKING:
    from pathlib import Path

    from memstore.storage.store import Store

log = logging.getLogger(__name__)

LIST_MAX = 50
"""At most this many bullets per section before budgeting (a busy store has hundreds)."""

FIRST_SESSION_SINCE = "7 days ago"
"""How far back "changes since your last session" looks when there was no last session."""

TASK_SHOWN = 120
"""The briefing repeats at most this much of the task it was asked for."""

PINNED_MAX = 20
"""At most this many p0/p1 rules are kept whatever the budget; past that, a store's rules are
too broad to brief (the rest are cut like any bullet, and the cut note counts them)."""

DRAFTS_SHOWN = 5
"""Drafts awaiting review listed by name (the most relevant); the rest are counted."""

GROUP_NAMES = 5
"""Names listed in one grouped change line before the rest are counted."""


@dataclass(frozen=True, slots=True)
class Section:
    """A titled list of bullets; `priority` 1 is kept longest when the budget is tight."""

    title: str
    priority: int
    lines: tuple[Bullet, ...]
    empty: str | None = None
    """What to say when there is nothing to list (None: leave the section out)."""
    pinned: int = 0
    """The first `pinned` bullets are never cut, whatever the budget (p0 and p1 rules)."""
    compact: tuple[Bullet, ...] = ()
    """Shorter forms of the pinned bullets, used when even they do not fit the budget."""
    more: int = 0
    """Bullets after `lines` that were not built: `lines` alone are longer than any budget
    they are fitted to (see `built`), so no fit keeps any of these."""

    @property
    def total(self) -> int:
        """How many bullets the section has, built or not."""
        return len(self.lines) + self.more


@dataclass(frozen=True, slots=True)
class Briefing:
    """The briefing's Markdown, its approximate size, and what was cut to fit the budget."""

    text: str
    tokens: int
    """The text's estimated LLM tokens (`limits.estimate_tokens`)."""
    budget: int
    cut: tuple[str, ...] = ()


def _render(
    header: str, sections: list[Section], kept: dict[str, int], note: str, fence: Fence | None
) -> str:
    parts = [header]
    for s in sections:
        n = kept[s.title]
        if n == 0 and not (s.empty and not s.total):
            continue
        body = [b.render(fence) for b in s.lines[:n]] if n else [s.empty or ""]
        parts.append(f"## {s.title}\n" + "\n".join(body))
    if note:
        parts.append(f"_Cut to fit the budget: {note}._")
    return "\n\n".join(parts) + "\n"


def _cut_notes(sections: list[Section], kept: dict[str, int]) -> list[str]:
    notes: list[str] = []
    for s in sorted(sections, key=lambda x: x.priority):
        dropped = s.total - kept[s.title]
        if dropped == s.total and dropped:
            notes.append(f"{s.title.lower()} ({dropped})")
        elif dropped:
            notes.append(f"{dropped} of {s.total} {s.title.lower()}")
    return notes


def _short_note(sections: list[Section], kept: dict[str, int]) -> str:
    dropped = [s.total - kept[s.title] for s in sections]
    items, parts = sum(dropped), sum(1 for d in dropped if d)
    return f"{items} item(s) from {parts} section(s)" if items else ""


def fit(header: str, sections: list[Section], budget: int, fence: Fence | None = None) -> Briefing:
    """Render `sections` in their given order within `budget` LLM tokens (quoting through `fence`).

    Drops bullets from the end of the least important section first (highest `priority`
    number), then the next, until the text, including a line naming what was cut, fits; when
    even that line is too long, it shrinks to a count. The header and each section's
    `pinned` bullets are always kept (in their `compact` form if need be), so the briefing
    can exceed a budget too small for them.

    The text is rendered once: the length of each way of cutting is summed from the lengths
    of its parts, in the order the bullets are dropped, and the first that fits is kept.
    """
    budget = max(budget, BRIEFING_BUDGET_MIN)
    kept = {s.title: s.total for s in sections}
    order = sorted(sections, key=lambda s: s.priority, reverse=True)
    sizes = _Sizes(header, sections, fence, budget * CHARS_PER_TOKEN)
    found = sizes.fits(kept, "")
    for victim in order if not found else ():
        for n in sizes.tries(victim, kept):
            kept[victim.title] = n
            if sizes.fits(kept, "; ".join(_cut_notes(sections, kept))):
                found = True
                break
        if found:
            break
        kept[victim.title] = min(kept[victim.title], victim.pinned, victim.total)
    text = _render(header, sections, kept, "; ".join(_cut_notes(sections, kept)), fence)
    if not found:
        if estimate_tokens(text) > budget:
            if any(s.compact and s.lines[: s.pinned] != s.compact for s in sections):
                sections = [_compacted(s) for s in sections]
                text = _render(header, sections, kept, "; ".join(_cut_notes(sections, kept)), fence)
            if estimate_tokens(text) > budget:
                text = _render(header, sections, kept, _short_note(sections, kept), fence)
    notes = _cut_notes(sections, kept)
    return Briefing(text=text, tokens=estimate_tokens(text), budget=budget, cut=tuple(notes))


class _Sizes:
    """The length `_render` gives each way of cutting `sections`, without rendering it."""

    def __init__(
        self, header: str, sections: list[Section], fence: Fence | None, limit: int
    ) -> None:
        self.header = header
        self.sections = sections
        self.limit = limit
        """The most characters that fit the budget (`estimate_tokens`)."""
        self.sums: dict[str, list[int]] = {}
        for s in sections:
            sums = [0]
            for b in s.lines:
                sums.append(sums[-1] + len(b.render(fence)))
            self.sums[s.title] = sums

    def length(self, kept: dict[str, int], note: str) -> int:
        parts = [len(self.header)]
        for s in self.sections:
            n = kept[s.title]
            if n == 0 and not (s.empty and not s.total):
                continue
            sums = self.sums[s.title]
            # Past the built bullets: longer still than those, which are past any limit.
            body = sums[min(n, len(sums) - 1)] + n - 1 if n else len(s.empty or "")
            parts.append(len(f"## {s.title}\n") + body)
        if note:
            parts.append(len(f"_Cut to fit the budget: {note}._"))
        return sum(parts) + 2 * (len(parts) - 1) + 1

    def fits(self, kept: dict[str, int], note: str) -> bool:
        return self.length(kept, note) <= self.limit

    def tries(self, victim: Section, kept: dict[str, int]) -> Iterator[int]:
        """The bullet counts of `victim` worth trying, most first: each drop in turn, less
        those that keep more bullets than fit on their own (none of those can fit)."""
        sums = self.sums[victim.title]
        lowest = min(victim.pinned, victim.total)
        rest = dict(kept)
        rest[victim.title] = lowest
        if self.length(rest, "") > self.limit:
            return  # the other sections alone are too long: no count of this one fits
        n = kept[victim.title] - 1
        while n >= lowest:
            if n >= len(sums) or sums[n] + n - 1 > self.limit:
                # The most bullets whose lengths alone stay within the limit.
                n = min(n - 1, bisect.bisect_right(sums, self.limit) - 1)
                continue
            yield n
            n -= 1


def _compacted(s: Section) -> Section:
    if not s.compact:
        return s
    return replace(s, lines=s.compact + s.lines[s.pinned :])


def built(
    bullets: Iterable[Bullet], budget: int, fence: Fence | None, least: int = 0
) -> tuple[Bullet, ...]:
    """The first of `bullets` a section fitted to `budget` LLM tokens may show, rendered
    through a fence like `fence` (a nonce's length is all that counts): at least `least`,
    and past those until they alone are longer than the budget, so that no fit keeps a bullet
    not built. The rest are not taken from `bullets`: the caller counts them
    (`Section.more`)."""
    limit = max(budget, BRIEFING_BUDGET_MIN) * CHARS_PER_TOKEN
    out: list[Bullet] = []
    length = -1
    for b in bullets:
        if len(out) >= least and length > limit:
            break
        out.append(b)
        length += len(b.render(fence)) + 1
    return tuple(out)


# -- a store's briefing -------------------------------------------------------------------


def _held(
    store: Store,
    found: catalog.Catalog,
    humans: tuple[str, ...],
    scopes: tuple[str, ...] = (),
) -> tuple[list[tuple[str, workflow.Rule]], set[str]]:
    """The rules that bind the agents held in force in a version their files do not show
    (see `storage.binding`: a change an agent made alone, an uncommitted one), each with its
    path; and the paths of every rule that binds the agents (its file is read for a pending
    deprecation proposal when it is shown: `_proposed`). Reads the files of the rules whose
    version in the catalog is not the one in force only. A version held in force counts for
    the `scopes` it names, whatever scope its file now says."""
    from memstore.git import objects
    from memstore.storage import binding, trust
    from memstore.storage.files import read_regular

    try:
        bound = store.trust.binding()
    except GitError:
        return [], set()
    if not bound:
        return [], set()
    prefix = store.trust.prefix
    protected = {p[len(prefix) :] for p in bound if p.startswith(prefix)}
    # The catalog holds each file's blob as it read it: only the rules whose file is not the
    # version in force are read again (`binding.in_force` reads one file per rule it is given).
    blobs = found.blobs(protected)
    differ = {
        path: force
        for path, force in bound.items()
        if path.startswith(prefix)
        and (force.held_by is not None or blobs.get(path[len(prefix) :]) != force.blob)
    }
    held: list[tuple[str, workflow.Rule]] = []
    for item in binding.in_force(
        differ,
        prefix,
        store.root,
        [],
        read_regular,
        lambda blob: trust.parse_blob(store.repo, blob),
        objects.blob_sha,
    ):
        if not isinstance(item, binding.Held):
            continue
        if scopes and not session.in_scope(item.memory, scopes):
            continue
        if rule := workflow.rule_of(item.memory, humans):
            path = f"{item.memory.type}/{item.memory.name}.md"
            held.append((path, replace(rule, held=item.why)))
    return held, protected


def _proposed(
    store: Store,
    rule: workflow.Rule,
    path: str,
    protected: AbstractSet[str],
    humans: tuple[str, ...],
) -> workflow.Rule:
    """`rule` (the catalog's, at `path`) with the deprecation proposal its file carries, when
    it binds the agents (`protected`)."""
    if path not in protected or (memory := _read(store, path, raw=True)) is None:
        return rule
    if not memory.deprecation_proposed_by:
        return replace(rule, proposal="")  # none, however the history judges the file
    if (memory := _read(store, path)) is None:  # its status as the history supports it
        return rule
    mine = workflow.rule_of(memory, humans)
    return replace(rule, proposal=mine.proposal if mine is not None else "")


@dataclass(frozen=True, slots=True)
class _Rules:
    """The rules a briefing lists, in force, in `Rule.rank` order, read from the catalog as
    they are taken: `held` (versions in force the files do not show) merged with the rows
    passing `where`."""

    store: Store
    found: catalog.Catalog
    where: str
    args: tuple[Any, ...]
    held: list[tuple[str, workflow.Rule]]
    protected: AbstractSet[str]
    humans: tuple[str, ...]
    binding: frozenset[str]
    """The owners whose drafts bind, as the memories spell them (the store's humans)."""

    def ranked(self, leave: AbstractSet[str] = frozenset()) -> Iterator[workflow.Rule]:
        """Every rule but those at the paths in `leave`, most severe first (`Rule.rank`; the
        held versions first among equals, then the catalog's order)."""
        clause, args = catalog.not_in("path", leave)
        rows = self.found.rules(f"({self.where}) AND {clause}", (*self.args, *args), self.binding)
        listed = (
            (
                r.rank,
                1,
                tuple(e.path.split("/", 1)),
                _proposed(self.store, r, e.path, self.protected, self.humans),
            )
            for e in rows
            if (r := catalog.rule_of(e, self.humans)) is not None
        )
        held = sorted(
            ((r.rank, 0, (str(i),), r) for i, (p, r) in enumerate(self.held) if p not in leave),
            key=lambda x: x[:2],
        )
        for *_, rule in heapq.merge(held, listed, key=lambda x: x[:3]):
            yield rule

    def count(self, where: str = "", args: tuple[Any, ...] = ()) -> int:
        """How many rules pass `where` too (SQL over the catalog's columns)."""
        clause = f"({self.where})" + (f" AND ({where})" if where else "")
        return self.found.count(clause, (*self.args, *args))

    def candidates(self, task: str) -> list[tuple[str, workflow.Rule]]:
        """The rules that may bear on `task` (`Catalog.rule_candidates`, and every held
        version), each with its path, in the order `ranked` takes equals."""
        maybe = sorted(self.found.rule_candidates(task))
        rows = self.found.entries(
            f"({self.where}) AND path IN (SELECT value FROM json_each(?))",
            (*self.args, json.dumps(maybe)),
        )
        listed = [(e.path, r) for e in rows if (r := catalog.rule_of(e, self.humans)) is not None]
        return [*self.held, *listed]


def _read(store: Store, path: str, raw: bool = False) -> Memory | None:
    try:
        return store.read_file(store.root / path, raw=raw)[0]
    except (InvalidMemory, OSError) as e:
        log.warning("skipping %s: %s", path, e)
        return None


def brief(
    store: Store,
    *,
    for_text: str | None = None,
    budget_tokens: int = BRIEFING_BUDGET,
    since: str | None = None,
    mark: bool = True,
    fenced: bool = False,
    scopes: tuple[str, ...] = (),
    client: int | None = None,
) -> Briefing:
    """A Markdown briefing for the start of a session, fitted to `budget_tokens`.

    Lists the rules that apply (most severe first), claims in progress, confirmed
    decisions and runbooks about `for_text`, drafts awaiting your review, and what changed
    since your last briefing (or since `since`: a commit, a date (the start of that day, UTC),
    a UTC time or a duration back from now such as `24h` or `7d`).
    With `mark`, remembers this session's HEAD in the ignored cache for the next one.
    With `fenced` (for an agent's context), what agents or people wrote is fenced as data
    under status lines of memstore's own. With `scopes` (an agent's areas), only what is for
    one of them or for no scope in particular. Files other live sessions are changing are
    listed too (those of `client`'s own session left out: see `touches`).
    """
    identity = store.identity
    # What the agent's scopes leave out, from the search index's scope field (its size is
    # that of the other scopes' memories, not the store's).
    unseen = search.outside(store, scopes)
    start = refs.head(store.repo)
    today = when.utcnow().strftime("%Y-%m-%d")
    try:
        rewrite = {r.name for r in session.heed_rates(store)[0] if r.rewrite}
    except InvalidMemory as e:  # a bad outcome line must not cost a session its briefing
        log.warning("cannot read outcomes: %s", e)
        rewrite = set[str]()
    with catalog.opened(store) as found:
        # Only what each section shows is asked of the catalog, never every memory parsed:
        # the catalog ranks and counts, and the rows shown are read.
        live = "NOT (expires != '' AND expires < ?)"
        hidden, hidden_args = catalog.not_in("path", unseen)
        expired = found.page(
            f"expires != '' AND expires < ? AND {hidden}", (today, *hidden_args), 5, order="name"
        )
        humans = settings.store_humans(store.root)
        held, protected = _held(store, found, humans, scopes)
        leave, leave_args = catalog.not_in("path", {p for p, _ in held})
        rules = _Rules(
            store,
            found,
            f"severity IS NOT NULL AND {catalog.SHOWN_STATUS} != 'deprecated' AND {live} "
            f"AND {hidden} AND {leave}",
            (today, *hidden_args, *leave_args),
            held,
            protected,
            humans,
            frozenset(o for o in found.owners() if workflow.binds_shown(Status.DRAFT, o, humans)),
        )
        every = rules.count() + len(held)
        if for_text:
            held_paths = {p for p, _ in held}
            bears = workflow.relating(for_text)
            applies = {p: r for p, r in rules.candidates(for_text) if bears(r)}
            ordered = sorted(applies.items(), key=lambda pr: pr[1].rank)
            applying: Iterable[workflow.Rule] = (
                r if p in held_paths else _proposed(store, r, p, protected, humans)
                for p, r in ordered
            )
            urgent = sum(1 for _, r in ordered if r.severity in ("p0", "p1"))
            others = rules.ranked(set(applies))
            count = (len(applies), every - len(applies))
        else:
            urgent = rules.count("severity IN ('p0', 'p1')")
            urgent += sum(1 for _, r in held if r.severity in ("p0", "p1"))
            applying, others, count = rules.ranked(), iter(()), (every, 0)
        # p0 and p1 rules that apply are never cut: they come first (rules are sorted by rank).
        pinned = min(urgent, PINNED_MAX)
        taken: list[workflow.Rule] = []

        def lines(rules: Iterable[workflow.Rule]) -> Iterator[Bullet]:
            for r in rules:
                taken.append(r)
                yield workflow.rule_line(r, r.name in rewrite)

        sizing = fence_for(()) if fenced else None  # the briefing's own is chosen later
        applying_lines = built(lines(applying), budget_tokens, sizing, pinned)
        compact = tuple(
            workflow.rule_line(r, r.name in rewrite, short=True) for r in taken[:pinned]
        )
        other_lines = built(lines(others), budget_tokens, sizing)
        drafts = review.offers(
            store,
            identity,
            found,
            f"status = 'draft' AND {live} AND {hidden}",
            (today, *hidden_args),
            for_text,
            DRAFTS_SHOWN,
        )
        pinned_lines = _pinned_lines(
            store,
            found,
            f"(pinned = 1 OR importance = 'high') AND {live} AND {hidden}",
            (today, *hidden_args),
        )
        knowledge = _knowledge(store, for_text, found, today, scopes, unseen)
    notes = steward.drift_notes(store, [m for m in knowledge if isinstance(m, Memory)])
    notes |= {h.name: h.note for h in knowledge if isinstance(h, Hit) and h.note}
    sections = [
        Section(
            "Corrections and warnings that apply",
            1,
            applying_lines,
            empty="- none",
            pinned=pinned,
            compact=compact,
            more=count[0] - len(applying_lines),
        ),
        Section("Pinned and important", 1, tuple(pinned_lines)),
        Section("Claims in progress", 2, tuple(_claims_lines(store, identity))),
        Section("Files other live sessions are changing", 2, tuple(_touch_lines(store, client))),
        Section(
            "Drafts you relied on: confirm or deprecate them",
            2,
            tuple(_draft_bullet(o, RELIED_ASK) for o in drafts.relied),
        ),
        Section(
            "Decisions and runbooks" + (" about this task" if for_text else ", latest"),
            3,
            tuple(_knowledge_bullet(m, notes.get(m.name)) for m in knowledge),
        ),
        Section(
            "Changes since your last session",
            4,
            tuple(_changes_lines(store, since, unseen)),
            empty="- nothing new",
        ),
        Section(
            "Drafts awaiting your review" if identity else "Drafts awaiting review",
            5,
            tuple(_draft_bullet(o) for o in drafts.others) + _more(drafts.more),
        ),
        Section(
            "Other corrections and warnings",
            6,
            other_lines,
            more=count[1] - len(other_lines),
        ),
        Section("Expired, left out", 5, _expired_lines(*expired)),
    ]
    who = identity or "no identity set"
    task = " ".join((for_text or "").split())
    task = task if len(task) <= TASK_SHOWN else task[: TASK_SHOWN - 1] + "…"
    fence: Fence | None = None
    if fenced:
        fence = fence_for([task, *(b.data for s in sections for b in s.lines)])
        shown = f"\nTask: {fence.inline(task)}" if task else ""
        header = f"# memstore briefing for {who}{shown}\n{fence.preamble}"
    else:
        header = f"# memstore briefing for {who}" + (f"\nTask: {task}" if task else "")
    result = fit(header, sections, budget_tokens, fence)
    if mark and start is not None:
        # HEAD as it was before reading: a change made meanwhile shows again next time
        # rather than never.
        _mark_session(store, start)
    return result


def _expired_lines(first: list[catalog.Entry], count: int) -> tuple[Bullet, ...]:
    """One line saying expired memories exist (the `first` by name, of `count`; names are
    slugs), so nobody thinks them lost."""
    if not count:
        return ()
    names = [e.name for e in first]
    shown = ", ".join(names) + (f" and {count - 5} more" if count > 5 else "")
    return (Bullet(f"- {count} expired: {shown} (`memstore search --include-deprecated`)", ""),)


def _pinned_lines(
    store: Store, found: catalog.Catalog, where: str, args: tuple[Any, ...]
) -> list[Bullet]:
    """Pinned and high-importance memories (passing `where`) that are not deprecated: they
    survive budgets. The pinned first, then by name."""
    chosen, _ = found.page(
        f"({where}) AND {catalog.SHOWN_STATUS} != 'deprecated'", args, LIST_MAX, order="pinned"
    )
    memories = [m for e in chosen if (m := found.memory(e)) is not None]
    notes = steward.drift_notes(store, memories)
    return [_knowledge_bullet(m, notes.get(m.name), status=True) for m in memories]


def _knowledge_bullet(
    m: Memory | Hit | catalog.Entry, note: str | None = None, status: bool = False
) -> Bullet:
    hidden = unshown([("type", m.type, kind(m.type))])
    lead = f"- {kind(m.type)} `{m.name}`"
    if status:
        lead += f" [{m.status if m.status in STATUSES else 'unknown status'}]"
    if note:
        lead += " · MAY BE OUT OF DATE"
    return Bullet(lead, " · ".join([m.description, *hidden, *([note] if note else [])]))


RELIED_ASK = "confirm or deprecate it (memory_promote), saying what you saw"
"""What the briefing asks of an agent about a draft it relied on (it is not the author)."""


def _draft_bullet(offer: review.Offer, ask: str = "") -> Bullet:
    m = offer.entry
    hidden = unshown([("type", m.type, kind(m.type)), ("owner", m.owner, word(m.owner))])
    why = f" ({offer.why}" + (f"; {ask})" if ask else ")")
    return Bullet(
        f"- {kind(m.type)} `{m.name}` by {word(m.owner)}{why}",
        " · ".join([m.description, *hidden]),
        plain=f"- {m.type} `{m.name}` by {m.owner}{why}: {m.description}",
    )


def _claims_lines(store: Store, identity: str | None) -> list[Bullet]:
    """Valid ledger claims with no record yet: someone is doing that right now."""
    try:
        view = ledger_io.view(store)
        moment = when.utcnow()
        pairs = dict.fromkeys(
            (e.action, e.target) for e in view.events if e.status == ledger.CLAIMED
        )
        checks = [claims.check(view, action, target, moment) for action, target in pairs]
    except MemstoreError as e:  # a damaged ledger: say so rather than list nothing
        return [Bullet("- the ledger cannot be read", str(e))]
    lines: list[Bullet] = []
    for c in checks:
        if c.state is claims.State.IN_PROGRESS:
            who = "you" if identity is not None and c.actor == identity else c.actor
            lines.append(
                Bullet(
                    f"- claimed by {word(who)} until {stamp(c.until or '?', 24)}",
                    f"{c.action} {c.target}",
                    plain=f"- `{c.action} {c.target}` claimed by {who} until {c.until}",
                )
            )
    return lines[:LIST_MAX]


def _touch_lines(store: Store, client: int | None) -> list[Bullet]:
    """Other live sessions' file edits of the last half hour: a soft warning, never an error."""
    try:
        return touches.bullets(touches.others(store, client=client))
    except (OSError, ValueError) as e:
        log.warning("cannot read the file touches: %s", e)
        return []


def _knowledge(
    store: Store,
    for_text: str | None,
    found: catalog.Catalog,
    today: str,
    scopes: tuple[str, ...] = (),
    unseen: AbstractSet[str] = frozenset(),
) -> list[Memory] | list[Hit]:
    kinds = ("decision", "runbook")
    if for_text:
        return session.relevant(store, for_text, kinds, 10, scopes)
    live = "NOT (expires != '' AND expires < ?)"
    hidden, hidden_args = catalog.not_in("path", unseen)
    confirmed, _ = found.page(
        f"type IN ('decision', 'runbook') AND status = 'confirmed' AND {live} AND {hidden} "
        f"AND {catalog.SHOWN_STATUS} = 'confirmed'",
        (today, *hidden_args),
        10,
        order="newest",
    )
    return [m for e in confirmed if (m := found.memory(e)) is not None]


def _more(rest: int) -> tuple[Bullet, ...]:
    if rest <= 0:
        return ()
    return (Bullet(f"- and {rest} more awaiting review: `memstore review`"),)


def _changes_lines(
    store: Store, since: str | None, unseen: AbstractSet[str] = frozenset()
) -> list[Bullet]:
    since_commit: str | None = None
    since_date: str | None = None
    if since:
        if since.startswith("-") or "\n" in since:
            raise InvalidMemory(
                f"invalid --since {since!r}: give a commit id, a date or a duration (24h, 7d)"
            )
        if re.fullmatch(r"[0-9a-fA-F]{7,40}", since):
            since_commit = since
        else:
            # Not git's own reading: it takes a bare date as that date at this time of day.
            since_date = when.since_stamp(since)
    else:
        try:
            data: Any = json.loads(_session_marker(store).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        marker: dict[str, Any] = data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        head = marker.get("head")
        if isinstance(head, str):
            since_commit = head
        else:
            since_date = FIRST_SESSION_SINCE
    try:
        found = gitlog.changes(
            store.repo, store.root, since_commit=since_commit, since_date=since_date
        )
    except MemstoreError:
        found = gitlog.changes(store.repo, store.root, since_date=FIRST_SESSION_SINCE)
    prefix = repository.repo_path(store.repo, store.root)
    prefix = "" if prefix == "." else prefix
    groups: dict[str, _Group] = {}
    for change in found:  # newest first
        for f in change.files:
            rel = f.path[len(prefix) + 1 :] if prefix else f.path
            if rel.startswith(".") or not (rel.endswith(".jsonl") or "/" in rel):
                continue  # the store's own settings files, not knowledge
            if rel in unseen:
                continue  # for other scopes' agents
            _group(groups, change, rel, f, stats.OUTCOMES_FILE)
    return [g.bullet() for g in groups.values()][:LIST_MAX]


@dataclass(slots=True)
class _Group:
    """Changes of one kind since the last session: how many, by whom, and on what."""

    what: str
    """`memory added`, `outcome recorded`, `record appended to ledger.jsonl`…"""
    count: int = 0
    authors: dict[str, None] = field(default_factory=dict[str, None])
    names: dict[str, int] = field(default_factory=dict[str, int])

    def bullet(self) -> Bullet:
        noun, _, rest = self.what.partition(" ")
        plural = noun if self.count == 1 else ("memories" if noun == "memory" else f"{noun}s")
        own = f"- {self.count} {plural} {rest}"
        listed = [
            f"`{n}`" + (f" ×{c}" if c > 1 else "")
            for n, c in list(self.names.items())[:GROUP_NAMES]
        ]
        more = len(self.names) - GROUP_NAMES
        if more > 0:
            listed.append(f"and {more} more")
        data = f"by {', '.join(self.authors)}: {', '.join(listed)}"
        return Bullet(own, data, plain=f"{own} {data}")


def _group(
    groups: dict[str, _Group], change: Change, rel: str, f: FileChange, outcomes: str
) -> None:
    if f.kind != "appended":
        name = rel[:-3] if rel.endswith(".md") else rel
        _count(groups, f"memory {f.kind}", change.author, name)
        return
    for line in f.added_lines:
        try:
            data: Any = json.loads(line)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        record: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
        if rel == outcomes:
            name = f"{record.get('name')} {record.get('outcome')}"
            _count(groups, "outcome recorded", change.author, name)
        elif rel == REVIEWS_FILE:  # a review request or deferral
            name = f"{record.get('kind')} {record.get('name')}"
            _count(groups, "note for review recorded", change.author, name)
        else:
            parts = [str(record.get(k)) for k in ("action", "target", "status") if record.get(k)]
            _count(groups, f"record appended to {rel}", change.author, " ".join(parts))


def _count(groups: dict[str, _Group], what: str, author: str, name: str) -> None:
    group = groups.setdefault(what, _Group(what))
    group.count += 1
    group.authors[author] = None
    group.names[name] = group.names.get(name, 0) + 1


def _session_marker(store: Store) -> Path:
    slug = commit.email_for(store.identity or "anonymous").split("@", 1)[0]
    return store.cache / "sessions" / f"{slug}.json"


def _mark_session(store: Store, sha: str) -> None:
    marker = _session_marker(store)
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(marker, json.dumps({"head": sha, "at": now()}) + "\n")
    except OSError as e:  # a read-only checkout still gets its briefing
        log.warning("cannot remember this session in %s: %s", store.rel(marker), e)
