"""Identities: who owns, confirms or commits a memory; checked before they are written, and
compared so that one person spelled two ways is one person."""

from __future__ import annotations

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
    """Whether `a` and `b` name the same identity (False when either is missing)."""
    return bool(a) and bool(b) and identity_key(a or "") == identity_key(b or "")
