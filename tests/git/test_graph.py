"""The commit-graph's changed-path filters, which make one file's history quick to read in a
long one: found in either form git writes (one file, or a chain of layers), and written only
for a large tree."""

from __future__ import annotations

import pytest

from memstore.git import graph
from memstore.storage.store import Store
from tests.conftest import git


def test_the_filters_are_found_in_a_single_graph_and_in_a_chain(store: Store) -> None:
    for i in range(3):
        store.add(f"m{i}", type="fact", description=f"memory {i}")
    assert not graph.has_filters(store.repo)
    git(store.root, "commit-graph", "write", "--reachable", "--no-changed-paths")
    assert not graph.has_filters(store.repo)  # a graph, but without the filters
    git(store.root, "commit-graph", "write", "--reachable", "--changed-paths")
    assert graph.has_filters(store.repo)
    info = store.root / ".git" / "objects" / "info"
    (info / "commit-graph").unlink()
    git(store.root, "commit-graph", "write", "--reachable", "--split", "--changed-paths")
    assert not (info / "commit-graph").exists()
    assert graph.has_filters(store.repo)  # in a layer of the chain
    for layer in (info / "commit-graphs").glob("*.graph"):
        layer.chmod(0o644)
        layer.write_bytes(b"not a graph")
    assert not graph.has_filters(store.repo)


def test_filters_are_written_for_a_large_tree_only(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(4):
        store.add(f"m{i}", type="fact", description=f"memory {i}")
    size = (store.root / ".git" / "index").stat().st_size
    monkeypatch.setattr(graph, "LARGE_INDEX", size + 1)
    assert not graph.ensure(store.repo)
    assert not (store.root / ".git" / "objects" / "info" / "commit-graph").exists()
    monkeypatch.setattr(graph, "LARGE_INDEX", size)
    assert graph.ensure(store.repo)
    assert graph.has_filters(store.repo)
    git(store.root, "commit-graph", "verify")
    git(store.root, "fsck", "--strict")
