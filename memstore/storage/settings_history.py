"""Who changed the trust settings: each commit that changed `humans`, `require_signatures`,
`allowed_signers`, `guards` or `secrets` in `memstore.yaml`, or the allowed-signers file,
judged as a memory's changes are.

The rule: once a store names its humans, only one of them changes who is trusted. A commit
that changes a trust setting or the allowed signers counts when its author and committer (and
its signer, when the version before it required signatures) are one of the humans the version
before it named; the commit that first names humans must be by one of the humans it names. A
store that names no humans has no one to defer to: its settings are judged by nobody. A merge
that takes one side's version whole is judged by that side's commits; a merge whose result
differs from every parent is judged as its committer's own change.
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
    """One message for each commit on HEAD's history that changed the trust settings and is
    not by one of the store's humans (see the module's docstring). Costs one `git log` of the
    two files and a few object reads per commit that changed them.

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
    judged: list[tuple[_Change, settings.Trusted, list[str]]] = []
    for change in changes:
        after = _version(repo, change.sha, config, signers_rel)
        befores = [_version(repo, p, config, signers_rel) for p in change.parents] or [
            (settings.trusted_in(config, None), None)
        ]
        if any(b == after for b in befores):
            continue  # unchanged, or taken whole from one side of a merge
        before, before_signers = befores[0]
        what = [
            f"'{k}'" for k in settings.TRUSTED if before.values.get(k) != after[0].values.get(k)
        ]
        if before_signers != after[1]:
            what.append("the allowed signers")
        humans = before.humans or after[0].humans
        if humans and what:
            judged.append((change, before, what))
    found: list[str] = []
    signed = [c.sha for c, before, _ in judged if before.signing.required]
    signer_of: dict[str, str | None] = {}
    if signed:
        from memstore.git import signing  # only stores that sign

        signer_of = signing.signers(repo, signed, signers_file)
    for change, before, what in judged:
        after_humans = _version(repo, change.sha, config, signers_rel)[0].humans
        humans = before.humans or after_humans
        required = before.signing.required
        signer = signer_of.get(change.sha)
        if any(
            same_identity(change.author, h)
            and same_identity(change.committer, h)
            and (not required or same_identity(signer, h))
            for h in humans
        ):
            continue
        who = f"'{change.author}'" + (
            "" if same_identity(change.author, change.committer) else f", '{change.committer}'"
        )
        if required:
            who += f", signed by '{signer}'" if signer else ", with no allowed signature"
        found.append(
            f"commit {change.sha[:10]} ({who}) changed {', '.join(what)}, but it is not by one "
            f"of the store's humans ({', '.join(humans)}): who is trusted changes only by a "
            "person the settings name; have one of them review the change and commit it"
        )
    return found


def _version(
    repo: repository.Repo, commit: str, config: str, signers_rel: str
) -> tuple[settings.Trusted, str | None]:
    """The trust settings and the allowed-signers blob at `commit`; a version that is not
    valid settings counts as naming none."""
    try:
        sha = objects.blob_at(repo, commit, config)
        data = objects.read_blob(repo, sha) if sha is not None else None
        trusted = settings.trusted_in(f"{STORE_CONFIG} at {commit[:10]}", data)
    except (GitError, InvalidMemory):
        trusted = settings.trusted_in(config, None)
    try:
        signers = objects.blob_at(repo, commit, signers_rel)
    except GitError:
        signers = None
    return trusted, signers
