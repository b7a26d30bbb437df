"""The package's folders are its layers, and imports point one way, downwards, with no circle:
faces → workflow (sessions → care → rules → ledger) → search → storage → git → model → the
package root. Every import counts, including those under `TYPE_CHECKING` and inside functions."""

from __future__ import annotations

import ast
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from memstore.search.index import racy_window
from memstore.storage.store import Store

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


@functools.cache  # the package's files do not change during a run: walked once, not per call
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


@functools.cache  # parsed once for the module's tests, which only read it
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


def calls(run: Callable[[], object]) -> set[tuple[str, str]]:
    """The (caller, callee) module pairs of memstore's own calls while `run` runs."""
    pairs: set[tuple[str, str]] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_back is not None:
            callee = frame.f_globals.get("__name__", "")
            caller = frame.f_back.f_globals.get("__name__", "")
            if (
                callee != caller
                and callee.startswith("memstore.")
                and caller.startswith("memstore.")
            ):
                pairs.add((caller, callee))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return pairs


def below(module: str, edges: dict[str, set[str]]) -> set[str]:
    """Every module `module` imports, directly or through others."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for target in edges.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


SITE = ("memstore.storage.transaction", "memstore.storage.store")
"""The one call back allowed: the transaction reads the store's `holder` and `signer` through
its `Site` protocol (the store hands itself to the write path it is built on)."""
PREPARED = ("memstore.git.refs", "memstore.git.indexfile")
"""The other: HEAD's swap calls back, between git's prepare and commit, what the commit hands it
to put in place first (the new index, `refs.move_head(prepared=...)`)."""


def test_a_recall_and_a_write_only_call_down_the_import_order(store: Store) -> None:
    from memstore.search import upkeep
    from memstore.search.query import Query

    for i in range(5):
        store.add(f"deploy-note-{i}", type="fact", description=f"Deploys use the blue lane {i}")
    # Past the racy window of the files just written, the warm-up search settles them all: the
    # traced one then never compares racy files, whatever the machine's load (deterministic).
    files = [p.stat().st_mtime_ns for p in store.root.rglob("*.md")]
    time.sleep(max(racy_window(ns) for ns in files) / 1e9 + 0.05)
    upkeep.search(store, Query("blue lane"))  # the index built and the searcher open
    edges = graph()
    recall = calls(lambda: upkeep.search(store, Query("deploys blue")))
    write = calls(lambda: store.add("one-more", type="fact", description="A fact about lanes"))
    upward = sorted(
        pair
        for pair in recall | write
        if pair[1] not in below(pair[0], edges) and pair not in (SITE, PREPARED)
    )
    assert upward == []
    assert "memstore.search.rank" in {callee for _, callee in recall}
    # A handful of modules each: the recall stays inside search (and the store's record of its
    # own writes); the write never loads the index or the history reader.
    assert {m.split(".")[1] for pair in recall for m in pair} <= {"search", "storage", "model"}
    assert not {m for pair in write for m in pair} & {
        "memstore.search.index",
        "memstore.git.gitlog",
    }


def test_the_cli_starts_without_loading_the_core() -> None:
    # Every command (and `--help`) pays for what the CLI's start imports: the core's modules
    # load only when a command runs (a top-level import in a command module undoes that).
    import subprocess

    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, memstore.faces.cli.main\n"
            "print(' '.join(m for m in sys.modules if m.startswith('memstore')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    loaded = {m for m in out if not m.startswith("memstore.faces.cli")}
    assert loaded <= {"memstore", "memstore.faces", "memstore.limits"}, sorted(loaded)


def test_a_cli_add_loads_only_what_it_uses(tmp_path: Path) -> None:
    # A new process per command: `memstore add` loads the memories commands alone (the other
    # groups load when asked for), and the rules' binding only a move of a rule needs.
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    script = (
        "import sys\n"
        "from memstore.faces.cli.main import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(m for m in sys.modules if m.startswith('memstore.')), file=sys.stderr)\n"
    )
    store = ["--store", str(tmp_path / "memory"), "--agent", "alice"]
    for first in (
        ["init"],
        [
            "add",
            "use-ruff",
            "--type",
            "decision",
            "--description",
            "Lint with ruff",
            "--body",
            "Why: fast.",
        ],
    ):
        # (the first add builds the search index, which reads the history's verdicts)
        subprocess.run(
            [sys.executable, "-c", script, *store, *first],
            check=True,
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            *store,
            "add",
            "use-zod",
            "--type",
            "decision",
            "--description",
            "Validate API input with zod",
            "--body",
            "Why: one schema.",
        ],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    assert "added decision/use-zod" in done.stdout
    loaded = set(done.stderr.split()[-1000:])
    cli = {m for m in loaded if m.startswith("memstore.faces.cli.")}
    assert cli == {
        "memstore.faces.cli.main",
        "memstore.faces.cli.common",
        "memstore.faces.cli.completion",
        "memstore.faces.cli.memories",
    }
    assert "memstore.storage.binding" not in loaded


def test_every_command_module_is_where_the_cli_looks_for_it() -> None:
    # A command missing from `WHERE` would not run; one listed in the wrong module neither.
    import importlib

    from memstore.faces.cli.main import WHERE

    found: dict[str, str] = {}
    for module in set(WHERE.values()):
        for command in importlib.import_module(f"memstore.faces.cli.{module}").COMMANDS:
            found[str(command.name)] = module
    assert found == WHERE
