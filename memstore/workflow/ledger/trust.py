"""Which ledger lines count: the working file and every line git committed, read together.

An event counts only once a commit by its actor added its line; the rest is ignored, damaged
or lost, and `verify` names each. Pure functions over the file's bytes and git's lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memstore.errors import LedgerCorrupt
from memstore.git import gitlog
from memstore.workflow.ledger.lines import LEDGER_FILE, Event, Line, parse_line, read_lines, short


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
        note = f"git history holds an unreadable ledger line ({e}): {short(text, 80)}"
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


def ignored_text(item: Ignored) -> str:
    """The ignored line or event named, with why it does not count."""
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


def lost_warning(view: View) -> str:
    """What an answer says when the working file lacks committed lines, and the repair."""
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


def unsafe_to_append(view: View) -> list[str]:
    """What makes an append unsafe: damaged lines, committed lines the file lost, and sound
    lines no commit has (the append would commit them as the appender's). `require_intact`
    refuses on these and `verify` reports each: one check for both."""
    problems = [*view.damage, *([_lost(view)] if view.lost else [])]
    problems += [
        f"line {item.line} ({item.event.status} {item.event.action} {item.event.target} by "
        f"{item.event.actor}) is not committed to git, and the next append would commit it as "
        f"the appender's: commit it yourself (`git commit -- {view.name}`) or remove it"
        for item in view.ignored
        if not item.committed
    ]
    return problems


def require_intact(view: View) -> None:
    """Refuse to append to a ledger that `unsafe_to_append` finds fault with.

    Raises:
        LedgerCorrupt: naming the first problem; nothing has been written.
    """
    problems = unsafe_to_append(view)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise LedgerCorrupt(
            f"refusing to append to a damaged ledger: {problems[0]}{more}; nothing was written "
            "— run `memstore ledger verify` and repair the ledger from git first"
        )


def verify(view: View, merge_attribute: str | None) -> Verification:
    """Check every line's hash, every link, and that the file holds every line git committed;
    its problems include everything an append refuses on (`unsafe_to_append`)."""
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
    # The damage and the lost lines are named above, one by one; the rest is added here.
    summary = _lost(view) if view.lost else None
    problems += [p for p in unsafe_to_append(view) if p not in problems and p != summary]
    problems += [ignored_text(item) for item in view.ignored if item.committed]
    warnings = list(view.history_notes)
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
