"""Rules that bind the agents, and who may lift them: no agent removes, alone, a rule that
binds it.

A rule *binds the agents* (is protected here) when it is in force — a `correction` or
`warning`, not deprecated, whose history backs its status and owner — and either its owner is
one of the store's people (`humans:` in `memstore.yaml`), whatever its severity, or it is
confirmed with severity `p0` (it blocks every agent's `check`). Every identity not among the
people is an agent, the rule's owner and its confirmer included.

- A person may change, deprecate or remove such a rule.
- An agent's deprecation is a *proposal* (`deprecation_proposed_by` and its trail); the rule
  keeps its force until a person agrees, or, for a rule whose owner is not a person, another
  identity than the proposer agrees (by deprecating it in turn). The proposer agreeing to its
  own proposal does not count.
- An agent cannot change such a rule's content (its text, type, severity, `applies_when`,
  `expires`, any field outside the trail), forget it or move it out of the rule folders:
  the store refuses, and a commit that does it anyway (a hand edit) is not in effect.
  For a confirmed p0 rule whose owner is not a person, a new confirmation of the changed
  version by another identity than the one who changed it puts it in effect.

`advance` is the replay's half (`trust` calls it for every commit): it keeps, for each
protected rule, the version in force (`Force`): the version at HEAD, or the last good one when
a later change was not in effect. `in_force` is the read half, for `check` and the briefing:
the memories to take the rules from, with each protected rule's version in force — also when
the file was changed, moved or removed by hand and not committed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from memstore.limits import DEFAULT_SEVERITY, SEVERITIES
from memstore.model.identity import same_identity
from memstore.model.memory import RULE_TYPES, Memory, content_hash, renamed
from memstore.model.status import Status


class Commit(Protocol):
    """The commit being judged (`trust.By`)."""

    @property
    def commit(self) -> str: ...

    @property
    def author(self) -> str: ...

    @property
    def committer(self) -> str: ...

    def names(self, identity: str | None) -> bool: ...


@dataclass(frozen=True, slots=True)
class Force:
    """The version of a protected rule file that is in force, and what waits on it."""

    blob: str
    """The version in force (the one at HEAD, unless `held_by`)."""
    owner: str
    """Who created it (its history's owner)."""
    proposer: str | None = None
    """Who proposed its deprecation, in a commit by that identity (None: no proposal)."""
    held_by: str | None = None
    """Who committed a later change that is not in effect (None: HEAD's version is in force)."""
    commit: str = ""
    """That change's commit."""
    problem: str | None = None
    """Why that change is not in effect, for `lint`."""


def is_person(identity: str | None, humans: Iterable[str]) -> bool:
    """Whether `identity` is one of the store's people."""
    return bool(identity) and any(same_identity(identity, h) for h in humans)


def severity(memory: Memory) -> str:
    """A rule's severity, as `check` reads it (a bad value is the type's default)."""
    value = memory.extra.get("severity", DEFAULT_SEVERITY.get(memory.type, "p3"))
    text = value.strip().lower() if isinstance(value, str) else ""
    return text if text in SEVERITIES else DEFAULT_SEVERITY.get(memory.type, "p3")


def protected(memory: Memory | None, owner: str, humans: Iterable[str], ok: bool = True) -> bool:
    """Whether version `memory` (whose history says `owner` created it, and backs it when `ok`)
    is a rule that binds the agents (see the module's docstring)."""
    if memory is None or not ok or memory.type not in RULE_TYPES:
        return False
    if memory.status == Status.CONFIRMED:
        return is_person(owner, humans) or severity(memory) == "p0"
    return memory.status == Status.DRAFT and is_person(owner, humans)


def who_agrees(force: Force, humans: Iterable[str]) -> str:
    """Who can complete a proposed deprecation, in words."""
    people = ", ".join(humans)
    if is_person(force.owner, humans):
        return f"a person ({people})"
    return f"a person ({people}) or another identity" if people else "another identity"


# -- the replay's half -------------------------------------------------------------------------


def _proposal(memory: Memory | None) -> tuple[str | None, str | None]:
    if memory is None:
        return None, None
    return memory.deprecation_proposed_by, memory.deprecation_proposed_at


def _confirmation(memory: Memory | None) -> tuple[str | None, str | None]:
    if memory is None:
        return None, None
    return memory.confirmed_by, memory.confirmed_at


def _same_say(previous: Memory | None, new: Memory | None) -> bool:
    """Whether `new` says what `previous` said: the same content, status and confirmation."""
    if previous is None or new is None:
        return False
    return (
        content_hash(previous) == content_hash(new)
        and previous.status == new.status
        and _confirmation(previous) == _confirmation(new)
    )


def _judge(
    force: Force,
    base: Memory | None,
    previous: Memory | None,
    new: Memory | None,
    ok: bool,
    blob: str,
    by: Commit,
    humans: tuple[str, ...],
) -> Force | None:
    """The force after commit `by` changed a protected rule (in force: `base`, as `force`
    says; the version before the commit: `previous`) to `new`, which the replay backs when
    `ok`; None when it is lifted."""
    now_protected = protected(new, force.owner, humans, ok)
    if any(by.names(h) for h in humans):  # a person's change is in effect
        if force.held_by is not None and _same_say(previous, new):
            return force  # a person's pin or tag does not accept an agent's change unseen
        return Force(blob, force.owner, force.proposer) if now_protected else None
    proposer = force.proposer
    if new is not None and new.deprecation_proposed_by and _proposal(new) != _proposal(previous):
        if not by.names(new.deprecation_proposed_by):
            return _held(
                force,
                by,
                f"forged deprecation proposal: deprecation_proposed_by says "
                f"'{new.deprecation_proposed_by}' but {by.author} committed it",
                False,
            )
        proposer = new.deprecation_proposed_by
    person_rule = is_person(force.owner, humans)
    same_content = new is not None and base is not None and content_hash(new) == content_hash(base)
    if new is not None and new.status == Status.DEPRECATED and same_content:
        who = new.deprecated_by
        if (
            not person_rule
            and proposer is not None
            and by.names(who)
            and not same_identity(who, proposer)
        ):
            return None  # another identity agreed to the proposal
        if proposer is not None and same_identity(who, proposer):
            why = f"{proposer} agreed to its own proposal"
        elif person_rule:
            why = "only a person lifts a person's rule"
        else:
            why = "no other identity's proposal backs it"
        return _held(force, by, f"deprecation by {by.author} is not in effect: {why}", False)
    if now_protected and same_content:  # a trail-only change: force kept
        return Force(blob, force.owner, proposer)
    if (
        ok
        and not person_rule
        and new is not None
        and previous is not None
        and new.status == Status.CONFIRMED
        and _confirmation(new) != _confirmation(previous)
        and content_hash(new) == content_hash(previous)
        and force.held_by is not None
        and not same_identity(new.confirmed_by, force.held_by)
    ):
        # Another identity confirmed the change: it is in effect (and binds if it still is p0).
        return Force(blob, force.owner, proposer) if now_protected else None
    if new is None:
        what = "removed or broke it"
    elif new.type not in RULE_TYPES:
        what = f"made it a {new.type}"
    elif new.status == Status.DEPRECATED:
        what = "deprecated it"
    elif not same_content:
        what = "changed its content"
    else:
        what = "took away what backs its status"
    return _held(replace(force, proposer=proposer), by, f"{by.author} {what}", not same_content)


def _held(force: Force, by: Commit, what: str, changed: bool = True) -> Force:
    """`force` kept against commit `by`'s change; `held_by` names who made the version now in
    the file (a change that leaves the content as it was keeps the name already there)."""
    if force.held_by is not None and not changed:
        by_whom, commit = force.held_by, force.commit
    else:
        by_whom, commit = by.author, by.commit
    problem = (
        f"a rule that binds the agents, changed by an agent alone in commit {by.commit[:10]} "
        f"({what}): that change is not in effect, the version before it stays in force; a "
        "person must make or agree to the change"
    )
    return replace(force, held_by=by_whom, commit=commit, problem=problem)


def advance(
    binding: dict[str, Force],
    changes: Iterable[tuple[str, str | None, str | None]],
    moved: dict[str, str],
    by: Commit,
    read: Callable[[str | None], Memory | None],
    owner_of: Callable[[str], str | None],
    ok_of: Callable[[str, str], bool],
    humans: tuple[str, ...],
    renames: dict[str, str] | None = None,
) -> None:
    """Move `binding` (path → force, for the protected rule files) past one commit.

    `changes` are the commit's (path, blob before, blob after) for memory files; `moved` maps
    a new path to the old path it continues (a rename, or a move to another folder);
    `owner_of(path)` and `ok_of(path, blob)` give the replay's owner and verdict after it;
    `renames` (old name → new) the memories renamed in the commit, whose references it may
    have rewritten: no change to a rule's content.
    """

    def as_renamed(memory: Memory | None) -> Memory | None:
        return renamed(memory, renames) if memory is not None and renames else memory

    changes = list(changes)
    gone = {path for path, _, after in changes if after is None}
    taken: set[str] = set()
    for path, before, after in changes:
        if after is None:
            continue
        source = path if path in binding else moved.get(path)
        force = binding.get(source) if source is not None else None
        new = read(after)
        owner = owner_of(path) or ""
        ok = ok_of(path, after)
        if force is None or source is None:
            if protected(new, owner, humans, ok):
                binding[path] = Force(after, owner)
            else:
                binding.pop(path, None)
            continue
        previous = read(before) if source == path else read(_first(changes, source))
        result = _judge(
            force,
            as_renamed(read(force.blob)),
            as_renamed(previous),
            new,
            ok and same_identity(owner, force.owner),
            after,
            by,
            humans,
        )
        if source != path:
            taken.add(source)
            if result is not None and result.held_by is not None:
                binding[source] = result  # the rule stays in force where it was
                binding.pop(path, None)
                continue
            binding.pop(source, None)
        if result is None:
            binding.pop(path, None)
        else:
            binding[path] = result
    for path in gone - taken:
        force = binding.get(path)
        if force is None:
            continue
        if any(by.names(h) for h in humans):
            del binding[path]
        else:
            binding[path] = _held(force, by, f"{by.author} removed it")


def _first(changes: list[tuple[str, str | None, str | None]], path: str) -> str | None:
    return next((before for p, before, _ in changes if p == path), None)


# -- the read half ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Held:
    """A protected rule's version in force where the file says otherwise."""

    memory: Memory
    why: str


def in_force(
    binding: dict[str, Force],
    prefix: str,
    root: Path,
    pool: list[Memory],
    read_file: Callable[[Path], bytes | None],
    read_blob: Callable[[str], Memory | None],
    blob_of: Callable[[bytes], str],
) -> list[Memory | Held]:
    """`pool` (rule memories read from the files) with each protected rule's version in force
    in place of a file that differs from it (a change not in effect, or an uncommitted hand
    edit), and added where its file was removed or moved away. Reads one file per protected
    rule, nothing else."""
    out: list[Memory | Held] = []
    replaced: set[tuple[str, str]] = set()
    for path, force in binding.items():
        if not path.startswith(prefix):
            continue
        rel = path[len(prefix) :]
        if force.held_by is None:
            data = read_file(root / rel)
            if data is not None and blob_of(data) == force.blob:
                continue  # the file is HEAD's version, and it is in force
        memory = read_blob(force.blob)
        if memory is None:
            continue
        folder, _, file = rel.rpartition("/")
        replaced.add((folder, file.removesuffix(".md")))
        if force.held_by is not None:
            why = (
                f"in force as it was before {force.held_by}'s change in commit "
                f"{force.commit[:10]}, which is not in effect (a rule that binds the agents)"
            )
        else:
            why = "in force as committed: the file's uncommitted change is not in effect"
        out.append(Held(replace(memory, owner=force.owner), why))
    out += [m for m in pool if (m.type, m.name) not in replaced]
    return out
