"""What git history supports: who created each memory, and whether its confirmation holds.

A memory file says who owns it and who confirmed it, and anyone can type that. The history
says who committed each change. This module replays the store's commits, oldest first, and
judges each version of each memory file:

- its owner is the identity that committed its creation (a move to another folder keeps it,
  and so does a rename: a file removed and another added in one commit holding the same
  memory under a new name);
- a confirmation counts when the commit that made it is by the identity it names (author and
  committer, and signer when the store requires signatures), that identity is not the owner,
  and the memory was a draft (or confirmed, for a fresh confirmation) before;
- a confirmed version stays confirmed while later commits change only its trail, tags or links
  (or rename it, or rewrite its `[[references]]` to a memory renamed in the same commit);
  a change to its content (see `memory.CONTENT_KEYS`) without a new confirmation ends it;
- a verification (a new `verified_by`) counts when committed by the identity it names, who is
  not the owner; a forged or self-made one is a problem, as a forged confirmation is;
- a deprecation or restore must be committed by the identity it names.
- a rule that binds the agents (a person's, or a confirmed p0) keeps its version in force
  against a change an agent committed alone (see `binding`, which keeps that version).

Each commit is judged against the verdicts at its parents. A merge keeps a parent's version
(and verdict) of a file only when that side made the change: every other parent's version is
in that side's history. Anything else a merge holds is its committer's own change, judged from
each side's newest version and holding only if it holds from all; the owner comes from the
sides that have the file.

Reads call `verdicts.shown_status`: a confirmed memory shows as confirmed only when the file
is the version at HEAD and that version's confirmation holds, else as `unverified`. The
verdicts this module replays are kept per HEAD by `storage.verdicts`; without them (a fresh
clone) a read judges only the files it shows (`partial`). `lint` replays the whole history
every time.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from memstore.errors import GitError, InvalidMemory, InvalidName
from memstore.git import gitlog, graph, objects, refs, repository
from memstore.model.identity import same_identity
from memstore.model.memory import Memory, content_hash, parse, renamed
from memstore.model.status import MOVES, Status
from memstore.storage.binding import Force, advance

log = logging.getLogger(__name__)

UNVERIFIED = "unverified"
"""The status shown for a memory whose file says confirmed but whose history does not."""
_MEMORY_PATH = re.compile(r"[^/]+/[^/]+\.md")


@dataclass(frozen=True, slots=True)
class By:
    """Who a commit names: its author and committer, and the identity whose key signed it."""

    commit: str
    author: str
    committer: str
    signer: str | None = None
    signed: bool = False
    """Whether signatures are required: then the signer must be the identity too."""

    def names(self, identity: str | None) -> bool:
        """Whether this commit is by `identity`: author, committer (and signer) all name it."""
        if not identity:
            return False
        if not (same_identity(self.author, identity) and same_identity(self.committer, identity)):
            return False
        return not self.signed or same_identity(self.signer, identity)

    def describe(self) -> str:
        """The commit and who it names, for a message."""
        if not self.commit:
            return f"the uncommitted change, which you ('{self.committer}') would commit"
        who = (
            f"by '{self.author}'"
            if same_identity(self.author, self.committer)
            else f"authored by '{self.author}' and committed by '{self.committer}'"
        )
        if self.signed:
            who += f", signed by '{self.signer}'" if self.signer else ", with no allowed signature"
        return f"commit {self.commit[:10]} ({who})"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judgement on one version of one memory file."""

    ok: bool
    """Whether its status is what its history supports (for a confirmed one: it holds)."""
    problem: str | None = None
    commit: str = ""


_FINE = Verdict(True)


@dataclass(slots=True)
class Trust:
    """The verdicts on a store's history up to `head`."""

    head: str | None = None
    blobs: dict[str, str] = field(default_factory=dict[str, str])
    """Each memory file's blob at `head`, by path relative to the repository."""
    owners: dict[str, str] = field(default_factory=dict[str, str])
    """Each memory file's owner: who committed its creation."""
    verdicts: dict[str, Verdict] = field(default_factory=dict[str, Verdict])
    """`path NUL blob` → verdict, for the versions that are confirmed or have a problem."""
    writers: dict[str, str] = field(default_factory=dict[str, str])
    """Each memory file's writer: the commit that made its version at `head` (or removed
    it, for a file removed since), so a merge can tell which side changed it last."""
    tip: str | None = None
    """The last commit replayed that changed the store (git's rewritten parent of the next)."""
    some: bool = False
    """Whether these are the verdicts of some files only (`partial`), not of the store."""
    humans: tuple[str, ...] = ()
    """The store's people the verdicts were made for (see `binding`)."""
    binding: dict[str, Force] = field(default_factory=dict[str, Force])
    """Each file of a rule that binds the agents → its version in force (see `binding`)."""

    def verdict(self, path: str, blob: str | None) -> Verdict:
        if blob is None:
            return _FINE
        return self.verdicts.get(f"{path}\0{blob}", _FINE)

    def copy(self) -> Trust:
        return Trust(
            self.head,
            dict(self.blobs),
            dict(self.owners),
            dict(self.verdicts),
            dict(self.writers),
            self.tip,
            self.some,
            self.humans,
            dict(self.binding),
        )

    def become(self, other: Trust) -> None:
        """Take `other`'s verdicts as this one's."""
        self.head, self.tip, self.some = other.head, other.tip, other.some
        self.blobs, self.owners = other.blobs, other.owners
        self.verdicts, self.writers = other.verdicts, other.writers
        self.humans, self.binding = other.humans, other.binding


# -- judging one change -----------------------------------------------------------------------


def _trail(memory: Memory | None, kind: str) -> tuple[str | None, str | None]:
    if memory is None:
        return None, None
    return getattr(memory, f"{kind}_by"), getattr(memory, f"{kind}_at")


def judge(
    old: Memory | None,
    old_verdict: Verdict,
    new: Memory,
    by: By,
    owner: str,
    created: bool,
) -> Verdict:
    """The verdict on version `new` of a memory, made by commit `by` from version `old`.

    `owner` is who committed the file's creation; `created` says this change creates it.
    """
    if not same_identity(new.owner, owner):
        return Verdict(
            False,
            f"owner says '{new.owner}' but {owner} created it: the owner is who committed the "
            "file first, and it never changes",
            by.commit,
        )
    if created and not by.names(owner):
        return Verdict(False, f"created by {by.describe()}, which is not one identity", by.commit)
    status = new.status
    if status == Status.CONFIRMED:
        return _judge_confirmed(old, old_verdict, new, by, owner, created)
    for kind, verb in (("deprecated", "deprecation"), ("restored", "restore")):
        if status != (Status.DEPRECATED if kind == "deprecated" else Status.DRAFT):
            continue
        who, when = _trail(new, kind)
        if who is None or (who, when) == _trail(old, kind):
            continue
        if not by.names(who):
            return Verdict(
                False,
                f"forged {verb}: {kind}_by says '{who}' but it was made in {by.describe()}",
                by.commit,
            )
    return _FINE


def _judge_confirmed(
    old: Memory | None,
    old_verdict: Verdict,
    new: Memory,
    by: By,
    owner: str,
    created: bool,
) -> Verdict:
    confirmer = new.confirmed_by
    if created or old is None:
        return Verdict(
            False,
            "created already confirmed: a memory starts as a draft and someone other than its "
            "owner confirms it",
            by.commit,
        )
    same_trail = old.status == Status.CONFIRMED and _trail(old, "confirmed") == _trail(
        new, "confirmed"
    )
    if same_trail:
        if not old_verdict.ok:
            return Verdict(False, old_verdict.problem, by.commit)
        if content_hash(old) != content_hash(new):
            return Verdict(
                False,
                f"content changed after {confirmer} confirmed it, in {by.describe()}, without a "
                "new confirmation: treat it as a draft until someone confirms it again",
                by.commit,
            )
        verified = _trail(new, "verified")
        if verified[0] is not None and verified != _trail(old, "verified"):
            return _judge_verification(verified[0], by, owner, old_verdict)
        return old_verdict
    if not confirmer:
        return Verdict(False, "confirmed but has no confirmed_by: who confirmed it?", by.commit)
    try:
        before = Status(old.status)
    except ValueError:
        before = Status.DRAFT
    if before != Status.CONFIRMED and Status.CONFIRMED not in MOVES[before]:
        return Verdict(
            False,
            f"confirmed straight from {before}: restore it to draft, then confirm it",
            by.commit,
        )
    if same_identity(confirmer, owner):
        return Verdict(
            False,
            f"self-approval: confirmed by its owner ({owner}) in {by.describe()}; nobody "
            "confirms their own memory",
            by.commit,
        )
    if same_identity(by.author, owner) or same_identity(by.committer, owner):
        return Verdict(
            False,
            f"self-approval: the confirmation naming '{confirmer}' was made by its owner "
            f"({owner}) in {by.describe()}; nobody confirms their own memory",
            by.commit,
        )
    if not by.names(confirmer):
        return Verdict(
            False,
            f"forged confirmation: confirmed_by says '{confirmer}' but it was made in "
            f"{by.describe()}",
            by.commit,
        )
    if new.confirmed_hash and new.confirmed_hash != content_hash(new):
        return Verdict(
            False,
            "confirmed_hash does not match its content: it changed after the confirmation",
            by.commit,
        )
    return Verdict(True, None, by.commit)


def _judge_verification(verifier: str, by: By, owner: str, old_verdict: Verdict) -> Verdict:
    """A new `verified_by` on an unchanged confirmed memory: it counts (and becomes the point
    drift is measured from) when committed by that identity, who is not the owner."""
    if same_identity(verifier, owner) or same_identity(by.author, owner):
        return Verdict(
            False,
            f"self-verification: verified by its owner ({owner}) in {by.describe()}; nobody "
            "verifies their own memory",
            by.commit,
        )
    if not by.names(verifier):
        return Verdict(
            False,
            f"forged verification: verified_by says '{verifier}' but it was made in "
            f"{by.describe()}",
            by.commit,
        )
    return Verdict(True, None, by.commit) if old_verdict.ok else old_verdict


# -- replaying history ------------------------------------------------------------------------


class _Parsed:
    """Memory versions by blob sha, parsed once per replay (or shared: see `replay`)."""

    def __init__(self, repo: repository.Repo, memo: dict[str, Memory | None] | None = None) -> None:
        self.repo = repo
        self.memo: dict[str, Memory | None] = {} if memo is None else memo

    def get(self, blob: str | None) -> Memory | None:
        if blob is None:
            return None
        if blob not in self.memo:
            self.memo[blob] = parse_bytes(objects.read_blob(self.repo, blob))
        return self.memo[blob]


def parse_blob(repo: repository.Repo, blob: str | None) -> Memory | None:
    """The memory in `blob`, or None (no blob, or not a valid memory)."""
    return None if blob is None else parse_bytes(objects.read_blob(repo, blob))


def parse_bytes(data: bytes) -> Memory | None:
    """The memory in a file's bytes, or None when they are not a valid memory."""
    try:
        return parse(data.decode("utf-8"))
    except (UnicodeDecodeError, InvalidMemory, InvalidName):
        return None


PREFETCH = 32
"""Past this many versions to read, a replay reads them all with one git process rather than
one object at a time (a few memstore commits on top stay in-process)."""

Signers = Callable[[list[str]], dict[str, str | None]]
"""Given commit shas, the identity whose allowed key signed each (None: unsigned or unknown)."""


class NeedsFullReplay(Exception):
    """An extension of the verdicts met a commit whose parent's verdicts are not at hand (a
    branch that forked before the commit they were made for): replay the whole history."""


class _Ancestry:
    """Whether one commit is an ancestor of another, asked of git once per pair."""

    def __init__(self, repo: repository.Repo) -> None:
        self.repo = repo
        self.memo: dict[tuple[str, str], bool] = {}

    def __call__(self, older: str | None, newer: str) -> bool:
        """`older` (None: a file no commit ever wrote there) is `newer` or an ancestor."""
        if older is None or older == newer:
            return True
        key = (older, newer)
        found = self.memo.get(key)
        if found is None:
            try:
                found = refs.is_ancestor(self.repo, older, newer)
            except GitError:
                found = False
            self.memo[key] = found
        return found


def replay(
    trust: Trust,
    repo: repository.Repo,
    prefix: str,
    commits: Iterable[gitlog.StoreCommit],
    signers: Signers | None = None,
    parsed_memo: dict[str, Memory | None] | None = None,
    *,
    chain: bool = False,
    each: Callable[[gitlog.StoreCommit, Trust], None] | None = None,
    boundary: Callable[[str, set[str]], Trust] | None = None,
) -> None:
    """Extend `trust` (the verdicts at `trust.head`) with `commits` (oldest first, parents
    before children) that changed files under `prefix`; `trust` ends as the verdicts at the
    last one. Each commit is judged against the verdicts at its parents, so a branch and a
    merge are judged on the history they hold, not on the order `git log` lists them in.

    `chain`: each commit follows the one before (`gitlog.linear_commits`), whatever its
    parents say. `boundary(sha, paths)`: the verdicts at a parent outside `commits` (a
    branch that forked before `trust.head`) for the files `commits` change (`partial`); the
    commits built on them hold verdicts of some files only, so none may be the last.
    `each`: called after every commit with the verdicts at it (do not keep them).
    `parsed_memo`: memories by blob sha (None: not a valid memory), which the replay reads
    and adds to, and another thread may share (a blob parsed by either is not parsed again).

    Raises:
        NeedsFullReplay: a commit's parent is neither in `commits` nor `trust`'s commit.
        GitError: when git cannot read the history.
    """
    parsed = _Parsed(repo, parsed_memo)
    commits = list(commits)
    # A long replay reads the versions it needs with one `git cat-file` for them all.
    read = gitlog.prefetch(repo, commits, lambda p: is_memory(prefix, p), parsed.memo, PREFETCH)
    for blob, data in read.items():
        if blob not in parsed.memo:
            parsed.memo[blob] = parse_bytes(data)
    cut = gitlog.shallow_commits(repo)
    signed_by = signers([c.sha for c in commits]) if signers is not None and commits else {}
    ancestry = _Ancestry(repo)
    states: dict[str, Trust] = {}
    for known in (trust.head, trust.tip):
        if known is not None:
            states[known] = trust
    waiting: dict[str, int] = {}
    for commit in commits:
        for parent in commit.parents:
            waiting[parent] = waiting.get(parent, 0) + 1
    last = trust
    touched: set[str] | None = None
    for commit in commits:
        by = By(
            commit.sha,
            commit.author,
            commit.committer,
            signed_by.get(commit.sha),
            signers is not None,
        )
        changes = [c for c in commit.changes if is_memory(prefix, c.path)]
        if chain:
            state = last
            apply(state, changes, by, parsed.get, commit.sha in cut)
        else:
            parents = list(dict.fromkeys(commit.parents))
            found = [states.get(p) if p in states else None for p in parents]
            if not parents:
                state = Trust(humans=trust.humans)
            elif any(s is None for s in found) and boundary is None:
                raise NeedsFullReplay(commit.sha)
            else:
                if any(s is None for s in found):
                    assert boundary is not None
                    if touched is None:
                        touched = {c.path for x in commits for c in x.changes}
                        touched = {t for t in touched if is_memory(prefix, t)}
                    for i, parent in enumerate(parents):
                        if found[i] is None:
                            found[i] = states[parent] = boundary(parent, touched)
                            states[parent].some = True
                first = found[0]
                assert first is not None
                # The first parent's verdicts move to this commit when nothing else needs
                # them; a branch point keeps a copy for its other children.
                state = first if waiting.get(parents[0], 0) <= 1 else first.copy()
            if len(parents) > 1:
                others = [s for s in found if s is not None]
                _merge(state, others, parents, changes, by, parsed.get, ancestry)
            else:
                apply(state, changes, by, parsed.get, commit.sha in cut)
            for parent in parents:
                waiting[parent] = waiting.get(parent, 1) - 1
                if waiting[parent] <= 0 and parent not in (trust.head, trust.tip):
                    states.pop(parent, None)
            states[commit.sha] = state
        state.head = state.tip = commit.sha
        last = state
        if each is not None:
            each(commit, state)
    if last.some and not trust.some:
        raise NeedsFullReplay(last.head or "")
    if last is not trust:
        trust.become(last)


_CUT = (
    "its history is cut off (a shallow clone has no commits before this one): fetch it "
    "(`git fetch --unshallow`) so its owner and confirmation can be checked"
)

Old = tuple[str | None, Verdict]
"""A version a change is judged from: its blob (None: no file) and its verdict."""


def _merge(
    trust: Trust,
    parents: list[Trust],
    shas: list[str],
    changes: list[gitlog.PathChange],
    by: By,
    read: Callable[[str | None], Memory | None],
    ancestry: Callable[[str | None, str], bool],
) -> None:
    """Judge a merge's changes and move `trust` (its first parent's verdicts) past it.

    A path whose result is a parent's version keeps that parent's verdict only when that
    side made the change: every parent with another version had it in that side's history
    (its writer is an ancestor of that parent). Anything else the merge holds (an older
    version brought back, a file another side removed, a resurrected one, a rename) is the
    merge's own change, judged as a commit by its committer from each side's newest version
    (those no other side has moved on from), and it must hold from every one of them."""
    own: list[gitlog.PathChange] = []
    olds: dict[str, list[Old]] = {}
    owners: dict[str, str | None] = {}
    for change in changes:
        path, result = change.path, change.after
        blobs = [p.blobs.get(path) for p in parents]
        writers = [p.writers.get(path) for p in parents]
        n = len(parents)

        def moved_on(
            j: int, i: int, blobs: list[str | None] = blobs, writers: list[str | None] = writers
        ) -> bool:
            """Whether side i's history holds side j's version (or i has the same)."""
            return blobs[j] == blobs[i] or ancestry(writers[j], shas[i])

        kept = next(
            (i for i in range(n) if blobs[i] == result and all(moved_on(j, i) for j in range(n))),
            None,
        )
        if kept is not None:
            _take(trust, parents[kept], path)
            continue
        newest = [
            j
            for j in range(n)
            if not any(blobs[k] != blobs[j] and moved_on(j, k) for k in range(n))
        ]
        newest = list({blobs[j]: j for j in reversed(newest)}.values()) or list(range(n))
        own.append(gitlog.PathChange(path, tuple(blobs[j] for j in newest), result))
        olds[path] = [(blobs[j], parents[j].verdict(path, blobs[j])) for j in newest]
        owners[path] = next(
            (parents[j].owners.get(path) for j in newest if parents[j].owners.get(path)), None
        )
    if own:
        apply(trust, own, by, read, merge_olds=olds, merge_owners=owners)


def _take(trust: Trust, side: Trust, path: str) -> None:
    """Set `path` in `trust` as it is in `side`: its version, owner, verdict and writer."""
    if side is trust:
        return
    old = trust.blobs.get(path)
    blob = side.blobs.get(path)
    if old is not None and old != blob:
        trust.verdicts.pop(f"{path}\0{old}", None)
    for mine, theirs in ((trust.blobs, side.blobs), (trust.owners, side.owners)):
        if path in theirs:
            mine[path] = theirs[path]
        else:
            mine.pop(path, None)
    writer = side.writers.get(path)
    if writer is None:
        trust.writers.pop(path, None)
    else:
        trust.writers[path] = writer
    if blob is not None:
        key = f"{path}\0{blob}"
        if key in side.verdicts:
            trust.verdicts[key] = side.verdicts[key]
    if path in side.binding:
        trust.binding[path] = side.binding[path]
    else:
        trust.binding.pop(path, None)


def apply(
    trust: Trust,
    changes: list[gitlog.PathChange],
    by: By,
    read: Callable[[str | None], Memory | None],
    cut: bool = False,
    merge_olds: dict[str, list[Old]] | None = None,
    merge_owners: dict[str, str | None] | None = None,
) -> None:
    """Judge one commit's changes to memory files and move `trust` past it. In a commit whose
    parents a shallow clone left out (`cut`), a file that seems created may be older: its
    owner is taken from the file, and a confirmation in it cannot be checked.

    For a merge's own changes, `merge_olds` gives the versions each path is judged from (the
    change must hold from every one) and `merge_owners` each file's owner (None: no side
    has it, so the merge creates it)."""
    merging = merge_olds is not None

    def olds_of(path: str, befores: tuple[str | None, ...]) -> list[Old]:
        if merge_olds is not None and path in merge_olds:
            return merge_olds[path]
        return [(b, trust.verdict(path, b)) for b in befores]

    if merge_owners is not None:
        for change in changes:
            owner = merge_owners.get(change.path)
            if owner is None:
                trust.owners.pop(change.path, None)
            else:
                trust.owners[change.path] = owner
    # A file deleted and one of the same name added in one commit is a move: it keeps its
    # owner, and the deleted version is the one it changed from.
    gone = {
        _file_name(c.path): (c.path, trust.owners.get(c.path), olds_of(c.path, c.before))
        for c in changes
        if c.after is None
    }
    names = _renames(trust, changes, gone, read)
    stale: list[str] = []
    for change in changes:
        old_blob = trust.blobs.get(change.path)
        if old_blob is not None and old_blob != change.after:
            stale.append(f"{change.path}\0{old_blob}")
        trust.writers[change.path] = by.commit
        if change.after is None:
            trust.blobs.pop(change.path, None)
            trust.owners.pop(change.path, None)
    for change in changes:
        if change.after is None:
            continue
        new = read(change.after)
        path = change.path
        befores = olds_of(path, change.before or (None,))
        created = path not in trust.owners
        if created:
            was = gone.get(_file_name(path)) or names.moved.get(path)
            if was is not None and was[1] is not None:
                owner, befores = was[1], was[2] or [(None, _FINE)]
                trust.owners[path] = owner
                created = False
            else:
                named = new is not None and by.names(new.owner)
                trust.owners[path] = new.owner if new is not None and named else by.committer
        trust.blobs[path] = change.after
        key = f"{path}\0{change.after}"
        if new is None:
            trust.verdicts.pop(key, None)
            continue
        if cut and created:
            trust.owners[path] = new.owner
            if new.status == Status.CONFIRMED:
                trust.verdicts[key] = Verdict(False, _CUT, by.commit)
            continue
        verdicts: list[Verdict] = []
        for before, before_verdict in befores or [(None, _FINE)]:
            old = None if created else read(before)
            # A rename in this commit may have rewritten the references to the old name:
            # that is no change to what a reviewer confirmed.
            olds = [old] if old is None or not names.renamed else [old, renamed(old, names.renamed)]
            best: Verdict | None = None
            for was in olds:
                verdict = judge(was, before_verdict, new, by, trust.owners[path], created)
                if best is None or (verdict.ok and not best.ok):
                    best = verdict
            assert best is not None
            verdicts.append(best)
        if merging:  # it must hold from every side's newest version
            chosen = next((v for v in verdicts if not v.ok), verdicts[0])
        else:  # (one parent: one verdict)
            chosen = next((v for v in verdicts if v.ok), verdicts[0])
        if chosen.ok and new.status != Status.CONFIRMED:
            trust.verdicts.pop(key, None)
        else:
            trust.verdicts[key] = chosen
    for key in stale:  # a version no longer at this commit needs no verdict here
        path, _, blob = key.partition("\0")
        if trust.blobs.get(path) != blob:
            trust.verdicts.pop(key, None)
    _bind(trust, changes, gone, names, by, read)


def _bind(
    trust: Trust,
    changes: list[gitlog.PathChange],
    gone: dict[str, tuple[str, str | None, list[Old]]],
    names: _Renames,
    by: By,
    read: Callable[[str | None], Memory | None],
) -> None:
    """Keep the rules that bind the agents in force past this commit (see `binding`)."""
    moved: dict[str, str] = {}
    if gone:  # a move keeps the file's name (see `apply`)
        for c in changes:
            was = gone.get(c.path.rpartition("/")[2])
            if was is not None and was[0] != c.path:
                moved[c.path] = was[0]
    moved |= {path: was[0] for path, was in names.moved.items() if was[0] != path}
    advance(
        trust.binding,
        [(c.path, (c.before or (None,))[0], c.after) for c in changes],
        moved,
        by,
        read,
        trust.owners.get,
        lambda path, blob: trust.verdict(path, blob).ok,
        trust.humans,
        names.renamed,
    )


@dataclass(slots=True)
class _Renames:
    moved: dict[str, tuple[str, str | None, list[Old]]]
    """New path → (old path, owner, old versions) of a memory renamed in the commit."""
    renamed: dict[str, str]
    """Old name → new name."""


def _renames(
    trust: Trust,
    changes: list[gitlog.PathChange],
    gone: dict[str, tuple[str, str | None, list[Old]]],
    read: Callable[[str | None], Memory | None],
) -> _Renames:
    """The memories a commit renamed (`memstore mv`): a file deleted and another added whose
    memory is the deleted one under its new name (its content otherwise unchanged), so it
    keeps its owner and its confirmation."""
    found = _Renames({}, {})
    added = [
        c
        for c in changes
        if c.after is not None and c.path not in trust.owners and _file_name(c.path) not in gone
    ]
    if not added or not gone:
        return found
    candidates: list[tuple[str, str | None, list[Old], Memory]] = []
    for path, owner, befores in gone.values():
        old = read(next((b for b, _ in befores if b is not None), None))
        if owner is not None and old is not None:
            candidates.append((path, owner, befores, old))
    for change in added:
        new = read(change.after)
        if new is None:
            continue
        for i, (path, owner, befores, old) in enumerate(candidates):
            if old.name == new.name or old.type != new.type:
                continue
            if content_hash(renamed(old, {old.name: new.name})) == content_hash(new):
                found.moved[change.path] = (path, owner, befores)
                found.renamed[old.name] = new.name
                del candidates[i]
                break
    return found


def _file_name(path: str) -> str:
    return path.rpartition("/")[2]


def is_memory(prefix: str, path: str) -> bool:
    return path.startswith(prefix) and bool(_MEMORY_PATH.fullmatch(path[len(prefix) :]))


def prefix_of(repo: repository.Repo, root: Path) -> str:
    """The store's folder relative to the repository, with a trailing slash ('' at the top)."""
    if root.resolve() == repo.top.resolve():
        return ""
    return repository.repo_path(repo, root) + "/"


def full(
    repo: repository.Repo,
    root: Path,
    signers: Signers | None = None,
    until: str | None = None,
    parsed_memo: dict[str, Memory | None] | None = None,
    humans: tuple[str, ...] | None = None,
) -> Trust:
    """Replay the store's whole history (what `lint` does), up to HEAD or commit `until`
    (`parsed_memo`: see `replay`; `humans`: the store's people, by default its setting's).

    Raises:
        GitError: when git cannot read the history.
    """
    trust = Trust(humans=store_humans(root) if humans is None else humans)
    head = until or refs.head(repo)  # read first: the replay goes exactly this far
    if head is not None:
        commits = gitlog.store_commits(repo, root, until=head)
        replay(trust, repo, prefix_of(repo, root), commits, signers, parsed_memo)
    trust.head = head
    return trust


PARTIAL_MAX = 256
"""Past this many files (those asked for, and the files renamed into them), judging them one
by one costs more than the whole history: `partial` replays it all."""


def partial(
    repo: repository.Repo,
    root: Path,
    paths: Iterable[str],
    signers: Signers | None = None,
    until: str | None = None,
    humans: tuple[str, ...] | None = None,
) -> Trust:
    """The verdicts at HEAD (or `until`) for the memory files `paths` (relative to the
    repository) only: the commits that changed them, judged as `full` judges them, so a read
    of a few memories needs no replay of the whole store. A file renamed into one of them
    (a commit that removed other files) brings the removed files' histories in too.

    Raises:
        GitError: when git cannot read the history.
    """
    head = until or refs.head(repo)
    wanted = set(paths)
    people = store_humans(root) if humans is None else humans
    if head is None:
        return Trust(humans=people)
    prefix = prefix_of(repo, root)
    if len(wanted) > 1:
        graph.ensure(repo)  # several files' history, read a file at a time
    while len(wanted) <= PARTIAL_MAX:
        commits = gitlog.store_commits(repo, root, until=head, paths=sorted(wanted))
        found: set[str] = set()
        single = [c.sha for c in commits if len(c.parents) <= 1]
        for gone in gitlog.deleted_files(repo, single, prefix).values():
            found.update(p for p in gone if is_memory(prefix, p))
        for commit in commits:
            if len(commit.parents) > 1:
                found.update(
                    c.path for c in commit.changes if c.after is None and is_memory(prefix, c.path)
                )
        if not found - wanted:
            trust = Trust(humans=people)
            kept = [
                replace(c, changes=tuple(x for x in c.changes if x.path in wanted)) for c in commits
            ]
            replay(trust, repo, prefix, kept, signers)
            trust.head = head
            return trust
        wanted |= found
    return full(repo, root, signers, until=head, humans=people)


def store_humans(root: Path) -> tuple[str, ...]:
    """The store's people (`humans:`, as committed); none when the setting cannot be read
    (then `check` reports it)."""
    from memstore.storage import settings

    try:
        return settings.store_humans(root)
    except InvalidMemory:
        return ()
