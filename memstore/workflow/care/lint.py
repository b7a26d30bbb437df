"""Validate a whole store: every file, and how its confirmations were committed."""

from __future__ import annotations

import json
import logging
import marshal
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memstore.config import STORE_CONFIG
from memstore.errors import InvalidMemory, InvalidName, MemstoreError
from memstore.git import indexfile, objects, repository
from memstore.model.fields import (
    check_body,
    check_description,
    check_expires,
    check_files,
    check_importance,
    check_tags,
)
from memstore.model.identity import same_identity
from memstore.model.memory import FILE_MAX, Memory, parse
from memstore.model.status import Status
from memstore.search.index import racy_window
from memstore.storage import secrets, settings, settings_history, transaction, trust, verdicts
from memstore.storage.files import LEDGER_FILE, FullStamp, Kind, atomic_write, read_regular, walk
from memstore.workflow.care.stats import OUTCOMES_FILE, outcome_problems
from memstore.workflow.rules.rules import rule_problems

if TYPE_CHECKING:
    from memstore.storage.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing `lint` found wrong, with the file (relative to the store) and line if known."""

    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


def check_file(path: Path, folder: str, types: tuple[str, ...]) -> tuple[Memory | None, list[str]]:
    """Parse one memory file and list what is wrong with it on its own."""
    if path.stat().st_size > FILE_MAX:
        return None, [f"larger than {FILE_MAX} bytes: too large to be one memory"]
    return check_data(path.read_bytes(), path.stem, folder, types)


def check_data(
    data: bytes, stem: str, folder: str, types: tuple[str, ...]
) -> tuple[Memory | None, list[str]]:
    """`check_file` for the bytes of `<folder>/<stem>.md`, wherever they were read from."""
    if len(data) > FILE_MAX:
        return None, [f"larger than {FILE_MAX} bytes: too large to be one memory"]
    if not data.strip():
        return None, ["empty file: a memory needs YAML front matter and a body"]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, ["not UTF-8 text (a binary file, or another encoding)"]
    problems: list[str] = []
    if "\r\n" in text:
        problems.append("CRLF line endings: memory files use LF (`.gitattributes` pins eol=lf)")
    try:
        memory = parse(text)
    except (InvalidMemory, InvalidName) as e:
        return None, [*problems, str(e)]
    if memory.name != stem:
        problems.append(f"name '{memory.name}' does not match the file name '{stem}.md'")
    if memory.type != folder:
        problems.append(f"type '{memory.type}' does not match its folder '{folder}/'")
    if memory.type not in types:
        problems.append(f"unknown type '{memory.type}'; types are: {', '.join(types)}")
    statuses = [s.value for s in Status]
    if memory.status not in statuses:
        problems.append(f"unknown status '{memory.status}'; statuses are: {', '.join(statuses)}")
    for check, value in (
        (check_description, memory.description),
        (check_tags, list(memory.tags)),
        (check_body, memory.body),
    ):
        try:
            check(value)
        except InvalidMemory as e:
            problems.append(str(e))
    if not memory.owner.strip():
        problems.append("owner is empty")
    if memory.status == Status.CONFIRMED:
        if not memory.confirmed_by:
            problems.append("confirmed but has no confirmed_by: who confirmed it?")
        elif same_identity(memory.confirmed_by, memory.owner):
            problems.append(
                f"confirmed by its own owner ({memory.owner}): nobody confirms their own memory"
            )
    if memory.status == Status.DEPRECATED and not memory.deprecated_reason:
        problems.append("deprecated but has no deprecated_reason: say why it is wrong or stale")
    problems.extend(rule_problems(memory))
    problems.extend(_upkeep_problems(memory))
    return memory, problems


def _upkeep_problems(memory: Memory) -> list[str]:
    """What is wrong with `expires`, `files`, `importance` and a verification."""
    problems: list[str] = []
    expires = memory.extra.get("expires")
    if expires is not None and not (
        isinstance(expires, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", expires)
    ):
        problems.append(f"expires must be a date YYYY-MM-DD, got {expires!r}")
    elif expires is not None:
        try:
            check_expires(expires)
        except InvalidMemory as e:
            problems.append(str(e))
    for key, check in (("files", check_files), ("importance", check_importance)):
        if key in memory.extra:
            try:
                check(memory.extra[key])
            except InvalidMemory as e:
                problems.append(str(e))
    if memory.verified_by and memory.status != Status.CONFIRMED:
        problems.append("verified but not confirmed: a verification is of a confirmed memory")
    elif memory.verified_by and same_identity(memory.verified_by, memory.owner):
        problems.append(
            f"verified by its own owner ({memory.owner}): nobody verifies their own memory"
        )
    return problems


@dataclass(frozen=True, slots=True)
class Linted:
    """What one lint run found: its problems, and how many memory files it read as memories."""

    problems: list[Problem]
    memories: int


def lint_store(
    store: Store, *, staged: bool = False, memo: FileMemo | None = None
) -> list[Problem]:
    """Every problem in `store`, files first, then the history of confirmations (see `lint`)."""
    return lint(store, staged=staged, memo=memo).problems


def lint(store: Store, *, staged: bool = False, memo: FileMemo | None = None) -> Linted:
    """Every problem in `store`, files first, then the history of confirmations; each file is
    read and parsed once, and the count of memories comes from that same pass.

    With `staged`, the files are read from git's index, as the next commit would hold them
    (what a pre-commit hook must check), instead of from the working tree. With `memo` (for
    `doctor`), an unchanged file's checks are taken from it and the history's verdicts from
    the per-HEAD cache, instead of replaying the whole history (what `memstore lint` does).
    """
    problems: list[Problem] = []
    read_memories = 0
    by_name: dict[str, list[str]] = defaultdict(list)
    memories: dict[str, tuple[str, Memory]] = {}
    outcomes: str | None = None
    if staged:
        try:
            places, outcomes = _staged_places(store)
        except MemstoreError as e:
            return Linted([Problem(".", f"cannot read what is staged: {e}")], 0)
    elif memo is not None:
        places = memo.places()
    else:
        places = _working_places(store)
    for rel, kind, read in places:
        if kind == Kind.TEMP:
            problems.append(Problem(rel, "temp file left by an interrupted write; delete it"))
            continue
        if kind == Kind.SYMLINK:
            what = "a symlinked folder" if "/" not in rel else "a symlink"
            problems.append(Problem(rel, f"{what}: memstore does not follow it"))
            continue
        if kind == Kind.SPECIAL:
            problems.append(Problem(rel, "not a regular file: memstore does not read it"))
            continue
        try:
            memory, found = read()
        except OSError as e:
            problems.append(Problem(rel, f"cannot be read: {e.strerror or e}"))
            continue
        problems.extend(Problem(rel, message) for message in found)
        if memory is not None and not store.secrets_allowed and memo is None:
            problems.extend(Problem(rel, message) for message in _secrets(store, memory))
        if memory is not None:
            read_memories += 1
            by_name[memory.name].append(rel)
            memories[memory.name] = (rel, memory)
    for name, paths in by_name.items():
        if len(paths) > 1:
            for rel in paths:
                others = ", ".join(p for p in paths if p != rel)
                problems.append(Problem(rel, f"duplicate name '{name}': also in {others}"))
    for rel, memory in memories.values():
        targets = [("links", t) for t in memory.links]
        if memory.superseded_by:
            targets.append(("superseded_by", memory.superseded_by))
        for key, target in targets:
            if target not in memories:
                message = f"{key} names '{target}', which is not in the store"
                problems.append(Problem(rel, message))
    problems.extend(_history_problems(store, memories, staged, memo))
    problems.extend(_settings_problems(store, staged))
    problems.extend(
        Problem(OUTCOMES_FILE, m, n) for n, m in outcome_problems(store.root, outcomes, staged)
    )
    if not store.secrets_allowed:
        problems.extend(_record_secrets(store, LEDGER_FILE, _LEDGER_ADVICE))
        problems.extend(_record_secrets(store, OUTCOMES_FILE, _OUTCOME_ADVICE))
    left = transaction.pending(store.cache)
    if left is not None:
        problems.append(
            Problem(
                ".memstore/pending.json",
                f"a write was cut short ({left}); `memstore recover` (or any write) undoes it",
            )
        )
    return Linted(problems, read_memories)


Checked = tuple[Memory | None, list[str]]
Place = tuple[str, Kind, Callable[[], Checked]]
"""A place where a memory file could be: `<folder>/<file>`, what is there, and its check."""


def _working_places(store: Store) -> Iterator[Place]:
    """The files in the working tree, as `files.walk` finds them."""
    for entry in walk(store.root):
        path = entry.path
        yield entry.rel, entry.kind, partial(check_file, path, path.parent.name, store.types)


def _staged_places(store: Store) -> tuple[list[Place], str | None]:
    """The files in git's index, as `files.walk` would find them had they been checked out,
    and the staged text of `outcomes.jsonl` (None when none is staged).

    Raises:
        GitError: when git cannot list or read the index.
    """
    prefix = repository.repo_path(store.repo, store.root)
    prefix = "" if prefix in ("", ".") else prefix + "/"
    places: list[Place] = []
    outcomes: str | None = None
    for entry in indexfile.staged(store.repo, store.root):
        rel = entry.path[len(prefix) :]
        parts = rel.split("/")
        if parts[0].startswith(".") or len(parts) > 2:
            continue
        if len(parts) == 1:
            if rel == OUTCOMES_FILE and entry.data is not None:
                outcomes = entry.data.decode("utf-8", "replace")
            elif entry.mode == _SYMLINK:
                places.append((rel, Kind.SYMLINK, _unread))  # a symlinked type folder
            continue
        name = parts[1]
        if name.startswith("."):
            if name.endswith(".tmp"):
                places.append((rel, Kind.TEMP, _unread))
            continue
        if not name.endswith(".md"):
            continue
        if entry.mode == _SYMLINK:
            places.append((rel, Kind.SYMLINK, _unread))
        elif entry.data is None:  # a submodule, or a merge conflict's side
            places.append((rel, Kind.SPECIAL, _unread))
        else:
            check = partial(check_data, entry.data, name[: -len(".md")], parts[0], store.types)
            places.append((rel, Kind.MEMORY, check))
    return places, outcomes


_SYMLINK = "120000"


def _unread() -> Checked:
    raise AssertionError("only a memory file is read")


def _signers(store: Store) -> trust.Signers | None:
    """Who signed each commit, for a store that requires signatures (else None)."""
    if not store.signed:
        return None
    from memstore.git import signing  # only stores that sign

    return partial(signing.signers, store.repo, allowed_signers=store.allowed_signers)


def _settings_problems(store: Store, staged: bool) -> list[Problem]:
    """Trust settings changed but not committed (not in force; a pre-commit check of the
    staged files skips this), and committed changes to them not made by one of the store's
    humans (see `settings_history`)."""
    found = [] if staged else [Problem(r, m) for r, m in settings.uncommitted(store.root)]
    try:
        history = settings_history.problems(store.repo, store.root)
        identity = store.identity
        if staged and identity:  # judge the commit about to be made, as for memories
            rel = store.signing.allowed_signers
            files = {
                e.path: e.data
                for name in (STORE_CONFIG, rel)
                for e in indexfile.staged(store.repo, store.root / name)
            }
            config = files.get(repository.repo_path(store.repo, store.root / STORE_CONFIG))
            signers = files.get(repository.repo_path(store.repo, store.root / rel))
            history += settings_history.pending_problems(
                store.repo, store.root, identity, config, signers
            )
    except MemstoreError as e:
        return [*found, Problem(STORE_CONFIG, f"cannot read the settings' history: {e}")]
    return [*found, *(Problem(STORE_CONFIG, m) for m in history)]


def _history_problems(
    store: Store,
    memories: dict[str, tuple[str, Memory]],
    staged: bool = False,
    memo: FileMemo | None = None,
) -> list[Problem]:
    """Each memory as its history supports it: owner, confirmation, deprecation (see `trust`).

    A file that differs from HEAD is judged as the commit the current identity would make of
    it (lint run by a pre-commit hook checks the commit about to be made)."""
    try:
        if memo is not None:
            found = store.trust.current()
        else:
            # Its own last replay, extended with every commit since (`verdicts.replayed`).
            found = verdicts.replayed(
                store.repo, store.root, store.cache, _signers(store), settings.basis(store.root)
            )
    except MemstoreError as e:
        return [Problem(".", f"cannot read the store's git history: {e}")]
    problems: list[Problem] = []
    identity = store.identity
    index: dict[str, str] = {}
    if staged:  # judge the bytes the next commit would hold
        try:
            index = {
                e.path: objects.blob_sha(e.data)
                for e in indexfile.staged(store.repo, store.root)
                if e.data is not None
            }
        except MemstoreError as e:
            return [Problem(".", f"cannot read what is staged: {e}")]
    for rel, memory in memories.values():
        # The memo's paths are the walk's own: no path resolution per file.
        key = (
            store.trust.prefix + rel
            if memo is not None
            else repository.repo_path(store.repo, store.root / rel)
        )
        try:
            if staged:
                blob = index[key]
            elif memo is not None and rel in memo.blobs:
                blob = memo.blobs[rel]
            else:
                blob = objects.blob_sha((store.root / rel).read_bytes())
        except (OSError, KeyError):
            continue
        committed = found.blobs.get(key)
        if committed == blob:
            verdict = found.verdict(key, blob)
        elif identity is None:
            if memory.status != Status.CONFIRMED:
                continue
            verdict = trust.Verdict(
                False, "confirmation not committed, and no identity is set to check it against"
            )
        else:
            old = trust.parse_blob(store.repo, committed)
            by = trust.By("", identity, identity, identity, store.signed)
            owner = found.owners.get(key) or identity
            before = found.verdict(key, committed)
            verdict = trust.judge(old, before, memory, by, owner, created=committed is None)
            lifted = _lift_problem(store, found, key, committed, blob, memory, by)
            if lifted is not None:
                problems.append(Problem(rel, lifted))
        if not verdict.ok and verdict.problem:
            problems.append(Problem(rel, verdict.problem))
    problems += [
        Problem(path[len(store.trust.prefix) :], force.problem)
        for path, force in sorted(found.binding.items())
        if force.problem and path.startswith(store.trust.prefix)
    ]
    return problems


def _lift_problem(
    store: Store,
    found: trust.Trust,
    key: str,
    committed: str | None,
    blob: str,
    memory: Memory,
    by: trust.By,
) -> str | None:
    """Why the uncommitted (or staged) change of a rule that binds the agents would not be in
    effect once the current identity commits it (see `binding`), or None."""
    if key not in found.binding:
        return None
    from memstore.storage import binding

    after = {key: found.binding[key]}
    binding.advance(
        after,
        [(key, committed, blob)],
        {},
        by,
        lambda b: memory if b == blob else trust.parse_blob(store.repo, b),
        lambda _: found.owners.get(key),
        lambda _p, _b: True,
        found.humans,
    )
    force = after.get(key)
    if force is None or force.held_by is None or force == found.binding[key]:
        return None
    return (
        f"not committed: {force.problem}".replace(f"in commit {by.commit[:10]} ", "")
        if force.problem
        else None
    )


MEMO_FILE = "lint-files.bin"
_OLD_MEMO_FILE = "lint-files.json"
"""The memo as earlier versions kept it (13 MB of JSON for 10,000 memories): removed when
the new one is written."""
_MEMO_FORMAT = 3
_MEMORY_FIELDS = tuple(f.name for f in fields(Memory))


class FileMemo:
    """Each memory file's own checks (`check_file` and the credential scan) and its memory,
    kept in `.memstore/lint-files.bin` by the file's stamp, so an unchanged file is not parsed
    again: what lets `doctor` look a large store over in seconds. A private cache, written
    with `marshal` (plain tuples, read many times faster than JSON) and trusted only by the
    Python, memo format and `Memory` fields that wrote it: delete it freely."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.file = store.cache / MEMO_FILE
        self.blobs: dict[str, str] = {}
        """Each memory file's blob sha, by store-relative path (after `places`)."""
        self.memories: dict[str, Memory] = {}
        """Each valid memory file's memory as written (not as its history shows it)."""
        self._key = (
            _MEMO_FORMAT,
            sys.version_info[:2],
            _MEMORY_FIELDS,
            tuple(store.types),
            store.secrets_allowed,
            repr(store.secret_patterns.extra),
        )
        self._old: dict[str, Any] = self._load()
        self._new: dict[str, Any] = {}
        self._changed = False

    def places(self) -> Iterator[Place]:
        """The working tree's files, as `_working_places`, each checked through the memo;
        the memo file is rewritten when the walk ends."""
        for entry in walk(self.store.root):
            yield entry.rel, entry.kind, partial(self._checked, entry.rel, entry.where, entry.stamp)
        self._save()

    def _checked(self, rel: str, where: str, stamp: FullStamp | None) -> Checked:
        old = self._old.get(rel)
        if stamp is not None and old is not None and old[0] == tuple(stamp):
            memory = Memory(*old[3]) if old[3] is not None else None
            problems: list[str] = list(old[2])
            blob = str(old[1])
            self._new[rel] = old
        else:
            self._changed = True
            path = Path(where)
            data = path.read_bytes()
            memory, problems = check_data(data, path.stem, path.parent.name, self.store.types)
            if memory is not None and not self.store.secrets_allowed:
                problems += _secrets(self.store, memory)
            blob = objects.blob_sha(data)
            changed = max(stamp[0], stamp[3]) if stamp is not None else 0
            if changed + racy_window(changed) > time.time_ns():
                # Read within its timestamps' tick: a save in that same tick could keep this
                # stamp, so the file is read again next time rather than trusted by it.
                stamp = None
        if stamp is not None and rel not in self._new:
            kept = None if memory is None else tuple(getattr(memory, f) for f in _MEMORY_FIELDS)
            self._new[rel] = (tuple(stamp), blob, tuple(problems), kept)
        self.blobs[rel] = blob
        if memory is not None:
            self.memories[rel] = memory
        return memory, problems

    def _load(self) -> dict[str, Any]:
        try:
            data: Any = marshal.loads(self.file.read_bytes())
            if type(data) is not tuple or len(data) != 2 or data[0] != self._key:  # pyright: ignore[reportUnknownArgumentType]
                return {}
            files: object = data[1]  # pyright: ignore[reportUnknownVariableType]
            return cast("dict[str, Any]", files) if type(files) is dict else {}  # pyright: ignore[reportUnknownArgumentType]
        except (OSError, ValueError, EOFError, TypeError):
            return {}

    def _save(self) -> None:
        if not self._changed and self._new.keys() == self._old.keys():
            return  # nothing moved: the memo on disk says it all
        try:
            data = marshal.dumps((self._key, self._new))
        except ValueError:
            # A hand-written value marshal cannot keep (a YAML tag PyYAML builds an object
            # for): those files are parsed again next time, the rest kept.
            data = marshal.dumps((self._key, {r: e for r, e in self._new.items() if _keeps(e)}))
        try:
            self.store.cache.mkdir(exist_ok=True)
            atomic_write(self.file, data)
            (self.store.cache / _OLD_MEMO_FILE).unlink(missing_ok=True)
        except OSError as e:
            log.info("cannot keep the file checks in %s: %s", self.file, e)


def _keeps(entry: Any) -> bool:
    try:
        marshal.dumps(entry)
    except ValueError:
        return False
    return True


def _secrets(store: Store, memory: Memory) -> list[str]:
    """A hand-written credential in any field, as the write path would have refused it."""
    return [
        f"{f.field} looks like it holds a credential ({secrets.describe(f)}); remove it"
        for f in secrets.scan(secrets.memory_fields(memory), store.secret_patterns)
    ]


# Keys of a ledger or outcome line that memstore sets itself (ids, times, hashes, states).
_RECORD_FIXED = frozenset({"id", "at", "expires", "prev", "hash", "status", "outcome"})
_LEDGER_ADVICE = (
    "the ledger is append-only and hash-linked, so the line stays: revoke the credential"
)
_OUTCOME_ADVICE = "remove the line and revoke the credential (git's history keeps it)"


def _record_secrets(store: Store, name: str, advice: str) -> list[Problem]:
    """A credential in any free-text field of a record file's lines (ledger, outcomes)."""
    try:
        data = read_regular(store.root / name)
    except MemstoreError:
        return []  # not a plain file: reported where the file itself is checked
    if data is None:
        return []
    problems: list[Problem] = []
    for number, line in enumerate(data.decode("utf-8", "replace").split("\n"), start=1):
        try:
            record: object = json.loads(line) if line.strip() else None
        except ValueError:
            continue  # a broken line is reported where the file itself is checked
        if not isinstance(record, dict):
            continue
        items: dict[object, object] = record  # pyright: ignore[reportUnknownVariableType]
        fields = {str(k): secrets.texts_of(v) for k, v in items.items() if k not in _RECORD_FIXED}
        problems.extend(
            Problem(
                name,
                f"{f.field} looks like it holds a credential ({secrets.describe(f)}); {advice}",
                number,
            )
            for f in secrets.scan(fields, store.secret_patterns)
        )
    return problems
