"""Drift: a confirmed memory whose `files` changed in git after it was last confirmed or
verified may be out of date.

One `git log` over the paths answers for every memory at once, streamed and stopped as soon as
each path has its newest change; the answers are kept in `.memstore/drift.json` for the HEAD
they were made for, and a moved HEAD costs one `git log OLD..HEAD`. No git runs per memory.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memstore.errors import GitError, InvalidMemory
from memstore.git import gitlog, refs, repository
from memstore.model.fields import check_files
from memstore.model.memory import Memory
from memstore.storage.files import atomic_write

log = logging.getLogger(__name__)

CACHE_FILE = "drift.json"
_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Change:
    """The newest commit that changed a file a spec matches."""

    path: str
    commit: str
    at: int
    """Its commit time, in Unix seconds."""


@dataclass(frozen=True, slots=True)
class Drift:
    """Why a confirmed memory may be out of date: a file it is about changed since."""

    path: str
    commit: str

    @property
    def note(self) -> str:
        return (
            f"may be out of date: {self.path} changed in {self.commit[:10]} since it was confirmed"
        )


@functools.lru_cache(maxsize=4096)
def matcher(spec: str) -> Callable[[str], bool]:
    """Whether a repository path is matched by `spec`, as git's glob pathspec matches it:
    `*` and `?` within one folder, `**` across folders, a folder names everything under it."""
    out: list[str] = []
    i = 0
    while i < len(spec):
        if spec.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif spec.startswith("**", i):
            out.append(".*")
            i += 2
        elif spec[i] == "*":
            out.append("[^/]*")
            i += 1
        elif spec[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(spec[i]))
            i += 1
    pattern = re.compile("".join(out).rstrip("/") + "(?:/.*)?")
    return lambda path: pattern.fullmatch(path) is not None


def files_of(memory: Memory) -> tuple[str, ...]:
    """The repository paths or globs `memory` names in `files` (none when malformed)."""
    try:
        return check_files(memory.extra.get("files"))
    except InvalidMemory:  # a hand-edited value of another shape: lint reports it
        return ()


def _seconds(stamp: str | None) -> int | None:
    if not stamp:
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


def checked_at(memory: Memory) -> int | None:
    """When `memory` was last confirmed or verified (Unix seconds), None if never."""
    found = [s for s in (_seconds(memory.confirmed_at), _seconds(memory.verified_at)) if s]
    return max(found) if found else None


def drift_of(memory: Memory, newest: dict[str, Change | None]) -> Drift | None:
    """The newest change to `memory`'s files made after its last confirmation or
    verification, or None. Call it for memories shown confirmed; `newest` from `Changes`."""
    since = checked_at(memory)
    if since is None:
        return None
    found = [c for spec in files_of(memory) if (c := newest.get(spec)) and c.at > since]
    if not found:
        return None
    latest = max(found, key=lambda c: c.at)
    return Drift(latest.path, latest.commit)


class Changes:
    """The newest commit at HEAD that changed each spec's files, for one repository."""

    def __init__(self, repo: repository.Repo, cache: Path) -> None:
        self.repo = repo
        self.file = cache / CACHE_FILE
        self._lock = threading.Lock()
        self._head: str | None = None
        self._specs: dict[str, Change | None] | None = None

    def newest(self, specs: Iterable[str]) -> dict[str, Change | None]:
        """Each spec's newest change at HEAD (None: no commit changed its files).

        A git failure is logged and answered with no changes: drift is a hint.
        """
        wanted = sorted(set(specs))
        if not wanted:
            return {}
        with self._lock:
            try:
                known = self._current()
                missing = [s for s in wanted if s not in known]
                if missing:
                    known.update(_newest(self.repo, missing, "HEAD"))
                    self._save()
            except GitError as e:
                log.warning("cannot read which files changed: %s", e)
                return {}
            return {s: known.get(s) for s in wanted}

    def _current(self) -> dict[str, Change | None]:
        head = refs.head(self.repo)
        if self._specs is None:
            self._head, self._specs = self._load()
        if head is None:
            self._head, self._specs = None, {}
            return self._specs
        if self._head == head:
            return self._specs
        if self._head is not None and self._specs:
            try:
                newer = _newest(self.repo, list(self._specs), f"{self._head}..{head}")
                self._specs.update({s: c for s, c in newer.items() if c is not None})
            except GitError as e:  # the old HEAD is gone (a rewritten history): start again
                log.info("reading the changed files afresh: %s", e)
                self._specs = {}
        else:
            self._specs = {}
        self._head = head
        self._save()
        return self._specs

    def _load(self) -> tuple[str | None, dict[str, Change | None]]:
        try:
            data: Any = json.loads(self.file.read_text(encoding="utf-8"))
            if data.get("format") != _FORMAT:
                return None, {}
            specs = {
                str(k): (Change(str(v[0]), str(v[1]), int(v[2])) if v else None)
                for k, v in dict(data["specs"]).items()
            }
            return (str(data["head"]) if data.get("head") else None), specs
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
            return None, {}

    def _save(self) -> None:
        specs = self._specs or {}
        data = {
            "format": _FORMAT,
            "head": self._head,
            "specs": {k: ([v.path, v.commit, v.at] if v else None) for k, v in specs.items()},
        }
        try:
            atomic_write(self.file, json.dumps(data, ensure_ascii=False))
        except OSError as e:
            log.info("cannot keep the changed files in %s: %s", self.file, e)


def _newest(
    repo: repository.Repo, specs: Collection[str], revisions: str
) -> dict[str, Change | None]:
    """Each spec's newest change in `revisions`, reading the log only until every spec has one."""
    found: dict[str, Change | None] = dict.fromkeys(specs)
    pending = {s: matcher(s) for s in specs}
    for commit in gitlog.path_log(repo, list(specs), revisions):
        for spec, matches in list(pending.items()):
            path = next((p for p in commit.paths if matches(p)), None)
            if path is not None:
                found[spec] = Change(path, commit.sha, commit.at)
                del pending[spec]
        if not pending:
            break
    return found


_changes: dict[str, Changes] = {}
_changes_lock = threading.Lock()


def changes(repo: repository.Repo, cache: Path) -> Changes:
    """The one `Changes` of this process for the store whose cache folder is `cache`."""
    with _changes_lock:
        found = _changes.get(str(cache))
        if found is None or found.repo is not repo:
            found = _changes[str(cache)] = Changes(repo, cache)
        return found
