"""Shared helpers for tests that talk to memstore through the real `mcp` client."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, ReadResourceResult, TextContent, TextResourceContents

from memstore.faces.server import build_server
from memstore.storage.store import Store


def text(result: CallToolResult) -> str:
    """The text of a tool result's first content block."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def resource_text(result: ReadResourceResult) -> str:
    """The text of a resource read's first content block."""
    block = result.contents[0]
    assert isinstance(block, TextResourceContents)
    return block.text


def data(result: CallToolResult) -> dict[str, Any]:
    """The structured content of a successful tool result."""
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return result.structured_content


async def call(store: Store, tool: str, **arguments: Any) -> CallToolResult:
    """Call one tool on an in-memory server over `store`."""
    async with Client(build_server(store, watch=False), raise_exceptions=True) as client:
        return await client.call_tool(tool, arguments)


@asynccontextmanager
async def serve(
    store: Path,
    agent: str,
    *,
    timeout: float = 30,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> AsyncIterator[Client]:
    """A `memstore serve` process on `store` acting as `agent`, as a client's config starts it."""
    server_env = {
        **({"MEMSTORE_AGENT": agent} if agent else {}),  # none: git's user.name acts
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
        **(env or {}),
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memstore", "--store", str(store), "serve", *args],
        env=server_env,
    )
    async with Client(params, read_timeout_seconds=timeout) as client:
        yield client
