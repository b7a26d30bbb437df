"""What a search asks and gets: `Query`, the one value every face passes (checked in one
place), its text parsed into Whoosh's terms, `Hit`, and fitting hits into a model's budget of
LLM tokens (`estimate_hit_tokens`, `fit_tokens`: a rough count, not the analyzer's terms)."""

# Whoosh ships no type information; the unknown-type reports would flag every call into it.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingTypeStubs=false
# pyright: reportUnknownParameterType=false, reportMissingParameterType=false
# pyright: reportUnknownLambdaType=false

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any

from memstore.errors import InvalidQuery
from memstore.limits import BUDGETS, estimate_tokens
from memstore.model.status import Status
from memstore.search.analysis import content_words, index_terms
from memstore.search.schema import POSITIONS, index_schema
from memstore.search.stubs import without_unused_modules

with without_unused_modules():
    from whoosh.query import Every, NullQuery, Or, Phrase, Term


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: enough to judge it (status, type, description) without reading it."""

    name: str
    type: str
    status: str
    description: str
    score: float
    owner: str
    updated: str
    tags: tuple[str, ...] = ()
    path: str = ""
    expired: bool = False
    """Its `expires` date has passed (only returned when asked to include deprecated)."""
    via: str | None = None
    """For a result found through links (`graph`), the memory it was reached from."""
    explain: tuple[str, ...] = ()
    """With `explain`: the BM25 score, each boost applied and the matched terms, a line each."""
    kind: str = "memory"
    """`memory`, or `doc` for a section of a project document: then `path` is the document
    (relative to the repository's top), `name` is `path#fragment`, `description` the heading,
    and `type` and `status` are `doc` — read, never reviewed knowledge."""
    note: str | None = None
    """A warning for the reader, e.g. "may be out of date: src/x.py changed in <sha> since it
    was confirmed" (set by `search`, not by the index)."""


QUERY_MAX = 2000
"""The longest query text, in characters: parsing and scoring cost grows with every word."""

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(T[0-9:]+Z?)?")


@dataclass(frozen=True, slots=True)
class Query:
    """One search: the words, the filters and the shape of the answer, checked by `check`."""

    text: str = ""
    """Words to find, in Whoosh syntax; empty lists the newest first."""
    type: str | None = None
    status: str | None = None
    tags: tuple[str, ...] = ()
    """Every one of these tags (AND)."""
    owner: str | None = None
    since: str | None = None
    """Updated on or after this `YYYY-MM-DD` date."""
    limit: int | None = None
    """At most this many results; None takes the budget's size."""
    budget: str | None = None
    """`tiny`, `normal` or `deep`: 3, 10 or 20 results when `limit` is None."""
    max_tokens: int | None = None
    """Keep only the leading whole results that fit in about this many LLM tokens."""
    include_deprecated: bool = False
    """Also deprecated and expired memories (always, with `status="deprecated"`)."""
    explain: bool = False
    graph: bool = False
    """Add memories 1-2 links away from the matches."""
    feedback: bool = True
    """Re-rank with pseudo-relevance feedback (plain words only): better recall of memories
    worded unlike the query, for about a third more of the search's own cost (docs/search.md)."""
    index_view: bool = False
    """Results are shown as index lines: `max_tokens` counts those."""
    path: str | None = None
    """Memories about this repository path (their `files`) rank first (see `search`)."""
    scopes: tuple[str, ...] = ()
    """Only memories for one of these scopes, or for no scope in particular (all, when empty)."""

    @property
    def size(self) -> int:
        """How many results at most: `limit`, else the budget's size."""
        return self.limit if self.limit is not None else BUDGETS[self.budget or "normal"]

    def check(self, types: Iterable[str]) -> None:
        """Refuse a query no store can answer; `types` are the store's memory types.

        Raises:
            InvalidQuery: for an unknown type, status or budget, a bad date, a limit or
                LLM token cap below 1, or a text longer than QUERY_MAX.
        """
        types = list(types)
        statuses = [s.value for s in Status]
        if self.type is not None and self.type not in types:
            raise InvalidQuery(f"unknown type {self.type!r}; types are: {', '.join(types)}")
        if self.status is not None and self.status not in statuses:
            raise InvalidQuery(
                f"unknown status {self.status!r}; statuses are: {', '.join(statuses)}"
            )
        if self.budget is not None and self.budget not in BUDGETS:
            raise InvalidQuery(f"unknown budget {self.budget!r}; budgets are: {', '.join(BUDGETS)}")
        if self.limit is not None and self.limit < 1:
            raise InvalidQuery(f"limit must be at least 1, got {self.limit}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise InvalidQuery(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.since is not None and not _DATE.fullmatch(self.since):
            raise InvalidQuery(f"invalid date {self.since!r}: use YYYY-MM-DD (e.g. 2026-11-30)")
        if len(self.text) > QUERY_MAX:
            raise InvalidQuery(
                f"the query is {len(self.text)} characters long; the limit is {QUERY_MAX}: "
                "send the key words"
            )


def since_read(query: Query) -> Query:
    """`query` with its `since` (`24h`, `7d`, a date, a time) as the UTC time it names.

    Raises:
        InvalidQuery: for a `since` that names no time.
    """
    if query.since is None:
        return query
    from memstore.model import when

    return replace(query, since=when.since_stamp(query.since))


def index_line(hit: Hit) -> str:
    """The index view of a hit: name, type, status, date and score on one line, no text."""
    flags = " expired" if hit.expired else ""
    return f"{hit.name} {hit.type} {hit.status}{flags} {hit.updated[:10]} {hit.score:.2f}"


def estimate_hit_tokens(hit: Hit, index_view: bool = False) -> int:
    """About how many LLM tokens a hit costs a model: the estimate of its JSON (or index line)."""
    return estimate_tokens(
        index_line(hit) if index_view else json.dumps(asdict(hit), ensure_ascii=False)
    )


def fit_tokens(hits: list[Hit], max_tokens: int, index_view: bool = False) -> list[Hit]:
    """The leading hits whose estimated LLM tokens add up to at most `max_tokens` (whole hits)."""
    kept: list[Hit] = []
    used = 0
    for hit in hits:
        used += estimate_hit_tokens(hit, index_view)
        if used > max_tokens:
            break
        kept.append(hit)
    return kept


@functools.cache
def _parser() -> Any:
    # Imported on first use: plain words, nearly every query, never need the parser, and a
    # one-shot `memstore search` need not pay for loading it.
    from whoosh.qparser import OrGroup, QueryParser

    group: Any = OrGroup
    return QueryParser("text", index_schema(), group=group)


def _clean_query(text: str) -> str:
    # A question's trailing '?' would otherwise be a one-character wildcard.
    return re.sub(r"\?(?=\s|$)", " ", text).strip()


_SYNTAX = re.compile(
    r"""(?:^|(?<=\W))'|["():*?\[\]{}^~\\]|\b(?:AND|OR|NOT|ANDNOT|ANDMAYBE|REQUIRE|TO)\b"""
)
"""What the Whoosh parser reads as syntax (a quote inside a word, as in "Caroline's", is not);
a query without any is plain words."""


def parse_query(text: str) -> Any:
    """`text` as a Whoosh query over the `text` field: `Every()` for an empty text or `*`,
    None when no searchable word is left (only stop words, say).

    Raises:
        InvalidQuery: naming what Whoosh cannot run in `text`.
    """
    cleaned = _clean_query(text)
    if not cleaned or cleaned == "*":
        return Every()
    if not _SYNTAX.search(cleaned):
        # Plain words, the usual query: the terms the parser would make, without its cost,
        # less the question and function words ("when did", "what is") that add nothing.
        terms = [Term("text", t) for t in dict.fromkeys(index_terms(content_words(cleaned)))]
        return Or(terms).normalize() if terms else None
    try:
        q = _parser().parse(cleaned)
    except (IndexError, AssertionError) as e:
        # Whoosh's parser fails so on an operator followed by another operator, with nothing
        # to act on between them ("NOT NOT x", "ANDNOT ANDMAYBE").
        raise InvalidQuery(
            f"cannot read the query {text!r}: an operator (AND, OR, NOT, ANDNOT, ANDMAYBE) "
            "has no word to act on; remove it, or write it in lower case to search for it"
        ) from e
    for part in _parts(q):
        if isinstance(part, Phrase) and not POSITIONS.get(part.fieldname, True):
            field = part.fieldname
            quoted = re.search(rf'{field}:"([^"]*)', cleaned)
            words = quoted.group(1).strip() if quoted else "..."
            raise InvalidQuery(
                f"cannot search {text!r}: the {field} field keeps no word order, so it cannot "
                f'match a "phrase"; drop the quotes ({field}:({words})), or search "{words}" '
                "without a field name"
            )
    return None if q is NullQuery else q


def plain_terms(text: str, q: Any) -> list[str]:
    """The index terms of the parsed query `q` when `text` is plain words (no syntax), in
    order; else none."""
    cleaned = _clean_query(text)
    if q is None or not cleaned or cleaned == "*" or _SYNTAX.search(cleaned):
        return []
    parts = q.subqueries if isinstance(q, Or) else [q]
    return [str(p.text) for p in parts if isinstance(p, Term)]


def _parts(q: Any) -> Iterator[Any]:
    yield q
    for child in q.children():
        yield from _parts(child)
