"""A store opened for reading: where its files are, who acts, and its memories as their history
supports them. `Store` (in `store`) adds the write path; this half never writes."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from memstore.errors import (
    InvalidMemory,
    InvalidName,
    MemoryNotFound,
    MemstoreError,
    NoIdentity,
    NotAStore,
    speak_within,
)
from memstore.git import commit, repository
from memstore.model.fields import check_name
from memstore.model.identity import check_identity
from memstore.model.memory import FILE_MAX, Memory, parse
from memstore.storage import settings
from memstore.storage.files import (
    LEDGER_FILE,
    OUTCOMES_FILE,
    memory_files,
    read_regular,
    shown,
    version_of,
)

if TYPE_CHECKING:
    import logging

    from memstore.storage import trust, verdicts
    from memstore.storage.secrets import Patterns


def _log() -> logging.Logger:
    """This module's logger. `logging` loads with the first warning: a command that logs
    none (a `memstore add`) never pays for importing it."""
    import logging

    return logging.getLogger(__name__)


SUGGEST_AMONG = 2_000
"""Past this many memories, a name not found is compared (for `did you mean`) only with the
names that share the longest beginning or end with it, this many in all: comparing it with
each of 100,000 names took 6 s."""


def _neighbours(names: list[str], name: str, count: int) -> list[str]:
    """Of the sorted `names`, the `count` each side of `name`, and the `count` each side of it
    in the order of the names read backwards: those sharing the longest beginning or end."""
    import bisect

    at = bisect.bisect_left(names, name)
    near = set(names[max(0, at - count) : at + count])
    backwards = sorted(n[::-1] for n in names)
    at = bisect.bisect_left(backwards, name[::-1])
    near.update(n[::-1] for n in backwards[max(0, at - count) : at + count])
    return sorted(near)


CACHE_DIR = ".memstore"


@dataclass(frozen=True, slots=True)
class Versioned:
    """A memory with the version (content hash) an update must name to avoid overwriting."""

    memory: Memory
    version: str
    path: str


class Reader:
    """One memory directory inside a git repository, for reading: open it with `Store`."""

    def __init__(self, root: Path, agent: str | None = None) -> None:
        root = root.absolute()
        if not root.is_dir():
            raise NotAStore(f"no store at {root}: run `memstore init {root}` to create one")
        repo = repository.find_repo(root)
        if repo is None:
            raise NotAStore(
                f"{root} is not inside a git repository: run `memstore init {root}` to make it a "
                "store"
            )
        self.root = root.resolve()
        speak_within(str(root))  # errors name its files relative to it (see errors.py)
        self.repo = repo
        self.cache = self.root / CACHE_DIR
        self._agent = check_identity(agent) if agent else None
        self._git_name: str | None = None
        self._admitted: str | None = None
        """The identity `identities.admit` let act (checked once per store object)."""
        self._trust: verdicts.Cache | None = None
        self._trust_lock = threading.Lock()
        self.types = settings.store_types(self.root)
        self.secrets_allowed, self._secret_extra = settings.secret_settings(self.root)
        self._secret_patterns: Patterns | None = None
        settings.signing_settings(self.root)
        # Trust settings count as committed: one changed only in the working tree is named.
        settings.warn_uncommitted(self.root)

    @property
    def signing(self) -> settings.Signing:
        """The signature settings as committed at HEAD (read again only when HEAD's
        `memstore.yaml` changes)."""
        return settings.signing_settings(self.root)

    @property
    def signed(self) -> bool:
        """Whether the store requires signed commits: then a commit is by an identity only
        when that identity's allowed key signed it, and the history verifies each one."""
        return self.signing.required

    @property
    def trust(self) -> verdicts.Cache:
        """What the history supports, for reads (see `read_file`): made on first use, so that a
        process that only writes (`memstore add`) never loads the `trust` module."""
        with self._trust_lock:
            if self._trust is None:
                from memstore.storage import verdicts

                self._trust = verdicts.Cache(self.repo, self.root, self.cache)
                self._trust.settings = self._trust_settings
            return self._trust

    def _trust_settings(self) -> tuple[str, trust.Signers | None]:
        """What the verdicts depend on besides the history (a digest of the committed trust
        settings and allowed signers), and how commits' signers are found (None when the
        store does not require signatures)."""
        basis = settings.basis(self.root)
        if not self.signed:
            return basis, None
        from memstore.git import signing  # only stores that sign

        # A commit is by an identity only when that identity's allowed key signed it.
        return basis, partial(signing.signers, self.repo, allowed_signers=self.allowed_signers)

    # -- identity -----------------------------------------------------------------------------

    @property
    def identity(self) -> str | None:
        """Who acts: the explicit agent, else git's `user.name`, else None."""
        if self._agent:
            return self._agent
        if self._git_name is None:
            self._git_name = commit.git_identity(self.repo) or ""
        return check_identity(self._git_name) if self._git_name else None

    def require_identity(self) -> str:
        """The acting identity, once it passed `identities.admit`.

        Raises:
            NoIdentity: saying how to set one.
            InvalidMemory: for an identity that looks like a credential or like another
                identity of the store.
        """
        identity = self.identity
        if not identity:
            raise NoIdentity(
                "no identity to record this change under: pass --agent NAME, set "
                "MEMSTORE_AGENT=NAME, or set `git config user.name`"
            )
        if identity != self._admitted:
            from memstore.storage import identities  # only a process that writes

            identities.admit(self.repo, identity, self.secret_patterns)
            self._admitted = identity
        return identity

    # -- reading ------------------------------------------------------------------------------

    def path_for(self, name: str) -> Path:
        """The file of memory `name`.

        Raises:
            InvalidName: for a name that is not a slug.
            MemoryNotFound: when no type folder holds it.
        """
        found = self._located(name)
        if found is not None:
            return found
        raise MemoryNotFound(f"no memory named '{name}' in {self.root}{self._did_you_mean(name)}")

    def _located(self, name: str) -> Path | None:
        """The file of memory `name`, or None; `path_for` without the search for a hint.

        Raises:
            InvalidName, InvalidMemory: as `path_for` does.
        """
        check_name(name)
        found: list[Path] = []
        for folder in sorted(self.root.iterdir()):
            if folder.name.startswith(".") or not folder.is_dir() or folder.is_symlink():
                continue
            path = folder / f"{name}.md"
            if path.is_file() and not path.is_symlink():
                found.append(path)
        if len(found) > 1:
            raise InvalidMemory(
                f"two files claim the name '{name}': "
                f"{' and '.join(shown(p) for p in found)}; keep one (see `memstore lint`)"
            )
        return found[0] if found else None

    def _did_you_mean(self, name: str) -> str:
        """`; did you mean 'x'?` naming the closest existing names (#17), or nothing."""
        import difflib  # only a name that is not found needs it

        names = sorted(self._names())
        if len(names) > SUGGEST_AMONG:
            names = _neighbours(names, name, SUGGEST_AMONG // 4)
        close = [
            n for n in difflib.get_close_matches(name, names, n=3, cutoff=0.6) if self._is_memory(n)
        ]
        if not close:
            return ""
        quoted = [f"'{n}'" for n in close]
        listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
        return f"; did you mean {listed}?"

    def _is_memory(self, name: str) -> bool:
        try:
            return self._located(name) is not None
        except MemstoreError:  # not a name, or two files claim it: no hint
            return False

    def _names(self) -> set[str]:
        """The names of the `.md` entries of the folders `_located` looks in: one listing of each
        folder, nothing opened or looked at (a suggested name is checked when shown)."""
        import os

        names: set[str] = set()
        for folder in self.root.iterdir():
            if folder.name.startswith(".") or not folder.is_dir() or folder.is_symlink():
                continue
            try:
                names.update([n[:-3] for n in os.listdir(folder) if n.endswith(".md")])
            except OSError:
                continue
        return names

    def read_file(
        self, path: Path, *, raw: bool = False, data: bytes | None = None
    ) -> tuple[Memory, bytes]:
        """The memory in file `path` and the file's bytes (`data`: the bytes the caller has
        just read from it, not read again).

        A confirmation its history does not support reads as status `unverified` (see
        `trust`); `raw` gives the file's own status, for the write path.

        Raises:
            InvalidMemory: for a file too large, not UTF-8 or not a valid memory.
        """
        if data is None:
            data = read_regular(path)
        if data is None:
            raise InvalidMemory(f"{shown(path)} does not exist")
        if len(data) > FILE_MAX:
            raise InvalidMemory(f"{shown(path)} is larger than {FILE_MAX} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidMemory(f"{shown(path)} is not UTF-8 text") from e
        try:
            memory = parse(text)
        except (InvalidMemory, InvalidName) as e:
            # A bad name inside a file is a broken file, not a bad argument: one such file
            # must not stop `list` from serving the others.
            raise InvalidMemory(f"{shown(path)}: {e}") from e
        if raw:
            return memory, data
        from memstore.storage import verdicts

        return verdicts.shown(self.trust, self.trust.prefix + self.rel(path), memory, data), data

    def read(self, name: str, *, raw: bool = False) -> Versioned:
        """Memory `name` with its version (pass it back to `edit` to refuse lost updates).

        Raises:
            MemoryNotFound, InvalidMemory.
        """
        path = self.path_for(name)
        memory, data = self.read_file(path, raw=raw)
        return Versioned(memory, version_of(data), self.rel(path))

    def get(self, name: str) -> Memory:
        """Memory `name`.

        Raises:
            MemoryNotFound, InvalidMemory.
        """
        return self.read(name).memory

    def memories(self, types: Iterable[str] | None = None) -> Iterator[Memory]:
        """Every valid memory in the store (or in the folders of `types` only); a broken file
        is skipped with a warning naming it."""
        for entry in memory_files(self.root, types):
            try:
                yield self.read_file(entry.path)[0]
            except (InvalidMemory, OSError) as e:
                _log().warning("skipping %s: %s", entry.rel, e)

    def list(
        self,
        *,
        type: str | None = None,
        status: str | None = None,
        tags: tuple[str, ...] = (),
    ) -> list[Memory]:
        """Memories matching every filter given (tags with AND), newest update first."""
        found = [
            m
            for m in self.memories()
            if (type is None or m.type == type)
            and (status is None or m.status == status)
            and all(t in m.tags for t in tags)
        ]
        return sorted(found, key=lambda m: (m.updated, m.name), reverse=True)

    def rel(self, path: Path) -> str:
        """`path` relative to the store root, with forward slashes."""
        try:
            return path.absolute().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def read_each(
        self, names: list[str] | tuple[str, ...]
    ) -> tuple[list[Versioned], list[tuple[str, str]]]:
        """The memories named that can be read, in the order given, and (name, message) for each
        that cannot (missing or broken): one bad file never hides the others.

        Raises:
            InvalidName: for a name that is not a slug (the caller's mistake: nothing is read).
            MemoryNotFound: when none of them can be read, with every message.
        """
        for name in names:
            check_name(name)
        found: list[Versioned] = []
        problems: list[tuple[str, str]] = []
        for name in names:
            try:
                found.append(self.read(name))
            except MemstoreError as e:
                problems.append((name, str(e)))
        if not found:
            raise MemoryNotFound("; ".join(message for _, message in problems))
        return found, problems

    def get_many(self, names: list[str] | tuple[str, ...]) -> list[Memory]:
        """The memories named, in the order given (e.g. names picked from an index view).

        Raises:
            MemoryNotFound: naming every name that is not in the store.
            InvalidName, InvalidMemory.
        """
        found: list[Memory] = []
        missing: list[str] = []
        for name in names:
            try:
                found.append(self.get(name))
            except MemoryNotFound:
                missing.append(name)
        if missing:
            raise MemoryNotFound(
                f"no memory named {', '.join(repr(n) for n in missing)} in {self.root}"
            )
        return found

    @property
    def allowed_signers(self) -> Path:
        """The store's allowed-signers file (`allowed_signers` in `memstore.yaml`)."""
        return self.root / self.signing.allowed_signers

    @property
    def secret_patterns(self) -> Patterns:
        """The credential patterns: built-in and the store's own (compiled on first use, so a
        read never loads the credential check)."""
        if self._secret_patterns is None:
            from memstore.storage import secrets

            self._secret_patterns = secrets.compile_patterns(self._secret_extra)
        return self._secret_patterns

    # -- record files -------------------------------------------------------------------------

    @property
    def outcomes_path(self) -> Path:
        """The append-only record of correction outcomes, committed beside the memories."""
        return self.root / OUTCOMES_FILE

    # -- ledger -------------------------------------------------------------------------------

    @property
    def ledger_path(self) -> Path:
        """The store's ledger file, `<store>/ledger.jsonl`."""
        return self.root / LEDGER_FILE
