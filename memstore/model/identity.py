"""Identities: who owns, confirms or commits a memory; checked before they are written, and
compared so that one person spelled two ways, or in letters that look alike, is one person."""

from __future__ import annotations

import functools
import json
import unicodedata

from memstore.errors import InvalidMemory
from memstore.model.fields import control

IDENTITY_MAX = 64


def check_identity(identity: object) -> str:
    """Return a stripped identity if it can author commits and appear in a file.

    Raises:
        InvalidMemory: for an empty, multi-line, over-long or `<>`-containing identity, or one
            holding an invisible character (a zero-width space, a direction mark) that would
            let two names look alike.
    """
    if not isinstance(identity, str) or not identity.strip():
        raise InvalidMemory("identity must be a non-empty name")
    value = identity.strip()
    if len(value) > IDENTITY_MAX or any(c in value for c in "<>") or control(value):
        raise InvalidMemory(
            f"invalid identity {identity!r}: use one line of at most {IDENTITY_MAX} characters "
            "without '<' or '>'"
        )
    hidden = next((c for c in value if unicodedata.category(c) in _INVISIBLE), None)
    if hidden is not None:
        raise InvalidMemory(
            f"invalid identity {identity!r}: it holds an invisible character "
            f"(U+{ord(hidden):04X}); use a name that reads as it is written"
        )
    return value


_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Unicode categories that print as nothing: control, format (zero-width, direction marks),
surrogates, private use and unassigned."""


def identity_key(identity: str) -> str:
    """The form two identities are compared in: NFKC, case-folded, trimmed.

    `Alice`, `alice` and a full-width `ａｌｉｃｅ` are one person: nobody confirms their own
    memory by spelling their name another way.
    """
    return unicodedata.normalize("NFKC", identity).casefold().strip()


def same_identity(a: str | None, b: str | None) -> bool:
    """Whether `a` and `b` name the same identity (False when either is missing): the same
    `identity_key`, or names that look alike (`confusable`): `bοb` with a Greek omicron is
    `bob`, so it never confirms bob's memory as someone else."""
    if not a or not b:
        return False
    return identity_key(a) == identity_key(b) or confusable(a, b)


def confusable(a: str, b: str) -> bool:
    """Whether `a` and `b` look alike: they share a UTS #39 skeleton (Unicode's confusables
    mapped to their prototypes), compared with and without case (`Ian` and `lan`, `B0B` and
    `bob`)."""
    return not skeletons(a).isdisjoint(skeletons(b))


def skeleton(text: str) -> str:
    """UTS #39's skeleton of `text` (after NFKC): NFD, each character mapped to its prototype
    in Unicode's confusables, NFD again. Two strings that look alike share one."""
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).strip())
    table = _ASCII_PROTOTYPES if decomposed.isascii() else _prototypes()
    return unicodedata.normalize("NFD", "".join(table.get(c, c) for c in decomposed))


@functools.lru_cache(maxsize=4096)
def skeletons(identity: str) -> frozenset[str]:
    """The skeletons `confusable` compares `identity` by (with and without case)."""
    name = unicodedata.normalize("NFKC", identity).strip()
    return frozenset({skeleton(name).casefold(), skeleton(name.casefold()).casefold()})


_ASCII_PROTOTYPES = {"`": "'", '"': "''", "|": "l", "1": "l", "I": "l", "0": "O", "%": "º/₀"}
_ASCII_PROTOTYPES["m"] = "rn"
"""The ASCII characters Unicode's confusables map to another prototype: an ASCII name is
compared without loading the whole table (a test checks this against the table)."""

_MARKS = str.maketrans("", "", "\u200e\u200f")


@functools.cache
def _prototypes() -> dict[str, str]:
    """Each confusable character's prototype, from Unicode's `confusables.txt` as the
    confusable-homoglyphs package ships it (loaded once, only for a non-ASCII name).

    That table lists each source character with its one prototype, and each prototype with
    every source mapped to it (so a source has exactly one entry). A pair listed only with each
    other keeps no direction: both map to the smaller, so they still share a skeleton.
    """
    from importlib import resources  # only a non-ASCII name needs it

    text = (resources.files("confusable_homoglyphs") / "confusables.json").read_text("utf-8")
    table: dict[str, list[dict[str, str]]] = json.loads(text)
    found: dict[str, str] = {}
    for key, entries in table.items():
        char = key.translate(_MARKS)
        if len(char) != 1 or len(entries) != 1:
            continue  # a prototype (a sequence, or listed with all its sources)
        target = entries[0]["c"].translate(_MARKS)
        back = table.get(entries[0]["c"], [])
        if len(target) == 1 and len(back) == 1 and back[0]["c"].translate(_MARKS) == char:
            target = min(char, target)
        if target != char:
            found[char] = target
    return found
