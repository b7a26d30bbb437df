"""A text as a shell line: whether it is one (it starts with a program and does not go on in
the past tense, as English naming a program does), its simple commands, and which only read.

Concepts, guards and intent detection all ask this first, so it sits below them.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass

from memstore.workflow.rules.words import Words, table

_SEP = re.compile(r"&&|\|\||[;|\n]|\$\(|`|\s#\s")


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command of a shell line."""

    raw: str
    words: tuple[str, ...]
    """Shell words, with `sudo`, `env X=1` and the like taken off the front."""

    @property
    def name(self) -> str:
        return self.words[0].rsplit("/", 1)[-1] if self.words else ""


def commands(raw: str) -> tuple[Command, ...]:
    """The simple commands of a shell line (split at `&&`, `;`, `|`, …)."""
    return _commands(raw, table())


@functools.lru_cache(maxsize=256)
def _commands(raw: str, t: Words) -> tuple[Command, ...]:
    wrappers = t.words["wrappers"]
    out: list[Command] = []
    for part in _SEP.split(raw):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            words = part.split()
        while words and (words[0] in wrappers or "=" in words[0] or words[0].startswith("-")):
            words = words[1:]
        if words:
            out.append(Command(part, tuple(words)))
    return tuple(out)


def reads(command: Command) -> bool:
    """Whether a command only searches or prints (`grep`, `cat`, `git log`, `git commit -m`)."""
    t = table()
    return command.name in t.words["readers"] or (
        command.name == "git" and len(command.words) > 1 and command.words[1] in t.words["git_text"]
    )


def is_shell(raw: str) -> bool:
    """Whether a text is a shell line (it starts with a program), not English that names one
    ("terraform destroyed the stack")."""
    t = table()
    programs = t.words["programs"]
    words = raw.split()
    first = words[0] if words else ""
    second = words[1] if len(words) > 1 else ""
    if first in t.words["words_too"]:
        if second.startswith("-") or "/" in second or "." in second:
            return True
        if first != "make" or not second or second in t.words["make_english"]:
            return False  # "find the logs", "make sure …"; `make deploy` is a target
    if "/" in first and first.rsplit("/", 1)[-1] in programs:
        return True  # `bin/rails …`, `vendor/bin/…`, `node_modules/.bin/…`
    if not (first in programs or first.startswith(("./", "/", "~/")) or "=" in first):
        return False
    return not past([first.title(), *words[1:3]])


def past(words: list[str]) -> bool:
    """Whether a clause's words report something done: a subject (or a time) then a verb in
    the past, a passive in the past, or a clause opening on a verb in the past."""
    t = table()
    irregular, not_past = t.words["irregular_past"], t.words["not_past"]

    def in_past(word: str) -> bool:
        if word in irregular:
            return True
        w = word.rsplit("-", 1)[-1]
        return len(w) > 3 and w.endswith("ed") and w not in not_past and not w.endswith("eed")

    if not words:
        return False
    start = 1 if words[0] in t.words["time_first"] else 0
    rest = words[start:]
    if rest and in_past(rest[0]):
        return True  # "pushed the tag", "yesterday rotated the keys"
    first = rest[0].lower() if rest else ""
    if rest and (first in t.words["subjects"] or first in t.words["programs"] or rest[0].istitle()):
        for w in rest[1:6]:
            if w in ("will", "should", "must", "can", "could", "would", "to"):
                return False
            if in_past(w.lower()):
                return True
    return False
