# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingTypeStubs=false
"""Shell completion of what a command's arguments name: memories, types, tags, identities.

click completes command and option names itself; these complete the values. Each reads what
the store already keeps, never the memory files nor git, so its cost does not grow with the
store: a name is looked up by prefix in the catalog (`.memstore/catalog.sqlite`, keyed by
`<type>/<name>.md`: a range read of its primary key per type folder), a tag in the search
index's sorted term list of the `tags` field, the types in `memstore.yaml`, the identities in
the store's kept list of every author (`.git/memstore/identities.json`). The catalog and the
index are as fresh as the last command that read them (`list`, `search`, `brief`, a write); a
store with no catalog yet completes names from its folders. Completion never fails: anything
unreadable completes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    import sqlite3

    from click.shell_completion import CompletionItem

SHOWN = 100
"""At most this many answers: a shell lists no more usefully."""
CATALOG = "catalog.sqlite"
"""`catalog.FILE`, spelled here so that loading the CLI loads no catalog code."""

Completer = Callable[[click.Context, click.Parameter, str], "list[CompletionItem]"]

NAMED = {"name", "names", "superseded_by", "links"}
"""Parameters that name memories."""
NEW = {"add name", "correct name", "mv new_name"}
"""Parameters that name a memory yet to be: nothing to complete."""
TYPED = {"type_"}
TAGGED = {"tag", "tags"}
IDENTITIES = {"agent", "owner", "actor", "identity"}
"""Parameters that name identities; `token add`/`token revoke` NAME too."""


def attach(group: click.Group) -> None:
    """Give each parameter of `group`'s commands that names a memory, type, tag or identity
    its completion (by the parameter's name, so a command added later gets it too)."""
    for path, command in _walk(group, ()):
        for param in command.params:
            completer = _completer(path, param)
            if completer is not None and not isinstance(param.type, click.Choice):
                param._custom_shell_complete = completer  # pyright: ignore[reportPrivateUsage]
    for param in group.params:
        if param.name == "agent":
            param._custom_shell_complete = identities  # pyright: ignore[reportPrivateUsage]


def _walk(group: click.Group, path: tuple[str, ...]) -> Iterator[tuple[str, click.Command]]:
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _walk(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


def _completer(path: str, param: click.Parameter) -> Completer | None:
    name = param.name or ""
    if path.startswith("token ") and name == "name":
        return identities
    if name in NAMED and f"{path} {name}" not in NEW:
        return memory_names
    if name in TYPED:
        return memory_types
    if name in TAGGED:
        return tags
    if name in IDENTITIES:
        return identities
    return None


def _store(ctx: click.Context) -> Path:
    """The store the command line names so far: --store, else $MEMSTORE_DIR, else ./memory."""
    named = ctx.find_root().params.get("store")
    return Path(named or os.environ.get("MEMSTORE_DIR") or "memory").expanduser()


def _types(root: Path) -> tuple[str, ...]:
    """The store's types: the defaults and memstore.yaml's."""
    from memstore.model.memory import DEFAULT_TYPES
    from memstore.storage import settings

    try:
        return settings.store_types(root)
    except Exception:  # a broken memstore.yaml: the defaults
        return DEFAULT_TYPES


def _folders(root: Path) -> list[str]:
    """The store's type folders (each type's memories are in its own): read without loading
    the settings."""
    try:
        with os.scandir(root) as entries:
            return [e.name for e in entries if not e.name.startswith(".") and e.is_dir()]
    except OSError:
        return []


def _catalog(root: Path) -> sqlite3.Connection | None:
    import sqlite3

    path = root / ".memstore" / CATALOG
    if not path.is_file():
        return None
    try:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0.2)
    except sqlite3.Error:
        return None


def memory_names(
    ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The store's memory names starting with the last of `incomplete`'s comma-separated parts
    (`--links a,b`), each with its description."""
    import sqlite3

    from click.shell_completion import CompletionItem

    done, _, incomplete = incomplete.rpartition(",")
    head = f"{done}," if done else ""
    root = _store(ctx)
    found: dict[str, str] = {}
    db = _catalog(root)
    try:
        if db is not None:
            for type_ in _folders(root):
                low = f"{type_}/{incomplete}"
                rows = db.execute(
                    "SELECT name, description FROM memories WHERE path >= ? AND path < ? "
                    "ORDER BY path LIMIT ?",
                    (low, low + "\U0010ffff", SHOWN),
                ).fetchall()
                found.update((str(n), str(d)) for n, d in rows)
        else:
            for type_ in _folders(root):
                found.update(_from_folder(root / type_, incomplete))
    except (sqlite3.Error, OSError):
        pass
    finally:
        if db is not None:
            db.close()
    names = sorted(found)[:SHOWN]
    return [CompletionItem(head + n, help=found[n] or None) for n in names]


def _from_folder(folder: Path, incomplete: str) -> dict[str, str]:
    """Names of a type's files starting with `incomplete` (a store with no catalog yet)."""
    found: dict[str, str] = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(".md") and name.startswith(incomplete):
                    found[name[:-3]] = ""
                    if len(found) >= SHOWN:
                        break
    except OSError:
        pass
    return found


def memory_types(
    ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The store's types (the defaults and memstore.yaml's) starting with `incomplete`."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(t) for t in _types(_store(ctx)) if t.startswith(incomplete)]


def tags(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Tags in use starting with the last of `incomplete`'s comma-separated parts (`--tags
    api,val` completes `api,validation`): read from the search index's term list of the
    `tags` field, sorted, so a prefix is found without reading every memory (a tag only
    deleted memories had may show until the index next merges its segments)."""
    from click.shell_completion import CompletionItem

    done, _, part = incomplete.rpartition(",")
    head = f"{done}," if done else ""
    taken = set(done.split(","))
    found: list[str] = []
    try:
        from whoosh import index as windex

        folder = str(_store(ctx) / ".memstore" / "index")
        if not windex.exists_in(folder):
            return []
        reader: Any = windex.open_dir(folder, readonly=True).reader()
        with reader:
            for term in reader.expand_prefix("tags", part):
                tag = term.decode("utf-8") if isinstance(term, bytes) else str(term)
                if tag not in taken:
                    found.append(tag)
                if len(found) >= SHOWN:
                    break
    except Exception:  # no index, or one being written: nothing to complete
        return []
    return [CompletionItem(head + t) for t in found]


def identities(
    ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Every identity that committed to the store's repository, starting with `incomplete`."""
    from click.shell_completion import CompletionItem

    from memstore.git import repository
    from memstore.storage import identities as known

    root = _store(ctx)
    try:
        repo = repository.find_repo(root.absolute())
        names = known.kept(repo) if repo is not None else []
    except Exception:
        return []
    shown = [n for n in names if n.startswith(incomplete)]
    return [CompletionItem(n) for n in sorted(shown)[:SHOWN]]
