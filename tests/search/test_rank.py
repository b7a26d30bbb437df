"""Pseudo-relevance feedback's choice of words (pure)."""

from __future__ import annotations

import pytest

from memstore.search.rank import feedback_terms


def test_feedback_terms_come_from_the_best_matches_weighted_by_score_and_rarity() -> None:
    top = [
        (2.0, {"hpa": 1.0, "flap": 2.0, "pod": 1.0}),
        (1.0, {"hpa": 1.0, "flap": 1.0, "team": 2.0}),
    ]
    rare = {"flap": 3.0, "pod": 2.0, "team": 0.1}
    terms = feedback_terms(top, lambda t: rare.get(t, 1.0), exclude={"hpa"}, count=2)
    assert [t for t, _ in terms] == ["flap", "pod"]
    assert sum(w for _, w in terms) == pytest.approx(1.0)
    assert feedback_terms([], lambda t: 1.0, count=3) == []


def test_feedback_terms_with_an_idf_bound_give_the_same_answer_with_fewer_lookups() -> None:
    import random

    rng = random.Random(5)
    words = [f"w{i}" for i in range(60)]
    idfs = {w: rng.uniform(1.0, 5.0) for w in words}
    top = [
        (rng.uniform(1, 9), {w: float(rng.randint(1, 4)) for w in rng.sample(words, 25)})
        for _ in range(3)
    ]
    asked: list[str] = []

    def idf(term: str) -> float:
        asked.append(term)
        return idfs[term]

    every = feedback_terms(top, idf, count=10)
    lookups = len(asked)
    asked.clear()
    assert feedback_terms(top, idf, count=10, idf_max=5.0) == every
    assert len(asked) < lookups
