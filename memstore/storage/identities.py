"""The identities a store knows, and the check an identity passes before it acts: not a
credential, and no look-alike of an identity the store knew first.

A store knows every author and committer of HEAD's history, in the order they first appear,
kept with HEAD and each name's skeletons in git's own folder (`.git/memstore/identities.json`:
derived from git's history, and outside the work tree, so a refused write leaves no new file
there and a symlinked `.memstore/` is never written through): a write reads that small file,
and git runs only when the acting identity is new to it, over the commits since the HEAD it
was kept for.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any, cast

from memstore.errors import InvalidMemory, UnsafePath
from memstore.git import authors, refs
from memstore.git.repository import Repo
from memstore.model.identity import check_identity, identity_key, skeleton, skeletons
from memstore.storage import secrets
from memstore.storage.files import atomic_write, read_regular

CACHE_FILE = "identities.json"
_FORMAT = 1

Known = list[tuple[str, frozenset[str]]]
"""Names in the order they first appear, each with its skeletons."""


def cache_file(repo: Repo) -> Path:
    """Where the known identities are kept: in the repository's git folder."""
    return repo.common_dir / "memstore" / CACHE_FILE


def known(repo: Repo) -> Known:
    """Every author and committer name of HEAD's history, oldest first, with its skeletons;
    brought up to HEAD from the cached list (one `git log` over the new commits).

    Raises:
        GitError: when git cannot read HEAD's history.
    """
    head = refs.head(repo)
    kept_head, names = _read(cache_file(repo))
    if head is None or kept_head == head:
        return names
    new = authors.names(repo, head, kept_head) if kept_head else None
    if new is None:
        names, new = [], authors.names(repo, head) or []
    seen = {n for n, _ in names}
    names = names + [(n, skeletons(n)) for n in new if n not in seen]
    _save(cache_file(repo), head, names)
    return names


def kept(repo: Repo) -> list[str]:
    """The names kept for the repository, as the last write or check left them: no git runs,
    so it may lag HEAD by the commits since (for shell completion)."""
    return [name for name, _ in _read(cache_file(repo))[1]]


def admit(repo: Repo, identity: str, patterns: secrets.Patterns | None) -> str:
    """`identity`, checked (`check_identity`), if it may act on this store.

    Raises:
        InvalidMemory: for an identity that looks like a credential (a commit author stays in
            git's history for good), or one that looks like a different identity the store
            knew before it (`bοb` with a Greek omicron, once `bob` has committed).
    """
    name = check_identity(identity)
    found = secrets.scan({"identity": name}, patterns)
    if found:
        raise InvalidMemory(
            f"the identity looks like a credential ({secrets.describe(found[0])}): an identity "
            "is a commit author, kept in git's history for good; act under a name (--agent "
            "NAME, MEMSTORE_AGENT) and keep the credential out of the store"
        )
    key = identity_key(name)
    names = _read(cache_file(repo))[1]
    if not any(identity_key(n) == key for n, _ in names):
        names = known(repo)  # new to the cache: bring it up to HEAD first
    mine = next((s for n, s in names if identity_key(n) == key), None) or skeletons(name)
    for other, theirs in names:
        if identity_key(other) == key:
            break  # known from here on: names that came later cannot refuse it
        if not mine.isdisjoint(theirs):
            raise InvalidMemory(
                f"the identity {name!r} looks like {other!r}, another identity of this store"
                f"{_spelled(name)}: nobody may act under a name that can be taken for someone "
                "else's; choose one that reads differently"
            )
    return name


def _spelled(name: str) -> str:
    """` (it spells 'ο', U+03BF GREEK SMALL LETTER OMICRON)`: the first look-alike letter."""
    for char in name:
        if not char.isascii() or skeleton(char) != char:
            label = unicodedata.name(char, "")
            return f" (it spells {char!r}, U+{ord(char):04X} {label})".replace(" )", ")")
    return ""


def _read(file: Path) -> tuple[str | None, Known]:
    """The HEAD and names kept in `file`; nothing when it is missing or not memstore's."""
    try:
        data: Any = json.loads(read_regular(file) or b"null")
        if not isinstance(data, dict) or cast("dict[str, Any]", data).get("format") != _FORMAT:
            return None, []
        kept = cast("dict[str, object]", data)
        head = kept["head"]
        rows = cast("list[tuple[str, list[str]]]", kept["names"])
        names = [(str(n), frozenset(str(s) for s in sk)) for n, sk in rows]
        return (str(head), names) if isinstance(head, str) else (None, [])
    except (OSError, UnsafePath, ValueError, KeyError, TypeError):
        return None, []


def _save(file: Path, head: str, names: Known) -> None:
    data = {"format": _FORMAT, "head": head, "names": [[n, sorted(s)] for n, s in names]}
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(file, json.dumps(data, ensure_ascii=False))
    except OSError as e:  # a cache: the next call asks git again
        import logging  # only on a failure: a plain write loads no logging

        logging.getLogger(__name__).info("cannot keep the known identities in %s: %s", file, e)
