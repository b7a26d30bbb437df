"""Merging duplicates in one step: one memory kept, what the others add folded into it, the
others deprecated as superseded by it, and the links that pointed at them pointed at it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memstore.errors import InvalidMemory, InvalidTransition
from memstore.git import grep
from memstore.model.fields import check_body, check_files, check_line, check_name, check_tags
from memstore.model.memory import (
    RULE_TYPES,
    Memory,
    content_hash,
    evolve,
    links_in_body,
    now,
    rename_links,
)
from memstore.model.status import Status, transition, unconfirm
from memstore.storage import transaction
from memstore.storage.files import memory_files
from memstore.storage.store import Store, subject

MERGE_MAX = 20
"""At most this many memories folded into one in a call (a cluster larger is no duplicate)."""


@dataclass(frozen=True, slots=True)
class Merged:
    """What a merge did: the kept memory as written, the ones deprecated into it, and the
    memories whose references were pointed at it."""

    kept: Memory
    deprecated: tuple[Memory, ...]
    redirected: tuple[str, ...]
    """Memories whose `links` (or, for those not confirmed, `[[name]]` references) now name
    the kept memory instead of a merged one."""
    left: tuple[str, ...]
    """Confirmed memories whose body still says `[[merged]]`: rewriting it would end their
    confirmation (the reference still leads there through `superseded_by`)."""
    back_to_draft: bool
    """The kept memory was confirmed and its content changed (files or body folded in)."""


def merge(
    store: Store,
    keep: str,
    others: Sequence[str],
    reason: str | None = None,
    *,
    body: bool = False,
    allow_secret: bool = False,
) -> Merged:
    """Keep memory `keep` and fold `others` into it, in one commit as the acting identity:
    their tags, links and files join it (and, with `body`, a section per body it lacks);
    each is deprecated, superseded by `keep`, with `reason`; every other memory's links to
    them name `keep` instead. The kept memory goes back to draft when its content changed.

    Raises:
        InvalidName, MemoryNotFound, InvalidTransition (a deprecated memory in the merge, the
        same name twice), InvalidMemory (the folded text too long), RuleBinds (a rule that
        binds the acting agent would be lifted or rewritten), Conflict (uncommitted edits),
        SecretFound, NoIdentity, StoreLocked, GitError.
    """
    check_name(keep, "memory to keep")
    names = [check_name(n, "memory to merge") for n in others]
    if not names:
        raise InvalidTransition(f"name the memories to merge into '{keep}'")
    if len(names) > MERGE_MAX:
        raise InvalidTransition(f"merge at most {MERGE_MAX} memories into one at a time")
    if keep in names or len(set(names)) != len(names):
        raise InvalidTransition("each memory is named once, and the kept one is not merged")
    why = (reason or f"merged into {keep}").strip()
    check_line(why, "reason")
    if not why:
        raise InvalidTransition("give a one-line reason for the merge")
    store.refuse_secrets({"reason": why}, allow_secret)
    actor = store.require_identity()
    with transaction.locked(store):
        kept = store.read(keep, raw=True)
        merged = [store.read(n, raw=True) for n in names]
        for v in (kept, *merged):
            if v.memory.status == Status.DEPRECATED:
                verb = "restore it first" if v is kept else "leave it out"
                raise InvalidTransition(f"'{v.memory.name}' is deprecated already; {verb}")
        transaction.refuse_uncommitted(store, [store.root / v.path for v in (kept, *merged)])
        for v in merged:
            store.refuse_lift(v, actor, "merge away")
        at = now()
        old = kept.memory
        new = _folded(old, [v.memory for v in merged], body)
        changed = content_hash(new) != content_hash(old)
        if changed:
            store.refuse_lift(kept, actor, "change the text of")
        new = unconfirm(new, at=at) if changed else evolve(new, updated=at)
        supersedes = tuple(dict.fromkeys((*new.supersedes, *names)))
        new = evolve(new, supersedes=supersedes)
        changes: list[tuple[Path, Memory]] = [(store.root / kept.path, new)]
        done: list[Memory] = []
        for v in merged:
            gone = transition(
                v.memory, Status.DEPRECATED, actor=actor, reason=why, at=at, superseded_by=keep
            )
            done.append(gone)
            changes.append((store.root / v.path, gone))
        redirected, left = _redirect(store, {kept.path, *(v.path for v in merged)}, names, keep, at)
        changes += redirected
        detail = f"{', '.join(names)} into {old.type}/{keep}"
        note = " (back to draft)" if new.status != old.status else ""
        listed = [f"Reason: {why}"]
        if redirected:
            listed.append("Links redirected in: " + ", ".join(m.name for _, m in redirected))
        store.commit_memories(
            changes, subject("memory: merge", detail + note) + "\n\n" + "\n".join(listed), actor
        )
    return Merged(
        new,
        tuple(done),
        tuple(m.name for _, m in redirected),
        tuple(left),
        new.status != old.status,
    )


def _folded(kept: Memory, others: list[Memory], body: bool) -> Memory:
    """`kept` with the tags, links and files of `others` added (in order, once each), and with
    `body` a `## From \\`name\\`` section for each body it does not hold already.

    Raises:
        InvalidMemory: when the result has too many tags, files or too long a body.
    """
    names = {kept.name, *(m.name for m in others)}
    tags = list(dict.fromkeys((*kept.tags, *(t for m in others for t in m.tags))))
    links = [
        n
        for n in dict.fromkeys((*kept.links, *(n for m in others for n in m.links)))
        if n not in names
    ]
    files = _files(kept, others)
    extra = dict(kept.extra)
    if files:
        extra["files"] = files
    text = kept.body.strip()
    if body:
        for m in others:
            section = rename_links(m.body.strip(), {m.name: kept.name})
            if section and " ".join(section.split()) not in " ".join(text.split()):
                text = f"{text}\n\n## From `{m.name}`\n\n{section}".strip()
    try:
        return evolve(
            kept,
            tags=check_tags(tags),
            links=tuple(links),
            body=check_body(text),
            extra=extra,
        )
    except InvalidMemory as e:
        raise InvalidMemory(f"the merged memory would be invalid: {e}") from e


def _files(kept: Memory, others: Iterable[Memory]) -> list[str]:
    found: list[str] = []
    for m in (kept, *others):
        value = m.extra.get("files")
        items: list[object] = value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]
        found += [str(f) for f in items]
    if not found:
        return []
    return list(check_files(list(dict.fromkeys(found))))


def _redirect(
    store: Store, skip: set[str], names: list[str], keep: str, at: str
) -> tuple[list[tuple[Path, Memory]], list[str]]:
    """The other memories whose references to `names` now name `keep`: `links` always (not
    content), `[[name]]` in the body only when it is not confirmed (a confirmed body stays as
    confirmed). Returns the changes and the confirmed memories whose body was left."""
    to = dict.fromkeys(names, keep)
    changes: list[tuple[Path, Memory]] = []
    left: list[str] = []
    for path in _mentioning(store, names):
        if store.rel(path) in skip:
            continue
        try:
            other = store.read_file(path, raw=True)[0]
        except (InvalidMemory, OSError):
            continue  # lint reports an unreadable file; a merge is no reason to fail on it
        links = tuple(
            dict.fromkeys(n for n in (to.get(n, n) for n in other.links) if n != other.name)
        )
        refs = set(links_in_body(other.body)) & set(names)
        new = other
        if links != other.links:
            new = evolve(new, links=links)
        if refs and other.status == Status.CONFIRMED:
            left.append(other.name)
        elif refs:
            new = evolve(new, body=rename_links(other.body, to))
        if new != other:
            changes.append((path, evolve(new, updated=at)))
    return changes, sorted(left)


def _mentioning(store: Store, names: list[str]) -> list[Path]:
    """The memory files that may refer to `names`: those `git grep` finds holding one (a
    superset: each is read and checked), else, when git cannot say, every memory file."""
    found = grep.files_naming(store.root, names)
    if found is None:
        return [e.path for e in memory_files(store.root)]
    rels = {p.relative_to(store.root).as_posix() for p in found}
    folders = {rel.partition("/")[0] for rel in rels if "/" in rel}
    return [e.path for e in memory_files(store.root, folders) if e.rel in rels]


def suggest(memories: Iterable[Memory]) -> list[str]:
    """The order to merge a duplicate cluster in, the one to keep first: a confirmed one, then
    a rule (it acts already), then the longest body, then the oldest."""
    return [
        m.name
        for m in sorted(
            memories,
            key=lambda m: (
                m.status != Status.CONFIRMED,
                m.type not in RULE_TYPES,
                -len(m.body),
                m.created,
                m.name,
            ),
        )
    ]


def command(cluster: list[str], by_name: dict[str, Memory]) -> str:
    """The `memstore merge` command for a duplicate cluster (names), the one to keep first."""
    found = [by_name[n] for n in cluster if n in by_name]
    order = suggest(found) if len(found) == len(cluster) else cluster
    return "memstore merge " + " ".join(order)
