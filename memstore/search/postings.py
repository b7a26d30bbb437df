"""Reading the index's postings and stored fields, cached: what each segment holds (kept from
one index generation to the next, as a segment never changes) and one searcher's view of it,
with each looked-up word's BM25F scores worked out as Whoosh's scorer would."""

# Whoosh ships no type information; the unknown-type reports would flag every call into it.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingTypeStubs=false
# pyright: reportUnknownParameterType=false, reportMissingParameterType=false
# pyright: reportUnknownLambdaType=false

from __future__ import annotations

import bisect
import io
import math
import pickle
import struct
import zlib
from array import array
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from itertools import accumulate, compress
from typing import Any

from memstore.search.schema import BM25_B, BM25_K1, STATUS_BOOST, TYPE_BOOST
from memstore.search.stubs import without_unused_modules

with without_unused_modules():
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN, W3LeafMatcher
    from whoosh.matching.wrappers import FilterMatcher
    from whoosh.query import And, Or, Term
    from whoosh.reading import TermNotFound
    from whoosh.searching import Searcher
    from whoosh.util.numeric import byte_to_length

POSTINGS_CACHE_MAX = 2_000_000
"""How many postings of looked-up words an index keeps in memory (8 bytes each)."""
STORED_CACHE_MAX = 20_000
"""How many documents' stored fields an index keeps in memory."""


class Segment:
    """What a segment holds, once read: a segment never changes once written (only which of
    its documents are deleted), so this is kept from one index generation to the next."""

    def __init__(self, reader: Any) -> None:
        self.lengths: list[int] = _lengths(reader)
        """Each document's `text` length, as Whoosh's scorer reads it."""
        self.postings: dict[str, tuple[array[int], array[float]]] = {}
        """Each looked-up word's documents and term frequencies, deleted documents included."""
        self.docsets: dict[str, frozenset[int]] = {}
        """The documents matching each filter looked up (when it was looked up)."""
        self.stored: dict[int, dict[str, Any]] = {}
        self.held = 0
        """How many postings `postings` holds."""
        self.vectors: dict[int, dict[str, float]] = {}
        """Documents' `text` terms and their frequencies (as feedback reads them)."""


class Cache:
    """One searcher's (one index generation's) view for the queries that follow: where each
    segment's documents start, filter document sets, each looked-up word's BM25F scores."""

    def __init__(self, searcher: Searcher | None = None, kept: dict[str, Segment] | None = None):
        self.segments: dict[str, Segment] = {}
        """The segments of this generation, by id (those of the last one carried over)."""
        self.leaves: list[tuple[Any, int, Segment, AbstractSet[int]]] = []
        """Each segment's searcher, first document number, cache and deleted documents."""
        self.starts: list[int] = []
        self.docsets: dict[str, set[int]] = {}
        self.terms: dict[str, tuple[array[int], array[float]]] = {}
        self.idfs: dict[str, float] = {}
        self._norms: dict[int, list[float]] = {}
        self._boosts: dict[int, float] | None = None
        self.paths: dict[str, int | None] = {}
        """Memory paths' live document numbers, as looked up (`docnum`)."""
        if searcher is None:
            return
        kept = kept or {}
        for sub, start in searcher.subsearchers or [(searcher, 0)]:
            reader = sub.reader()
            if reader.segment() is None:
                continue  # the reader of an empty index
            key = str(reader.segment().segment_id())
            segment = self.segments[key] = kept.get(key) or Segment(reader)
            deleted = frozenset(reader.segment().deleted_docs()) if reader.has_deletions() else ()
            self.leaves.append((sub, start, segment, frozenset(deleted)))
            self.starts.append(start)

    def docset(self, searcher: Searcher, q: Any) -> set[int]:
        """The documents matching the filter `q`."""
        # The same mask (deprecated, expired) applies to nearly every search: its documents
        # are worked out once per segment, and put together once per generation.
        key = repr(q)
        found = self.docsets.get(key)
        if found is None:
            if len(self.docsets) > 64:
                self.docsets.clear()
            found = set()
            for sub, start, segment, deleted in self.leaves:
                # A segment's own set may hold documents deleted since (a segment is kept
                # from one generation to the next, its deletions are not): they are left
                # out here, for this generation.
                local = segment.docsets.get(key)
                if local is None:
                    if len(segment.docsets) > 64:
                        segment.docsets.clear()
                    local = _matching(sub.reader(), q)
                    if local is None:  # any other query: Whoosh's matchers, a call a document
                        local = frozenset(sub.docs_for_query(q))
                    segment.docsets[key] = local
                live = local - deleted if deleted else local
                found.update(live if not start else (start + d for d in live))
            self.docsets[key] = found
        return found

    def boosts(self, searcher: Searcher) -> dict[int, float]:
        """The status and type boost of each document that has one, multiplied as
        `rank.Ranker._hit` does."""
        if self._boosts is None:
            boosts: dict[int, float] = {}
            for field, table in (("status", STATUS_BOOST), ("type", TYPE_BOOST)):
                for value, boost in table.items():
                    if boost != 1.0:
                        for docnum in self.docset(searcher, Term(field, value)):
                            boosts[docnum] = boosts.get(docnum, 1.0) * boost
            self._boosts = boosts
        return self._boosts

    def term(self, searcher: Searcher, word: str) -> tuple[array[int], array[float]]:
        """The live documents holding index term `word` in `text`, in order, with the BM25F
        score Whoosh gives each."""
        found = self.terms.get(word)
        if found is None:
            found = self.terms[word] = self._score(searcher, word)
        return found

    def _score(self, searcher: Searcher, word: str) -> tuple[array[int], array[float]]:
        ids: array[int] = array("i")
        scores: array[float] = array("d")
        # Whoosh's idf (`self.idf`: the same formula, shared with feedback's look-ups), 0 for
        # a word in no document (it is never 0 otherwise: n + 1 <= N + 1 < e * N).
        idf = self.idf(searcher, word)
        if not idf:
            return ids, scores
        # Whoosh's BM25F (`scoring.bm25`) with the same operations in the same order, so the
        # same floats; the per-document part is worked out once per generation.
        k1 = BM25_K1 + 1
        for i, (sub, start, segment, deleted) in enumerate(self.leaves):
            local = segment.postings.get(word)
            if local is None:
                local = segment.postings[word] = self._read(sub.reader(), word)
                segment.held += len(local[0])
            norms = self._leaf_norms(searcher, i)
            # Whole lists at once (a word's first search reads every posting it has, so these
            # loops are most of a cold search's time in a large store).
            docnums, tfs = local
            if deleted:
                live = [d not in deleted for d in docnums]  # one loop; the picking is C's
                docnums, tfs = list(compress(docnums, live)), list(compress(tfs, live))
            ids.extend([start + d for d in docnums] if start else docnums)
            scores.extend(
                [idf * ((tf * k1) / (tf + norms[d])) for d, tf in zip(docnums, tfs, strict=True)]
            )
        return ids, scores

    def _read(self, reader: Any, word: str) -> tuple[array[int], array[float]]:
        ids: array[int] = array("i")
        frequencies: array[float] = array("f")
        try:  # one look-up of the word, where asking whether the segment holds it took two
            postings = _all_postings(reader, word)
        except TermNotFound:
            return ids, frequencies
        # A running count: adding up every cached word's postings at each read cost more
        # than the read itself once a few hundred words were cached.
        if sum(s.held for s in self.segments.values()) > POSTINGS_CACHE_MAX:
            for segment in self.segments.values():
                segment.postings.clear()
                segment.held = 0
        for block, weights in _blocks(postings):
            ids.extend(block)
            frequencies.extend(weights)
        return ids, frequencies

    def _leaf_norms(self, searcher: Searcher, leaf: int) -> list[float]:
        norms = self._norms.get(leaf)
        if norms is None:
            avgfl = searcher.avg_field_length("text") or 1
            b, k1 = BM25_B, BM25_K1
            lengths = self.leaves[leaf][2].lengths
            norms = self._norms[leaf] = [k1 * ((1 - b) + b * fl / avgfl) for fl in lengths]
        return norms

    def vector(self, docnum: int) -> dict[str, float]:
        """The index terms of document `docnum`'s `text` and their frequencies."""
        sub, start, segment, _ = self.leaves[bisect.bisect_right(self.starts, docnum) - 1]
        local = docnum - start
        found = segment.vectors.get(local)
        if found is None:
            if len(segment.vectors) > STORED_CACHE_MAX:
                segment.vectors.clear()
            reader = sub.reader()
            found = {}
            if reader.has_vector(local, "text"):
                found = {str(t): float(w) for t, w in reader.vector_as("weight", local, "text")}
            segment.vectors[local] = found
        return found

    def idf(self, searcher: Searcher, word: str) -> float:
        """The inverse document frequency of index term `word` in `text` (0 if no document
        holds it)."""
        found = self.idfs.get(word)
        if found is None:
            # Whoosh's own formula (`WeightingModel.idf`, which BM25F keeps) from one term
            # lookup, where asking whether the term exists and then its idf takes two.
            n = searcher.reader().doc_frequency("text", word)
            count = searcher.doc_count_all()
            found = self.idfs[word] = math.log(count / (n + 1)) + 1 if n else 0.0
        return found

    def docnum(self, searcher: Searcher, path: str) -> int | None:
        """The live document of the memory at store-relative `path`, if indexed."""
        found = self.paths.get(path, -1)
        if found != -1:
            return found
        found = None
        for sub, start, _, deleted in self.leaves:
            reader = sub.reader()
            if ("path", path) not in reader:
                continue
            for local in reader.postings("path", path).all_ids():
                if local not in deleted:
                    found = start + local
        if len(self.paths) > STORED_CACHE_MAX:
            self.paths.clear()
        self.paths[path] = found
        return found

    def fields(self, docnum: int) -> dict[str, Any]:
        """The stored fields of document `docnum`."""
        sub, start, segment, _ = self.leaves[bisect.bisect_right(self.starts, docnum) - 1]
        local = docnum - start
        found = segment.stored.get(local)
        if found is None:
            if len(segment.stored) > STORED_CACHE_MAX:
                segment.stored.clear()
            found = segment.stored[local] = dict(sub.reader().stored_fields(local))
        return found


def _lengths(reader: Any) -> list[int]:
    """Each document's `text` length in a segment, as `reader.doc_field_length` gives it (0
    for none)."""
    count = reader.doc_count_all()
    # Whoosh keeps a segment's lengths as one byte a document in a column, read one document
    # per call through three wrappers (a tenth of a second a 10,000 documents, at a server's
    # first search); this reads the column's bytes at once, the same way as
    # `FixedBytesColumn.Reader`, and maps them with Whoosh's own table.
    try:
        column = reader._perdoc._cached_reader("_text_len", LENGTHS_COLUMN)
        if column is None:
            return [0] * count
        stored = min(column._count, count)
        data = column._dbfile.get(column._basepos, stored) if stored else b""
        if column._fixedlen != 1 or len(data) != stored:
            raise ValueError("not a column of one byte a document")
    except (AttributeError, TypeError, ValueError):
        return [reader.doc_field_length(d, "text", 0) or 0 for d in range(count)]
    table = [byte_to_length(b) if b else 0 for b in range(256)]
    return [table[b] for b in data] + [0] * (count - stored)


def _matching(reader: Any, q: Any) -> frozenset[int] | None:
    """The documents of a segment matching a filter made of terms, AND-ed or OR-ed (deleted
    documents included), read a block of postings at a time; None for any other query."""
    # A filter's documents are most of what a new process's first search costs in a large
    # store: Whoosh's `docs_for_query` hands them out through a generator and two matcher
    # calls each (0.7 s for the status and type boosts' 150,000 documents at 100,000
    # memories). Only plain forms are read here; anything else goes Whoosh's way.
    kind = type(q)
    if kind is Term:
        return frozenset(_term_ids(reader, q.fieldname, q.text))
    if (kind is Or and not q.minmatch) or kind is And:
        parts = [_matching(reader, sub) for sub in q.subqueries]
        if not parts or any(p is None for p in parts):
            return None
        known = [p for p in parts if p is not None]
        return frozenset().union(*known) if kind is Or else known[0].intersection(*known[1:])
    return None


def _term_ids(reader: Any, field: str, text: Any) -> Sequence[int]:
    """A segment's documents holding `text` in `field`, in order, deleted ones included."""
    try:
        terms = getattr(reader, "_terms", None)
        if terms is None or reader.is_closed:
            m = reader.postings(field, text)  # deleted documents already left out
        else:
            m = terms.matcher(
                field, reader._text_to_bytes(field, text), reader.schema[field].format
            )
    except (TermNotFound, KeyError):
        return ()
    if type(m) is not W3LeafMatcher:
        return list(m.all_ids())  # a short list kept in the term's entry, or another reader
    matcher: Any = m
    ids: list[int] = []
    while matcher.is_active():  # the matcher's own reads, a block at a time
        matcher._read_ids()
        ids.extend(matcher._ids)
        matcher._next_block()
    return ids


def _all_postings(reader: Any, word: str) -> Any:
    """The matcher of a segment's postings of `word` in `text`, deleted documents included.

    Raises:
        TermNotFound: when the segment does not hold the word.
    """
    # Whoosh's `reader.postings` wraps the matcher of a segment with deletions in a filter,
    # building the set of deleted documents and reading the first block twice at every call:
    # that doubled a word's first read in a store with edits. Its terms reader gives the bare
    # matcher (its own call inside `postings`); a reader without one goes the usual way.
    terms = getattr(reader, "_terms", None)
    if terms is None or reader.is_closed:
        return reader.postings("text", word)
    return terms.matcher("text", reader._text_to_bytes("text", word), reader.schema["text"].format)


def _blocks(m: Any) -> Iterator[tuple[Sequence[int], Sequence[float]]]:
    """A segment's postings of one term, a block at a time: (documents, term frequencies),
    deleted documents included."""
    # Whoosh 2.7.4 (its last release) reads a block at once but hands it out one posting per
    # call through two or three wrappers; these are its own reads, without the calls.
    if isinstance(m, FilterMatcher):  # the deleted documents left out
        m = m.child
        m.reset()
    if _plain_w3(m):
        yield from _read_blocks(m._postfile, m._baseoffset)
        return
    while m.is_active():
        m._read_ids()
        m._read_weights()
        yield m._ids, m._weights
        m._next_block()


def _plain_w3(m: Any) -> bool:
    """Whether `m` is a bare matcher of Whoosh's W3 postings of a text field (document
    numbers stored as gaps) on a file that `_read_blocks` can read."""
    if type(m) is not W3LeafMatcher:
        return False
    matcher: Any = m
    return (
        not matcher._byteids
        and hasattr(matcher._postfile, "get")
        and hasattr(matcher, "_baseoffset")
    )


_INT = struct.Struct("!i")
_WEIGHTS: dict[int, struct.Struct] = {}
_IDS_END = b"tq\x00(G"
"""Where a block's document numbers end and its frequencies start, in its pickle: the first
tuple closed and memoised, the second opened on a float."""


def _read_blocks(postfile: Any, offset: int) -> Iterator[tuple[Sequence[int], Sequence[float]]]:
    """The blocks of a term's postings in Whoosh's W3 format from `offset` of `postfile`, as
    `W3LeafMatcher` reads them (`_goto`, `_read_ids`, `_read_weights`): each block is its
    length (negative for the last), a pickled header, then the pickled (or zlib-compressed
    pickled) tuple (document number gaps, frequencies, positions)."""
    while True:
        (length,) = _INT.unpack(postfile.get(offset, _INT.size))
        block = io.BytesIO(postfile.get(offset + _INT.size, abs(length)))
        count, _, _, compression, _, _ = pickle.load(block)
        data = block.read()
        found = None
        if compression:
            # The numbers and frequencies come first, at most 14 bytes a posting: only that
            # much is inflated (the positions after them are most of a block).
            head = zlib.decompressobj().decompress(data, 14 * count + 16)
            found = _decoded(head, count)
            if found is None:
                data = zlib.decompress(data)
        yield found or _decoded(data, count) or _unpickled(data, count)
        if length < 0:
            return
        offset += _INT.size + length


def _decoded(data: bytes, count: int) -> tuple[Sequence[int], Sequence[float]] | None:
    """A block's document numbers and frequencies from the start of its pickled data, None
    when they are not in the plain form read here."""
    # Unpickling the positions (a `_codecs.encode` call for each posting) was most of a
    # word's first read; scoring needs only the first two parts. Their pickle is plain:
    # protocol 2, a tuple of `count` integers, then one of `count` BINFLOATs (an opcode and 8
    # big-endian bytes each). Any other form is unpickled whole (`_unpickled`).
    at = data.find(_IDS_END, 3) + 3
    end = at + 1 + 9 * count
    if at >= 3 and data[:3] == b"\x80\x02(" and data[end : end + 1] == b"t":
        floats = _WEIGHTS.get(count)
        if floats is None:
            floats = _WEIGHTS[count] = struct.Struct(">" + "xd" * count)
        if data[at + 1 : end : 9] == b"G" * count:
            try:
                gaps = pickle.loads(data[: at - 2] + b".")
            except (pickle.UnpicklingError, EOFError, ValueError, IndexError):
                gaps = None  # the marker fell inside the numbers: read it whole below
            if type(gaps) is tuple and len(gaps) == count:
                return tuple(accumulate(gaps)), floats.unpack_from(data, at + 1)
    return None


def _unpickled(data: bytes, count: int) -> tuple[Sequence[int], Sequence[float]]:
    """A block's document numbers and frequencies from its whole pickled data, as Whoosh
    reads them."""
    gaps, weights, _ = pickle.loads(data)
    if weights is None:
        weights = (1.0,) * count
    elif isinstance(weights, float):
        weights = (weights,) * count
    return tuple(accumulate(gaps)), weights


def holds(ids: array[int], docnum: int) -> bool:
    """Whether the sorted document numbers `ids` (a term's postings) hold `docnum`."""
    i = bisect.bisect_left(ids, docnum)
    return i < len(ids) and ids[i] == docnum
