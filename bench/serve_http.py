"""`serve --http` against stdio, many HTTP writers, and the console's server time.

    .venv/bin/python bench/serve_http.py [--recall-size 1000] [--queries 200] [--clients 8]
        [--writes 50] [--console-size 10000] [--page-runs 20]

1. Recall: one store, one stdio server and one HTTP server on it, the same queries sent to each
   in alternation through the SDK's client; p50/p95 of the round trip and their ratio.
2. Writers: N HTTP clients, each with its own token, each `memory_store` M drafts at once;
   counts the writes lost (no file or no commit by that identity) and the 5xx answers.
3. Console: a store of K memories; each page fetched by a signed-in human, several times; the
   median `Server-Timing` the server reports (rendering only, no network).

Stores are generated as in bench/latency.py, in temporary folders. The figures are medians:
on a loaded machine they read high, the ratio in (1) less so, as both run side by side.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.latency import GIT_ENV, generate  # noqa: E402
from memstore.faces import bearer  # noqa: E402
from memstore.search import upkeep as search
from memstore.storage.store import Store  # noqa: E402
from tests.http_server import http_server  # noqa: E402

ENV = {**os.environ, **GIT_ENV, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}


def ms(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


@asynccontextmanager
async def http_client(url: str, token: str, fives: list[int]) -> AsyncIterator[Client]:
    async def count(response: httpx2.Response) -> None:
        if response.status_code >= 500:
            fives.append(response.status_code)

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(60, read=300),
        event_hooks={"response": [count]},
    )
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        yield client


def recall(root: Path, queries: int) -> None:
    store, text = generate(root, args.recall_size)
    search.reindex(store)
    words = [text.sample(2) for _ in range(queries)]
    token = bearer.add(store.cache, "bench")
    fives: list[int] = []
    with http_server(root) as server:

        async def run() -> tuple[list[float], list[float]]:
            stdio = StdioServerParameters(
                command=sys.executable,
                args=["-m", "memstore", "--store", str(root), "serve"],
                env={**ENV, "MEMSTORE_AGENT": "bench"},
            )
            over_stdio: list[float] = []
            over_http: list[float] = []
            async with Client(stdio) as a, http_client(server.mcp, token, fives) as b:
                for client in (a, b):  # warm both: first search, index open, caches
                    for q in words[:10]:
                        await client.call_tool("memory_recall", {"query": q})
                for q in words:
                    for client, into in ((a, over_stdio), (b, over_http)):
                        t0 = time.perf_counter()
                        result = await client.call_tool("memory_recall", {"query": q})
                        into.append(time.perf_counter() - t0)
                        assert not result.is_error
            return over_stdio, over_http

        over_stdio, over_http = anyio.run(run)
    p50s, p50h = ms(over_stdio, 0.5), ms(over_http, 0.5)
    print(f"recall, {args.recall_size} memories, {queries} queries each, alternating:")
    print(f"  stdio p50 {p50s:.2f} ms  p95 {ms(over_stdio, 0.95):.2f} ms")
    print(f"  http  p50 {p50h:.2f} ms  p95 {ms(over_http, 0.95):.2f} ms")
    print(f"  http/stdio p50 ratio {p50h / p50s:.2f} (target <= 1.5)  5xx: {len(fives)}")


def writers(root: Path, clients: int, writes: int) -> None:
    store = Store.init(root, agent="bench")
    names = [f"agent-{i}" for i in range(clients)]
    secrets = {n: bearer.add(store.cache, n) for n in names}
    fives: list[int] = []
    errors: list[str] = []
    with http_server(root) as server:

        async def work(name: str) -> None:
            async with http_client(server.mcp, secrets[name], fives) as client:
                for i in range(writes):
                    result = await client.call_tool(
                        "memory_store",
                        {"name": f"{name}-{i}", "type": "decision", "description": f"{name} {i}"},
                    )
                    if result.is_error:
                        errors.append(str(result.content))

        async def run() -> float:
            t0 = time.perf_counter()
            async with anyio.create_task_group() as group:
                for n in names:
                    group.start_soon(work, n)
            return time.perf_counter() - t0

        took = anyio.run(run)
    import subprocess

    log = subprocess.run(
        ["git", "log", "--format=%an|%s"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    committed = {
        (line.split("|")[0], line.split("/", 1)[1].split(" ")[0])
        for line in log
        if "memory: add" in line
    }
    lost = [
        (n, i)
        for n in names
        for i in range(writes)
        if (n, f"{n}-{i}") not in committed or not (root / "decision" / f"{n}-{i}.md").exists()
    ]
    total = clients * writes
    print(f"writers: {clients} HTTP clients x {writes} memory_store, at once:")
    print(
        f"  {total} writes in {took:.1f} s ({total / took:.1f}/s); lost {len(lost)}, "
        f"5xx {len(fives)}, tool errors {len(errors)}"
    )
    for e in errors[:3]:
        print(f"  error: {e[:200]}")


def console(root: Path, size: int, runs: int) -> None:
    store, _ = generate(root, size)
    search.reindex(store)
    token = bearer.add(store.cache, "reviewer", human=True)
    first = next(iter(sorted((root / "decision").glob("*.md")))).stem
    pages = {
        "inbox": "/console/",
        "search": "/console/search?q=deploy+cache&status=draft",
        "search by owner": "/console/search?owner=alice&type=decision",
        "memory": f"/console/memory/{first}",
        "ledger": "/console/ledger",
        "health": "/console/health",
    }
    print(f"console, {size} memories, median of {runs} (server time from Server-Timing):")
    with http_server(root) as server, httpx2.Client(timeout=120) as http:
        http.post(f"{server.url}/console/login", data={"token": token})
        for label, path in pages.items():
            took: list[float] = []
            for i in range(runs + 1):
                answer = http.get(server.url + path)
                assert answer.status_code == 200, (path, answer.status_code)
                found = re.search(r"dur=([\d.]+)", answer.headers["server-timing"])
                assert found
                if i:  # the first one warms caches (index, trust)
                    took.append(float(found[1]))
            print(f"  {label:16} median {statistics.median(took):7.1f} ms  max {max(took):7.1f} ms")


parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
parser.add_argument("--recall-size", type=int, default=1000)
parser.add_argument("--queries", type=int, default=200)
parser.add_argument("--clients", type=int, default=8)
parser.add_argument("--writes", type=int, default=50)
parser.add_argument("--console-size", type=int, default=10_000)
parser.add_argument("--page-runs", type=int, default=20)
parser.add_argument("--only", choices=["recall", "writers", "console"])
args = parser.parse_args()

if __name__ == "__main__":
    print(f"{platform.node()} · {os.cpu_count()} cores · Python {platform.python_version()}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "recall"):
            recall(Path(tmp) / "recall", args.queries)
        if args.only in (None, "writers"):
            writers(Path(tmp) / "writers", args.clients, args.writes)
        if args.only in (None, "console"):
            console(Path(tmp) / "console", args.console_size, args.page_runs)
