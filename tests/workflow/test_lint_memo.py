"""`lint` with its per-file memo finds what a fresh run finds, whatever changed since the memo
was kept: a hand edit in place, files added, removed or renamed, the settings, a credential."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.faces.cli.main import main
from memstore.storage.store import Store
from memstore.workflow.care import lint
from tests.conftest import as_agent

TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


@pytest.fixture
def linted(store: Store, monkeypatch: pytest.MonkeyPatch) -> Store:
    """A store of a few memories, one linking to another, and a clock past their stamps'
    tick (so the memo keeps each file by its stamp, as it does for files not just saved)."""
    store.add("alpha", type="fact", description="The first fact", links=[])
    store.add("beta", type="fact", description="The second fact", links=["alpha"])
    store.add("gamma", type="decision", description="A decision taken")
    as_agent(store, "bob").confirm("gamma", "checked")
    later = time.time_ns() + 3_600 * 10**9
    monkeypatch.setattr(lint, "_clock", lambda: later)
    return store


def memoed(store: Store) -> tuple[list[str], lint.FileMemo]:
    memo = lint.FileMemo(store)
    return [str(p) for p in lint.lint(store, memo=memo).problems], memo


def fresh(store: Store) -> list[str]:
    """What a run with nothing kept finds (a fresh clone, or `--no-cache`)."""
    return [str(p) for p in lint.lint(store, whole=True).problems]


def cli(store: Store, *args: str) -> tuple[int, list[str]]:
    """`memstore lint`'s exit code and the lines it prints."""
    result = CliRunner().invoke(main, ["--store", str(store.root), "lint", *args])
    return result.exit_code, result.output.splitlines()


def test_an_unchanged_store_is_not_read_again(linted: Store) -> None:
    assert memoed(linted)[0] == []
    found, memo = memoed(linted)
    assert found == [] and memo.read == 0
    assert len(memo.memories) == 3


def test_a_hand_edit_in_place_keeping_size_and_mtime_is_found(linted: Store) -> None:
    memoed(linted)
    path = linted.root / "fact" / "alpha.md"
    before = path.stat()
    data = path.read_bytes()
    with path.open("r+b") as f:  # the same inode, the same size
        f.write(data.replace(b"type: fact", b"type: fict"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    found, memo = memoed(linted)
    assert any("unknown type 'fict'" in m for m in found), found
    assert found == fresh(linted)
    assert memo.read == 1


def test_a_file_edited_within_its_timestamps_tick_is_read_again(
    linted: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lint, "_clock", time.time_ns)  # the files were saved just now
    path = linted.root / "fact" / "alpha.md"
    path.write_bytes(path.read_bytes().replace(b"The first fact", b"The frist fact"))
    before = path.stat()
    assert memoed(linted)[0] == []  # read within the tick: kept by its blob only
    with path.open("r+b") as f:  # edited again in the same tick, its stamp put back
        f.write(path.read_bytes().replace(b"type: fact", b"type: fict"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    found, memo = memoed(linted)
    assert any("unknown type 'fict'" in m for m in found), found
    assert found == fresh(linted)
    assert memo.read >= 1 and memo.parsed == 1  # the unchanged files' blobs matched


def test_a_touched_file_is_read_but_not_checked_again(linted: Store) -> None:
    memoed(linted)
    os.utime(linted.root / "fact" / "beta.md")
    found, memo = memoed(linted)
    assert found == [] and (memo.read, memo.parsed) == (1, 0)


def test_files_added_removed_and_renamed_are_found_across_files(linted: Store) -> None:
    assert memoed(linted)[0] == []
    root = linted.root
    shutil.copy(root / "fact" / "alpha.md", root / "decision" / "alpha.md")  # added
    (root / "fact" / "alpha.md").unlink()  # removed: beta links to it
    (root / "decision" / "gamma.md").rename(root / "decision" / "delta.md")  # renamed
    found, memo = memoed(linted)
    assert found == fresh(linted)
    assert any("type 'fact' does not match its folder 'decision/'" in m for m in found), found
    assert any("name 'gamma' does not match the file name 'delta.md'" in m for m in found)
    assert memo.read == 2  # the added and the renamed file; beta came from the memo
    shutil.copy(root / "decision" / "alpha.md", root / "fact" / "alpha.md")
    found, memo = memoed(linted)
    assert any("duplicate name 'alpha'" in m for m in found), found
    assert found == fresh(linted)
    assert memo.read == 1


def test_a_removed_link_target_is_found_with_the_linking_file_unread(linted: Store) -> None:
    memoed(linted)
    (linted.root / "fact" / "alpha.md").unlink()
    found, memo = memoed(linted)
    assert "fact/beta.md: links names 'alpha', which is not in the store" in found
    assert found == fresh(linted)
    assert memo.read == 0


def test_a_secret_pattern_setting_checks_every_file_again(linted: Store) -> None:
    memoed(linted)
    (linted.root / "memstore.yaml").write_text(
        "secret_patterns:\n  decision word: 'decision taken'\n", encoding="utf-8"
    )
    found, memo = memoed(Store(linted.root, agent="alice"))
    assert any("decision word" in m for m in found), found
    assert found == fresh(Store(linted.root, agent="alice"))
    assert memo.read == 3


def test_adding_a_type_checks_every_file_again(linted: Store) -> None:
    (linted.root / "note").mkdir()
    (linted.root / "note" / "n.md").write_text(
        (linted.root / "fact" / "alpha.md")
        .read_text(encoding="utf-8")
        .replace("name: alpha", "name: n")
        .replace("type: fact", "type: note"),
        encoding="utf-8",
    )
    assert any("unknown type 'note'" in m for m in memoed(linted)[0])
    (linted.root / "memstore.yaml").write_text("types: [note]\n", encoding="utf-8")
    typed = Store(linted.root, agent="alice")
    found, memo = memoed(typed)
    assert not any("unknown type" in m for m in found), found
    assert found == fresh(typed)
    assert memo.read == 4


def test_a_pasted_credential_is_found(linted: Store) -> None:
    memoed(linted)
    path = linted.root / "fact" / "beta.md"
    path.write_text(path.read_text(encoding="utf-8") + f"\ntoken {TOKEN}\n", encoding="utf-8")
    found, memo = memoed(linted)
    assert any(m.startswith("fact/beta.md: body looks like it holds a credential") for m in found)
    assert found == fresh(linted)
    assert memo.read == 1


def test_a_memo_of_other_checking_code_is_not_used(
    linted: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    memoed(linted)
    monkeypatch.setattr(lint, "checker_digest", lambda: "other code")
    assert memoed(linted)[1].read == 3


def test_the_cli_reports_the_same_warm_as_with_no_cache(linted: Store) -> None:
    path = linted.root / "fact" / "beta.md"
    path.write_text(path.read_text(encoding="utf-8") + f"\n{TOKEN}\n", encoding="utf-8")
    (linted.root / "fact" / "bad.md").write_text("no front matter\n", encoding="utf-8")
    cold = cli(linted, "--no-cache")
    assert cold[0] == 1 and len(cold[1]) == 3, cold
    assert cold[1][-1] == "Error: 2 problems in 2 files"
    assert (linted.root / ".memstore" / lint.MEMO_FILE).is_file()
    assert cli(linted) == cold
    assert cli(linted, "--no-cache") == cold


def test_no_cache_replays_the_whole_history(linted: Store) -> None:
    assert cli(linted)[0] == 0
    kept = linted.cache / "lint-trust.json"
    written = kept.stat().st_mtime_ns
    assert cli(linted)[0] == 0
    assert kept.stat().st_mtime_ns == written  # the kept replay served
    assert cli(linted, "--no-cache")[0] == 0
    assert kept.stat().st_mtime_ns != written


def test_a_memo_that_cannot_be_read_is_set_aside(linted: Store) -> None:
    memoed(linted)
    file: Path = linted.cache / lint.MEMO_FILE
    file.write_bytes(b"\x00garbage")
    found, memo = memoed(linted)
    assert found == [] and memo.read == 3
