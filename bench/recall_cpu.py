"""Recall's CPU on a repository already indexed: the MCP server's own CPU per `memory_recall`.

    .venv/bin/python bench/recall_cpu.py /tmp/clone-100k [--queries 100] [--in-process]

`bench/scale.py` clones and reindexes before each measure (25 minutes at 100,000 memories on
a busy machine); this asks an existing clone instead (its `memory/` store, index built). The
server is `memstore serve` through the real `mcp` client; its CPU (user + system) is read from
`/proc/PID/stat` around each call, so a shared machine's load does not count (ticks of 10 ms:
the mean is the finer figure). Queries: `bench/scale.py`'s, 2-5 words of `bench/latency.py`'s
vocabulary (seed 11). With `--in-process`, the same recalls in this process (`search.recall`,
the thread's CPU), after the trust verdicts are taken as a server's start takes them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import queries, server_pid  # noqa: E402  (a sibling script, not a package)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def summary(label: str, first: float, calls: list[float]) -> str:
    return (
        f"{label}: first recall {first * 1000:.0f} ms; then p50 {pct(calls, 0.5) * 1000:.1f} ms, "
        f"p95 {pct(calls, 0.95) * 1000:.1f} ms, mean {sum(calls) / len(calls) * 1000:.1f} ms "
        f"({len(calls)} recalls, load average {os.getloadavg()[0]:.1f})"
    )


async def over_mcp(top: Path, qs: list[str]) -> str:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    tag = f"recall-cpu-{os.getpid()}"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memstore", "--store", str(top / "memory"), "serve"],
        env={**os.environ, "MEMSTORE_BENCH_SCALE": tag, "MEMSTORE_AGENT": "agent-01"},
        cwd=str(top),
    )
    calls: list[float] = []
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=600) as client:
            await client.list_tools()
            pid = server_pid(tag)
            if pid is None:
                raise SystemExit("the server's process was not found in /proc")
            started = cpu_seconds(pid)
            wall = time.perf_counter()
            first: float | None = None
            for q in qs:
                before = cpu_seconds(pid)
                result = await client.call_tool("memory_recall", {"query": q})
                if result.is_error:
                    raise SystemExit(f"memory_recall failed: {result.content}")
                if first is None:
                    first, wall = cpu_seconds(pid) - before, time.perf_counter() - wall
                else:
                    calls.append(cpu_seconds(pid) - before)
    assert first is not None
    return (
        f"server start to tools/list: {started:.2f} s CPU; first recall {wall * 1000:.0f} ms wall\n"
        + summary("MCP memory_recall, server CPU", first, calls)
    )


def in_process(top: Path, qs: list[str]) -> str:
    from memstore.search import upkeep as search
    from memstore.search.upkeep import Query
    from memstore.storage.store import Store

    store = Store(top / "memory")
    store.trust.warm()
    t0 = time.thread_time()
    search.recall(store, Query(qs[0]))
    first = time.thread_time() - t0
    search.upkeep(store).watched = True  # as a server whose watcher keeps the index current
    calls: list[float] = []
    for q in qs[1:]:
        t0 = time.thread_time()
        search.recall(store, Query(q))
        calls.append(time.thread_time() - t0)
    return summary("in-process recall, CPU", first, calls)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("top", type=Path, help="a repository whose memory/ store is indexed")
    ap.add_argument("--queries", type=int, default=100, help="recalls after the first")
    ap.add_argument("--in-process", action="store_true", help="in this process, not over MCP")
    args = ap.parse_args()
    qs = queries(args.queries + 1)
    if args.in_process:
        print(in_process(args.top, qs))
    else:
        import anyio

        print(anyio.run(over_mcp, args.top, qs))


if __name__ == "__main__":
    main()
