"""The package's folders are its layers, and imports point one way, downwards, with no circle:
faces → workflow (sessions → care → rules → ledger) → search → storage → git → model → the
package root. Every import counts, including those under `TYPE_CHECKING` and inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "memstore"

FLOORS: list[str] = [
    "",  # the package root: errors, config, limits
    "workflow",  # its `__init__` only: the workflow lives in the folders below
    "model",
    "git",
    "storage",
    "search",
    "workflow/ledger",
    "workflow/rules",
    "workflow/care",
    "workflow/session",
    "faces",
    "faces/cli",  # above the other faces: `serve` starts the server
]
"""The folders, lowest first. A module imports only modules of its own folder or below."""

ON_TOP = {"__main__"}
"""Root modules that stand above everything: `python -m memstore` starts the CLI."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("memstore", *parts))


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(path: Path, known: set[str]) -> set[str]:
    """The package modules `path` imports, anywhere in it (a `from pkg import mod` names mod)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("memstore"):
                continue
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("memstore."))
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.add(f"relative import {node.module}")
    return found


def folder(module: str) -> str:
    """The folder a module sits in, as FLOORS names it (a folder's `__init__` sits in it)."""
    path = modules()[module].relative_to(PACKAGE)
    return "/".join(path.parent.parts)


def floor(module: str) -> int:
    if module.removeprefix("memstore.") in ON_TOP:
        return len(FLOORS)
    return FLOORS.index(folder(module))


def graph() -> dict[str, set[str]]:
    known = set(modules())
    edges = {m: imports(p, known) - {m} for m, p in modules().items()}
    # A folder's `__init__` is a docstring only: importing a module never loads its siblings.
    return {m: {t for t in targets if t != "memstore"} for m, targets in edges.items()}


def test_every_folder_is_a_floor() -> None:
    folders = {folder(m) for m in modules()}
    assert folders == set(FLOORS)


def test_no_relative_imports() -> None:
    relative = {m: t for m, ts in graph().items() for t in ts if t.startswith("relative")}
    assert relative == {}


def test_every_import_names_a_module_that_exists() -> None:
    known = set(modules())
    missing = {f"{m} imports {t}" for m, ts in graph().items() for t in ts if t not in known}
    assert missing == set()


def test_no_module_imports_a_folder_above_its_own() -> None:
    upward = sorted(
        f"{module} ({folder(module) or 'root'}) imports {target} ({folder(target) or 'root'})"
        for module, targets in graph().items()
        for target in targets
        if floor(target) > floor(module)
    )
    assert upward == []


def test_folder_inits_import_nothing() -> None:
    """A folder's `__init__` loads nothing, so a light module never pays for a heavy sibling."""
    heavy = {m: ts for m, ts in graph().items() if modules()[m].name == "__init__.py" and ts}
    assert heavy == {}


def test_there_is_no_import_circle() -> None:
    edges = graph()
    done: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(edges.get(module, ())):
            if target in path:
                circles.append([*path[path.index(target) :], target])
            elif target not in done:
                visit(target, [*path, target])
        done.add(module)

    for start in sorted(edges):
        if start not in done:
            visit(start, [start])
    assert circles == []
