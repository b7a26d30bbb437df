"""Text analysis: the one analyzer (words of letters and digits, CJK runs as bigrams, Latin
stop words out, stemmed) that the index, queries and rule matching share, and which words of a
question carry its content. Loads Whoosh's analysis only, none of the rest of search."""

# Whoosh ships no type information; the unknown-type reports would flag every call into it.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingTypeStubs=false
# pyright: reportUnknownParameterType=false, reportMissingParameterType=false
# pyright: reportUnknownLambdaType=false

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from memstore.search.stubs import without_unused_modules

with without_unused_modules():
    from whoosh.analysis import Analyzer, Filter, LowercaseFilter, StemFilter, Token, Tokenizer
    from whoosh.analysis.filters import STOP_WORDS
    from whoosh.lang import porter2

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
_ASCII_WORD_RE = re.compile(r"(?P<cjk>(?!))|(?P<word>[^\W_]+)")
"""`_word_re()` on ASCII text, where no character is of those scripts: the same matches."""


@functools.cache
def _word_re() -> re.Pattern[str]:
    """Runs of `_CJK` script, or words of letters and digits. Compiled on the first text that
    is not ASCII: expanding the ranges costs a process milliseconds it would spend on a query
    or a write of plain ASCII."""
    return re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")


def _word_matches(value: str) -> Iterator[re.Match[str]]:
    return (_ASCII_WORD_RE if value.isascii() else _word_re()).finditer(value)


_CJK_RANGES = tuple((ord(_CJK[i]), ord(_CJK[i + 2])) for i in range(0, len(_CJK), 3))
"""`_CJK`'s ranges as code points: a third regex over them would cost every process ~20 ms
to compile (`re` expands each range of a character class), for a one-character test."""
_CJK_LOWEST = min(low for low, _ in _CJK_RANGES)
"""Below it no character is of a script `_CJK` names (the quick test for most words)."""


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
        for match in _word_matches(value):
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
    one pass (the tests hold the two to the same terms)."""
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
    for match in _word_matches(value):
        run = match.group(0)
        if match.group("cjk") and len(run) > 1:
            start = match.start()
            for i in range(len(run) - 1):
                yield run[i : i + 2], start + i
        else:
            yield run, match.start()


_ASCII_RUN = re.compile(r"[^\W_]+")


def run_terms(value: str, memo: dict[str, str | None]) -> list[str | None]:
    """The index term of each of `value`'s runs as the analyzer makes them, None for a run it
    drops (a stop word, a one-letter word): a run's place in the list is its position. For a
    whole index written at once; `memo` keeps each lower-case run's term (or None) from one
    call to the next."""
    if value.isascii():  # no CJK run, and lower case is the same character by character
        words = _ASCII_RUN.findall(value.lower())
    else:
        words = [text.lower() for text, _ in _runs(value)]
    try:
        return [memo[w] for w in words]
    except KeyError:
        pass
    for low in words:
        if low not in memo:
            if (len(low) > 1 and low not in STOP_WORDS) or (
                low and ord(low[0]) >= _CJK_LOWEST and _cjk(low[0])
            ):
                memo[low] = stem(low)
            else:
                memo[low] = None
    return [memo[w] for w in words]


def index_terms(text: str) -> list[str]:
    """The index terms of `text` (its words as the analyzer makes them: lower case, stemmed,
    stop words out, CJK runs as bigrams), in order: for queries, explain and rule matching."""
    # One analyzer for the process, so its stemming cache carries from one query to the
    # next; the cache evicts without a lock of its own.
    with _TERMS_LOCK:
        return [t.text for t in _analyzer()(text)]


_TERMS_LOCK = threading.Lock()


@functools.cache
def _analyzer() -> Any:
    return analyzer()


# -- a question's content words --------------------------------------------------------------------

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
