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


def check_data(
    data: bytes, stem: str, folder: str, types: tuple[str, ...]
) -> tuple[Memory | None, list[str]]:
    """Parse the bytes of memory file `<folder>/<stem>.md` (wherever they were read from) and
    list what is wrong with it on its own."""
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
    store: Store, *, staged: bool = False, memo: FileMemo | None = None, kept: bool = False
) -> list[Problem]:
    """Every problem in `store`, files first, then the history of confirmations (see `lint`)."""
    return lint(store, staged=staged, memo=memo, kept=kept).problems


def lint(
    store: Store,
    *,
    staged: bool = False,
    memo: FileMemo | None = None,
    kept: bool = False,
    whole: bool = False,
) -> Linted:
    """Every problem in `store`, files first, then the history of confirmations; each file is
    read and parsed once, and the count of memories comes from that same pass.

    With `staged`, the files are read from git's index, as the next commit would hold them
    (what a pre-commit hook must check), instead of from the working tree. With `memo`, an
    unchanged file's checks are taken from it (see `FileMemo`); without, every file is read.
    The history's verdicts are lint's own replay, extended with the commits since it was last
    kept (`verdicts.replayed`; with `whole`, the whole history replayed again), or with `kept`
    (for `doctor`) the reads' per-HEAD verdicts.
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
    else:
        files = memo if memo is not None else FileMemo(store, reuse=False, keep=False)
        places = files.places()
        memo = files
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
    problems.extend(_history_problems(store, memories, staged, memo, kept, whole))
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
    kept: bool = False,
    whole: bool = False,
) -> list[Problem]:
    """Each memory as its history supports it: owner, confirmation, deprecation (see `trust`).

    A file that differs from HEAD is judged as the commit the current identity would make of
    it (lint run by a pre-commit hook checks the commit about to be made)."""
    try:
        if kept:
            found = store.trust.current()
        else:
            # Its own last replay, extended with every commit since (`verdicts.replayed`).
            # The files' versions at HEAD are mostly those just read: not parsed again.
            parsed: dict[str, Memory | None] = (
                {memo.blobs[r]: m for r, m in memo.memories.items() if r in memo.blobs}
                if memo is not None
                else {}
            )
            found = verdicts.replayed(
                store.repo,
                store.root,
                store.cache,
                _signers(store),
                settings.basis(store.root),
                whole=whole,
                parsed=parsed,
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
    prefix = store.trust.prefix
    for rel, memory in memories.values():
        # The walk's paths (and the index's) are the repository's under the store's folder:
        # a memory file is never reached through a symlink, so no path is resolved per file.
        key = prefix + rel
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
_MEMO_FORMAT = 4  # 4: the checker's digest; an entry's stamp may be () (racy: blob only)
_MEMORY_FIELDS = tuple(f.name for f in fields(Memory))
_CHECKER = ("errors.py", "limits.py", "model", "storage/secrets.py", "workflow/rules")
"""The source the file checks run (`check_data`, `rule_problems`, the credential scan), by
path under the package: a memo made by other checks is never used (`checker_digest`)."""


def checker_digest() -> str:
    """A digest of the code that checks a file: this module, the sources `_CHECKER` names
    and the version of detect-secrets (whose plugins the credential scan runs)."""
    import hashlib
    import importlib.util

    package = Path(__file__).resolve().parents[2]
    files = [Path(__file__).resolve()]
    for name in _CHECKER:
        place = package / name
        files += (
            sorted(p for p in place.iterdir() if p.suffix in (".py", ".toml"))
            if (place.is_dir())
            else [place]
        )
    spec = importlib.util.find_spec("detect_secrets")
    if spec is not None and spec.origin is not None:
        files.append(Path(spec.origin).parent / "__version__.py")
    digest = hashlib.sha1()
    for file in files:
        try:
            data = file.read_bytes()
        except OSError:
            data = b""
        digest.update(f"{file.name} {len(data)}\n".encode())
        digest.update(data)
    return digest.hexdigest()


_Entry = tuple[tuple[int, ...], str, tuple[str, ...], tuple[Any, ...] | None]
"""A file's memo entry: its stamp, blob sha ("" when not read), problems and memory fields."""
_clock = time.time_ns
"""When a file is read, to tell whether its stamp is racy (a test moves it)."""
_NO_STAMP: tuple[int, ...] = ()
"""The stamp kept for a file read within its timestamps' tick: it matches no stamp, so the file
is read again next time and its checks taken from the memo only if its blob is the same."""


class FileMemo:
    """Each memory file's own checks (`check_data` and the credential scan) and its memory,
    kept in `.memstore/lint-files.bin` by the file's path, stamp and blob id: a file whose
    stamp (mtime, size, inode, ctime) is unchanged is not read again, and one whose stamp
    moved but whose content did not (touched, checked out again) is read and hashed but not
    parsed or scanned again. The whole memo is made for one set of what else decides a
    file's checks: the store's types and credential settings, the checking code
    (`checker_digest`), the Python, memo format and `Memory` fields; under others it is
    not used. A private cache, written with `marshal` (plain tuples, read many times faster
    than JSON): delete it freely, or pass `reuse=False` to check every file again.
    """

    def __init__(self, store: Store, *, reuse: bool = True, keep: bool = True) -> None:
        self.store = store
        self.file = store.cache / MEMO_FILE
        self.keep = keep
        self.blobs: dict[str, str] = {}
        """Each memory file's blob sha, by store-relative path (after `places`)."""
        self.memories: dict[str, Memory] = {}
        """Each valid memory file's memory as written (not as its history shows it)."""
        self.read = 0
        """How many files `places` read (the others were taken from the memo by stamp)."""
        self.parsed = 0
        """How many of those it parsed and scanned (not taken from the memo by blob)."""
        self._key = (
            _MEMO_FORMAT,
            sys.version_info[:2],
            _MEMORY_FIELDS,
            tuple(store.types),
            store.secrets_allowed,
            repr(store.secret_patterns.extra),
            checker_digest(),
        )
        self._old: dict[str, Any] = self._load() if reuse else {}
        self._new: dict[str, Any] = {}
        self._changed = False

    def places(self) -> Iterator[Place]:
        """The working tree's files, as `files.walk` finds them, each checked through the
        memo; the memo file is rewritten (when `keep`) once the walk ends."""
        for entry in walk(self.store.root):
            yield entry.rel, entry.kind, partial(self._checked, entry.rel, entry.where, entry.stamp)
        self._save()

    def _checked(self, rel: str, where: str, stamp: FullStamp) -> Checked:
        old: _Entry | None = self._old.get(rel)
        now: tuple[int, ...] = tuple(stamp)
        entry: _Entry
        if old is not None and old[0] == now:
            entry = old
        else:
            self._changed = True
            self.read += 1
            if stamp[1] > FILE_MAX:  # not read at all
                entry = (
                    now,
                    "",
                    (f"larger than {FILE_MAX} bytes: too large to be one memory",),
                    None,
                )
            else:
                path = Path(where)
                data = path.read_bytes()
                blob = objects.blob_sha(data)
                if old is not None and old[1] == blob:
                    entry = (now, blob, old[2], old[3])
                else:
                    self.parsed += 1
                    memory, found = check_data(data, path.stem, path.parent.name, self.store.types)
                    if memory is not None and not self.store.secrets_allowed:
                        found += _secrets(self.store, memory)
                    kept = (
                        None
                        if memory is None
                        else tuple(getattr(memory, f) for f in _MEMORY_FIELDS)
                    )
                    entry = (now, blob, tuple(found), kept)
            changed = max(stamp[0], stamp[3])
            if changed + racy_window(changed) > _clock():
                # Read within its timestamps' tick: a save in that same tick could keep this
                # stamp, so the file is read again next time rather than trusted by it.
                entry = (_NO_STAMP, entry[1], entry[2], entry[3])
        self._new[rel] = entry
        memory = Memory(*entry[3]) if entry[3] is not None else None
        if entry[1]:
            self.blobs[rel] = entry[1]
        if memory is not None:
            self.memories[rel] = memory
        return memory, list(entry[2])

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
        if not self.keep or (not self._changed and self._new.keys() == self._old.keys()):
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
