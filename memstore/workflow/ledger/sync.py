"""Many machines, one memory: a store kept in step with a git remote, and claims that hold
across machines.

`sync` fetches one branch, merges it into HEAD (memories and settings file by file, the
ledger and outcomes as unions), lands the result through the write path, and pushes; a push
the remote refuses because its branch moved is git's compare-and-swap, so it fetches and tries
again. Merging, never rebasing: a rebase would make the syncing identity the committer of
other identities' commits, and trust (owners, confirmations, whose ledger lines count) is
read from who committed what. See docs/sync.md.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memstore.errors import (
    Conflict,
    GitError,
    InvalidMemory,
    MemstoreError,
    RemoteUnreachable,
    SyncFailed,
)
from memstore.git import commit, gitlog, objects, refs, repository
from memstore.git import remote as git_remote
from memstore.model import memory, when
from memstore.model.status import Status
from memstore.search import upkeep as search
from memstore.storage import secrets, transaction
from memstore.storage.files import LEDGER_FILE, OUTCOMES_FILE, REVIEWS_FILE
from memstore.storage.settings import sync_settings
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.ledger import claims
from memstore.workflow.ledger import lines as ledger
from memstore.workflow.ledger import trust as ledger_trust

if TYPE_CHECKING:
    from memstore.storage.store import Store

log = logging.getLogger(__name__)

ATTEMPTS = 30
"""How many times a sync or a remote claim fetches again after the remote moved."""
_RECORDS = (LEDGER_FILE, OUTCOMES_FILE, REVIEWS_FILE)
_MEMORY = re.compile(r"[a-z0-9][a-z0-9-]{0,63}/[a-z0-9][a-z0-9-]{0,63}\.md")
_SETTINGS = (*transaction.SETTINGS_FILES, *transaction.SYNCED_FILES)


@dataclass(frozen=True, slots=True)
class Target:
    """Which remote and branch a store syncs with."""

    remote: str
    branch: str


@dataclass(frozen=True, slots=True)
class Result:
    """What one sync did."""

    remote: str
    branch: str
    integrated: str
    """`up to date`, `fast-forward`, `merge` or `nothing fetched` (the branch is new)."""
    received: tuple[str, ...]
    """Store files (store-relative) the remote changed here."""
    conflicts: tuple[str, ...]
    """Memories changed on both sides: kept as drafts with a conflict note."""
    pushed: bool
    attempts: int
    head: str


@dataclass(frozen=True, slots=True)
class _Merged:
    kind: str
    received: tuple[str, ...]
    conflicts: tuple[str, ...]


def target(store: Store, remote: str | None = None, branch: str | None = None) -> Target:
    """The remote and branch to use: the arguments, else `memstore.yaml`'s `remote`/`branch`,
    else `origin` and the branch HEAD is on.

    Raises:
        SyncFailed: HEAD is detached and no branch is named, or a name git would not take.
    """
    settings = sync_settings(store.root)
    name = remote or settings.remote
    on = branch or settings.branch or refs.current_branch(store.repo)
    if on is None:
        raise SyncFailed(
            "HEAD is detached: check out the store's branch (git switch main), or name one "
            "with --branch"
        )
    try:
        git_remote.fetch_args(name, on)  # validates both names
    except GitError as e:
        raise SyncFailed(str(e)) from e
    if refs.current_branch(store.repo) is None:
        raise SyncFailed("HEAD is detached: check out the store's branch (git switch main)")
    return Target(name, on)


def remote_backed(store: Store) -> bool:
    """Whether the store's `memstore.yaml` says claims go through the remote."""
    return sync_settings(store.root).claims == "remote"


# -- talking to the remote --------------------------------------------------------------------

_UNREACHABLE = (
    "could not resolve host",
    "connection refused",
    "unable to connect",
    "failed to connect",
    "could not read from remote repository",
    "connection timed out",
    "network is unreachable",
    "no route to host",
    "connection reset",
    "the remote end hung up",
    "early eof",
    "unable to access",
    "does not appear to be a git repository",
)
_CREDENTIALS = (
    "authentication failed",
    "permission denied",
    "could not read username",
    "could not read password",
    "terminal prompts disabled",
    "http 401",
    "http 403",
    "403 forbidden",
    "401 unauthorized",
    "access denied",
    "invalid credentials",
)


def _failure(where: Target, url: str, action: str, output: str) -> SyncFailed:
    """The error for a fetch or push git could not do, from what git said."""
    said = _gist(output)
    low = output.lower()
    kept = "nothing was changed locally" if action == "fetch" else "your commits are kept locally"
    if any(n in low for n in _CREDENTIALS):
        return SyncFailed(
            f"the remote '{where.remote}' ({url}) rejected the credentials for {action}: "
            f"{said}; {kept}. Check the key or token git uses for it, then sync again"
        )
    if action == "push" and ("[remote rejected]" in low or "protected" in low or "hook" in low):
        return SyncFailed(
            f"the remote '{where.remote}' refused the push to branch '{where.branch}' "
            f"(a protected branch, or a server hook): {said}; {kept}. Sync to a branch you "
            "may push to (--branch), or ask the repository's owner"
        )
    if any(n in low for n in _UNREACHABLE):
        return RemoteUnreachable(
            f"cannot reach the remote '{where.remote}' ({url}) to {action}: {said}; {kept}. "
            "Sync again once it is reachable"
        )
    return SyncFailed(f"git {action} to '{where.remote}' ({url}) failed: {said}; {kept}")


def _gist(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip() and not ln.startswith("To ")]
    found = [ln for ln in lines if ln.lower().startswith(("fatal", "error", "!", "remote:"))]
    return " / ".join((found or lines or ["no message"])[:3])


def _url(store: Store, where: Target) -> str:
    url = git_remote.remote_url(store.repo, where.remote)
    if url is None:
        raise SyncFailed(
            f"this repository has no remote named '{where.remote}': add it (git remote add "
            f"{where.remote} URL), or name another with --remote"
        )
    return url


def fetch(store: Store, where: Target) -> str | None:
    """Fetch the remote's branch; its tip, or None when the remote has no such branch yet.

    Raises:
        RemoteUnreachable, SyncFailed: naming the remote and what git said.
    """
    url = _url(store, where)
    code, out = git_remote.network(store.repo, git_remote.fetch_args(where.remote, where.branch))
    if code != 0:
        if "couldn't find remote ref" in out.lower():
            return None
        raise _failure(where, url, "fetch", out)
    return git_remote.tracking(store.repo, where.remote, where.branch)


def push(store: Store, where: Target, sha: str, theirs: str | None) -> bool:
    """Push commit `sha` to the remote's branch (last seen at `theirs`); False when the branch
    moved (fetch again).

    Raises:
        RemoteUnreachable, SyncFailed: credentials, a protected branch, commits that change
            files outside the store (never pushed), anything else git said.
    """
    prefix = _prefix(store)
    if theirs is not None:
        _refuse_outside(store, prefix, theirs, sha, "this branch has commits that change")
    else:
        outside = [
            p
            for p in git_remote.tree_blobs(store.repo, sha, "")
            if not p.startswith(prefix) or _kind(p[len(prefix) :]) == "other"
        ]
        _refuse(outside, "this branch holds")
    url = _url(store, where)
    code, out = git_remote.network(
        store.repo, git_remote.push_args(where.remote, sha, where.branch)
    )
    if code == 0:
        return True
    # Whatever git said, what the branch holds now tells: our commit (the push landed, and
    # only its answer was lost), a new commit (someone pushed first: the compare-and-swap
    # failed), or the same as before (a real refusal: credentials, a protected branch).
    try:
        now = fetch(store, where)
    except SyncFailed:
        raise _failure(where, url, "push", out) from None
    if now is not None and (now == sha or refs.is_ancestor(store.repo, sha, now)):
        return True
    if now != theirs:
        log.info("push of %s refused, the remote moved: %s", sha[:10], _gist(out))
        return False
    raise _failure(where, url, "push", out)


# -- merging ----------------------------------------------------------------------------------


def integrate(store: Store, theirs: str | None, actor: str) -> _Merged:
    """Bring the commit `theirs` (the remote's tip) into HEAD: nothing when HEAD has it, a
    fast-forward when HEAD is behind, else a merge commit by `actor`. Call with the lock held.

    Raises:
        SyncFailed: HEAD detached or empty, unrelated histories, files outside the store
            changed, a non-memory store file changed on both sides; Conflict: uncommitted
            changes in a file the remote changed; GitError.
    """
    ours = refs.head(store.repo)
    if theirs is None or ours == theirs:
        return _Merged("up to date" if theirs else "nothing fetched", (), ())
    if ours is None:
        raise SyncFailed("the store's repository has no commit yet: run memstore init first")
    if refs.is_ancestor(store.repo, theirs, ours):
        return _Merged("up to date", (), ())
    base = git_remote.merge_base(store.repo, ours, theirs)
    if base is None:
        raise SyncFailed(
            "the local branch and the remote's share no history (diverged: two separate "
            "stores?); nothing was changed. Clone the remote's store instead, or sync to "
            "another branch (--branch)"
        )
    prefix = _prefix(store)
    _refuse_outside(store, prefix, base, theirs, "the remote's branch changed")
    if base == ours:
        changes, received = _fast_forward(store, prefix, ours, theirs)
        transaction.land(store, changes, theirs, ours, actor)
        return _Merged("fast-forward", received, ())
    _refuse_outside(store, prefix, base, ours, "this branch has commits that change")
    files, changes, received, conflicts, existing = _three_way(store, prefix, base, ours, theirs)
    message = f"sync: merge {theirs[:10]} from the remote"
    if conflicts:
        message += "\n\nChanged on both sides, kept as drafts with a conflict note:\n"
        message += "".join(f"- {c}\n" for c in conflicts)
    merge = commit.build_commit(
        store.repo, [ours, theirs], files, message, actor, store.signer, existing
    )
    transaction.land(store, changes, merge, ours, actor)
    return _Merged("merge", received, tuple(conflicts))


def _prefix(store: Store) -> str:
    from memstore.storage import trust

    return trust.prefix_of(store.repo, store.root)


def _kind(rel: str) -> str:
    """`memory`, `record`, `setting` or `other` for a store-relative path."""
    if _MEMORY.fullmatch(rel):
        return "memory"
    if rel in _RECORDS:
        return "record"
    if rel in _SETTINGS:
        return "setting"
    return "other"


def _refuse_outside(store: Store, prefix: str, old: str, new: str, who: str) -> None:
    """Raise SyncFailed when `old..new` changes files sync does not move: outside the store's
    folder, or inside it but neither a memory, a record nor a setting."""
    outside = [
        p
        for p in git_remote.changed_between(store.repo, old, new)
        if not p.startswith(prefix) or _kind(p[len(prefix) :]) == "other"
    ]
    _refuse(outside, who)


def _refuse(outside: list[str], who: str) -> None:
    if outside:
        shown = ", ".join(outside[:3]) + (
            f" and {len(outside) - 3} more" if len(outside) > 3 else ""
        )
        raise SyncFailed(
            f"{who} files sync does not move ({shown}); sync moves only the store's memories, "
            "ledger, outcomes and settings, and never pushes or pulls other work: use git "
            "pull / git push for those (or keep the store on a branch of its own, see "
            "docs/sync.md); nothing was changed"
        )


def _read(store: Store, sha: str | None) -> bytes | None:
    return None if sha is None else objects.read_blob(store.repo, sha)


def _fast_forward(
    store: Store, prefix: str, ours: str, theirs: str
) -> tuple[list[transaction.Write | transaction.Append | transaction.Remove], tuple[str, ...]]:
    mine = git_remote.tree_blobs(store.repo, ours, prefix)
    new = git_remote.tree_blobs(store.repo, theirs, prefix)
    changes: list[transaction.Write | transaction.Append | transaction.Remove] = []
    received: list[str] = []
    for path in sorted(set(mine) | set(new)):
        if mine.get(path) == new.get(path):
            continue
        rel = path[len(prefix) :]
        received.append(rel)
        changes.append(
            _change(store, rel, _read(store, mine.get(path)), _read(store, new.get(path)))
        )
    return changes, tuple(received)


def _change(
    store: Store, rel: str, old: bytes | None, new: bytes | None
) -> transaction.Write | transaction.Append | transaction.Remove:
    path = store.root / rel
    if new is None:
        return transaction.Remove(path)
    if rel in _RECORDS and old is not None and new.startswith(old) and old.endswith(b"\n"):
        return transaction.Append(path, _text(new[len(old) :], rel))
    return transaction.Write(path, _text(new, rel))


def _text(data: bytes, rel: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SyncFailed(f"{rel} on the remote is not UTF-8 text; nothing was changed") from e


def _three_way(
    store: Store, prefix: str, base: str, ours: str, theirs: str
) -> tuple[
    dict[str, bytes | None],
    list[transaction.Write | transaction.Append | transaction.Remove],
    tuple[str, ...],
    list[str],
    dict[str, str],
]:
    """The merged store files: what the merge commit sets (repository paths), the changes
    that bring the working tree there, the files received, the memories in conflict, and
    the blobs taken whole from the remote (path → sha)."""
    at_base = git_remote.tree_blobs(store.repo, base, prefix)
    mine = git_remote.tree_blobs(store.repo, ours, prefix)
    new = git_remote.tree_blobs(store.repo, theirs, prefix)
    files: dict[str, bytes | None] = {}
    changes: list[transaction.Write | transaction.Append | transaction.Remove] = []
    received: list[str] = []
    conflicts: list[str] = []
    existing: dict[str, str] = {}
    for path in sorted(set(at_base) | set(mine) | set(new)):
        b, o, t = at_base.get(path), mine.get(path), new.get(path)
        if o == t or t == b:
            continue  # the same on both sides, or only this side changed it
        rel = path[len(prefix) :]
        kind = _kind(rel)
        old = _read(store, o)
        if o == b:
            merged = _read(store, t)  # only the remote changed it
            if t is not None:
                existing[path] = t
        elif kind == "record":
            merged = _union(old, _read(store, t))
        elif kind == "memory":
            merged = _conflicted(
                store, rel, path, (base, ours, theirs), (_read(store, b), old, _read(store, t))
            )
            conflicts.append(rel)
        else:
            raise SyncFailed(
                f"{rel} was changed both here and on the remote; sync merges memories and "
                "records only: merge it with git (git pull), then sync again; nothing was "
                "changed"
            )
        if merged == old:
            continue
        files[path] = merged
        received.append(rel)
        changes.append(_change(store, rel, old, merged))
    return files, changes, tuple(received), conflicts, existing


def _union(ours: bytes | None, theirs: bytes | None) -> bytes:
    """A record file as a union: our lines, then each of theirs we lack, in their order.
    Each side's lines link to lines both had, so every `prev` still names a line here."""
    mine = ours or b""
    if mine and not mine.endswith(b"\n"):
        mine += b"\n"
    have = set(mine.split(b"\n"))
    extra = [ln for ln in (theirs or b"").split(b"\n") if ln.strip() and ln not in have]
    return mine + b"".join(ln + b"\n" for ln in dict.fromkeys(extra))


def _conflicted(
    store: Store,
    rel: str,
    path: str,
    commits: tuple[str, str, str],
    versions: tuple[bytes | None, bytes | None, bytes | None],
) -> bytes:
    """The version of a memory changed on both sides that the merge keeps: this clone's (the
    change that lands second), else the remote's when this clone removed it; as a draft, with
    a note naming both versions and how to read the other, and saying what each side moved
    (a deprecation with its reason, a confirmation), so no status move is lost."""
    base, ours, theirs = commits
    was, mine, other = versions
    here = git_remote.last_change(store.repo, base, ours, path)
    there = git_remote.last_change(store.repo, base, theirs, path)
    kept_data, kept_side, lost_side = (
        (mine, here, there) if mine is not None else (other, there, here)
    )
    assert kept_data is not None  # both removed is `o == t`
    kept_where = "this clone" if mine is not None else "the remote"
    lost_where = "the remote" if mine is not None else "this clone"

    def name(side: tuple[str, str] | None) -> str:
        return f"commit {side[0][:10]} by {side[1]}" if side else "an unknown commit"

    lost = lost_side[0][:10] if lost_side else theirs[:10]
    lost_text = (
        f"`git show {lost}:{path}`"
        if (other if mine is not None else mine) is not None
        else f"removed in {name(lost_side)}"
    )
    note = (
        f"> **Sync conflict** ({memory.now()}): this memory was changed on two clones. "
        f"Kept: the version from {kept_where}, {name(kept_side)}. The other version, from "
        f"{lost_where}, {name(lost_side)}: {lost_text}."
        f"{_moves_said(was, (('this clone', mine), ('the remote', other)))} Merge the two by "
        "hand, remove this note, then have it confirmed again.\n\n"
    )
    text = _text(kept_data, rel)
    try:
        parsed = memory.parse(text)
    except InvalidMemory:
        return kept_data  # a broken file stays as it was; lint names it
    draft = replace(
        parsed,
        status=Status.DRAFT.value,
        updated=memory.now(),
        confirmed_by=None,
        confirmed_at=None,
        confirmed_reason=None,
        confirmed_hash=None,
        body=note + parsed.body,
    )
    return memory.render(draft).encode("utf-8")


def _parsed(data: bytes | None) -> memory.Memory | None:
    try:
        return None if data is None else memory.parse(data.decode("utf-8"))
    except (UnicodeDecodeError, InvalidMemory):
        return None


def _moves_said(was: bytes | None, sides: tuple[tuple[str, bytes | None], ...]) -> str:
    """The status moves each side made since `was` (the merge base's version), in words:
    a deprecation with who made it and why, a confirmation with who made it and why."""
    base = _parsed(was)
    said = ""
    for where, data in sides:
        version = _parsed(data)
        if version is None:
            continue
        if version.status == Status.DEPRECATED and (
            base is None
            or (base.status, base.deprecated_at) != (version.status, version.deprecated_at)
        ):
            said += f" On {where} it was deprecated by {version.deprecated_by or 'someone'}"
            said += f" at {version.deprecated_at}" if version.deprecated_at else ""
            said += f", because: {version.deprecated_reason}" if version.deprecated_reason else ""
            if version.superseded_by:
                said += f" (superseded by [[{version.superseded_by}]])"
            said += "."
        elif version.status == Status.CONFIRMED and (
            base is None
            or (base.status, base.confirmed_at) != (version.status, version.confirmed_at)
        ):
            said += f" On {where} it was confirmed by {version.confirmed_by or 'someone'}"
            said += f", because: {version.confirmed_reason}" if version.confirmed_reason else ""
            said += "."
    return said


# -- sync -------------------------------------------------------------------------------------


def sync(store: Store, remote: str | None = None, branch: str | None = None) -> Result:
    """Fetch, integrate, push; fetch again while the remote moved under the push.

    Raises:
        SyncFailed, RemoteUnreachable: with what git said and what to do; the local store is
            left consistent (a merge that landed stays, and is pushed by the next sync).
        Conflict, StoreLocked, GitError, NoIdentity.
    """
    where = target(store, remote, branch)
    actor = store.require_identity()
    received: list[str] = []
    conflicts: list[str] = []
    kinds: list[str] = []
    try:
        for attempt in range(1, ATTEMPTS + 1):
            with transaction.locked(store):
                theirs = fetch(store, where)
                merged = integrate(store, theirs, actor)
                kinds.append(merged.kind)
                received += merged.received
                conflicts += merged.conflicts
                ours = refs.head(store.repo)
                pushed = False
                if ours is not None and ours != theirs:
                    pushed = push(store, where, ours, theirs)
                    if not pushed:
                        _pause(attempt)
                        continue
            return _result(where, kinds, received, conflicts, pushed, attempt, ours)
    finally:
        if received:  # what landed is searchable at once, even when the push then failed
            try:
                search.catch_up(store)
            except MemstoreError as e:  # the next search catches up by itself
                log.warning("search index not caught up after sync: %s", e)
    raise SyncFailed(
        f"the remote's branch '{where.branch}' kept moving: {ATTEMPTS} pushes were refused "
        "because others pushed first; what was merged is kept locally: sync again"
    )


def _result(
    where: Target,
    kinds: list[str],
    received: list[str],
    conflicts: list[str],
    pushed: bool,
    attempt: int,
    ours: str | None,
) -> Result:
    kind = next((k for k in kinds if k == "merge"), None) or kinds[0]
    return Result(
        where.remote,
        where.branch,
        kind,
        tuple(dict.fromkeys(received)),
        tuple(dict.fromkeys(conflicts)),
        pushed,
        attempt,
        ours or "",
    )


def _pause(attempt: int) -> None:
    # Back off a little, at random, so clones that collided do not collide again in step.
    time.sleep(random.uniform(0, min(0.05 * 2**attempt, 1.0)))


# -- claims across machines -------------------------------------------------------------------


def claim(
    store: Store,
    action: str,
    target_text: str,
    ttl: float = ledger.TTL_DEFAULT,
    *,
    remote: bool | None = None,
    now: datetime | None = None,
    allow_secret: bool = False,
) -> ledger.Event:
    """Claim an action; through the remote when `remote` (None: when `memstore.yaml` says
    `claims: remote`): won only once the remote accepted the push carrying it.

    Raises:
        AlreadyExecuted, ClaimHeld (naming the winner), InvalidLedgerEntry, LedgerCorrupt,
        NoIdentity, StoreLocked, SecretFound; RemoteUnreachable / SyncFailed: the remote
        could not be asked, so nothing is claimed (fail closed).
    """
    if not (remote if remote is not None else remote_backed(store)):
        return ledger_io.claim(store, action, target_text, ttl, now=now, allow_secret=allow_secret)
    action = ledger.check_text(action, "action")
    target_text = ledger.check_text(target_text, "target")
    seconds = ledger.check_ttl(ttl)
    store.refuse_secrets(
        {"action": action, "target": target_text}, allow_secret, secrets.LEDGER_PERMANENT
    )
    where = target(store)
    actor = store.require_identity()
    with transaction.locked(store):
        for attempt in range(1, ATTEMPTS + 1):
            try:
                theirs = fetch(store, where)
            except SyncFailed as e:
                raise type(e)(
                    f"{e} — not claiming '{action} {target_text}': a claim counts only "
                    "once the remote has it"
                ) from e
            integrate(store, theirs, actor)
            seen = ledger_io.view(store)
            ledger_trust.require_intact(seen)
            event = claims.claim(seen, actor, action, target_text, seconds, now or when.utcnow())
            ours = refs.head(store.repo)
            assert ours is not None  # integrate refuses an empty repository
            line = ledger.render(event) + "\n"
            data = (objects.blob(store.repo, ours, store.ledger_path) or b"") + line.encode("utf-8")
            rel = repository.repo_path(store.repo, store.ledger_path)
            sha = commit.build_commit(
                store.repo, [ours], {rel: data}, ledger.commit_message(event), actor, store.signer
            )
            if push(store, where, sha, theirs):
                try:
                    transaction.land(
                        store, [transaction.Append(store.ledger_path, line)], sha, ours, actor
                    )
                except (Conflict, GitError) as e:
                    log.warning("claim won on the remote, not yet here (%s): run memstore sync", e)
                return event
            _pause(attempt)
    raise SyncFailed(
        f"the remote's branch '{where.branch}' kept moving; '{action} {target_text}' was not "
        "claimed: try again"
    )


def check(
    store: Store,
    action: str,
    target_text: str,
    *,
    remote: bool | None = None,
    now: datetime | None = None,
) -> claims.Check:
    """`ledger_io.check`, first fetching the remote when the store is remote-backed (or
    `remote`): the answer counts the remote's committed lines too. An unreachable remote
    gives this clone's answer with a warning saying so.

    Raises:
        InvalidLedgerEntry, LedgerCorrupt, StoreLocked, SyncFailed (a remote misconfigured).
    """
    if not (remote if remote is not None else remote_backed(store)):
        return ledger_io.check(store, action, target_text, now=now)
    where = target(store)
    try:
        theirs = fetch(store, where)
    except RemoteUnreachable as e:
        found = ledger_io.check(store, action, target_text, now=now)
        warning = f"answered from this clone's ledger only: {e}"
        return replace(found, warnings=(*found.warnings, warning))
    ours = refs.head(store.repo)
    if theirs is None or ours is None or refs.is_ancestor(store.repo, theirs, ours):
        return ledger_io.check(store, action, target_text, now=now)
    seen = _with_remote(store, ours, theirs)
    return claims.check(
        seen,
        ledger.check_text(action, "action"),
        ledger.check_text(target_text, "target"),
        now or when.utcnow(),
    )


def _with_remote(store: Store, ours: str, theirs: str) -> ledger_trust.View:
    """The ledger view with the remote's committed lines merged in, as a sync would."""
    committed, at_head = ledger_io.committed_lines(store)
    base = git_remote.merge_base(store.repo, ours, theirs)
    extra = gitlog.added_lines(store.repo, store.ledger_path, theirs, since=base)
    path: Path = store.ledger_path
    data = path.read_bytes() if path.is_file() else b""
    remote_file = objects.blob(store.repo, theirs, path)
    data = _union(data, remote_file)
    return ledger_trust.view(
        data, [*committed, *extra], at_head, repository.repo_path(store.repo, path)
    )


class Every:
    """Runs `sync` every `seconds` in a daemon thread (for `memstore serve --sync-every`).
    A failure is logged and tried again next time: the server keeps serving this clone."""

    def __init__(self, store: Store, seconds: float) -> None:
        self.store = store
        self.seconds = seconds
        self.stop_event = threading.Event()
        self.runs = 0
        """Syncs finished, failed or not (for tests waiting on one)."""
        self._thread = threading.Thread(target=self.run, name="memstore-sync", daemon=True)

    def start(self) -> Every:
        self._thread.start()
        return self

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                result = sync(self.store)
                if result.received or result.pushed:
                    log.info(
                        "synced with %s/%s: %s, %d file(s) received, %s",
                        result.remote,
                        result.branch,
                        result.integrated,
                        len(result.received),
                        "pushed" if result.pushed else "nothing to push",
                    )
            except MemstoreError as e:
                log.warning("sync failed, trying again in %gs: %s", self.seconds, e)
            self.runs += 1
            self.stop_event.wait(self.seconds)

    def stop(self) -> None:
        self.stop_event.set()
        self._thread.join()
