"""Reciprocal rank fusion and its explanation (pure functions)."""

from __future__ import annotations

import pytest

from memstore.search.fusion import RRF_K, Ranked, explain, fuse


def test_a_key_high_in_two_lists_beats_the_first_of_one() -> None:
    words = Ranked("bm25", 1.0, (("a", 9.0), ("b", 5.0), ("c", 4.0)))
    feedback = Ranked("feedback", 1.0, (("b", 3.0), ("c", 2.0)))
    fused = fuse([words, feedback])
    assert [f.key for f in fused] == ["b", "c", "a"]
    assert fused[0].score == pytest.approx(RRF_K / (RRF_K + 2) + RRF_K / (RRF_K + 1), abs=1e-4)
    assert explain(fused[0]) == "fused 1.951 = bm25 #2 (0.968) + feedback #1 (0.984)"


def test_equal_scores_share_a_rank_and_fused_ties_keep_the_order_first_seen() -> None:
    lists = [Ranked("bm25", 1.0, (("x", 2.0), ("y", 1.0), ("z", 1.0), ("w", 0.5)))]
    fused = fuse(lists)
    assert [(f.key, f.parts[0].rank) for f in fused] == [("x", 1), ("y", 2), ("z", 2), ("w", 4)]
    assert fused[1].score == fused[2].score
    assert fuse(lists) == fused  # deterministic
    swapped = fuse([Ranked("one", 1.0, (("p", 1.0),)), Ranked("two", 1.0, (("q", 1.0),))])
    assert [f.key for f in swapped] == ["p", "q"]


def test_a_limit_keeps_the_best_and_every_key_tied_with_the_last() -> None:
    words = Ranked("bm25", 1.0, (("a", 5.0), ("b", 4.0), ("c", 4.0), ("d", 3.0), ("e", 1.0)))
    feedback = Ranked("feedback", 0.5, (("d", 2.0), ("e", 2.0), ("a", 1.0)))
    every = fuse([words, feedback], parts=False)
    for limit in range(1, len(every) + 1):
        last = every[limit - 1].score
        assert fuse([words, feedback], parts=False, limit=limit) == [
            f for f in every if f.score >= last
        ]
    assert [f.key for f in fuse([words], limit=2)] == ["a", "b", "c"]  # c ties with b
    assert fuse([words, feedback], limit=10) == fuse([words, feedback])


def test_a_list_weighs_by_its_weight() -> None:
    fused = fuse([Ranked("strong", 2.0, (("a", 1.0),)), Ranked("weak", 0.5, (("b", 1.0),))])
    assert [f.key for f in fused] == ["a", "b"]
    assert fused[0].score == pytest.approx(4 * fused[1].score, abs=1e-3)
