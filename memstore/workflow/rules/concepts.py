"""What an action says it does: its words analysed as search analyses them, and the action
concepts (publish, deploy, delete, …) that the synonym phrases of the word tables find in them.

Pure functions over text; `rules` matches `applies_when` patterns with them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from memstore.search.analysis import index_terms
from memstore.workflow.rules.shell import is_shell
from memstore.workflow.rules.words import Words, table

PHRASE_GAP = 2
"""How many other words may stand between a phrase's words (`roll the new build out`)."""

# An identifier such as `drop_shipping` or `users.drop_date`, a file name such as
# `delete_user.py`, an option's value: names, not words of the action. Search splits them
# into words; concepts must not read them as verbs.
_NAME = re.compile(
    r"\S*\w/\S*|\S*/\w\S*|[\w.-]*\w_\w[\w.-]*|\b[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|md|txt|json|ya?ml|toml|cfg|ini|html|css|sql|sh|lock)\b"
)


# A script run as a command names its action: `./scripts/deploy_prod.sh` deploys.
_PROGRAM = re.compile(
    r"(^|&&|\|\||[;|\n]|\d[.)]\s|:\s|\b(?:sudo|bash|sh|zsh|python3?|node|ruby|perl|run|execute|exec)\s)"
    r"(\s*)"
    r"([\w.~/-]*/)?([\w-]+)\.(?:sh|py|rb|js|ts|pl|bash)\b"
)


def _program(m: re.Match[str]) -> str:
    return f"{m.group(1)}{m.group(2)}{m.group(4).replace('_', ' ')}"


@dataclass(frozen=True, slots=True)
class Analysis:
    """An action text: its search terms, and where each concept is expressed in them."""

    raw: str
    """The text lower-cased."""
    terms: tuple[str, ...]
    """Every search term of the text (identifiers split, as the index splits them)."""
    words: tuple[str, ...]
    """The terms of the text without identifiers, paths, file names and numbers: the words
    that say what the action does."""
    concepts: dict[str, tuple[int, ...]]
    """Concept → positions in `words` where one of its phrases starts."""

    def has(self, concept: str) -> bool:
        """Whether the action expresses `concept` (a concept of the word tables)."""
        return concept in self.concepts


@functools.cache
def _phrases(t: Words) -> dict[str, tuple[tuple[str, ...], ...]]:
    return {c: tuple(tuple(index_terms(p)) for p in ps) for c, ps in t.concepts.items()}


def _find(words: tuple[str, ...], phrase: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of each occurrence of `phrase` in `words`, gaps allowed."""
    found: list[tuple[int, int]] = []
    if not phrase:
        return found
    for start, w in enumerate(words):
        if w != phrase[0]:
            continue
        at, ok = start, True
        for p in phrase[1:]:
            window = words[at + 1 : at + 2 + PHRASE_GAP]
            if p not in window:
                ok = False
                break
            at = at + 1 + window.index(p)
        if ok:
            found.append((start, at))
    return found


TYPO_MIN = 6
"""Shortest word read as a slip of a synonym word, and shortest synonym word with slips read:
shorter words have too many real words one letter away (`evoke`/`revoke`, `drop`/`drip`)."""


@functools.cache
def _typos(t: Words) -> dict[str, str]:
    """Each one-letter slip of a long synonym word (a letter left out, two neighbours swapped)
    → the word: `publsh`, `migartion`, `prodution`, `destory`. Substitutions are left out:
    they turn words into other real words (`remote` → `remove`)."""
    words = {w for ps in t.concepts.values() for p in ps for w in p.split() if len(w) >= TYPO_MIN}
    out: dict[str, str] = {}
    for w in sorted(words):
        slips = {w[:i] + w[i + 1 :] for i in range(len(w))}
        slips |= {w[:i] + w[i + 1] + w[i] + w[i + 2 :] for i in range(len(w) - 1)}
        for slip in slips - words:
            if len(slip) >= TYPO_MIN:  # `evoke`, `crate`, `rates` are words of their own
                out.setdefault(slip, w)
    return out


def _untypo(raw: str, t: Words) -> str:
    typos = _typos(t)
    return re.sub(r"[a-z]{6,}", lambda m: typos.get(m.group(0), m.group(0)), raw)


_PARTICLE = re.compile(
    r"\b(tear|roll|wipe|shut|take|blow|throw|clean|empty|get|put|push|rip|flip|switch|cut)\s+"
    r"((?:(?!down|out|away|off|up|over)[\w'.-]+\s+){1,5}?)(down|out|away|off|over)\b"
)
"""A phrasal verb with its object in the middle, put back together: "tear the staging and
prod environments down" is "tear down the staging and prod environments". (One word in the
middle is already within a phrase's gap.)"""


def _english(raw: str, t: Words) -> str:
    """Action words of a few other languages read as their English words (docs/workflow.md):
    "supprime la base de données clients en prod" deletes a database."""
    if raw.isascii() and not t.foreign_hint.search(raw):
        return raw
    for pattern, english in t.foreign:
        raw = pattern.sub(english, raw)
    return raw


def analyse(text: str) -> Analysis:
    """The search terms, action words and concepts of an action text or a pattern."""
    return _analyse(text, table())


@functools.lru_cache(maxsize=4096)
def _analyse(text: str, t: Words) -> Analysis:
    raw = _PARTICLE.sub(r"\1 \3 \2", _english(_untypo(text.lower(), t), t))
    # Numbers (versions, ids) say nothing about the action: "get 2.3.0 out" is "get out".
    words = tuple(
        w for w in index_terms(_NAME.sub(" ", _PROGRAM.sub(_program, raw))) if not w.isdigit()
    )
    concepts: dict[str, tuple[int, ...]] = {}
    present = set(words)
    shell = is_shell(raw)
    for concept, phrases in _phrases(t).items():
        starts = sorted(
            {
                s
                for p in phrases
                if p and p[0] in present
                for s, e in _find(words, p)
                if concept in t.nouns
                or (not _names_document(words, e, s, t) and not _looked_at(words, s, t, shell))
            }
        )
        if starts:
            concepts[concept] = tuple(starts)
    for concept, command in t.commands:
        if command.search(raw) and concept not in concepts:
            concepts[concept] = ()
    return Analysis(raw=raw, terms=tuple(index_terms(raw)), words=words, concepts=concepts)


def _names_document(words: tuple[str, ...], end: int, start: int | None, t: Words) -> bool:
    """Whether the words after a concept phrase ending at `end` name a document ("release
    notes", "the deploy logs"); a document noun before a noun that holds data is a modifier
    ("wipe the test database", "drop the log tables")."""
    if words[end + 1 : end + 2] and words[end + 1] in _noun_words(t):
        end += 1  # "the rotate-credentials runbook", "the deploy-prod script"
    terms = t.terms
    if (
        start is not None
        and words[end + 1 : end + 2]
        and words[end + 1] in terms["runnable"]
        and set(words[max(0, start - 3) : start]) & terms["run_words"]
    ):
        return False  # "executing the migration script against prod" runs a migration
    return (
        end + 1 < len(words)
        and words[end + 1] in terms["doc_nouns"]
        and not set(words[end + 2 : end + 3])
        & (terms["data"] | terms["infra_objects"] | terms["kube_objects"])
    )


@functools.cache
def _noun_words(t: Words) -> frozenset[str]:
    """The one-word phrases of the noun concepts (credential, production, registry)."""
    return frozenset(p[0] for c in t.nouns for p in _phrases(t)[c] if len(p) == 1)


def _looked_at(words: tuple[str, ...], start: int, t: Words, shell: bool = True) -> bool:
    """Whether a meta verb comes right before the concept phrase starting at `start`, a
    possessive or demonstrative between them allowed: "review my migration". In English,
    "get" before a verb is a passive ("the table gets truncated"), not a look."""
    i = start - 1
    while i >= 0 and words[i] in t.words["possessives"]:
        i -= 1
    if i >= 0 and words[i] == "get" and not shell:
        return False
    return i >= 0 and words[i] in t.terms["meta_verbs"]


def units(pattern: str) -> tuple[frozenset[str], ...]:
    """What an `applies_when` phrase asks for, one set of alternatives per word: a word that a
    synonym phrase covers asks for its concepts (`@publish`), any other word for itself.
    A name in the pattern (`drop_shipping`, `db/seed.sql`) asks for its own words."""
    return _units(pattern, table())


@functools.lru_cache(maxsize=4096)
def _units(pattern: str, t: Words) -> tuple[frozenset[str], ...]:
    a = analyse(pattern)
    covered: list[set[str]] = [set() for _ in a.words]
    present = set(a.words)
    for concept, phrases in _phrases(t).items():
        for phrase in phrases:
            if not phrase or phrase[0] not in present:
                continue  # `_find` finds none: most phrases, for a pattern of a few words
            for start, end in _find(a.words, phrase):
                for i in range(start, end + 1):
                    if a.words[i] in phrase:
                        covered[i].add(f"@{concept}")
    wanted = [frozenset(c or {w}) for w, c in zip(a.words, covered, strict=True)]
    wanted += [frozenset({term}) for term in a.terms if term not in a.words]
    return tuple(dict.fromkeys(wanted))


def features(text: str) -> frozenset[str]:
    """What an action offers to a pattern: its search terms and `@concept` for each concept."""
    a = analyse(text)
    return frozenset(a.terms) | {f"@{c}" for c in a.concepts}


def meets(pattern: str, text: str, offered: frozenset[str] | None = None) -> bool:
    """Whether every word of `pattern` appears in `text`, itself or as a synonym (`offered`:
    the text's `features`, when read already)."""
    wanted = units(pattern)
    have = features(text) if offered is None else offered
    return bool(wanted) and all(u & have for u in wanted)


def loose_features(text: str) -> frozenset[str]:
    """What a task described in a sentence offers `overlaps`: its concepts and its words of
    three letters or more that are not numbers."""
    return frozenset(
        f for f in features(text) if f.startswith("@") or (len(f) >= 3 and not f.isdigit())
    )


_BROAD = frozenset({"@production", "@registry"})
"""Concepts too broad for a pattern to overlap a task by alone."""


def overlaps(pattern: str, text: str, loose: frozenset[str] | None = None) -> bool:
    """Whether some word of `pattern` (itself or a synonym) appears in `text`: looser than
    `meets`, for a task described in a sentence (`loose`: its `loose_features`, when read
    already)."""
    have = loose_features(text) if loose is None else loose
    return any(u & have for u in units(pattern) if not u <= _BROAD)
