"""The crash journal: what the lock holder is writing, so the next writer finishes or undoes it.

A write names its files' old content and new version (or the bytes it appends to a record
file) in `.memstore/pending.json` before touching them, and deletes the journal once
committed. Every function here is called with the store's lock held, except `pending`.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from memstore import history, ledger
from memstore.errors import InvalidMemory
from memstore.files import atomic_write, version_of
from memstore.memory import check_identity

if TYPE_CHECKING:
    from memstore.store import Store

log = logging.getLogger(__name__)

JOURNAL = "pending.json"
"""The change the lock holder is writing; a writer that finds it finishes or undoes it."""
APPEND_ONLY_FILES = ("ledger.jsonl", "outcomes.jsonl")
"""The record files a journal may name for an append (`ledger.LEDGER_FILE`, the outcomes)."""

Entry = dict[str, str | None]
"""One file of a journaled change: its store-relative `path`, `old` content, `new` version."""

_JOURNAL_PATH = re.compile(r"[a-z0-9][a-z0-9-]{0,63}/[a-z0-9][a-z0-9-]{0,63}\.md")


def write_files(
    store: Store, texts: list[tuple[Path, str]], message: str, actor: str
) -> list[Entry]:
    """Journal a change that writes `texts` (path, new text) before it is made; returns its
    entries (what `undo` needs)."""
    entries: list[Entry] = []
    for path, text in texts:
        old = path.read_bytes().decode("utf-8") if path.is_file() else None
        new = version_of(text.encode("utf-8"))
        entries.append({"path": store.rel(path), "old": old, "new": new})
    record = {"message": message, "actor": actor, "files": entries}
    atomic_write(store.cache / JOURNAL, json.dumps(record, ensure_ascii=False))
    return entries


def write_append(
    store: Store, data: str, message: str, actor: str, file: str = ledger.LEDGER_FILE
) -> Path:
    """Journal an append of `data` to a record file (the ledger, or the outcomes) before it
    is made; returns the journal."""
    path = store.root / file
    size = path.stat().st_size if path.is_file() else 0
    record: dict[str, Any] = {
        "message": message,
        "actor": actor,
        "files": [],
        "append": {"size": size, "data": data, "file": file},
    }
    journal = store.cache / JOURNAL
    atomic_write(journal, json.dumps(record, ensure_ascii=False))
    return journal


def clear(store: Store) -> None:
    """Delete the journal: the change it describes is committed, or undone."""
    (store.cache / JOURNAL).unlink(missing_ok=True)


def recover(store: Store) -> None:
    """Finish or undo a change whose writer died, as its journal says.

    Every file written and not yet committed: commit it, as its author and with its message
    (roll forward). Only some written: put the old content back (roll back). A file that
    holds neither version was changed by someone else since, and is left alone.
    """
    remove_dead_temp_files(store.cache)
    journal = store.cache / JOURNAL
    if not journal.exists():
        return
    try:
        record: dict[str, Any] = json.loads(journal.read_text(encoding="utf-8"))
        entries: list[Entry] = record["files"]
        message, actor = str(record["message"]), str(record["actor"])
        check_identity(actor)
        if not all(_JOURNAL_PATH.fullmatch(str(e["path"])) for e in entries):
            raise ValueError("a path that is not <type>/<name>.md")
        appended: dict[str, Any] | None = record.get("append")
        size, data, appended_to = 0, b"", ledger.LEDGER_FILE
        if appended is not None:
            size, data = int(appended["size"]), str(appended["data"]).encode("utf-8")
            appended_to = str(appended.get("file", ledger.LEDGER_FILE))
            if appended_to not in APPEND_ONLY_FILES:
                raise ValueError(f"an append to {appended_to!r}, not a record file")
    except (ValueError, KeyError, TypeError, OSError, InvalidMemory) as e:
        log.warning("ignoring unreadable journal %s: %s", journal, e)
        journal.unlink(missing_ok=True)
        return
    if appended is not None:
        history.remove_stale_locks(store.repo)
        _recover_append(store, size, data, message, actor, appended_to)
        journal.unlink(missing_ok=True)
        return
    for entry in entries:
        path = store.root / str(entry["path"])
        for stray in path.parent.glob(f".{path.name}.*.tmp"):
            stray.unlink(missing_ok=True)
    history.remove_stale_locks(store.repo)
    states = [_state(store, entry) for entry in entries]
    if states and all(s == "new" for s in states):
        paths = [store.root / str(e["path"]) for e in entries]
        if history.dirty(store.repo, paths):
            log.warning("committing a change its writer did not finish: %s", message)
            history.commit(store.repo, paths, message, actor, store.lock_timeout)
    elif "new" in states:
        log.warning("undoing a change its writer did not finish: %s", message)
        undo(store, entries)
    journal.unlink(missing_ok=True)


def pending(cache: Path) -> str | None:
    """The commit message of a write a killed process left unfinished, else None.

    Only a journal no live writer holds counts: the lock is tried, never waited for.
    """
    journal = cache / JOURNAL
    if not journal.is_file() or cache.is_symlink():
        return None
    lock = FileLock(cache / "lock")
    try:
        lock.acquire(blocking=False)
    except Timeout:
        return None  # a writer is at work; its journal is not left over
    try:
        data: Any = json.loads(journal.read_text(encoding="utf-8"))
        return str(data["message"]).splitlines()[0]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return "(an unreadable journal)"
    finally:
        lock.release()


def remove_dead_temp_files(cache: Path) -> None:
    """Remove the temp files that killed processes left in the cache folder.

    `atomic_write` names them `.<file>.<pid>.<random>.tmp`, the index its manifest's
    `.manifest.<pid>.<thread>.tmp`: the pid is third from the end. Needs /proc to tell a
    dead pid.
    """
    if not Path("/proc").is_dir():
        return
    for stray in [*cache.glob(".*.tmp"), *(cache / "index").glob(".*.tmp")]:
        pid = stray.name.split(".")[-3]
        if pid.isdigit() and not Path("/proc", pid).exists():
            stray.unlink(missing_ok=True)


def _recover_append(
    store: Store, size: int, data: bytes, message: str, actor: str, file: str
) -> None:
    """Commit a record line its writer appended but did not commit; cut a torn one off."""
    path = store.root / file
    if not path.is_file() or path.is_symlink():
        return
    tail = path.read_bytes()[size:]
    if tail.startswith(data):
        if history.dirty(store.repo, [path]):
            log.warning("committing a change its writer did not finish: %s", message)
            history.commit(store.repo, [path], message, actor, store.lock_timeout)
    elif tail and data.startswith(tail):
        log.warning("undoing a change its writer did not finish: %s (a torn line)", message)
        os.truncate(path, size)


def _state(store: Store, entry: Entry) -> str:
    """`new` (the journal's new content), `old` (untouched), or `other` for one file."""
    path = store.root / str(entry["path"])
    if not path.is_file():
        return "old" if entry["old"] is None else "other"
    data = path.read_bytes()
    if version_of(data) == entry["new"]:
        return "new"
    old = entry["old"]
    return "old" if old is not None and data == old.encode("utf-8") else "other"


def undo(store: Store, entries: list[Entry]) -> None:
    """Put back the old content of each journal entry whose file holds the new, uncommitted
    content."""
    for entry in entries:
        path = store.root / str(entry["path"])
        if _state(store, entry) != "new":
            continue
        committed = history.blob(store.repo, "HEAD", path)
        if committed is not None and version_of(committed) == entry["new"]:
            continue  # the commit landed after all
        old = entry["old"]
        if old is None:
            path.unlink(missing_ok=True)
        else:
            atomic_write(path, old)
        history.unstage(store.repo, [path])
