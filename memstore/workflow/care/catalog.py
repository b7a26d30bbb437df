"""A catalog of the store's memories: what `list`, `stats` and the briefing show of each, in
an SQLite file under the ignored `.memstore/`, so that none of them parses every file.

It is derived from the files and kept in step with them at each open, without reading or
stat-ing every file: `worktree` says which files may differ from what the catalog holds (the
commits since its last look, the files that differ from HEAD, the folders whose names moved),
and only those are read again, by content digest. A catalog that is missing, damaged or of
another version is built again from the files.

Besides each memory's fields it keeps two word indexes: the features of each draft's name and
description (the briefing orders drafts by the words they share with the task), and for each
rule the words and concepts its patterns and description can match on, so that the rules a
task may touch are looked up, then judged exactly (`rules.related`), rather than every rule
matched in turn.

What it holds is what the files say, and the status and owner a read shows of each, judged
from the git history (`verdicts.judged`, with each file's blob id kept here) and judged again
only for the files whose history moved since: a confirmation the history does not back reads
as `unverified` here as everywhere. `list` pages it and `stats` counts it in SQL; the
briefing ranks the drafts awaiting review and the rules in SQL and reads only the rows it
shows (`awaiting_review`, `rules`).

One idea, the catalog kept in step, and so one module: its schema, the reading of a file into
a row and its keys, the bringing in step, and the queries over the same tables change
together (a column added touches all four).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import sqlite3
from collections.abc import Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from memstore.errors import GitError, InvalidMemory, StoreLocked, UnsafePath
from memstore.git import objects
from memstore.limits import SEVERITIES
from memstore.model import likeness
from memstore.model.memory import RULE_TYPES, Memory, evolve
from memstore.model.status import Status
from memstore.storage import trust, verdicts, worktree
from memstore.storage.files import memory_files, read_regular, version_of
from memstore.workflow.care import sharing
from memstore.workflow.rules import concepts, words
from memstore.workflow.rules import rules as workflow

if TYPE_CHECKING:
    from memstore.storage.store import Store

log = logging.getLogger(__name__)

FILE = "catalog.sqlite"
SCHEMA = 6
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
    "shown_status",
    "shown_owner",
)
_ROW = ", ".join(f"{c} TEXT PRIMARY KEY" if c == "path" else c for c in _COLUMNS)
_TABLES = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE memories ({_ROW});
CREATE TABLE keys (kind TEXT NOT NULL, key TEXT NOT NULL, path TEXT NOT NULL);
CREATE INDEX keys_by_key ON keys (kind, key, path);
CREATE INDEX keys_by_path ON keys (path);
CREATE INDEX memories_by_update ON memories (updated, name);
CREATE INDEX memories_by_status ON memories (shown_status, created, confirmed_at, path);
CREATE INDEX memories_by_type ON memories (type, path);
CREATE INDEX memories_by_owner ON memories (shown_owner, path);
"""
_BRIEFED = (
    "CREATE INDEX memories_briefed ON memories (status, shown_status, expires, type, severity, "
    "updated, name, shown_owner, owner, pinned, importance, path)"
)
"""The columns the briefing filters and ranks by, without the long ones: its counts and
rankings read this index alone, and only the rows it shows are read whole. Made when missing
(a catalog of this version made before it), as it holds nothing the rows do not."""
_DRAFT, _RULE, _TOLD = "d", "r", "w"
"""The word indexes: a draft's features; what a rule's patterns may match on (one is enough);
the words of a rule's description (two are needed, as `rules.related` says); and (kind
`sharing.ALIKE`) the words of the name and description of each memory not deprecated
(`likeness.words`), which the duplicate hint reads (`sharing`)."""


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


SHOWN_STATUS = "COALESCE(NULLIF(shown_status, ''), status)"
SHOWN_OWNER = "COALESCE(NULLIF(shown_owner, ''), owner)"
"""The status and owner a row shows (`Entry.status`, `Entry.owner`), as SQL over its columns."""


_PATH_ORDER = "substr(path, 1, instr(path, '/') - 1), substr(path, instr(path, '/') + 1)"
"""The order `entries` reads them in: by type folder, then file name."""
ORDERS = {
    "newest": f"updated DESC, name DESC, {_PATH_ORDER}",
    "name": f"name, {_PATH_ORDER}",
    "pinned": f"pinned DESC, name, {_PATH_ORDER}",
}
"""The orders `Catalog.page` lists in: newest update first; by name; the pinned first."""


@dataclass(frozen=True, slots=True)
class Awaiting:
    """A draft awaiting review as `Catalog.awaiting_review` ranks it: its entry, and how many
    of the task's features its name and description offer."""

    entry: Entry
    shared: int


def not_in(column: str, values: Iterable[str]) -> tuple[str, tuple[str, ...]]:
    """The `where` and its argument for rows whose `column` (or SQL expression) is none of
    `values`."""
    listed = sorted(values)
    if not listed:
        return "1", ()
    return f"{column} NOT IN (SELECT value FROM json_each(?))", (json.dumps(listed),)


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
        """The memories whose rows pass `where` (SQL over the columns; `shown_status` and
        `shown_owner` are the status and owner as shown), in the order `Store.memories` reads
        them, each status and owner as shown."""
        sql = f"SELECT {', '.join(_COLUMNS)} FROM memories WHERE name IS NOT NULL"
        rows = self.db.execute(sql + (f" AND ({where})" if where else ""), tuple(args)).fetchall()
        rows.sort(key=lambda r: tuple(r[0].split("/", 1)))
        return [_entry(r) for r in rows]

    def page(
        self,
        where: str = "",
        args: Iterable[Any] = (),
        limit: int = 0,
        offset: int = 0,
        order: str = "newest",
    ) -> tuple[list[Entry], int]:
        """The memories passing `where` (as `entries`) in an `order` of `ORDERS` (by default
        newest update first, then by name, descending), at most `limit` of them (0: all)
        after `offset`; and how many pass."""
        clause = "name IS NOT NULL" + (f" AND ({where})" if where else "")
        args = tuple(args)
        total = self.count(where, args)
        sql = f"SELECT path FROM memories WHERE {clause} ORDER BY {ORDERS[order]}"
        if limit:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        return self.at([p for (p,) in self.db.execute(sql, args)]), total

    def at(self, paths: Iterable[str]) -> list[Entry]:
        """The memories at `paths`, in that order (a path the catalog holds no memory at is
        left out)."""
        wanted = list(paths)
        found: dict[str, Entry] = {}
        for chunk in _chunks(sorted(set(wanted))):
            marks = ", ".join("?" * len(chunk))
            sql = (
                f"SELECT {', '.join(_COLUMNS)} FROM memories "
                f"WHERE name IS NOT NULL AND path IN ({marks})"
            )
            found.update((r[0], _entry(r)) for r in self.db.execute(sql, chunk))
        return [found[p] for p in wanted if p in found]

    def count(self, where: str = "", args: Iterable[Any] = ()) -> int:
        """How many memories pass `where` (as `entries`)."""
        clause = "name IS NOT NULL" + (f" AND ({where})" if where else "")
        sql = f"SELECT COUNT(*) FROM memories WHERE {clause}"
        return int(self.db.execute(sql, tuple(args)).fetchone()[0])

    def rules(self, where: str, args: Iterable[Any], binding: Iterable[str]) -> Iterator[Entry]:
        """The memories passing `where` (as `entries`; rules, `severity IS NOT NULL`) in the
        order the briefing lists rules (`Rule.rank` of each as shown: most severe first,
        binding before not, confirmed before the rest, then by name; then the order of
        `entries`), read as they are taken. A draft binds when its owner is one of `binding`
        (the store's humans as the memories spell them)."""
        clause = "name IS NOT NULL" + (f" AND ({where})" if where else "")
        severity = " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(SEVERITIES))
        sql = (
            f"SELECT path FROM memories WHERE {clause} "
            f"ORDER BY CASE severity {severity} ELSE {len(SEVERITIES)} END, "
            f"CASE WHEN {SHOWN_STATUS} = 'confirmed' OR ({SHOWN_STATUS} = 'draft' AND "
            f"{SHOWN_OWNER} IN (SELECT value FROM json_each(?))) THEN 0 ELSE 1 END, "
            f"{SHOWN_STATUS} != 'confirmed', name, {_PATH_ORDER}"
        )
        paths = [p for (p,) in self.db.execute(sql, (*args, json.dumps(sorted(binding))))]
        start, step = 0, 16  # most briefings take a few: read more only as they are taken
        while start < len(paths):
            yield from self.at(paths[start : start + step])
            start, step = start + step, min(step * 2, 500)

    def blobs(self, paths: Iterable[str]) -> dict[str, str]:
        """The blob id of each of `paths` the catalog holds (as its file was last read)."""
        found: dict[str, str] = {}
        for chunk in _chunks(sorted(paths)):
            marks = ", ".join("?" * len(chunk))
            sql = f"SELECT path, blob FROM memories WHERE path IN ({marks})"
            found.update((p, b) for p, b in self.db.execute(sql, chunk))
        return found

    def counts(self, column: str) -> dict[str, int]:
        """How many memories have each value of `column` (`type`, `shown_status`,
        `shown_owner`: each read from its own index), most first, ties in the order the
        memories are read (`entries`)."""
        if column not in _COLUMNS:
            raise ValueError(f"no column {column!r}")
        sql = f"SELECT {column}, COUNT(*), MIN(path) FROM memories GROUP BY {column}"
        found = [(str(v), int(n), str(p)) for v, n, p in self.db.execute(sql) if v is not None]
        found.sort(key=lambda x: (-x[1], tuple(x[2].split("/", 1))))
        return {v: n for v, n, _ in found}

    def median(self, expression: str, where: str, args: Iterable[Any] = ()) -> float | None:
        """The median of `expression` (SQL over the columns) over the memories passing
        `where` whose value is not NULL (the mean of the middle two for an even count), or
        None for none."""
        clause = f"({where}) AND ({expression}) IS NOT NULL"
        args = tuple(args)
        count = f"SELECT COUNT(*) FROM memories WHERE {clause}"
        n = int(self.db.execute(count, args).fetchone()[0])
        if not n:
            return None
        sql = (
            f"SELECT {expression} AS v FROM memories WHERE {clause} ORDER BY v "
            f"LIMIT {2 - n % 2} OFFSET {(n - 1) // 2}"
        )
        values = [float(v) for (v,) in self.db.execute(sql, args * 2)]
        return sum(values) / len(values)

    def owners(self) -> set[str]:
        """Every owner the memories show (`Entry.owner`): a store's identities, a few."""
        found = {
            str(o)
            for (o,) in self.db.execute("SELECT DISTINCT shown_owner FROM memories")
            if o is not None
        }
        if "" in found:  # rows whose shown owner is blank show the file's
            found.discard("")
            sql = "SELECT DISTINCT owner FROM memories WHERE shown_owner = ''"
            found |= {str(o) for (o,) in self.db.execute(sql) if o is not None}
        return found

    def awaiting_review(
        self,
        where: str,
        args: Iterable[Any],
        *,
        asked: Mapping[str, str],
        recalled: Mapping[str, int],
        features: Iterable[str],
        worth: int | None,
        limit: int,
    ) -> tuple[list[Awaiting], int]:
        """The first `limit` memories passing `where` (as `entries`) in the order the briefing
        offers drafts for review, and how many pass `where`. The order: those `asked` of the
        reader (by name: who asked), then those offering most of `features` (`shared`), rules
        before other types, the most `recalled` (by name), then the longest waiting (oldest
        update, then name, then the order of `entries`). With `worth`, only those asked, those
        offering a feature, rules and those recalled `worth` times or more are ranked."""
        args = tuple(args)
        clause = "m.name IS NOT NULL" + (f" AND ({where})" if where else "")
        total = int(
            self.db.execute(f"SELECT COUNT(*) FROM memories AS m WHERE {clause}", args).fetchone()[
                0
            ]
        )
        if limit <= 0:
            return [], total
        rules = ", ".join(f"'{t}'" for t in RULE_TYPES)
        extras: dict[str, list[str | int | None]] = {n: [a, 0] for n, a in asked.items()}
        for name, n in recalled.items():
            if n:
                extras.setdefault(name, [None, 0])[1] = n
        # The features' counts and the names' keys are joined by path and name (SQLite indexes
        # each subquery's rows for the join): no row's ranking is computed outside SQL.
        sql = (
            "SELECT m.path, COALESCE(s_n, 0) FROM memories AS m "
            "LEFT JOIN (SELECT path AS s_path, COUNT(*) AS s_n FROM keys WHERE kind = ? AND key IN "
            "(SELECT value FROM json_each(?)) GROUP BY path) ON s_path = m.path "
            "LEFT JOIN (SELECT key AS x_name, json_extract(value, '$[0]') AS x_asked, "
            "json_extract(value, '$[1]') AS x_recalled FROM json_each(?)) ON x_name = m.name "
            f"WHERE {clause}"
        )
        if worth is not None:
            sql += (
                " AND (COALESCE(x_asked, '') != '' OR s_n > 0 OR m.type IN "
                f"({rules}) OR COALESCE(x_recalled, 0) >= {int(worth)})"
            )
        sql += (
            f" ORDER BY x_asked IS NULL, -COALESCE(s_n, 0), m.type NOT IN ({rules}), "
            f"-COALESCE(x_recalled, 0), m.updated, m.name, {_PATH_ORDER} "
            f"LIMIT {int(limit)}"
        )
        head = (_DRAFT, json.dumps(sorted(set(features))), json.dumps(extras))
        ranked = dict(self.db.execute(sql, (*head, *args)).fetchall())
        return [Awaiting(e, int(ranked[e.path])) for e in self.at(ranked)], total

    def rule_candidates(self, task: str) -> set[str]:
        """The paths of the rules that may bear on `task` (`rules.related` says which do): a
        rule without patterns, one with a glob that matches the task, one a feature of the
        task is a key of a pattern of, or one two words of the task are words of the
        description of."""
        have = sorted(concepts.features(task))
        found: set[str] = set()
        # A rule with no patterns bears on every task; one with a glob, on a task its glob
        # matches (`rules.match`, cheap) or on one its other words meet (the keys below).
        # A glob is matched only when the task holds its literal pieces: most cannot match,
        # and a glob matched compiles a regular expression (a new process pays for each).
        lowered = task.lower()
        for path, patterns in self.db.execute(
            "SELECT path, patterns FROM memories WHERE always = 1"
        ):
            globs = _globs(patterns)
            if not globs or any(
                all(piece in lowered for piece in workflow.glob_pieces(g))
                and workflow.match(g, task)
                for g in globs
            ):
                found.add(path)
        told: dict[str, int] = {}
        for chunk in _chunks(have):
            marks = ", ".join("?" * len(chunk))
            sql = f"SELECT DISTINCT path FROM keys WHERE kind = ? AND key IN ({marks})"
            found.update(p for (p,) in self.db.execute(sql, (_RULE, *chunk)))
            sql = (
                f"SELECT path, COUNT(*) FROM keys WHERE kind = ? AND key IN ({marks}) GROUP BY path"
            )
            for path, n in self.db.execute(sql, (_TOLD, *chunk)):
                told[path] = told.get(path, 0) + int(n)
        return found | {p for p, n in told.items() if n >= 2}

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
        """The memory in `entry`'s file as a read shows it (None when it cannot be read): the
        status and owner the catalog judged for this version of it, no history read."""
        try:
            memory, data = self.store.read_file(self.store.root / entry.path, raw=True)
            if objects.blob_sha(data) != entry.blob:  # changed since: judged now
                return self.store.read_file(self.store.root / entry.path)[0]
            if (memory.status, memory.owner) == (entry.status, entry.owner):
                return memory
            return evolve(memory, status=entry.status, owner=entry.owner)
        except (InvalidMemory, OSError, UnsafePath) as e:
            log.warning("skipping %s: %s", entry.path, e)
            return None

    def close(self) -> None:
        self.db.close()


def filters(
    type_: str | None = None, status: str | None = None, tags: Iterable[str] = ()
) -> tuple[str, tuple[str, ...]]:
    """The `where` and its arguments for memories of `type_`, shown as `status`, with every
    one of `tags` (each None or empty: any)."""
    clauses: list[str] = []
    args: list[str] = []
    if type_:
        clauses.append("type = ?")
        args.append(type_)
    if status:
        clauses.append("shown_status = ?")
        args.append(status)
    for tag in tags:
        clauses.append("EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?)")
        args.append(tag)
    return " AND ".join(clauses), tuple(args)


@functools.lru_cache(maxsize=1 << 14)
def _globs(patterns: str) -> tuple[str, ...]:
    """The globs among a rule's patterns (a JSON list, as the catalog keeps them)."""
    return tuple(p for p in json.loads(patterns) if workflow.is_glob(p))


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
        shown_status,
        shown_owner,
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
        status=shown_status or status,
        owner=shown_owner or owner,
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
            db.execute("INSERT INTO meta VALUES (?, ?)", (sharing.META, sharing.VERSION))
            db.execute(f"PRAGMA user_version = {SCHEMA}")
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'memories_briefed'"
        if db.execute(sql).fetchone() is None:
            db.execute(_BRIEFED)
    except sqlite3.DatabaseError as e:
        db.close()
        if isinstance(e, sqlite3.OperationalError) and _busy(e):
            raise
        path.unlink(missing_ok=True)
        db = sqlite3.connect(path, timeout=store.lock_timeout, isolation_level=None)
        db.executescript(_TABLES)
        db.execute(_BRIEFED)
        db.execute("INSERT INTO meta VALUES ('words', ?)", (_words_digest(),))
        db.execute("INSERT INTO meta VALUES (?, ?)", (sharing.META, sharing.VERSION))
        db.execute(f"PRAGMA user_version = {SCHEMA}")
    return db


def _meta(db: sqlite3.Connection, key: str) -> str | None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    except sqlite3.OperationalError:  # no table yet
        return None
    return None if row is None else str(row[0])


def _sync(store: Store, db: sqlite3.Connection) -> None:
    """Re-read the files that may differ from what the catalog holds (`worktree` says which:
    no file is read or stat-ed to find them), drop the gone, and judge again what the
    history says of the memories whose history moved."""
    root = store.root
    try:
        head = worktree.head(store)
        folders, looked = worktree.folders(store)  # before any file is read
        dirty = worktree.dirty(store) if head is not None else set[str]()
    except (GitError, OSError) as e:
        log.info("reading every file of the catalog: %s", e)
        head, folders, looked, dirty = None, {}, 0, set[str]()
    old = worktree.Look.from_json(_meta_json(db, "look") or None)
    key = _judge_key(store)
    judged = _meta_json(db, "judged")
    judged_key, judged_head = judged.get("key"), judged.get("head")
    every = head is None or old is None
    again: set[str] = set()
    """Paths whose verdicts may have moved: their history changed since they were judged."""
    judge_all = bool(every or judged_key != key)
    if every:
        wanted = {e.rel for e in memory_files(root)}
        wanted |= {p for (p,) in db.execute("SELECT path FROM memories")}
    else:
        assert old is not None and head is not None
        wanted = set(old.loose) | dirty
        try:
            moved = worktree.touched(store, old.head, head)
            if moved is None:  # a history rewritten: what differs, and every verdict
                moved, judge_all = worktree.differing(store, old.head, head), True
        except GitError as e:
            log.info("reading every file of the catalog: %s", e)
            moved, judge_all = {e.rel for e in memory_files(root)}, True
        wanted |= moved
        again |= moved
        for name in set(folders) | set(old.folders):
            if folders.get(name) != old.folders.get(name) or old.unsure(name):
                wanted |= worktree.listed(store, name) ^ _paths_in(db, name)
    if not judge_all and judged_head != head:
        try:
            since = worktree.touched(store, str(judged_head), head) if head else None
        except GitError:
            since = None
        if since is None:
            judge_all = True
        else:
            again |= since
    held = _digests(db, wanted)
    rows: dict[str, tuple[Any, ...]] = {}
    keys: list[tuple[str, str, str]] = []
    gone: list[str] = []
    present: set[str] = set()
    for rel in sorted(wanted):
        try:
            data = read_regular(root / rel)
        except (OSError, UnsafePath):
            data = None
        if data is None:
            if rel in held:
                gone.append(rel)
            continue
        present.add(rel)
        if held.get(rel) == version_of(data):
            continue
        rows[rel], row_keys = _read(store, rel, data)
        keys.extend(row_keys)
    loose: tuple[str, ...] = ()
    if head is not None:
        try:
            loose = tuple(
                sorted(present & (dirty | (present - worktree.tracked(store, present - dirty))))
            )
        except GitError as e:
            log.info("cannot tell the loose files apart: %s", e)
            head = None
    look = (
        None
        if head is None
        else worktree.Look(
            head,
            folders,
            looked if old is None or _moved(old, folders, loose, head) else old.at,
            loose,
        )
    )
    shown, judged_ok = _judgments(store, db, rows, again - set(gone), judge_all)
    new_look = None if look is None else look.to_json()
    new_judged = {"key": key, "head": head} if judged_ok and head is not None else None
    if (
        not rows
        and not gone
        and not shown
        and new_look == (None if old is None else old.to_json())
        and new_judged == (judged or None)
    ):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        dropped = [(p,) for p in [*gone, *rows]]
        db.executemany("DELETE FROM memories WHERE path = ?", dropped)
        db.executemany("DELETE FROM keys WHERE path = ?", dropped)
        marks = ", ".join("?" * len(_COLUMNS))
        with _bulk(db, "memories", len(rows)):
            db.executemany(f"INSERT OR REPLACE INTO memories VALUES ({marks})", rows.values())
        with _bulk(db, "keys", len(keys)):
            db.executemany("INSERT INTO keys VALUES (?, ?, ?)", keys)
        db.executemany(
            "UPDATE memories SET shown_status = ?, shown_owner = ? WHERE path = ?",
            [(status, owner, path) for path, (status, owner) in shown.items()],
        )
        for name, value in (("look", new_look), ("judged", new_judged)):
            if value is None:
                db.execute("DELETE FROM meta WHERE key = ?", (name,))
            else:
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, json.dumps(value)))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


BULK = 50_000
"""From this many rows at once, a table's indexes are built after the rows are in (a first
build: 1.5 million keys at 100,000 memories took 10.8 s inserted into their indexes, 4.9 s
with the indexes built after)."""
BULK_CACHE_KIB = 64 << 10
"""SQLite's page cache while it builds them (its default is 2 MiB)."""


@contextlib.contextmanager
def _bulk(db: sqlite3.Connection, table: str, count: int) -> Generator[None]:
    """Inside the caller's transaction: `table`'s indexes dropped while `count` rows go in and
    built again after, when they are many (a rollback brings the indexes back with the rows)."""
    if count < BULK:
        yield
        return
    made = db.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
        "AND sql IS NOT NULL",
        (table,),
    ).fetchall()
    (cache,) = db.execute("PRAGMA cache_size").fetchone()
    db.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
    try:
        for name, _ in made:
            db.execute(f'DROP INDEX "{name}"')
        yield
        for _, sql in made:
            db.execute(sql)
    finally:
        db.execute(f"PRAGMA cache_size = {int(cache)}")


def _moved(old: worktree.Look, folders: dict[str, int], loose: tuple[str, ...], head: str) -> bool:
    return old.head != head or old.folders != folders or old.loose != loose


def _meta_json(db: sqlite3.Connection, key: str) -> dict[str, Any]:
    """A JSON object kept in the meta table ({} for none or another value)."""
    text = _meta(db, key)
    try:
        found: Any = json.loads(text) if text is not None else None
    except ValueError:
        return {}
    return cast("dict[str, Any]", found) if isinstance(found, dict) else {}


def _judge_key(store: Store) -> list[Any]:
    """What the shown statuses and owners depend on besides each file's history: the trust
    settings and allowed signers, the people, a shallow clone's cut, signatures required."""
    from memstore.git import gitlog

    cache = store.trust
    return [
        cache.basis(),
        list(trust.store_humans(store.root)),
        sorted(gitlog.shallow_commits(store.repo)),
        store.signed,
    ]


def _paths_in(db: sqlite3.Connection, folder: str) -> set[str]:
    """The paths the catalog holds in type folder `folder`."""
    # `/` sorts just before `0`: the range is every `<folder>/...` path.
    rows = db.execute(
        "SELECT path FROM memories WHERE path >= ? AND path < ?", (f"{folder}/", f"{folder}0")
    )
    return {p for (p,) in rows}


def _digests(db: sqlite3.Connection, paths: Iterable[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for chunk in _chunks(sorted(paths)):
        marks = ", ".join("?" * len(chunk))
        sql = f"SELECT path, digest FROM memories WHERE path IN ({marks})"
        found.update((p, d) for p, d in db.execute(sql, chunk))
    return found


PARTIAL_JUDGED = 256
"""Up to this many memories to judge again read just their verdicts (`Cache.current_for`);
more take the whole verdicts."""


def _judgments(
    store: Store,
    db: sqlite3.Connection,
    rows: dict[str, tuple[Any, ...]],
    again: set[str],
    judge_all: bool,
) -> tuple[dict[str, tuple[str, str]], bool]:
    """The (status, owner) to show for each memory whose history matters (`verdicts.judged`)
    among the rows read now, those in `again`, or all of them (`judge_all`), by path; and
    whether the history could be read (else they read `unverified`, and are judged again
    next time)."""
    cache = store.trust
    facts: dict[str, tuple[str, str, str, str]] = {}
    """By path: status, owner, type and blob as the file says."""
    if judge_all:
        sql = "SELECT path, status, owner, type, blob FROM memories WHERE name IS NOT NULL"
        facts = {r[0]: r[1:] for r in db.execute(sql)}
    else:
        for chunk in _chunks(sorted(again - rows.keys())):
            marks = ", ".join("?" * len(chunk))
            sql = (
                "SELECT path, status, owner, type, blob FROM memories "
                f"WHERE name IS NOT NULL AND path IN ({marks})"
            )
            facts.update((r[0], r[1:]) for r in db.execute(sql, chunk))
    for path, row in rows.items():
        if row[3] is not None:  # a valid memory
            facts[path] = (row[5], row[6], row[4], row[2])
    wanted = {p: f for p, f in facts.items() if f[0] == Status.CONFIRMED or f[2] in RULE_TYPES}
    shown: dict[str, tuple[str, str]] = {
        p: (f[0], f[1]) for p, f in facts.items() if p not in wanted
    }
    if not wanted:
        return shown, True
    rels = None if len(wanted) > PARTIAL_JUDGED else list(wanted)
    at = verdicts.snapshot(cache, rels)
    for path, (status, owner, _type, blob) in wanted.items():
        if at is None:
            shown[path] = (trust.UNVERIFIED, owner)
        else:
            shown[path] = verdicts.judged(cache, cache.prefix + path, status, owner, blob, at)
    return shown, at is not None


def _read(
    store: Store, rel: str, data: bytes
) -> tuple[tuple[Any, ...], list[tuple[str, str, str]]]:
    """The row and keys of the file at `rel`, whose bytes are `data`; a row with no name for
    a file that is no valid memory (so it is not read again until it changes)."""
    path = store.root / rel
    try:
        memory, data = store.read_file(path, raw=True, data=data)
    except InvalidMemory as e:
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
            pattern_keys, description_keys = rule_keys(rule)
            keys = [(_RULE, k, rel) for k in sorted(pattern_keys)]
            keys += [(_TOLD, k, rel) for k in sorted(description_keys)]
    if memory.status == Status.DRAFT:
        keys += [(_DRAFT, f, rel) for f in sorted(draft_features(memory.name, memory.description))]
    if memory.status != Status.DEPRECATED:
        keys += [
            (sharing.ALIKE, w, rel) for w in sorted(likeness.words(memory.name, memory.description))
        ]
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
        memory.status,
        memory.owner,
    )
    return row, keys


def rule_keys(rule: workflow.Rule) -> tuple[set[str], set[str]]:
    """What a task must offer (`concepts.features`) for `rule` to bear on it, unless it has
    no patterns or a glob (then it is always judged): some alternative of a word of one of its
    patterns (`concepts.units`), or two words of its description (`rules.related`); the two
    sets of keys."""
    keys: set[str] = set()
    for pattern in rule.applies_when:
        if not workflow.is_glob(pattern):
            for unit in concepts.units(pattern):
                keys |= unit
    told = {w for w in workflow.words(rule.description) if len(w) >= 3 and not w.isdigit()}
    return keys, told


def draft_features(name: str, description: str) -> frozenset[str]:
    """What a draft offers a task, as the briefing compares them."""
    return concepts.features(f"{name} {description}")
