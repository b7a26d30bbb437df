"""The Whoosh (BM25F) search index: a derived cache of the memory files, and how it is queried."""

# Whoosh ships no type information; the unknown-type reports would flag every call into it.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingTypeStubs=false
# pyright: reportUnknownParameterType=false, reportMissingParameterType=false
# pyright: reportUnknownLambdaType=false

from __future__ import annotations

import bisect
import functools
import gc
import heapq
import json
import logging
import math
import os
import pickle
import re
import struct
import sys
import threading
import time
import types
import warnings
from array import array
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from itertools import compress
from pathlib import Path
from typing import Any, Protocol

from memstore.errors import IndexUnavailable, InvalidMemory, InvalidQuery
from memstore.model.memory import Memory, expiry, links_in_body
from memstore.model.status import Status
from memstore.search import fusion, manifest
from memstore.search.manifest import Manifest, Stamp

_UNUSED = {"urllib.request": "urlretrieve", "whoosh.lang.morph_en": "variations"}
"""Modules whoosh imports at load time for one function memstore never calls, and that
function: whoosh's py2/py3 shim loads `urllib.request` (with http.client and the email
package) for a download helper, and its query module compiles the English morphology rules
(a regex of some 200 alternatives) for `Variations` queries. Together about 80 ms and 7 MB a
process."""


def _stub(name: str, attr: str) -> types.ModuleType:
    stub = types.ModuleType(name)

    def load_then_call(*args: Any, **kwargs: Any) -> Any:
        import importlib

        if sys.modules.get(name) is stub:
            del sys.modules[name]
        return getattr(importlib.import_module(name), attr)(*args, **kwargs)

    setattr(stub, attr, load_then_call)
    return stub


@contextmanager
def _without_unused_modules() -> Generator[None]:
    """While whoosh loads, each module in `_UNUSED` not yet loaded is a stub whose function
    loads the real module when called; afterwards, importing the module loads the real one."""
    stubs = {n: _stub(n, a) for n, a in _UNUSED.items() if n not in sys.modules}
    sys.modules.update(stubs)
    try:
        yield
    finally:
        for name, stub in stubs.items():
            if sys.modules.get(name) is stub:
                del sys.modules[name]


with _without_unused_modules():
    from whoosh import formats, scoring
    from whoosh import index as windex
    from whoosh.analysis import Analyzer, Filter, LowercaseFilter, StemFilter, Token, Tokenizer
    from whoosh.analysis.filters import STOP_WORDS
    from whoosh.fields import ID, KEYWORD, TEXT, Schema
    from whoosh.lang import porter2
    from whoosh.matching.wrappers import FilterMatcher
    from whoosh.query import And, Every, NullQuery, Or, Phrase, QueryError, Term, TermRange
    from whoosh.reading import ReaderClosed, TermNotFound
    from whoosh.searching import Searcher
    from whoosh.writing import CLEAR

log = logging.getLogger(__name__)


BUDGETS = {"tiny": 3, "normal": 10, "deep": 20}
STATUS_BOOST = {"confirmed": 1.2, "draft": 1.0, "deprecated": 0.5}
TYPE_BOOST = {"warning": 1.15, "correction": 1.15}
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
TEXT_WEIGHTS = {"name_text": 1, "description": 2, "tags_text": 1, "body": 1}
"""How many times each part goes into the `text` field that queries score (BM25F-style:
weighted term frequencies saturate together, instead of one BM25 sum per field)."""

REPEAT_SHARE = 0.9
"""A description this much of whose words the body also holds repeats the body (its first
line, cut short): it goes into `text` once, like the body, not `TEXT_WEIGHTS` times, or the
words it repeats would count three times (chosen on LoCoMo's tuning part, where every
description is the body's first 150 characters)."""

Loader = Callable[[str], tuple[Memory | None, Stamp, str]]
"""Reads the file at a store-relative path: its memory (None if the file is gone), stamp and
content digest.

Raises InvalidMemory or OSError for a file that cannot be indexed."""

Digest = Callable[[str], str]
"""The content digest of the file at a store-relative path (`""` when it cannot be read)."""


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
(bench/reworded_dev.yaml, reworded_devA.yaml ... reworded_devD.yaml) and LoCoMo's tuning
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

RACY_NS = 2_000_000_000
"""A file modified this close to the moment it was indexed may change again within the same
timestamp (a file system's clock ticks every few milliseconds, or once a second or two), size
and all: its stamp cannot tell, so its content is compared too until it is older than this.
This is the window for a file system whose times are whole seconds (FAT, some network file
systems); one with finer times gets `RACY_FINE_NS` (see `racy_window`)."""
RACY_FINE_NS = 100_000_000
"""The window where file times have sub-second parts: Linux stamps files from a clock that
ticks every 1-10 ms, so 100 ms covers it with room."""


def _folder_time(folder: Path) -> int:
    """A folder's modification time in nanoseconds, -1 if it cannot be read."""
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return -1


def racy_window(mtime_ns: int) -> int:
    """How long after its modification a file's stamp may not tell a later edit apart: a
    time with no sub-second part suggests a file system that keeps whole seconds."""
    return RACY_NS if mtime_ns % 1_000_000_000 == 0 else RACY_FINE_NS


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
_ASCII_TOKEN_RE = re.compile(r"(?P<cjk>(?!))|(?P<word>[^\W_]+)")
"""`_token_re()` on ASCII text, where no character is of those scripts: the same matches."""


@functools.cache
def _token_re() -> re.Pattern[str]:
    """Runs of `_CJK` script, or words of letters and digits. Compiled on the first text that
    is not ASCII: expanding the ranges costs a process milliseconds it would spend on a query
    or a write of plain ASCII."""
    return re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")


def _token_matches(value: str) -> Iterator[re.Match[str]]:
    return (_ASCII_TOKEN_RE if value.isascii() else _token_re()).finditer(value)


_CJK_RANGES = tuple((ord(_CJK[i]), ord(_CJK[i + 2])) for i in range(0, len(_CJK), 3))
"""`_CJK`'s ranges as code points: a third regex over them would cost every process ~20 ms
to compile (`re` expands each range of a character class), for a one-character test."""
_CJK_LOWEST = min(low for low, _ in _CJK_RANGES)
"""Below it no character is of a script `_CJK` names (the quick test for most tokens)."""


def _cjk(char: str) -> bool:
    """Whether `char` is of a script `_CJK` names."""
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


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
        for match in _token_matches(value):
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
            if (len(text) > 1 and text not in STOP_WORDS) or (text and _cjk(text[0])):
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
    return _Analyzer()


def _chain() -> Any:  # pyright: ignore[reportUnusedFunction]  (the tests' reference)
    """`analyzer()` as whoosh's chain of a tokenizer and filters, which `_Analyzer` runs in
    one pass (the tests hold the two to the same tokens)."""
    return (
        _BigramTokenizer()
        | LowercaseFilter()
        | _LatinStops()
        | StemFilter(stemfn=stem, cachesize=50_000)
    )


_STEMS: dict[str, str] = {}
"""Each word's stem, as `stem` gives it (one cache for every analyzer: none holds state, so
the schema whoosh pickles into an index holds none either)."""
_STEMS_MAX = 50_000


class _Analyzer(Analyzer):
    """`_BigramTokenizer | LowercaseFilter | _LatinStops | StemFilter(stem)` in one generator
    with a plain dict of stems: indexing spends most of its time here, and the chain's
    four generators and whoosh's stem cache (a Python LRU) cost several times the work."""

    def __eq__(self, other: object) -> bool:
        return self.__class__ is other.__class__

    def __hash__(self) -> int:
        return hash(self.__class__)

    def has_morph(self) -> bool:
        return True

    def __call__(
        self,
        value: str,
        no_morph: bool = False,
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
        stems = _STEMS
        if len(stems) > _STEMS_MAX:
            stems.clear()
        if not tokenize:  # the whole value is one token, kept as the original too
            runs: Iterable[tuple[str, int]] = ((value, 0),)
            keeporiginal = True
        else:
            runs = _runs(value)
        pos = start_pos
        for text, at in runs:
            t.boost = 1.0
            t.stopped = False
            if keeporiginal:
                t.original = text
            if positions:
                t.pos = pos
            if chars:
                t.startchar = start_char + at
                t.endchar = t.startchar + len(text)
            pos += 1
            low = text.lower()
            if (len(low) > 1 and low not in STOP_WORDS) or (
                low and ord(low[0]) >= _CJK_LOWEST and _cjk(low[0])
            ):
                if no_morph:
                    t.text = low
                else:
                    found = stems.get(low)
                    if found is None:
                        found = stems[low] = stem(low)
                    t.text = found
                yield t
            elif not removestops:
                t.text = low
                t.stopped = True
                yield t


def _runs(value: str) -> Iterator[tuple[str, int]]:
    """`_BigramTokenizer`'s pieces of `value`, each with its offset."""
    for match in _token_matches(value):
        run = match.group(0)
        if match.group("cjk") and len(run) > 1:
            start = match.start()
            for i in range(len(run) - 1):
                yield run[i : i + 2], start + i
        else:
            yield run, match.start()


def tokens(text: str) -> list[str]:
    """The index terms of `text`, in order (for queries and explain output)."""
    # One analyzer for the process, so its stemming cache carries from one query to the
    # next; the cache evicts without a lock of its own.
    with _TOKENS_LOCK:
        return [t.text for t in _analyzer()(text)]


_TOKENS_LOCK = threading.Lock()


@functools.cache
def _analyzer() -> Any:
    return analyzer()


def _schema(vectors: bool = True) -> Schema:
    """The index's fields; `vectors`: each document's `text` terms and frequencies too, which
    only pseudo-relevance feedback reads (and which cost about a tenth of indexing)."""
    text = analyzer()
    return Schema(
        path=ID(stored=True, unique=True),
        name=ID(stored=True),
        text=TEXT(analyzer=text, vector=formats.Frequency() if vectors else None),
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
        kind=ID(stored=True),
        source=ID(stored=True),
    )


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
    weights = dict(TEXT_WEIGHTS)
    if _repeats(memory.description, memory.body):
        weights["description"] = 0
    text = "\n".join(value for key, value in parts.items() for _ in range(weights[key]))
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
        "expires": expiry(memory),
        "links": ",".join(links),
    }


_LOWER_WORD = re.compile(r"[^\W_]+")


def _repeats(description: str, body: str) -> bool:
    """Whether `description` only repeats the body's words (`REPEAT_SHARE` of its own)."""
    words = _LOWER_WORD.findall(description.lower())
    if not words:
        return False
    held = set(_LOWER_WORD.findall(body.lower()))
    said = set(words)
    if words[-1] not in held and any(w.startswith(words[-1]) for w in held):
        said.discard(words[-1])  # the last word cut short ("maxmem" of "maxmemory")
        held.add(words[-1])
        said.add(words[-1])
    return len(said & held) >= REPEAT_SHARE * len(said)


DOC = "doc"
"""The `type`, `status` and `kind` of a project document's section in the index: it is read, not
reviewed knowledge, so it is never shown as a memory's status."""
DOC_PREFIX = "doc:"
"""Index paths of document sections start so; memory paths are `<type>/<name>.md`."""


@dataclass(frozen=True, slots=True)
class DocSection:
    """One section of a project document, to index: its file (relative to the repository's
    top), heading, fragment and text."""

    path: str
    heading: str
    anchor: str
    text: str


def _doc_document(section: DocSection, number: int, updated: str) -> dict[str, str]:
    heading = section.heading
    text = "\n".join([heading, heading, section.text])  # a heading weighs as a description
    return {
        "path": f"{DOC_PREFIX}{section.path}#{number}",
        "name": f"{section.path}#{section.anchor}",
        "name_text": "",
        "description": heading,
        "tags_text": "",
        "text": text,
        "tags": "",
        "type": DOC,
        "status": DOC,
        "owner": "",
        "scope": "",
        "created": updated,
        "updated": updated,
        "expires": "",
        "links": "",
        "kind": DOC,
        "source": f"{DOC_PREFIX}{section.path}",
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
    """Keep only the leading whole results that fit in about this many tokens."""
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


def _restamped(
    files: Manifest, changed: Iterable[str], disk: dict[str, Stamp], digest: Digest
) -> dict[str, Stamp]:
    """Of the files whose stamps moved, those whose content did not (a store copied, moved or
    restored: new inodes and times, the same bytes), with their new stamps. Indexing them
    again cost a parse and a document each (seconds for a store of thousands) and left every
    old document deleted in its segment for good."""
    found: dict[str, Stamp] = {}
    for path in changed:
        before, known = files.stamps.get(path), files.digests.get(path)
        stamp = disk[path]
        if before is None or not known or before[1] != stamp[1]:
            continue  # new, unreadable when indexed, or of another size: changed
        if digest(path) == known:
            found[path] = stamp
    return found


def _suspects(
    files: Manifest, disk: dict[str, Stamp], digest: Digest, verify: AbstractSet[str]
) -> tuple[list[str], list[str]]:
    """Files whose stamps match `disk` but whose content must be compared (racy ones, and
    those in `verify`): (those whose content changed, racy ones now settled)."""
    changed: list[str] = []
    settled: list[str] = []
    now = time.time_ns()
    for path in sorted(files.racy | verify):
        stamp = disk.get(path)
        if stamp is None or files.stamps.get(path) != stamp:
            continue  # gone or re-stamped: re-indexed anyway
        if digest(path) != files.digests.get(path):
            changed.append(path)
        elif path in files.racy and stamp[0] + racy_window(stamp[0]) <= now:
            settled.append(path)
    return changed, settled


class Index:
    """The index in `directory`, with a manifest of the file stamps it reflects.

    `lock` is a context manager factory that orders writers across processes; every write to
    the index and the manifest happens under it, between a DIRTY marker's creation and removal.
    """

    def __init__(
        self,
        directory: Path,
        lock: Callable[[], AbstractContextManager[None]],
        vectors: bool = True,
    ):
        self.dir = directory
        self.vectors = vectors
        """Whether documents keep their term vectors, for feedback (see `_schema`)."""
        self.manifest_path = directory / manifest.FILE
        self.docs_path = directory / "docs.json"
        """The project documents the index holds: each file's stamp (see `sync_docs`)."""
        self.dirty_path = directory / "DIRTY"
        self._lock = lock
        self._mutex = threading.RLock()
        self._searcher: Searcher | None = None
        self._current_at = -1
        """The index folder's modification time when the searcher was last found current
        (-1: never): while it stays, and is older than a clock tick, no commit came since
        and the searcher needs no look at the tables of contents (a folder listing)."""
        self._cache = _Cache()
        """What the current searcher has worked out, replaced with it (keeping what its
        segments hold)."""
        self._seen: Manifest | None = None
        """The manifest as this process last wrote or read it: files that still have these
        stamps need no look at the manifest (a JSON file as long as the store)."""
        self._seen_stamp: tuple[int, int, int, int] | None = None
        """The manifest file's stamp then: an unchanged file need not be read again."""

    # -- state on disk --

    def _read_manifest(self) -> Manifest | None:
        """The manifest on disk, as a copy the caller may change; None if it is unreadable
        (the index is then rebuilt)."""
        try:
            stamp = _file_stamp(self.manifest_path.stat())
        except OSError:
            return None
        if self._seen is not None and stamp == self._seen_stamp:
            return self._seen.copy()  # the file this process last wrote or read
        files = manifest.read(self.manifest_path)
        if files is None:
            return None
        self._seen, self._seen_stamp = files, stamp
        return files.copy()

    def _write_manifest(self, files: Manifest) -> None:
        manifest.write(self.manifest_path, files)
        # Written under the index lock: no other process replaces it before this stat.
        self._seen, self._seen_stamp = files.copy(), _file_stamp(self.manifest_path.stat())

    def _usable(self) -> bool:
        return not self.dirty_path.exists() and _exists(self.dir)

    def close(self) -> None:
        """Release the open searcher, if any."""
        with self._mutex:
            self._drop_searcher()

    def _unavailable(self, e: Exception) -> IndexUnavailable:
        return IndexUnavailable(
            f"the search index at {self.dir} could not be read ({e}); run `memstore reindex`"
        )

    def _drop_searcher(self) -> None:
        """Forget the searcher; closing it may find its readers closed already (see
        `_OPEN_ERRORS`), which is what closing wants anyway."""
        searcher, self._searcher = self._searcher, None
        self._current_at = -1
        if searcher is not None:
            try:
                searcher.close()
            except _OPEN_ERRORS as e:
                log.debug("closing a searcher whose readers were closed: %s", e)

    # -- writing --

    def _open_for_write(self) -> Any:
        self.dir.mkdir(parents=True, exist_ok=True)
        if _exists(self.dir):
            try:
                ix = windex.open_dir(str(self.dir))
                if ix.schema == _schema(self.vectors):
                    return ix
            except _OPEN_ERRORS as e:
                log.warning(
                    "search index at %s is unreadable (%s); rebuilding it", self.dir, str(e)
                )
        return windex.create_in(str(self.dir), _schema(self.vectors))

    def _apply(
        self,
        files: Manifest,
        updates: list[tuple[str, Memory | None, Stamp, str]],
        removed: list[str],
        clear: bool = False,
        settled: Iterable[str] = (),
        restamped: Mapping[str, Stamp] | None = None,
    ) -> None:
        """Write documents and the manifest between the DIRTY marker's creation and removal.
        `settled` racy files and `restamped` ones (their new stamps) change no document."""
        settled = set(settled)
        files.racy -= settled
        now = time.time_ns()
        for path, stamp in (restamped or {}).items():
            files.stamps[path] = stamp
            if stamp[0] + racy_window(stamp[0]) > now:
                files.racy.add(path)
            else:
                files.racy.discard(path)
        if not updates and not removed and not clear:
            self._write_manifest(files)  # no document changes
            return
        self.dirty_path.parent.mkdir(parents=True, exist_ok=True)
        self.dirty_path.touch()
        ix = self._open_for_write()
        writer = ix.writer(limitmb=128)
        try:
            if not clear:
                _delete(writer, "path", [*removed, *(path for path, *_ in updates)])
            for path in removed:
                files.stamps.pop(path, None)
                files.digests.pop(path, None)
                files.racy.discard(path)
                files.fields.pop(path, None)
            now = time.time_ns()
            for path, memory, stamp, digest in updates:
                if memory is not None:
                    writer.add_document(**_document(path, memory))
                    files.fields[path] = (
                        memory.name,
                        memory.type,
                        memory.status,
                        memory.description,
                        expiry(memory),
                    )
                else:
                    files.fields.pop(path, None)
                files.stamps[path], files.digests[path] = stamp, digest
                if stamp[0] + racy_window(stamp[0]) > now:
                    files.racy.add(path)
                else:
                    files.racy.discard(path)
        except BaseException:
            writer.cancel()
            raise
        if clear:
            writer.commit(mergetype=CLEAR)
            self.docs_path.unlink(missing_ok=True)  # the documents went with it
        else:
            writer.commit()
        self._write_manifest(files)
        self.dirty_path.unlink()

    def update(self, entries: list[tuple[str, Memory, Stamp, str]]) -> bool:
        """Index these memories (store-relative path, memory, file stamp, content digest) in
        place of old ones.

        Does nothing and returns False when the index is not built yet or not trustworthy:
        the next `sync` builds it from the files.
        """
        with self._mutex, self._lock():
            files = self._read_manifest()
            if files is None or not self._usable():
                return False
            self._apply(files, [(p, m, s, d) for p, m, s, d in entries], [])
            return True

    def remove(self, paths: list[str]) -> bool:
        """Drop the documents of these store-relative paths; False if the index is not built."""
        with self._mutex, self._lock():
            files = self._read_manifest()
            if files is None or not self._usable():
                return False
            self._apply(files, [], paths)
            return True

    def sync(
        self, disk: dict[str, Stamp], load: Loader, digest: Digest, progress: Progress | None = None
    ) -> Sync:
        """Catch up with the files: re-index those added, changed, renamed or deleted.

        `disk` maps every memory file (store-relative path) to its stamp; a file whose stamp
        was taken within RACY_NS of its indexing also has its content compared (`digest`). A
        missing, foreign or half-written (DIRTY) index is rebuilt instead.
        """
        result = self._sync(disk, load, digest, None, frozenset())
        if result is not None:
            return result
        if self.dirty_path.exists():
            log.warning("search index at %s was left half-written; rebuilding", self.dir)
        return self.rebuild(disk, load, digest, progress)

    def sync_some(
        self,
        disk: dict[str, Stamp],
        within: Callable[[str], bool],
        load: Loader,
        digest: Digest,
        verify: AbstractSet[str] = frozenset(),
    ) -> Sync | None:
        """`sync` for the files whose paths `within` accepts (a folder, a few paths): `disk`
        holds just those, and the index keeps its other files as they are. The content of the
        files in `verify` (seen to change) is compared even when their stamps match.

        Returns None, changing nothing, when the index must be rebuilt from every file.
        """
        return self._sync(disk, load, digest, within, verify)

    def _sync(
        self,
        disk: dict[str, Stamp],
        load: Loader,
        digest: Digest,
        within: Callable[[str], bool] | None,
        verify: AbstractSet[str],
    ) -> Sync | None:
        seen = self._seen
        if seen is not None:
            current = not self.dirty_path.exists() and self.manifest_path.exists()
        else:  # this process's first look: the manifest, without the lock
            seen = self._read_manifest()
            current = seen is not None and self._usable()
        if seen is not None and current:
            stamps = seen.stamps
            if within is not None:
                stamps = {p: s for p, s in stamps.items() if within(p)}
            if stamps == disk and _suspects(seen, disk, digest, verify) == ([], []):
                return Sync()
        with self._mutex, self._lock():
            files = self._read_manifest()
            if files is None or not self._usable():
                return None
            stamps = files.stamps
            changed = [p for p, s in disk.items() if stamps.get(p) != s]
            gone = [p for p in stamps if p not in disk and (within is None or within(p))]
            restamped = _restamped(files, changed, disk, digest)
            changed = [p for p in changed if p not in restamped]
            reread, settled = _suspects(files, disk, digest, verify)
            changed.extend(reread)
            if not changed and not gone and not settled and not restamped:
                return Sync()
            updates, skipped = self._load_all(changed, disk, load, digest, None)
            self._apply(files, updates, gone, settled=settled, restamped=restamped)
            indexed = sum(1 for _, m, _, _ in updates if m is not None)
            return Sync(indexed=indexed, removed=len(gone), skipped=skipped)

    def sync_docs(
        self, disk: dict[str, Stamp], load: Callable[[str], list[DocSection]]
    ) -> Sync | None:
        """Catch the project documents up with `disk` (each file, relative to the repository's
        top, and its stamp): a changed file's sections are replaced, a gone file's dropped.
        `load` reads a file's sections. Returns None, changing nothing, when the index is not
        built yet (a memory catch-up builds it first).
        """
        if (self._read_docs() or {}) == disk and self._usable():
            return Sync()
        with self._mutex, self._lock():
            if self._read_manifest() is None or not self._usable():
                return None
            stamps = self._read_docs() or {}
            changed = sorted(p for p, s in disk.items() if stamps.get(p) != s)
            gone = sorted(p for p in stamps if p not in disk)
            if not changed and not gone:
                return Sync()
            self.dirty_path.touch()
            writer = self._open_for_write().writer(limitmb=128)
            now = time.time_ns()
            try:
                _delete(writer, "source", [f"{DOC_PREFIX}{path}" for path in [*gone, *changed]])
                for path in [*gone, *changed]:
                    stamps.pop(path, None)
                for path in changed:
                    stamp = disk[path]
                    updated = datetime.fromtimestamp(stamp[0] / 1e9, UTC)
                    at = updated.strftime("%Y-%m-%dT%H:%M:%SZ")
                    for number, section in enumerate(load(path)):
                        writer.add_document(**_doc_document(section, number, at))
                    # Read within its timestamp's tick, a file may change again unseen: its
                    # stamp is not kept, so the next look reads it once more.
                    stamps[path] = stamp if stamp[0] + racy_window(stamp[0]) <= now else (0, 0, 0)
            except BaseException:
                writer.cancel()
                raise
            writer.commit()
            tmp = self.dir / f".docs.{os.getpid()}.{threading.get_ident()}.tmp"
            tmp.write_text(json.dumps(stamps, separators=(",", ":")), encoding="utf-8")
            os.replace(tmp, self.docs_path)
            self.dirty_path.unlink()
            return Sync(indexed=len(changed), removed=len(gone))

    def _read_docs(self) -> dict[str, Stamp] | None:
        """The documents' stamps on disk; None when there are none (not indexed yet)."""
        try:
            data: Any = json.loads(self.docs_path.read_text(encoding="utf-8"))
            return {str(p): (int(s[0]), int(s[1]), int(s[2])) for p, s in data.items()}
        except (OSError, ValueError, LookupError, TypeError, AttributeError):
            return None

    def rebuild(
        self,
        disk: dict[str, Stamp],
        load: Loader,
        digest: Digest,
        progress: Progress | None = None,
    ) -> Sync:
        """Index every file afresh (readers keep the old index until the new one is committed)."""
        with self._mutex, self._lock():
            return self._rebuild(disk, load, digest, progress)

    def _rebuild(
        self, disk: dict[str, Stamp], load: Loader, digest: Digest, progress: Progress | None
    ) -> Sync:
        updates, skipped = self._load_all(sorted(disk), disk, load, digest, progress)
        self._apply(Manifest({}, {}, set(), {}), updates, [], clear=True)
        indexed = sum(1 for _, m, _, _ in updates if m is not None)
        return Sync(rebuilt=True, indexed=indexed, skipped=skipped)

    def _load_all(
        self,
        paths: list[str],
        disk: dict[str, Stamp],
        load: Loader,
        digest: Digest,
        progress: Progress | None,
    ) -> tuple[list[tuple[str, Memory | None, Stamp, str]], tuple[str, ...]]:
        updates: list[tuple[str, Memory | None, Stamp, str]] = []
        skipped: list[str] = []
        total = len(paths)
        for done, path in enumerate(paths, 1):
            try:
                memory, stamp, content = load(path)
            except (InvalidMemory, OSError) as e:
                log.warning("not indexing %s: %s", path, e)
                skipped.append(path)
                # Remembered as seen, so the file is not retried until it changes.
                memory, stamp, content = None, disk[path], digest(path)
            updates.append((path, memory, stamp, content))
            if progress is not None and (done % 500 == 0 or done == total):
                progress(done, total)
        return updates, tuple(skipped)

    # -- reading --

    def _current_searcher(self) -> Searcher:
        """A searcher on the latest committed index, reopened when another writer committed."""
        last: Exception | None = None
        for _ in range(20):
            try:
                folder = _folder_time(self.dir)
                if self._searcher is None:
                    ix = windex.open_dir(str(self.dir))
                    self._searcher = ix.searcher(weighting=_weighting())
                    self._cache = _Cache(self._searcher, self._cache.segments)
                elif (
                    0 <= folder == self._current_at
                    and folder + racy_window(folder) < time.time_ns()
                ):
                    pass  # no commit since the last look: it would have added a file
                elif not self._searcher.up_to_date():
                    self._searcher = self._searcher.refresh()
                    self._cache = _Cache(self._searcher, self._cache.segments)
                # Taken before the look, so a commit during it moves the time past this one.
                self._current_at = folder
                return self._searcher
            except _OPEN_ERRORS as e:
                # A concurrent commit can remove a segment between reading the table of
                # contents and opening it; the next attempt sees the new generation.
                last = e
                self._drop_searcher()
        raise IndexUnavailable(
            f"the search index at {self.dir} cannot be opened ({last}); run `memstore reindex`"
        )

    def count(self, field: str, value: str) -> int:
        """How many indexed memories hold `value` in `field` (e.g. status, draft): documents
        counted from the filter cache, with no ranking and no stored field read."""
        with self._mutex:
            if self._searcher is None and not _exists(self.dir):
                return 0
            for attempt in range(3):
                searcher = self._current_searcher()
                try:
                    cache = self._cache
                    found = cache.docset(searcher, Term(field, value))
                    return len(found) - sum(
                        1
                        for _, start, _, deleted in cache.leaves
                        for d in deleted
                        if start + d in found
                    )
                except _OPEN_ERRORS as e:
                    if attempt == 2:
                        raise self._unavailable(e) from e
                    self.close()
        return 0

    def expired_count(self, today: str | None = None) -> int:
        """How many indexed memories are past their `expires` date (deprecated ones too)."""
        today = today or datetime.now(UTC).strftime("%Y-%m-%d")
        with self._mutex:
            if self._searcher is None and not _exists(self.dir):
                return 0
            searcher = self._current_searcher()
            return len(self._cache.docset(searcher, TermRange("expires", "0", today, endexcl=True)))

    def state(self) -> object:
        """The manifest file's stamp (None without one): unchanged, so is what it lists."""
        try:
            return _file_stamp(self.manifest_path.stat())
        except OSError:
            return None

    def files(self) -> tuple[object, dict[str, str]] | None:
        """The manifest's state (its file's stamp) and each indexed memory's content digest by
        store-relative path, as last committed; None when there is no usable index."""
        with self._mutex:
            files = self._read_manifest()
            if files is None:
                return None
            return self._seen_stamp, files.digests

    def search(
        self, query: Query, today: str | None = None, dense: Dense | None = None
    ) -> list[Hit]:
        """The best `query.size` memories for `query.text` that pass every filter, best first.

        Deprecated and expired memories are left out unless `include_deprecated` (or
        `status="deprecated"`). With `graph`, memories linked to the text matches (1-2 hops)
        join with decaying scores. With `max_tokens`, only the leading whole hits that fit.
        `dense` adds semantic recall's list to the fusion, for a query of plain words.

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
                    hits = self._ranked(searcher, text, filters, hidden, query, today, dense)
                    break
                except QueryError as e:
                    raise InvalidQuery(f"cannot search {query.text!r}: {e}") from e
                except _OPEN_ERRORS as e:
                    # A segment removed by another process's commit under a searcher that had
                    # not opened it yet: reopen on the new generation and run the query again.
                    if attempt == 2:
                        raise self._unavailable(e) from e
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
        dense: Dense | None = None,
    ) -> list[Hit]:
        cache = self._cache
        allowed = cache.docset(searcher, And(filters)) if filters else None
        if allowed is not None and not allowed:
            return []  # Whoosh reads an empty filter as no filter at all
        ranked = _Ranker(
            searcher,
            cache,
            filter=allowed,
            mask=cache.docset(searcher, Or(hidden)) if hidden else None,
            today=today,
            explain=query.explain,
            dense=dense,
        )
        # With graph, every candidate's name counts: a memory already found by its text is
        # not offered again as a neighbour.
        hits = ranked.text_hits(
            text,
            query.size,
            every_candidate=query.graph,
            words=_plain_terms(query.text, text) if query.feedback else (),
        )
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
    # Whoosh's reader refresh, retried after a concurrent commit removed a segment, closes the
    # old readers it did not reuse a second time and raises this: reopen from scratch.
    ReaderClosed,
)


def _delete(writer: Any, field: str, values: Iterable[str]) -> None:
    """Delete the committed documents whose `field` holds one of `values`, through one
    searcher: Whoosh's `update_document` and `delete_by_term` each open a reader on every
    segment, per document."""
    values = list(values)
    if not values:
        return
    with writer.searcher() as searcher:
        for value in values:
            writer.delete_by_term(field, value, searcher=searcher)


def _file_stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    # A replaced file has a new inode (the old one was still in place when it was written)
    # and, a clock tick later, new times.
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


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


BM25_B = 0.4
BM25_K1 = 0.9
"""BM25's length normalisation and term-frequency saturation, chosen on the tuning part of
LoCoMo (docs/benchmarks.md): memories are short, and a word said twice is not twice as
relevant."""


def _weighting() -> Any:
    return scoring.BM25F(B=BM25_B, K1=BM25_K1)


@functools.cache
def _parser() -> Any:
    # Imported on first use: plain words, nearly every query, never need the parser, and a
    # one-shot `memstore search` need not pay for loading it.
    from whoosh.qparser import OrGroup, QueryParser

    group: Any = OrGroup
    return QueryParser("text", _schema(), group=group)


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
        terms = [Term("text", t) for t in dict.fromkeys(tokens(fusion.content_words(cleaned)))]
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


def _plain_terms(text: str, q: Any) -> list[str]:
    """The index terms of the parsed query `q` when `text` is plain words (no syntax), in
    order; else none."""
    cleaned = _clean_query(text)
    if q is None or not cleaned or cleaned == "*" or _SYNTAX.search(cleaned):
        return []
    parts = q.subqueries if isinstance(q, Or) else [q]
    return [str(p.text) for p in parts if isinstance(p, Term)]


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


def _parts(q: Any) -> Iterator[Any]:
    yield q
    for child in q.children():
        yield from _parts(child)


_SCHEMA_POSITIONS = {
    name: bool(field.format and field.format.supports("positions"))
    for name, field in _schema().items()
}
"""Which fields can match a phrase."""


POSTINGS_CACHE_MAX = 2_000_000
"""How many postings of looked-up words an index keeps in memory (8 bytes each)."""
STORED_CACHE_MAX = 20_000
"""How many documents' stored fields an index keeps in memory."""


class _Segment:
    """What a segment holds, once read: a segment never changes once written (only which of
    its documents are deleted), so this is kept from one index generation to the next."""

    def __init__(self, reader: Any) -> None:
        count = reader.doc_count_all()
        self.lengths: list[int] = [reader.doc_field_length(d, "text", 0) or 0 for d in range(count)]
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


class _Cache:
    """One searcher's (one index generation's) view for the queries that follow: where each
    segment's documents start, filter document sets, each looked-up word's BM25F scores."""

    def __init__(self, searcher: Searcher | None = None, kept: dict[str, _Segment] | None = None):
        self.segments: dict[str, _Segment] = {}
        """The segments of this generation, by id (those of the last one carried over)."""
        self.leaves: list[tuple[Any, int, _Segment, AbstractSet[int]]] = []
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
            segment = self.segments[key] = kept.get(key) or _Segment(reader)
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
            for sub, start, segment, _ in self.leaves:
                local = segment.docsets.get(key)
                if local is None:
                    if len(segment.docsets) > 64:
                        segment.docsets.clear()
                    local = segment.docsets[key] = frozenset(sub.docs_for_query(q))
                found.update(start + d for d in local)
            self.docsets[key] = found
        return found

    def boosts(self, searcher: Searcher) -> dict[int, float]:
        """The status and type boost of each document that has one, multiplied as
        `_Ranker._hit` does."""
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
    while m.is_active():
        m._read_ids()
        m._read_weights()
        yield m._ids, m._weights
        m._next_block()


def _words(q: Any) -> list[str] | None:
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


class _Ranker:
    """One query's candidates and boosts, on one searcher."""

    def __init__(
        self,
        searcher: Searcher,
        cache: _Cache,
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
        plain = _words(q)
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
        matched = sorted({w for w in terms if _holds(self.cache.term(self.searcher, w)[0], docnum)})
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
        expansion = fusion.feedback_terms(
            top,
            lambda term: self.cache.idf(self.searcher, term),
            # The query's stop words as typed. A set of their stemmed forms used to join
            # them, but it held the analyzer's Token objects, which never equal a term: it
            # excluded nothing, and building it cost every process 3 ms.
            exclude={*words, *fusion.QUERY_STOP_WORDS},
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
        held = sum(_holds(self.cache.term(self.searcher, t)[0], top) for t in terms)
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
        return not all(_holds(self.cache.term(self.searcher, t)[0], top) for t in terms)

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
        total = dict(zip(*postings[0], strict=True))
        for ids, scores in postings[1:]:
            get = total.get
            for docnum, score in zip(ids, scores, strict=True):
                total[docnum] = get(docnum, 0.0) + score
        allowed, hidden = self.filter, self.mask
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


def _holds(ids: array[int], docnum: int) -> bool:
    i = bisect.bisect_left(ids, docnum)
    return i < len(ids) and ids[i] == docnum


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
