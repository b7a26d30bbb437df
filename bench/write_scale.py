"""A write on a large store: MCP `memory_store` through one server, and `memstore add` in a
new process each, with each call's CPU (the server's own, from /proc, or the child's).

    git clone -q ../stores/scale-100000 /tmp/w100k
    .venv/bin/python bench/write_scale.py --repo /tmp/w100k --writes 40 --adds 5
    .venv/bin/python bench/write_scale.py --repo /tmp/w100k --python ../base/.venv/bin/python

The store is `<repo>/memory`. Every write adds a new memory (a `fact` with generated words), so
run it on a clone. The first writes of a server or of a new identity pay for one-time reads
(the authors' names, the verdicts): `--warmup` writes are made and left out. On a shared
machine read the CPU columns; the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

TAG = "MEMSTORE_BENCH_WRITE"
ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "MEMSTORE_AGENT": "bench-writer",
}
WORDS = (
    "deploy cache index shard replica queue retry schema migration rollout canary "
    "latency budget tenant widget gateway parser checksum ledger quota backoff timeout "
    "lease fence snapshot compaction tombstone bloom filter cursor batch window"
).split()


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def cpu_of(pid: int) -> float:
    """A process's user + system CPU seconds so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(tag: str) -> int:
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"{TAG}={tag}".encode() in environ.read_bytes().split(b"\0"):
                return int(environ.parent.name)
        except OSError:
            continue
    raise RuntimeError("server process not found")


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def summary(label: str, wall: list[float], cpu: list[float]) -> str:
    def ms(values: list[float], q: float) -> str:
        ordered = sorted(values)
        return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.1f}"

    return (
        f"{label}: n={len(wall)} wall p50 {statistics.median(wall) * 1000:.1f} ms "
        f"p95 {ms(wall, 0.95)} ms; CPU p50 {statistics.median(cpu) * 1000:.1f} ms "
        f"mean {statistics.fmean(cpu) * 1000:.1f} ms (load {load()})"
    )


async def mcp_writes(python: str, store: Path, writes: int, warmup: int, seed: int) -> str:
    tag = f"{os.getpid()}-{seed}"
    params = StdioServerParameters(
        command=python,
        args=["-m", "memstore", "--store", str(store), "serve"],
        env={**ENV, TAG: tag, "PATH": os.environ.get("PATH", "")},
        cwd=str(store.parent),
    )
    rng = random.Random(seed)
    wall: list[float] = []
    cpu: list[float] = []
    with open(os.devnull, "w") as errlog:  # noqa: PTH123
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as c:
            await c.list_tools()
            pid = server_pid(tag)
            for i in range(warmup + writes):
                arguments = {
                    "name": f"bench-write-{seed}-{i:03d}",
                    "type": "fact",
                    "description": text(rng, 9),
                    "body": text(rng, 60),
                }
                c0, t0 = cpu_of(pid), time.perf_counter()
                result: CallToolResult = await c.call_tool("memory_store", arguments)
                t1, c1 = time.perf_counter(), cpu_of(pid)
                if result.is_error:
                    block = result.content[0] if result.content else None
                    raise RuntimeError(block.text if isinstance(block, TextContent) else "error")
                if i >= warmup:
                    wall.append(t1 - t0)
                    cpu.append(c1 - c0)
    return summary("MCP memory_store", wall, cpu)


def cli_adds(python: str, store: Path, adds: int, seed: int) -> str:
    rng = random.Random(seed + 1)
    wall: list[float] = []
    cpu: list[float] = []
    env = {**os.environ, **ENV}
    for i in range(adds):
        args = [python, "-m", "memstore", "--store", str(store), "add"]
        args += [f"bench-add-{seed}-{i:03d}", "--type", "fact", "-d", text(rng, 9)]
        args += ["--body", text(rng, 60)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(args, env=env, cwd=store.parent, check=True, capture_output=True)
        wall.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return summary("memstore add (new process)", wall, cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repo", type=Path, required=True, help="a clone; its store is memory/")
    ap.add_argument("--python", default=sys.executable, help="the Python whose memstore runs")
    ap.add_argument("--writes", type=int, default=30, help="MCP writes measured (0: none)")
    ap.add_argument("--warmup", type=int, default=3, help="MCP writes made first, not measured")
    ap.add_argument("--adds", type=int, default=5, help="new-process adds measured (0: none)")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    a = ap.parse_args()
    store = (a.repo / "memory").resolve()
    print(f"# {store}, {a.python}, {os.cpu_count()} CPUs", flush=True)
    if a.adds:
        print(cli_adds(a.python, store, a.adds, a.seed), flush=True)
    if a.writes:
        print(anyio.run(mcp_writes, a.python, store, a.writes, a.warmup, a.seed), flush=True)


if __name__ == "__main__":
    main()
