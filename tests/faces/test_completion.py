"""Shell completion of memory names, types, tags and identities, from what the store keeps
(the catalog, the index, the kept identities): no memory file is read, no git runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.faces.cli import completion
from memstore.faces.cli.main import main
from memstore.storage.store import Store
from memstore.workflow.care import catalog
from tests.conftest import processes_started


def complete(store: Path, line: str) -> list[str]:
    """What bash completion offers for the last word of `line` (after `memstore`)."""
    words = ["memstore", "--store", str(store), *line.split(" ")]
    done = CliRunner().invoke(
        main,
        prog_name="memstore",
        env={
            "_MEMSTORE_COMPLETE": "bash_complete",
            "COMP_WORDS": " ".join(words),
            "COMP_CWORD": str(len(words) - 1),
        },
    )
    assert done.exit_code == 0, done.output
    rows = [row for row in done.stdout.splitlines() if row]
    assert all("," in row for row in rows), repr(done.stdout)
    return [row.split(",", 1)[1] for row in rows]


@pytest.fixture
def filled(store: Store) -> Store:
    store.add("use-zod", type="decision", description="Validate with zod", tags=("api", "zod"))
    store.add("use-ruff", type="decision", description="Lint with ruff", tags=("python",))
    store.add("port-8080", type="fact", description="The API port", tags=("api",))
    # `list` fills the catalog (names), a search the index (tags), as a store in use has them.
    for command in (["list"], ["search", "zod"]):
        assert CliRunner().invoke(main, ["--store", str(store.root), *command]).exit_code == 0
    return store


def test_memory_names_complete_from_the_catalog(
    filled: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The catalog answers: a file that no longer parses is not read to complete its name.
    (filled.root / "decision" / "use-ruff.md").write_text("garbage", encoding="utf-8")
    started = processes_started(monkeypatch)
    assert complete(filled.root, "show use-") == ["use-ruff", "use-zod"]
    assert complete(filled.root, "confirm p") == ["port-8080"]
    assert complete(filled.root, "deprecate use-zod use-r") == ["use-ruff"]
    assert complete(filled.root, "add x --type fact --links port-8080,use-z") == [
        "port-8080,use-zod"
    ]
    assert complete(filled.root, "add use") == []  # a new name
    assert started == []


def test_memory_names_complete_from_the_folders_without_a_catalog(store: Store) -> None:
    store.add("use-zod", type="decision", description="Validate with zod")
    (store.cache / completion.CATALOG).unlink(missing_ok=True)
    assert complete(store.root, "show us") == ["use-zod"]


def test_types_tags_and_identities_complete(filled: Store) -> None:
    (filled.root / "memstore.yaml").write_text("types: [runbook]\n", encoding="utf-8")
    assert "runbook" in complete(filled.root, "list --type ")
    assert complete(filled.root, "retype use-zod f") == ["fact"]
    assert complete(filled.root, "list --tag a") == ["api"]
    assert complete(filled.root, "add x --tags zod,p") == ["zod,python"]
    assert complete(filled.root, "--agent al") == ["alice"]
    assert complete(filled.root, "search x --owner a") == ["alice"]


def test_the_catalog_file_is_the_catalogs() -> None:
    assert completion.CATALOG == catalog.FILE


def test_completion_of_an_unreadable_store_offers_nothing(tmp_path: Path) -> None:
    assert complete(tmp_path / "nowhere", "show u") == []
    assert complete(tmp_path / "nowhere", "list --tag a") == []
