"""A whole index written at once, for a rebuild: each segment's postings are gathered in
memory as its documents are analysed (each part of a document once), then handed term by term,
in order, to Whoosh's codec, with no sort of every posting through pickled runs on disk. The
segment's files are those Whoosh's own writer makes of the same documents, read by every
reader unchanged; a large store is cut into several segments, built side by side."""

# Whoosh ships no type information; the unknown-type reports would flag every call into it.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingTypeStubs=false
# pyright: reportUnknownParameterType=false, reportMissingParameterType=false
# pyright: reportUnknownLambdaType=false, reportPrivateUsage=false

from __future__ import annotations

import pickle
import struct
import zlib
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from memstore.search.analysis import analyzer, run_terms
from memstore.search.stubs import without_unused_modules

with without_unused_modules():
    from whoosh import formats
    from whoosh.analysis import IDTokenizer
    from whoosh.codec import default_codec
    from whoosh.codec.whoosh3 import (
        VECTOR_COLUMN,
        VECTOR_LEN_COLUMN,
    )
    from whoosh.system import pack_ushort
    from whoosh.util.numeric import byte_to_length, length_to_byte

_STEMS_MAX = 400_000
"""Words a builder remembers the index terms of (a rebuild meets every word of the store)."""

Written = Callable[[int], None]
"""Told how many more terms were written, while a segment's postings are."""


def _quantized(length: int) -> int:
    """A field's length as the segment keeps it (one byte) and its postings then record."""
    return byte_to_length(length_to_byte(length))


class _Field:
    """One field's postings in the segment being built: for each term, one flat list of its
    postings in document order, a posting as the document and, but for an ID's whole value,
    its frequency (or weight) and, where the format keeps one, its encoded value."""

    __slots__ = ("cache", "kind", "obj", "posts", "scorable")

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.kind = _kind(obj)
        self.scorable = bool(obj.scorable)
        self.posts: dict[Any, list[Any]] = {}
        self.cache: dict[str, list[Any]] = {}
        """`obj.index(value)` of recent values (a field of `_OTHER` kind: few values, many
        documents)."""


_POSITIONS, _FREQUENCY, _WHOLE, _OTHER = "positions", "frequency", "whole", "other"
"""How a field's terms are found: the one analyzer with positions or with frequencies only
(`run_terms`), the whole value as one term (an ID), or Whoosh's own `index`."""


def _kind(obj: Any) -> str:
    fmt = obj.format
    if obj.separate_spelling() or obj.column_type is not None or fmt.field_boost != 1.0:
        return _OTHER
    if getattr(obj, "analyzer", None) == analyzer() and (
        obj.vector is None or _fast_vector(obj.vector)
    ):
        if type(fmt) is formats.Positions:
            return _POSITIONS
        if type(fmt) is formats.Frequency:
            return _FREQUENCY
    if type(fmt) is formats.Existence and type(getattr(obj, "analyzer", None)) is IDTokenizer:
        return _WHOLE
    return _OTHER


def _fast_vector(fmt: Any) -> bool:
    return type(fmt) is formats.Frequency and fmt.field_boost == 1.0


_pack_uint = struct.Struct("!I").pack
_ONE = _pack_uint(1)
_TERMS_REPORT = 2000
"""Terms a segment's writing reports at a time."""
_CACHED = 4096
"""Values of an `_OTHER` field whose terms a builder remembers."""


class Builder:
    """One segment's documents, added in order (`add`), then written (`write`)."""

    def __init__(self, schema: Any) -> None:
        self.fields = {name: _Field(obj) for name, obj in schema.items()}
        self.count = 0
        self.lengths: dict[str, list[int]] = {}
        """Each scorable field's length in each document (0 where it has none)."""
        self.stored: list[dict[str, Any]] = []
        self.vectors: list[tuple[list[str], list[int]] | None] = []
        """Each document's vector (its terms in order, their frequencies), if it has one."""
        self.memo: dict[str, str | None] = {}
        """Each lower-case word's index term (None: dropped), as `run_terms` found it."""
        self.single: dict[int, bytes] = {}
        """The pickled positions of a term found once, by its position."""

    def add(self, fields: dict[str, str], text_parts: Sequence[str] | None = None) -> None:
        """Add the next document (field name -> value, as `schema.document` makes it);
        `text_parts`: what its `text` joins with newlines, analysed once each."""
        docnum = self.count
        stored: dict[str, Any] = {}
        vector: tuple[list[str], list[int]] | None = None
        if len(self.memo) > _STEMS_MAX:
            self.memo.clear()
        analysed: dict[str, list[str | None]] = {}

        def runs(value: str) -> list[str | None]:
            found = analysed.get(value)
            if found is None:
                found = analysed[value] = run_terms(value, self.memo)
            return found

        for name in sorted(fields):
            if name.startswith("_"):
                continue
            value = fields[name]
            if value is None:  # pyright: ignore[reportUnnecessaryComparison]
                continue
            field = self.fields[name]
            obj = field.obj
            length = 0
            if obj.indexed:
                kind = field.kind
                if kind is _WHOLE:
                    key = value.encode("utf-8")
                    found = field.posts.get(key)
                    if found is None:
                        field.posts[key] = [docnum]
                    else:
                        found.append(docnum)
                elif kind is _OTHER:
                    if obj.vector is not None:
                        raise ValueError(f"field {name!r}: a vector needs the one analyzer")
                    length = self._add_index(field, docnum, value)
                else:
                    if name == "text" and text_parts is not None and "\n".join(text_parts) == value:
                        terms = [t for part in text_parts for t in runs(part)]
                    else:
                        terms = runs(value)
                    length, vector_of = self._add_terms(field, docnum, terms)
                    if obj.vector is not None:
                        vector = vector_of
            if field.scorable:
                column = self.lengths.get(name)
                if column is None:
                    column = self.lengths[name] = [0] * docnum
                column.append(length)
            if obj.stored:
                stored[name] = value
        for column in self.lengths.values():
            if len(column) == docnum:  # a scorable field this document lacks
                column.append(0)
        self.stored.append(stored)
        self.vectors.append(vector)
        self.count += 1

    def _add_terms(
        self, field: _Field, docnum: int, terms: list[str | None]
    ) -> tuple[int, tuple[list[str], list[int]] | None]:
        """Post the terms the one analyzer found (None: a dropped run, which still takes a
        position); returns the field's length and, sorted, its terms and frequencies."""
        posts = field.posts
        if field.kind is _POSITIONS:
            where: dict[str, Any] = {}
            for pos, term in enumerate(terms):
                if term is not None:
                    found = where.get(term)
                    if found is None:
                        where[term] = pos
                    elif type(found) is int:
                        where[term] = [found, pos]
                    else:
                        found.append(pos)
            single = self.single
            counts: dict[str, int] = {}
            for term, poses in where.items():
                if type(poses) is int:
                    n = 1
                    pickled = single.get(poses)
                    if pickled is None:
                        pickled = single[poses] = pickle.dumps([poses], 2)
                    # A new object each time: a block's pickle would refer back to one it
                    # held already, which Whoosh's writer never does (the same postings in
                    # other bytes).
                    encoded = _ONE + pickled
                else:
                    n = len(poses)
                    deltas = [poses[0], *(b - a for a, b in zip(poses, poses[1:], strict=False))]
                    encoded = _pack_uint(n) + pickle.dumps(deltas, 2)
                counts[term] = n
                found = posts.get(term)
                if found is None:
                    posts[term] = [docnum, n, encoded]
                else:
                    found += (docnum, n, encoded)
            length = sum(counts.values())
        else:
            counts = {}
            for term in terms:
                if term is not None:
                    counts[term] = counts.get(term, 0) + 1
            length = sum(counts.values())
            for term, n in counts.items():
                found = posts.get(term)
                if found is None:
                    posts[term] = [docnum, n]
                else:
                    found += (docnum, n)
        if field.obj.vector is None or not counts:
            return length, None
        ordered = sorted(counts)
        return length, (ordered, [counts[t] for t in ordered])

    def _add_index(self, field: _Field, docnum: int, value: str) -> int:
        """Post what Whoosh's `field.index` gives (bytes term, frequency, weight, value);
        returns the field's length."""
        items = field.cache.get(value)
        if items is None:
            if len(field.cache) >= _CACHED:
                field.cache.clear()
            items = field.cache[value] = list(field.obj.index(value))
        length = 0
        posts = field.posts
        for btext, freq, weight, vbytes in items:
            length += freq
            found = posts.get(btext)
            if found is None:
                posts[btext] = [docnum, weight, vbytes]
            else:
                found += (docnum, weight, vbytes)
        return length if field.scorable else 0

    def terms(self) -> int:
        """How many terms the segment's postings hold (what `write` reports)."""
        return sum(len(f.posts) for f in self.fields.values())

    def write(self, storage: Any, indexname: str, written: Written | None = None) -> Any:
        """Write the segment into `storage` (an index's folder) and return it, for a table of
        contents to list; `written(n)` follows the terms as they are written."""
        codec = default_codec()
        segment = codec.new_segment(storage, indexname)
        perdoc = codec.per_document_writer(storage, segment)
        lengths = {name: [_quantized(n) for n in column] for name, column in self.lengths.items()}
        vector_field = next((f.obj for f in self.fields.values() if f.obj.vector), None)
        vector_name = next((n for n, f in self.fields.items() if f.obj.vector), "")
        vector_fixed = _fixed_size(vector_field.vector) if vector_field is not None else None
        for docnum in range(self.count):
            perdoc.start_doc(docnum)
            vector = self.vectors[docnum]
            if vector is not None and vector_field is not None:
                if perdoc._vpostfile is None:
                    perdoc._prep_vectors()
                terms, counts = vector
                offset, length, _ = _write_postings(
                    perdoc._vpostfile,
                    vector_fixed,
                    terms,
                    [float(n) for n in counts],
                    [_pack_uint(n) for n in counts],
                    None,
                    True,
                    codec._blocklimit,
                    codec._compression,
                )
                perdoc.add_column_value(f"_{vector_name}_vec", VECTOR_COLUMN, offset)
                perdoc.add_column_value(f"_{vector_name}_vecL", VECTOR_LEN_COLUMN, length)
            for name, column in self.lengths.items():
                if column[docnum]:
                    perdoc.add_field(name, self.fields[name].obj, None, column[docnum])
            # The stored values, in the order Whoosh's writer gathers them (field names
            # sorted): `finish_doc` pickles them.
            perdoc._storedfields = self.stored[docnum]
            perdoc.finish_doc()
        self.stored = []
        self.vectors = []
        segment.set_doc_count(self.count)
        perdoc.close()

        fieldwriter = codec.field_writer(storage, segment)
        postfile, tindex = fieldwriter._postfile, fieldwriter._tindex
        limit, level = codec._blocklimit, codec._compression
        dumps, compress = pickle.dumps, zlib.compress
        for name in sorted(self.fields):
            field = self.fields[name]
            if not field.posts:
                continue
            fieldwriter.start_field(name, field.obj)
            prefix = pack_ushort(fieldwriter._fieldid)
            fixed = _fixed_size(field.obj.format)
            column = lengths.get(name) if field.scorable else None
            kind = field.kind
            keys = sorted(field.posts)
            for i, key in enumerate(keys, 1):
                if written is not None and i % _TERMS_REPORT == 0:
                    written(_TERMS_REPORT)
                posts = field.posts.pop(key)
                if kind is _WHOLE and len(posts) == 1:
                    # Most of an ID field's terms (a path, a name, a time) are in one
                    # document: `_write_postings` of it, without the general case's work.
                    docnum = posts[0]
                    data = compress(dumps(((docnum,), None, None), 2), level)
                    info = dumps((1, docnum, 1.0, level, 0, 0), 2)
                    size = len(info) + len(data)
                    offset = postfile.tell()
                    postfile.write(b"".join((_MAGIC, _pack_int(-size), info, data)))
                    stats = (1.0, 1, None, 0, 1.0, docnum, docnum)
                    btext = key if isinstance(key, bytes) else key.encode("utf-8")
                    tindex.add(prefix + btext, _terminfo(offset, size + 8, stats))
                    continue
                if kind is _WHOLE:
                    ids, weights, values = posts, [1.0] * len(posts), None
                elif kind is _FREQUENCY:
                    ids, counts = posts[0::2], posts[1::2]
                    weights = [float(n) for n in counts]
                    values = [_pack_uint(n) for n in counts]
                else:
                    ids, weights, values = posts[0::3], [float(w) for w in posts[1::3]], posts[2::3]
                found = _write_postings(
                    postfile, fixed, ids, weights, values, column, False, limit, level
                )
                btext = key if isinstance(key, bytes) else key.encode("utf-8")
                tindex.add(prefix + btext, _terminfo(*found))
            fieldwriter.finish_field()
            if written is not None:
                written(len(keys) % _TERMS_REPORT)
        fieldwriter.close()
        if segment.should_assemble():
            segment.create_compound_file(storage)
            segment.compound = True
        return segment


_MAGIC = b"W3Bl"
"""What starts a term's postings in the codec's files (`WHOOSH3_HEADER_MAGIC`)."""
_pack_int = struct.Struct("!i").pack
_pack_long = struct.Struct("!q").pack
_TERMINFO = struct.Struct("!BfIBBfII")
"""`W3TermInfo`'s fixed part: flags, total weight, documents, lengths, weight, first and
last document."""


def _write_postings(
    out: Any,
    fixed: int | None,
    ids: Sequence[Any],
    weights: list[float],
    values: Sequence[bytes] | None,
    lengths: list[int] | None,
    byteids: bool = False,
    limit: int = 128,
    level: int = 3,
) -> tuple[int, int, tuple[Any, ...]]:
    """Write one term's postings to the file `out` as the codec's postings writer would,
    fed them one `add_posting` at a time (its blocks of `limit`, each pickled and compressed
    at `level`): (offset, length, the statistics its term info keeps)."""
    dumps, compress = pickle.dumps, zlib.compress
    buf = bytearray(_MAGIC)
    total = len(ids)
    total_weight: float = 0
    minlength: int | None = None
    maxlength = 0
    maxweight: float = 0
    for start in range(0, total, limit):
        end = min(total, start + limit)
        block_ids = ids[start:end]
        block = array("f", weights[start:end])
        total_weight += sum(block)
        heaviest = max(0, max(weights[start:end]))
        maxweight = max(maxweight, heaviest)
        if lengths is not None:
            held = [lengths[d] for d in block_ids]
            longest = max(0, max(held))
            nonzero = [n for n in held if n]
            shortest = min(nonzero) if nonzero else None
        else:
            longest, shortest = 0, None
        if minlength is None:
            minlength = shortest
        elif shortest is not None:
            minlength = min(minlength, shortest)
        maxlength = max(maxlength, longest)
        if byteids:
            mini_ids = tuple(block_ids)
        else:
            mini_ids = tuple(b - a for a, b in zip((0, *block_ids), block_ids, strict=False))
        first = block[0]
        if first == 1.0 and block.count(1.0) == len(block):
            mini_weights: Any = None
        elif block.count(first) == len(block):
            mini_weights = first
        else:
            mini_weights = tuple(block)
        if values is None or fixed == 0:
            mini_values: Any = None
        else:
            kept = [v for v in values[start:end] if v]
            mini_values = tuple(kept) if fixed is None else b"".join(kept)
        data = compress(dumps((mini_ids, mini_weights, mini_values), 2), level)
        info = dumps(
            (
                len(block_ids),
                block_ids[-1],
                heaviest,
                level,
                length_to_byte(shortest),
                length_to_byte(longest),
            ),
            2,
        )
        size = len(info) + len(data)
        buf += _pack_int(-size if end == total else size)
        buf += info
        buf += data
    offset = out.tell()
    out.write(buf)
    stats = (total_weight, total, minlength, maxlength, maxweight, ids[0], ids[-1])
    return offset, len(buf), stats


def _terminfo(offset: int, length: int, stats: tuple[Any, ...]) -> bytes:
    """`W3TermInfo.to_bytes` of postings written out (not inlined)."""
    weight, df, minlength, maxlength, maxweight, minid, maxid = stats
    return (
        _TERMINFO.pack(
            False,
            weight,
            df,
            0 if minlength is None else length_to_byte(minlength),
            length_to_byte(maxlength),
            maxweight,
            minid,
            maxid,
        )
        + _pack_long(offset)
        + _pack_int(length)
    )


def _fixed_size(fmt: Any) -> int | None:
    size = fmt.fixed_value_size()
    return None if size is None or size < 0 else size


# -- building an index's segments ------------------------------------------------------------

Document = tuple[dict[str, str], Sequence[str]]
"""A document's fields and the parts its `text` joins (see `schema.document_parts`)."""
Read = Callable[[str], tuple[Document | None, Any]]
"""Reads the file at a store-relative path: its document (None: nothing to index) and a note
on it for the caller (handed back in the order of the paths; picklable)."""
Progress = Callable[[int, int], None]

SEGMENT_DOCS = 50_000
"""The most documents one segment holds: a segment's postings are in memory until it is
written (some 10 KB a document at its peak)."""
SPLIT_FROM = 8_000
"""The fewest documents shared among several processes, each building segments of its own:
below it, starting them costs more than it saves."""
_REPORT = 100
"""Documents a process reads between two reports of its progress."""


def parts(count: int, procs: int) -> list[tuple[int, int]]:
    """The ranges of documents that become segments: at most `SEGMENT_DOCS` each, and at
    least one a process when there are `SPLIT_FROM` documents or more."""
    wanted = -(-count // SEGMENT_DOCS)
    if procs > 1 and count >= SPLIT_FROM:
        wanted = max(wanted, procs)
    wanted = max(1, wanted)
    size = -(-count // wanted) if count else 0
    return [(start, min(count, start + size)) for start in range(0, count, size or 1)] or [(0, 0)]


class _Job:
    """What a rebuild's processes share (inherited when they are forked, never pickled)."""

    def __init__(
        self, storage: Any, indexname: str, schema: Any, paths: Sequence[str], read: Read
    ) -> None:
        self.storage = storage
        self.indexname = indexname
        self.schema = schema
        self.paths = paths
        self.read = read
        self.report: Callable[[str, int], None] = lambda kind, n: None


_READ, _TERMS, _WROTE = "read", "terms", "wrote"
_job: _Job | None = None
"""The job of the processes a rebuild forks (set in the parent before they start)."""


def _build_part(job: _Job, start: int, end: int) -> tuple[Any, list[Any]]:
    """Read and analyse the documents of `paths[start:end]` and write them as one segment:
    (the segment, None if no file gave a document; each file's note)."""
    builder = Builder(job.schema)
    notes: list[Any] = []
    report = job.report
    unreported = 0
    for path in job.paths[start:end]:
        doc, note = job.read(path)
        notes.append(note)
        if doc is not None:
            builder.add(*doc)
        unreported += 1
        if unreported == _REPORT:
            report(_READ, unreported)
            unreported = 0
    if unreported:
        report(_READ, unreported)
    report(_TERMS, builder.terms())
    if not builder.count:
        return None, notes
    return builder.write(job.storage, job.indexname, lambda n: report(_WROTE, n)), notes


class _Tally:
    """A rebuild's progress over its parts: files read, and the terms written as a share of
    each part's documents; calls `progress` at every 500 files read (and the last) and
    `written` as terms are written."""

    def __init__(
        self, ranges: list[tuple[int, int]], progress: Progress | None, written: Progress | None
    ) -> None:
        self.total = ranges[-1][1]
        self.read = 0
        self.progress = progress
        self.written = written
        self.ranges = ranges
        self.terms: dict[int, int] = {}
        self.wrote: dict[int, int] = {}

    def __call__(self, part: int, kind: str, n: int) -> None:
        if kind == _READ:
            before, self.read = self.read, self.read + n
            if self.progress is not None and (
                self.read // 500 > before // 500 or self.read == self.total
            ):
                self.progress(self.read, self.total)
        elif kind == _TERMS:
            self.terms[part] = n
        else:
            self.wrote[part] = self.wrote.get(part, 0) + n
            if self.written is not None:
                self.written(self.documents_written(), self.total)

    def finish(self) -> None:
        """Report the end, if the last reports did not."""
        if self.read < self.total:
            self.read = self.total
            if self.progress is not None:
                self.progress(self.total, self.total)
        self.terms = {i: 1 for i in range(len(self.ranges))}
        self.wrote = dict(self.terms)

    def documents_written(self) -> int:
        done = 0.0
        for part, terms in self.terms.items():
            start, end = self.ranges[part]
            done += (end - start) * (self.wrote.get(part, 0) / terms if terms else 1.0)
        return int(done)


def build(
    storage: Any,
    indexname: str,
    schema: Any,
    paths: Sequence[str],
    read: Read,
    procs: int = 1,
    progress: Progress | None = None,
    written: Progress | None = None,
) -> tuple[list[Any], list[Any]]:
    """Read every path and write its documents as segments of the index in `storage`, in
    the paths' order (so documents are numbered as one writer adding them in turn numbers
    them): (the segments, for a table of contents to list; each path's note). With `procs`
    > 1 and enough documents (`SPLIT_FROM`), that many processes (forked: only from a process
    running no other threads) build segments side by side. `progress(done, total)` follows
    the files read, `written(done, total)` the documents written (a share of their terms).

    Raises:
        OSError: when a segment's files cannot be written.
    """
    ranges = parts(len(paths), procs)
    tally = _Tally(ranges, progress, written)
    job = _Job(storage, indexname, schema, paths, read)
    if procs <= 1 or len(ranges) == 1:
        results: list[tuple[Any, list[Any]]] = []
        for i, (start, end) in enumerate(ranges):
            job.report = lambda kind, n, i=i: tally(i, kind, n)
            results.append(_build_part(job, start, end))
    else:
        results = _in_processes(job, ranges, procs, tally)
    tally.finish()
    segments = [segment for segment, _ in results if segment is not None]
    return segments, [note for _, notes in results for note in notes]


def _in_processes(
    job: _Job, ranges: list[tuple[int, int]], procs: int, tally: _Tally
) -> list[tuple[Any, list[Any]]]:
    """`_build_part` of each range in `procs` forked processes, their reports passed on to
    `tally` as they come."""
    import multiprocessing
    import queue as queues

    global _job
    context = multiprocessing.get_context("fork")
    reports: Any = context.Queue()
    _job = job
    try:
        workers = min(procs, len(ranges))
        with context.Pool(workers, initializer=_start_worker, initargs=(reports,)) as pool:
            pending = [
                pool.apply_async(_forked_part_reporting, (i, start, end))
                for i, (start, end) in enumerate(ranges)
            ]
            while True:
                try:
                    part, kind, n = reports.get(timeout=0.2)
                except queues.Empty:
                    if all(r.ready() for r in pending):
                        break
                    continue
                tally(part, kind, n)
            results = [r.get() for r in pending]
            tally.finish()  # reports still on their way are not waited for
            return results
    finally:
        _job = None


_reports: Any = None


def _start_worker(reports: Any) -> None:
    global _reports
    _reports = reports


def _forked_part_reporting(part: int, start: int, end: int) -> tuple[Any, list[Any]]:
    assert _job is not None
    _job.report = lambda kind, n: _reports.put((part, kind, n))
    return _build_part(_job, start, end)
