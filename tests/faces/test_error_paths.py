"""Errors speak of the store's files relative to the store, on every face: never the folder
where the server keeps them (over HTTP that is no business of the client's)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from memstore.errors import InvalidMemory, MemoryNotFound
from memstore.faces.cli.main import main
from memstore.storage.store import Store
from tests.http_server import add_token, http_server, mcp_client
from tests.mcp_client import call, text


def test_a_core_message_names_files_relative_to_the_store(store: Store) -> None:
    e = InvalidMemory(f"{store.root / 'decision' / 'x.md'}: broken, see {store.root}")
    assert str(e) == "decision/x.md: broken, see the store"
    assert str(MemoryNotFound(f"no memory named 'x' in {store.root}")) == (
        "no memory named 'x' in the store"
    )


def test_cli_errors_hold_no_absolute_store_path(store: Store) -> None:
    (store.root / "memstore.yaml").write_text("types: 3\n", encoding="utf-8")
    for args in (["show", "nope"], ["list"]):
        done = CliRunner().invoke(main, ["--store", str(store.root), *args])
        assert done.exit_code == 1, done.output
        assert str(store.root) not in done.stderr, done.stderr
        assert done.stderr.startswith("Error: ")


@pytest.mark.anyio
async def test_mcp_errors_hold_no_absolute_store_path(store: Store) -> None:
    result = await call(store, "memory_get", names=["nope"])
    assert result.is_error
    assert str(store.root) not in text(result)
    assert "in the store" in text(result)


@pytest.mark.anyio
async def test_http_errors_hold_no_absolute_store_path(store: Store) -> None:
    token = add_token(store.root, "qa-agent")
    with http_server(store.root) as server:
        async with mcp_client(server, token) as client:
            result = await client.call_tool("memory_get", {"names": ["nope"]})
    assert result.is_error
    assert str(store.root) not in text(result)
