"""Searching a store, and keeping its search index in step with its files.

`index.py` is Whoosh; this module decides when and what to (re)index: the files the write path
reports (`Store.written`), and what the type folders' modification times and the files'
stamps show others changed. `search(store, Query(...))` is the one way in for every face, and
drives a recall through each stage once, in this order, no stage calling back into an earlier
one (the lower helpers `analysis`, `postings` and `fusion` never call up):

1. query: `since` read and the query checked (`query`), then parsed by the index (`query`);
2. candidates: the documents that pass the filters and are not hidden (`index`, `postings`);
3. rank: each ranker's list, boosted (`rank`, reading `postings`);
4. fuse: the lists fused (`fusion`), linked memories added (`rank`);
5. trust: the store's own judgment (`steward`): memories about `path`, pins and importance
   first, each status as its history backs it (`storage.trust`), drift notes;
6. fit: the leading hits that fit the LLM token cap, `max_tokens` (`query.fit_tokens`).

It stays one module because a search's freshness and its stages share one per-store record
(`Upkeep`: what this process last saw of the files, the look, semantic recall's vectors).
What a look is and what may have changed since live in `lookout`; the stages' own work lives
in the modules named above.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
import time
import weakref
from collections.abc import Callable, Collection, Generator, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

# drift, documents, embedding and when load with the search that needs them: a write's
# duplicate hint (`steward.similar`) searches the index and needs none of them.
from memstore.errors import InvalidMemory, StoreLocked, UnsafePath
from memstore.model.memory import RULE_TYPES, Memory
from memstore.model.words import plural
from memstore.search import lookout
from memstore.search.analysis import content_words
from memstore.search.index import Index, Progress, Sync
from memstore.search.manifest import Stamp
from memstore.search.query import Hit, Query, estimate_hit_tokens, fit_tokens, since_read
from memstore.search.rank import Dense
from memstore.search.schema import DOC, DocSection
from memstore.storage import settings, trust, verdicts, worktree
from memstore.storage.files import (
    folder_times,
    is_memory_path,
    lock_file,
    read_regular,
    stamps,
    version_of,
)
from memstore.storage.trust import UNVERIFIED

if TYPE_CHECKING:
    from memstore.search import embedding
    from memstore.storage.store import Store

__all__ = [
    "Hit",
    "Query",
    "Recall",
    "Upkeep",
    "catch_up",
    "close",
    "recall",
    "reindex",
    "search",
    "upkeep",
]

log = logging.getLogger(__name__)

RESCAN_SECONDS = 2.0
"""Without a watcher, how old a search's view of in-place edits may be."""

Folders = dict[str, int]
"""The store root (`.`) and each type folder, by name, with its modification time in ns
(`files.folder_times`)."""


class Upkeep:
    """One store's search index and how current this process last saw it.

    It keeps no reference to its `Store`, so it lives exactly as long as the store does.
    """

    def __init__(self, cache: Path, lock_timeout: float) -> None:
        self.cache = cache
        self.lock_timeout = lock_timeout
        self.index = Index(cache / "index", self._locked)
        self.watched = False
        """Set while a `Watcher` keeps the index current (no periodic rescans needed)."""
        self.first_look: threading.Event | None = None
        """A starting `Watcher`'s: set once its first catch-up is done. A search that has not
        looked at the files yet waits for it rather than scanning them beside it."""
        self.seen: Folders | None = None
        """The folders' modification times at this process's last catch-up."""
        self.scanned_at = 0.0
        self.docs: tuple[str, ...] | None = None
        """The store's `docs:` globs (read on first use)."""
        self.docs_at = 0.0
        """When the project documents were last compared with the index (0: never)."""
        self.vectors: embedding.Vectors | None = None
        """Semantic recall's vectors, once its model is loaded (see `semantic`)."""
        self.semantic_off: str | None = None
        """Why semantic recall is off, once looked at: "" while it is on."""
        self.spec: str | None = None
        """memstore.yaml's `embedding_model:` once read ("" for none; see `semantic_named`)."""
        self.static: bool | None = None
        """Whether that model is a static one (see `index.Dense.static`), once looked at."""
        # No lock of its own: searches and a watcher may catch up at once. The index orders
        # its writers, and each records folder times taken before its own scan, so `seen`
        # can only go back to an older, still true view (the next search scans again).

    @contextmanager
    def _locked(self) -> Generator[None]:
        # Its own lock, so searches catching up never wait for a git commit; writers take the
        # store lock first, then this one.
        self.cache.mkdir(exist_ok=True)
        path = self.cache / "index.lock"
        try:
            fd = lock_file(path, self.lock_timeout)
        except OSError as e:
            raise StoreLocked(f"cannot lock {path}: {e.strerror or e}") from e
        if fd is None:
            raise StoreLocked(
                f"search index busy: could not take {path} within "
                f"{self.lock_timeout:g}s; another memstore process is indexing — try again"
            )
        try:
            yield
        finally:
            os.close(fd)

    def catch_up(self, store: Store, progress: Progress | None = None) -> Sync:
        """Re-index what changed since the index last saw the files, in every folder, and the
        project documents: for a large store, what git and the index's log say may have
        changed since the index's kept look (`lookout`), else every file's stamp."""
        result = self._since_look(store)
        if result is None:
            begun = self._begin(store)
            folders = folder_times(store.root)
            disk = stamps(store.root, folders)
            result = self.index.sync(disk, _loader(store), _digest(store), progress)
            self.seen, self.scanned_at = folders, time.monotonic()
            self._keep(begun)
        self.documents(store, force=True)
        return result

    def _begin(self, store: Store) -> lookout.Begun | None:
        """A look to keep once every file was looked at, for a large index (a small one is
        caught up with by its files' stamps, asking git nothing)."""
        return lookout.begin(store) if lookout.large(self.index.dir) else None

    def _keep(self, begun: lookout.Begun | None) -> None:
        """Keep `begun` as the index's look once every file was looked at, taken against the
        manifest as the catch-up left it: the files it holds as changed within the racy
        window of the look or since count as loose (edited while the catch-up ran)."""
        state = self.index.position()
        if begun is None or state is None or not lookout.large(self.index.dir):
            return
        recent = self.index.recent(begun.at - worktree.RACY_NS)
        lookout.keep(self.index.dir, begun, recent, state)

    def _since_look(self, store: Store) -> Sync | None:
        """Catch up with what may have changed since the kept look; None when every file
        must be looked at (no look kept, a small or unbuilt index, see `lookout.since`)."""
        directory = self.index.dir
        if not lookout.large(directory) or not self.index.settled():
            return None
        kept = lookout.read(directory)
        if kept is None:
            return None
        root = store.root
        folders = folder_times(root)
        found = lookout.since(store, directory, kept)
        if found is None:
            return None
        paths = found.paths
        disk: dict[str, Stamp] = {}
        for rel in paths:
            stamp = _stamp(f"{root}/{rel}")
            if stamp is not None:
                disk[rel] = stamp
        result = Sync()
        loose: set[str] | None = set()
        if paths:
            digest = _digest(store)
            # These files (mostly others' writes, indexed there) are compared with their
            # entries alone, the manifest not parsed whole; those that differ are indexed.
            if not self.index.holds(disk, paths, digest):
                loader = _loader(store)
                synced = self.index.sync_few(disk, paths, loader, digest)
                if synced is None:  # the log must be folded first: the whole manifest
                    synced = self.index.sync_some(disk, paths.__contains__, loader, digest)
                if synced is None:
                    return None
                result = synced
            # What this catch-up indexes is in the log after `found.state`, so the next one
            # looks at it again: only the files git does not track are added as loose.
            loose = lookout.untracked(store, set(disk))
        if loose is not None:
            lookout.keep(directory, found.begun, loose, found.state)
        self.seen, self.scanned_at = folders, time.monotonic()
        return result

    def documents(self, store: Store, force: bool = False) -> Sync:
        """Bring the project documents (`docs:` in memstore.yaml) up to date in the index, at
        most every RESCAN_SECONDS unless `force`: they live outside the store, where no
        watcher looks, so an edit shows within that time."""
        if self.docs is None:
            self.docs = settings.doc_globs(store.root)
        if not self.docs:
            return Sync()
        now = time.monotonic()
        if not force and now - self.docs_at <= RESCAN_SECONDS:
            return Sync()
        from memstore.search import documents

        top = store.repo.top
        disk = documents.find(top, self.docs, exclude=None if store.root == top else store.root)
        result = self.index.sync_docs(disk, lambda rel: _doc_sections(top, rel))
        self.docs_at = now if result is not None else 0.0
        return result or Sync()

    def reindex(
        self,
        store: Store,
        progress: Progress | None = None,
        embedded: Progress | None = None,
        procs: int = 1,
        written: Progress | None = None,
    ) -> Sync:
        """Rebuild the index from every file (and semantic recall's vectors, if it is on)."""
        lookout.forget(self.index.dir)
        begun = lookout.begin(store)
        folders = folder_times(store.root)
        disk = stamps(store.root, folders)
        result = self.index.rebuild(disk, _loader(store), _digest(store), progress, procs, written)
        self.seen, self.scanned_at = folders, time.monotonic()
        self._keep(begun)
        self.documents(store, force=True)
        vectors = self.semantic(store)
        if vectors is not None:
            vectors.clear()
            self.embed(store, progress=embedded)
        return result

    def semantic_named(self, store: Store) -> bool:
        """Whether semantic recall may be on: memstore.yaml names a model and nothing has
        turned it off yet (read once; nothing is loaded)."""
        if self.semantic_off is None and self.spec is None:
            try:
                self.spec = settings.embedding_model(store.root) or ""
            except InvalidMemory as e:
                log.warning("searching by words only: %s", e)
                self.semantic_off = str(e)
            else:
                if not self.spec:
                    self.semantic_off = "no embedding_model in memstore.yaml"
        return not self.semantic_off

    def semantic(self, store: Store) -> embedding.Vectors | None:
        """Semantic recall's vectors for this store, its model loaded on first use; None when
        it is off: no `embedding_model:` in memstore.yaml, the extra not installed, or the
        model not on this machine (said once in the log; `doctor` says why)."""
        if self.semantic_off is None:
            try:
                model = semantic_model(store)
            except InvalidMemory as e:
                log.warning("searching by words only: %s", e)
                self.semantic_off = str(e)
                return None
            if model is None:
                self.semantic_off = "no embedding_model in memstore.yaml"
                return None
            from memstore.search import embedding

            self.vectors = embedding.Vectors(self.cache / embedding.VECTORS, model)
            self.semantic_off = ""
        return self.vectors

    def embed(
        self, store: Store, budget: float | None = None, progress: Progress | None = None
    ) -> int:
        """Bring semantic recall's vectors in step with the index (only what changed is
        embedded); returns how many memories were. Nothing when semantic recall is off. With
        `budget` (seconds), stop soon after it and leave the rest for later calls;
        `progress(done, total)` is told the pace."""
        vectors = self.semantic(store)
        if vectors is None or vectors.current(self.index.state()):
            return 0
        files = self.index.files()
        if files is None:
            return 0
        state, digests = files
        return vectors.sync(
            state,
            {p: d for p, d in digests.items() if d},
            _text(store),
            budget=budget,
            progress=progress,
        )

    def dense(self, store: Store, text: str) -> Dense | None:
        """The dense ranker for the query `text`; None when semantic recall is off or the text
        has no words. The model is loaded, the vectors brought in step and the query embedded
        only when the ranker is called: the index calls it only for a query whose words found
        little (see `index.DENSE_COVERED` and `DENSE_WEAK_BM25`), so most searches never pay
        for a model."""
        words = content_words(text).strip()
        if not words or not self.semantic_named(store):
            return None

        if self.static is None:
            from memstore.search import embedding

            if self.vectors is not None:  # loaded already (e.g. by `reindex`)
                self.static = not isinstance(self.vectors.model.embedder, embedding.Transformer)
            else:
                self.static = embedding.static(self.spec or "", store.root)

        def nearest(count: int) -> list[tuple[str, float]]:
            vectors = self.semantic(store)
            if vectors is None:
                return []
            from memstore.search.embedding import SEARCH_BUDGET

            self.embed(store, budget=SEARCH_BUDGET)
            return vectors.nearest(words, count)

        return _Nearest(nearest, self.static)

    def changed(self, store: Store, rels: Iterable[str]) -> Sync:
        """Index the current content of these files (store-relative paths; a file gone is
        dropped), and nothing else. Paths that are no memory file are left out.

        Their content is compared with what the index holds even when their stamps are the
        same: an edit that keeps a file's size, within its timestamp's tick, changes neither.
        """
        # Only memory files (`<type>/<name>.md`, as a folder scan finds them): the ledger and
        # other records the write path commits are no documents.
        wanted = {rel for rel in rels if is_memory_path(rel)}
        if not wanted:
            return Sync()
        disk: dict[str, Stamp] = {}
        for rel in wanted:
            stamp = _stamp(store.root / rel)
            if stamp is not None:
                disk[rel] = stamp
        result = self.index.sync_some(
            disk, wanted.__contains__, _loader(store), _digest(store), verify=wanted
        )
        return self.catch_up(store) if result is None else result

    def fresh(self, store: Store) -> None:
        """Bring the index up to what a search must see: this process's own writes, then any
        folder whose modification time moved (a file created, deleted, renamed or replaced).

        An edit in place moves no folder's time: without a watcher, every file is compared
        again once the last full look is older than RESCAN_SECONDS.
        """
        first = self.first_look
        if self.seen is None and first is not None:
            # A server's first search: the watcher is catching up with every folder; two
            # scans at once cost each twice as long (a store of 100,000 files: seconds).
            first.wait(self.lock_timeout)
        written = store.written.take()
        try:
            if written:
                self.changed(store, written)
            folders = folder_times(store.root)
            stale = not self.watched and time.monotonic() - self.scanned_at > RESCAN_SECONDS
            seen = self.seen
            if stale or seen is None or seen["."] != folders["."]:
                self.catch_up(store)
                return
            moved = {name for name, at in folders.items() if seen.get(name) != at}
            if moved:
                disk = stamps(store.root, folders, moved)
                within = _in_folders(moved)
                if self.index.sync_some(disk, within, _loader(store), _digest(store)) is None:
                    self.catch_up(store)
                    return
                self.seen = folders
            self.documents(store)
        except StoreLocked as e:
            store.written.landed(written)  # left for the next search
            log.warning("searching the index as it is: %s", e)


def _doc_sections(top: Path, rel: str) -> list[DocSection]:
    from memstore.search import documents

    return [DocSection(rel, s.heading, s.anchor, s.text) for s in documents.read(top / rel)]


def _in_folders(names: Collection[str]) -> Callable[[str], bool]:
    return lambda rel: rel.partition("/")[0] in names


def _stamp(path: Path | str) -> Stamp | None:
    """The stamp of a memory file, None if it is gone or not a regular file (a symlink)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _loader(store: Store) -> Callable[[str], tuple[Memory | None, Stamp, str]]:
    def load(rel: str) -> tuple[Memory | None, Stamp, str]:
        path = store.root / rel
        try:
            st = path.stat()
        except FileNotFoundError:
            return None, (0, 0, 0), ""
        memory, data = store.read_file(path, raw=True)
        return memory, (st.st_mtime_ns, st.st_size, st.st_ino), version_of(data)

    return load


def _text(store: Store) -> Callable[[str], str | None]:
    from memstore.search import embedding

    def text(rel: str) -> str | None:
        try:
            memory = store.read_file(store.root / rel, raw=True)[0]
        except (InvalidMemory, OSError, UnsafePath):
            return None
        return embedding.memory_text(memory.name, memory.description, memory.tags, memory.body)

    return text


def semantic_model(store: Store) -> embedding.Model | None:
    """The embedding model `memstore.yaml` names, loaded from this machine; None when it names
    none.

    Raises:
        InvalidMemory: when the model cannot be loaded (not on this machine, the extra not
            installed), saying why.
    """
    from memstore.search import embedding

    spec = settings.embedding_model(store.root)
    return None if spec is None else embedding.load(spec, store.root)


@dataclass(frozen=True, slots=True)
class _Nearest:
    """`index.Dense`: the nearest memories by meaning, and the kind of model that finds them."""

    find: Callable[[int], list[tuple[str, float]]]
    static: bool

    def __call__(self, count: int, /) -> list[tuple[str, float]]:
        return self.find(count)


def semantic_state(store: Store, embedded: Progress | None = None) -> str:
    """How searches find memories in `store`, in a line for `doctor`: by words only (and why
    semantic recall is off), or by words and meaning (the model, the memories embedded). The
    memories not embedded yet are, first; `embedded(done, total)` is told the pace.

    Raises:
        InvalidMemory: for a memstore.yaml that cannot be read.
    """
    from memstore.search import embedding

    spec = settings.embedding_model(store.root)
    if spec is None:
        how = "by words (BM25) only; semantic recall is off (no embedding_model in memstore.yaml"
        if not embedding.available():
            how += f", and it needs pip install 'memstore[{embedding.EXTRA}]'"
        return how + ")"
    up = upkeep(store)
    if up.semantic(store) is None:
        return f"by words (BM25) only; semantic recall is off: {up.semantic_off}"
    up.fresh(store)
    up.embed(store, progress=embedded)
    vectors = up.vectors
    count = len(vectors) if vectors is not None else 0
    return f"by words (BM25) and meaning: {spec} ({plural(count, 'memory')} embedded)"


def _digest(store: Store) -> Callable[[str], str]:
    def digest(rel: str) -> str:
        try:
            data = read_regular(store.root / rel)
        except (OSError, UnsafePath):  # gone, or a symlink swapped in: the scan drops it
            return ""
        return "" if data is None else version_of(data)

    return digest


# -- one upkeep per store ---------------------------------------------------------------------

_upkeeps: weakref.WeakKeyDictionary[Store, Upkeep] = weakref.WeakKeyDictionary()
_upkeeps_lock = threading.Lock()


def upkeep(store: Store) -> Upkeep:
    """The search index of `store` and how current this process last saw it (made on first
    use, dropped with the store)."""
    with _upkeeps_lock:
        found = _upkeeps.get(store)
        if found is None:
            found = _upkeeps[store] = Upkeep(store.cache, store.lock_timeout)
        return found


def search(store: Store, query: Query) -> list[Hit]:
    """The memories that best match `query` and its filters, best first.

    Indexes this process's own writes and catches up with other changes first, so a write
    is found by the very next search.

    Raises:
        InvalidQuery: for an unknown type, status or budget, a bad date, a limit or LLM token
            cap below 1, or query text that is too long or that Whoosh cannot run (naming why).
    """
    query = since_read(query)
    query.check(store.types)
    up = upkeep(store)
    up.fresh(store)
    # A few more than asked, for the upkeep step (`steward`) to re-rank; then the cuts.
    dense = up.dense(store, query.text)
    hits = up.index.search(replace(query, limit=query.size + POOL, max_tokens=None), dense=dense)
    hits = steward(store, query, hits)
    if query.max_tokens is not None:
        hits = fit_tokens(hits, query.max_tokens, query.index_view)
    return hits


def outside(store: Store, scopes: tuple[str, ...]) -> set[str]:
    """The store-relative paths of the memories whose scopes name none of `scopes` (from the
    index, caught up first): what an agent of those scopes is not shown. Empty without scopes."""
    if not scopes:
        return set()
    up = upkeep(store)
    up.fresh(store)
    return up.index.outside(scopes)


def count(store: Store, status: str) -> int:
    """How many memories' files say `status`, from the index (caught up first, as a search)."""
    up = upkeep(store)
    up.fresh(store)
    return up.index.count("status", status)


def _judged(hit: Hit) -> bool:
    """Whether what `hit` claims needs the history's backing (see `verdicts.needs_history`)."""
    return hit.status == "confirmed" or hit.type in RULE_TYPES


def _shown(store: Store, hit: Hit, at: trust.Trust | None) -> Hit:
    """`hit` as its history supports it (see `verdicts.shown`): the index keeps each file's own
    status and owner, which anyone can type."""
    try:
        status, owner = verdicts.shown_fields(store.trust, hit.path, hit.status, hit.owner, at)
    except (UnsafePath, OSError):
        return replace(hit, status=UNVERIFIED)
    if (status, owner) == (hit.status, hit.owner):
        return hit
    return replace(hit, status=status, owner=owner)


@dataclass(frozen=True, slots=True)
class Hidden:
    """What a search that found nothing would have found with its limits lifted."""

    too_big: int | None = None
    """The best match's estimated LLM tokens, when `max_tokens` left out every match."""
    retired: int = 0
    """How many deprecated or expired memories match (left out by default)."""
    filtered: int = 0
    """How many memories match the words alone, without the filters given."""
    filters: tuple[str, ...] = ()
    """The filters given, by their `Query` field names."""

    def say(self, spell: Callable[[str], str]) -> list[str]:
        """Lines for the reader, with each `Query` field named as `spell` spells it on the
        reader's face (`--max-tokens` on the CLI, `max_tokens` over MCP)."""
        lines: list[str] = []
        if self.too_big is not None:
            lines.append(
                f"the best match takes about {self.too_big} tokens, more than "
                f"{spell('max_tokens')} allows: raise it, or ask for {spell('index_view')}"
            )
        if self.retired == 1:
            lines.append(
                "1 memory matches but is deprecated or expired: "
                f"{spell('include_deprecated')} shows it"
            )
        elif self.retired:
            lines.append(
                f"{self.retired} memories match but are deprecated or expired: "
                f"{spell('include_deprecated')} shows them"
            )
        if self.filtered:
            named = ", ".join(spell(f) for f in self.filters)
            verb = "memory matches" if self.filtered == 1 else "memories match"
            lines.append(f"{self.filtered} {verb} without {named}")
        return lines


FILTERS = ("type", "status", "tags", "owner", "since")
"""The `Query` fields that narrow a search."""


def hidden(store: Store, query: Query) -> Hidden:
    """For a search that found nothing: what `max_tokens`, the default leaving-out of
    deprecated and expired memories, and the filters hid. Three searches at most, run only
    when a search came back empty."""
    loose = replace(query, max_tokens=None)
    too_big = None
    if query.max_tokens is not None:
        best = search(store, replace(loose, limit=1))
        if best:
            too_big = estimate_hit_tokens(best[0], query.index_view)
    retired = 0
    if too_big is None and not query.include_deprecated:
        retired = _memories(search(store, replace(loose, include_deprecated=True)))
    given = tuple(f for f in FILTERS if getattr(query, f))
    filtered = 0
    if too_big is None and given:
        plain = replace(loose, type=None, status=None, tags=(), owner=None, since=None)
        filtered = _memories(search(store, plain))
    return Hidden(too_big, retired, filtered, given)


def _memories(hits: list[Hit]) -> int:
    """How many of `hits` are memories (project documents are not counted)."""
    return sum(1 for h in hits if h.kind != DOC)


@dataclass(frozen=True, slots=True)
class Recall:
    """What a recall shows: the hits, and the expired memories that matched but are left out
    (so a reader knows they exist)."""

    hits: list[Hit]
    expired: list[Hit]


def recall(store: Store, query: Query) -> Recall:
    """`search`, plus the best expired memories that match its words and filters (by the words
    alone, `Index.expired`), for a reader's note; counts the recall (and whether it returned
    a confirmed memory) in `.memstore/`, for `stats`.

    Raises:
        InvalidQuery: as `search` does.
    """
    hits = search(store, query)
    expired: list[Hit] = []
    hiding = not query.include_deprecated and query.status != "deprecated"
    if hiding and upkeep(store).index.expired_count():
        expired = upkeep(store).index.expired(query)
    _count_recall(store, any(h.status == "confirmed" for h in hits))
    drafts = [h.name for h in hits if h.status == "draft"]
    if drafts:  # what a draft's review is worth: how often it is relied on
        from memstore.storage import uses

        uses.note(store, uses.RECALL, drafts)
    return Recall(hits, expired)


RECALLS_FILE = "recalls.log"
"""One character per recall in `.memstore/`: `c` when it returned a confirmed memory, else `-`."""


def _count_recall(store: Store, confirmed: bool) -> None:
    # An append of one byte (O_APPEND: concurrent recalls never tear it), in the ignored cache:
    # counting is no write to the store.
    path, flags = store.cache / RECALLS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
    try:
        try:
            fd = os.open(path, flags, 0o666)  # a file, not a program: 0644 under umask 022
        except FileNotFoundError:  # no cache folder yet
            store.cache.mkdir(exist_ok=True)
            fd = os.open(path, flags, 0o666)
        try:
            os.write(fd, b"c" if confirmed else b"-")
        finally:
            os.close(fd)
    except OSError as e:
        log.info("cannot count the recall: %s", e)


def recall_counts(store: Store) -> tuple[int, int]:
    """(recalls counted, of which returned a confirmed memory) in this store's cache."""
    try:
        data = (store.cache / RECALLS_FILE).read_bytes()
    except OSError:
        return 0, 0
    return len(data), data.count(b"c")


# -- stewardship: a step after the engine's ranking -------------------------------------------

POOL = 10
"""How many more results than asked the engine returns, for `steward` to re-rank."""
PINNED_BOOST = 1.5
IMPORTANCE_BOOST = {"high": 1.3, "normal": 1.0, "low": 0.8}


@dataclass(frozen=True, slots=True)
class Meta:
    """What ranking and drift need from a memory file beyond the index's fields."""

    pinned: bool
    importance: str
    files: tuple[str, ...]
    memory: Memory | None


_metas: dict[tuple[str, str], tuple[Stamp, Meta]] = {}
_metas_lock = threading.Lock()
_NO_META = Meta(False, "normal", (), None)


_STEWARD_KEYS = re.compile(rb"""(?m)^["']?(?:pinned|importance|files)["']?[ \t]*:""")
"""A line of a memory file that may set what `meta` reads (in the body too: then it parses)."""


def meta(store: Store, rel: str) -> Meta:
    """Pin, importance and files of the memory file at `rel`, parsed once per file version."""
    top = str(store.root)
    stamp = _stamp(f"{top}/{rel}")  # a string: a Path per hit cost as much as the lstat
    if stamp is None:
        return _NO_META
    key = (top, rel)
    with _metas_lock:
        found = _metas.get(key)
    if found is not None and found[0] == stamp:
        return found[1]
    data = read_regular(store.root / rel)
    if data is not None and not _STEWARD_KEYS.search(data):
        # No key this step reads: nothing to parse (parsing the front matter of each new
        # result was a third of a cold search's CPU).
        with _metas_lock:
            _metas[key] = (stamp, _NO_META)
        return _NO_META
    try:
        memory = store.read_file(store.root / rel, raw=True)[0]
    except (InvalidMemory, OSError, UnsafePath):
        return _NO_META
    from memstore.storage import drift

    importance = memory.extra.get("importance")
    value = Meta(
        bool(memory.pinned),
        importance if isinstance(importance, str) else "normal",
        drift.files_of(memory),
        memory,
    )
    with _metas_lock:
        if len(_metas) > 20_000:
            _metas.clear()
        _metas[key] = (stamp, value)
    return value


def steward(store: Store, query: Query, hits: list[Hit]) -> list[Hit]:
    """The engine's ranking adjusted for the store's upkeep, cut to `query.size`: memories
    about `query.path` first, pinned and high-importance ones higher, each kept one's status
    and owner as its history backs them (`_shown`), and a confirmed memory whose files changed
    since it was confirmed marked as maybe out of date."""
    if not hits:
        return hits
    from memstore.storage import drift

    metas = {h.path: meta(store, h.path) for h in hits}
    about = drift.matcher(query.path.strip().removeprefix("./")) if query.path else None

    def boost(hit: Hit) -> float:
        m = metas[hit.path]
        return (PINNED_BOOST if m.pinned else 1.0) * IMPORTANCE_BOOST.get(m.importance, 1.0)

    def is_about(hit: Hit) -> bool:
        spec = query.path or ""
        return about is not None and any(
            about(f) or drift.matcher(f)(spec) for f in metas[hit.path].files
        )

    boosts = [boost(h) for h in hits]
    abouts = [is_about(h) for h in hits]
    if any(abouts) or any(b != 1.0 for b in boosts):
        order = sorted(
            range(len(hits)),
            key=lambda i: (not abouts[i], -hits[i].score * boosts[i], -boosts[i], i),
        )
        # The score shown is the one the results are ranked by, and explain names each boost.
        hits = [
            _boosted(h, metas[h.path], b, a, query)
            for h, b, a in zip(hits, boosts, abouts, strict=True)
        ]
    else:  # nothing to adjust: the engine's order stands
        order = list(range(len(hits)))
    ranked = [hits[i] for i in order][: query.size]
    # Judged after the cut (no order above depends on a status): only the kept hits' files
    # are read and hashed.
    if any(_judged(hit) for hit in ranked):
        # One reading of HEAD for every hit (on a fresh clone: only these files' histories).
        at = verdicts.snapshot(store.trust, [hit.path for hit in ranked if _judged(hit)])
        ranked = [_shown(store, hit, at) if _judged(hit) else hit for hit in ranked]
    checked = [
        h
        for h in ranked
        if h.status == "confirmed" and metas[h.path].files and metas[h.path].memory
    ]
    if not checked:
        return ranked
    newest = drift.changes(store.repo, store.cache).newest(
        spec for h in checked for spec in metas[h.path].files
    )
    notes: dict[str, str] = {}
    for hit in checked:
        memory = metas[hit.path].memory
        found = drift.drift_of(memory, newest) if memory is not None else None
        if found is not None:
            notes[hit.path] = found.note
    return [replace(h, note=notes[h.path]) if h.path in notes else h for h in ranked]


def _boosted(hit: Hit, m: Meta, factor: float, about: bool, query: Query) -> Hit:
    """`hit` with its score times the store's boosts (`factor`), and with explain a line per
    boost and one for ranking first as a memory about `query.path`."""
    if factor == 1.0 and not about:
        return hit
    lines: list[str] = []
    if query.explain:
        if m.pinned:
            lines.append(f"boost pinned x{PINNED_BOOST:g}")
        weight = IMPORTANCE_BOOST.get(m.importance, 1.0)
        if weight != 1.0:
            lines.append(f"boost importance {m.importance} x{weight:g}")
        if factor != 1.0:
            lines.append(f"score {hit.score:.3f} x{factor:g} = {hit.score * factor:.3f}")
        if about:
            lines.append("ranked first: its files cover the path asked about")
    return replace(hit, score=round(hit.score * factor, 4), explain=(*hit.explain, *lines))


def catch_up(store: Store, progress: Progress | None = None) -> Sync:
    """Re-index the files added, changed, renamed or deleted since the index last saw them.

    A missing, outdated or half-written index is rebuilt.

    Raises:
        StoreLocked: when another process holds the index lock past the timeout.
    """
    return upkeep(store).catch_up(store, progress)


def reindex(
    store: Store,
    progress: Progress | None = None,
    embedded: Progress | None = None,
    procs: int = 1,
    written: Progress | None = None,
) -> Sync:
    """Rebuild the search index from every file; `progress(done, total)` reports the files
    read, `written(done, total)` the documents as the index is written, and `embedded(done,
    total)` the pace of semantic recall's vectors, when it is on. With `procs` > 1 a large
    store's segments are built in that many forked processes: only from a process that runs
    no other threads, such as the `reindex` command.

    Raises:
        StoreLocked: when another process holds the index lock past the timeout.
    """
    return upkeep(store).reindex(store, progress, embedded, procs, written)


def close(store: Store) -> None:
    """Release the store's open index searcher (it reopens on the next search)."""
    upkeep(store).index.close()
