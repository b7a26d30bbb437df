"""memstore side by side with the official MCP memory server, through public surfaces only.

    .venv/bin/python bench/compare.py                          # every part, a few minutes
    .venv/bin/python bench/compare.py --parts write,recall     # some parts
    .venv/bin/python bench/compare.py --parts startup --large 2000

Parts (each prints one table, with the targets of the "5x faster writes and recalls" issue):
  write        memory_store through one `memstore serve` (file + git commit + index) on a store
               growing from empty to --writes memories, vs create_entities on the official
               @modelcontextprotocol/server-memory (one entity, one observation per call)
  recall       memory_recall vs search_nodes on one LoCoMo conversation (each turn a memory,
               each question a query, sent verbatim), and memory_recall at --large memories
  cli          `memstore --help` wall time, `memstore search` at --search-size memories
  concurrency  --procs CLI processes x --cli-adds `memstore add`, then --procs `memstore serve`
               x --serve-writes memory_store; then checks nothing was lost or left locked
  startup      spawn `memstore serve` -> first tools/list answer at --large memories, with
               the index built and cold (a fresh clone, no index yet)

memstore is driven through its CLI and MCP server as installed next to this Python (the
`memstore` console script); only the generated stores are written directly (rendered files,
one plain `git commit`). server-memory is installed with npm into bench/.node/ (git-ignored)
when missing. Stores live in a temporary folder, and every server runs over stdio.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import anyio
from latency import GIT_ENV, Text
from locomo import DEFAULT_DATA, Conversation, Turn, body_of, load
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from memstore.model import memory as memory_module
from memstore.model.memory import Memory, render

HERE = Path(__file__).resolve().parent
NODE_DIR = HERE / ".node"
PEER_PACKAGE = "@modelcontextprotocol/server-memory"
PEER_ENTRY = NODE_DIR / "node_modules" / PEER_PACKAGE / "dist" / "index.js"
PARTS = ("write", "recall", "cli", "concurrency", "startup")
STAMP = "2026-01-01T00:00:00Z"


# -- figures ----------------------------------------------------------------------------------


def pct(values: list[float], p: float) -> float:
    """The p-quantile of `values` (nearest rank), in milliseconds."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def p50_p90(values: list[float]) -> str:
    return f"{pct(values, 0.5):.1f} / {pct(values, 0.9):.1f} ms"


@dataclass
class Table:
    """One part's figures: measure, value, target, whether the target is met."""

    title: str
    rows: list[tuple[str, str, str, str]] = field(default_factory=list[tuple[str, str, str, str]])
    notes: list[str] = field(default_factory=list[str])

    def add(self, measure: str, value: str, target: str = "", met: bool | None = None) -> None:
        verdict = "" if met is None else ("yes" if met else "NO")
        self.rows.append((measure, value, target, verdict))

    def print(self) -> None:
        print(f"\n## {self.title}\n")
        print("| measure | value | target | met |\n|---|---|---|---|")
        for row in self.rows:
            print("| " + " | ".join(row) + " |")
        for note in self.notes:
            print(f"\n{note}")
        sys.stdout.flush()


def log(message: str) -> None:
    print(f"[compare] {message}", file=sys.stderr, flush=True)


# -- memstore through its public surfaces -----------------------------------------------------


def memstore_command() -> list[str]:
    """The installed `memstore` console script next to this Python, else `python -m memstore`."""
    script = Path(sys.executable).parent / "memstore"
    return [str(script)] if script.exists() else [sys.executable, "-m", "memstore"]


def cli(root: Path, *args: str, agent: str = "bench") -> subprocess.CompletedProcess[str]:
    """Run `memstore --store ROOT --agent AGENT ARGS...`; raise with its stderr on failure."""
    done = subprocess.run(
        [*memstore_command(), "--store", str(root), "--agent", agent, *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **GIT_ENV},
    )
    if done.returncode != 0:
        raise RuntimeError(f"memstore {' '.join(args[:2])} failed: {done.stderr.strip()}")
    return done


def git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=check,
        env={**os.environ, **GIT_ENV},
    )


def write_files(root: Path, memories: list[Memory]) -> None:
    """Write `memories` as files and commit them at once: N adds would be N commits."""
    for memory in memories:
        folder, name = memory.path_parts
        (root / folder).mkdir(exist_ok=True)
        (root / folder / name).write_text(render(memory), encoding="utf-8", newline="\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", f"{len(memories)} generated memories")


def turn_memory(t: Turn) -> Memory:
    """A LoCoMo turn as a memory (locomo.py's shape): description `Speaker: text` on one line,
    dated body."""
    return Memory(
        name=t.name,
        description=" ".join(f"{t.speaker}: {t.text}".split())[:150],  # a few turns span lines
        type="fact",
        status="draft",
        owner=t.speaker.lower(),
        created=STAMP,
        updated=STAMP,
        tags=(t.speaker.lower(), f"session-{t.session}"),
        body=body_of(t),
    )


def synthetic(n: int, seed: int = 7) -> tuple[list[Memory], Text]:
    """`n` memories of Zipf-distributed words (latency.py's generator), and the text source."""
    rng = random.Random(seed)
    text = Text(rng)
    types = ("decision", "fact", "pattern", "runbook", "incident", "warning")
    memories = [
        Memory(
            name=f"mem-{i:05d}",
            description=text.sample(rng.randint(6, 14))[:200],
            type=types[i % len(types)],
            status=rng.choices(["draft", "confirmed"], [6, 4])[0],
            owner=rng.choice(["alice", "bob", "carol", "deploy-bot"]),
            created=STAMP,
            updated=STAMP,
            confirmed_by="reviewer" if i % 2 else None,
            body=text.sample(rng.randint(40, 160)),
        )
        for i in range(n)
    ]
    return memories, text


class Stores:
    """Temporary stores, each built once per run and shared by the parts that need it."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.built: dict[int, tuple[Path, Text, float]] = {}

    def new(self, label: str) -> Path:
        """An empty store made by `memstore init`."""
        root = self.tmp / label
        cli(root, "init", str(root))
        return root

    def synthetic(self, n: int) -> tuple[Path, Text, float]:
        """A store of `n` generated memories with its index built; and the seconds it took."""
        if n not in self.built:
            t0 = time.perf_counter()
            root = self.new(f"synthetic-{n}")
            memories, text = synthetic(n)
            write_files(root, memories)
            cli(root, "reindex")
            self.built[n] = (root, text, time.perf_counter() - t0)
            log(f"generated and indexed {n} memories in {self.built[n][2]:.1f} s")
        return self.built[n]


# -- MCP clients ------------------------------------------------------------------------------


class Servers:
    """Where the spawned servers' stderr goes (a file, shown when something fails)."""

    def __init__(self, tmp: Path) -> None:
        self.path = tmp / "servers.log"
        self.file: TextIO = self.path.open("a", encoding="utf-8")

    def tail(self) -> str:
        self.file.flush()
        return self.path.read_text(encoding="utf-8")[-3000:]


@asynccontextmanager
async def connect(params: StdioServerParameters, servers: Servers) -> AsyncIterator[Client]:
    transport = stdio_client(params, errlog=servers.file)
    async with Client(transport, read_timeout_seconds=300, cache=None) as client:
        yield client


def memstore_params(root: Path, agent: str) -> StdioServerParameters:
    """`memstore serve` as an MCP client's config starts it."""
    command = memstore_command()
    return StdioServerParameters(
        command=command[0],
        args=[*command[1:], "--store", str(root), "serve"],
        env={"MEMSTORE_AGENT": agent, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"},
    )


def peer_params(graph: Path) -> StdioServerParameters:
    """server-memory with its knowledge graph in the JSONL file `graph`."""
    node = shutil.which("node") or "node"
    return StdioServerParameters(
        command=node, args=[str(PEER_ENTRY)], env={"MEMORY_FILE_PATH": str(graph)}
    )


def install_peer() -> str:
    """Install server-memory into bench/.node/ unless it is there; return its version."""
    if not PEER_ENTRY.exists():
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            sys.exit("node and npm are needed for the server-memory comparison (or --no-peer)")
        log(f"installing {PEER_PACKAGE} into {NODE_DIR} with npm (once; the folder is ignored)")
        NODE_DIR.mkdir(exist_ok=True)
        subprocess.run(
            [npm, "install", "--prefix", str(NODE_DIR), "--no-audit", "--no-fund", PEER_PACKAGE],
            stdout=sys.stderr,
            check=True,
        )
    manifest = PEER_ENTRY.parent.parent / "package.json"
    return json.loads(manifest.read_text(encoding="utf-8"))["version"]


def checked(result: CallToolResult) -> CallToolResult:
    if result.is_error:
        block = result.content[0] if result.content else None
        raise RuntimeError(block.text if isinstance(block, TextContent) else "tool error")
    return result


async def timed_call(client: Client, tool: str, arguments: dict[str, Any]) -> float:
    t0 = time.perf_counter()
    checked(await client.call_tool(tool, arguments))
    return time.perf_counter() - t0


async def round_trips(client: Client, count: int = 50) -> list[float]:
    """Round trips of tools/list (no tool runs): near the floor under every call to a server.
    (MCP ping is gone from the 2026-07-28 protocol that memstore's server speaks.)"""
    times: list[float] = []
    for _ in range(count):
        t0 = time.perf_counter()
        await client.list_tools()
        times.append(time.perf_counter() - t0)
    return times


def store_arguments(m: Memory) -> dict[str, Any]:
    return {
        "name": m.name,
        "type": m.type,
        "description": m.description,
        "body": m.body,
        "tags": list(m.tags),
    }


def entity(m: Memory) -> dict[str, Any]:
    """A memory as server-memory keeps it: one entity with the memory text as its observation."""
    return {"name": m.name, "entityType": m.type, "observations": [m.body]}


# -- 1. writes --------------------------------------------------------------------------------


async def part_write(opts: argparse.Namespace, stores: Stores, servers: Servers) -> Table:
    conversations = load(opts.data)
    turns = [t for c in conversations for t in c.turns][: opts.writes]
    memories = [turn_memory(t) for t in turns]
    n = len(memories)
    table = Table(
        f"1. Write through MCP: {n} memories, one call each, on a store growing from empty "
        f"(LoCoMo dev turns, {opts.data.name})"
    )
    root = stores.new("write")
    ours: list[float] = []
    t0 = time.perf_counter()
    async with connect(memstore_params(root, "writer"), servers) as client:
        for m in memories:
            ours.append(await timed_call(client, "memory_store", store_arguments(m)))
        ours_wall = time.perf_counter() - t0
        ours_ping = await round_trips(client)
    met = pct(ours, 0.5) <= 15
    table.add("memstore memory_store p50 / p90", p50_p90(ours), "p50 <= 15 ms", met)
    tenth = max(1, n // 10)
    table.add(
        f"memstore p50, first {tenth} / last {tenth} writes",
        f"{pct(ours[:tenth], 0.5):.1f} / {pct(ours[-tenth:], 0.5):.1f} ms",
    )
    commits = int(git(root, "rev-list", "--count", "HEAD").stdout)
    table.add("memstore commits in the store afterwards", f"{commits} (1 init + {n} writes)")
    if opts.peer:
        graph = stores.tmp / "write-graph.jsonl"
        theirs: list[float] = []
        t0 = time.perf_counter()
        async with connect(peer_params(graph), servers) as client:
            for m in memories:
                theirs.append(
                    await timed_call(client, "create_entities", {"entities": [entity(m)]})
                )
            theirs_wall = time.perf_counter() - t0
            theirs_ping = await round_trips(client)
        table.add("server-memory create_entities p50 / p90", p50_p90(theirs))
        table.add(
            f"server-memory p50, first {tenth} / last {tenth} writes",
            f"{pct(theirs[:tenth], 0.5):.1f} / {pct(theirs[-tenth:], 0.5):.1f} ms",
        )
        table.add(
            "ratio memstore / server-memory, p50 (p90)",
            f"{pct(ours, 0.5) / pct(theirs, 0.5):.1f}x ({pct(ours, 0.9) / pct(theirs, 0.9):.1f}x)",
        )
        table.add(
            "wall time for all writes, memstore / server-memory",
            f"{ours_wall:.1f} / {theirs_wall:.1f} s",
        )
        table.add(
            "tools/list round trip p50 (about the floor), memstore / server-memory",
            f"{pct(ours_ping, 0.5):.1f} / {pct(theirs_ping, 0.5):.1f} ms",
        )
    else:
        table.add("tools/list round trip p50 (about the floor)", f"{pct(ours_ping, 0.5):.1f} ms")
    return table


# -- 2. recall --------------------------------------------------------------------------------


def floor_params(tmp: Path, answers: list[CallToolResult]) -> StdioServerParameters:
    """bench/sdk_floor.py serving the answer of median size among `answers` (what the client
    received from memstore, unchanged), whatever it is asked."""
    sized = sorted(answers, key=lambda a: len(a.model_dump_json()))
    path = tmp / "floor-answer.json"
    path.write_text(sized[len(sized) // 2].model_dump_json(by_alias=True), encoding="utf-8")
    return StdioServerParameters(
        command=sys.executable, args=[str(HERE / "sdk_floor.py"), str(path)]
    )


def recall_at_10(ranked: list[str], relevant: set[str]) -> float:
    return len(set(ranked[:10]) & relevant) / len(relevant) if relevant else 0.0


@dataclass
class Contender:
    """One server in the recall race: how to ask it a question and what it answered."""

    name: str
    client: Client
    tool: str
    names: Callable[[CallToolResult], list[str]]
    times: list[float] = field(default_factory=list[float])
    recalls: list[float] = field(default_factory=list[float])
    answered: int = 0

    async def ask(self, question: str, relevant: set[str]) -> None:
        t0 = time.perf_counter()
        result = checked(await self.client.call_tool(self.tool, {"query": question}))
        self.times.append(time.perf_counter() - t0)
        found = self.names(result)
        self.answered += bool(found)
        self.recalls.append(recall_at_10(found, relevant))


def _memstore_names(result: CallToolResult) -> list[str]:
    return [r["name"] for r in (result.structured_content or {}).get("results", [])]


def _peer_names(result: CallToolResult) -> list[str]:
    return [e["name"] for e in (result.structured_content or {}).get("entities", [])]


async def part_recall(opts: argparse.Namespace, stores: Stores, servers: Servers) -> Table:
    conversations = {c.sample_id: c for c in load(opts.data)}
    conv: Conversation = conversations[opts.conversation]
    memories = [turn_memory(t) for t in conv.turns]
    questions = conv.queries
    table = Table(
        f"2. Recall through MCP: LoCoMo {conv.sample_id} ({len(memories)} memories, "
        f"{len(questions)} questions), and {opts.large} generated memories"
    )
    root = stores.new("locomo")
    write_files(root, memories)
    cli(root, "reindex")
    # memstore's answers for the SDK-alone server, from a server of their own: the one
    # measured starts as cold as any agent's.
    async with connect(memstore_params(root, "answers"), servers) as client:
        answers = [
            checked(await client.call_tool("memory_recall", {"query": q})) for q, _, _ in questions
        ]
    async with AsyncExitStack() as stack:

        async def contender(name: str, params: StdioServerParameters, tool: str) -> Contender:
            client = await stack.enter_async_context(connect(params, servers))
            names = _peer_names if tool == "search_nodes" else _memstore_names
            return Contender(name, client, tool, names)

        ours = await contender("memstore", memstore_params(root, "reader"), "memory_recall")
        floor = await contender("floor", floor_params(stores.tmp, answers), "answer")
        racing = [ours, floor]
        theirs = None
        if opts.peer:
            theirs = await contender(
                "peer", peer_params(stores.tmp / "graph.jsonl"), "search_nodes"
            )
            checked(
                await theirs.client.call_tool(
                    "create_entities", {"entities": list(map(entity, memories))}
                )
            )
            racing.append(theirs)
        for c in racing:
            await c.client.call_tool(c.tool, {"query": "warm up"})
        # Side by side: each question goes to every server in turn (the first of them changing
        # from one question to the next), so a change in the machine's load falls on all alike.
        for i, (question, relevant, _) in enumerate(questions):
            for c in racing[i % len(racing) :] + racing[: i % len(racing)]:
                await c.ask(question, relevant)
    table.add("memstore memory_recall p50 / p90", p50_p90(ours.times))
    table.add(
        "the SDK alone: a tool returning memstore's median answer, p50 / p90",
        p50_p90(floor.times),
    )
    if theirs is not None:
        table.add("server-memory search_nodes p50 / p90", p50_p90(theirs.times))
        ratio = pct(ours.times, 0.5) / pct(theirs.times, 0.5)
        table.add(
            "ratio memstore / server-memory, p50 (p90)",
            f"{ratio:.2f}x ({pct(ours.times, 0.9) / pct(theirs.times, 0.9):.2f}x)",
            "p50 <= 1.0x",
            ratio <= 1.0,
        )
        table.add(
            "questions with any result, memstore / server-memory",
            f"{ours.answered} / {theirs.answered} of {len(questions)}",
        )
        table.add(
            "Recall@10, memstore / server-memory",
            f"{statistics.fmean(ours.recalls):.3f} / {statistics.fmean(theirs.recalls):.3f}",
        )
        table.add(
            "ratio SDK alone / server-memory, p50",
            f"{pct(floor.times, 0.5) / pct(theirs.times, 0.5):.2f}x",
        )
        table.notes.append(
            "server-memory's search_nodes is a case-insensitive substring match of the whole "
            "query, so a question verbatim rarely matches anything and returns an empty graph."
        )
    else:
        table.add("Recall@10, memstore", f"{statistics.fmean(ours.recalls):.3f}")
    table.notes.append(
        "The SDK alone is bench/sdk_floor.py: the `mcp` SDK's MCPServer over stdio, as "
        "`memstore serve` runs it, with one tool that returns a fixed answer (memstore's "
        "answer of median size); memstore's share of a recall is the difference. The three "
        "servers run at once and each question goes to each of them in turn."
    )

    big, text, _ = stores.synthetic(opts.large)
    rng = random.Random(11)
    queries = [text.sample(rng.randint(1, 4)) for _ in range(opts.queries)]
    at_large: list[float] = []
    hits = 0
    async with connect(memstore_params(big, "reader"), servers) as client:
        await client.call_tool("memory_recall", {"query": "warm up"})
        for query in queries:
            t0 = time.perf_counter()
            result = checked(await client.call_tool("memory_recall", {"query": query}))
            at_large.append(time.perf_counter() - t0)
            hits += bool((result.structured_content or {}).get("results"))
    table.add(
        f"memstore memory_recall p50 / p90 at {opts.large} memories "
        f"({len(queries)} queries of 1-4 words, {hits} with results)",
        p50_p90(at_large),
        "p50 <= 10 ms",
        pct(at_large, 0.5) <= 10,
    )
    return table


# -- 3. CLI -----------------------------------------------------------------------------------


def wall(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        args,
        capture_output=True,
        check=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **GIT_ENV},
    )
    return time.perf_counter() - t0


def part_cli(opts: argparse.Namespace, stores: Stores) -> Table:
    n = opts.search_size
    table = Table(f"3. CLI wall time (process start to exit), {n} generated memories")
    command = memstore_command()
    wall([*command, "--help"])  # warm the file cache
    helps = [wall([*command, "--help"]) for _ in range(opts.runs)]
    median = statistics.median(helps)
    table.add(
        f"`memstore --help`, median of {opts.runs} (min)",
        f"{median:.3f} s ({min(helps):.3f} s)",
        "<= 0.15 s",
        median <= 0.15,
    )
    root, text, _ = stores.synthetic(n)
    rng = random.Random(13)
    base = [*command, "--store", str(root), "search"]
    wall([*base, "warm", "up"])
    searches = [wall([*base, *text.sample(rng.randint(1, 4)).split()]) for _ in range(opts.runs)]
    median = statistics.median(searches)
    table.add(
        f"`memstore search <1-4 words>` at {n}, median of {opts.runs} (min)",
        f"{median:.3f} s ({min(searches):.3f} s)",
        "<= 0.3 s",
        median <= 0.3,
    )
    adds: list[float] = []
    for i in range(opts.runs):
        args = ["add", f"cli-add-{i}", "--type", "fact", "-d", f"one more fact {i}"]
        adds.append(wall([*command, "--store", str(root), "--agent", "bench", *args]))
    table.add(
        f"`memstore add` at {n}, one process at a time, median of {opts.runs}",
        f"{statistics.median(adds):.3f} s",
    )
    return table


# -- 4. concurrency ---------------------------------------------------------------------------


@dataclass
class Outcome:
    ok: list[str] = field(default_factory=list[str])
    failed: list[str] = field(default_factory=list[str])
    lock: threading.Lock = field(default_factory=threading.Lock)

    def report(self, name: str, error: str | None) -> None:
        with self.lock:
            if error is None:
                self.ok.append(name)
            else:
                self.failed.append(f"{name}: {error}")


def cli_adder(root: Path, proc: int, count: int, outcome: Outcome) -> None:
    """One agent's shell: `count` `memstore add` runs, one after another."""
    agent = f"cli-{proc}"
    for i in range(count):
        name = f"{agent}-{i}"
        args = ["add", name, "--type", "fact", "-d", f"concurrent add {i} by {agent}"]
        args += ["--body", f"zzconc tok{agent}n{i}"]
        done = subprocess.run(
            [*memstore_command(), "--store", str(root), "--agent", agent, *args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **GIT_ENV},
        )
        outcome.report(name, done.stderr.strip() if done.returncode else None)


async def serve_writer(
    root: Path,
    proc: int,
    count: int,
    outcome: Outcome,
    servers: Servers,
    ready: Callable[[], Any],
    go: anyio.Event,
) -> None:
    agent = f"serve-{proc}"
    async with connect(memstore_params(root, agent), servers) as client:
        await ready()
        await go.wait()
        for i in range(count):
            name = f"{agent}-{i}"
            arguments = {
                "name": name,
                "type": "fact",
                "description": f"concurrent write {i} by {agent}",
                "body": f"zzconc tok{agent}n{i}",
            }
            result = await client.call_tool("memory_store", arguments)
            block = result.content[0] if result.content else None
            error = block.text if isinstance(block, TextContent) else "tool error"
            outcome.report(name, error if result.is_error else None)


async def serve_writers(
    root: Path, procs: int, count: int, outcome: Outcome, servers: Servers
) -> tuple[float, float]:
    """Start `procs` servers, then let all write at once; return (writing, total) seconds."""
    connected = 0
    all_ready = anyio.Event()
    go = anyio.Event()

    async def ready() -> None:
        nonlocal connected
        connected += 1
        if connected == procs:
            all_ready.set()

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for p in range(procs):
            tg.start_soon(serve_writer, root, p, count, outcome, servers, ready, go)
        await all_ready.wait()
        t0 = time.perf_counter()
        go.set()
    return time.perf_counter() - t0, time.perf_counter() - started


def verify(root: Path, names: list[str]) -> dict[str, str]:
    """What is in the store after the concurrent writes, against what reported success."""
    tracked = set(git(root, "ls-files", "fact").stdout.split())
    missing = [n for n in names if not (root / "fact" / f"{n}.md").is_file()]
    uncommitted = [n for n in names if f"fact/{n}.md" not in tracked]
    status = git(root, "status", "--porcelain", "--untracked-files=all").stdout.strip()
    fsck = git(root, "fsck", "--strict", check=False)
    fsck_clean = fsck.returncode == 0 and "error" not in fsck.stderr.lower()
    locks = sorted(str(p.relative_to(root)) for p in (root / ".git").rglob("*.lock"))
    found = json.loads(cli(root, "search", "zzconc", "--json", "-n", "100000").stdout)
    unfound = sorted(set(names) - {hit["name"] for hit in found})
    return {
        "lost (file missing or not committed)": f"{len(set(missing) | set(uncommitted))}",
        "uncommitted changes (git status)": f"{len(status.splitlines())}",
        "git fsck --strict": "clean" if fsck_clean else f"NOT clean: {fsck.stderr[:200]}",
        "lock files left in .git": f"{len(locks)} {locks[:3] if locks else ''}".strip(),
        "not found by `memstore search` afterwards": f"{len(unfound)} {unfound[:3] or ''}".strip(),
        "commits": git(root, "rev-list", "--count", "HEAD").stdout.strip(),
    }


async def part_concurrency(opts: argparse.Namespace, stores: Stores, servers: Servers) -> Table:
    procs = opts.procs
    table = Table(
        f"4. Concurrency on one store: {procs} CLI processes x {opts.cli_adds} adds, then "
        f"{procs} `memstore serve` x {opts.serve_writes} memory_store calls"
    )
    root = stores.new("concurrency")
    cli_outcome = Outcome()
    threads = [
        threading.Thread(target=cli_adder, args=(root, p, opts.cli_adds, cli_outcome))
        for p in range(procs)
    ]
    t0 = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.perf_counter() - t0
    rate = len(cli_outcome.ok) / took
    table.add(
        f"{procs} x {opts.cli_adds} `memstore add`: adds/s (wall)",
        f"{rate:.1f} ({took:.1f} s; {len(cli_outcome.failed)} failed)",
        ">= 10 adds/s",
        rate >= 10 and not cli_outcome.failed,
    )
    serve_outcome = Outcome()
    writing, total = await serve_writers(root, procs, opts.serve_writes, serve_outcome, servers)
    rate = len(serve_outcome.ok) / writing
    table.add(
        f"{procs} x {opts.serve_writes} memory_store: writes/s (servers already up)",
        f"{rate:.1f} ({writing:.1f} s, {total:.1f} s with start-up; "
        f"{len(serve_outcome.failed)} failed)",
        ">= 30 writes/s",
        rate >= 30 and not serve_outcome.failed,
    )
    names = cli_outcome.ok + serve_outcome.ok
    for measure, value in verify(root, names).items():
        good = value.startswith(("0", "clean")) if measure != "commits" else None
        table.add(measure, value, "" if good is None else "0 / clean", good)
    for failure in (cli_outcome.failed + serve_outcome.failed)[:3]:
        table.notes.append(f"failed: {failure[:300]}")
    return table


# -- 5. startup -------------------------------------------------------------------------------


async def first_tools_list(root: Path, servers: Servers) -> float:
    t0 = time.perf_counter()
    async with connect(memstore_params(root, "starter"), servers) as client:
        await client.list_tools()
        took = time.perf_counter() - t0
    return took


async def part_startup(opts: argparse.Namespace, stores: Stores, servers: Servers) -> Table:
    n = opts.large
    table = Table(f"5. Start-up: spawn `memstore serve` -> first tools/list answer, {n} memories")
    root, _, _ = stores.synthetic(n)
    await first_tools_list(root, servers)  # warm the file cache
    warm = [await first_tools_list(root, servers) for _ in range(opts.restarts)]
    median = statistics.median(warm)
    table.add(
        f"index built, median of {opts.restarts} restarts (min / max)",
        f"{median:.3f} s ({min(warm):.3f} / {max(warm):.3f} s)",
        "<= 0.5 s",
        median <= 0.5,
    )
    cold = stores.tmp / f"cold-{n}"
    git(stores.tmp, "clone", "-q", str(root), str(cold))  # files and history, no index
    table.add(
        "cold: a fresh clone, no index yet (one run)",
        f"{await first_tools_list(cold, servers):.3f} s",
    )
    if opts.peer:
        graph = stores.tmp / "startup-graph.jsonl"
        memories, _ = synthetic(n)
        async with connect(peer_params(graph), servers) as client:
            checked(
                await client.call_tool("create_entities", {"entities": list(map(entity, memories))})
            )
        times: list[float] = []
        for _ in range(opts.restarts):
            t0 = time.perf_counter()
            async with connect(peer_params(graph), servers) as client:
                await client.list_tools()
                times.append(time.perf_counter() - t0)
        table.add(
            f"server-memory on the same {n} memories, median of {opts.restarts}",
            f"{statistics.median(times):.3f} s",
        )
    return table


# -- main -------------------------------------------------------------------------------------


def machine(peer: str | None) -> list[str]:
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    tmp = Path(tempfile.gettempdir()).resolve()
    fs = "?"
    mounts = Path("/proc/mounts")
    if mounts.exists():
        best = ""
        for line in mounts.read_text(encoding="utf-8").splitlines():
            _, point, kind, *_ = line.split()
            if str(tmp).startswith(point) and len(point) > len(best):
                best, fs = point, kind
    head = subprocess.run(
        ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    version = subprocess.run([*memstore_command(), "--version"], capture_output=True, text=True)
    node = subprocess.run(["node", "--version"], capture_output=True, text=True) if peer else None
    lines = [
        f"machine: {os.cpu_count()} cores, {cpu}, {platform.system()} {platform.release()}",
        f"python {platform.python_version()}, mcp {metadata.version('mcp')}, "
        f"{version.stdout.strip()} (commit {head or '?'}), "
        + subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip(),
        f"stores in {tmp} ({fs}); load average at start {load_average()}",
    ]
    if peer and node:
        lines.append(f"peer: {PEER_PACKAGE} {peer} on node {node.stdout.strip()}")
    return lines


def compile_package() -> None:
    """Compile memstore's modules to bytecode, as installing it does: where
    PYTHONDONTWRITEBYTECODE is set and no __pycache__ exists yet, every timed CLI process
    would compile them from source (a quarter of a second or more)."""
    package = Path(memory_module.__file__).resolve().parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=False)


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: other work on the machine skews every figure."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"comma-separated, any of: {', '.join(PARTS)} (default: all)",
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON file")
    parser.add_argument(
        "--conversation", default="conv-43", help="LoCoMo sample_id for recall (default conv-43)"
    )
    parser.add_argument("--writes", type=int, default=1000, help="write: memories (1000)")
    parser.add_argument(
        "--large", type=int, default=10_000, help="recall and startup: store size (10000)"
    )
    parser.add_argument("--queries", type=int, default=200, help="recall at --large: queries")
    parser.add_argument("--search-size", type=int, default=1000, help="cli: store size (1000)")
    parser.add_argument("--runs", type=int, default=10, help="cli: runs per command (10)")
    parser.add_argument("--procs", type=int, default=8, help="concurrency: processes (8)")
    parser.add_argument("--cli-adds", type=int, default=25, help="concurrency: adds each (25)")
    parser.add_argument(
        "--serve-writes", type=int, default=50, help="concurrency: memory_store calls each (50)"
    )
    parser.add_argument("--restarts", type=int, default=5, help="startup: restarts (5)")
    parser.add_argument(
        "--no-peer", dest="peer", action="store_false", help="skip server-memory (no node)"
    )
    opts = parser.parse_args()
    parts = [p.strip() for p in opts.parts.split(",") if p.strip()]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s) {sorted(unknown)}; choose from {', '.join(PARTS)}")
    compile_package()
    needs_peer = opts.peer and bool({"write", "recall", "startup"} & set(parts))
    peer = install_peer() if needs_peer else None
    opts.peer = needs_peer

    print("# memstore vs server-memory, side by side")
    for line in machine(peer):
        print(f"# {line}")
    print(
        f"# data: LoCoMo dev ({opts.data}); generated stores of Zipf-distributed words "
        "(bench/latency.py's generator), written as files with one commit, then `memstore reindex`"
    )
    sys.stdout.flush()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memstore-compare-") as tmp:
        stores = Stores(Path(tmp))
        servers = Servers(Path(tmp))
        try:
            for part in parts:
                log(f"part {part}")
                t0 = time.perf_counter()
                if part == "write":
                    table = anyio.run(part_write, opts, stores, servers)
                elif part == "recall":
                    table = anyio.run(part_recall, opts, stores, servers)
                elif part == "cli":
                    table = part_cli(opts, stores)
                elif part == "concurrency":
                    table = anyio.run(part_concurrency, opts, stores, servers)
                else:
                    table = anyio.run(part_startup, opts, stores, servers)
                table.notes.append(f"(part took {time.perf_counter() - t0:.0f} s)")
                table.print()
        except BaseException:
            print(f"servers' stderr, last lines:\n{servers.tail()}", file=sys.stderr)
            raise
        finally:
            servers.file.close()
    print(f"\n# total {time.perf_counter() - started:.0f} s; load average at end {load_average()}")


if __name__ == "__main__":
    main()
