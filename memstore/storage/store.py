"""`Store`: one memory directory opened, and the memory moves, each one commit through the
write transaction. Reading is `reading.Reader`'s, which `Store` extends."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstore import config
from memstore.errors import (
    Conflict,
    EditDeprecated,
    GitError,
    InvalidMemory,
    InvalidTransition,
    MemoryExists,
    MemstoreError,
    RuleBinds,
    SelfApproval,
)
from memstore.git import commit, objects, repository
from memstore.model.fields import (
    check_body,
    check_description,
    check_expires,
    check_extra,
    check_files,
    check_importance,
    check_line,
    check_links,
    check_name,
    check_tags,
)
from memstore.model.identity import same_identity
from memstore.model.memory import (
    RULE_TYPES,
    Memory,
    content_hash,
    evolve,
    now,
    renamed,
    render,
)
from memstore.model.status import MOVES, Status, propose_deprecation, transition, unconfirm
from memstore.model.status import verify as verify_memory
from memstore.storage import settings, transaction
from memstore.storage.files import atomic_write, memory_files, read_regular, shown, version_of
from memstore.storage.reading import CACHE_DIR, Reader, Versioned
from memstore.storage.written import Written

if TYPE_CHECKING:
    import logging

    from memstore.storage import binding


def _log() -> logging.Logger:
    """This module's logger. `logging` loads with the first warning: a command that logs
    none (a `memstore add`) never pays for importing it."""
    import logging

    return logging.getLogger(__name__)


STORE_GITIGNORE = f"{CACHE_DIR}/\n.*.tmp\n"
STORE_GITATTRIBUTES = (
    "*.md text eol=lf\n"
    "ledger.jsonl text eol=lf merge=union\n"
    # Correction outcomes are append-only records too: a union merge keeps both branches' lines.
    "outcomes.jsonl text eol=lf merge=union\n"
    # So are review requests and deferrals.
    "reviews.jsonl text eol=lf merge=union\n"
)


def subject(prefix: str, detail: str, limit: int = 72) -> str:
    """A commit message whose first line stays scannable: `prefix — detail`, cut at `limit`.

    A cut detail is repeated whole in the message body.
    """
    line = f"{prefix} — {detail}"
    if len(line) <= limit:
        return line
    return f"{line[: limit - 1].rstrip()}…\n\n{detail}"


def check_version(store: Store, name: str, current: Versioned, expected: str | None) -> None:
    """Raise Conflict, showing what changed, if `current` is not at version `expected`."""
    if expected is None or expected == current.version:
        return
    text = (store.root / current.path).read_bytes().decode("utf-8")
    old = text_at_version(store, store.root / current.path, expected)
    if old is None:
        detail = f"version {expected} is not in the history; the file now reads:\n{text}"
    else:
        import difflib  # here: only a conflict needs it, and every CLI call would pay for it

        detail = "".join(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                text.splitlines(keepends=True),
                f"{current.path} (version {expected}, which you read)",
                f"{current.path} (version {current.version}, now)",
            )
        )
    raise Conflict(
        f"'{name}' changed since you read it (you read version {expected}, it is now "
        f"{current.version}); read it again and reapply your change",
        current.version,
        detail,
    )


def text_at_version(store: Store, path: Path, version: str, depth: int = 50) -> str | None:
    """The committed content of `path` whose version is `version`, among recent commits."""
    if not re.fullmatch(r"[0-9a-f]{12}", version):
        return None
    from memstore.git import gitlog  # reading history: an add never needs it

    for revision in gitlog.log(store.repo, path, limit=depth):
        data = objects.blob(store.repo, revision.commit, path)
        if data is not None and version_of(data) == version:
            return data.decode("utf-8", "replace")
    return None


def _texts(value: object) -> list[str]:
    """The text in an extra field's value (a string, or the strings in a list)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return [v for v in items if isinstance(v, str)]
    return []


def _rehashed(before: Memory, after: Memory) -> Memory:
    """`after`, whose references a rename rewrote, with its `confirmed_hash` following its
    content when it matched `before`'s (so the field keeps saying what was confirmed)."""
    if before.confirmed_hash and before.confirmed_hash == content_hash(before):
        return evolve(after, confirmed_hash=content_hash(after))
    return after


def _bound_why(force: binding.Force, store: Store) -> str:
    from memstore.storage import binding

    if binding.is_person(force.owner, settings.store_humans(store.root)):
        return f"{force.owner}'s, a person's"
    return "confirmed, p0"


class Store(Reader):
    """One memory directory inside a git repository: opened, read (see `Reader`) and changed
    by the memory moves, each one commit."""

    def __init__(self, root: Path, agent: str | None = None, lock_timeout: float = 10.0) -> None:
        super().__init__(root, agent)
        self.lock_timeout = lock_timeout
        self.written = Written(self.root)
        """What this process's writes changed, for the search index (see `search.upkeep`)."""
        self._signer: commit.Signer | None = None

    # -- set-up -------------------------------------------------------------------------------

    @classmethod
    def init(cls, root: Path, agent: str | None = None, git_root: Path | None = None) -> Store:
        """Make `root` a store (inside its git repository, or a new one) and return it.

        Outside any repository, `git init` runs in `git_root` (`root` itself or a folder above
        it), by default in `root`. Writes the store's `.gitignore` and `.gitattributes` and
        commits them when an identity is known. Running it on an existing store changes nothing.

        Raises:
            InvalidMemory: for a `git_root` that does not hold `root`, or that differs from the
                repository `root` is already in.
        """
        root = root.absolute()
        top = git_root.absolute() if git_root is not None else None
        if top is not None and top != root and top not in root.parents:
            raise InvalidMemory(f"--git-root {shown(top)} must be the store folder or above it")
        found = repository.find_repo(root)
        if found is not None and top is not None and Path(found.top).resolve() != top.resolve():
            raise InvalidMemory(
                f"{shown(root)} is already in the git repository {shown(Path(found.top))}; "
                "leave out --git-root"
            )
        root.mkdir(parents=True, exist_ok=True)
        if found is None:
            repository.init_repo(top or root)
        store = cls(root, agent)
        changes: list[transaction.Write] = []
        for name, content in (
            (".gitignore", STORE_GITIGNORE),
            (".gitattributes", STORE_GITATTRIBUTES),
        ):
            path = transaction.check_path(store, store.root / name)
            old = path.read_text(encoding="utf-8") if path.exists() else ""
            missing = [line for line in content.splitlines() if line not in old.splitlines()]
            if missing:
                sep = "" if not old or old.endswith("\n") else "\n"
                changes.append(transaction.Write(path, old + sep + "\n".join(missing) + "\n"))
        identity = store.identity
        if changes and identity:
            with transaction.locked(store):
                transaction.commit(store, changes, "memory: init store", identity)
        elif changes:  # no identity to commit as: the files are written for the first commit
            for change in changes:
                atomic_write(change.path, change.text)
        return store

    # -- the write path -----------------------------------------------------------------------

    @property
    def holder(self) -> str:
        """Who this process writes as, for the "store busy" message."""
        return self._agent or "git user.name"

    @property
    def signer(self) -> commit.Signer | None:
        """What signs this process's commits (None: they go unsigned), found on the first write.

        Raises:
            SigningError: signatures are required and there is no usable key.
        """
        if self._signer is None and (self.signing.required or config.signing_key() is not None):
            from memstore.git import signing  # only stores that sign

            self._signer = signing.signer(self.repo, self.signing.required, self.allowed_signers)
        return self._signer

    def commit_memories(
        self,
        changes: list[tuple[Path, Memory]],
        message: str,
        actor: str,
        removed: Iterable[Path] = (),
    ) -> None:
        """Write each memory's file, remove the `removed` ones, and commit it all as one
        change, keeping the verdicts this process read in step. Call with the lock held."""
        removed = list(removed)
        writes: list[transaction.Change] = [
            transaction.Write(path, render(memory)) for path, memory in changes
        ]
        writes += [transaction.Remove(path) for path in removed]
        sha = transaction.commit(self, writes, message, actor)
        if sha is not None and not self.signed and self._trust is not None:
            # (A process that has read no verdicts yet has none to extend.)
            from memstore.storage import trust

            after: dict[str, Memory | None] = {
                repository.repo_path(self.repo, path): memory for path, memory in changes
            }
            after |= {repository.repo_path(self.repo, path): None for path in removed}
            self.trust.wrote(sha, after, trust.By(sha, actor, actor))

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
        extra = self._kept_fields(type, check_extra(extra))
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
        with transaction.locked(self):
            existing = self._located(name)
            if existing is not None:
                raise MemoryExists(
                    f"a memory named '{name}' already exists at {shown(existing)}; "
                    "choose another name or edit that one"
                )
            missing = [link for link in link_list if self._located(link) is None]
            if missing:
                raise InvalidMemory(
                    f"links name no memory: {', '.join(missing)}; save those first, or leave "
                    "them out"
                )
            path = transaction.check_path(self, self.root / type / f"{name}.md")
            self.commit_memories(
                [(path, memory)], subject(f"memory: add {type}/{name}", description), actor
            )
        return memory

    def _kept_fields(self, type: str, extra: dict[str, Any]) -> dict[str, Any]:
        """`extra` with `expires`, `files` and `importance` checked and written canonically,
        and a `working` memory given the store's default expiry.

        Raises:
            InvalidMemory: for a bad expiry, path or importance.
        """
        out = dict(extra)
        if out.get("expires") is None and type == "working":
            default = settings.upkeep_settings(self.root).working_expires
            if default is not None:
                out["expires"] = default
        if out.get("expires") is not None:
            out["expires"] = check_expires(out["expires"])
        else:
            out.pop("expires", None)
        if out.get("files"):
            out["files"] = list(check_files(out["files"]))
        else:
            out.pop("files", None)
        if out.get("importance") is not None:
            out["importance"] = check_importance(out["importance"])
        return out

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
        force: bool = False,
    ) -> Memory:
        """Change a memory's description, body, tags or links, and commit it.

        A content change (description or body) sends a confirmed memory back to draft.
        Without `expected_version` the fields given replace the current ones, whatever they are.
        A deprecated memory is edited only with `force`; it stays deprecated.

        Raises:
            MemoryNotFound, InvalidMemory, Conflict (the file changed since `expected_version`),
            SecretFound (unless `allow_secret`), EditDeprecated (unless `force`).
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
        with transaction.locked(self):
            current = self.read(name, raw=True)
            check_version(self, name, current, expected_version)
            old = current.memory
            if old.status == Status.DEPRECATED and not force:
                why = f" ({old.deprecated_reason})" if old.deprecated_reason else ""
                raise EditDeprecated(f"'{name}' is deprecated{why}, so an edit would go unseen")
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
            if content_changed:
                self.refuse_lift(current, actor, "change the text of")
            new = unconfirm(new, at=at) if content_changed else evolve(new, updated=at)
            note = " (back to draft)" if old.status != new.status else ""
            message = f"memory: edit {old.type}/{name} — {', '.join(changed)}{note}"
            self.commit_memories([(self.root / current.path, new)], message, actor)
        return new

    def move(
        self,
        name: str,
        to: Status,
        reason: str,
        superseded_by: str | None = None,
        expected_version: str | None = None,
        allow_secret: bool = False,
    ) -> Memory:
        """Move memory `name` to status `to` as the acting identity (see `confirm`, `deprecate`
        and `restore`), and commit it.

        Raises:
            SelfApproval, InvalidTransition, MemoryNotFound, Conflict, SecretFound.
        """
        check_line(reason, "reason")
        self.refuse_secrets({"reason": reason}, allow_secret)
        actor = self.require_identity()
        with transaction.locked(self):
            current = self.read(name, raw=True)
            check_version(self, name, current, expected_version)
            old = self.as_history_says(current, actor, to)
            at = now()
            if str(to) == Status.DEPRECATED:
                proposal = self._proposal(current, old, actor, reason, at, superseded_by)
                if proposal is not None:
                    return proposal
                superseded_by = superseded_by or old.deprecation_proposed_successor
            new = transition(
                old, to, actor=actor, reason=reason, at=at, superseded_by=superseded_by
            )
            changes = [(self.root / current.path, new)]
            verb = {Status.CONFIRMED: "confirm", Status.DEPRECATED: "deprecate"}.get(to, "restore")
            detail = reason.strip()
            if superseded_by is not None:
                successor = self.read(superseded_by, raw=True)
                if old.name not in successor.memory.supersedes:
                    after = evolve(
                        successor.memory, supersedes=(*successor.memory.supersedes, old.name)
                    )
                    changes.append((self.root / successor.path, after))
                detail += f" (superseded by {superseded_by})"
            self.commit_memories(
                changes, subject(f"memory: {verb} {old.type}/{name}", detail), actor
            )
        return new

    def rename(self, name: str, new_name: str) -> tuple[Memory, list[str]]:
        """Rename memory `name` to `new_name` in one commit, and point every reference to it
        (`links`, `supersedes`, `superseded_by`, `[[name]]` in bodies) at the new name.

        Its owner and confirmation carry over: the history sees the same memory under a new
        name (see `trust`), and a reference rewritten in the same commit is no change to what
        a reviewer confirmed. Returns the renamed memory and the names of the memories whose
        references were rewritten.

        Raises:
            InvalidName, MemoryNotFound, MemoryExists, Conflict, NoIdentity, StoreLocked.
        """
        check_name(new_name, "new name")
        actor = self.require_identity()
        if new_name == name:
            raise MemoryExists(f"'{name}' already has that name; give another one")
        with transaction.locked(self):
            current = self.read(name, raw=True)
            existing = self._located(new_name)
            if existing is not None:
                raise MemoryExists(
                    f"a memory named '{new_name}' already exists at {self.rel(existing)}; "
                    "choose another name, or forget or rename that one first"
                )
            names = {name: new_name}
            at = now()
            old = current.memory
            moved = _rehashed(old, evolve(renamed(old, names), updated=at))
            target = transaction.check_path(self, self.root / old.type / f"{new_name}.md")
            changes = [(target, moved)]
            pointing: list[str] = []
            for entry in memory_files(self.root):
                if entry.path == self.root / current.path:
                    continue
                try:
                    other = self.read_file(entry.path, raw=True)[0]
                except (InvalidMemory, OSError) as e:
                    _log().warning("not rewriting references in %s: %s", entry.rel, e)
                    continue
                after = renamed(other, names)
                if after != other:
                    changes.append((entry.path, _rehashed(other, evolve(after, updated=at))))
                    pointing.append(other.name)
            detail = f"{old.type}/{name} → {old.type}/{new_name}"
            if pointing:
                detail += f" (references rewritten in {', '.join(sorted(pointing))})"
            self.commit_memories(
                changes,
                subject("memory: rename", detail),
                actor,
                removed=[self.root / current.path],
            )
        return moved, sorted(pointing)

    def retype(self, name: str, type: str) -> Memory:
        """Move memory `name` to type `type` (its folder) in one commit; it keeps its owner.
        The type is part of what a reviewer confirmed, so a confirmed memory goes back to draft.

        Raises:
            InvalidName, InvalidMemory (unknown or same type), MemoryNotFound, Conflict.
        """
        if type not in self.types:
            raise InvalidMemory(f"unknown type {type!r}; types are: {', '.join(self.types)}")
        actor = self.require_identity()
        with transaction.locked(self):
            current = self.read(name, raw=True)
            old = current.memory
            if old.type == type:
                raise InvalidMemory(f"'{name}' is a {type} already")
            self.refuse_lift(current, actor, "retype")
            at = now()
            new = unconfirm(evolve(old, type=type), at=at)
            target = transaction.check_path(self, self.root / type / f"{name}.md")
            note = " (back to draft)" if new.status != old.status else ""
            self.commit_memories(
                [(target, new)],
                f"memory: retype {old.type}/{name} → {type}/{name}{note}",
                actor,
                removed=[self.root / current.path],
            )
        return new

    def forget(self, name: str, reason: str, allow_secret: bool = False) -> Memory:
        """Remove memory `name`'s file in one commit saying why; its history stays in git
        (see docs/cli.md for purging a secret from the history). Returns what was removed.

        Raises:
            InvalidName, MemoryNotFound, InvalidTransition (no reason), Conflict, NoIdentity.
        """
        reason = check_line(reason, "reason").strip()
        if not reason:
            raise InvalidTransition(f"to forget '{name}' give a one-line reason")
        self.refuse_secrets({"reason": reason}, allow_secret)
        actor = self.require_identity()
        with transaction.locked(self):
            current = self.read(name, raw=True)
            old = current.memory
            self.refuse_lift(current, actor, "forget")
            self.commit_memories(
                [],
                subject(f"memory: forget {old.type}/{name}", reason),
                actor,
                removed=[self.root / current.path],
            )
        return old

    # -- the rules that bind the agents (see `binding`) ------------------------------------------

    def force(self, current: Versioned) -> binding.Force | None:
        """The version in force of `current` when it is a rule that binds the agents, else None
        (also when git cannot read the history: the replay still judges what is committed)."""
        try:
            key = repository.repo_path(self.repo, self.root / current.path)
            return self.trust.binding().get(key)
        except GitError:
            return None

    def bound(self, actor: str, current: Versioned) -> binding.Force | None:
        """The force of `current` when it binds `actor` (an agent: anyone not among the
        store's people), else None."""
        if current.memory.type not in RULE_TYPES:  # only a rule binds: no history read
            return None
        # Loaded here: a write that moves no rule (a `memstore add`) never needs it.
        from memstore.storage import binding

        if binding.is_person(actor, settings.store_humans(self.root)):
            return None
        return self.force(current)

    def refuse_lift(self, current: Versioned, actor: str, verb: str) -> None:
        """Refuse a change by `actor` that would lift, alone, a rule that binds it.

        Raises:
            RuleBinds: naming who can make the change, and the proposal an agent can make.
        """
        force = self.bound(actor, current)
        if force is None:
            return
        from memstore.storage import binding

        who = binding.who_agrees(force, settings.store_humans(self.root))
        name = current.memory.name
        raise RuleBinds(
            f"cannot {verb} '{name}': it is a rule that binds you ({_bound_why(force, self)}), "
            f"and no agent lifts such a rule alone; propose its deprecation instead "
            f"(`memstore deprecate {name} --reason WHY`, with --superseded-by NEW for a "
            f"rewritten rule), which {who} must agree to"
        )

    def _proposal(
        self,
        current: Versioned,
        old: Memory,
        actor: str,
        reason: str,
        at: str,
        successor: str | None,
    ) -> Memory | None:
        """For a deprecation of a rule that binds `actor`: commit a proposal and return it,
        or None when `actor` completes another identity's proposal (the caller deprecates).

        Raises:
            SelfApproval: `actor` proposed it already.
            RuleBinds: a person's rule, which another agent's proposal awaits.
        """
        force = self.bound(actor, current)
        if force is None:
            return None
        from memstore.storage import binding

        humans = settings.store_humans(self.root)
        who = binding.who_agrees(force, humans)
        name = old.name
        if force.proposer is not None:
            if same_identity(force.proposer, actor):
                raise SelfApproval(
                    f"you ({actor}) proposed deprecating '{name}' already; it stays in force "
                    f"until {who} agrees, and nobody agrees to their own proposal"
                )
            if not binding.is_person(force.owner, humans):
                return None  # another identity agrees: the deprecation goes ahead
            raise RuleBinds(
                f"cannot deprecate '{name}': it is a person's rule, and {force.proposer}'s "
                f"proposal to deprecate it awaits {who}; only a person lifts it"
            )
        if successor is not None:
            self.read(successor, raw=True)  # it must exist
        new = propose_deprecation(old, actor=actor, reason=reason, at=at, successor=successor)
        self.commit_memories(
            [(self.root / current.path, new)],
            subject(f"memory: propose deprecating {old.type}/{name}", reason.strip()),
            actor,
        )
        return new

    def as_history_says(self, current: Versioned, actor: str, to: Status | str) -> Memory:
        """`current` as its history supports it, for a move to `to` by `actor`.

        For a confirmation: nobody confirms a memory they created, whatever its `owner` field
        says; and a confirmed memory the history does not back (shown as unverified) counts
        as a draft, so a reviewer can confirm it afresh.

        Raises:
            SelfApproval: when `actor` committed the memory's creation.
        """
        memory = current.memory
        if str(to) != Status.CONFIRMED:
            return memory
        path = self.root / current.path
        transaction.refuse_uncommitted(self, [path])
        try:
            key = repository.repo_path(self.repo, path)
            owner = self.trust.current().owners.get(key)
        except GitError:
            return memory
        if owner is not None and same_identity(owner, actor):
            why = "" if same_identity(memory.owner, owner) else " (its history says so)"
            raise SelfApproval(
                f"cannot confirm '{memory.name}': you ({actor}) created it{why}, and nobody "
                f"confirms their own memory; any identity other than {owner} (names compare "
                "case-insensitively) can confirm it"
            )
        if memory.status == Status.CONFIRMED:
            from memstore.storage import trust, verdicts

            data = read_regular(path) or b""
            if verdicts.shown_status(self.trust, key, memory, data) == trust.UNVERIFIED:
                return evolve(memory, status=Status.DRAFT.value)
            force = self.force(current) if memory.type in RULE_TYPES else None
            if force is not None and force.held_by is not None:
                # A change not in effect (see `binding`): another identity confirms it afresh.
                return evolve(memory, status=Status.DRAFT.value)
        return memory

    def moves(self, current: Versioned) -> tuple[Status, ...]:
        """The status moves `move` would let the acting identity make on `current` (read as
        shown): the state machine's, less confirming what it created and less deprecating a
        rule whose pending deprecation it cannot add to."""
        actor = self.require_identity()
        shown_status = current.memory.status
        base = Status.DRAFT if shown_status == "unverified" else shown_status
        allowed = list(MOVES.get(Status(base), ())) if base in set(Status) else []
        if Status.CONFIRMED in allowed:
            try:
                self.as_history_says(current, actor, Status.CONFIRMED)
            except SelfApproval:
                allowed.remove(Status.CONFIRMED)
            except MemstoreError:
                pass  # not a judgement on who acts: `move` names it when tried
        force = self.bound(actor, current) if Status.DEPRECATED in allowed else None
        if force is not None and force.proposer is not None:
            humans = settings.store_humans(self.root)
            if same_identity(force.proposer, actor) or binding.is_person(force.owner, humans):
                allowed.remove(Status.DEPRECATED)
        return tuple(allowed)

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
        return self.move(
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
        return self.move(
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
        return self.move(
            name,
            Status.DRAFT,
            reason,
            expected_version=expected_version,
            allow_secret=allow_secret,
        )

    def verify(
        self,
        name: str,
        reason: str,
        *,
        expected_version: str | None = None,
        allow_secret: bool = False,
    ) -> Memory:
        """Record that a confirmed memory is still true (`verified_by`, `verified_at`,
        `verified_reason`), as anyone but its owner; its content and confirmation stay.

        Raises:
            SelfApproval, InvalidTransition (not confirmed), MemoryNotFound, Conflict.
        """
        from memstore.storage import trust, verdicts

        check_line(reason, "reason")
        self.refuse_secrets({"reason": reason}, allow_secret)
        actor = self.require_identity()
        with transaction.locked(self):
            current = self.read(name, raw=True)
            check_version(self, name, current, expected_version)
            path = self.root / current.path
            transaction.refuse_uncommitted(self, [path])
            memory = current.memory
            key = repository.repo_path(self.repo, path)
            data = read_regular(path) or b""
            if verdicts.shown_status(self.trust, key, memory, data) == trust.UNVERIFIED:
                memory = evolve(memory, status=trust.UNVERIFIED)
            owner = self.trust.current().owners.get(key) or memory.owner
            new = verify_memory(memory, actor=actor, owner=owner, reason=reason, at=now())
            self.commit_memories(
                [(path, new)], subject(f"memory: verify {memory.type}/{name}", reason), actor
            )
        return new

    def pin(self, name: str, pinned: bool = True) -> Memory:
        """Pin (or unpin) a memory: it ranks higher in recall and survives briefing budgets.
        Pinning is not content: a confirmation holds.

        Raises:
            MemoryNotFound, InvalidMemory.
        """
        actor = self.require_identity()
        with transaction.locked(self):
            current = self.read(name, raw=True)
            old = current.memory
            if bool(old.pinned) == pinned:
                return old
            new = evolve(old, pinned=True if pinned else None)
            verb = "pin" if pinned else "unpin"
            self.commit_memories(
                [(self.root / current.path, new)], f"memory: {verb} {old.type}/{name}", actor
            )
        return new

    # -- reliability --------------------------------------------------------------------------

    def refuse_secrets(
        self,
        fields: Mapping[str, str | tuple[str, ...] | list[str] | None],
        allow_secret: bool,
        because: str | None = None,
    ) -> None:
        """Raise SecretFound unless allowed per call or by the store's `secrets: allow`."""
        if not allow_secret and not self.secrets_allowed:
            from memstore.storage import secrets  # its patterns compile on import: writes only

            secrets.refuse(fields, self.secret_patterns, because or secrets.MEMORIES_SHARED)
