"""Who changed the trust settings: each commit that changed `humans`, `require_signatures`,
`allowed_signers`, `guards` or `secrets` in `memstore.yaml`, or the allowed-signers file,
judged as a memory's changes are.

The rule: once a store names its humans, only one of them changes who is trusted. A commit
that changes a trust setting or the allowed signers counts when its author and committer (and
its signer, when the version before it required signatures) are one of the humans the version
before it named; the commit that first names humans must be by one of the humans it names. A
store that names no humans has no one to defer to: its settings are judged by nobody. A merge
that takes one side's version whole is judged by that side's commits; a merge whose result
differs from every parent is judged as its committer's own change. A change that is judged
wrong is flagged while it is in force: until HEAD no longer holds what it set, or one of the
humans changed that setting (or the allowed signers) since, e.g. by reverting it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memstore.config import STORE_CONFIG
from memstore.errors import GitError, InvalidMemory
from memstore.git import objects, refs, repository
from memstore.model.identity import same_identity
from memstore.storage import settings


@dataclass(frozen=True, slots=True)
class _Change:
    sha: str
    parents: tuple[str, ...]
    author: str
    committer: str


def problems(repo: repository.Repo, root: Path) -> list[str]:
    """One message for each commit on HEAD's history that changed the trust settings, is not
    by one of the store's humans, and is still in force (see the module's docstring). Costs
    one `git log` of the two files and a few object reads per commit that changed them.

    Raises:
        GitError: when git cannot read the history.
    """
    head = refs.head(repo)
    if head is None:
        return []
    config = repository.repo_path(repo, root / STORE_CONFIG)
    signers_file = root / settings.signing_settings(root).allowed_signers
    signers_rel = repository.repo_path(repo, signers_file)
    out = repository.git(
        repo,
        "log",
        "--topo-order",
        "--reverse",
        f"--format=%H{repository.SEP}%P{repository.SEP}%an{repository.SEP}%cn",
        head,
        "--",
        config,
        signers_rel,
    )
    changes: list[_Change] = []
    for line in out.splitlines():
        sha, parents, author, committer = (line.split(repository.SEP) + ["", "", ""])[:4]
        changes.append(_Change(sha, tuple(parents.split()), author, committer))
    judged: list[_Judged] = []
    for change in changes:  # oldest first
        after = _version(repo, change.sha, config, signers_rel)
        befores = [_version(repo, p, config, signers_rel) for p in change.parents] or [_NONE]
        if any(b == after for b in befores):
            continue  # unchanged, or taken whole from one side of a merge
        before = befores[0]
        keys = [
            k
            for k in settings.TRUSTED
            if before.trusted.values.get(k) != after.trusted.values.get(k)
        ]
        lines = before.lines ^ after.lines
        humans = before.trusted.humans or after.trusted.humans
        if humans and (keys or lines):
            judged.append(_Judged(change, before, after, humans, keys, lines))
    signed = [j.change.sha for j in judged if j.before.trusted.signing.required]
    signer_of: dict[str, str | None] = {}
    if signed:
        from memstore.git import signing  # only stores that sign

        signer_of = signing.signers(repo, signed, signers_file)
    at_head = _version(repo, head, config, signers_rel)
    for item in judged:
        required = item.before.trusted.signing.required
        signer = signer_of.get(item.change.sha)
        item.good = any(
            same_identity(item.change.author, h)
            and same_identity(item.change.committer, h)
            and (not required or same_identity(signer, h))
            for h in item.humans
        )
    found: list[str] = []
    # Allowed-signers lines added by a commit judged wrong: taking one out again is no harm.
    unvouched: set[str] = set()
    for i, item in enumerate(judged):
        if item.good:
            unvouched -= item.after.lines
            continue
        change = item.change
        required = item.before.trusted.signing.required
        signer = signer_of.get(change.sha)
        # Still in force: HEAD holds what it set, and no person changed that since.
        later = [j for j in judged[i + 1 :] if j.good]
        what = [
            f"'{k}'"
            for k in item.keys
            if at_head.trusted.values.get(k) == item.after.trusted.values.get(k)
            and not any(k in j.keys for j in later)
        ]
        added, removed = item.lines & item.after.lines, item.lines & item.before.lines
        kept = (added & at_head.lines) | ((removed - unvouched) - at_head.lines)
        unvouched |= added
        if kept and not any(j.lines for j in later):
            what.append("the allowed signers")
        if not what:
            continue
        who = f"'{change.author}'" + (
            "" if same_identity(change.author, change.committer) else f", '{change.committer}'"
        )
        if required:
            who += f", signed by '{signer}'" if signer else ", with no allowed signature"
        found.append(
            f"commit {change.sha[:10]} ({who}) changed {', '.join(what)}, but it is not by one "
            f"of the store's humans ({', '.join(item.humans)}): who is trusted changes only by "
            "a person the settings name; one of them reverts it (and may then make it as theirs)"
        )
    return found


@dataclass(frozen=True, slots=True)
class _Version:
    """The trust settings and the allowed-signers lines of one commit."""

    trusted: settings.Trusted
    lines: frozenset[str]


_NONE = _Version(settings.trusted_in(STORE_CONFIG, None), frozenset())


@dataclass(slots=True)
class _Judged:
    change: _Change
    before: _Version
    after: _Version
    humans: tuple[str, ...]
    keys: list[str]
    lines: frozenset[str]
    """The allowed-signers lines the commit added or removed."""
    good: bool = False
    """Whether one of the humans made it."""


def _version(repo: repository.Repo, commit: str, config: str, signers_rel: str) -> _Version:
    """The trust settings and the allowed-signers lines at `commit`; a version that is not
    valid settings counts as naming none."""
    try:
        sha = objects.blob_at(repo, commit, config)
        data = objects.read_blob(repo, sha) if sha is not None else None
        trusted = settings.trusted_in(f"{STORE_CONFIG} at {commit[:10]}", data)
    except (GitError, InvalidMemory):
        trusted = _NONE.trusted
    try:
        sha = objects.blob_at(repo, commit, signers_rel)
        text = objects.read_blob(repo, sha).decode("utf-8", "replace") if sha else ""
    except GitError:
        text = ""
    lines = frozenset(x.strip() for x in text.splitlines() if x.strip() and not x.startswith("#"))
    return _Version(trusted, lines)


def pending_problems(
    repo: repository.Repo, root: Path, identity: str, config: bytes | None, signers: bytes | None
) -> list[str]:
    """The change that `config` and `signers` (the bytes `memstore.yaml` and the allowed-signers
    file would have in the next commit; None: no such file) make to HEAD's, judged as a commit
    by `identity` (a pre-commit check of what is staged): one message when it changes who is
    trusted and `identity` is not one of the store's humans.

    Raises:
        InvalidMemory: for staged settings that are not valid settings.
    """
    head = refs.head(repo)
    config_rel = repository.repo_path(repo, root / STORE_CONFIG)
    signers_rel = repository.repo_path(repo, root / settings.signing_settings(root).allowed_signers)
    before = _version(repo, head, config_rel, signers_rel) if head is not None else _NONE
    text = (signers or b"").decode("utf-8", "replace")
    after = _Version(
        settings.trusted_in(f"{STORE_CONFIG} (staged)", config),
        frozenset(x.strip() for x in text.splitlines() if x.strip() and not x.startswith("#")),
    )
    what = [
        f"'{k}'"
        for k in settings.TRUSTED
        if before.trusted.values.get(k) != after.trusted.values.get(k)
    ]
    if before.lines != after.lines:
        what.append("the allowed signers")
    humans = before.trusted.humans or after.trusted.humans
    if not what or not humans or any(same_identity(identity, h) for h in humans):
        return []
    return [
        f"the staged change of {', '.join(what)} would be committed by '{identity}', who is not "
        f"one of the store's humans ({', '.join(humans)}): who is trusted changes only by a "
        "person the settings name"
    ]
