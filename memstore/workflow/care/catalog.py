"""A catalog of the store's memories: what `list`, `stats` and the briefing show of each, in
an SQLite file under the ignored `.memstore/`, so that none of them parses every file.

It is derived from the files and kept in step with them the way the search index is: each
call first catches the index up (`upkeep.fresh`: this process's writes, hand edits, a `git
pull`, a fresh clone), then re-reads only the files whose content digest differs from the
one the catalog holds (the manifest's digests, `Index.files`). A catalog that is missing,
damaged or of another version is built again from the files.

Besides each memory's fields it keeps two word indexes: the features of each draft's name and
description (the briefing orders drafts by the words they share with the task), and for each
rule the words and concepts its patterns and description can match on, so that the rules a
task may touch are looked up, then judged exactly (`rules.related`), rather than every rule
matched in turn.

What it holds is what the files say. What a read shows is judged on top, from the git history
(`verdicts.judged`, with each file's blob id kept here): a confirmation the history does not back
reads as `unverified` here as everywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import sqlite3
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from memstore.errors import InvalidMemory, StoreLocked, UnsafePath
from memstore.git import objects
from memstore.model.memory import RULE_TYPES, Memory, evolve
from memstore.model.status import Status
from memstore.search.upkeep import upkeep
from memstore.storage import trust, verdicts
from memstore.storage.files import memory_files, read_regular, version_of
from memstore.workflow.rules import concepts, words
from memstore.workflow.rules import rules as workflow

if TYPE_CHECKING:
    from memstore.storage.store import Store

log = logging.getLogger(__name__)

FILE = "catalog.sqlite"
SCHEMA = 1
"""Bump when the tables or what a row holds change: a catalog of another version is rebuilt."""

_COLUMNS = (
    "path",
    "digest",
    "blob",
    "name",
    "type",
    "status",
    "owner",
    "created",
    "updated",
    "confirmed_at",
    "description",
    "tags",
    "expires",
    "pinned",
    "importance",
    "severity",
    "patterns",
    "evidence",
    "always",
)
_ROW = ", ".join(f"{c} TEXT PRIMARY KEY" if c == "path" else c for c in _COLUMNS)
_TABLES = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE memories ({_ROW});
CREATE TABLE keys (kind TEXT NOT NULL, key TEXT NOT NULL, path TEXT NOT NULL);
CREATE INDEX keys_by_key ON keys (kind, key);
CREATE INDEX keys_by_path ON keys (path);
"""
_DRAFT, _RULE = "d", "r"
"""The two word indexes: a draft's features, and what a rule may match on."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One memory as the catalog holds it (its status and owner as shown: judged)."""

    path: str
    """Relative to the store: `<type>/<name>.md`."""
    name: str
    type: str
    status: str
    owner: str
    created: str
    updated: str
    confirmed_at: str
    description: str
    tags_json: str
    """Its tags, as a JSON list (read with `tags`: most reads never look at them)."""
    expires: str
    """The `expires` text's first ten characters when it is text ("" for none)."""
    pinned: bool
    importance: str
    blob: str
    rule: workflow.Rule | None = None
    """For a correction or warning: its rule (its fields checked, as `rules.rule_of` does),
    deprecated or not."""

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(json.loads(self.tags_json))

    def expired(self, today: str) -> bool:
        """Whether it is past its `expires` day (`today` as `YYYY-MM-DD`)."""
        return bool(self.expires) and self.expires < today


def _words_digest() -> str:
    """What the word tables are: a rule's and a draft's keys depend on them."""
    return hashlib.sha256(words.DEFAULT.read_bytes()).hexdigest()[:16]


class Catalog:
    """The catalog of one store, opened and brought in step with its files (`open`)."""

    def __init__(self, store: Store, db: sqlite3.Connection) -> None:
        self.store = store
        self.db = db

    # -- reading --

    def entries(self, where: str = "", args: Iterable[Any] = ()) -> list[Entry]:
        """The memories whose rows pass `where` (SQL over the columns, as the files say), in
        the order `Store.memories` reads them, each status and owner as shown."""
        sql = f"SELECT {', '.join(_COLUMNS)} FROM memories WHERE name IS NOT NULL"
        rows = self.db.execute(sql + (f" AND ({where})" if where else ""), tuple(args)).fetchall()
        rows.sort(key=lambda r: tuple(r[0].split("/", 1)))
        return list(self._shown(rows))

    def _shown(self, rows: list[Any]) -> Iterator[Entry]:
        cache = self.store.trust
        at: trust.Trust | None = None
        taken = False
        for row in rows:
            entry = _entry(row)
            if entry.status == Status.CONFIRMED or entry.type in RULE_TYPES:
                if not taken:
                    at, taken = verdicts.snapshot(cache), True  # one reading of HEAD for all
                status, owner = verdicts.judged(
                    cache, cache.prefix + entry.path, entry.status, entry.owner, entry.blob, at
                )
                if (status, owner) != (entry.status, entry.owner):
                    entry = replace(entry, status=status, owner=owner)
            yield entry

    def rule_candidates(self, task: str) -> set[str]:
        """The paths of the rules that may bear on `task` (`rules.related` says which do): a
        rule without patterns or with a glob, or one a feature of the task is a key of."""
        have = sorted(concepts.features(task))
        found = {p for (p,) in self.db.execute("SELECT path FROM memories WHERE always = 1")}
        for chunk in _chunks(have):
            marks = ", ".join("?" * len(chunk))
            sql = f"SELECT DISTINCT path FROM keys WHERE kind = ? AND key IN ({marks})"
            found.update(p for (p,) in self.db.execute(sql, (_RULE, *chunk)))
        return found

    def shared(self, features: Iterable[str]) -> dict[str, int]:
        """How many of `features` each draft's name and description offer (drafts with none
        are left out), by path."""
        counts: dict[str, int] = {}
        for chunk in _chunks(sorted(set(features))):
            marks = ", ".join("?" * len(chunk))
            sql = (
                f"SELECT path, COUNT(*) FROM keys WHERE kind = ? AND key IN ({marks}) GROUP BY path"
            )
            for path, n in self.db.execute(sql, (_DRAFT, *chunk)):
                counts[path] = counts.get(path, 0) + int(n)
        return counts

    def memory(self, entry: Entry) -> Memory | None:
        """The memory in `entry`'s file as a read shows it (None when it cannot be read)."""
        try:
            return self.store.read_file(self.store.root / entry.path)[0]
        except (InvalidMemory, OSError, UnsafePath) as e:
            log.warning("skipping %s: %s", entry.path, e)
            return None

    def close(self) -> None:
        self.db.close()


def _chunks(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _entry(row: Any) -> Entry:
    (
        path,
        _digest,
        blob,
        name,
        type_,
        status,
        owner,
        created,
        updated,
        confirmed_at,
        description,
        tags,
        expires,
        pinned,
        importance,
        severity,
        patterns,
        evidence,
        _always,
    ) = row
    rule = None
    if severity is not None:
        rule = workflow.Rule(
            name=name,
            type=type_,
            status=status,
            severity=severity,
            applies_when=tuple(json.loads(patterns)),
            description=description,
            evidence=evidence,
            owner=owner,
        )
    return Entry(
        path=path,
        name=name,
        type=type_,
        status=status,
        owner=owner,
        created=created,
        updated=updated,
        confirmed_at=confirmed_at or "",
        description=description,
        tags_json=tags,
        expires=expires,
        pinned=bool(pinned),
        importance=importance,
        blob=blob,
        rule=rule,
    )


def rule_of(entry: Entry, humans: tuple[str, ...] = ()) -> workflow.Rule | None:
    """The rule `entry` carries as shown (None when it is no rule, or deprecated), binding as
    `rules.binds` says for its shown status and owner."""
    if entry.rule is None or entry.status == Status.DEPRECATED:
        return None
    return replace(
        entry.rule,
        status=entry.status,
        owner=entry.owner,
        binding=workflow.binds_shown(entry.status, entry.owner, humans),
    )


# -- keeping it in step -----------------------------------------------------------------------


def open_catalog(store: Store) -> Catalog:
    """The store's catalog, in step with its files (the search index caught up first).

    Raises:
        StoreLocked: when another process holds the index lock past the timeout.
    """
    path = store.cache / FILE
    store.cache.mkdir(exist_ok=True)
    try:
        db = _connect(store, path)
    except sqlite3.OperationalError as e:  # another process holds it past the timeout
        raise _locked(path, e) from e
    try:
        _sync(store, db)
    except sqlite3.OperationalError as e:
        db.close()
        if _busy(e):
            raise _locked(path, e) from e
        log.warning("the catalog at %s could not be read (%s); rebuilding it", path, e)
        path.unlink(missing_ok=True)
        db = _connect(store, path)
        _sync(store, db)
    except sqlite3.DatabaseError as e:  # a damaged file: built again
        db.close()
        log.warning("the catalog at %s could not be read (%s); rebuilding it", path, e)
        path.unlink(missing_ok=True)
        db = _connect(store, path)
        _sync(store, db)
    return Catalog(store, db)


def _busy(e: sqlite3.OperationalError) -> bool:
    return "locked" in str(e) or "busy" in str(e)


def _locked(path: Any, e: sqlite3.OperationalError) -> StoreLocked:
    return StoreLocked(
        f"catalog busy: {path} ({e}); another memstore process is bringing it up to date — "
        "try again"
    )


@contextlib.contextmanager
def opened(store: Store) -> Generator[Catalog]:
    """`open_catalog`, closed after use."""
    catalog = open_catalog(store)
    try:
        yield catalog
    finally:
        catalog.close()


def _connect(store: Store, path: Any) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=store.lock_timeout, isolation_level=None)
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA or _meta(db, "words") != _words_digest():
            db.execute("BEGIN IMMEDIATE")
            for (table,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            ).fetchall():
                db.execute(f"DROP TABLE IF EXISTS {table}")
            db.executescript(_TABLES)  # commits
            db.execute("INSERT INTO meta VALUES ('words', ?)", (_words_digest(),))
            db.execute(f"PRAGMA user_version = {SCHEMA}")
    except sqlite3.DatabaseError as e:
        db.close()
        if isinstance(e, sqlite3.OperationalError) and _busy(e):
            raise
        path.unlink(missing_ok=True)
        db = sqlite3.connect(path, timeout=store.lock_timeout, isolation_level=None)
        db.executescript(_TABLES)
        db.execute("INSERT INTO meta VALUES ('words', ?)", (_words_digest(),))
        db.execute(f"PRAGMA user_version = {SCHEMA}")
    return db


def _meta(db: sqlite3.Connection, key: str) -> str | None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    except sqlite3.OperationalError:  # no table yet
        return None
    return None if row is None else str(row[0])


def _sync(store: Store, db: sqlite3.Connection) -> None:
    """Re-read the files whose content differs from what the catalog holds, drop the gone."""
    up = upkeep(store)
    up.fresh(store)
    files = up.index.files()
    if files is not None:
        state, digests = files
        seen = json.dumps(state)
        if _meta(db, "state") == seen:
            return  # the index has not changed since the catalog was last brought in step
    else:  # no usable index: each file's content, read
        seen = None
        digests = {}
        for e in memory_files(store.root):
            data = read_regular(e.path)
            if data is not None:
                digests[e.rel] = version_of(data)
    held = dict(db.execute("SELECT path, digest FROM memories").fetchall())
    changed = sorted(p for p, d in digests.items() if held.get(p) != d)
    gone = [p for p in held if p not in digests]
    rows: list[tuple[Any, ...]] = []
    keys: list[tuple[str, str, str]] = []
    for rel in changed:
        found = _read(store, rel)
        if found is None:
            gone.append(rel)
            continue
        row, row_keys = found
        rows.append(row)
        keys.extend(row_keys)
    if not rows and not gone and seen is None:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        dropped = [(p,) for p in [*gone, *changed]]
        db.executemany("DELETE FROM memories WHERE path = ?", dropped)
        db.executemany("DELETE FROM keys WHERE path = ?", dropped)
        marks = ", ".join("?" * len(_COLUMNS))
        db.executemany(f"INSERT OR REPLACE INTO memories VALUES ({marks})", rows)
        db.executemany("INSERT INTO keys VALUES (?, ?, ?)", keys)
        if seen is not None:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('state', ?)", (seen,))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _read(store: Store, rel: str) -> tuple[tuple[Any, ...], list[tuple[str, str, str]]] | None:
    """The row and keys of the file at `rel`; a row with no name for a file that is no valid
    memory (so it is not read again until it changes); None when it is gone."""
    path = store.root / rel
    try:
        memory, data = store.read_file(path, raw=True)
    except (InvalidMemory, OSError, UnsafePath) as e:
        try:
            data = read_regular(path)
        except (OSError, UnsafePath):
            data = None
        if data is None:
            return None  # gone (or a symlink swapped in: never a memory)
        log.warning("skipping %s: %s", rel, e)
        blank = [None] * (len(_COLUMNS) - 3)
        return (rel, version_of(data), objects.blob_sha(data), *blank), []
    digest, blob = version_of(data), objects.blob_sha(data)
    expires = memory.extra.get("expires")
    importance = memory.extra.get("importance")
    severity = patterns = evidence = None
    always = 0
    keys: list[tuple[str, str, str]] = []
    if memory.type in RULE_TYPES:
        rule = workflow.rule_of(evolve(memory, status=Status.DRAFT))
        if rule is not None:
            severity, evidence = rule.severity, rule.evidence
            patterns = json.dumps(list(rule.applies_when))
            always = int(not rule.applies_when or any(map(workflow.is_glob, rule.applies_when)))
            keys = [(_RULE, k, rel) for k in sorted(rule_keys(rule))]
    if memory.status == Status.DRAFT:
        keys += [(_DRAFT, f, rel) for f in sorted(draft_features(memory.name, memory.description))]
    row = (
        rel,
        digest,
        blob,
        memory.name,
        memory.type,
        memory.status,
        memory.owner,
        memory.created,
        memory.updated,
        memory.confirmed_at,
        memory.description,
        json.dumps(list(memory.tags)),
        expires[:10] if isinstance(expires, str) else "",
        int(bool(memory.pinned)),
        importance if isinstance(importance, str) else "",
        severity,
        patterns,
        evidence,
        always,
    )
    return row, keys


def rule_keys(rule: workflow.Rule) -> set[str]:
    """What a task must offer (`concepts.features`) for `rule` to bear on it, unless it has
    no patterns or a glob (then it is always judged): some alternative of a word of one of its
    patterns (`concepts.units`), or a word of its description (`rules.related`)."""
    keys: set[str] = set()
    for pattern in rule.applies_when:
        if not workflow.is_glob(pattern):
            for unit in concepts.units(pattern):
                keys |= unit
    keys |= {w for w in workflow.words(rule.description) if len(w) >= 3 and not w.isdigit()}
    return keys


def draft_features(name: str, description: str) -> frozenset[str]:
    """What a draft offers a task, as the briefing compares them."""
    return concepts.features(f"{name} {description}")
