"""The state machine: the table of moves, the trail, and no self-approval."""

from __future__ import annotations

import pytest

from memstore.errors import InvalidTransition, SelfApproval
from memstore.model.memory import Memory
from memstore.model.status import MOVES, Status, transition, unconfirm

AT = "2026-11-30T10:00:00Z"


def memory(status: str = "draft", owner: str = "alice") -> Memory:
    return Memory(
        name="n",
        description="d",
        type="fact",
        status=status,
        owner=owner,
        created=AT,
        updated=AT,
    )


ALL_MOVES = [(a, b) for a in Status for b in Status]


@pytest.mark.parametrize(("source", "target"), ALL_MOVES)
def test_every_move_is_allowed_exactly_when_the_table_says(source: Status, target: Status) -> None:
    m = memory(source.value)
    if target in MOVES[source]:
        moved = transition(m, target, actor="bob", reason="why", at=AT)
        assert moved.status == target.value
        assert moved.updated == AT
    else:
        with pytest.raises(InvalidTransition, match=f"cannot move 'n' from {source} to {target}"):
            transition(m, target, actor="bob", reason="why", at=AT)


def test_the_table_is_the_one_the_product_promises() -> None:
    assert MOVES == {
        Status.DRAFT: (Status.CONFIRMED, Status.DEPRECATED),
        Status.CONFIRMED: (Status.DEPRECATED,),
        Status.DEPRECATED: (Status.DRAFT,),
    }


def test_owner_cannot_confirm_and_the_refusal_says_who_can() -> None:
    with pytest.raises(SelfApproval) as e:
        transition(memory(), "confirmed", actor="alice", reason="looks right", at=AT)
    assert "nobody confirms their own memory" in str(e.value)
    assert "any identity other than alice" in str(e.value)


def test_confirm_records_who_when_and_why() -> None:
    moved = transition(memory(), "confirmed", actor="bob", reason="checked the code", at=AT)
    assert (moved.confirmed_by, moved.confirmed_at, moved.confirmed_reason) == (
        "bob",
        AT,
        "checked the code",
    )


def test_deprecate_records_reason_and_successor() -> None:
    moved = transition(
        memory("confirmed"), "deprecated", actor="carol", reason="stale", at=AT, superseded_by="m"
    )
    assert moved.deprecated_by == "carol"
    assert moved.deprecated_reason == "stale"
    assert moved.superseded_by == "m"


@pytest.mark.parametrize("reason", ["", "   ", "two\nlines"])
def test_a_move_needs_a_one_line_reason(reason: str) -> None:
    with pytest.raises(InvalidTransition, match="one-line reason"):
        transition(memory(), "deprecated", actor="bob", reason=reason, at=AT)


def test_unknown_target_status_is_refused_with_the_known_ones() -> None:
    with pytest.raises(InvalidTransition, match="statuses are: draft, confirmed, deprecated"):
        transition(memory(), "approved", actor="bob", reason="x", at=AT)


def test_restore_returns_to_draft_and_clears_the_old_confirmation() -> None:
    confirmed = transition(memory(), "confirmed", actor="bob", reason="ok", at=AT)
    deprecated = transition(confirmed, "deprecated", actor="bob", reason="stale", at=AT)
    restored = transition(deprecated, "draft", actor="carol", reason="true again", at=AT)
    assert restored.status == "draft"
    assert restored.confirmed_by is None and restored.deprecated_by is None
    assert restored.restored_by == "carol"


def test_content_change_unconfirms_a_confirmed_memory() -> None:
    confirmed = transition(memory(), "confirmed", actor="bob", reason="ok", at=AT)
    assert unconfirm(confirmed, at=AT).status == "draft"
    assert unconfirm(confirmed, at=AT).confirmed_by is None
    assert unconfirm(memory("deprecated"), at=AT).status == "deprecated"
