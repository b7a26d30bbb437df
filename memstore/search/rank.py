"""Ranking one query on one searcher: each ranker's list (the words' BM25F, the words
pseudo-relevance feedback adds, semantic recall's nearest by meaning), each memory's status and
type boost, the lists fused (`fusion.fuse`), and the memories a link or two away (hop decay).
The settings the benchmarks tune (`FEEDBACK_*`, `DENSE_*`, `STATIC_*`, `HOP_DECAY`) live here."""

# Whoosh ships no type information; the unknown-type reports would flag every call into it.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingTypeStubs=false
# pyright: reportUnknownParameterType=false, reportMissingParameterType=false
# pyright: reportUnknownLambdaType=false

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

from memstore.search import fusion
from memstore.search.analysis import QUERY_STOP_WORDS, index_terms
from memstore.search.postings import Cache, holds
from memstore.search.query import Hit, Query
from memstore.search.schema import DOC, DOC_PREFIX, STATUS_BOOST, TYPE_BOOST
from memstore.search.stubs import without_unused_modules

with without_unused_modules():
    from whoosh.query import Every, Or, Term
    from whoosh.searching import Searcher

HOP_DECAY = 0.7
"""A linked memory's share of the score of the memory it was reached from, per hop. Fused
scores are flat (with feedback a first place is worth about 2, a tenth about 1.7), so a
neighbour of the best match lands among the top ten, not below every match; 0.9 pushed direct
matches out once feedback was on (chosen on LoCoMo's tuning part: 0.9, 0.8, 0.7, 0.6, 0.5)."""
FEEDBACK_DOCS = 3
"""Pseudo-relevance feedback reads the words of this many of the best matches."""
FEEDBACK_TERMS = 10
"""It adds this many of their words to the query (0 turns feedback off)."""
FEEDBACK_ORIGINAL = 0.5
"""The query's own words' share of the feedback query's weight (RM3's lambda)."""
FEEDBACK_WEIGHT = 1.0
"""The feedback list's weight in the fusion, the words' own list having 1."""


class Dense(Protocol):
    """Semantic recall's ranker (see `embedding.py`): called with `count`, the memories
    (store-relative paths) nearest the query by meaning, with their cosines, best first."""

    @property
    def static(self) -> bool:
        """Whether the model is a static one (model2vec) rather than a sentence encoder: its
        cosines run on another scale (its vectors are centred) and it finds less, so the fusion
        trusts it on the `STATIC_*` settings instead of the `DENSE_*` ones."""
        ...

    def __call__(self, count: int, /) -> Sequence[tuple[str, float]]: ...


DENSE_WEIGHT = 0.0
"""The dense list's weight when the words found enough to go by (their best match holds
every word of the query, `DENSE_COVERED`): none, so such a query is not even embedded; with
all-MiniLM-L6-v2, re-ordering the words' matches at 0.25 moved LoCoMo's tuning Recall@10 by
nothing and Hit@5 by +0.003, for a transformer pass on every search."""
DENSE_WEIGHT_WEAK = 0.75
"""Its weight when the words found little (the word lists weigh 1 each). Chosen by
bench/tune_semantic.py on the five development banks of reworded questions
(tests/data/reworded_dev.yaml, reworded_devA.yaml ... reworded_devD.yaml) and LoCoMo's tuning
conversations, each taken apart: the highest mean Hit@5 over the banks such that on each of
conv-26, conv-30 and conv-41 R@10 and Hit@5 are at least words alone's and MRR@10 at most
0.01 below. 0.5-0.75 meet it with the values here (mean Hit@5 0.832); 1 costs conv-41's
MRR@10 0.012 (0.545 against words' 0.557), 1.5 (the value before) 0.02-0.08: for a
conversation's short turns the meaning's nearest is often a wrong one."""
DENSE_WEAK_BM25 = math.inf
"""At or above this best BM25F score the words are taken to have found the answer, whatever
`DENSE_COVERED` says. It is off (infinite): only coverage decides, since a long question in
other words matches many common words and easily scores high though no memory holds its
words. At 24 it kept 7 of LoCoMo's 383 tuning questions and one of the banks' 124 from the
meaning, for LoCoMo's Hit@5 0.692 against 0.695 (40 and off: the same figures)."""
DENSE_MIN_COSINE = 0.5
"""When the words found enough and `DENSE_WEIGHT` is above 0, the dense list re-orders the
memories they found from this cosine up (and brings in none)."""
DENSE_WEAK_COSINE = 0.1
"""When the words found little, the dense list ranks every memory from this cosine up, those
the words found as well as the others: for a question asked in other words, the words' list
is mostly memories that share its common words, so the one it means is often among them,
low. Those used to be re-ordered only from `DENSE_MIN_COSINE` (0.5), which left the
meaning's nearest memory out of its own list whenever the words had it anywhere in their top
30: the development banks' Hit@5 stayed at 0.96 / 0.86 / 0.68 where the dense list alone finds
1.00 / 0.86 / 0.94. With one floor, 0.05-0.15 give 0.96 / 0.86 / 0.94 (with the other values
here); 0.2 loses a question or two on each bank (0.92 / 0.84 / 0.92), 0.35 more (0.75 / 0.82 /
0.82). LoCoMo's tuning figures hardly move (R@10 0.715-0.719, Hit@5 0.695)."""
DENSE_COVERED = True
"""A query every word of which the words' best match holds is not weak: it is asked in that
memory's own words, so it is not embedded (a short question scores low by BM25F however well
it matches). This is the whole test of weakness (`DENSE_WEAK_BM25` is off). On LoCoMo's tuning
conversations 282 of 383 questions are embedded, on the five development banks 210 of 214, of
bench/semantic.py's generated queries at 10,000 memories 61 of 301 (as with the cut at 24)."""
DENSE_LEAD_MARGIN = 0.04
"""When the dense list's first memory is nearer the query than its second by at least this
cosine (both boosted), it is taken as the answer the meaning found and leads the fusion (a
`lead` list of that one memory, weighing as much as the word lists together): reciprocal
rank fusion alone counts lists, so a memory both word lists hold would outrank it. At 0
(the value before) the meaning's nearest always led, and put a wrong turn first on LoCoMo's
tuning conversations (conv-41's MRR@10 0.476 against words' 0.557). With the other values
here, 0.03-0.05 meet the criterion (`DENSE_WEIGHT_WEAK`) at mean Hit@5 0.832 (0.04: the
middle); 0.02 costs conv-41's MRR@10 0.016; off, the banks lose 0.03-0.07. A lead only from a
cosine of 0.35, or one weighing half the word lists, lost the banks 0.01-0.04 and gained
LoCoMo nothing."""
DENSE_STRANGE_SHARE = 0.5
"""A weak question whose words' best match holds less than this share of its content words
(or that the words match nowhere) is asked in other words altogether: nothing the words
found is much like it, so its dense list weighs `DENSE_WEIGHT_STRANGE` instead of
`DENSE_WEIGHT_WEAK` and the word lists step aside (`DENSE_STRANGE_WORDS`). A question to a
conversation usually shares most of its words with the turn it means (names, places), a
reworded one few. No more questions are embedded: the share is read off the words' best
match, after the `DENSE_COVERED` gate. With the word lists stepping aside, 0.34-0.6 keep
every LoCoMo tuning conversation, 0.45-0.6 at the development banks' mean Hit@5 0.898
(0.34-0.4: 0.894); 0.55 and 0.6 cost conv-26 0.03-0.04 of R@10. At 0.5 (the middle) LoCoMo
does best too. Other signals for "in other words" were tried on the same lists, alone or
with this one, and none did better: the meaning's nearest memory's cosine (below 0.4: 0.894,
from 0.45 conv-41's MRR@10 falls), the share of the question's words that memory holds, the
share of the question's idf the words' best match holds, whether the words rank the
meaning's nearest in their top 5 or 30, its cosine's lead over the next four, the words' own
lead: each either took the banks no higher than 0.898 or cost a conversation."""
DENSE_WEIGHT_STRANGE = 4.0
"""The dense list's weight for a question asked in other words altogether
(`DENSE_STRANGE_SHARE`): the meaning, not the words, orders its answers. Only its ratio to
`DENSE_STRANGE_WORDS` matters there: 2, 4 and 8 give the banks' mean Hit@5 0.902, 0.898
and 0.898 (2 is `DENSE_STRANGE_WORDS` 0.06 at 4, an isolated peak)."""
DENSE_STRANGE_WORDS = 0.03
"""For a question asked in other words altogether (`DENSE_STRANGE_SHARE`), the word lists'
weights (and so the `lead` list's) are multiplied by this: they only order what the meaning
ties or leaves out. Reciprocal rank fusion is flat (a first place is worth 0.98 of its
weight, a tenth 0.86), so at 1 (the value before) a memory both word lists hold a few places
down outranked the meaning's first choice even at `DENSE_WEIGHT_STRANGE` 4: the banks' Hit@5
stayed at 1.00 / 0.86 / 0.90 / 0.73 / 0.67 (mean 0.832) where the dense list alone finds
1.00 / 0.86 / 0.94 / 0.82 / 0.87. Here: 1.00 / 0.86 / 0.94 / 0.89 / 0.80 (mean 0.898), as
at 0-0.05, with every LoCoMo tuning conversation kept (0.03: the middle); 0.06 gives 0.902,
an isolated peak (0.07-0.08: 0.893), 0.1 0.880, 0.25 0.863. With it, `DENSE_WEIGHT_WEAK`
0.5-1 and `DENSE_LEAD_MARGIN` 0.03-0.05 all keep every conversation at 0.898: they were left
as they were."""
STATIC_WEIGHT_WEAK = 1.25
"""A static model's `DENSE_WEIGHT_WEAK`. The five `STATIC_*` settings are those chosen for
every model before the encoder's were retuned (bench/tune_semantic.py --model
bench/.models/minilm-static): on LoCoMo's tuning conversations R@10 / Hit@5 0.678 / 0.655
(words alone 0.671 / 0.648) and the development banks' mean Hit@5 0.771 (words 0.716). The
encoder's settings gave a static model 0.627 / 0.556 on LoCoMo (below words alone) for a
mean Hit@5 of 0.838, and nothing on their grid (weight 0.75-1.25, one floor 0.1-0.4, lead
margin 0, 0.05 or off) kept LoCoMo at words' level with the banks above 0.771."""
STATIC_WEAK_BM25 = 24.0
"""A static model's `DENSE_WEAK_BM25`: a question whose words score this high is not weak."""
STATIC_FOUND_COSINE = 0.5
"""For a static model, a memory the words found joins a weak question's dense list only from
this cosine up (the encoder's: `DENSE_WEAK_COSINE`)."""
STATIC_NEW_COSINE = 0.15
"""For a static model, a memory the words did not find joins from this cosine up."""
STATIC_LEAD_MARGIN = 0.02
"""A static model's `DENSE_LEAD_MARGIN`."""
DENSE_WORDS_SCALE = 0.0
"""For a weak query, the word lists' weight is multiplied by (best BM25F /
`DENSE_WEAK_BM25`) to this power: the less the words found, the less say they have (0 leaves
it at 1; with `DENSE_WEAK_BM25` off, any other value silences the words). Tried at 0.5, 1 and
2 with a cut at 24: every figure fell (development bank Hit@5 0.96 -> 0.88-0.83, LoCoMo
tuning Hit@5 0.684 -> 0.62-0.56), so it is off."""


def _nlargest(scores: dict[int, float], n: int) -> list[tuple[float, int]]:
    """The `n` best (score, document), as Whoosh ranks them: a higher score first, then the
    lower document number."""
    if len(scores) > n > 0:
        # The n-th best score first, over bare floats; then only the few at or above it are
        # ordered as pairs (ties at the cut broken by document number as before).
        cut = heapq.nlargest(n, scores.values())[-1]
        best = [(-score, docnum) for docnum, score in scores.items() if score >= cut]
        best.sort()
    else:
        best = sorted((-score, docnum) for docnum, score in scores.items())
    return [(-neg, docnum) for neg, docnum in best[:n]]


def _or_terms(q: Any) -> list[str] | None:
    """The index terms of a query that is only words OR-ed over `text`, else None."""
    if isinstance(q, Term):
        parts = [q]
    elif isinstance(q, Or) and q.boost == 1.0 and not q.minmatch and q.scale is None:
        parts = q.subqueries
    else:
        return None
    words: list[str] = []
    for part in parts:
        if not isinstance(part, Term) or part.fieldname != "text" or part.boost != 1.0:
            return None
        words.append(str(part.text))
    return words


def rank(
    searcher: Searcher,
    cache: Cache,
    text: Any,
    query: Query,
    *,
    allowed: AbstractSet[int] | None,
    mask: AbstractSet[int] | None,
    today: str,
    words: Sequence[str],
    dense: Dense | None = None,
) -> list[Hit]:
    """The best `query.size` hits for the parsed text `text` among the documents in `allowed`
    and not in `mask` (None: no such filter): the rankers' lists fused, then, with `graph`, the
    memories linked to them. `words`, the index terms of a query of plain words, turn feedback
    on; `dense` adds semantic recall's list."""
    ranked = Ranker(
        searcher,
        cache,
        filter=allowed,
        mask=mask,
        today=today,
        explain=query.explain,
        dense=dense,
    )
    # With graph, every candidate's name counts: a memory already found by its text is
    # not offered again as a neighbour.
    hits = ranked.text_hits(text, query.size, every_candidate=query.graph, words=words)
    if query.graph:
        hits = ranked.expand(hits, query.size)
    return hits[: query.size]


class Ranker:
    """One query's candidates and boosts, on one searcher."""

    def __init__(
        self,
        searcher: Searcher,
        cache: Cache,
        *,
        filter: Any,
        mask: Any,
        today: str,
        explain: bool,
        dense: Dense | None = None,
    ) -> None:
        self.searcher = searcher
        self.dense = dense
        self.cache = cache
        self.filter = filter
        self.mask = mask
        self.today = today
        self.explain = explain
        self._links: dict[str, str] = {}
        """Each seen memory's outgoing links, by path."""
        self._scores: dict[int, float] = {}
        """The words' BM25F score of every document holding one (plain words)."""
        self._terms: list[str] = []
        """The query's index terms (plain words)."""

    def _hit(
        self,
        fields: dict[str, Any],
        score: float,
        lines: list[str],
        via: str | None,
        *,
        boosted: bool = False,
        tail: Sequence[str] = (),
    ) -> Hit:
        """A result from its stored fields. `score` is multiplied by the memory's boosts
        unless `boosted` says the ranked lists it was fused from already were; explain shows
        the boosts either way, then `tail`."""
        lines = list(lines)
        status = str(fields.get("status", ""))
        kind = str(fields.get("type", ""))
        factor = 1.0
        for label, value, boost in (
            ("status", status, STATUS_BOOST.get(status, 1.0)),
            ("type", kind, TYPE_BOOST.get(kind, 1.0)),
        ):
            if boost != 1.0:
                factor *= boost
                lines.append(f"boost {label} {value} x{boost:g}")
        expires = str(fields.get("expires", ""))
        expired = bool(expires) and expires < self.today
        if expired:
            lines.append(f"expired on {expires}")
        lines.extend(tail)
        tags = str(fields.get("tags", ""))
        self._links[str(fields.get("path", ""))] = str(fields.get("links", ""))
        if fields.get("kind") == DOC:
            path = str(fields.get("source", "")).removeprefix(DOC_PREFIX)
            return Hit(
                name=str(fields["name"]),
                type=DOC,
                status=DOC,
                description=str(fields.get("description", "")),
                score=round(score, 4),
                owner="",
                updated=str(fields.get("updated", "")),
                path=path,
                explain=tuple(lines) if self.explain else (),
                kind=DOC,
            )
        return Hit(
            name=str(fields["name"]),
            type=kind,
            status=status,
            description=str(fields.get("description", "")),
            score=score if boosted else round(score * factor, 4),
            owner=str(fields.get("owner", "")),
            updated=str(fields.get("updated", "")),
            tags=tuple(t for t in tags.split(",") if t),
            path=str(fields.get("path", "")),
            expired=expired,
            via=via,
            explain=tuple(lines) if self.explain else (),
        )

    def text_hits(
        self, q: Any, limit: int, every_candidate: bool = False, words: Sequence[str] = ()
    ) -> list[Hit]:
        """Matches of the parsed query `q`, best first: the ranked lists of the pipeline
        (`_lists`) fused (`fusion.fuse`). The top `limit` and any tied with the last, or
        with `every_candidate` all the candidates ranked. `words`, the index terms of a query
        of plain words, turn feedback on."""
        if q is None:
            return []
        if isinstance(q, Every):  # an empty query lists the newest first
            return self._newest(q, max(limit * 3, 30))
        lists, lines = self._lists(q, limit, words)
        # Ties with the last: names break them.
        fused = fusion.fuse(lists, parts=self.explain, limit=None if every_candidate else limit)
        hits: list[Hit] = []
        for f in fused:
            fields = self.cache.fields(f.key)
            tail: list[str] = []
            shown: list[str] = []
            if self.explain:
                tail = [fusion.explain(f)]
                shown = lines.get(f.key) or self._word_lines(f.key, fields)
            hits.append(self._hit(fields, f.score, shown, None, boosted=True, tail=tail))
        hits.sort(key=lambda h: (-h.score, h.name))
        return hits

    def _lists(
        self, q: Any, limit: int, words: Sequence[str]
    ) -> tuple[list[fusion.Ranked[int]], dict[int, list[str]]]:
        """The pipeline's ranked lists of documents for `q` and, with explain, each document's
        lines from the words' list: BM25F of the words (times each memory's status and type
        boost), then, for plain words, BM25F of the words feedback adds."""
        # Boosts can lift a result a few places: rank more candidates than asked for.
        wanted = max(limit * 3, 30)
        plain = _or_terms(q)
        lines: dict[int, list[str]] = {}
        if plain is None:
            scored = self._whoosh_scored(q, wanted, lines)
            candidates: dict[int, float] | None = None
        else:
            candidates = self._totals(plain)
            scored = _nlargest(candidates, wanted)
        boosts = self.cache.boosts(self.searcher)
        first = self._ranked("bm25", 1.0, scored, boosts)
        lists = [first]
        if words and FEEDBACK_TERMS and first.entries:
            if candidates is None:
                candidates = self._totals(list(words))
            more = self._feedback(first, words, candidates, wanted, boosts)
            if more is not None:
                lists.append(more)
        if self.dense is not None and plain is not None:
            weak = self._weak(first, plain)
            near = self._dense(self.dense, first, wanted, boosts, weak)
            if near and weak and DENSE_WORDS_SCALE > 0:
                best = first.entries[0][1] if first.entries else 0.0
                scale = min(1.0, best / DENSE_WEAK_BM25) ** DENSE_WORDS_SCALE
                lists = [fusion.Ranked(r.ranker, r.weight * scale, r.entries) for r in lists]
            if near and weak and DENSE_STRANGE_SHARE > 0 and not self.dense.static:
                if self._held(first, plain) < DENSE_STRANGE_SHARE:
                    lists = [
                        fusion.Ranked(r.ranker, r.weight * DENSE_STRANGE_WORDS, r.entries)
                        for r in lists
                    ]
                    near = [
                        fusion.Ranked(r.ranker, DENSE_WEIGHT_STRANGE, r.entries)
                        if r.ranker == "dense"
                        else r
                        for r in near
                    ]
            if near:
                if near[0].ranker == "lead":
                    near[0] = fusion.Ranked("lead", sum(r.weight for r in lists), near[0].entries)
                lists.extend(near)
        self._scores, self._terms = candidates or {}, plain or list(words)
        return lists, lines

    def _word_lines(self, docnum: int, fields: dict[str, Any]) -> list[str]:
        """Explain's first lines for a document the words matched: their BM25F score and
        which of them it holds, where."""
        terms = self._terms
        matched = sorted({w for w in terms if holds(self.cache.term(self.searcher, w)[0], docnum)})
        return [
            f"bm25 {self._scores.get(docnum, 0.0):.3f}",
            f"matched {' '.join(matched) or '-'} in {_fields_with(fields, matched)}",
        ]

    def _ranked(
        self,
        ranker: str,
        weight: float,
        scored: Iterable[tuple[float, int]],
        boosts: dict[int, float],
    ) -> fusion.Ranked[int]:
        """A ranker's list: its (score, document) pairs times each document's boost, best
        first (ties in document order: fusion gives tied scores the same rank)."""
        boosted = sorted(
            ((round(score * boosts.get(docnum, 1.0), 4), docnum) for score, docnum in scored),
            key=lambda b: (-b[0], b[1]),
        )
        return fusion.Ranked(ranker, weight, tuple((d, s) for s, d in boosted))

    def _feedback(
        self,
        first: fusion.Ranked[int],
        words: Sequence[str],
        candidates: dict[int, float],
        wanted: int,
        boosts: dict[int, float],
    ) -> fusion.Ranked[int] | None:
        """RM3-style pseudo-relevance feedback: the words the best matches share, added to the
        query's, re-rank the memories that hold any of the query's words (never others)."""
        top = [
            (score, self.cache.vector(docnum)) for docnum, score in first.entries[:FEEDBACK_DOCS]
        ]
        expansion = feedback_terms(
            top,
            lambda term: self.cache.idf(self.searcher, term),
            # The query's stop words as typed. A set of their stemmed forms used to join
            # them, but it held the analyzer's Token objects, which never equal a term: it
            # excluded nothing, and building it cost every process 3 ms.
            exclude={*words, *QUERY_STOP_WORDS},
            count=FEEDBACK_TERMS,
            # Whoosh's idf, log(N / (n + 1)) + 1, is largest for a term in one document.
            idf_max=math.log(max(self.searcher.doc_count_all(), 1) / 2) + 1,
        )
        if not expansion:
            return None
        # The query's words share FEEDBACK_ORIGINAL of the weight equally, so their part is
        # the words' own score scaled; only the added words' postings are read.
        share = FEEDBACK_ORIGINAL / len(set(words))
        total = {docnum: share * score for docnum, score in candidates.items()}
        get = total.get
        for term, weight in expansion:
            weight *= 1 - FEEDBACK_ORIGINAL
            ids, scores = self.cache.term(self.searcher, term)
            for docnum, score in zip(ids, scores, strict=True):
                found = get(docnum)
                if found is not None:
                    total[docnum] = found + weight * score
        ranked = self._ranked("feedback", FEEDBACK_WEIGHT, _nlargest(total, wanted), boosts)
        # The documents feedback read are taken as relevant (that is its premise): they keep
        # their places at its top, so the words' first match stays first, and feedback
        # orders what comes after them.
        read = first.entries[:FEEDBACK_DOCS]
        kept = {docnum for docnum, _ in read}
        rest = tuple(e for e in ranked.entries if e[0] not in kept)
        return fusion.Ranked(ranked.ranker, ranked.weight, (*read, *rest)[:wanted])

    def _held(self, first: fusion.Ranked[int], terms: Sequence[str]) -> float:
        """The share of the query's words that the words' best match holds (0 without one)."""
        if not first.entries or not terms:
            return 0.0
        top = first.entries[0][0]
        held = sum(holds(self.cache.term(self.searcher, t)[0], top) for t in terms)
        return held / len(terms)

    def _weak(self, first: fusion.Ranked[int], terms: Sequence[str]) -> bool:
        """Whether the words found little, the question then probably being asked in other
        words than the memories': (with `DENSE_COVERED`) their best match lacks some word of
        the query, and their best BM25F score is below `DENSE_WEAK_BM25` (by default no score
        is high enough: coverage alone decides)."""
        if not first.entries:
            return True
        strong = (
            STATIC_WEAK_BM25 if self.dense is not None and self.dense.static else DENSE_WEAK_BM25
        )
        if first.entries[0][1] >= strong:
            return False
        if not DENSE_COVERED:
            return True
        top = first.entries[0][0]
        return not all(holds(self.cache.term(self.searcher, t)[0], top) for t in terms)

    def _dense(
        self,
        dense: Dense,
        first: fusion.Ranked[int],
        wanted: int,
        boosts: dict[int, float],
        weak: bool,
    ) -> list[fusion.Ranked[int]]:
        """Semantic recall's lists: the memories nearest the query by meaning that pass the
        filter and mask, their cosines times each one's boost: every memory from
        `DENSE_WEAK_COSINE` when the words found little (`weak`), else only those the words
        found, from `DENSE_MIN_COSINE`. When the nearest stands clear of the next
        (`DENSE_LEAD_MARGIN`), a first list `lead` of that memory alone (its weight is set by
        the caller)."""
        if not weak and DENSE_WEIGHT <= 0:
            return []  # the words found enough: the query is not even embedded
        # The nearest among every memory: with a filter, many more, as most may not pass it.
        count = wanted * 4 if self.filter is None else wanted * 40
        allowed, hidden = self.filter, self.mask
        found = {docnum for docnum, _ in first.entries}
        # When the words found little (weak), the question is worded unlike the memories: the
        # meaning ranks every memory near enough, the words' as well (a static model: theirs
        # only when it is sure of them). Otherwise it may only re-order what the words found.
        if not weak:
            found_floor, new_floor, lead = DENSE_MIN_COSINE, math.inf, math.inf
        elif dense.static:
            found_floor, new_floor = STATIC_FOUND_COSINE, STATIC_NEW_COSINE
            lead = STATIC_LEAD_MARGIN
        else:
            found_floor = new_floor = DENSE_WEAK_COSINE
            lead = DENSE_LEAD_MARGIN
        floor = min(found_floor, new_floor)
        scored: list[tuple[float, int]] = []
        nearest: list[tuple[float, int]] = []  # the first two that pass filter and mask
        for path, cosine in dense(count):
            if cosine < floor and len(nearest) >= 2:
                break  # best first: the rest are further still
            docnum = self.cache.docnum(self.searcher, path)
            if docnum is None:
                continue
            if (allowed is not None and docnum not in allowed) or (
                hidden is not None and docnum in hidden
            ):
                continue
            if len(nearest) < 2:
                nearest.append((cosine * boosts.get(docnum, 1.0), docnum))
            if cosine < (found_floor if docnum in found else new_floor):
                continue
            scored.append((cosine, docnum))
            if len(scored) >= wanted:
                break
        if not scored:
            return []
        if not weak:
            weight = DENSE_WEIGHT
        else:
            weight = STATIC_WEIGHT_WEAK if dense.static else DENSE_WEIGHT_WEAK
        near = self._ranked("dense", weight, scored, boosts)
        if weak and nearest and near.entries[0][0] == nearest[0][1]:
            margin = nearest[0][0] - (nearest[1][0] if len(nearest) > 1 else 0.0)
            if margin >= lead:
                return [fusion.Ranked("lead", 0.0, near.entries[:1]), near]
        return [near]

    def _totals(self, words: list[str]) -> dict[int, float]:
        """Every document that holds any of the words and passes the filter and mask, with
        its BM25F score for them (the sum of each word's, as Whoosh adds them up)."""
        # The words' scores are added up here rather than by Whoosh's matchers, from the
        # per-word postings the cache keeps: for the plain words of nearly every query this
        # is several times faster, and gives the same scores.
        postings = sorted(
            (self.cache.term(self.searcher, w) for w in dict.fromkeys(words)),
            key=lambda p: -len(p[0]),
        )
        if not postings or not postings[0][0]:
            return {}
        allowed, hidden = self.filter, self.mask
        if allowed is not None and len(allowed) * len(postings) * 4 < sum(
            len(p[0]) for p in postings
        ):
            return _scored(allowed, hidden, postings)
        total = dict(zip(*postings[0], strict=True))
        for ids, scores in postings[1:]:
            get = total.get
            for docnum, score in zip(ids, scores, strict=True):
                total[docnum] = get(docnum, 0.0) + score
        if allowed is None and hidden is None:
            return total
        return {
            docnum: score
            for docnum, score in total.items()
            if (allowed is None or docnum in allowed) and (hidden is None or docnum not in hidden)
        }

    def _whoosh_scored(
        self, q: Any, wanted: int, lines: dict[int, list[str]]
    ) -> list[tuple[float, int]]:
        """The `wanted` best (BM25F score, document) for any other query (fields, phrases,
        wildcards, operators), by Whoosh; with explain, each one's lines go in `lines`."""
        results = self.searcher.search(
            q, limit=wanted, filter=self.filter, mask=self.mask, terms=self.explain
        )
        scored: list[tuple[float, int]] = []
        for r in results:
            score = 0.0 if r.score is None else float(r.score)
            scored.append((score, r.docnum))
            if self.explain:
                fields = self.cache.fields(r.docnum)
                terms = sorted(
                    {
                        t.decode("utf-8") if isinstance(t, bytes) else str(t)
                        for _, t in r.matched_terms()
                    }
                )
                lines[r.docnum] = [
                    f"bm25 {score:.3f}",
                    f"matched {' '.join(terms) or '-'} in {_fields_with(fields, terms)}",
                ]
        return scored

    def _newest(self, q: Any, wanted: int) -> list[Hit]:
        """Every memory that passes the filters, newest first (score 0)."""
        results = self.searcher.search(
            q, limit=wanted, filter=self.filter, mask=self.mask, sortedby="updated", reverse=True
        )
        return [self._hit(dict(r.fields()), 0.0, [], None) for r in results]

    def _by_names(self, names: Iterable[str]) -> list[dict[str, Any]]:
        return self._holding("name", names)

    def _linking_to(self, names: Iterable[str]) -> list[dict[str, Any]]:
        return self._holding("links", names)

    def _holding(self, field: str, values: Iterable[str]) -> list[dict[str, Any]]:
        """The stored fields of the memories whose `field` holds one of `values` and that
        pass the filter and mask, in document order."""
        reader = self.searcher.reader()
        found: set[int] = set()
        for value in set(values):
            if (field, value) in reader:
                found.update(reader.postings(field, value).all_ids())
        allowed, hidden = self.filter, self.mask
        return [
            self.cache.fields(docnum)
            for docnum in sorted(found)
            if (allowed is None or docnum in allowed) and (hidden is None or docnum not in hidden)
        ]

    def expand(self, hits: list[Hit], limit: int) -> list[Hit]:
        """Add memories 1-2 links away from the top text matches, at decaying scores."""
        found = {h.name: h for h in hits}
        frontier = hits[:limit]
        for hop in (1, 2):
            decay = HOP_DECAY  # per hop: a second hop gets its square
            sources = {h.name: h for h in frontier}
            outgoing: dict[str, list[str]] = {}
            for source in frontier:
                for target in self._links.get(source.path, "").split(","):
                    if target:
                        outgoing.setdefault(target, []).append(source.name)
            neighbours: dict[str, tuple[dict[str, Any], Hit]] = {}
            for fields in self._by_names(outgoing):
                for source_name in outgoing.get(str(fields["name"]), []):
                    _offer(neighbours, fields, sources[source_name])
            for fields in self._linking_to(sources):
                for target in str(fields.get("links", "")).split(","):
                    if target in sources:
                        _offer(neighbours, fields, sources[target])
            frontier = []
            for name, (fields, source) in sorted(neighbours.items()):
                if name in found:
                    continue
                score = source.score * decay
                lines = [f"linked from {source.name} (hop {hop}) x{decay:g} of {source.score:.3f}"]
                hit = self._hit(fields, score, lines, source.name)
                found[name] = hit
                frontier.append(hit)
            if not frontier:
                break
        return sorted(found.values(), key=lambda h: (-h.score, h.name))


def _scored(
    allowed: AbstractSet[int],
    hidden: AbstractSet[int] | None,
    postings: Sequence[tuple[Sequence[int], Sequence[float]]],
) -> dict[int, float]:
    """`Ranker._totals` for a narrow filter (a type, a tag, the expired memories): each
    allowed document looked up in each word's postings, rather than every posting read, and
    its scores added in the same order, to the same float."""
    total: dict[int, float] = {}
    for docnum in sorted(allowed):
        if hidden is not None and docnum in hidden:
            continue
        score, held = 0.0, False  # 0.0 + x is x: the first word's score, exactly
        for ids, scores in postings:
            i = bisect.bisect_left(ids, docnum)
            if i < len(ids) and ids[i] == docnum:
                score, held = score + scores[i], True
        if held:
            total[docnum] = score
    return total


def _fields_with(fields: dict[str, Any], terms: list[str]) -> str:
    """Which parts of a memory hold the matched `terms` (for explain).

    Read from its stored name, description and tags, analysed as the index does.
    """
    parts = {
        "name": str(fields.get("name", "")).replace("-", " "),
        "description": str(fields.get("description", "")),
        "tags": str(fields.get("tags", "")).replace(",", " "),
    }
    found: list[str] = []
    placed: set[str] = set()
    for label, value in parts.items():
        held = set(terms) & set(index_terms(value))
        if held:
            found.append(label)
            placed |= held
    if set(terms) - placed:  # only `text` holds the body, so that is where the rest are
        found.append("body")
    return ", ".join(found) or "-"


def _offer(
    neighbours: dict[str, tuple[dict[str, Any], Hit]], fields: dict[str, Any], source: Hit
) -> None:
    name = str(fields["name"])
    if name == source.name:
        return
    if name not in neighbours or neighbours[name][1].score < source.score:
        neighbours[name] = (fields, source)


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
