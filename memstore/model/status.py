"""The status state machine: draft → confirmed → deprecated, with no self-approval."""

from __future__ import annotations

from enum import StrEnum

from memstore.errors import InvalidTransition, SelfApproval
from memstore.model.identity import same_identity
from memstore.model.memory import Memory, content_hash, evolve


class Status(StrEnum):
    DRAFT = "draft"
    CONFIRMED = "confirmed"
    DEPRECATED = "deprecated"


MOVES: dict[Status, tuple[Status, ...]] = {
    Status.DRAFT: (Status.CONFIRMED, Status.DEPRECATED),
    Status.CONFIRMED: (Status.DEPRECATED,),
    Status.DEPRECATED: (Status.DRAFT,),
}
"""The allowed moves; `deprecated → draft` is a restore."""

_UNVERIFIED: dict[str, None] = {"verified_by": None, "verified_at": None, "verified_reason": None}
"""A new confirmation, a restore or a content change ends the last verification."""

_UNPROPOSED: dict[str, None] = {
    "deprecation_proposed_by": None,
    "deprecation_proposed_at": None,
    "deprecation_proposed_reason": None,
    "deprecation_proposed_successor": None,
}
"""A restore ends a proposed deprecation along with the deprecation."""

VERBS = {Status.CONFIRMED: "confirm", Status.DEPRECATED: "deprecate", Status.DRAFT: "restore"}


def check_move(memory: Memory, to: Status | str) -> Status:
    """Return the target status if the state machine allows `memory` to move there.

    Raises:
        InvalidTransition: naming the current status and the moves allowed from it.
    """
    allowed_values = [s.value for s in Status]
    if str(to) not in allowed_values:
        raise InvalidTransition(
            f"unknown status {str(to)!r}; statuses are: {', '.join(allowed_values)}"
        )
    target = Status(str(to))
    if memory.status not in allowed_values:
        raise InvalidTransition(
            f"'{memory.name}' has unknown status {memory.status!r}; fix the file "
            f"(statuses are: {', '.join(allowed_values)})"
        )
    current = Status(memory.status)
    allowed = MOVES[current]
    if target not in allowed:
        raise InvalidTransition(
            f"cannot move '{memory.name}' from {current} to {target}; from {current} it can go "
            f"to: {', '.join(allowed)}"
        )
    return target


def transition(
    memory: Memory,
    to: Status | str,
    *,
    actor: str,
    reason: str,
    at: str,
    superseded_by: str | None = None,
) -> Memory:
    """Return `memory` moved to status `to` with the trail (who, when, why) in its front matter.

    Raises:
        InvalidTransition: for a move the table does not allow or an empty reason.
        SelfApproval: when `actor` owns the memory and tries to confirm it.
    """
    target = check_move(memory, to)
    reason = reason.strip()
    if not reason or "\n" in reason:
        raise InvalidTransition(
            f"to {VERBS[target]} '{memory.name}' give a one-line reason (what you checked, or why)"
        )
    if target is Status.CONFIRMED:
        if same_identity(actor, memory.owner):
            raise SelfApproval(
                f"cannot confirm '{memory.name}': you ({actor}) wrote it, and nobody confirms "
                f"their own memory; any identity other than {memory.owner} (another agent or a "
                f"human) can confirm it"
            )
        return evolve(
            memory,
            status=target.value,
            updated=at,
            confirmed_by=actor,
            confirmed_at=at,
            confirmed_reason=reason,
            confirmed_hash=content_hash(memory),
            **_UNVERIFIED,
        )
    if target is Status.DEPRECATED:
        if superseded_by == memory.name:
            raise InvalidTransition(f"'{memory.name}' cannot be superseded by itself")
        return evolve(
            memory,
            status=target.value,
            updated=at,
            deprecated_by=actor,
            deprecated_at=at,
            deprecated_reason=reason,
            superseded_by=superseded_by,
        )
    # Restore: back to draft, so someone other than the owner must confirm it again.
    return evolve(
        memory,
        status=target.value,
        updated=at,
        confirmed_by=None,
        confirmed_at=None,
        confirmed_reason=None,
        confirmed_hash=None,
        **_UNVERIFIED,
        deprecated_by=None,
        deprecated_at=None,
        deprecated_reason=None,
        superseded_by=None,
        **_UNPROPOSED,
        restored_by=actor,
        restored_at=at,
        restored_reason=reason,
    )


def propose_deprecation(
    memory: Memory, *, actor: str, reason: str, at: str, successor: str | None = None
) -> Memory:
    """Return `memory` with a proposal to deprecate it by `actor` recorded in its trail: its
    status stays (see `storage.binding` for who may agree).

    Raises:
        InvalidTransition: for a memory that cannot be deprecated, or an empty reason.
    """
    check_move(memory, Status.DEPRECATED)
    reason = reason.strip()
    if not reason or "\n" in reason:
        raise InvalidTransition(
            f"to propose deprecating '{memory.name}' give a one-line reason (why it is wrong)"
        )
    if successor == memory.name:
        raise InvalidTransition(f"'{memory.name}' cannot be superseded by itself")
    return evolve(
        memory,
        updated=at,
        deprecation_proposed_by=actor,
        deprecation_proposed_at=at,
        deprecation_proposed_reason=reason,
        deprecation_proposed_successor=successor,
    )


def unconfirm(memory: Memory, *, at: str) -> Memory:
    """Return a confirmed memory sent back to draft because its content changed."""
    if memory.status != Status.CONFIRMED:
        return evolve(memory, updated=at)
    return evolve(
        memory,
        status=Status.DRAFT.value,
        updated=at,
        confirmed_by=None,
        confirmed_at=None,
        confirmed_reason=None,
        confirmed_hash=None,
        **_UNVERIFIED,
    )


def verify(memory: Memory, *, actor: str, owner: str, reason: str, at: str) -> Memory:
    """Return a confirmed `memory` with a fresh verification by `actor` (still true, checked
    now): its content and confirmation stay as they are.

    Raises:
        InvalidTransition: when it is not confirmed, or without a one-line reason.
        SelfApproval: when `actor` is its owner (who committed its creation).
    """
    if memory.status != Status.CONFIRMED:
        raise InvalidTransition(
            f"only a confirmed memory can be verified; '{memory.name}' is {memory.status}: "
            "confirm it instead"
        )
    reason = reason.strip()
    if not reason or "\n" in reason:
        raise InvalidTransition(
            f"to verify '{memory.name}' give a one-line reason (what you checked)"
        )
    if same_identity(actor, owner) or same_identity(actor, memory.owner):
        raise SelfApproval(
            f"cannot verify '{memory.name}': you ({actor}) created it, and nobody verifies "
            f"their own memory; any identity other than {owner} can verify it"
        )
    return evolve(memory, verified_by=actor, verified_at=at, verified_reason=reason)
