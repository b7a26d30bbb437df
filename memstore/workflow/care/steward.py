"""Keeping a store true as the code moves: near-duplicates, broken links, expiry, stale and
drifted confirmations, and the store's figures (`doctor`, `stats`).

Everything here reads; nothing writes a tracked file.
"""

from __future__ import annotations

import os
import sys
import threading
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, cast

from memstore.errors import GitError, MemstoreError
from memstore.model import when
from memstore.model.likeness import STOP, WORD, jaccard, words
from memstore.model.memory import Memory, evolve, expiry, links_in_body
from memstore.model.status import Status
from memstore.model.words import plural
from memstore.search import manifest
from memstore.storage.files import Kind, atomic_write, folder_times, lock_file, stamps

if TYPE_CHECKING:
    from memstore.search import index
    from memstore.search.index import Progress
    from memstore.search.upkeep import Upkeep
    from memstore.storage import trust
    from memstore.storage.store import Store
    from memstore.workflow.care import orientation

# Only `similar`, the hint after each write, loads with this module: drift, trust, orientation
# and the figures' statistics load when a report asks for them.

HINT_SIMILARITY = 0.5
"""How alike (Jaccard over name and description words) a memory must be to be named on write."""
CLUSTER_SIMILARITY = 0.6
"""How alike two memories must be for `doctor` to list them as one duplicate cluster."""
HINT_MAX = 3
HINT_WORDS = 6
"""How many of a new memory's words the hint looks up."""
HINT_READS = 32
"""At most this many memory files the index does not reflect yet are read by a hint; more,
and the hint brings the index up to date first (one commit for them all, under its lock)."""
HINT_READS_BUSY = 4 * HINT_READS
"""At most this many such files a hint reads rather than wait while another process brings
the index up to date; more, and it waits for the index too."""
CATCHING_UP = "hint-catch-up.lock"
"""The lock, in the store's cache, of the hint that brings the index up to date: taken, never
waited for, so that of several writers finding the index behind at once one catches it up and
the others read the files themselves, neither waiting for it nor doing it again."""
INDEX_LOCK = "index.lock"
"""The search index's lock in the store's cache (`search.Upkeep` takes it to write)."""
COMMON_WORD = 30
"""A word in more memories than this says nothing about duplicates (`doctor` skips it)."""


@dataclass(frozen=True, slots=True)
class Similar:
    """An existing memory close to one being written."""

    name: str
    type: str
    status: str
    description: str
    similarity: float


def similar(store: Store, name: str, description: str) -> list[Similar]:
    """The existing memories (not deprecated, not expired) closest to a memory with this name
    and description, most alike first: a hint on write, never a refusal.

    The catalog, once a store has one, says which memories share at least half of the new
    one's words (its word index, read as it is, not brought in step), and the memory files
    commits changed since it last looked are read instead of their rows (see
    `sharing.sharing`); past HINT_READS of those, the catalog is brought in step first.

    Without a catalog, every memory the search index's manifest lists is compared: it keeps
    each one's name, type, status, description and expiry, and is read without the index's
    lock and without loading Whoosh; the few memory files it does not reflect yet (just
    written by this or another process, changed or gone since) are read instead of their
    entries. With no manifest yet, or more than HINT_READS such files, the index is caught
    up first (one commit for them all, under its lock), as a search does — unless another
    process is at it already: then up to HINT_READS_BUSY files are read instead (see
    `_caught_up`). A server whose watcher keeps its index current asks that index instead
    (see `_searched`).
    """
    mine = words(name, description)
    if not mine:
        return []
    if "memstore.search.upkeep" in sys.modules:  # a server, or a process that searched
        from memstore.search import upkeep as search

        up = search.upkeep(store)
        if up.watched:
            return _searched(up, name, description, mine)
    from memstore.workflow.care import sharing  # here: a server's hints never need it

    try:
        cataloged = sharing.sharing(store, mine)
        if cataloged is not None and len(cataloged[1]) > HINT_READS:
            from memstore.workflow.care import catalog

            with catalog.opened(store):  # in step: one look for all of them
                pass
            cataloged = sharing.sharing(store, mine)
    except (MemstoreError, OSError):  # a hint never fails the write it follows
        cataloged = None
    if cataloged is not None:
        rows, changed = cataloged
        return _closest(store, name, mine, rows, _stamped(store, changed))
    try:
        found = _listed(store)
        if found is None:
            found = _caught_up(store)
    except (MemstoreError, OSError):  # a hint never fails the write it follows (a full disk)
        return []
    if found is None:
        return []
    return _closest(store, name, mine, *found)


def _closest(
    store: Store,
    name: str,
    mine: frozenset[str],
    listed: list[manifest.Fields],
    changed: dict[str, manifest.Stamp],
) -> list[Similar]:
    """The hint among `listed` and the memories in the files `changed` (read now)."""
    today = when.utcnow().strftime("%Y-%m-%d")
    candidates = [*listed, *_unindexed(store, changed, skip=f"{name}.md")]
    close = [
        Similar(n, type_, status, d, round(score, 2))
        for n, type_, status, d, expires in candidates
        if n != name
        and status != Status.DEPRECATED
        and not (expires and expires < today)
        and _shares_one(mine, n, d)
        and (score := jaccard(mine, words(n, d))) >= HINT_SIMILARITY
    ]
    return sorted(close, key=lambda s: (-s.similarity, s.name))[:HINT_MAX]


def _stamped(store: Store, rels: set[str]) -> dict[str, manifest.Stamp]:
    """These memory files (store-relative) that exist, with their stamps."""
    found: dict[str, manifest.Stamp] = {}
    for rel in rels:
        try:
            st = os.stat(store.root / rel)
        except OSError:
            continue  # gone since: nothing to compare
        found[rel] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return found


def _searched(up: Upkeep, name: str, description: str, mine: frozenset[str]) -> list[Similar]:
    """The hint from one query on an index a watcher keeps current, in a process that holds
    it open already (its watcher commits to it after each burst of changes: comparing the
    manifest, read again each time, cost concurrent servers a tenth more CPU per write)."""
    from memstore.search.query import QUERY_MAX, Query

    # Plain words (OR-ed, scored from the postings without the query parser); the longest
    # few, which are the rarer ones: common words cost the most to score and say the least.
    found_words = set(WORD.findall(f"{name.replace('-', ' ')} {description}".lower()))
    text = " ".join(sorted(found_words - STOP, key=lambda w: (-len(w), w))[:HINT_WORDS])
    try:
        # Without feedback: the hint wants memories sharing these words, not related ones.
        hits = up.index.search(Query(text[:QUERY_MAX], limit=10, feedback=False))
    except (MemstoreError, OSError):  # a hint never fails the write it follows (a full disk)
        return []
    close = [
        Similar(h.name, h.type, h.status, h.description, round(score, 2))
        for h in hits
        if h.name != name
        and (score := jaccard(mine, words(h.name, h.description))) >= HINT_SIMILARITY
    ]
    return sorted(close, key=lambda s: (-s.similarity, s.name))[:HINT_MAX]


Listed = tuple[list[manifest.Fields], dict[str, manifest.Stamp]]
"""The fields of the memories the index reflects, and the files it does not with their stamps."""


def _listed(store: Store, reads: int = HINT_READS, without_index: bool = False) -> Listed | None:
    """The fields of the memories the index's manifest reflects as they are on disk, and the
    memory files it does not (added or changed since, racy) with their stamps; None when
    more than `reads` files are not reflected, or there is no manifest (unless
    `without_index`: then every file is one it does not reflect)."""
    files = manifest.current(store.cache / "index" / manifest.FILE)
    if files is None:
        if not without_index:
            return None
        files = manifest.Manifest({}, {}, set(), {})
    disk = stamps(store.root, folder_times(store.root))
    changed = {p: s for p, s in disk.items() if files.stamps.get(p) != s or p in files.racy}
    if len(changed) > reads:
        return None
    listed = [f for p, f in files.fields.items() if p in disk and p not in changed]
    return listed, changed


def _caught_up(store: Store) -> Listed | None:
    """`_listed` once the index is brought up to date, for a hint that found it too far behind.

    Of the writers that find it so at once (eight agents adding, each past the last one to
    catch up), the one that takes CATCHING_UP loads Whoosh and catches the index up. The
    others, and one that finds a search or watcher writing the index, read the files the
    index does not reflect themselves (up to HINT_READS_BUSY) rather than wait for it or do
    it again.

    Raises:
        MemstoreError: when catching up fails (the hint is then left out).
    """
    held: int | None = None
    try:
        held = lock_file(store.cache / CATCHING_UP, 0)
        elected = held is not None and not _busy(store.cache / INDEX_LOCK)
    except OSError:  # no flock here: catch up, as every hint did before
        elected = True
    try:
        if not elected:
            found = _listed(store, HINT_READS_BUSY, without_index=True)
            if found is not None:
                return found
        from memstore.search import upkeep as search  # loads Whoosh: only to write the index

        search.upkeep(store).fresh(store)
    finally:
        if held is not None:
            os.close(held)
    return _listed(store)


def _busy(path: Path) -> bool:
    """Whether another process holds the lock file `path` (tried, never waited for)."""
    fd = lock_file(path, 0)
    if fd is None:
        return True
    os.close(fd)
    return False


def _shares_one(mine: frozenset[str], name: str, description: str) -> bool:
    """Whether the text holds one of `mine` at all: a memory sharing none is not alike, and
    this is cheaper than its words (a word's singular is a part of its plural too)."""
    text = f"{name.replace('-', ' ')} {description}".lower()
    return any(w in text for w in mine)


_read: dict[tuple[Path, str], tuple[manifest.Stamp, manifest.Fields | None]] = {}
"""The fields of memory files read by hints, by store root and path, with the file's stamp
then: a server's hints read each file the index does not reflect yet once, not per write."""
_read_lock = threading.Lock()


def _unindexed(store: Store, files: dict[str, manifest.Stamp], skip: str) -> list[manifest.Fields]:
    """The fields of the memories in these files (store-relative, with their stamps), read
    from the files; `skip` is a file name left out (the new memory's)."""
    found: list[manifest.Fields] = []
    for rel, stamp in files.items():
        if rel.rpartition("/")[2] == skip:
            continue
        key = (store.root, rel)
        with _read_lock:
            kept = _read.get(key)
        if kept is not None and kept[0] == stamp:
            fields = kept[1]
        else:
            try:
                m = store.read_file(store.root / rel, raw=True)[0]
            except (MemstoreError, OSError):  # gone or broken since: the index skips it too
                fields = None
            else:
                fields = (m.name, m.type, m.status, m.description, expiry(m))
            with _read_lock:
                if len(_read) > 10_000:
                    _read.clear()
                _read[key] = (stamp, fields)
        if fields is not None:
            found.append(fields)
    return found


def clusters(memories: Iterable[Memory]) -> list[list[str]]:
    """Groups of near-duplicate memories (same body, or alike names and descriptions), each
    sorted by name, largest group first."""
    items = [m for m in memories if m.status != Status.DEPRECATED]
    sets = [words(m.name, m.description) for m in items]
    postings: dict[str, list[int]] = defaultdict(list)
    for i, ws in enumerate(sets):
        for w in ws:
            postings[w].append(i)
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(a: int, b: int) -> None:
        parent[root(a)] = root(b)

    # Candidates share a rarer word; each candidate pair is then compared on all its words.
    # (A word only one memory has pairs it with none.)
    rare = {w for w, ids in postings.items() if 1 < len(ids) <= COMMON_WORD}
    small = {i for i, ws in enumerate(sets) if len(ws) <= 3}
    for i, ws in enumerate(sets):
        # Two memories alike enough share at least two rarer words (or one is tiny): the
        # memories after this one sharing one rarer word (`once`) and two (`twice`), in set
        # operations rather than a count per candidate.
        once: set[int] = set()
        twice: set[int] = set()
        for w in ws & rare:
            ids = postings[w]  # ascending: only the memories after this one are compared
            later = set(ids[bisect_right(ids, i) :])
            twice |= once & later
            once |= later
        for j in once if len(ws) <= 3 else twice | (once & small):
            if jaccard(ws, sets[j]) >= CLUSTER_SIMILARITY:
                join(i, j)
    # The same description or the same body (ignoring case and spacing) is a duplicate too.
    for field_name in ("description", "body"):
        seen: dict[str, int] = {}
        for i, m in enumerate(items):
            text: str = getattr(m, field_name)
            key = " ".join(text.lower().split())
            if len(key) >= 20:
                if key in seen:
                    join(i, seen[key])
                else:
                    seen[key] = i
    groups: dict[int, list[str]] = defaultdict(list)
    for i, m in enumerate(items):
        groups[root(i)].append(m.name)
    found = [sorted(g) for g in groups.values() if len(g) > 1]
    return sorted(found, key=lambda g: (-len(g), g))


def drift_notes(store: Store, memories: Iterable[Memory]) -> dict[str, str]:
    """ "may be out of date: …" for each confirmed memory (as its history shows it) whose
    files changed since it was last confirmed or verified, by name: one git log for all."""
    from memstore.storage import drift

    checked = [m for m in memories if m.status == Status.CONFIRMED and drift.files_of(m)]
    if not checked:
        return {}
    newest = drift.changes(store.repo, store.cache).newest(
        spec for m in checked for spec in drift.files_of(m)
    )
    return {m.name: d.note for m in checked if (d := drift.drift_of(m, newest)) is not None}


# -- doctor -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    """One memory `doctor` names, and why."""

    name: str
    detail: str


@dataclass(frozen=True, slots=True)
class Report:
    """What `doctor` found. Only lint problems make it fail."""

    memories: int
    duplicates: list[list[str]] = field(default_factory=list[list[str]])
    merges: list[str] = field(default_factory=list[str])
    """For each duplicate cluster, the `memstore merge` command, the memory to keep first."""
    broken_links: list[Finding] = field(default_factory=list[Finding])
    expired: list[Finding] = field(default_factory=list[Finding])
    stale: list[Finding] = field(default_factory=list[Finding])
    drifted: list[Finding] = field(default_factory=list[Finding])
    lint: list[str] = field(default_factory=list[str])
    index: str = ""

    @property
    def ok(self) -> bool:
        return not self.lint


def _today() -> str:
    return when.utcnow().strftime("%Y-%m-%d")


def checkup(
    store: Store, flag: str | None, *, lint: bool = True, embedded: Progress | None = None
) -> tuple[orientation.Orientation, Report]:
    """`doctor`'s report and the set-up it starts with (`orientation.orient`, given the agent
    `flag`), reading each memory file once for both. Memories semantic recall has not embedded
    yet are, with `embedded(done, total)` told the pace."""
    from memstore.workflow.care import orientation

    report, memories, synced = _examine(store, lint)
    return orientation.orient(store, flag, memories, synced, embedded), report


def doctor(store: Store, *, lint: bool = True) -> Report:
    """Look the whole store over: duplicate clusters, broken links (`links` and `[[name]]`),
    expired memories, stale and drifted confirmations, lint problems and the index's health.

    Each file's checks are kept by its stamp in `.memstore/` and the history's verdicts per
    HEAD (see `lint.FileMemo`): `memstore lint` is the full replay.

    Raises:
        StoreLocked: when another process holds the index lock past the timeout.
    """
    return _examine(store, lint)[0]


def _examine(store: Store, lint: bool) -> tuple[Report, list[Memory], index.Sync]:
    """`doctor`'s report, the memories it read (as `Store.memories` shows them) and what the
    index's catch-up did."""
    from memstore.storage import drift, settings
    from memstore.workflow.care.lint import (  # lint's checks: only doctor needs them
        FileMemo,
        lint_store,
    )

    memo = FileMemo(store)
    problems: list[str] = []
    if lint:
        try:
            problems = [str(p) for p in lint_store(store, memo=memo, kept=True)]
        except GitError as e:
            problems = [f"cannot read the history: {e}"]
    else:
        for _, kind, read in memo.places():
            if kind == Kind.MEMORY:
                read()
    from memstore.storage import verdicts

    at = verdicts.snapshot(store.trust)  # HEAD read once for all, not once per memory
    memories = [_shown(store, rel, m, memo.blobs[rel], at) for rel, m in memo.memories.items()]
    # What the clusters are made of: each file's content, and whether it reads as deprecated.
    basis = [
        f"{rel}\0{memo.blobs[rel]}\0{m.status == Status.DEPRECATED:d}"
        for rel, m in zip(memo.memories, memories, strict=True)
    ]
    names = {m.name for m in memories}
    today = _today()
    settings = settings.upkeep_settings(store.root)
    stale_before = when.utcnow() - timedelta(days=settings.stale_after_days)

    broken: list[Finding] = []
    expired: list[Finding] = []
    stale: list[Finding] = []
    confirmed_with_files: list[Memory] = []
    for m in sorted(memories, key=lambda m: m.name):
        missing = [n for n in (*m.links, *links_in_body(m.body)) if n not in names]
        if missing:
            broken.append(Finding(m.name, "links to missing " + ", ".join(dict.fromkeys(missing))))
        if m.status == Status.DEPRECATED:
            continue
        expires = m.extra.get("expires")
        if isinstance(expires, str) and expires[:10] < today:
            expired.append(Finding(m.name, f"expired on {expires[:10]}"))
            continue
        if m.status != Status.CONFIRMED:
            continue
        checked = drift.checked_at(m)
        if checked is not None and checked < stale_before.timestamp():
            on = datetime.fromtimestamp(checked, UTC).strftime("%Y-%m-%d")
            stale.append(Finding(m.name, f"last confirmed or verified {on}"))
        if drift.files_of(m):
            confirmed_with_files.append(m)

    notes = drift_notes(store, confirmed_with_files)
    drifted = [Finding(m.name, notes[m.name]) for m in confirmed_with_files if m.name in notes]

    health, synced = _index_health(store, len(memories))
    from memstore.workflow.care import merge  # its command names each cluster's fix

    duplicates = _kept_clusters(store, memories, basis)
    by_name = {m.name: m for m in memories}
    report = Report(
        memories=len(memories),
        duplicates=duplicates,
        merges=[merge.command(c, by_name) for c in duplicates],
        broken_links=broken,
        expired=expired,
        stale=stale,
        drifted=drifted,
        lint=problems,
        index=health,
    )
    return report, memories, synced


CLUSTERS_FILE = "doctor-clusters.json"
"""`doctor`'s last duplicate clusters in the store's cache, with the digest of what they were
found in: kept while no memory file changed, and found again when one did."""


def _kept_clusters(store: Store, memories: list[Memory], basis: list[str]) -> list[list[str]]:
    """`clusters(memories)`, taken from `CLUSTERS_FILE` when it was made from the same files
    (`basis`: each one's path, blob and whether it reads as deprecated) by the same code."""
    import hashlib
    import json

    digest = hashlib.sha1(Path(__file__).read_bytes())
    digest.update("\n".join(basis).encode())
    key = digest.hexdigest()
    file = store.cache / CLUSTERS_FILE
    try:
        kept: object = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = None
    if isinstance(kept, dict) and cast("dict[str, object]", kept).get("key") == key:
        groups: object = cast("dict[str, object]", kept).get("clusters")
        names = {m.name for m in memories}
        if isinstance(groups, list) and all(
            isinstance(g, list) and len(cast("list[object]", g)) > 1 and names.issuperset(g)  # pyright: ignore[reportUnknownArgumentType]
            for g in cast("list[object]", groups)
        ):
            return cast("list[list[str]]", groups)
    found = clusters(memories)
    try:
        store.cache.mkdir(exist_ok=True)
        atomic_write(file, json.dumps({"key": key, "clusters": found}).encode())
    except OSError as e:
        import logging  # only here: a write's hint loads this module, and not logging

        logging.getLogger(__name__).info("cannot keep the duplicate clusters in %s: %s", file, e)
    return found


def _shown(store: Store, rel: str, memory: Memory, blob: str, at: trust.Trust | None) -> Memory:
    """`memory` as its history supports it (see `verdicts.shown`), from its blob sha and the
    verdicts `at` HEAD (None: read now)."""
    from memstore.storage import verdicts

    if not verdicts.needs_history(memory):
        return memory
    status, owner = verdicts.judged(
        store.trust, store.trust.prefix + rel, memory.status, memory.owner, blob, at
    )
    if (status, owner) == (memory.status, memory.owner):
        return memory
    return evolve(memory, status=status, owner=owner)


def _index_health(store: Store, files: int) -> tuple[str, index.Sync]:
    from memstore.search import upkeep as search

    synced = search.catch_up(store)
    fixed: list[str] = []
    if synced.rebuilt:
        fixed.append("rebuilt")
    if synced.indexed or synced.removed:
        fixed.append(f"caught up {synced.indexed} changed, {synced.removed} removed")
    if synced.skipped:
        fixed.append(f"{len(synced.skipped)} unreadable: {', '.join(synced.skipped[:5])}")
    line = f"{plural(files, 'memory')} indexed" + (
        f" ({'; '.join(fixed)})" if fixed else ", up to date"
    )
    return line, synced


# -- store figures ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Figures:
    """The store's figures for `stats`."""

    memories: int
    by_type: dict[str, int]
    by_status: dict[str, int]
    by_owner: dict[str, int]
    drafts_awaiting_review: int
    draft_median_age_days: float | None
    confirmation_latency_median_days: float | None
    """From creation to the confirmation that holds, over confirmed memories."""
    recalls: int
    recalls_with_confirmed: int
    """Recalls (CLI search, MCP memory_recall) counted in `.memstore/`, and how many returned
    at least one confirmed memory."""


def figures(store: Store) -> Figures:
    """Counts by type, status and owner; drafts awaiting review and their median age; the
    median time from creation to confirmation; the share of recalls that found a confirmed
    memory."""
    from memstore.search import upkeep as search
    from memstore.workflow.care import catalog

    now = when.utcnow().strftime("%Y-%m-%dT%H:%M:%S")
    with catalog.opened(store) as found:  # counted in the catalog: no file parsed, no row read
        by_status = found.counts("shown_status")
        drafts = by_status.get(Status.DRAFT, 0)
        # Days in SQLite's `julianday`, which reads the ISO 8601 times memstore writes.
        age = found.median(
            "max(0, julianday(?) - julianday(created))", "shown_status = 'draft'", (now,)
        )
        latency = found.median(
            "max(0, julianday(confirmed_at) - julianday(created))",
            "shown_status = 'confirmed' AND confirmed_at != ''",
        )
        figures = Figures(
            memories=sum(by_status.values()),
            by_type=found.counts("type"),
            by_status=by_status,
            by_owner=found.counts("shown_owner"),
            drafts_awaiting_review=drafts,
            draft_median_age_days=None if age is None else round(age, 1),
            confirmation_latency_median_days=None if latency is None else round(latency, 2),
            recalls=0,
            recalls_with_confirmed=0,
        )
    recalls, confirmed = search.recall_counts(store)
    return replace(
        figures,
        recalls=recalls,
        recalls_with_confirmed=confirmed,
    )


__all__ = [
    "Figures",
    "Finding",
    "Report",
    "Similar",
    "checkup",
    "clusters",
    "doctor",
    "drift_notes",
    "figures",
    "similar",
]
