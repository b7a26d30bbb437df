"""The package's imports point one way, downwards, with no circle: faces → workflow over a
store → the store → its write transaction → pure modules → errors. Every import counts,
including those under `TYPE_CHECKING` and inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "memstore"

LAYERS: dict[str, int] = {
    # faces
    "__main__": 6,
    "cli": 5,
    "server": 5,
    "web": 5,
    "console": 5,
    "toolkit": 4,
    "sdk": 4,
    "handshake": 4,
    # plain functions over a store
    "search": 4,
    "session": 4,
    "briefing": 4,
    "ledger_io": 4,
    "lint": 4,
    "watch": 4,
    "signers": 4,
    "asof": 4,
    "timeline": 4,
    "tidy": 4,
    "sync": 4,
    "steward": 4,
    "orientation": 4,
    "porting": 4,
    "closing": 4,
    # the store: open, read, the memory moves
    "store": 3,
    # the one write path
    "transaction": 2,
    # what git history supports
    "trust": 2,
    "drift": 2,
    # pure modules
    "memory": 1,
    "status": 1,
    "files": 1,
    "history": 1,
    "gitlog": 1,
    "index": 1,
    "manifest": 1,
    "ranking": 1,
    "embedding": 1,
    "ledger": 1,
    "stats": 1,
    "workflow": 1,
    "actions": 1,
    "secrets": 1,
    "signing": 1,
    "config": 1,
    "render_text": 1,
    "hooks": 1,
    "clients": 1,
    "tokens": 1,
    "precommit": 1,
    "documents": 1,
    "sources": 1,
    "when": 1,
    # the bottom
    "errors": 0,
    "__init__": 0,
}


def imports(path: Path) -> set[str]:
    """The package modules `path` imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "memstore":
                found.update(a.name for a in node.names if a.name != "__version__")
            elif node.module.startswith("memstore."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("memstore."))
    return found


def graph() -> dict[str, set[str]]:
    return {p.stem: imports(p) - {p.stem} for p in PACKAGE.glob("*.py")}


def test_every_module_has_a_layer() -> None:
    assert set(graph()) == set(LAYERS)


def test_no_module_imports_one_above_it() -> None:
    upward = [
        f"{module} (layer {LAYERS[module]}) imports {target} (layer {LAYERS[target]})"
        for module, targets in graph().items()
        for target in targets
        if LAYERS[target] > LAYERS[module]
    ]
    assert upward == []


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


def test_the_store_does_not_import_the_workflow_back() -> None:
    assert not imports(PACKAGE / "store.py") & {
        "search",
        "session",
        "briefing",
        "ledger_io",
        "lint",
        "watch",
        "cli",
        "server",
    }
