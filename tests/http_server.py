"""A real `memstore serve --http` process for tests, and MCP clients that talk to it."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from memstore.faces import bearer

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Server:
    url: str
    """The base URL, e.g. http://127.0.0.1:40123"""
    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list[str])

    @property
    def mcp(self) -> str:
        return f"{self.url}/mcp"


def add_token(store: Path, name: str, human: bool = False) -> str:
    """A new token for `name` on `store`, as `memstore token add` makes it."""
    return bearer.add(store / ".memstore", name, human=human)


def server_env() -> dict[str, str]:
    return {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTHONPATH": str(ROOT),
    }


@contextmanager
def http_server(store: Path, *args: str) -> Iterator[Server]:
    """`memstore --store STORE serve --http --port 0 ARGS…`, until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memstore", "--store", str(store), "serve", "--http"]
        + ["--port", "0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(),
    )
    found: queue.Queue[str] = queue.Queue()
    lines: list[str] = []

    def drain() -> None:  # keep reading, so the server never blocks on a full pipe
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            found.put(line)
        found.put("")

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        first = found.get(timeout=60)
        match = re.search(r"at (http://[^ ]+):(\d+)/mcp", first)
        assert match, f"the server did not start: {first}{''.join(lines)}"
        yield Server(f"{match[1]}:{match[2]}", proc, lines)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=20)
        assert proc.stderr is not None
        proc.stderr.close()


@asynccontextmanager
async def mcp_client(server: Server, token: str) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, sending `token` as its bearer token."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, Client(streamable_http_client(server.mcp, http_client=http)) as client:
        yield client
