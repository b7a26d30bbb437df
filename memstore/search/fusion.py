"""Reciprocal rank fusion (RRF): each ranker puts the memories it finds in order, and `fuse`
combines the lists, with a one-line explanation of each fused score (pure; no index here).

A ranker's scores mean nothing to another ranker (BM25 of the words, BM25 of the feedback
words, later an embedding's cosine), their ranks do: `fuse` gives each memory
`weight * k / (k + rank)` summed over the lists it is in (Cormack, Clarke and Büttcher, SIGIR
2009, with k = 60), so a first place in one list of weight 1 is worth about 1. A new ranker
joins by producing a `Ranked` list; nothing else changes.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

RRF_K = 60
"""The k of reciprocal rank fusion: how flat the reward for a better rank is."""


@dataclass(frozen=True, slots=True)
class Ranked(Generic[K]):
    """One ranker's answer to one query: keys (memories) best first with its own scores."""

    ranker: str
    """Its name, shown by explain (`bm25`, `feedback`)."""
    weight: float
    """Its say in the fusion: a first place is worth about `weight`."""
    entries: tuple[tuple[K, float], ...]
    """(key, score), best first; a key appears once."""


@dataclass(frozen=True, slots=True)
class Part:
    """What one ranker added to a fused score."""

    ranker: str
    rank: int
    """1 for its first place; equal scores share a rank."""
    score: float
    """The ranker's own score."""
    share: float
    """`weight * k / (k + rank)`."""


@dataclass(frozen=True, slots=True)
class Fused(Generic[K]):
    """A key with its fused score and each ranker's part of it, in the order the lists came."""

    key: K
    score: float
    parts: tuple[Part, ...]


def fuse(
    lists: Sequence[Ranked[K]],
    k: int = RRF_K,
    *,
    parts: bool = True,
    limit: int | None = None,
) -> list[Fused[K]]:
    """Every key of `lists` by fused score, best first. Keys with equal scores in a list share
    its better rank (1, 2, 2, 4). Deterministic: equal fused scores keep the order the keys
    were first seen in (the first list's order, then the next list's). Without `parts` (no
    explain to show them) each `Fused.parts` is empty, which saves building a hundred. With
    `limit`, only the best `limit` keys and any tied with the last of them."""
    scores: dict[K, float] = {}
    shares: dict[K, list[tuple[str, int, float, float]]] = {}
    for ranked in lists:
        rank, last, name, weight = 0, None, ranked.ranker, ranked.weight
        for place, (key, score) in enumerate(ranked.entries, 1):
            if score != last:  # equal scores share the better rank: no order among them
                rank, last = place, score
            share = weight * k / (k + rank)
            before = scores.get(key)
            scores[key] = share if before is None else before + share
            if parts:
                shares.setdefault(key, []).append((name, rank, score, share))
    rounded = {key: round(score, 4) for key, score in scores.items()}
    # A stable sort of the keys in the order first seen: equal fused scores keep that order.
    order = sorted(rounded, key=lambda key: -rounded[key])
    if limit is not None and 0 < limit < len(order):
        last = rounded[order[limit - 1]]
        order = [key for key in order if rounded[key] >= last]
    if not parts:
        return [Fused(key, rounded[key], ()) for key in order]
    return [Fused(key, rounded[key], tuple(Part(*part) for part in shares[key])) for key in order]


def explain(fused: Fused[K]) -> str:
    """One line: how the rankers' places made the fused score."""
    terms = " + ".join(f"{p.ranker} #{p.rank} ({p.share:.3f})" for p in fused.parts)
    return f"fused {fused.score:.3f} = {terms}"
