"""The ledger of a store: its file read together with every line git committed (cached), and
the journaled, committed appends of claims, releases and records.

`lines`, `trust` and `claims` hold the line format and the rules as pure functions; this module
feeds them the store's bytes and git's lines, and writes their events under the store's lock.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstore.errors import InvalidLedgerEntry, LedgerCorrupt, UnsafePath
from memstore.git import gitlog, objects, refs, repository
from memstore.model import when
from memstore.storage import secrets, settings, transaction
from memstore.storage.files import atomic_write, read_regular, shown
from memstore.workflow.ledger import claims, trust
from memstore.workflow.ledger import lines as ledger

if TYPE_CHECKING:
    from memstore.storage.store import Store

log = logging.getLogger(__name__)

HISTORY_CACHE = "ledger-history.json"
"""In the cache folder: the ledger lines committed up to a commit, each with the commit that
added it; only newer commits are read."""
_CACHE_VERSION = 3

_SHA_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def read_history_cache(
    path: Path, signed: bool = False, basis: str = ""
) -> tuple[str | None, list[gitlog.Added]]:
    """The commit and the committed ledger lines a history cache holds; (None, []) if unusable
    (or made with signatures required when they are not, or the other way round, or under
    other committed trust settings or allowed signers: `basis`, see `settings.basis`)."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, []
    if not isinstance(data, dict):
        return None, []
    fields: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
    head, commits, lines = fields.get("head"), fields.get("commits"), fields.get("lines")
    if (
        fields.get("version") != _CACHE_VERSION
        or fields.get("signed", False) != signed
        or fields.get("basis", "") != basis
        or not isinstance(head, str)
        or not _SHA_RE.match(head)
        or not isinstance(commits, dict)
        or not isinstance(lines, list)
    ):
        return None, []
    known: dict[str, gitlog.Commit] = {}
    table: dict[Any, Any] = commits  # pyright: ignore[reportUnknownVariableType]
    for sha, names in table.items():
        if not isinstance(sha, str) or not _strings(names, 3):
            return None, []
        known[sha] = gitlog.Commit(sha, names[0], names[1], names[2] or None, signed)
    added: list[gitlog.Added] = []
    items: list[Any] = lines  # pyright: ignore[reportUnknownVariableType]
    for item in items:
        if not _strings(item, 2) or item[1] not in known:
            return None, []
        added.append(gitlog.Added(item[0], known[item[1]]))
    return head, added


def _strings(value: Any, count: int) -> bool:
    """Whether `value` is a JSON list of `count` strings."""
    items: list[Any] = value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]
    return len(items) == count and all(isinstance(x, str) for x in items)


def _write_history_cache(
    path: Path, head: str, added: list[gitlog.Added], signed: bool = False, basis: str = ""
) -> None:
    commits = {
        a.commit.sha: [a.commit.author, a.commit.committer, a.commit.signer or ""] for a in added
    }
    lines = [[a.text, a.commit.sha] for a in added]
    text = json.dumps(
        {
            "version": _CACHE_VERSION,
            "signed": signed,
            "basis": basis,
            "head": head,
            "commits": commits,
            "lines": lines,
        },
        ensure_ascii=False,
    )
    atomic_write(path, text)


def committed_lines(store: Store) -> tuple[list[gitlog.Added], list[str]]:
    """Every ledger line a commit in HEAD's history added (through every parent of every
    merge), with that commit; and the lines of the file at HEAD.

    Reading the whole history costs commits × file size, so the lines seen up to a commit
    are cached in `.memstore/ledger-history.json` and only newer commits are read.
    """
    head = refs.head(store.repo)
    if head is None:
        return [], []
    cache = store.cache / HISTORY_CACHE
    # A key revoked (or signatures turned on) at HEAD withdraws the signers kept for old lines.
    basis = settings.basis(store.root) if store.signed else ""
    seen_at, seen = read_history_cache(cache, store.signed, basis)
    if seen_at == head:
        new: list[gitlog.Added] = []
    elif seen_at is not None and refs.is_ancestor(store.repo, seen_at, head):
        new = gitlog.added_lines(store.repo, store.ledger_path, head, since=seen_at)
    else:
        seen, new = [], gitlog.added_lines(store.repo, store.ledger_path, head)
    if new and store.signed:
        # Whose allowed key signed each new commit: read once, then kept in the cache.
        from memstore.git import signing  # only stores that sign

        commits = list(dict.fromkeys(a.commit.sha for a in new))
        signers = signing.signers(store.repo, commits, store.allowed_signers)
        new = [
            gitlog.Added(
                a.text,
                replace(a.commit, signer=signers.get(a.commit.sha), signed=True),
            )
            for a in new
        ]
    if seen_at != head:
        known = set(seen)
        seen = seen + [a for a in dict.fromkeys(new) if a not in known and a.text.strip()]
        try:
            store.cache.mkdir(exist_ok=True)
            _write_history_cache(cache, head, seen, store.signed, basis)
        except OSError as e:  # only a cache: the next read rebuilds it
            log.warning("could not write %s: %s", cache, e)
    at_head = (objects.blob(store.repo, head, store.ledger_path) or b"").decode("utf-8", "replace")
    return seen, at_head.split("\n")


def view(store: Store) -> trust.View:
    """The ledger as the file and git's committed lines show it together."""
    # git first, then the file: a line is committed only after it is written, so a
    # concurrent append can never look like a line the file lost.
    committed, at_head = committed_lines(store)
    path = store.ledger_path
    try:
        data = read_regular(path) or b""
    except UnsafePath as e:
        raise LedgerCorrupt(f"{shown(path)}: the ledger must be a plain file ({e})") from e
    return trust.view(data, committed, at_head, repository.repo_path(store.repo, path))


def append(store: Store, event: ledger.Event) -> None:
    """Append `event` as one line and commit it as its actor. Call with the lock held."""
    line = ledger.render(event) + "\n"
    change = transaction.Append(store.ledger_path, line)
    if transaction.commit(store, [change], ledger.commit_message(event), event.actor) is None:
        # Someone's `git commit` took the line along at that moment: it is not by the actor.
        log.warning(
            "ledger event %s was committed by another commit, not as %s, so it does not "
            "count; run `memstore ledger verify` and append it again",
            event.id,
            event.actor,
        )


def check(store: Store, action: str, target: str, *, now: datetime | None = None) -> claims.Check:
    """Whether `action` on `target` is NOT_EXECUTED, IN_PROGRESS (claimed) or EXECUTED.

    Reads the working ledger and every ledger line git has committed, so a restored or
    truncated file still answers EXECUTED, with a warning that lines were lost. Only events
    a commit by their actor added count; others are named in the warnings. Reads again
    under the lock when the file has lines git has not committed (a write in flight?).

    Raises:
        InvalidLedgerEntry: for a bad action or target.
        LedgerCorrupt: when a damaged line might hide a `done` record (fail closed).
        StoreLocked: when the re-read under the lock cannot take it in time.
    """
    action = ledger.check_text(action, "action")
    target = ledger.check_text(target, "target")
    moment = now or when.utcnow()
    seen = view(store)
    if not seen.ends_with_newline or seen.uncommitted:
        # Maybe a write in flight, not yet committed: read again once no writer holds it.
        with transaction.locked(store):
            seen = view(store)
    return claims.check(seen, action, target, moment)


def _refuse_secrets(store: Store, fields: dict[str, str | None], allow_secret: bool) -> None:
    """Raise SecretFound for credential-like text: an appended line cannot be taken back."""
    store.refuse_secrets(fields, allow_secret, secrets.LEDGER_PERMANENT)


def claim(
    store: Store,
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
    action = ledger.check_text(action, "action")
    target = ledger.check_text(target, "target")
    seconds = ledger.check_ttl(ttl)
    _refuse_secrets(store, {"action": action, "target": target}, allow_secret)
    actor = store.require_identity()
    with transaction.locked(store):
        seen = view(store)
        trust.require_intact(seen)
        event = claims.claim(seen, actor, action, target, seconds, now or when.utcnow())
        append(store, event)
    return event


def release(
    store: Store,
    action: str,
    target: str,
    *,
    now: datetime | None = None,
    allow_secret: bool = False,
) -> ledger.Event:
    """Give up the acting identity's valid claim on `action` on `target`, and commit it.

    Raises:
        InvalidLedgerEntry (no claim of yours to release), LedgerCorrupt, NoIdentity,
        SecretFound (unless `allow_secret`).
    """
    action = ledger.check_text(action, "action")
    target = ledger.check_text(target, "target")
    _refuse_secrets(store, {"action": action, "target": target}, allow_secret)
    actor = store.require_identity()
    with transaction.locked(store):
        seen = view(store)
        trust.require_intact(seen)
        event = claims.release(seen, actor, action, target, now or when.utcnow())
        append(store, event)
    return event


def record(
    store: Store,
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
    action = ledger.check_text(action, "action")
    target = ledger.check_text(target, "target")
    note = ledger.check_note(note)
    if failed:
        evidence = ledger.check_evidence(evidence) if evidence is not None else None
        if note is None:
            raise InvalidLedgerEntry(
                f"recording '{action} {target}' as failed needs a note saying what went wrong"
            )
    else:
        evidence = ledger.check_evidence(evidence)
    fields = {"action": action, "target": target, "evidence": evidence, "note": note}
    _refuse_secrets(store, fields, allow_secret)
    actor = store.require_identity()
    with transaction.locked(store):
        seen = view(store)
        trust.require_intact(seen)
        moment = now or when.utcnow()
        event, warnings = claims.record(seen, actor, action, target, moment, evidence, note, failed)
        append(store, event)
    for warning in warnings:
        log.warning("%s", warning)
    return event


def events(
    store: Store,
    action: str | None = None,
    target: str | None = None,
    actor: str | None = None,
    since: str | None = None,
    *,
    now: datetime | None = None,
) -> list[ledger.Event]:
    """Ledger events matching every filter given, oldest first; `since` takes a date, a UTC
    time or a duration back from now (`24h`). Includes events only git still has, and only
    events a commit by their actor added.

    Raises:
        InvalidLedgerEntry: for a bad filter.
    """
    after = ledger.parse_since(since, now or when.utcnow()) if since else None
    seen = view(store)
    if seen.lost:
        log.warning(
            "the working ledger lacks %d committed line(s); listing them too", len(seen.lost)
        )
    for problem in seen.damage:
        log.warning("ledger damaged: %s", problem)
    if seen.ignored:
        log.warning(
            "%d ledger line(s) are ignored: no commit by their actor added them; run "
            "`memstore ledger verify`",
            len(seen.ignored),
        )
    found = [
        (ledger.parse_time(e.at), i, e)
        for i, e in enumerate(seen.events)
        if (action is None or e.action == action)
        and (target is None or e.target == target)
        and (actor is None or e.actor == actor)
    ]
    return [
        e
        for moment, _, e in sorted(found, key=lambda t: (t[0], t[1]))
        if after is None or moment >= after
    ]


def open_claims(store: Store) -> list[claims.Check]:
    """Ledger claims still valid and not yet recorded: someone is doing that now.

    Raises:
        LedgerCorrupt: when the ledger is not a plain file.
    """
    seen = view(store)
    moment = when.utcnow()
    pairs = dict.fromkeys((e.action, e.target) for e in seen.events if e.status == ledger.CLAIMED)
    found = [claims.check(seen, action, target, moment) for action, target in pairs]
    return [c for c in found if c.state is claims.State.IN_PROGRESS]


def verify(store: Store) -> trust.Verification:
    """Check every line's hash and link, that the file holds every line git committed, and
    whatever an append would refuse on. Reads again under the lock when the file has lines
    git has not committed (a write in flight?), as `check` does.

    Raises:
        StoreLocked: when the re-read under the lock cannot take it in time.
    """
    seen = view(store)
    if not seen.ends_with_newline or seen.uncommitted:
        with transaction.locked(store):
            seen = view(store)
    return trust.verify(seen, repository.attribute(store.repo, store.ledger_path, "merge"))
