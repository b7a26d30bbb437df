"""The verdicts on a store's history that reads use: kept in memory and under `.memstore/`,
brought up to HEAD, and judged against a file as a read shows it.

`trust` replays the history and judges each change; this module keeps what it found for the
HEAD it was made for (`Cache`), extends it with the commits since, and serves a process's
first reads with some files' verdicts only (a fresh clone judges just the files a read shows).
The kept file is keyed by what the verdicts depend on besides the commits (`cache_key`): a
verdict made under another history, shallow cut, signature setting, trust settings or people
is never used. `lint` never reads it: it keeps its own replay apart (`replayed`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import astuple
from pathlib import Path
from typing import Any, cast

from memstore.errors import GitError
from memstore.git import gitlog, objects, refs, repository
from memstore.model.memory import RULE_TYPES, Memory, evolve, render
from memstore.model.status import Status
from memstore.storage import trust as history
from memstore.storage.binding import Force
from memstore.storage.files import atomic_write, read_regular

log = logging.getLogger(__name__)

CACHE_FILE = "trust.json"
_FORMAT = 5  # 2: verifications; 3: writers, merges by side; 4: lines; 5: binding, basis
KEEP_AFTER = 10.0
"""Seconds after a server's warm-up extended the kept verdicts before it keeps them again."""
PARTIAL_READS = 4
"""How many reads of a process `Cache.current_for` serves with some files' verdicts before it
takes the whole verdicts once (a one-shot command reads once or twice; a server reads on)."""


class Cache:
    """The verdicts up to HEAD for one store, kept in memory and under `.memstore/`.

    `current()` brings them up to HEAD: nothing to do when HEAD has not moved (no git runs),
    `git log OLD..HEAD` when it moved forward, the whole history when it was rewritten.
    """

    def __init__(self, repo: repository.Repo, root: Path, cache: Path) -> None:
        self.repo = repo
        self.root = root
        self.file = cache / CACHE_FILE
        self.prefix = history.prefix_of(repo, root)
        self.trust: history.Trust | None = None
        self.settings: Callable[[], tuple[str, history.Signers | None]] | None = None
        """What the verdicts depend on besides the history (a digest of the committed trust
        settings and allowed signers) and how signers are found; verdicts made under another
        digest are never served (a revoked key, a changed `humans` or signature setting)."""
        self._signers: history.Signers | None = None
        self._basis = ""
        self.humans = history.store_humans(root)
        self._lock = threading.Lock()
        self._cut = gitlog.shallow_commits(repo)
        self._stamp: tuple[tuple[int, int, int] | None, ...] | None = None
        self._partial: tuple[str, frozenset[str], history.Trust] | None = None
        self._reads = 0
        """How many reads `current_for` served with some files' verdicts (see `PARTIAL_READS`)."""
        self._warming = False
        self._defer = False
        """Whether `_current` leaves extended verdicts unsaved (`_deferred` says so), for the
        caller to keep them later (a warm-up's twin)."""
        self._deferred = False
        """Set while `warm` takes the whole verdicts in another thread: reads meanwhile keep to
        some files' verdicts rather than wait for it or take them a second time."""
        self._ref_files: list[str] = []
        self._fixed = [
            str(repo.git_dir / "HEAD"),
            str(repo.common_dir / "packed-refs"),
            str(repo.common_dir / "shallow"),
        ]

    def _refs_stamp(self) -> tuple[tuple[int, int, int] | None, ...]:
        """What HEAD's files look like (inode, size, mtime): git writes a ref by renaming a
        new file into place, so a moved HEAD changes this; a read compares it, never git."""
        found: list[tuple[int, int, int] | None] = []
        for path in self._watched:
            try:
                st = os.stat(path)
            except OSError:
                found.append(None)
            else:
                found.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(found)

    def _branch_file(self) -> list[str]:
        """The file of the branch HEAD names (none for a detached HEAD)."""
        try:
            target = (self.repo.git_dir / "HEAD").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return []
        return [str(self.repo.common_dir / target[4:].strip())] if target.startswith("ref:") else []

    @property
    def _watched(self) -> list[str]:
        return [*self._fixed, *self._ref_files]

    @property
    def signers(self) -> history.Signers | None:
        """How a commit's signer is found, as the committed settings say (None: unsigned)."""
        return self.settings()[1] if self.settings is not None else self._signers

    @signers.setter
    def signers(self, value: history.Signers | None) -> None:
        self._signers = value

    def basis(self) -> str:
        """The digest of what the verdicts depend on besides the history ("" when unknown)."""
        return self.settings()[0] if self.settings is not None else ""

    def _now(self) -> tuple[str, history.Signers | None]:
        return self.settings() if self.settings is not None else ("", self._signers)

    def current(self) -> history.Trust:
        """The verdicts at HEAD.

        Raises:
            GitError: when git cannot read the history.
        """
        with self._lock:
            stamp = self._refs_stamp()
            if self.trust is not None and stamp == self._stamp:
                return self.trust  # HEAD has not moved: a few stat calls, nothing read
            self._stamp = None
            self._ref_files = self._branch_file()
            stamp = self._refs_stamp()
            trust = self._current()
            self._stamp = stamp
            return trust

    def current_for(self, paths: Iterable[str]) -> history.Trust:
        """The verdicts at HEAD, for `paths` at least: all of them when they are at hand (in
        memory or kept under `.memstore/`), else (a fresh clone, a cache removed) only these
        files' histories, judged now (`trust.partial`) and kept in memory for this HEAD. Only a
        process's first read judges histories so, and only its first `PARTIAL_READS` read
        kept lines: later ones take the whole verdicts (`current`), so a server never judges
        or reads file by file at every recall.

        Raises:
            GitError: when git cannot read the history.
        """
        wanted = set(paths)
        with self._lock:
            stamp = self._refs_stamp()
            if self.trust is not None and stamp == self._stamp:
                return self.trust
            if self.trust is None:
                # The verdicts hold for one HEAD and one shallow cut (a fetch may deepen it).
                at = refs.head(self.repo)
                cut = gitlog.shallow_commits(self.repo)
                # ... and for one basis (trust settings, allowed signers) and set of people.
                basis, signers = self._now()
                humans = history.store_humans(self.root)
                head = f"{at} {sorted(cut)} {basis} {list(humans)}"
                known = self._partial
                if known is not None and known[0] == head and wanted <= known[1]:
                    return known[2]
                if self._reads < PARTIAL_READS or self._warming:
                    if known is not None and known[0] == head:
                        wanted |= known[1]
                    first = self._reads == 0 or self._warming
                    found = self._some(at, cut, basis, signers, humans, wanted, first)
                    if found is not None:
                        self._reads += 1
                        self._partial = (head, frozenset(wanted), found)
                        return found
                # A process that reads on (a server) takes the whole verdicts once, kept and
                # then extended, rather than judging file by file at every read.
        return self.current()

    def binding(self) -> dict[str, Force]:
        """The rules that bind the agents at HEAD (`history.Trust.binding`): from the verdicts
        in memory, else from the kept file's first line when it was made under these settings
        and people for HEAD, or for a commit a few memstore commits before it that change no
        rule (none of its 100,000 other lines parsed: 0.6 s at 100,000 memories), else from
        the whole verdicts (`current`).

        Raises:
            GitError: when git cannot read the history.
        """
        with self._lock:
            stamp = self._refs_stamp()
            if self.trust is not None and stamp == self._stamp:
                return self.trust.binding
            if self.trust is None:
                cut = gitlog.shallow_commits(self.repo)
                basis, signers = self._now()
                kept = load_header(self.file, signers is not None, cut, basis)
                if (
                    kept is not None
                    and kept.head is not None
                    and kept.humans == history.store_humans(self.root)
                    and self._no_rule_since(kept.head, refs.head(self.repo))
                ):
                    return kept.binding
        return self.current().binding

    def _no_rule_since(self, old: str, head: str | None) -> bool:
        """Whether `head` is `old`, or a few memstore commits after it that change no file in
        a rule's folder (a rule's force follows its own file's history alone)."""
        if head is None or head == old:
            return head is not None
        linear = gitlog.linear_commits(self.repo, self.root, old, head)
        return linear is not None and not any(
            c.path[len(self.prefix) :].split("/", 1)[0] in RULE_TYPES
            for commit in linear
            for c in commit.changes
        )

    def warm(self) -> None:
        """Take the whole verdicts at HEAD (kept, extended or replayed, as `current`) without
        holding reads up: they are made apart, in the caller's thread, and taken in unless a
        read or write took them meanwhile. A read while this runs judges its own files
        (`current_for`); a commit landing meanwhile is extended at the next read (the verdicts
        are taken in with the HEAD they were made for).

        Raises:
            GitError: when git cannot read the history.
        """
        with self._lock:
            if self.trust is not None or self._warming:
                return  # taken, or being taken by another warm-up
            self._warming = True
        try:
            twin = Cache(self.repo, self.root, self.file.parent)
            twin.settings, twin._signers = self.settings, self._signers
            twin._defer = True
            twin.current()
            with self._lock:
                if self.trust is None and twin.trust is not None:
                    self.trust, self._stamp = twin.trust, twin._stamp
                    self._ref_files, self._cut = twin._ref_files, twin._cut
                    self._basis, self.humans = twin._basis, twin.humans
                    if twin._deferred:
                        # Kept a while later: a server's first requests, which come now,
                        # would wait on the same interpreter for the 0.5 s of writing.
                        later = threading.Timer(KEEP_AFTER, self.keep)
                        later.daemon = True
                        later.start()
        finally:
            self._warming = False

    def keep(self) -> None:
        """Keep the verdicts in memory in the file, for the next process; a failure is only
        logged. They are copied under the lock and written outside it."""
        with self._lock:
            if self.trust is None:
                return
            trust = self.trust.copy()
        self._save(trust)

    def _some(
        self,
        at: str | None,
        cut: frozenset[str],
        basis: str,
        signers: history.Signers | None,
        humans: tuple[str, ...],
        wanted: set[str],
        replay: bool,
    ) -> history.Trust | None:
        """The verdicts of `wanted` at `at`: their lines of the kept file when it was made
        for this basis, else, with no file kept and `replay`, their histories judged now
        (`trust.partial`)."""
        signed = signers is not None
        # Kept for this HEAD: read just these files' lines. None kept (a fresh clone,
        # the cache removed): judge just these files' histories.
        found = load_some(self.file, signed, cut, None, wanted, basis) if cut == self._cut else None
        if found is not None and found.humans != humans:
            found = None
        if found is not None and found.head != at:
            found = self._still(found, at, wanted)
        if found is None and replay and not self.file.exists():
            found = history.partial(self.repo, self.root, wanted, signers, until=at, humans=humans)
        return found

    def _still(
        self, found: history.Trust, head: str | None, paths: set[str]
    ) -> history.Trust | None:
        """`found` (some files' kept verdicts) moved to `head` when the few memstore commits
        since change none of `paths` (their verdicts are then the same), else None."""
        if found.head is None or head is None:
            return None
        linear = gitlog.linear_commits(self.repo, self.root, found.head, head)
        if linear is None or any(c.path in paths for x in linear for c in x.changes):
            return None
        found.head = head
        return found

    def _current(self) -> history.Trust:
        humans = history.store_humans(self.root)  # HEAD moved: a commit may have changed the people
        if humans != self.humans:
            self.humans, self.trust = humans, None
        head = refs.head(self.repo)
        cut = gitlog.shallow_commits(self.repo)
        if cut != self._cut:  # a fetch deepened (or a clone cut) the history
            self.trust, self._cut = None, cut
            self.file.unlink(missing_ok=True)
        basis, signers = self._now()
        if basis != self._basis:  # a trust setting or the allowed signers changed at HEAD
            self.trust, self._basis = None, basis
        trust = self.trust if self.trust is not None else self._load()
        if trust.head == head:
            self.trust = trust
            return trust
        if trust.head is not None and head is not None:
            # A few memstore commits on top: read in-process, no git runs.
            linear = gitlog.linear_commits(self.repo, self.root, trust.head, head)
            if linear is not None:
                history.replay(trust, self.repo, self.prefix, linear, signers, chain=True)
                trust.head = head
                self.trust = trust
                # Kept, so that the next process's first reads find their lines at HEAD
                # (`current_for`) rather than load and extend the whole verdicts again.
                self._save_or_defer(trust)
                return trust
            try:
                if refs.is_ancestor(self.repo, trust.head, head):
                    commits = gitlog.store_commits(self.repo, self.root, trust.head, head)

                    def boundary(sha: str, paths: set[str]) -> history.Trust:
                        return history.partial(
                            self.repo, self.root, paths, signers, until=sha, humans=humans
                        )

                    history.replay(
                        trust, self.repo, self.prefix, commits, signers, boundary=boundary
                    )
                    trust.head = head
                    self.trust = trust
                    self._save_or_defer(trust)
                    return trust
            except (GitError, history.NeedsFullReplay) as e:
                log.info("replaying the whole history: %s", e)
                self.trust = None
        trust = history.full(self.repo, self.root, signers, humans=self.humans)
        self.trust = trust
        self._save(trust)
        return trust

    def wrote(
        self,
        sha: str | None,
        after: dict[str, Memory | None],
        by: history.By,
    ) -> None:
        """Extend the verdicts with a commit this process just made (`after`: each memory
        file's new version by repository path, None if removed), without running git."""
        with self._lock:
            trust = self.trust
            if sha is None or trust is None:
                return
            try:
                if objects.parents(self.repo, sha)[:1] != [trust.head]:
                    return  # another commit came first: the next read replays the history
            except GitError:
                return
            memories: dict[str, Memory | None] = {}
            changes: list[gitlog.PathChange] = []
            for path, memory in after.items():
                blob = None if memory is None else objects.blob_sha(render(memory).encode())
                if blob is not None:
                    memories[blob] = memory
                changes.append(gitlog.PathChange(path, (trust.blobs.get(path),), blob))

            def read(blob: str | None) -> Memory | None:
                if blob is None:
                    return None
                if blob in memories:
                    return memories[blob]
                return history.parse_blob(self.repo, blob)

            history.apply(
                trust, [c for c in changes if history.is_memory(self.prefix, c.path)], by, read
            )
            trust.head = trust.tip = sha

    def _load(self) -> history.Trust:
        found = load(self.file, self.signers is not None, self._cut, self._basis)
        if found is None or found.humans != self.humans:
            return history.Trust(humans=self.humans)
        return found

    def _save(self, trust: history.Trust) -> None:
        save(self.file, trust, self.signers is not None, self._cut, self._basis)

    def _save_or_defer(self, trust: history.Trust) -> None:
        if self._defer:
            self._deferred = True
        else:
            self._save(trust)


LINT_FILE = "lint-trust.json"
"""`lint`'s own verdicts, apart from the reads' (`CACHE_FILE`): only a replay by `replayed`
writes it."""


def replayed(
    repo: repository.Repo,
    root: Path,
    cache: Path,
    signers: history.Signers | None,
    basis: str,
    *,
    whole: bool = False,
    parsed: dict[str, Memory | None] | None = None,
) -> history.Trust:
    """The verdicts at HEAD as `lint` takes them: its own last replay (kept in `cache` /
    `LINT_FILE` for that HEAD, under these settings and people) extended with every commit
    since, each judged as the whole replay judges it; the whole history replayed when there
    is none, or it is not an ancestor of HEAD (a history rewritten), or `whole` is set (the
    replay is then kept for next time). A commit added since, forged or not, is always
    judged: only the judgments of commits already judged are kept. `parsed`: memories by
    blob sha the caller has parsed already (see `trust.replay`).

    Raises:
        GitError: when git cannot read the history.
    """
    file = cache / LINT_FILE
    humans = history.store_humans(root)
    cut = gitlog.shallow_commits(repo)
    signed = signers is not None
    head = refs.head(repo)
    kept = None if whole else load(file, signed, cut, basis)
    if kept is not None and kept.humans == humans and kept.head is not None and head is not None:
        if kept.head == head:
            return kept
        try:
            if refs.is_ancestor(repo, kept.head, head):
                commits = gitlog.store_commits(repo, root, kept.head, head)

                def boundary(sha: str, paths: set[str]) -> history.Trust:
                    return history.partial(repo, root, paths, signers, until=sha, humans=humans)

                prefix = history.prefix_of(repo, root)
                history.replay(kept, repo, prefix, commits, signers, parsed, boundary=boundary)
                kept.head = head
                save(file, kept, signed, cut, basis)
                return kept
        except (GitError, history.NeedsFullReplay) as e:
            log.info("lint replays the whole history: %s", e)
    found = history.full(repo, root, signers, until=head, parsed_memo=parsed, humans=humans)
    try:
        cache.mkdir(exist_ok=True)
    except OSError as e:
        log.info("cannot keep lint's verdicts in %s: %s", cache, e)
    else:
        save(file, found, signed, cut, basis)
    return found


# The file: a JSON header line (format, settings, head, tip, the people and the rules that
# bind the agents), then one line per memory file,
# `path TAB blob TAB owner TAB writer TAB ok TAB verdict-commit TAB problem` (empty fields for
# none; a field holding a tab, a line break, a backslash or starting with a quote is written as
# a JSON string). A read of a few files finds their lines without parsing the rest.
_NEEDS_QUOTE = re.compile(r'[\t\n\r\\]|^"')
_QUOTED_IF = ("\n", "\r", "\\", '"')
"""A line of plain fields joined by tabs (three tabs: none inside them) holding none of these
needs no field quoted (`_NEEDS_QUOTE`; a quote anywhere, not only first, is written field
by field, which quotes only where it must)."""


def _enc(value: str | None) -> str:
    if not value:
        return ""
    return json.dumps(value, ensure_ascii=False) if _NEEDS_QUOTE.search(value) else value


def _dec(field: str) -> str:
    return str(json.loads(field)) if field.startswith('"') else field


def cache_key(signed: bool, cut: frozenset[str], basis: str = "") -> dict[str, Any]:
    """What kept verdicts depend on besides the commits: they are used only under the same
    (`basis`: the digest of the committed trust settings and allowed signers, see
    `Cache.settings`)."""
    return {"format": _FORMAT, "signed": signed, "shallow": sorted(cut), "basis": basis}


def _header(line: str, signed: bool, cut: frozenset[str], basis: str) -> dict[str, Any] | None:
    found: Any = json.loads(line)
    if not isinstance(found, dict):
        return None
    data = cast(dict[str, Any], found)
    if any(data.get(k) != v for k, v in cache_key(signed, cut, basis).items()):
        return None
    return data


def _row(
    trust: history.Trust,
    line: str,
    seen: dict[tuple[str, str, str], history.Verdict] | None = None,
) -> None:
    """One memory file's line into `trust`. `seen` (a whole file's read) shares one verdict
    among the lines that have the same (a commit confirms many memories): 40,000 verdicts at
    100,000 memories are 950 distinct ones."""
    path, blob, owner, writer, ok, vcommit, problem = line.split("\t")
    if path[:1] == '"':
        path = _dec(path)
    if blob:
        if blob[:1] == '"':
            blob = _dec(blob)
        trust.blobs[path] = blob
    if owner:
        trust.owners[path] = _dec(owner) if owner[:1] == '"' else owner
    if writer:
        trust.writers[path] = _dec(writer) if writer[:1] == '"' else writer
    if ok and blob:
        key = (ok, vcommit, problem)
        verdict = None if seen is None else seen.get(key)
        if verdict is None:
            verdict = history.Verdict(ok == "1", _dec(problem) or None, _dec(vcommit))
            if seen is not None:
                seen[key] = verdict
        trust.verdicts[f"{path}\0{blob}"] = verdict


def _trust_of(data: dict[str, Any]) -> history.Trust:
    return history.Trust(
        head=str(data["head"]) if data.get("head") else None,
        tip=str(data["tip"]) if data.get("tip") else None,
        humans=tuple(str(h) for h in data["humans"]),
        binding={str(k): Force(*v) for k, v in dict(data["binding"]).items()},
    )


def load(file: Path, signed: bool, cut: frozenset[str], basis: str = "") -> history.Trust | None:
    """The verdicts `save` kept in `file`, or None when it is missing, unreadable or was made
    under other settings (signatures required or not, a shallow clone's cut, another `basis`:
    see `Cache.settings`)."""
    try:
        head, _, rows = file.read_text(encoding="utf-8").partition("\n")
        data = _header(head, signed, cut, basis)
        if data is None:
            return None
        trust = _trust_of(data)
        seen: dict[tuple[str, str, str], history.Verdict] = {}
        for line in rows.split("\n"):
            if line:
                _row(trust, line, seen)
        return trust
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None


def load_header(
    file: Path, signed: bool, cut: frozenset[str], basis: str = ""
) -> history.Trust | None:
    """What the first line of the verdicts `save` kept in `file` says (HEAD, the people, the
    rules that bind the agents; no memory's verdict), when made under these settings; else
    None."""
    try:
        with file.open(encoding="utf-8") as f:
            data = _header(f.readline(), signed, cut, basis)
        return None if data is None else _trust_of(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None


def load_some(
    file: Path,
    signed: bool,
    cut: frozenset[str],
    head: str | None,
    paths: Iterable[str],
    basis: str = "",
) -> history.Trust | None:
    """The verdicts `save` kept in `file` for `paths` only (`history.Trust.some`), when they were
    made for commit `head` (None: whichever they name) under these settings; else None.
    Reads the file, parses the header and the lines of `paths`."""
    try:
        data_bytes = file.read_bytes()
        first, _, _ = data_bytes.partition(b"\n")
        data = _header(first.decode("utf-8"), signed, cut, basis)
        if data is None or (head is not None and data.get("head") != head):
            return None
        trust = _trust_of(data)
        trust.some = True
        for path in paths:
            key = b"\n" + _enc(path).encode("utf-8") + b"\t"
            at = data_bytes.find(key)
            if at < 0:
                continue
            end = data_bytes.find(b"\n", at + 1)
            _row(trust, data_bytes[at + 1 : end if end >= 0 else None].decode("utf-8"))
        return trust
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None


def save(
    file: Path, trust: history.Trust, signed: bool, cut: frozenset[str], basis: str = ""
) -> None:
    """Keep `trust` in `file` (a cache under `.memstore/`) for `basis`; a failure is only
    logged."""
    header = {
        **cache_key(signed, cut, basis),
        "head": trust.head,
        "tip": trust.tip,
        "humans": list(trust.humans),
        "binding": {k: list(astuple(v)) for k, v in trust.binding.items()},
    }
    lines = [json.dumps(header, ensure_ascii=False)]
    blobs, owners, writers, judged = trust.blobs, trust.owners, trust.writers, trust.verdicts
    # A verdict is shared by the many files one commit judged: its three fields are written
    # once per verdict. A line whose plain fields hold nothing to quote (nearly every one)
    # is written as they are joined; only another is written field by field.
    tails: dict[int, str] = {}
    for path in sorted(set(blobs) | set(writers)):
        blob = blobs.get(path)
        verdict = judged.get(f"{path}\0{blob}") if blob is not None else None
        if verdict is None:
            tail = "\t\t"
        else:
            tail = tails.get(id(verdict))
            if tail is None:
                tail = tails[id(verdict)] = "\t".join(
                    ("1" if verdict.ok else "0", _enc(verdict.commit), _enc(verdict.problem))
                )
        head = (path, blob or "", owners.get(path) or "", writers.get(path) or "")
        line = "\t".join(head)
        if line.count("\t") != 3 or any(c in line for c in _QUOTED_IF):
            line = "\t".join(_enc(v) for v in head)
        lines.append(f"{line}\t{tail}")
    try:
        atomic_write(file, "\n".join(lines) + "\n")
    except OSError as e:
        log.info("cannot keep the verdicts in %s: %s", file, e)


def needs_history(memory: Memory) -> bool:
    """Whether what a read shows of `memory` depends on its history: a confirmation (does it
    count?) or a rule (who made it decides whether it binds). Other drafts and deprecated
    memories are shown as their files say, and cost no history read."""
    return memory.status == Status.CONFIRMED or memory.type in RULE_TYPES


def shown(cache: Cache, path: str, memory: Memory, data: bytes) -> Memory:
    """`memory`, read from `data` at `path` (relative to the repository), as its history
    supports it (for memories that `needs_history`): the owner is who committed its
    creation, whatever the file says; a confirmation the history does not back, a version
    with a forged owner or trail, and a rule or confirmation no commit holds yet (nothing
    vouches for its owner or reviewer) read as `unverified`. An uncommitted edit of a
    committed draft rule keeps its status, with its creator as owner."""
    if not needs_history(memory):
        return memory
    status, owner = judged(cache, path, memory.status, memory.owner, objects.blob_sha(data))
    if (status, owner) == (memory.status, memory.owner):
        return memory
    return evolve(memory, status=status, owner=owner)


def snapshot(cache: Cache, rels: Iterable[str] | None = None) -> history.Trust | None:
    """The verdicts at HEAD, to judge several files against one reading of HEAD (a search's
    hits: `rels`, relative to the store, are the files to judge; None: any); None when git
    cannot read the history (then `judged` says why, file by file)."""
    try:
        if rels is not None:
            return cache.current_for(cache.prefix + rel for rel in rels)
        return cache.current()
    except GitError:
        return None


def judged(
    cache: Cache, path: str, status: str, owner: str, blob: str, at: history.Trust | None = None
) -> tuple[str, str]:
    """The (status, owner) to show for the version `blob` of the file at `path` whose front
    matter says `status` and `owner` (see `shown`); no file is parsed. `at` is a `snapshot`
    already taken, else HEAD is checked now."""
    trust = at
    if trust is None:
        try:
            trust = cache.current_for([path])
        except GitError as e:
            log.warning("cannot read the history to verify %s: %s", path, e)
            return history.UNVERIFIED, owner
    creator = trust.owners.get(path)
    if trust.blobs.get(path) == blob:
        verdict = trust.verdicts.get(f"{path}\0{blob}")
        ok = verdict.ok if verdict is not None else status != Status.CONFIRMED
    else:
        ok = creator is not None and status != Status.CONFIRMED
    return (status if ok else history.UNVERIFIED), (creator or owner)


def shown_fields(
    cache: Cache, rel: str, status: str, owner: str, at: history.Trust | None = None
) -> tuple[str, str]:
    """The (status, owner) to show for the file at `rel` (relative to the store) whose front
    matter says `status` and `owner`, without parsing it (see `judged`); `at` is a `snapshot`
    taken for several files."""
    data = read_regular(cache.root / rel)
    if data is None:
        return history.UNVERIFIED, owner
    return judged(cache, cache.prefix + rel, status, owner, objects.blob_sha(data), at)


def shown_status(cache: Cache, path: str, memory: Memory, data: bytes) -> str:
    """The status `shown` gives `memory`."""
    return shown(cache, path, memory, data).status
