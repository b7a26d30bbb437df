"""The word tables of action matching as data: `words.toml` beside this module, read once per
process and checked entry by entry, so that adding a synonym or a word is an edit of the file."""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Collection, Generator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from memstore.errors import InvalidWords
from memstore.search.analysis import index_terms

DEFAULT = Path(__file__).with_name("words.toml")
"""The tables memstore ships."""

PATTERNS = (
    *("shared_branches", "interpreter", "system", "all_of", "sql", "blank_out"),
    *("overwrite_remote", "overwrite_shared", "infra", "kube", "git_discard", "revoke"),
)
"""The regular expressions the guards read, by name: `[patterns]` holds these and no others."""
TERMS = (
    *("run_words", "runnable", "doc_nouns", "meta_verbs", "code_nouns", "everything", "data"),
    *("retire", "drop_verbs", "infra_objects", "destroy_verbs", "kube_objects", "push_shared"),
    *("remote", "discard", "unsaved", "work", "secrets", "revoke_verbs"),
)
"""The word lists read analysed as search analyses text: `[terms]` holds these and no others."""
WORDS = (
    *("possessives", "wrappers", "readers", "printers", "git_text", "temp_prefixes"),
    *("disposable", "programs", "words_too", "make_english", "help", "show_words", "subjects"),
    *("time_first", "irregular_past", "not_past", "before_verbs", "look_verbs", "edit_verbs"),
    *("written", "talk_only", "runs", "code_talk_before", "sql_calls", "api_actions", "pronouns"),
)
"""The word lists read as written: `[words]` holds these and no others."""
_SECTIONS = (
    *("nouns", "concepts", "commands", "foreign", "guards", "patterns", "terms", "words"),
    "read_subcommands",
)


@dataclass(frozen=True, slots=True, eq=False)
class Words:
    """The word tables, as the matcher reads them. Compared (and hashed) by identity, so that
    what is cached from one table is never served for another."""

    path: Path
    concepts: Mapping[str, tuple[str, ...]]
    """Concept → the phrases that express it, in the file's order."""
    nouns: frozenset[str]
    """The concepts that name a thing rather than an action (credential, production, …)."""
    commands: tuple[tuple[str, re.Pattern[str]], ...]
    """(concept, pattern): a text the pattern matches expresses the concept."""
    foreign_hint: re.Pattern[str]
    """A quick test: an ASCII text it does not match holds none of the `foreign` words."""
    foreign: tuple[tuple[re.Pattern[str], str], ...]
    """(pattern, English): words of other languages read as their English words."""
    guards: Mapping[str, str]
    """Guard name → the reason it gives, in the order reasons are listed."""
    patterns: Mapping[str, re.Pattern[str]]
    terms: Mapping[str, frozenset[str]]
    """Word lists analysed as search analyses text (stems)."""
    words: Mapping[str, frozenset[str]]
    """Word lists as written."""
    read_subcommands: Mapping[str, frozenset[str]]
    """Program → its subcommands that only show or compare."""


_ACTIVE: ContextVar[Words | None] = ContextVar("memstore_words", default=None)


def table() -> Words:
    """The word tables in use: those shipped, unless `using` names others.

    Raises:
        InvalidWords: when the file cannot be read or breaks its format.
    """
    return _ACTIVE.get() or load(DEFAULT)


@contextmanager
def using(path: Path) -> Generator[Words]:
    """Match actions with the tables of another file within the block (a copy being edited).

    Raises:
        InvalidWords: when the file cannot be read or breaks its format.
    """
    reset = _ACTIVE.set(load(path))
    try:
        yield table()
    finally:
        _ACTIVE.reset(reset)


@functools.cache
def load(path: Path) -> Words:
    """The word tables of a TOML file, each entry checked.

    Raises:
        InvalidWords: naming the file, the entry and what it may hold.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InvalidWords(f"{path}: cannot read the word tables: {e.strerror}") from e
    except tomllib.TOMLDecodeError as e:
        raise InvalidWords(f"{path}: not valid TOML: {e}") from e
    return _Reader(path).read(data)


class _Reader:
    """Reads one file's tables; every refusal names the file and the entry."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def error(self, where: str, problem: str) -> InvalidWords:
        return InvalidWords(f"{self.path}: {where} {problem}")

    def table(
        self, where: str, value: object, allowed: Collection[str] | None = None
    ) -> dict[str, object]:
        """A TOML table; with `allowed`, it holds those keys, all of them unless optional."""
        if not isinstance(value, dict):
            raise self.error(where, "must be a table")
        found = cast(dict[str, object], value)
        if allowed is not None:
            for key in found:
                if key not in allowed:
                    raise self.error(
                        f"{where}.{key}".lstrip("."),
                        f"is not a known key; {where or 'the file'} holds: {', '.join(allowed)}",
                    )
        return found

    def require(self, where: str, found: Mapping[str, object], keys: Collection[str]) -> None:
        for key in keys:
            if key not in found:
                name = f"{where}.{key}".lstrip(".")
                raise self.error(name, "is missing")

    def strings(self, where: str, value: object) -> tuple[str, ...]:
        """A list of non-blank strings (phrases, concept names)."""
        if not isinstance(value, list):
            raise self.error(where, "must be a list of strings")
        out: list[str] = []
        for i, item in enumerate(cast(list[object], value)):
            if not isinstance(item, str) or not item.strip():
                raise self.error(f"{where}[{i}]", f"must be a non-blank string, not {item!r}")
            out.append(item)
        return tuple(out)

    def text(self, where: str, value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.error(where, f"must be a non-blank string, not {value!r}")
        return value

    def word_list(self, where: str, value: object) -> frozenset[str]:
        if not isinstance(value, str):
            raise self.error(where, f"must be a string of words separated by spaces, not {value!r}")
        return frozenset(value.split())

    def pattern(self, where: str, value: object) -> re.Pattern[str]:
        """A regular expression: a string, or a list of strings read as one."""
        if isinstance(value, list):
            source = "".join(self.strings(where, cast(object, value)))
        elif isinstance(value, str):
            source = value
        else:
            raise self.error(where, "must be a regular expression: a string or a list of strings")
        try:
            return re.compile(source)
        except re.error as e:
            raise self.error(where, f"is not a regular expression: {e}") from e

    def concept(self, where: str, value: object, concepts: Collection[str]) -> str:
        name = self.text(where, value)
        if name not in concepts:
            raise self.error(
                where, f"names {name!r}, which is not a concept; concepts: {', '.join(concepts)}"
            )
        return name

    def read(self, data: dict[str, object]) -> Words:
        top = self.table("", data, _SECTIONS)
        self.require("", top, _SECTIONS)
        concepts = {
            name: self.phrases(f"concepts.{name}", entry)
            for name, entry in self.table("concepts", top["concepts"]).items()
        }
        nouns = frozenset(
            self.concept(f"nouns[{i}]", name, concepts)
            for i, name in enumerate(self.strings("nouns", top["nouns"]))
        )
        commands: list[tuple[str, re.Pattern[str]]] = []
        for i, entry in enumerate(self.entries("commands", top["commands"])):
            where = f"commands[{i}]"
            found = self.table(where, entry, ("concept", "pattern"))
            self.require(where, found, ("concept", "pattern"))
            commands.append(
                (
                    self.concept(f"{where}.concept", found["concept"], concepts),
                    self.pattern(f"{where}.pattern", found["pattern"]),
                )
            )
        foreign = self.table("foreign", top["foreign"], ("hint", "words"))
        self.require("foreign", foreign, ("hint", "words"))
        translations: list[tuple[re.Pattern[str], str]] = []
        for i, entry in enumerate(self.entries("foreign.words", foreign["words"])):
            where = f"foreign.words[{i}]"
            found = self.table(where, entry, ("pattern", "english"))
            self.require(where, found, ("pattern", "english"))
            english = self.text(f"{where}.english", found["english"])
            translations.append((self.pattern(f"{where}.pattern", found["pattern"]), english))
        guards: dict[str, str] = {}
        for name, entry in self.table("guards", top["guards"]).items():
            found = self.table(f"guards.{name}", entry, ("reason",))
            self.require(f"guards.{name}", found, ("reason",))
            guards[name] = self.text(f"guards.{name}.reason", found["reason"])
        patterns = self.table("patterns", top["patterns"], PATTERNS)
        self.require("patterns", patterns, PATTERNS)
        terms = self.table("terms", top["terms"], TERMS)
        self.require("terms", terms, TERMS)
        words = self.table("words", top["words"], WORDS)
        self.require("words", words, WORDS)
        return Words(
            path=self.path,
            concepts=concepts,
            nouns=nouns,
            commands=tuple(commands),
            foreign_hint=self.pattern("foreign.hint", foreign["hint"]),
            foreign=tuple(translations),
            guards=guards,
            patterns={k: self.pattern(f"patterns.{k}", v) for k, v in patterns.items()},
            terms={
                k: frozenset(index_terms(" ".join(self.word_list(f"terms.{k}", v))))
                for k, v in terms.items()
            },
            words={k: self.word_list(f"words.{k}", v) for k, v in words.items()},
            read_subcommands={
                k: self.word_list(f"read_subcommands.{k}", v)
                for k, v in self.table("read_subcommands", top["read_subcommands"]).items()
            },
        )

    def entries(self, where: str, value: object) -> list[object]:
        """An array of tables (`[[commands]]`)."""
        if not isinstance(value, list):
            raise self.error(where, "must be an array of tables")
        return cast(list[object], value)

    def phrases(self, where: str, entry: object) -> tuple[str, ...]:
        """A concept's phrases: those listed, then each `first` phrase followed by each `then`."""
        found = self.table(where, entry, ("phrases", "pairs"))
        self.require(where, found, ("phrases",))
        out = list(self.strings(f"{where}.phrases", found["phrases"]))
        for i, pair in enumerate(self.entries(f"{where}.pairs", found.get("pairs", []))):
            at = f"{where}.pairs[{i}]"
            both = self.table(at, pair, ("first", "then"))
            self.require(at, both, ("first", "then"))
            then = self.strings(f"{at}.then", both["then"])
            out += [f"{a} {b}" for a in self.strings(f"{at}.first", both["first"]) for b in then]
        return tuple(out)
