"""Ranking as a pipeline: each ranker puts the memories it finds in order, and reciprocal rank
fusion (RRF) combines the lists. Also the query side of the words: which ones a question adds
nothing with, and which words of the best matches feedback may add (pure; no index here).

A ranker's scores mean nothing to another ranker (BM25 of the words, BM25 of the feedback
words, later an embedding's cosine), their ranks do: `fuse` gives each memory
`weight * k / (k + rank)` summed over the lists it is in (Cormack, Clarke and Büttcher, SIGIR
2009, with k = 60), so a first place in one list of weight 1 is worth about 1. A new ranker
joins by producing a `Ranked` list; nothing else changes.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
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


# -- the query's words ------------------------------------------------------------------------

QUERY_STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each else ever few
    for from further get gets got had has have having he her here hers herself him himself his
    how i if in into is it its itself just let me might more most must my myself no nor not now
    of off on once only or other ought our ours ourselves out over own same shall she should so
    some such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what whatever when where whether which
    while who whom whose why will with would yet you your yours yourself yourselves
    """.split()
)
"""Words a query adds nothing with: question words, auxiliaries, pronouns and the commonest
function words (NLTK's English stop words with Whoosh's, less `may`, a month). Documents keep
them; only queries drop them (see `content_words`)."""

_WORD = re.compile(r"[^\W_]+")


def content_words(text: str) -> str:
    """`text` without its question and function words (case and other characters kept), or
    `text` itself when nothing else is left ("what did we do" still searches something)."""
    kept = [w for w in _WORD.finditer(text) if w.group(0).lower() not in QUERY_STOP_WORDS]
    if not kept:
        return text
    return " ".join(w.group(0) for w in kept)


def feedback_terms(
    top: Iterable[tuple[float, Mapping[str, float]]],
    idf: Callable[[str], float],
    *,
    exclude: Iterable[str] = (),
    count: int,
    idf_max: float | None = None,
) -> list[tuple[str, float]]:
    """RM3-style expansion terms from the best matches: each `(score, {term: frequency})`
    votes for its terms in proportion to its score and their share of its text, a term's vote
    times its `idf` ranks it. Returns the `count` best `(term, weight)`, weights summing to 1,
    best first (ties by term); `exclude` (the query's own terms, stop words) never comes back.
    With `idf_max` (no idf is larger) the idf of a term that cannot make the `count` best is
    never asked for: the same answer, for fewer look-ups."""
    skip = set(exclude)
    docs = [(score, vector) for score, vector in top if score > 0 and vector]
    total = sum(score for score, _ in docs)
    if not docs or total <= 0:
        return []
    votes: dict[str, float] = {}
    for score, vector in docs:
        length = sum(vector.values()) or 1.0
        for term, frequency in vector.items():
            if term not in skip:
                votes[term] = votes.get(term, 0.0) + (score / total) * (frequency / length)
    weighed: list[tuple[float, str]] = []
    floor: list[float] = []  # the `count` best weights so far, a min-heap
    for term, vote in sorted(votes.items(), key=lambda x: -x[1]):
        if idf_max is not None and len(floor) == count and vote * idf_max < floor[0]:
            break  # every term left has a smaller vote: none can reach the count-th weight
        weight = vote * idf(term)
        weighed.append((weight, term))
        heapq.heappush(floor, weight)
        if len(floor) > count:
            heapq.heappop(floor)
    ranked = sorted(weighed, key=lambda x: (-x[0], x[1]))
    best = [
        (term, weight) for weight, term in ranked[:count] if weight > 0 and math.isfinite(weight)
    ]
    norm = sum(weight for _, weight in best)
    return [(term, weight / norm) for term, weight in best] if norm > 0 else []
