"""What the CLI says is what it does: counts in their number, an import's skips by reason,
export's help promising only what import does, and whose identity `serve` acts as."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from memstore.faces.cli.main import main
from memstore.storage.store import Store
from tests.conftest import REPO, git


def cli(store: Path, *args: str, agent: str = "alice") -> tuple[int, str, str]:
    done = CliRunner().invoke(main, ["--store", str(store), "--agent", agent, *args])
    return done.exit_code, done.stdout, done.stderr


def test_an_import_says_a_deprecated_memory_was_left_out_as_deprecated(
    store: Store, tmp_path: Path
) -> None:
    store.add("old-way", type="decision", description="Validate input by hand", body="b")
    store.deprecate("old-way", "zod now")
    exported = tmp_path / "export.jsonl"
    assert cli(store.root, "export", "--output", str(exported))[0] == 0
    other = Store.init(tmp_path / "other" / "memory", agent="bob")
    code, out, err = cli(other.root, "import", str(exported), agent="bob")
    assert code == 0, err
    assert "skipped 1 deprecated (--exact keeps them)" in out
    assert "already in the store" not in out


def test_export_help_promises_the_byte_for_byte_round_trip_of_import_exact_only() -> None:
    done = CliRunner().invoke(main, ["export", "--help"])
    text = " ".join(done.output.split())
    assert "import --exact` of the export in another store writes the same files" in text
    assert "import --exact restores it" in text


def test_lint_says_one_memory(store: Store) -> None:
    store.add("use-zod", type="decision", description="Validate input with zod", body="b")
    code, out, _ = cli(store.root, "lint")
    assert code == 0
    assert out == "ok: 1 memory, no problems\n"


def test_serve_says_when_it_acts_as_the_persons_git_user_name(store: Store) -> None:
    git(store.root, "config", "user.name", "Dana Person")
    env = {k: v for k, v in os.environ.items() if k != "MEMSTORE_AGENT"}
    done = subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(store.root), "serve"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "the agent acts as 'Dana Person', git's user.name" in done.stderr
    assert "MEMSTORE_AGENT=NAME" in done.stderr
    named = subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(store.root), "serve"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(REPO), "MEMSTORE_AGENT": "claude-code"},
        timeout=60,
    )
    assert "git's user.name" not in named.stderr
