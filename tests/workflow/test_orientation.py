"""Orientation: who would act and why, where the store is, the hook, the index, the queue."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memstore.git import precommit
from memstore.storage.store import Store
from memstore.workflow.care.orientation import lines, orient
from tests.conftest import as_agent, git


def test_it_says_who_acts_and_where_that_came_from(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert orient(store, flag="alice").identity_from == "--agent"
    monkeypatch.setenv("MEMSTORE_AGENT", "alice")
    assert orient(store, flag=None).identity_from == "$MEMSTORE_AGENT"
    monkeypatch.delenv("MEMSTORE_AGENT")
    git(store.root, "config", "user.name", "Carol")
    by_git = orient(Store(store.root), flag=None)
    assert (by_git.identity, by_git.identity_from) == ("Carol", "git user.name")
    git(store.root, "config", "--unset", "user.name")
    nobody = orient(Store(store.root), flag=None)
    assert nobody.identity is None and "writes need --agent NAME" in lines(nobody)[0]


def test_it_names_store_repository_branch_index_and_queue(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add("mine", type="fact", description="Mine", body="b")
    as_agent(store, "bob").add("theirs", type="fact", description="Theirs", body="b")
    as_agent(store, "bob").add("theirs-2", type="fact", description="Theirs too", body="b")
    monkeypatch.chdir(store.root.parent)
    o = orient(store, flag="alice")
    assert (o.store, o.branch) == ("memory", "main")
    assert (o.awaiting, o.own_drafts) == (2, 1)
    assert o.index.startswith("3 memories")
    text = "\n".join(lines(o))
    assert "2 draft(s) by others await your review" in text and "branch main" in text


def test_it_tells_whether_the_hook_checks_this_store(store: Store, tmp_path: Path) -> None:
    assert not orient(store, flag="alice").hook_ok
    package = Path(precommit.__file__).parents[1]
    precommit.install(store.repo, store.root, sys.executable, package, force=False)
    o = orient(store, flag="alice")
    assert o.hook_ok and "checks this store" in o.hook
    precommit.install(store.repo, store.root, str(tmp_path / "gone" / "python"), package, True)
    broken = orient(store, flag="alice")
    assert not broken.hook_ok and "is gone" in broken.hook
    hook = precommit.hook_path(store.repo)
    hook.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    assert "another tool's hook" in orient(store, flag="alice").hook


def test_doctor_starts_with_the_set_up_on_its_one_screen(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from memstore.faces.cli.main import main

    store.add("port", type="fact", description="The API listens on 8080", body="b")
    monkeypatch.setenv("MEMSTORE_AGENT", "bob")
    done = CliRunner().invoke(main, ["--store", str(store.root), "doctor"])
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert lines[0] == "identity:   bob (from $MEMSTORE_AGENT)"
    assert "1 draft(s) by others await your review" in done.output
    assert len(lines) <= 24  # one screen
    as_json = CliRunner().invoke(main, ["--store", str(store.root), "doctor", "--json"])
    setup = json.loads(as_json.output)["setup"]
    assert (setup["identity"], setup["identity_from"], setup["awaiting"]) == (
        "bob",
        "$MEMSTORE_AGENT",
        1,
    )
