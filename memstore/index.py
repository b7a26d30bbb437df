"""The Whoosh (BM25F) search index: a derived cache of the memory files, and how it is queried."""

# Whoosh ships no type information; the unknown-type reports would flag every call into it.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingTypeStubs=false
# pyright: reportUnknownParameterType=false, reportMissingParameterType=false
# pyright: reportUnknownLambdaType=false

from __future__ import annotations

import functools
import gc
import json
import logging
import math
import os
import pickle
import re
import struct
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from whoosh import index as windex
from whoosh import scoring
from whoosh.analysis import Filter, LowercaseFilter, StemFilter, Token, Tokenizer
from whoosh.analysis.filters import STOP_WORDS
from whoosh.fields import ID, KEYWORD, TEXT, Schema
from whoosh.lang import porter2
from whoosh.qparser import OrGroup, QueryParser
from whoosh.query import And, Every, NullQuery, Or, Phrase, QueryError, Term, TermRange
from whoosh.searching import Searcher
from whoosh.writing import CLEAR

from memstore.errors import IndexUnavailable, InvalidMemory, InvalidQuery
from memstore.memory import Memory, links_in_body
from memstore.status import Status

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
"""Bump when the schema or the analyzer changes: an index of another version is rebuilt."""

BUDGETS = {"tiny": 3, "normal": 10, "deep": 20}
STATUS_BOOST = {"confirmed": 1.2, "draft": 1.0, "deprecated": 0.5}
TYPE_BOOST = {"warning": 1.15, "correction": 1.15}
HOP_DECAY = 0.5
TEXT_WEIGHTS = {"name_text": 1, "description": 2, "tags_text": 1, "body": 1}
"""How many times each part goes into the `text` field that queries score (BM25F-style:
weighted term frequencies saturate together, instead of one BM25 sum per field)."""

Stamp = tuple[int, int, int]
"""What a file looked like when it was indexed: (mtime in ns, size in bytes, inode)."""

Loader = Callable[[str], tuple[Memory | None, Stamp]]
"""Reads the file at a store-relative path: its memory (None if the file is gone) and stamp.

Raises InvalidMemory or OSError for a file that cannot be indexed."""

Progress = Callable[[int, int], None]
"""Called with (done, total) while a rebuild indexes files."""

# -- text analysis ----------------------------------------------------------------------------

# Scripts written without spaces between words: indexed as overlapping character bigrams.
_CJK = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uac00-\ud7af"  # Hangul
    "\uff66-\uff9f"  # half-width Katakana
)
_TOKEN_RE = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")
_CJK_CHAR = re.compile(rf"[{_CJK}]")


class _BigramTokenizer(Tokenizer):
    """Words of letters and digits; runs of CJK-like script become overlapping bigrams."""

    def __eq__(self, other: object) -> bool:
        return self.__class__ is other.__class__

    def __hash__(self) -> int:
        return hash(self.__class__)

    def __call__(
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        **kwargs: Any,
    ) -> Iterator[Token]:
        t: Any = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        if not tokenize:
            t.original = t.text = value
            t.boost = 1.0
            if positions:
                t.pos = start_pos
            if chars:
                t.startchar, t.endchar = start_char, start_char + len(value)
            yield t
            return
        pos = start_pos
        for match in _TOKEN_RE.finditer(value):
            run = match.group(0)
            if match.group("cjk") and len(run) > 1:
                pieces = [(i, run[i : i + 2]) for i in range(len(run) - 1)]
            else:
                pieces = [(0, run)]
            for offset, text in pieces:
                t.text = text
                t.boost = 1.0
                t.stopped = False
                if keeporiginal:
                    t.original = text
                if positions:
                    t.pos = pos
                if chars:
                    t.startchar = start_char + match.start() + offset
                    t.endchar = t.startchar + len(text)
                pos += 1
                yield t


class _LatinStops(Filter):
    """Drops English stop words and one-letter words; CJK tokens pass untouched."""

    def __eq__(self, other: object) -> bool:
        return self.__class__ is other.__class__

    def __hash__(self) -> int:
        return hash(self.__class__)

    def __call__(self, tokens: Iterable[Token]) -> Iterator[Token]:
        for t in tokens:
            text: str = t.text  # pyright: ignore[reportAttributeAccessIssue]
            if _CJK_CHAR.match(text) or (len(text) > 1 and text not in STOP_WORDS):
                yield t
            elif not t.removestops:
                t.stopped = True
                yield t


def stem(word: str) -> str:
    """Porter2, with the agent noun folded in: autoscaler, autoscaling and autoscaled agree."""
    if word.endswith("ers") and len(word) > 6 and word.isascii():
        return porter2.stem(word[:-3])
    if word.endswith("er") and len(word) > 5 and word.isascii():
        return porter2.stem(word[:-2])
    return porter2.stem(word)


def analyzer() -> Any:
    """The analyzer of every text field: words (stemmed) plus bigrams for CJK runs."""
    return (
        _BigramTokenizer()
        | LowercaseFilter()
        | _LatinStops()
        | StemFilter(stemfn=stem, cachesize=50_000)
    )


def tokens(text: str) -> list[str]:
    """The index terms of `text`, in order (for tests and explain output)."""
    return [t.text for t in analyzer()(text)]


def _schema() -> Schema:
    text = analyzer()
    return Schema(
        path=ID(stored=True, unique=True),
        name=ID(stored=True),
        text=TEXT(analyzer=text),
        name_text=TEXT(analyzer=text, phrase=False),
        description=TEXT(analyzer=text, phrase=False, stored=True),
        tags=KEYWORD(stored=True, commas=True),
        tags_text=TEXT(analyzer=text, phrase=False),
        type=ID(stored=True),
        status=ID(stored=True),
        owner=ID(stored=True),
        scope=ID(stored=True),
        created=ID(stored=True),
        updated=ID(stored=True),
        expires=ID(stored=True),
        links=KEYWORD(stored=True, commas=True),
    )


def _expires(memory: Memory) -> str:
    value = memory.extra.get("expires")
    if value is None:
        return ""
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return text[:10]


def _document(path: str, memory: Memory) -> dict[str, str]:
    links = list(memory.links)
    links += [n for n in links_in_body(memory.body) if n not in links and n != memory.name]
    scope = memory.extra.get("scope")
    parts = {
        "name_text": memory.name.replace("-", " "),
        "description": memory.description,
        "tags_text": " ".join(memory.tags),
        "body": memory.body,
    }
    text = "\n".join(value for key, value in parts.items() for _ in range(TEXT_WEIGHTS[key]))
    return {
        "path": path,
        "name": memory.name,
        "name_text": parts["name_text"],
        "description": parts["description"],
        "tags_text": parts["tags_text"],
        "text": text,
        "tags": ",".join(memory.tags),
        "type": memory.type,
        "status": memory.status,
        "owner": memory.owner,
        "scope": scope if isinstance(scope, str) else "",
        "created": memory.created,
        "updated": memory.updated,
        "expires": _expires(memory),
        "links": ",".join(links),
    }


# -- results ----------------------------------------------------------------------------------


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
    """Keep only the leading whole results that fit in about this many tokens."""
    include_deprecated: bool = False
    """Also deprecated and expired memories (always, with `status="deprecated"`)."""
    explain: bool = False
    graph: bool = False
    """Add memories 1-2 links away from the matches."""
    index_view: bool = False
    """Results are shown as index lines: `max_tokens` counts those."""

    @property
    def size(self) -> int:
        """How many results at most: `limit`, else the budget's size."""
        return self.limit if self.limit is not None else BUDGETS[self.budget or "normal"]

    def check(self, types: Iterable[str]) -> None:
        """Refuse a query no store can answer; `types` are the store's memory types.

        Raises:
            InvalidQuery: for an unknown type, status or budget, a bad date, a limit or
                token cap below 1, or a text longer than QUERY_MAX.
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


def index_line(hit: Hit) -> str:
    """The index view of a hit: name, type, status, date and score on one line, no text."""
    flags = " expired" if hit.expired else ""
    return f"{hit.name} {hit.type} {hit.status}{flags} {hit.updated[:10]} {hit.score:.2f}"


def approx_tokens(hit: Hit, index_view: bool = False) -> int:
    """Roughly how many tokens a hit costs a model: its JSON (or index line) length / 4."""
    text = index_line(hit) if index_view else json.dumps(asdict(hit), ensure_ascii=False)
    return math.ceil(len(text) / 4)


def fit_tokens(hits: list[Hit], max_tokens: int, index_view: bool = False) -> list[Hit]:
    """The leading hits whose approximate tokens add up to at most `max_tokens` (whole hits)."""
    kept: list[Hit] = []
    used = 0
    for hit in hits:
        used += approx_tokens(hit, index_view)
        if used > max_tokens:
            break
        kept.append(hit)
    return kept


@dataclass(frozen=True, slots=True)
class Sync:
    """What a catch-up or rebuild did."""

    rebuilt: bool = False
    indexed: int = 0
    removed: int = 0
    skipped: tuple[str, ...] = ()
    """Files that could not be indexed (malformed), by store-relative path."""


# -- the index --------------------------------------------------------------------------------


class Index:
    """The index in `directory`, with a manifest of the file stamps it reflects.

    `lock` is a context manager factory that orders writers across processes; every write to
    the index and the manifest happens under it, between a DIRTY marker's creation and removal.
    """

    def __init__(self, directory: Path, lock: Callable[[], AbstractContextManager[None]]):
        self.dir = directory
        self.manifest_path = directory / "manifest.json"
        self.dirty_path = directory / "DIRTY"
        self._lock = lock
        self._mutex = threading.RLock()
        self._searcher: Searcher | None = None
        self._docsets: dict[str, set[int]] = {}
        """Documents matching a filter or mask, per query, for the current searcher."""
        self._seen: dict[str, Stamp] | None = None
        """The manifest as this process last wrote or read it: files that still have these
        stamps need no look at the manifest (a JSON file as long as the store)."""

    # -- state on disk --

    def _read_manifest(self) -> dict[str, Stamp] | None:
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("schema") != SCHEMA_VERSION:
                return None
            files: dict[str, list[int]] = data["files"]
            return {path: (int(s[0]), int(s[1]), int(s[2])) for path, s in files.items()}
        except (OSError, ValueError, LookupError, TypeError, AttributeError):
            return None  # unreadable: the index is rebuilt

    def _write_manifest(self, files: dict[str, Stamp]) -> None:
        tmp = self.dir / f".manifest.{os.getpid()}.{threading.get_ident()}.tmp"
        data = {"schema": SCHEMA_VERSION, "files": {p: list(s) for p, s in files.items()}}
        tmp.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, self.manifest_path)

    def _usable(self) -> bool:
        return not self.dirty_path.exists() and _exists(self.dir)

    def close(self) -> None:
        """Release the open searcher, if any."""
        with self._mutex:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None

    # -- writing --

    def _open_for_write(self) -> Any:
        self.dir.mkdir(parents=True, exist_ok=True)
        if _exists(self.dir):
            try:
                ix = windex.open_dir(str(self.dir))
                if ix.schema == _schema():
                    return ix
            except _OPEN_ERRORS as e:
                log.warning(
                    "search index at %s is unreadable (%s); rebuilding it", self.dir, str(e)
                )
        return windex.create_in(str(self.dir), _schema())

    def _apply(
        self,
        manifest: dict[str, Stamp],
        updates: list[tuple[str, Memory | None, Stamp]],
        removed: list[str],
        clear: bool = False,
    ) -> None:
        """Write documents and the manifest between the DIRTY marker's creation and removal."""
        self.dirty_path.parent.mkdir(parents=True, exist_ok=True)
        self.dirty_path.touch()
        ix = self._open_for_write()
        writer = ix.writer(limitmb=128)
        try:
            for path in removed:
                if not clear:
                    writer.delete_by_term("path", path)
                manifest.pop(path, None)
            for path, memory, stamp in updates:
                if memory is None:
                    if not clear:
                        writer.delete_by_term("path", path)
                elif clear:
                    writer.add_document(**_document(path, memory))
                else:
                    writer.update_document(**_document(path, memory))
                manifest[path] = stamp
        except BaseException:
            writer.cancel()
            raise
        if clear:
            writer.commit(mergetype=CLEAR)
        else:
            writer.commit()
        self._write_manifest(manifest)
        self.dirty_path.unlink()
        self._seen = dict(manifest)

    def update(self, entries: list[tuple[str, Memory, Stamp]]) -> bool:
        """Index these memories (store-relative path, memory, file stamp) in place of old ones.

        Does nothing and returns False when the index is not built yet or not trustworthy:
        the next `sync` builds it from the files.
        """
        with self._mutex, self._lock():
            manifest = self._read_manifest()
            if manifest is None or not self._usable():
                return False
            self._apply(manifest, [(p, m, s) for p, m, s in entries], [])
            return True

    def remove(self, paths: list[str]) -> bool:
        """Drop the documents of these store-relative paths; False if the index is not built."""
        with self._mutex, self._lock():
            manifest = self._read_manifest()
            if manifest is None or not self._usable():
                return False
            self._apply(manifest, [], paths)
            return True

    def sync(self, disk: dict[str, Stamp], load: Loader, progress: Progress | None = None) -> Sync:
        """Catch up with the files: re-index those added, changed, renamed or deleted.

        `disk` maps every memory file (store-relative path) to its stamp. A missing, foreign or
        half-written (DIRTY) index is rebuilt instead.
        """
        result = self._sync(disk, load, None)
        if result is not None:
            return result
        if self.dirty_path.exists():
            log.warning("search index at %s was left half-written; rebuilding", self.dir)
        return self.rebuild(disk, load, progress)

    def sync_some(
        self, disk: dict[str, Stamp], within: Callable[[str], bool], load: Loader
    ) -> Sync | None:
        """`sync` for the files whose paths `within` accepts (a folder, a few paths): `disk`
        holds just those, and the index keeps its other files as they are.

        Returns None, changing nothing, when the index must be rebuilt from every file.
        """
        return self._sync(disk, load, within)

    def _sync(
        self, disk: dict[str, Stamp], load: Loader, within: Callable[[str], bool] | None
    ) -> Sync | None:
        seen = self._seen
        if seen is not None and not self.dirty_path.exists() and self.manifest_path.exists():
            if within is not None:
                seen = {p: s for p, s in seen.items() if within(p)}
            if seen == disk:
                return Sync()
        with self._mutex, self._lock():
            manifest = self._read_manifest()
            if manifest is None or not self._usable():
                return None
            changed = [p for p, s in disk.items() if manifest.get(p) != s]
            gone = [p for p in manifest if p not in disk and (within is None or within(p))]
            if not changed and not gone:
                self._seen = manifest
                return Sync()
            updates, skipped = self._load_all(changed, disk, load, None)
            self._apply(manifest, updates, gone)
            indexed = sum(1 for _, m, _ in updates if m is not None)
            return Sync(indexed=indexed, removed=len(gone), skipped=skipped)

    def rebuild(
        self, disk: dict[str, Stamp], load: Loader, progress: Progress | None = None
    ) -> Sync:
        """Index every file afresh (readers keep the old index until the new one is committed)."""
        with self._mutex, self._lock():
            return self._rebuild(disk, load, progress)

    def _rebuild(self, disk: dict[str, Stamp], load: Loader, progress: Progress | None) -> Sync:
        updates, skipped = self._load_all(sorted(disk), disk, load, progress)
        self._apply({}, updates, [], clear=True)
        indexed = sum(1 for _, m, _ in updates if m is not None)
        return Sync(rebuilt=True, indexed=indexed, skipped=skipped)

    def _load_all(
        self, paths: list[str], disk: dict[str, Stamp], load: Loader, progress: Progress | None
    ) -> tuple[list[tuple[str, Memory | None, Stamp]], tuple[str, ...]]:
        updates: list[tuple[str, Memory | None, Stamp]] = []
        skipped: list[str] = []
        total = len(paths)
        for done, path in enumerate(paths, 1):
            try:
                memory, stamp = load(path)
            except (InvalidMemory, OSError) as e:
                log.warning("not indexing %s: %s", path, e)
                skipped.append(path)
                # Remembered with the stamp seen, so the file is not retried until it changes.
                memory, stamp = None, disk[path]
            updates.append((path, memory, stamp))
            if progress is not None and (done % 500 == 0 or done == total):
                progress(done, total)
        return updates, tuple(skipped)

    # -- reading --

    def _current_searcher(self) -> Searcher:
        """A searcher on the latest committed index, reopened when another writer committed."""
        last: Exception | None = None
        for _ in range(20):
            try:
                if self._searcher is None:
                    ix = windex.open_dir(str(self.dir))
                    self._searcher = ix.searcher(weighting=_weighting())
                    self._docsets.clear()
                elif not self._searcher.up_to_date():
                    self._searcher = self._searcher.refresh()
                    self._docsets.clear()
                return self._searcher
            except _OPEN_ERRORS as e:
                # A concurrent commit can remove a segment between reading the table of
                # contents and opening it; the next attempt sees the new generation.
                last = e
                if self._searcher is not None:
                    self._searcher.close()
                self._searcher = None
        raise IndexUnavailable(
            f"the search index at {self.dir} cannot be opened ({last}); run `memstore reindex`"
        )

    def _docset(self, searcher: Searcher, q: Any) -> set[int]:
        # The same mask (deprecated, expired) applies to nearly every search: computing its
        # documents once per index generation keeps it off the per-query cost.
        key = repr(q)
        if key not in self._docsets:
            if len(self._docsets) > 64:
                self._docsets.clear()
            self._docsets[key] = set(searcher.docs_for_query(q))
        return self._docsets[key]

    def search(self, query: Query, today: str | None = None) -> list[Hit]:
        """The best `query.size` memories for `query.text` that pass every filter, best first.

        Deprecated and expired memories are left out unless `include_deprecated` (or
        `status="deprecated"`). With `graph`, memories linked to the text matches (1-2 hops)
        join with decaying scores. With `max_tokens`, only the leading whole hits that fit.

        Raises:
            InvalidQuery: for query text Whoosh cannot run, naming the problem.
        """
        today = today or datetime.now(UTC).strftime("%Y-%m-%d")
        filters: list[Any] = []
        if query.type:
            filters.append(Term("type", query.type))
        if query.status:
            filters.append(Term("status", query.status))
        if query.owner:
            filters.append(Term("owner", query.owner))
        filters += [Term("tags", tag) for tag in query.tags]
        if query.since:
            filters.append(TermRange("updated", query.since, None))
        hidden: list[Any] = []
        if not query.include_deprecated and query.status != "deprecated":
            hidden.append(Term("status", "deprecated"))
            hidden.append(TermRange("expires", "0", today, endexcl=True))
        text = parse_query(query.text)
        hits: list[Hit] = []
        with self._mutex:
            if self._searcher is None and not _exists(self.dir):
                return []
            for attempt in range(3):
                searcher = self._current_searcher()
                try:
                    hits = self._ranked(searcher, text, filters, hidden, query, today)
                    break
                except QueryError as e:
                    raise InvalidQuery(f"cannot search {query.text!r}: {e}") from e
                except _OPEN_ERRORS:
                    # A segment removed by another process's commit under a searcher that had
                    # not opened it yet: reopen on the new generation and run the query again.
                    if attempt == 2:
                        raise
                    self.close()
        if query.max_tokens is not None:
            hits = fit_tokens(hits, query.max_tokens, query.index_view)
        return hits

    def _ranked(
        self,
        searcher: Searcher,
        text: Any,
        filters: list[Any],
        hidden: list[Any],
        query: Query,
        today: str,
    ) -> list[Hit]:
        allowed = self._docset(searcher, And(filters)) if filters else None
        if allowed is not None and not allowed:
            return []  # Whoosh reads an empty filter as no filter at all
        ranked = _Ranker(
            searcher,
            filter=allowed,
            mask=self._docset(searcher, Or(hidden)) if hidden else None,
            today=today,
            explain=query.explain,
        )
        hits = ranked.text_hits(text, query.size)
        if query.graph:
            hits = ranked.expand(hits, query.size)
        return hits[: query.size]


# What opening a damaged index can raise: it is then rebuilt from the files.
_OPEN_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    AttributeError,
    ImportError,
    pickle.UnpicklingError,
    struct.error,
    windex.IndexError,
)


def _exists(directory: Path) -> bool:
    # Whoosh leaves a damaged table of contents open when reading it fails; its file object
    # is collected here rather than warning later, somewhere unrelated.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            return windex.exists_in(str(directory))
        except _OPEN_ERRORS as e:
            problem = str(e)
        gc.collect()
    log.warning("search index at %s is unreadable (%s)", directory, problem)
    return False


def _weighting() -> Any:
    return scoring.BM25F(B=0.75, K1=1.2)


@functools.cache
def _parser() -> Any:
    group: Any = OrGroup
    return QueryParser("text", _schema(), group=group)


def _clean_query(text: str) -> str:
    # A question's trailing '?' would otherwise be a one-character wildcard.
    return re.sub(r"\?(?=\s|$)", " ", text).strip()


_SYNTAX = re.compile(r"""['"():*?\[\]{}^~\\]|\b(?:AND|OR|NOT|ANDNOT|ANDMAYBE|REQUIRE|TO)\b""")
"""What the Whoosh parser reads as syntax; a query without any is plain words."""


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
        # Plain words, the usual query: the terms the parser would make, without its cost.
        terms = [Term("text", t) for t in dict.fromkeys(tokens(cleaned))]
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
        if isinstance(part, Phrase) and not _SCHEMA_POSITIONS.get(part.fieldname, True):
            field = part.fieldname
            quoted = re.search(rf'{field}:"([^"]*)', cleaned)
            words = quoted.group(1).strip() if quoted else "..."
            raise InvalidQuery(
                f"cannot search {text!r}: the {field} field keeps no word order, so it cannot "
                f'match a "phrase"; drop the quotes ({field}:({words})), or search "{words}" '
                "without a field name"
            )
    return None if q is NullQuery else q


def _parts(q: Any) -> Iterator[Any]:
    yield q
    for child in q.children():
        yield from _parts(child)


_SCHEMA_POSITIONS = {
    name: bool(field.format and field.format.supports("positions"))
    for name, field in _schema().items()
}
"""Which fields can match a phrase."""


class _Ranker:
    """One query's candidates and boosts, on one searcher."""

    def __init__(
        self, searcher: Searcher, *, filter: Any, mask: Any, today: str, explain: bool
    ) -> None:
        self.searcher = searcher
        self.filter = filter
        self.mask = mask
        self.today = today
        self.explain = explain
        self._links: dict[str, str] = {}
        """Each seen memory's outgoing links, by path."""

    def _hit(self, fields: dict[str, Any], score: float, lines: list[str], via: str | None) -> Hit:
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
        tags = str(fields.get("tags", ""))
        self._links[str(fields.get("path", ""))] = str(fields.get("links", ""))
        return Hit(
            name=str(fields["name"]),
            type=kind,
            status=status,
            description=str(fields.get("description", "")),
            score=round(score * factor, 4),
            owner=str(fields.get("owner", "")),
            updated=str(fields.get("updated", "")),
            tags=tuple(t for t in tags.split(",") if t),
            path=str(fields.get("path", "")),
            expired=expired,
            via=via,
            explain=tuple(lines) if self.explain else (),
        )

    def text_hits(self, q: Any, limit: int) -> list[Hit]:
        """Matches of the parsed query `q` re-ranked with the status and type boosts."""
        if q is None:
            return []
        every = isinstance(q, Every)
        # Boosts can lift a result a few places: rank more candidates than asked for.
        results = self.searcher.search(
            q,
            limit=max(limit * 3, 30),
            filter=self.filter,
            mask=self.mask,
            terms=self.explain,
            sortedby="updated" if every else None,
            reverse=every,
        )
        hits: list[Hit] = []
        for r in results:
            lines: list[str] = []
            score = 0.0 if every or r.score is None else float(r.score)
            fields = dict(r.fields())
            if self.explain:
                lines.append(f"bm25 {score:.3f}")
                terms = sorted(
                    {
                        t.decode("utf-8") if isinstance(t, bytes) else str(t)
                        for _, t in r.matched_terms()
                    }
                )
                lines.append(f"matched {' '.join(terms) or '-'} in {_fields_with(fields, terms)}")
            hits.append(self._hit(fields, score, lines, None))
        if not every:  # an empty query lists the newest first
            hits.sort(key=lambda h: (-h.score, h.name))
        return hits

    def _by_names(self, names: Iterable[str]) -> list[dict[str, Any]]:
        wanted = sorted(set(names))
        if not wanted:
            return []
        q = Or([Term("name", n) for n in wanted])
        results = self.searcher.search(q, limit=None, filter=self.filter, mask=self.mask)
        return [dict(r.fields()) for r in results]

    def _linking_to(self, names: Iterable[str]) -> list[dict[str, Any]]:
        wanted = sorted(set(names))
        if not wanted:
            return []
        q = Or([Term("links", n) for n in wanted])
        results = self.searcher.search(q, limit=None, filter=self.filter, mask=self.mask)
        return [dict(r.fields()) for r in results]

    def expand(self, hits: list[Hit], limit: int) -> list[Hit]:
        """Add memories 1-2 links away from the top text matches, at decaying scores."""
        found = {h.name: h for h in hits}
        frontier = hits[:limit]
        for hop in (1, 2):
            decay = HOP_DECAY  # per hop: a second hop gets a quarter
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
        held = set(terms) & set(tokens(value))
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
