"""How big is memstore's tools/list, and how long until a client gets it on a large store?

Usage:  .venv/bin/python bench/server_startup.py [--sizes 0,1000,10000] [--repeat 5]

For each store size it generates a store of that many memories (one commit), then spawns
`python -m memstore --store DIR serve` the way an MCP client does and times spawn → initialize →
the first tools/list response: once with no search index yet (the server's watcher builds it in
the background), then, after a full reindex, the median of several restarts with the index
persisted. It prints the
tools/list payload in bytes (the JSON-RPC result, compact JSON) for the default and the grouped
surface, with the machine and the Python used.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import ListToolsResult

from memstore.faces.server import build_server
from memstore.model.memory import Memory, render
from memstore.search import upkeep as search
from memstore.storage.store import Store

ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
WORDS = (
    "deploy cache index retry timeout queue schema migration token quota rollback canary "
    "autoscaler latency replica shard backup restore webhook invoice payment session cookie"
).split()


def generate(root: Path, count: int) -> Store:
    """A store at `root` with `count` memories of varied words, committed at once."""
    store = Store.init(root, agent="bench")
    for i in range(count):
        words = [WORDS[(i * k + 3) % len(WORDS)] for k in (1, 3, 7, 11)]
        memory = Memory(
            name=f"m{i:05d}-{words[0]}",
            description=f"{words[0]} {words[1]}: how we handle {words[2]} for service {i % 97}",
            type=("decision", "runbook", "fact", "warning")[i % 4],
            status=("draft", "confirmed")[i % 2],
            owner="bench",
            created="2026-11-01T00:00:00Z",
            updated="2026-11-01T00:00:00Z",
            tags=(words[3],),
            body=f"When {words[1]} fails, check {words[2]} first. " * 5,
            confirmed_by="reviewer" if i % 2 else None,
        )
        folder = root / memory.type
        folder.mkdir(exist_ok=True)
        (folder / f"{memory.name}.md").write_text(render(memory), encoding="utf-8", newline="\n")
    if count:
        env = {
            **os.environ,
            **ENV,
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "b@x",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "b@x",
        }
        subprocess.run(["git", "add", "-A"], cwd=root, env=env, check=True)
        subprocess.run(["git", "commit", "-qm", "bench"], cwd=root, env=env, check=True)
    return store


async def payload_bytes(store: Store, grouped: bool) -> tuple[int, int]:
    async with Client(build_server(store, grouped=grouped)) as client:
        listed = await client.list_tools()
    wire = ListToolsResult(tools=listed.tools).model_dump_json(by_alias=True, exclude_none=True)
    return len(listed.tools), len(wire.encode("utf-8"))


async def first_tools_list(root: Path) -> float:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memstore", "--store", str(root), "serve"],
        env={**ENV, "MEMSTORE_AGENT": "bench"},
    )
    start = time.perf_counter()
    async with Client(params, read_timeout_seconds=300) as client:
        await client.list_tools()
        took = time.perf_counter() - start
    return took


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="0,1000,10000")
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()
    os.environ.update(ENV)
    print(f"machine: {platform.machine()} {os.cpu_count()} cpu, {platform.platform()}")
    print(f"python {platform.python_version()}, mcp {metadata.version('mcp')}")
    with tempfile.TemporaryDirectory() as tmp:
        small = generate(Path(tmp) / "small", 0)
        for grouped in (False, True):
            tools, size = await payload_bytes(small, grouped)
            mode = "grouped" if grouped else "default"
            print(f"tools/list {mode:8}: {tools:2} tools, {size} bytes")
        for count in (int(s) for s in opts.sizes.split(",")):
            root = Path(tmp) / f"store-{count}"
            t0 = time.perf_counter()
            generate(root, count)
            made = time.perf_counter() - t0
            first = await first_tools_list(root)
            t0 = time.perf_counter()
            search.reindex(Store(root))  # what the first server's watcher does in the background
            built = time.perf_counter() - t0
            warm = [await first_tools_list(root) for _ in range(opts.repeat)]
            ms = [w * 1000 for w in warm]
            print(
                f"{count:6} memories (generated in {made:.1f} s, indexed in {built:.1f} s): "
                f"first tools/list {first * 1000:.0f} ms with no index yet; with the index "
                f"persisted, median {statistics.median(ms):.0f} ms (min {min(ms):.0f}, max "
                f"{max(ms):.0f}) over {opts.repeat} restarts"
            )


if __name__ == "__main__":
    anyio.run(main)
