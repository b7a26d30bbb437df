"""git as the history: one commit per change, authored by the acting identity, built without
reading git's index (held locked meanwhile, as git holds it) and landed on HEAD by a
compare-and-swap."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memstore.errors import GitError
from memstore.git.indexfile import IndexLock
from memstore.git.objects import blob_sha, commit_tree, tree_with, write_object
from memstore.git.refs import head, move_head
from memstore.git.repository import Repo, check_rel, check_sha, git
from memstore.model.identity import same_identity

if TYPE_CHECKING:
    import logging


def _log() -> logging.Logger:
    """This module's logger. `logging` loads with the first warning: a command that logs
    none (a `memstore add`) never pays for importing it."""
    import logging

    return logging.getLogger(__name__)


Signer = Callable[[bytes], bytes]
"""Signs a commit's text and returns the armored signature (see `signing.signer`)."""


def email_for(identity: str) -> str:
    """A stable, obviously synthetic e-mail address for an identity without one."""
    slug = re.sub(r"[^a-z0-9]+", "-", identity.lower()).strip("-") or "agent"
    return f"{slug}@memstore.invalid"


def git_identity(repo: Repo) -> str | None:
    """git's `user.name` for this repository, if set."""
    return _git_user(repo)[0]


def author_email(repo: Repo, author: str) -> str:
    """The e-mail to commit as `author`: git's `user.email` when `author` is git's `user.name`
    (#17), else the synthetic `email_for(author)`; another identity never borrows the address."""
    name, email = _git_user(repo)
    if email and same_identity(author, name):
        return email
    return email_for(author)


_ConfigStamp = tuple[int, int, int] | None
# git's user.name and user.email per repository, read once per process: a write forks no git
# for them (#17). A change to the repository's own config file (a stat, no fork) reads them
# again; a change to the global config is seen by the next process.
_git_users: dict[Path, tuple[_ConfigStamp, tuple[str | None, str | None]]] = {}
_git_users_lock = threading.Lock()


def _config_stamp(repo: Repo) -> _ConfigStamp:
    try:
        st = (repo.common_dir / "config").stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _git_user(repo: Repo) -> tuple[str | None, str | None]:
    stamp = _config_stamp(repo)
    with _git_users_lock:
        seen = _git_users.get(repo.top)
        if seen is not None and seen[0] == stamp:
            return seen[1]
    try:
        out = git(repo, "config", "--get-regexp", r"^user\.(name|email)$")
    except GitError:  # exit 1: neither is set
        out = ""
    found: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if not value.strip():
            found[key.lower()] = ""  # blank: no identity (refused), not the level below's
        elif not re.search(r"[<>\n\0]", value):
            found[key.lower()] = value.strip()  # the last one wins, as in `git config --get`
    user = (found.get("user.name") or None, found.get("user.email") or None)
    with _git_users_lock:
        _git_users[repo.top] = (stamp, user)
    return user


def commit_files(
    repo: Repo,
    files: dict[str, bytes | None],
    message: str,
    author: str,
    index: IndexLock,
    lock_wait: float = 10.0,
    keep: tuple[int, ...] = (),
    sign: Signer | None = None,
) -> str | None:
    """Commit `files` (repository-relative path: new bytes, or None to remove) on top of HEAD
    as `author`, and return the new commit's sha; None when HEAD already holds that content.
    With `sign`, the commit carries its signature of the commit text in a `gpgsig` header,
    as `git commit -S` writes it.

    Call with git's index lock held (`index`, see `indexfile.hold`), as `git commit` holds it:
    the objects are written directly, the next index (the paths' entries pointing at the new
    blobs) into the lock, and HEAD moves by `git update-ref HEAD NEW OLD`, git's
    compare-and-swap (rebuilding on the new HEAD when another commit landed first); the new
    index is put in place once git holds HEAD's lock and found it unmoved, right before the
    swap commits. Nothing else in the repository changes, staged or not. No lock file is ever
    deleted: a git lock in the way is waited for up to `lock_wait` seconds, then named in the
    error.

    Raises:
        GitError: with git's message, or naming the lock file that stayed in the way.
        OSError: when an object or the index cannot be written (a full disk); HEAD has not
            moved then.
    """
    for rel in files:
        check_rel(rel)
    stamp = _stamp(author, author_email(repo, author))
    deadline = time.monotonic() + lock_wait
    blobs = {
        rel: (None if data is None else write_object(repo, b"blob", data))
        for rel, data in files.items()
    }
    index.stage(blobs, keep)
    while True:
        parent = head(repo)
        base = commit_tree(repo, parent) if parent else None
        tree = tree_with(repo, base, {tuple(rel.split("/")): sha for rel, sha in blobs.items()})
        if tree == base:
            if parent is not None:
                _log().warning(
                    "%s already committed by someone else; no new commit", ", ".join(files)
                )
            index.commit()
            return None
        body = f"tree {tree}\n"
        if parent:
            body += f"parent {parent}\n"
        body += f"author {stamp}\ncommitter {stamp}\n\n{message.rstrip()}\n"
        data = body.encode("utf-8")
        if sign is not None:
            data = _signed(data, sign(data))
        sha = write_object(repo, b"commit", data)
        # The new index goes in place while git holds HEAD's lock, checked, right before HEAD
        # moves: a git that reads the new HEAD reads the new index too.
        if move_head(repo, sha, parent, message, deadline, prepared=index.commit):
            return sha


def build_commit(
    repo: Repo,
    parents: list[str],
    files: dict[str, bytes | None],
    message: str,
    author: str,
    sign: Signer | None = None,
    existing: dict[str, str] | None = None,
) -> str:
    """Write (without moving any ref) a commit whose tree is the first parent's with `files`
    set (None removes one), with `parents`, authored and committed by `author`; its sha.
    `existing` names blobs git already has for some of `files` (path → sha), not written
    again."""
    for rel in files:
        check_rel(rel)
    for sha in parents:
        check_sha(sha)
    known = existing or {}
    blobs = {
        tuple(rel.split("/")): (
            None
            if data is None
            else known[rel]
            if rel in known
            else write_object(repo, b"blob", data)
        )
        for rel, data in files.items()
    }
    base = commit_tree(repo, parents[0]) if parents else None
    tree = tree_with(repo, base, blobs) or write_object(repo, b"tree", b"")
    stamp = _stamp(author, author_email(repo, author))
    body = f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents)
    body += f"author {stamp}\ncommitter {stamp}\n\n{message.rstrip()}\n"
    data = body.encode("utf-8")
    if sign is not None:
        data = _signed(data, sign(data))
    return write_object(repo, b"commit", data)


def move_to(
    repo: Repo,
    files: dict[str, bytes | None],
    new: str,
    old: str | None,
    index: IndexLock,
    lock_wait: float = 10.0,
    keep: tuple[int, ...] = (),
) -> bool:
    """Stage the index entries of `files` at their new bytes and move HEAD from `old` to the
    existing commit `new` (a compare-and-swap), the new index put in place right before HEAD
    moves; False (the index unchanged) when HEAD was no longer `old`. Call with git's index
    lock held (`index`).

    Raises:
        GitError: with git's message, or naming the lock file that stayed in the way.
    """
    check_sha(new)
    deadline = time.monotonic() + lock_wait
    # `new`'s tree holds these blobs already (fetched, or written when it was built): only
    # their names are needed here.
    blobs = {rel: (None if data is None else blob_sha(data)) for rel, data in files.items()}
    for rel in blobs:
        check_rel(rel)
    if blobs:
        index.stage(blobs, keep)
    return move_head(repo, new, old, f"sync: {new[:10]}", deadline, prepared=index.commit)


def _signed(payload: bytes, signature: bytes) -> bytes:
    """The commit text with `signature` as its `gpgsig` header, after the others: git verifies
    the text with that header taken out, which is `payload` again."""
    headers, _, message = payload.partition(b"\n\n")
    lines = signature.rstrip(b"\n").split(b"\n")
    return headers + b"\ngpgsig " + b"\n ".join(lines) + b"\n\n" + message


def _stamp(author: str, email: str) -> str:
    if re.search(r"[<>\n\0]", author):
        raise GitError(f"refusing author name {author!r}")
    offset = time.localtime().tm_gmtoff
    sign = "+" if offset >= 0 else "-"
    zone = f"{sign}{abs(offset) // 3600:02d}{abs(offset) % 3600 // 60:02d}"
    return f"{author} <{email}> {int(time.time())} {zone}"
