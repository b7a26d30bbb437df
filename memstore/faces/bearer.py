"""Bearer tokens for `memstore serve --http`: who a request acts as.

The token file is `<store>/.memstore/tokens.json` (git-ignored, so never committed or pushed,
mode 0600): one entry per identity with the SHA-256 of its token, never the token itself. A
token is 256 random bits, so a plain hash is enough: there is nothing to guess by brute force.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from filelock import FileLock, Timeout

from memstore.errors import InvalidMemory, StoreLocked, TokenError
from memstore.model.identity import check_identity
from memstore.model.memory import now

TOKENS_FILE = "tokens.json"
PREFIX = "mst_"


@dataclass(frozen=True, slots=True)
class Token:
    """One identity's token, as the file keeps it (the hash, never the token)."""

    name: str
    human: bool
    created: str
    sha256: str


def path(cache: Path) -> Path:
    """The token file inside a store's cache folder (`<store>/.memstore/`)."""
    return cache / TOKENS_FILE


def digest(token: str) -> str:
    """The SHA-256 hex of `token`, as stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def read(cache: Path) -> dict[str, Token]:
    """The tokens by identity; none when the file does not exist.

    Raises:
        TokenError: for a file that is not memstore's token file.
    """
    file = path(cache)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise TokenError(f"cannot read the token file {file}: {e}") from e
    try:
        data: object = json.loads(text)
        top = cast("dict[str, object]", data) if isinstance(data, dict) else {}
        entries = top.get("tokens")
        if not isinstance(entries, dict):
            raise ValueError('it holds no "tokens" mapping')
        return {str(n): _entry(n, e) for n, e in cast("dict[object, object]", entries).items()}
    except (ValueError, KeyError, TypeError, AttributeError, InvalidMemory) as e:
        raise TokenError(
            f"the token file {file} is damaged ({e}); move it away and add the tokens again"
        ) from e


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _entry(name: object, e: object) -> Token:
    """One entry of the file, checked: a damaged entry must never match a token or name an
    identity that could not author a commit."""
    if not isinstance(e, dict):
        raise ValueError(f"the entry for {name!r} is not a mapping")
    entry = cast("dict[str, object]", e)
    human, created, sha = entry.get("human"), entry.get("created"), entry.get("sha256")
    if not isinstance(human, bool) or not isinstance(created, str):
        raise ValueError(f"the entry for {name!r} lacks 'human' (true/false) or 'created'")
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        raise ValueError(f"the entry for {name!r} has no SHA-256 ('sha256')")
    if check_identity(name) != name:
        raise ValueError(f"{name!r} is not an identity as written")
    return Token(str(name), human, created, sha)


def add(cache: Path, name: str, human: bool = False, timeout: float = 10.0) -> str:
    """Make a new token for identity `name` and keep its hash; returns the token (shown once).

    Raises:
        InvalidMemory: for a name that is not an identity.
        TokenError: when `name` already has a token.
    """
    name = check_identity(name)
    token = PREFIX + secrets.token_urlsafe(32)
    with _locked(cache, timeout):
        current = read(cache)
        if name in current:
            raise TokenError(
                f"{name!r} already has a token (added {current[name].created}); revoke it "
                f"first: memstore token revoke {name}"
            )
        current[name] = Token(name, human, now(), digest(token))
        _write(cache, current)
    return token


def revoke(cache: Path, name: str, timeout: float = 10.0) -> Token:
    """Forget identity `name`'s token; requests bearing it get 401 from then on.

    Raises:
        TokenError: when `name` has no token.
    """
    with _locked(cache, timeout):
        current = read(cache)
        gone = current.pop(name, None)
        if gone is None:
            listed = ", ".join(sorted(current)) or "none"
            raise TokenError(f"{name!r} has no token; tokens exist for: {listed}")
        _write(cache, current)
    return gone


def verify(tokens: dict[str, Token], token: str) -> Token | None:
    """The entry whose hash `token` matches, or None (compared in constant time)."""
    wanted = digest(token)
    found: Token | None = None
    for entry in tokens.values():
        if hmac.compare_digest(entry.sha256, wanted):
            found = entry
    return found


class Keeper:
    """The token file as last read, read again when it changes (a revoke applies at once).

    A file damaged while a server runs fails closed: `current` raises, no token matches, and
    the damage is logged once (one line) per change of the file."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self._stamp: tuple[int, int, int] | None = None
        self._tokens: dict[str, Token] = {}
        self._damage: TokenError | None = None

    def current(self) -> dict[str, Token]:
        """The tokens now in the file.

        Raises:
            TokenError: for a damaged or unreadable file (until it changes again).
        """
        try:
            st = path(self.cache).stat()
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            self._tokens, self._damage = {}, None
            try:
                self._tokens = read(self.cache) if stamp is not None else {}
            except TokenError as e:
                self._damage = e
                _log().error("memstore: %s; every request is refused until then", e)
            self._stamp = stamp
        if self._damage is not None:
            raise self._damage
        return self._tokens

    def identify(self, token: str) -> Token | None:
        """Who `token` belongs to, or None.

        Raises:
            TokenError: when the token file is damaged (nobody is let in).
        """
        return verify(self.current(), token)


def _log() -> logging.Logger:
    return logging.getLogger(__name__)


class _locked:
    """The token file's own lock (`tokens.lock`): two `token add` never lose one another."""

    def __init__(self, cache: Path, timeout: float) -> None:
        cache.mkdir(parents=True, exist_ok=True)
        self.file = cache / "tokens.lock"
        self.lock = FileLock(self.file, timeout=timeout)

    def __enter__(self) -> None:
        try:
            self.lock.acquire()
        except Timeout as e:
            raise StoreLocked(f"the token file is locked by another process ({self.file})") from e

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def _write(cache: Path, tokens: dict[str, Token]) -> None:
    """Replace the token file atomically; mkstemp creates it 0600, readable by its owner only."""
    data = {
        "tokens": {
            t.name: {"human": t.human, "created": t.created, "sha256": t.sha256}
            for t in sorted(tokens.values(), key=lambda t: t.name)
        }
    }
    fd, tmp = tempfile.mkstemp(prefix=".tokens.", suffix=".tmp", dir=cache)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path(cache))
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise TokenError(f"cannot write the token file {path(cache)}: {e}") from e
