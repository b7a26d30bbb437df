"""Validate a whole store: every file, and how its confirmations were committed."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from memstore import history, secrets
from memstore.errors import InvalidMemory, InvalidName, MemstoreError
from memstore.files import Kind, walk
from memstore.memory import (
    FILE_MAX,
    Memory,
    check_body,
    check_description,
    check_tags,
    parse,
    same_identity,
)
from memstore.stats import OUTCOMES_FILE, outcome_problems
from memstore.status import Status
from memstore.workflow import rule_problems

if TYPE_CHECKING:
    from memstore.store import Store


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing `lint` found wrong, with the file (relative to the store) and line if known."""

    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


def check_file(path: Path, folder: str, types: tuple[str, ...]) -> tuple[Memory | None, list[str]]:
    """Parse one memory file and list what is wrong with it on its own."""
    if path.stat().st_size > FILE_MAX:
        return None, [f"larger than {FILE_MAX} bytes: too large to be one memory"]
    return check_data(path.read_bytes(), path.stem, folder, types)


def check_data(
    data: bytes, stem: str, folder: str, types: tuple[str, ...]
) -> tuple[Memory | None, list[str]]:
    """`check_file` for the bytes of `<folder>/<stem>.md`, wherever they were read from."""
    if len(data) > FILE_MAX:
        return None, [f"larger than {FILE_MAX} bytes: too large to be one memory"]
    if not data.strip():
        return None, ["empty file: a memory needs YAML front matter and a body"]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, ["not UTF-8 text (a binary file, or another encoding)"]
    problems: list[str] = []
    if "\r\n" in text:
        problems.append("CRLF line endings: memory files use LF (`.gitattributes` pins eol=lf)")
    try:
        memory = parse(text)
    except (InvalidMemory, InvalidName) as e:
        return None, [*problems, str(e)]
    if memory.name != stem:
        problems.append(f"name '{memory.name}' does not match the file name '{stem}.md'")
    if memory.type != folder:
        problems.append(f"type '{memory.type}' does not match its folder '{folder}/'")
    if memory.type not in types:
        problems.append(f"unknown type '{memory.type}'; types are: {', '.join(types)}")
    statuses = [s.value for s in Status]
    if memory.status not in statuses:
        problems.append(f"unknown status '{memory.status}'; statuses are: {', '.join(statuses)}")
    for check, value in (
        (check_description, memory.description),
        (check_tags, list(memory.tags)),
        (check_body, memory.body),
    ):
        try:
            check(value)
        except InvalidMemory as e:
            problems.append(str(e))
    if not memory.owner.strip():
        problems.append("owner is empty")
    if memory.status == Status.CONFIRMED:
        if not memory.confirmed_by:
            problems.append("confirmed but has no confirmed_by: who confirmed it?")
        elif same_identity(memory.confirmed_by, memory.owner):
            problems.append(
                f"confirmed by its own owner ({memory.owner}): nobody confirms their own memory"
            )
    if memory.status == Status.DEPRECATED and not memory.deprecated_reason:
        problems.append("deprecated but has no deprecated_reason: say why it is wrong or stale")
    problems.extend(rule_problems(memory))
    return memory, problems


def lint_store(store: Store, *, staged: bool = False) -> list[Problem]:
    """Every problem in `store`, files first, then the history of confirmations.

    With `staged`, the files are read from git's index, as the next commit would hold them
    (what a pre-commit hook must check), instead of from the working tree.
    """
    problems: list[Problem] = []
    by_name: dict[str, list[str]] = defaultdict(list)
    memories: dict[str, tuple[Path, Memory]] = {}
    outcomes: str | None = None
    if staged:
        try:
            places, outcomes = _staged_places(store)
        except MemstoreError as e:
            return [Problem(".", f"cannot read what is staged: {e}")]
    else:
        places = _working_places(store)
    for rel, kind, read in places:
        path = store.root / rel
        if kind == Kind.TEMP:
            problems.append(Problem(rel, "temp file left by an interrupted write; delete it"))
            continue
        if kind == Kind.SYMLINK:
            what = "a symlinked folder" if "/" not in rel else "a symlink"
            problems.append(Problem(rel, f"{what}: memstore does not follow it"))
            continue
        if kind == Kind.SPECIAL:
            problems.append(Problem(rel, "not a regular file: memstore does not read it"))
            continue
        try:
            memory, found = read()
        except OSError as e:
            problems.append(Problem(rel, f"cannot be read: {e.strerror or e}"))
            continue
        problems.extend(Problem(rel, message) for message in found)
        if memory is not None and not store.secrets_allowed:
            problems.extend(Problem(rel, message) for message in _secrets(store, memory))
        if memory is not None:
            by_name[memory.name].append(rel)
            memories[memory.name] = (path, memory)
    for name, paths in by_name.items():
        if len(paths) > 1:
            for rel in paths:
                others = ", ".join(p for p in paths if p != rel)
                problems.append(Problem(rel, f"duplicate name '{name}': also in {others}"))
    for path, memory in memories.values():
        targets = [("links", t) for t in memory.links]
        if memory.superseded_by:
            targets.append(("superseded_by", memory.superseded_by))
        for key, target in targets:
            if target not in memories:
                message = f"{key} names '{target}', which is not in the store"
                problems.append(Problem(store.rel(path), message))
    problems.extend(_history_problems(store, memories))
    problems.extend(
        Problem(OUTCOMES_FILE, m, n) for n, m in outcome_problems(store.root, outcomes, staged)
    )
    left = store.pending()
    if left is not None:
        problems.append(
            Problem(
                ".memstore/pending.json",
                f"a write was cut short ({left}); `memstore recover` (or any write) finishes or "
                "undoes it",
            )
        )
    return problems


Checked = tuple[Memory | None, list[str]]
Place = tuple[str, Kind, Callable[[], Checked]]
"""A place where a memory file could be: `<folder>/<file>`, what is there, and its check."""


def _working_places(store: Store) -> Iterator[Place]:
    """The files in the working tree, as `files.walk` finds them."""
    for entry in walk(store.root):
        path = entry.path
        yield entry.rel, entry.kind, partial(check_file, path, path.parent.name, store.types)


def _staged_places(store: Store) -> tuple[list[Place], str | None]:
    """The files in git's index, as `files.walk` would find them had they been checked out,
    and the staged text of `outcomes.jsonl` (None when none is staged).

    Raises:
        GitError: when git cannot list or read the index.
    """
    prefix = history.repo_path(store.repo, store.root)
    prefix = "" if prefix in ("", ".") else prefix + "/"
    places: list[Place] = []
    outcomes: str | None = None
    for entry in history.staged(store.repo, store.root):
        rel = entry.path[len(prefix) :]
        parts = rel.split("/")
        if parts[0].startswith(".") or len(parts) > 2:
            continue
        if len(parts) == 1:
            if rel == OUTCOMES_FILE and entry.data is not None:
                outcomes = entry.data.decode("utf-8", "replace")
            elif entry.mode == _SYMLINK:
                places.append((rel, Kind.SYMLINK, _unread))  # a symlinked type folder
            continue
        name = parts[1]
        if name.startswith("."):
            if name.endswith(".tmp"):
                places.append((rel, Kind.TEMP, _unread))
            continue
        if not name.endswith(".md"):
            continue
        if entry.mode == _SYMLINK:
            places.append((rel, Kind.SYMLINK, _unread))
        elif entry.data is None:  # a submodule, or a merge conflict's side
            places.append((rel, Kind.SPECIAL, _unread))
        else:
            check = partial(check_data, entry.data, name[: -len(".md")], parts[0], store.types)
            places.append((rel, Kind.MEMORY, check))
    return places, outcomes


_SYMLINK = "120000"


def _unread() -> Checked:
    raise AssertionError("only a memory file is read")


def _history_problems(store: Store, memories: dict[str, tuple[Path, Memory]]) -> list[Problem]:
    """Confirmations must be committed by someone other than the owner, and by who they name."""
    try:
        found = history.confirmations(store.repo, store.root)
        dirty = history.changed_paths(store.repo, store.root)
    except MemstoreError as e:
        return [Problem(".", f"cannot read the store's git history: {e}")]
    problems: list[Problem] = []
    for path, memory in memories.values():
        if memory.status != Status.CONFIRMED or not memory.confirmed_by:
            continue
        rel = store.rel(path)
        key = history.repo_path(store.repo, path)
        if key in dirty and not _committed_as(store, path, memory):
            # Not committed yet (e.g. lint run by a pre-commit hook): the committer will be us.
            problems.extend(_pending(rel, memory, store.identity))
            continue
        confirmation = found.get(key)
        if confirmation is None:
            problems.append(Problem(rel, "confirmed, but no commit in the history confirms it"))
        elif confirmation.author == memory.owner:
            problems.append(
                Problem(
                    rel,
                    f"self-approval: commit {confirmation.commit[:10]} confirming it was made "
                    f"by its owner ({memory.owner})",
                )
            )
        elif confirmation.author != memory.confirmed_by:
            problems.append(
                Problem(
                    rel,
                    f"forged confirmation: confirmed_by says '{memory.confirmed_by}' but commit "
                    f"{confirmation.commit[:10]} was made by '{confirmation.author}'",
                )
            )
    return problems


def _secrets(store: Store, memory: Memory) -> list[str]:
    """A hand-written credential, as the write path would have refused it."""
    fields = {"description": memory.description, "body": memory.body, "tags": memory.tags}
    return [
        f"{f.field} looks like it holds a credential ({f.pattern}: '{f.excerpt}'); remove it"
        for f in secrets.scan(fields, store.secret_patterns)
    ]


def _pending(rel: str, memory: Memory, identity: str | None) -> list[Problem]:
    if identity is None:
        message = "confirmation not committed, and no identity is set to check it against"
    elif identity == memory.owner:
        message = f"confirmed by its owner: you ({identity}) wrote it and cannot confirm it"
    elif identity != memory.confirmed_by:
        message = (
            f"confirmed_by says '{memory.confirmed_by}' but you are '{identity}': a "
            "confirmation must be committed by the identity it names"
        )
    else:
        return []
    return [Problem(rel, message)]


def _committed_as(store: Store, path: Path, memory: Memory) -> bool:
    """Whether HEAD already holds this confirmation (same status and confirmer)."""
    committed = history.show(store.repo, "HEAD", path)
    if committed is None:
        return False
    try:
        old = parse(committed)
    except (InvalidMemory, InvalidName):
        return False
    return old.status == memory.status and old.confirmed_by == memory.confirmed_by
