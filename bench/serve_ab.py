"""Two memstore versions' `memstore serve` side by side, call by call, with server-memory.

    .venv/bin/python bench/serve_ab.py --b ../base/.venv/bin/python
    .venv/bin/python bench/serve_ab.py --b ../base/.venv/bin/python --parts write --writes 300

A is the memstore this Python imports; B is the one another Python imports (a second
checkout's .venv, e.g. `git worktree add ../base main && make -C ../base venv`). On a shared
machine a run's figures move by 20-40 % with the load, so one run alternates the two
call by call (write, recall) or round by round (concurrency): each sees the same load, and
their ratio is the figure to quote. The official server-memory (installed as
`bench/compare.py` does) runs beside them in the write and recall parts.

Parts:
  write        memory_store on a store growing from empty to --writes memories (LoCoMo turns)
  recall       memory_recall of each LoCoMo conv-43 question on its 680 turns
  large        memory_recall of --queries generated queries (1-4 words, each asked once, as
               compare.py asks them) on --large generated memories
  concurrency  --procs servers x --serve-writes memory_store at once, --rounds per side;
               then checks nothing was lost, left locked or missed by search
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from compare import (
    PEER_ENTRY,
    Outcome,
    Servers,
    checked,
    entity,
    install_peer,
    load_average,
    machine,
    pct,
    peer_params,
    round_trips,
    store_arguments,
    synthetic,
    turn_memory,
    verify,
    write_files,
)
from latency import GIT_ENV
from locomo import DEFAULT_DATA, load
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

SIDES = ("A", "B")


TAG = "MEMSTORE_BENCH_SERVER"
"""An environment variable naming each reading server, to find its process for its CPU time."""


def params(python: str, root: Path, agent: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=python,
        args=["-m", "memstore", "--store", str(root), "serve"],
        env={
            "MEMSTORE_AGENT": agent,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            TAG: f"{os.getpid()}-{root.name}",
        },
    )


def server_pid(root: Path) -> int | None:
    """The process of the server `params` started on `root` (None where /proc cannot tell)."""
    wanted = f"{TAG}={os.getpid()}-{root.name}".encode()
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if wanted in environ.read_bytes().split(b"\0"):
                return int(environ.parent.name)
        except OSError:
            continue
    return None


def cpu_seconds(pid: int | None) -> float | None:
    """User plus system CPU seconds process `pid` has used so far."""
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


class Cpu:
    """The CPU time each side's server spends per call over a stretch of calls: unlike the
    time a call takes, it hardly moves with the machine's load."""

    def __init__(self, roots: dict[str, Path]) -> None:
        self.pids = {side: server_pid(root) for side, root in roots.items()}
        self.start = {side: cpu_seconds(pid) for side, pid in self.pids.items()}

    def per_call(self, calls: int) -> dict[str, float]:
        """Milliseconds of CPU per call since this was made, for each side /proc knows."""
        out: dict[str, float] = {}
        for side, pid in self.pids.items():
            start, end = self.start[side], cpu_seconds(pid)
            if start is not None and end is not None:
                out[side] = (end - start) / calls * 1e3
        return out


def cpu_lines(per_call: dict[str, float]) -> list[str]:
    if len(per_call) < 2:
        return []
    each = ", ".join(f"{side} {ms:.2f} ms" for side, ms in per_call.items())
    return [f"server CPU per call: {each}; A / B {per_call['A'] / per_call['B']:.2f}"]


@asynccontextmanager
async def connect(p: StdioServerParameters, servers: Servers) -> AsyncIterator[Client]:
    async with Client(stdio_client(p, errlog=servers.file), read_timeout_seconds=300) as client:
        yield client


def init(python: str, root: Path) -> None:
    subprocess.run(
        [python, "-m", "memstore", "--agent", "bench", "init", str(root)],
        check=True,
        capture_output=True,
        env={**os.environ, **GIT_ENV},
    )


def reindex(python: str, root: Path) -> None:
    subprocess.run(
        [python, "-m", "memstore", "--store", str(root), "reindex"],
        check=True,
        capture_output=True,
        env={**os.environ, **GIT_ENV},
    )


def row(label: str, times: list[float], floor: list[float] | None = None) -> str:
    line = f"{label}: p50 / p90 {pct(times, 0.5):.1f} / {pct(times, 0.9):.1f} ms"
    if floor:
        line += f"  (tools/list p50 {pct(floor, 0.5):.1f} ms)"
    return line


def ratios(times: dict[str, list[float]]) -> list[str]:
    a = pct(times["A"], 0.5)
    lines = [f"A / B p50: {a / pct(times['B'], 0.5):.2f}"]
    if "peer" in times:
        lines.append(f"A / server-memory p50: {a / pct(times['peer'], 0.5):.2f}")
        lines.append(f"B / server-memory p50: {pct(times['B'], 0.5) / pct(times['peer'], 0.5):.2f}")
    return lines


async def alternate(
    clients: dict[str, Client], calls: list[Callable[[str, Client], Any]]
) -> dict[str, list[float]]:
    """Each call on every side, the sides' order turning each time; seconds per call."""
    times: dict[str, list[float]] = {side: [] for side in clients}
    order = list(clients)
    for i, call in enumerate(calls):
        for side in order[i % len(order) :] + order[: i % len(order)]:
            t0 = time.perf_counter()
            checked(await call(side, clients[side]))
            times[side].append(time.perf_counter() - t0)
    return times


async def part_write(opts: argparse.Namespace, tmp: Path, servers: Servers) -> list[str]:
    turns = [t for c in load(opts.data) for t in c.turns][: opts.writes]
    memories = [turn_memory(t) for t in turns]
    async with AsyncExitStack() as stack:
        clients: dict[str, Client] = {}
        for side in SIDES:
            root = tmp / f"write-{side}"
            init(opts.python[side], root)
            clients[side] = await stack.enter_async_context(
                connect(params(opts.python[side], root, "writer"), servers)
            )
        if opts.peer:
            clients["peer"] = await stack.enter_async_context(
                connect(peer_params(tmp / "write-graph.jsonl"), servers)
            )

        def call(i: int) -> Callable[[str, Client], Any]:
            def run(side: str, client: Client) -> Any:
                if side == "peer":
                    entities = {"entities": [entity(memories[i])]}
                    return client.call_tool("create_entities", entities)
                return client.call_tool("memory_store", store_arguments(memories[i]))

            return run

        times = await alternate(clients, [call(i) for i in range(len(memories))])
        floors = {side: await round_trips(c) for side, c in clients.items()}
    lines = [f"## write: {len(memories)} memory_store calls each, store growing from empty"]
    lines += [row(side, times[side], floors[side]) for side in clients]
    return lines + ratios(times)


async def part_recall(opts: argparse.Namespace, tmp: Path, servers: Servers) -> list[str]:
    conv = {c.sample_id: c for c in load(opts.data)}[opts.conversation]
    memories = [turn_memory(t) for t in conv.turns]
    questions = [q for q, _, _ in conv.queries]
    async with AsyncExitStack() as stack:
        clients: dict[str, Client] = {}
        roots = {side: tmp / f"recall-{side}" for side in SIDES}
        for side, root in roots.items():
            init(opts.python[side], root)
            write_files(root, memories)
            reindex(opts.python[side], root)
            clients[side] = await stack.enter_async_context(
                connect(params(opts.python[side], root, "reader"), servers)
            )
        if opts.peer:
            peer = await stack.enter_async_context(
                connect(peer_params(tmp / "recall-graph.jsonl"), servers)
            )
            checked(
                await peer.call_tool("create_entities", {"entities": list(map(entity, memories))})
            )
            clients["peer"] = peer
        for side, client in clients.items():  # warm up
            tool = "search_nodes" if side == "peer" else "memory_recall"
            await client.call_tool(tool, {"query": "warm up"})

        def call(q: str) -> Callable[[str, Client], Any]:
            def run(side: str, client: Client) -> Any:
                tool = "search_nodes" if side == "peer" else "memory_recall"
                return client.call_tool(tool, {"query": q})

            return run

        rounds = [call(q) for _ in range(opts.recall_rounds) for q in questions]
        cpu = Cpu(roots)
        times = await alternate(clients, rounds)
        per_call = cpu.per_call(len(rounds))
    lines = [
        f"## recall: LoCoMo {conv.sample_id}, {len(memories)} memories, "
        f"{len(questions)} questions x {opts.recall_rounds}"
    ]
    lines += [row(side, times[side]) for side in clients]
    return lines + ratios(times) + cpu_lines(per_call)


async def part_large(opts: argparse.Namespace, tmp: Path, servers: Servers) -> list[str]:
    memories, text = synthetic(opts.large)
    rng = random.Random(11)  # compare.py's queries
    queries = [text.sample(rng.randint(1, 4)) for _ in range(opts.queries)]
    async with AsyncExitStack() as stack:
        clients: dict[str, Client] = {}
        roots = {side: tmp / f"large-{side}" for side in SIDES}
        for side, root in roots.items():
            init(opts.python[side], root)
            write_files(root, memories)
            reindex(opts.python[side], root)
            clients[side] = await stack.enter_async_context(
                connect(params(opts.python[side], root, "reader"), servers)
            )
        for client in clients.values():
            await client.call_tool("memory_recall", {"query": "warm up"})
        await anyio.sleep(3)  # each watcher's first catch-up over the folders, before timing

        def call(q: str) -> Callable[[str, Client], Any]:
            def run(side: str, client: Client) -> Any:
                return client.call_tool("memory_recall", {"query": q})

            return run

        cpu = Cpu(roots)
        times = await alternate(clients, [call(q) for q in queries])
        per_call = cpu.per_call(len(queries))
    lines = [f"## large: {opts.large} memories, {len(queries)} queries of 1-4 words, each once"]
    lines += [row(side, times[side]) for side in clients]
    return lines + ratios(times) + cpu_lines(per_call)


async def writers(
    python: str, root: Path, opts: argparse.Namespace, outcome: Outcome, servers: Servers
) -> float:
    """`--procs` servers on `root`, all connected, then all writing at once; seconds taken."""
    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(connect(params(python, root, f"s{p}"), servers))
            for p in range(opts.procs)
        ]

        async def write(p: int, client: Client) -> None:
            for i in range(opts.serve_writes):
                name = f"s{p}-{i}"
                arguments = {
                    "name": name,
                    "type": "fact",
                    "description": f"concurrent write {i} by s{p}",
                    "body": f"zzconc toks{p}n{i}",
                }
                result = await client.call_tool("memory_store", arguments)
                outcome.report(name, "tool error" if result.is_error else None)

        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for p, client in enumerate(clients):
                tg.start_soon(write, p, client)
        return time.perf_counter() - t0


async def part_concurrency(opts: argparse.Namespace, tmp: Path, servers: Servers) -> list[str]:
    rates: dict[str, list[float]] = {side: [] for side in SIDES}
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    checks: list[str] = []
    for r in range(opts.rounds):
        for side in SIDES if r % 2 == 0 else SIDES[::-1]:
            root = tmp / f"conc-{side}-{r}"
            init(opts.python[side], root)
            outcome = Outcome()
            before = _children_cpu()
            took = await writers(opts.python[side], root, opts, outcome, servers)
            rates[side].append(len(outcome.ok) / took)
            cpu[side].append((_children_cpu() - before) / max(len(outcome.ok), 1))
            found = verify(root, outcome.ok)
            bad = {
                k: v
                for k, v in found.items()
                if k != "commits" and not v.startswith(("0", "clean"))
            }
            checks.append(
                f"{side} round {r + 1}: {len(outcome.ok)} ok, {len(outcome.failed)} failed; "
                + (", ".join(f"{k}: {v}" for k, v in bad.items()) or "all checks clean")
            )
    lines = [f"## concurrency: {opts.procs} servers x {opts.serve_writes} memory_store, writes/s"]
    for side in SIDES:
        each = " ".join(f"{x:.1f}" for x in rates[side])
        lines.append(f"{side}: median {sorted(rates[side])[len(rates[side]) // 2]:.1f} ({each})")
    a, b = (sorted(rates[s])[len(rates[s]) // 2] for s in SIDES)
    lines.append(f"A / B: {a / b:.2f}")
    # On two cores the CPU a write costs, summed over every process, bounds the throughput.
    lines.append("CPU per write (servers and their gits, start-up included), ms:")
    for side in SIDES:
        lines.append(f"{side}: " + " ".join(f"{x * 1000:.1f}" for x in cpu[side]))
    return [*lines, *checks]


def _children_cpu() -> float:
    """CPU seconds of the children that ended so far (the servers, and the gits they ran)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


PARTS = {
    "write": part_write,
    "recall": part_recall,
    "large": part_large,
    "concurrency": part_concurrency,
}


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--b", required=True, help="the Python whose memstore is B")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON file")
    parser.add_argument("--conversation", default="conv-43")
    parser.add_argument("--writes", type=int, default=1000, help="write: memories (1000)")
    parser.add_argument("--recall-rounds", type=int, default=2, help="recall: rounds (2)")
    parser.add_argument("--large", type=int, default=10_000, help="large: memories (10000)")
    parser.add_argument("--queries", type=int, default=200, help="large: queries (200)")
    parser.add_argument("--procs", type=int, default=8, help="concurrency: servers (8)")
    parser.add_argument("--serve-writes", type=int, default=50, help="concurrency: each (50)")
    parser.add_argument("--rounds", type=int, default=2, help="concurrency: rounds per side")
    parser.add_argument("--no-peer", dest="peer", action="store_false")
    opts = parser.parse_args()
    opts.python = {"A": sys.executable, "B": opts.b}
    peer = install_peer() if opts.peer else None
    for line in machine(peer):
        print(line)
    for side, python in opts.python.items():
        version = subprocess.run(
            [python, "-m", "memstore", "--version"], capture_output=True, text=True, check=True
        )
        print(f"# {side}: {python}: {version.stdout.strip()}")
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"memstore-ab-{random.randrange(10**8)}"
    tmp.mkdir()
    servers = Servers(tmp)
    try:
        for part in opts.parts.split(","):
            start = load_average()
            lines = await PARTS[part](opts, tmp, servers)
            print("\n".join(lines))
            print(f"(load average {start} -> {load_average()})\n", flush=True)
    finally:
        servers.file.close()
        shutil.rmtree(tmp, ignore_errors=True)
    assert PEER_ENTRY.exists() or not opts.peer


if __name__ == "__main__":
    anyio.run(main)
