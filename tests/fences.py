"""Reading text memstore gave an agent the way the agent should: fenced data apart from
memstore's own lines."""

from __future__ import annotations

import re

_NONCE = re.compile(r"Text between <data-([0-9a-f]{8})> and </data-\1>")
_ERROR_NONCE = re.compile(r"\(text between <data-([0-9a-f]{8})> and </data-\1> is memstore's")


def nonces(text: str) -> list[str]:
    """The fence ids a text declares in its preambles."""
    return _NONCE.findall(text) + _ERROR_NONCE.findall(text)


def outside(text: str) -> str:
    """`text` without its fenced parts (and the preambles that name the fences): what memstore
    itself says."""
    for nonce in nonces(text):
        text = re.sub(rf"<data-{nonce}>.*?</data-{nonce}>", "", text, flags=re.DOTALL)
    return text


def inside(text: str) -> str:
    """The fenced parts of `text`, joined."""
    return "\n".join(
        m
        for nonce in nonces(text)
        for m in re.findall(rf"<data-{nonce}>(.*?)</data-{nonce}>", text, flags=re.DOTALL)
    )
