"""How many bytes does a client receive for memstore's tools/list, and which tool costs what?

Usage:  .venv/bin/python bench/tools_list.py [--grouped]

Spawns `python -m memstore --store DIR serve` on a fresh store the way an MCP client does, sends
`initialize` and `tools/list` as JSON-RPC lines, and prints the size of the `result` of the
tools/list answer exactly as the server wrote it on stdout (the bytes every client pays for in
every session), the same list as the SDK's own client hands it over (re-serialised), then each
tool's share (its compact JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import ListToolsResult

from memstore.storage.store import Store

HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench"}}


def wire_tools_list(root: Path, grouped: bool) -> bytes:
    """The `result` of tools/list as `memstore serve` sends it, byte for byte."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    command = [sys.executable, "-m", "memstore", "--store", str(root), "serve"]
    if grouped:
        command.append("--grouped")
    env = {**os.environ, "MEMSTORE_AGENT": "bench", "GIT_CONFIG_GLOBAL": os.devnull}
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env) as p:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(("\n".join(json.dumps(m) for m in lines) + "\n").encode("utf-8"))
        p.stdin.flush()
        try:
            for line in p.stdout:
                message = json.loads(line)
                if message.get("id") == 2:
                    head = b'{"jsonrpc":"2.0","id":2,"result":'
                    assert line.startswith(head), line[:80]
                    return line[len(head) : line.rindex(b"}")]
        finally:
            p.stdin.close()
            p.wait(30)
    raise SystemExit("no tools/list answer")


async def client_tools_list(root: Path, grouped: bool) -> int:
    """The size of tools/list as the SDK's client returns it, serialised as compact JSON."""
    args = ["-m", "memstore", "--store", str(root), "serve", *(["--grouped"] if grouped else [])]
    env = {**os.environ, "MEMSTORE_AGENT": "bench", "GIT_CONFIG_GLOBAL": os.devnull}
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    async with Client(params, read_timeout_seconds=120) as client:
        listed = await client.list_tools()
    wire = ListToolsResult(tools=listed.tools).model_dump_json(by_alias=True, exclude_none=True)
    return len(wire.encode("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grouped", action="store_true")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        Store.init(root, agent="bench")
        result = wire_tools_list(root, opts.grouped)
        through_client = anyio.run(client_tools_list, root, opts.grouped)
    tools = json.loads(result)["tools"]
    mode = "grouped" if opts.grouped else "default"
    print(f"tools/list ({mode}): {len(tools)} tools, {len(result)} bytes as sent")
    print(f"  as the SDK's client returns it, compact JSON: {through_client} bytes")
    for tool in tools:
        size = len(json.dumps(tool, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
        print(f"  {tool['name']:16} {size:5} bytes")


if __name__ == "__main__":
    main()
