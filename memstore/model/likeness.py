"""The words two memories are compared by as near-duplicates (the hint after a write, doctor's
clusters, the catalog's word index for the hint), and how alike two sets of them are."""

from __future__ import annotations

import re

WORD = re.compile(r"\w\w+")
STOP = frozenset("the and for with that this from are was not but you all any can".split())


def words(name: str, description: str) -> frozenset[str]:
    """The words of a memory's name and description, lower-cased, a plural `s` dropped, short
    and stop words left out: what duplicates are compared by (no stemming: it is what a scan
    of a large store would spend its time on, and near-duplicates share their words)."""
    text = f"{name.replace('-', ' ')} {description}".lower()
    found = set(WORD.findall(text))
    found -= STOP
    return frozenset(w[:-1] if len(w) > 3 and w[-1] == "s" and w[-2] != "s" else w for w in found)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)
