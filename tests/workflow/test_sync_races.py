"""Sync merging status moves made at once on two machines: a `forget` racing an `edit` keeps
the memory's owner, and a deprecation racing a confirmation keeps the deprecation's reason at
HEAD (for review, as any conflicting edit). Two real clones of a real git server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.model.memory import parse
from memstore.storage.store import Store
from memstore.workflow.care import lint
from memstore.workflow.ledger import sync
from tests.gitserver import GitServer, git


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GitServer]:
    (tmp_path / "srv").mkdir()
    found = GitServer(tmp_path / "srv").start()
    yield found
    found.kill()


@pytest.fixture
def pair(tmp_path: Path, server: GitServer) -> tuple[Store, Store]:
    """Clone a (alice) and clone b (bob), with carol's `cache-ttl` on both."""
    a = Store.init(tmp_path / "a", agent="alice")
    git(a.root, "remote", "add", "origin", server.url)
    Store(a.root, agent="carol").add(
        "cache-ttl", type="decision", description="The cache TTL", body="TTL is 60s.\n"
    )
    sync.sync(a)
    b = Store(server.clone(tmp_path / "b"), agent="bob")
    return a, b


def problems(store: Store) -> list[str]:
    return [str(p) for p in lint.lint_store(store)]


PATH = "decision/cache-ttl.md"


@pytest.mark.parametrize("merger", ["a", "b"])
def test_a_forget_racing_an_edit_keeps_the_owner_whoever_merges(
    pair: tuple[Store, Store], merger: str
) -> None:
    a, b = pair
    a.forget("cache-ttl", "no longer used")
    b.edit("cache-ttl", body="TTL is 90s.\n")
    first, second = (b, a) if merger == "a" else (a, b)
    sync.sync(first)
    result = sync.sync(second)
    assert result.conflicts == (PATH,)
    sync.sync(first)
    for clone in (a, b):
        kept = Store(clone.root, agent="dave").get("cache-ttl")
        assert kept.owner == "carol"
        assert "TTL is 90s." in kept.body and "Sync conflict" in kept.body
        assert problems(clone) == []
    log = git(second.root, "log", "--format=%an", "--", PATH).split()
    assert "carol" in log


@pytest.mark.parametrize("merger", ["a", "b"])
def test_a_deprecation_racing_a_confirmation_keeps_its_reason_for_review(
    pair: tuple[Store, Store], merger: str
) -> None:
    a, b = pair
    Store(a.root, agent="erin").deprecate("cache-ttl", "wrong: the TTL is one minute")
    b.confirm("cache-ttl", "checked the config")
    first, second = (b, a) if merger == "a" else (a, b)
    sync.sync(first)
    result = sync.sync(second)
    assert result.conflicts == (PATH,)
    sync.sync(first)
    for clone in (a, b):
        text = (clone.root / PATH).read_text(encoding="utf-8")
        kept = parse(text)
        assert kept.status == "draft"
        assert "wrong: the TTL is one minute" in kept.body and "erin" in kept.body
        assert "deprecated" in kept.body
        assert Store(clone.root, agent="dave").get("cache-ttl").status == "draft"
        assert problems(clone) == []
