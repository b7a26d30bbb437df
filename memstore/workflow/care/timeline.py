"""A store's knowledge timeline, read from git: each memory's creation, edits, confirmations,
deprecations, supersessions, restores, renames, retypes and removal, oldest first, with who
made the commit and why (the reason in the status trail, else the commit's subject)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memstore.git import gitlog
from memstore.model import when
from memstore.model.fields import check_name
from memstore.model.memory import Memory, content_hash, renamed
from memstore.model.status import Status
from memstore.storage import trust

if TYPE_CHECKING:
    from memstore.storage.store import Store

KINDS = (
    "created",
    "edited",
    "confirmed",
    "deprecated",
    "superseded",
    "restored",
    "renamed",
    "retyped",
    "removed",
)
_FIELDS = ("description", "body", "tags", "links", "extra")


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened to one memory, in one commit."""

    at: str
    """When it was committed (UTC)."""
    commit: str
    who: str
    """The commit's author."""
    kind: str
    """One of KINDS."""
    name: str
    type: str
    why: str
    """The reason its trail records (confirm, deprecate, restore), else the commit's subject."""
    detail: str = ""
    """What changed (fields, a successor, a former name or type), or why the history does not
    back a confirmation."""
    former: str | None = None
    """For a rename, the name it had before."""
    tags: tuple[str, ...] = ()
    """Its tags then."""


def timeline(
    store: Store,
    name: str | None = None,
    *,
    tag: str | None = None,
    type: str | None = None,
    since: str | None = None,
) -> list[Event]:
    """What happened to the store's memories, oldest first: all of them, or memory `name`
    (under each name it had), or those with `tag`, or of `type`; only from `since` on (`24h`,
    `7d`, a date from its start, a UTC time) when given.

    Raises:
        InvalidName: for a `name` that is not a slug.
        InvalidQuery: for a `since` that names no time.
        GitError: when git cannot read the history.
    """
    if name is not None:
        check_name(name)
    start = when.since_stamp(since)
    prefix = store.trust.prefix
    commits = gitlog.store_commits(store.repo, store.root)
    found = gitlog.prefetch(store.repo, commits, lambda path: _is_memory(prefix, path))
    parsed = {blob: trust.parse_bytes(data) for blob, data in found.items()}
    events: list[Event] = []
    trust.replay(
        trust.Trust(),
        store.repo,
        prefix,
        commits,
        store.trust.signers,
        parsed,
        each=lambda commit, verdicts: events.extend(_events(commit, prefix, parsed, verdicts)),
    )
    if name is not None:
        names = {name}
        for event in reversed(events):
            if event.kind == "renamed" and event.name in names and event.former:
                names.add(event.former)
        events = [e for e in events if e.name in names]
    if type is not None:
        events = [e for e in events if e.type == type]
    if tag is not None:
        events = [e for e in events if tag in e.tags]
    if start is not None:
        events = [e for e in events if e.at >= start]
    return events


def _is_memory(prefix: str, path: str) -> bool:
    if not path.startswith(prefix):
        return False
    folder, _, file = path[len(prefix) :].partition("/")
    return bool(folder) and not folder.startswith(".") and file.endswith(".md") and "/" not in file


def _events(
    commit: gitlog.StoreCommit,
    prefix: str,
    parsed: dict[str, Memory | None],
    verdicts: trust.Trust,
) -> list[Event]:
    """The events of one commit (`verdicts`: the history replayed up to and with it)."""
    at = when.stamp(datetime.fromtimestamp(commit.time, UTC))
    subject = _why(commit.message)
    found: list[Event] = []

    def add(
        kind: str, memory: Memory, why: str, detail: str = "", former: str | None = None
    ) -> None:
        found.append(
            Event(
                at,
                commit.sha,
                commit.author,
                kind,
                memory.name,
                memory.type,
                why,
                detail,
                former,
                memory.tags,
            )
        )

    changed: list[tuple[str, Memory | None, Memory | None]] = []
    for change in commit.changes:
        if len(commit.parents) > 1 and change.after in change.before:
            continue  # a merge taking one side's version: that side's commit told it
        if _is_memory(prefix, change.path):
            before = next((parsed.get(b) for b in change.before if b is not None), None)
            after = parsed.get(change.after) if change.after is not None else None
            changed.append((change.path, before, after))
    gone = [(path, before) for path, before, after in changed if after is None and before]
    paired: set[str] = set()
    for path, before, after in changed:
        if after is None:
            continue
        if before is not None:
            for kind, why, detail in _moves(before, after, subject, verdicts, path):
                add(kind, after, why, detail)
            continue
        match = next(
            (
                (p, old)
                for p, old in gone
                if p not in paired
                and (
                    (old.name == after.name and old.type != after.type)
                    or content_hash(renamed(old, {old.name: after.name})) == content_hash(after)
                )
            ),
            None,
        )
        if match is None:
            add("created", after, after.description)
        elif match[1].name != after.name:
            paired.add(match[0])
            add("renamed", after, subject, f"from {match[1].name}", former=match[1].name)
        else:
            paired.add(match[0])
            add("retyped", after, subject, f"from {match[1].type}")
    for path, before in gone:
        if path not in paired:
            add("removed", before, subject)
    return found


def _why(message: str) -> str:
    """A commit's reason: its subject without memstore's `memory: ` prefix, or, when the
    subject was cut (`…`), the whole detail its body repeats."""
    subject, _, body = message.partition("\n")
    if subject.endswith("…") and body.strip():
        return body.strip().splitlines()[0]
    return subject.removeprefix("memory: ")


def _moves(
    before: Memory, after: Memory, subject: str, verdicts: trust.Trust, path: str
) -> list[tuple[str, str, str]]:
    """(kind, why, detail) for what one commit did to a memory that existed before it."""
    found: list[tuple[str, str, str]] = []
    fields = [f for f in _FIELDS if getattr(before, f) != getattr(after, f)]
    back = before.status == Status.CONFIRMED and after.status == Status.DRAFT
    if fields or (back and not after.restored_by):
        note = " (back to draft)" if back else ""
        found.append(("edited", subject, ", ".join(fields) + note))
    new_trail = (after.confirmed_by, after.confirmed_at) != (
        before.confirmed_by,
        before.confirmed_at,
    )
    if after.status == Status.CONFIRMED and new_trail:
        verdict = verdicts.verdict(path, verdicts.blobs.get(path))
        detail = "" if verdict.ok else f"the history does not back it: {verdict.problem}"
        found.append(("confirmed", after.confirmed_reason or subject, detail))
    if after.status == Status.DEPRECATED and before.status != Status.DEPRECATED:
        if after.superseded_by:
            found.append(
                ("superseded", after.deprecated_reason or subject, f"by {after.superseded_by}")
            )
        else:
            found.append(("deprecated", after.deprecated_reason or subject, ""))
    if before.status == Status.DEPRECATED and after.status == Status.DRAFT:
        found.append(("restored", after.restored_reason or subject, ""))
    return found
