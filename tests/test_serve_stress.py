"""Several `memstore serve` processes (one per agent, as MCP clients start them) writing to one
store at once through the real MCP client: every write lands once, no update is lost."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from bench import stress
from memstore.storage.store import Store
from tests.conftest import git
from tests.mcp_client import serve, text

pytestmark = pytest.mark.anyio

SERVERS, ADDS, UPDATES = 4, 6, 6


async def _agent(root: Path, n: int, tokens: list[tuple[str, str]]) -> None:
    async with serve(
        root, f"agent-{n}", timeout=120, env={"MEMSTORE_LOCK_TIMEOUT": "120"}
    ) as client:
        for i in range(ADDS):
            saved = await client.call_tool(
                "memory_store",
                {"name": f"s{n}-{i}", "type": "fact", "description": f"fact {i} by agent-{n}"},
            )
            assert not saved.is_error, text(saved)
        for i in range(UPDATES):
            # Everyone appends to the same shared memory: the lost-update case.
            token = f"tokserve{n}x{i}"
            for _ in range(50):
                got = await client.call_tool("memory_get", {"names": ["shared"]})
                assert got.structured_content is not None
                current = got.structured_content["memories"][0]
                updated = await client.call_tool(
                    "memory_update",
                    {
                        "name": "shared",
                        "version": current["version"],
                        "body": (current["body"] + "\n" + token).strip("\n"),
                    },
                )
                if not updated.is_error:
                    tokens.append(("shared", token))
                    break
                assert "changed since you read it" in text(updated), text(updated)
            else:
                raise AssertionError(f"{token}: never got through")


async def test_several_servers_writing_at_once_lose_no_write_and_no_update(
    tmp_path: Path,
) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="setup").add("shared", type="fact", description="everyone appends")
    tokens: list[tuple[str, str]] = []
    async with anyio.create_task_group() as group:
        for n in range(SERVERS):
            group.start_soon(_agent, root, n, tokens)
    body = Store(root).read("shared").memory.body.split("\n")
    assert sorted(t for _, t in tokens) == sorted(body)  # every update, once, none lost
    assert len(tokens) == SERVERS * UPDATES
    files = stress.memory_files(root)
    assert len(files) == 1 + SERVERS * ADDS
    commits = git(root, "rev-list", "--count", "HEAD").strip()
    assert int(commits) == 2 + SERVERS * (ADDS + UPDATES)  # init, shared, one per change
    assert git(root, "status", "--porcelain") == ""
    git(root, "fsck", "--strict")
