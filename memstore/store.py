"""`Store`: the facade over one memory directory, and its single write path."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from memstore import (
    briefing,
    config,
    guards,
    history,
    journal,
    ledger,
    ledger_io,
    secrets,
    session,
    stats,
    workflow,
)
from memstore.errors import (
    InvalidMemory,
    InvalidName,
    MemoryExists,
    MemoryNotFound,
    MemstoreError,
    NoIdentity,
    NotAStore,
    StoreLocked,
)
from memstore.files import atomic_write, version_of
from memstore.journal import JOURNAL as JOURNAL  # re-exported: tests and bench name it
from memstore.lint import Problem, lint_store
from memstore.memory import (
    FILE_MAX,
    Memory,
    check_body,
    check_description,
    check_extra,
    check_identity,
    check_line,
    check_links,
    check_name,
    check_tags,
    evolve,
    now,
    parse,
    render,
)
from memstore.status import Status, transition, unconfirm

log = logging.getLogger(__name__)

CACHE_DIR = ".memstore"
STORE_GITIGNORE = f"{CACHE_DIR}/\n.*.tmp\n"
STORE_GITATTRIBUTES = (
    "*.md text eol=lf\n"
    "ledger.jsonl text eol=lf merge=union\n"
    # Correction outcomes are append-only records too: a union merge keeps both branches' lines.
    "outcomes.jsonl text eol=lf merge=union\n"
)
HOLDER = "holder"
"""Who holds the store's lock (pid and identity), for the "store busy" message."""


@dataclass(frozen=True, slots=True)
class Versioned:
    """A memory with the version (content hash) an update must name to avoid overwriting."""

    memory: Memory
    version: str
    path: str


def subject(prefix: str, detail: str, limit: int = 72) -> str:
    """A commit message whose first line stays scannable: `prefix — detail`, cut at `limit`.

    A cut detail is repeated whole in the message body.
    """
    line = f"{prefix} — {detail}"
    if len(line) <= limit:
        return line
    return f"{line[: limit - 1].rstrip()}…\n\n{detail}"


def _texts(value: object) -> list[str]:
    """The text in an extra field's value (a string, or the strings in a list)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return [v for v in items if isinstance(v, str)]
    return []


class Store:
    """One memory directory inside a git repository: reads, the write path, lint and history."""

    def __init__(self, root: Path, agent: str | None = None, lock_timeout: float = 10.0) -> None:
        root = root.absolute()
        if not root.is_dir():
            raise NotAStore(f"no store at {root}: run `memstore init {root}` to create one")
        repo = history.find_repo(root)
        if repo is None:
            raise NotAStore(
                f"{root} is not inside a git repository: run `memstore init {root}` to make it a "
                "store"
            )
        self.root = root.resolve()
        self.repo = repo
        self.cache = self.root / CACHE_DIR
        self.lock_timeout = lock_timeout
        self._agent = check_identity(agent) if agent else None
        self.types = config.store_types(self.root)
        self.secrets_allowed, self.secret_patterns = config.secret_settings(self.root)
        self._written: list[str] = []
        self._written_lock = threading.Lock()

    # -- set-up -------------------------------------------------------------------------------

    @classmethod
    def init(cls, root: Path, agent: str | None = None) -> Store:
        """Make `root` a store (inside its git repository, or a new one) and return it.

        Writes the store's `.gitignore` and `.gitattributes` and commits them when an identity
        is known. Running it on an existing store changes nothing.
        """
        root = root.absolute()
        root.mkdir(parents=True, exist_ok=True)
        if history.find_repo(root) is None:
            history.init_repo(root)
        store = cls(root, agent)
        written: list[Path] = []
        for name, content in (
            (".gitignore", STORE_GITIGNORE),
            (".gitattributes", STORE_GITATTRIBUTES),
        ):
            path = store.root / name
            old = path.read_text(encoding="utf-8") if path.exists() else ""
            missing = [line for line in content.splitlines() if line not in old.splitlines()]
            if missing:
                sep = "" if not old or old.endswith("\n") else "\n"
                atomic_write(path, old + sep + "\n".join(missing) + "\n")
                written.append(path)
        identity = store.identity
        if written and identity:
            with store.locked():
                history.commit(store.repo, written, "memory: init store", identity)
        return store

    # -- identity -----------------------------------------------------------------------------

    @property
    def identity(self) -> str | None:
        """Who acts: the explicit agent, else git's `user.name`, else None."""
        if self._agent:
            return self._agent
        name = history.git_identity(self.repo)
        return check_identity(name) if name else None

    def require_identity(self) -> str:
        """The acting identity.

        Raises:
            NoIdentity: saying how to set one.
        """
        identity = self.identity
        if not identity:
            raise NoIdentity(
                "no identity to record this change under: pass --agent NAME, set "
                "MEMSTORE_AGENT=NAME, or set `git config user.name`"
            )
        return identity

    # -- reading ------------------------------------------------------------------------------

    def _files(self) -> Iterator[Path]:
        for folder in sorted(self.root.iterdir()):
            if folder.name.startswith(".") or not folder.is_dir() or folder.is_symlink():
                continue
            for path in sorted(folder.glob("*.md")):
                # Not a symlink (it could point outside the store), a regular file (a FIFO
                # would block the read).
                if not path.name.startswith(".") and not path.is_symlink() and path.is_file():
                    yield path

    def path_for(self, name: str) -> Path:
        """The file of memory `name`.

        Raises:
            InvalidName: for a name that is not a slug.
            MemoryNotFound: when no type folder holds it.
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
                f"{' and '.join(self.rel(p) for p in found)}; keep one (see `memstore lint`)"
            )
        if found:
            return found[0]
        raise MemoryNotFound(f"no memory named '{name}' in {self.root}")

    def read_file(self, path: Path) -> tuple[Memory, bytes]:
        """The memory in file `path` and the file's bytes.

        Raises:
            InvalidMemory: for a file too large, not UTF-8 or not a valid memory.
        """
        if path.stat().st_size > FILE_MAX:
            raise InvalidMemory(f"{self.rel(path)} is larger than {FILE_MAX} bytes")
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidMemory(f"{self.rel(path)} is not UTF-8 text") from e
        try:
            return parse(text), data
        except (InvalidMemory, InvalidName) as e:
            # A bad name inside a file is a broken file, not a bad argument: one such file
            # must not stop `list` from serving the others.
            raise InvalidMemory(f"{self.rel(path)}: {e}") from e

    def read(self, name: str) -> Versioned:
        """Memory `name` with its version (pass it back to `edit` to refuse lost updates).

        Raises:
            MemoryNotFound, InvalidMemory.
        """
        path = self.path_for(name)
        memory, data = self.read_file(path)
        return Versioned(memory, version_of(data), self.rel(path))

    def get(self, name: str) -> Memory:
        """Memory `name`.

        Raises:
            MemoryNotFound, InvalidMemory.
        """
        return self.read(name).memory

    def memories(self) -> Iterator[Memory]:
        """Every valid memory in the store; a broken file is skipped with a warning naming it."""
        for path in self._files():
            try:
                yield self.read_file(path)[0]
            except (InvalidMemory, OSError) as e:
                log.warning("skipping %s: %s", self.rel(path), e)

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

    def history(self, name: str) -> list[history.Revision]:
        """The commits that changed memory `name`, newest first."""
        return history.log(self.repo, self.path_for(name))

    # -- the write path -----------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Generator[None]:
        """Hold the store's write lock.

        Raises:
            StoreLocked: naming the lock file when it is not free within the timeout.
        """
        if self.cache.is_symlink():
            raise NotAStore(f"{self.cache} is a symlink; memstore keeps its lock only in a folder")
        self.cache.mkdir(exist_ok=True)
        lock = FileLock(self.cache / "lock", timeout=self.lock_timeout)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            # Reported, then bounded: a writer that died released its flock with its process.
            log.warning(
                "store busy: %s is held by %s; retrying for up to %gs",
                lock.lock_file,
                self._holder(),
                self.lock_timeout,
            )
            try:
                lock.acquire(timeout=self.lock_timeout)
            except Timeout as e:
                raise StoreLocked(
                    f"store busy: could not take {lock.lock_file} within "
                    f"{self.lock_timeout:g}s (held by {self._holder()}); another memstore "
                    "process is writing — try again, or raise MEMSTORE_LOCK_TIMEOUT"
                ) from e
        try:
            (self.cache / HOLDER).write_text(
                f"pid {os.getpid()} ({self._agent or 'git user.name'})\n", encoding="utf-8"
            )
            journal.recover(self)
            yield
        finally:
            lock.release()

    def _commit(self, changes: list[tuple[Path, Memory]], message: str, actor: str) -> None:
        """Write each memory's file and commit them as one change. Call with the lock held.

        A journal of the change goes first, so a process killed midway leaves the next writer
        enough to finish it (every file written) or undo it (only some); a failed commit puts
        the old files back, so a refused write changes nothing.
        """
        texts = [(path, render(memory)) for path, memory in changes]
        guards.refuse_uncommitted(self, [path for path, _ in changes])
        entries = journal.write_files(self, texts, message, actor)
        try:
            for path, text in texts:
                atomic_write(path, text)
            history.commit(self.repo, [p for p, _ in texts], message, actor, self.lock_timeout)
        except (MemstoreError, OSError):
            journal.undo(self, entries)
            journal.clear(self)
            raise
        journal.clear(self)
        self.note_written([self.rel(path) for path, _ in changes])

    def note_written(self, rels: Iterable[str]) -> None:
        """Remember memory files the write path just wrote (store-relative paths), for the
        search index to pick up before the next search."""
        with self._written_lock:
            self._written.extend(rels)

    def take_written(self) -> list[str]:
        """The paths noted by `note_written` since the last call, and forget them."""
        with self._written_lock:
            taken, self._written = self._written, []
        return taken

    def add(
        self,
        name: str,
        *,
        type: str,
        description: str,
        body: str = "",
        tags: tuple[str, ...] | list[str] = (),
        links: tuple[str, ...] | list[str] = (),
        extra: dict[str, Any] | None = None,
        allow_secret: bool = False,
    ) -> Memory:
        """Save a new memory as a draft owned by the acting identity, and commit it.

        Raises:
            InvalidName, InvalidMemory, MemoryExists, NoIdentity, StoreLocked,
            SecretFound (unless `allow_secret`).
        """
        check_name(name)
        if type not in self.types:
            raise InvalidMemory(f"unknown type {type!r}; types are: {', '.join(self.types)}")
        description = check_description(description)
        body = check_body(body)
        tag_list = check_tags(list(tags))
        link_list = check_links(links)
        extra = check_extra(extra)
        self.refuse_secrets(
            {"name": name, "description": description, "body": body, "tags": tag_list}
            | {f"extra field {k!r}": _texts(v) for k, v in extra.items()},
            allow_secret,
        )
        actor = self.require_identity()
        at = now()
        memory = Memory(
            name=name,
            description=description,
            type=type,
            status=Status.DRAFT.value,
            owner=actor,
            created=at,
            updated=at,
            tags=tag_list,
            links=link_list,
            body=body,
            extra=dict(extra or {}),
        )
        with self.locked():
            try:
                existing = self.path_for(name)
            except MemoryNotFound:
                pass
            else:
                raise MemoryExists(
                    f"a memory named '{name}' already exists at {self.rel(existing)}; "
                    "choose another name or edit that one"
                )
            path = guards.target(self, type, name)
            self._commit(
                [(path, memory)], subject(f"memory: add {type}/{name}", description), actor
            )
        return memory

    def edit(
        self,
        name: str,
        *,
        description: str | None = None,
        body: str | None = None,
        tags: tuple[str, ...] | list[str] | None = None,
        links: tuple[str, ...] | list[str] | None = None,
        expected_version: str | None = None,
        allow_secret: bool = False,
    ) -> Memory:
        """Change a memory's description, body, tags or links, and commit it.

        A content change (description or body) sends a confirmed memory back to draft.
        Without `expected_version` the fields given replace the current ones, whatever they are.

        Raises:
            MemoryNotFound, InvalidMemory, Conflict (the file changed since `expected_version`),
            SecretFound (unless `allow_secret`).
        """
        if description is not None:
            description = check_description(description)
        if body is not None:
            body = check_body(body)
        tag_list = check_tags(list(tags)) if tags is not None else None
        link_list = check_links(links) if links is not None else None
        self.refuse_secrets(
            {"description": description, "body": body, "tags": tag_list}, allow_secret
        )
        actor = self.require_identity()
        with self.locked():
            current = self.read(name)
            guards.check_version(self, name, current, expected_version)
            old = current.memory
            wanted = {
                "description": description,
                "body": body,
                "tags": tag_list,
                "links": link_list,
            }
            updates = {k: v for k, v in wanted.items() if v is not None and v != getattr(old, k)}
            if not updates:
                return old
            changed = list(updates)
            new = evolve(old, **updates)
            at = now()
            content_changed = bool({"description", "body"} & set(changed))
            new = unconfirm(new, at=at) if content_changed else evolve(new, updated=at)
            note = " (back to draft)" if old.status != new.status else ""
            message = f"memory: edit {old.type}/{name} — {', '.join(changed)}{note}"
            self._commit([(self.root / current.path, new)], message, actor)
        return new

    def _move(
        self,
        name: str,
        to: Status,
        reason: str,
        superseded_by: str | None = None,
        expected_version: str | None = None,
        allow_secret: bool = False,
    ) -> Memory:
        check_line(reason, "reason")
        self.refuse_secrets({"reason": reason}, allow_secret)
        actor = self.require_identity()
        with self.locked():
            current = self.read(name)
            guards.check_version(self, name, current, expected_version)
            old = current.memory
            at = now()
            new = transition(
                old, to, actor=actor, reason=reason, at=at, superseded_by=superseded_by
            )
            changes = [(self.root / current.path, new)]
            verb = {Status.CONFIRMED: "confirm", Status.DEPRECATED: "deprecate"}.get(to, "restore")
            detail = reason.strip()
            if superseded_by is not None:
                successor = self.read(superseded_by)
                if old.name not in successor.memory.supersedes:
                    after = evolve(
                        successor.memory, supersedes=(*successor.memory.supersedes, old.name)
                    )
                    changes.append((self.root / successor.path, after))
                detail += f" (superseded by {superseded_by})"
            self._commit(changes, subject(f"memory: {verb} {old.type}/{name}", detail), actor)
        return new

    def confirm(
        self,
        name: str,
        reason: str,
        *,
        expected_version: str | None = None,
        allow_secret: bool = False,
    ) -> Memory:
        """Move a draft to confirmed; the acting identity must not be its owner.

        With `expected_version`, only the version the reviewer read can be confirmed.

        Raises:
            SelfApproval, InvalidTransition, MemoryNotFound, Conflict.
        """
        return self._move(
            name,
            Status.CONFIRMED,
            reason,
            expected_version=expected_version,
            allow_secret=allow_secret,
        )

    def deprecate(
        self,
        name: str,
        reason: str,
        superseded_by: str | None = None,
        *,
        expected_version: str | None = None,
        allow_secret: bool = False,
    ) -> Memory:
        """Mark a memory deprecated, keeping the file; links both ways to a successor if given.

        Raises:
            InvalidTransition, MemoryNotFound, Conflict.
        """
        if superseded_by is not None:
            check_name(superseded_by, "superseded_by")
        return self._move(
            name, Status.DEPRECATED, reason, superseded_by, expected_version, allow_secret
        )

    def restore(
        self,
        name: str,
        reason: str,
        *,
        expected_version: str | None = None,
        allow_secret: bool = False,
    ) -> Memory:
        """Bring a deprecated memory back as a draft.

        Raises:
            InvalidTransition, MemoryNotFound, Conflict.
        """
        return self._move(
            name,
            Status.DRAFT,
            reason,
            expected_version=expected_version,
            allow_secret=allow_secret,
        )

    # -- lint ---------------------------------------------------------------------------------

    def lint(self) -> list[Problem]:
        """Every problem in the store's files and in how their confirmations were committed."""
        return lint_store(self)

    # -- reliability --------------------------------------------------------------------------

    def refuse_secrets(
        self,
        fields: Mapping[str, str | tuple[str, ...] | list[str] | None],
        allow_secret: bool,
        because: str = secrets.MEMORIES_SHARED,
    ) -> None:
        """Raise SecretFound unless allowed per call or by the store's `secrets: allow`."""
        if not allow_secret and not self.secrets_allowed:
            secrets.refuse(fields, self.secret_patterns, because)

    def _holder(self) -> str:
        """Who holds the lock, as its holder wrote it (`pid N (identity)`), or `another process`."""
        try:
            return (self.cache / HOLDER).read_text(encoding="utf-8").strip() or "another process"
        except OSError:
            return "another process"

    def pending(self) -> str | None:
        """The commit message of a write a killed process left unfinished, else None."""
        return journal.pending(self.cache)

    def recover(self) -> str | None:
        """Finish or undo what a killed writer left, as any write would first; returns what it
        was (its commit message), or None when nothing was pending.

        Raises:
            StoreLocked, GitError.
        """
        left = self.pending()
        with self.locked():
            history.remove_stale_locks(self.repo)
        return left

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

    # -- workflow -----------------------------------------------------------------------------

    def correct(
        self,
        name: str,
        *,
        description: str,
        severity: str | None = None,
        applies_when: tuple[str, ...] | list[str] = (),
        evidence: str | None = None,
        body: str = "",
        tags: tuple[str, ...] | list[str] = (),
        links: tuple[str, ...] | list[str] = (),
        type: str = "correction",
    ) -> Memory:
        """Record a correction (or warning) as a draft; it acts in `brief` and `check` at once.

        Raises:
            InvalidMemory (bad severity, pattern or evidence), InvalidName, MemoryExists.
        """
        return session.correct(
            self,
            name,
            description=description,
            severity=severity,
            applies_when=applies_when,
            evidence=evidence,
            body=body,
            tags=tags,
            links=links,
            type=type,
        )

    def rules(self, memories: list[Memory] | None = None) -> list[workflow.Rule]:
        """Every correction and warning that is not deprecated, most severe first."""
        return session.rules(self, memories)

    def check(
        self, description: str, *, action: str | None = None, target: str | None = None
    ) -> workflow.CheckResult:
        """The verdict on an action before it is taken: allow, warn or block, with reasons.

        Matching corrections and warnings give their verdict (p0 blocks, lower severities
        warn). With `action` and `target`, the ledger too: executed, or claimed by someone
        else, blocks (a damaged ledger blocks: fail closed). Confirmed runbooks about the
        action are listed to follow.

        Raises:
            InvalidMemory: for an empty description.
            InvalidLedgerEntry: for only one of `action` and `target`, or a bad one.
        """
        return session.check(self, description, action=action, target=target)

    @property
    def outcomes_path(self) -> Path:
        """The append-only record of correction outcomes, committed beside the memories."""
        return self.root / stats.OUTCOMES_FILE

    def record_outcome(
        self, name: str, outcome: str, evidence: str | None = None
    ) -> stats.OutcomeRecord:
        """Append whether correction `name` was heeded or recurred, and commit it.

        Raises:
            MemoryNotFound, InvalidMemory (not a correction or warning; unknown outcome),
            SecretFound (the evidence looks like a credential).
        """
        return session.record_outcome(self, name, outcome, evidence)

    def outcomes(self) -> list[stats.OutcomeRecord]:
        """Every recorded outcome, oldest first.

        Raises:
            InvalidMemory: naming a line that is not a valid record.
        """
        return session.outcomes(self)

    def heed_rates(self) -> tuple[list[stats.HeedRate], stats.HeedRate]:
        """Heed rates per correction (most observed first) and overall, with Wilson intervals."""
        return stats.heed_rates(self.outcomes())

    def brief(
        self,
        *,
        for_text: str | None = None,
        budget_tokens: int = briefing.DEFAULT_BUDGET,
        since: str | None = None,
        mark: bool = True,
    ) -> briefing.Briefing:
        """A Markdown briefing for the start of a session, fitted to `budget_tokens`.

        Lists the rules that apply (most severe first), claims in progress, confirmed
        decisions and runbooks about `for_text`, drafts awaiting your review, and what changed
        since your last briefing (or since `since`: a commit or a date git understands).
        With `mark`, remembers this session's HEAD in the ignored cache for the next one.
        """
        return briefing.brief(
            self, for_text=for_text, budget_tokens=budget_tokens, since=since, mark=mark
        )

    # -- ledger -------------------------------------------------------------------------------

    @property
    def ledger_path(self) -> Path:
        """The store's ledger file, `<store>/ledger.jsonl`."""
        return self.root / ledger.LEDGER_FILE

    def _ledger_view(self) -> ledger.View:
        return ledger_io.view(self)

    def ledger_check(
        self, action: str, target: str, *, now: datetime | None = None
    ) -> ledger.Check:
        """Whether `action` on `target` is NOT_EXECUTED, IN_PROGRESS (claimed) or EXECUTED.

        Reads the working ledger and every ledger line git has committed, so a restored or
        truncated file still answers EXECUTED, with a warning that lines were lost.

        Raises:
            InvalidLedgerEntry: for a bad action or target.
            LedgerCorrupt: when a damaged line might hide a `done` record (fail closed).
        """
        return ledger_io.check(self, action, target, now)

    def ledger_claim(
        self,
        action: str,
        target: str,
        ttl: float = ledger.TTL_DEFAULT,
        *,
        now: datetime | None = None,
        allow_secret: bool = False,
    ) -> ledger.Event:
        """Claim `action` on `target` for `ttl` seconds as the acting identity, and commit it.

        Re-claiming your own claim refreshes it. Check and append happen under the store's
        lock, so of several racing claims exactly one wins.

        Raises:
            AlreadyExecuted, ClaimHeld, InvalidLedgerEntry, LedgerCorrupt, NoIdentity,
            StoreLocked, SecretFound (the action or target looks like a credential, unless
            `allow_secret`).
        """
        return ledger_io.claim(self, action, target, ttl, now, allow_secret)

    def ledger_release(
        self, action: str, target: str, *, now: datetime | None = None, allow_secret: bool = False
    ) -> ledger.Event:
        """Give up the acting identity's valid claim on `action` on `target`, and commit it.

        Raises:
            InvalidLedgerEntry (no claim of yours to release), LedgerCorrupt, NoIdentity,
            SecretFound (unless `allow_secret`).
        """
        return ledger_io.release(self, action, target, now, allow_secret)

    def ledger_record(
        self,
        action: str,
        target: str,
        evidence: str | None = None,
        note: str | None = None,
        failed: bool = False,
        *,
        now: datetime | None = None,
        allow_secret: bool = False,
    ) -> ledger.Event:
        """Record that `action` on `target` was done (evidence URL required) or failed (note
        required), as the acting identity, and commit it. A failure ends your claim.

        Nothing can be removed from the ledger, so credential-like evidence, note, action or
        target is refused unless `allow_secret` (or the store's `secrets: allow`).

        Raises:
            InvalidLedgerEntry, LedgerCorrupt, NoIdentity, StoreLocked, SecretFound.
        """
        return ledger_io.record(self, action, target, evidence, note, failed, now, allow_secret)

    def ledger_list(
        self,
        action: str | None = None,
        target: str | None = None,
        actor: str | None = None,
        since: str | None = None,
        *,
        now: datetime | None = None,
    ) -> list[ledger.Event]:
        """Ledger events matching every filter given, oldest first; `since` takes a date, a UTC
        time or a duration back from now (`24h`). Includes events only git still has.

        Raises:
            InvalidLedgerEntry: for a bad filter.
        """
        return ledger_io.events(self, action, target, actor, since, now)

    def ledger_verify(self) -> ledger.Verification:
        """Check every line's hash and link, and that the file holds every line git committed."""
        return ledger_io.verify(self)
