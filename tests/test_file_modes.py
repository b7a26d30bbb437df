"""Files memstore creates get the usual mode (0666 less the umask), never a program's."""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

from click.testing import CliRunner

from memstore.faces.cli.main import main
from memstore.storage.store import Store
from tests.conftest import REPO


def test_every_os_open_that_creates_names_a_mode() -> None:
    """`os.open(path, … O_CREAT …)` without a mode creates the file 0777 less the umask. Flags
    held in a variable count as creating when the function that opens names O_CREAT."""
    found = []
    for path in sorted((REPO / "memstore").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            creating = "O_CREAT" in ast.unparse(function)
            for node in ast.walk(function):
                if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "os.open"):
                    continue
                flags = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
                named = "O_CREAT" in flags or (creating and "O_" not in flags)
                if named and len(node.args) < 3 and not node.keywords:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not found, f"os.open creating a file without a mode: {sorted(set(found))}"


def test_the_recall_counter_is_created_like_any_other_file(store: Store) -> None:
    store.add("use-zod", type="decision", description="Validate input with zod", body="b")
    old = os.umask(0o022)
    try:
        done = CliRunner().invoke(main, ["--store", str(store.root), "search", "zod"])
    finally:
        os.umask(old)
    assert done.exit_code == 0, done.output
    mode = stat.S_IMODE((store.root / ".memstore" / "recalls.log").stat().st_mode)
    assert mode == 0o644, oct(mode)


def test_new_files_have_no_execute_bit(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        store = Store.init(tmp_path / "memory", agent="alice")
        store.add("use-zod", type="decision", description="Validate input with zod", body="b")
        CliRunner().invoke(main, ["--store", str(store.root), "search", "zod"])
    finally:
        os.umask(old)
    programs = [
        str(p.relative_to(store.root))
        for p in store.root.rglob("*")
        if p.is_file()
        and p.stat().st_mode & 0o111
        # git's files are git's; Whoosh makes its own lock files in the index folder.
        and not {".git", "index"} & set(p.relative_to(store.root).parts)
    ]
    assert not programs, programs
