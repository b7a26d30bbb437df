"""Scale benchmark: a store with a real multi-author history, and every interactive call on it.

    .venv/bin/python bench/scale.py --size 10000 --out /tmp/scale-10k
    .venv/bin/python bench/scale.py --sizes 1000 10000 [--skip lint,reindex] [--runs 3]
    .venv/bin/python bench/scale.py --sizes 1000 --from /work/stores/scale-{size}

The store is built the way a team's store grows: each memory's file is committed by its owner
(a person or an agent, in batches of 1-60 memories per commit, as sessions save them), 40% are
confirmed later by another identity in that identity's own commits, about 1% are deprecated by
their owner, nine types (16% rules, `correction`/`warning` with `severity` and
`applies_when`), 10% name code files, a third link to older memories, most carry tags. The
history is written with `git fast-import` (one pack, real commits by the identities the trust
replay checks), so 100,000 memories take minutes. The store is the `memory/` folder of a
repository that also holds code (`src/`), some of which changes after confirmations.

Every row is measured through the real CLI (a new process each time) and through the real
`mcp` SDK client against `memstore serve` over stdio, on a fresh clone of the generated
repository (so no cache is carried over unless the row says warm). Figures are medians;
progress goes to stderr, the table to stdout.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency import TECH, Text  # noqa: E402  (a sibling script, not a package)

from memstore.git.commit import email_for  # noqa: E402
from memstore.model.memory import Memory, render  # noqa: E402
from memstore.model.status import Status, transition  # noqa: E402
from memstore.storage.store import STORE_GITATTRIBUTES, STORE_GITIGNORE  # noqa: E402

PEOPLE = ("alice", "bob", "carol", "dave", "erin")
AGENTS = tuple(f"agent-{k:02d}" for k in range(1, 11))
IDENTITIES = PEOPLE + AGENTS
LEAD = "lead"
PLAIN_TYPES = ("decision", "fact", "pattern", "runbook", "incident", "postmortem", "reference")
RULES = ("correction", "warning")
START = 1_735_689_600  # 2025-01-01T00:00:00Z
CODE = tuple(f"src/mod{i:03d}/file{j}.py" for i in range(200) for j in range(5))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def stamp(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def git_env(who: str = LEAD) -> dict[str, str]:
    return {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": who,
        "GIT_AUTHOR_EMAIL": email_for(who),
        "GIT_COMMITTER_NAME": who,
        "GIT_COMMITTER_EMAIL": email_for(who),
    }


# -- the generator ------------------------------------------------------------------------------


class Stream:
    """A `git fast-import` stream of commits on `refs/heads/main`."""

    def __init__(self, top: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", "fast-import", "--quiet", "--done"],
            cwd=top,
            stdin=subprocess.PIPE,
            env=git_env(),
        )
        assert self.proc.stdin is not None
        self.out = self.proc.stdin
        self.commits = 0

    def commit(self, who: str, t: int, message: str, files: dict[str, str]) -> None:
        person = f"{who} <{email_for(who)}> {t} +0000"
        msg = message.encode()
        parts = [
            b"commit refs/heads/main\n",
            f"author {person}\ncommitter {person}\n".encode(),
            b"data %d\n" % len(msg),
            msg,
            b"\n",
        ]
        for path, text in files.items():
            data = text.encode()
            parts += [f"M 100644 inline {path}\n".encode(), b"data %d\n" % len(data), data, b"\n"]
        self.out.write(b"".join(parts))
        self.commits += 1

    def close(self) -> None:
        self.out.write(b"done\n")
        self.out.close()
        if self.proc.wait() != 0:
            raise SystemExit("git fast-import failed")


@dataclass
class Made:
    memory: Memory
    path: str
    confirm: bool
    deprecate: bool


def rule_fields(rng: random.Random, text: Text) -> dict[str, object]:
    severity = rng.choices(["p0", "p1", "p2", "p3"], [1, 4, 4, 2])[0]
    patterns: list[str] = []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.25:
            patterns.append(f"src/mod{rng.randrange(200):03d}/*.py")
        else:
            patterns.append(" ".join(rng.sample(TECH, rng.randint(1, 2))))
    return {"severity": severity, "applies_when": sorted(set(patterns))}


def generate(top: Path, n: int, seed: int = 7) -> int:
    """Build a repository at `top` whose `memory/` store holds `n` memories; return its commits."""
    rng = random.Random(seed)
    text = Text(rng)
    top.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(top)], check=True, env=git_env())
    stream = Stream(top)
    t = START
    stream.commit(LEAD, t, "code", {rel: "v1\n" for rel in CODE})
    t += 60
    stream.commit(
        LEAD,
        t,
        "memory: init store",
        {"memory/.gitignore": STORE_GITIGNORE, "memory/.gitattributes": STORE_GITATTRIBUTES},
    )
    # About one working year: the gap between commits follows the store's size.
    step = max(30, int(300 * 24 * 3600 / max(1, n // 30)))
    made: list[Made] = []
    to_confirm: list[Made] = []
    to_deprecate: list[Made] = []
    created = 0
    weights = [3] * len(PEOPLE) + [5] * len(AGENTS)  # agents save more than people
    last_code_change = 0
    next_log = max(1000, n // 20)
    while created < n:
        owner = rng.choices(IDENTITIES, weights)[0]
        batch = min(n - created, rng.choice((1, 1, 2, 3, 5, 8, 13, 20, 30, 45, 60)))
        t += rng.randint(step // 2, step * 3 // 2)
        files: dict[str, str] = {}
        for _ in range(batch):
            i = created
            created += 1
            name = f"mem-{i:06d}"
            roll = rng.random()
            kind = rng.choice(RULES) if roll < 0.16 else rng.choice(PLAIN_TYPES)
            extra: dict[str, object] = rule_fields(rng, text) if kind in RULES else {}
            if rng.random() < 0.10:
                extra["files"] = [rng.choice(CODE), f"src/mod{rng.randrange(200):03d}/*.py"]
            description = text.sample(rng.randint(6, 14))[:200]
            if made and rng.random() < 0.02:  # a near-duplicate of a recent one
                description = made[-1].memory.description
            links: tuple[str, ...] = ()
            if made and rng.random() < 0.33:
                picks = {rng.choice(made).memory.name for _ in range(rng.randint(1, 2))}
                links = tuple(sorted(picks))
            memory = Memory(
                name=name,
                description=description,
                type=kind,
                status=Status.DRAFT.value,
                owner=owner,
                created=stamp(t),
                updated=stamp(t),
                tags=tuple(sorted(set(rng.sample(TECH, rng.choice((0, 1, 1, 2, 2, 3)))))),
                links=links,
                body=text.sample(rng.randint(40, 160)),
                extra=extra,
            )
            path = f"memory/{kind}/{name}.md"
            files[path] = render(memory)
            item = Made(memory, path, rng.random() < 0.40, rng.random() < 0.02)
            made.append(item)
            (to_confirm if item.confirm else to_deprecate if item.deprecate else []).append(item)
        what = f"{batch} memories" if batch > 1 else made[-1].path[7:-3]
        stream.commit(owner, t, f"memory: add {what}", files)
        # Reviews come in their own commits, by someone who owns none of what they confirm.
        if len(to_confirm) >= rng.randint(20, 80) or (created == n and to_confirm):
            confirmer = rng.choice(IDENTITIES)
            mine = [m for m in to_confirm if m.memory.owner != confirmer]
            to_confirm = [m for m in to_confirm if m.memory.owner == confirmer]
            t += rng.randint(1, step)
            files = {}
            for m in mine:
                m.memory = transition(
                    m.memory, Status.CONFIRMED, actor=confirmer, reason="checked", at=stamp(t)
                )
                files[m.path] = render(m.memory)
            stream.commit(confirmer, t, f"memory: confirm {len(mine)} memories", files)
        # An owner deprecates what went out of date, in their own commit.
        if to_deprecate and (len(to_deprecate) >= 5 or created == n):
            item = to_deprecate.pop(0)
            t += 1
            item.memory = transition(
                item.memory,
                Status.DEPRECATED,
                actor=item.memory.owner,
                reason="outdated",
                at=stamp(t),
            )
            stream.commit(
                item.memory.owner,
                t,
                f"memory: deprecate {item.memory.type}/{item.memory.name}",
                {item.path: render(item.memory)},
            )
        if created - last_code_change >= max(100, n // 20):  # code moves on, some drift
            last_code_change = created
            t += 60
            stream.commit(
                LEAD,
                t,
                "code moves on",
                {rel: f"v{created}\n" for rel in rng.sample(CODE, 10)},
            )
        if created >= next_log:
            next_log += max(1000, n // 20)
            log(f"  generate: {created:,}/{n:,} memories, {stream.commits:,} commits")
    for item in to_deprecate:  # the rest: about 1% end deprecated
        t += 1
        item.memory = transition(
            item.memory,
            Status.DEPRECATED,
            actor=item.memory.owner,
            reason="outdated",
            at=stamp(t),
        )
        stream.commit(
            item.memory.owner,
            t,
            f"memory: deprecate {item.memory.type}/{item.memory.name}",
            {item.path: render(item.memory)},
        )
    stream.close()
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=top, check=True, env=git_env())
    return stream.commits


# -- measuring ----------------------------------------------------------------------------------

AGENT = "bench-user"
"""Who the measured calls act as: an identity that owns none of the generated memories."""
TASK = "deploy the cache migration to postgres and roll back on timeout"
ROWS = (
    "session_start",
    "brief",
    "list",
    "fresh_search",
    "first_recall",
    "recall",
    "store",
    "cli",
    "lint",
    "doctor",
    "reindex",
    "serve_memory",
    "git",
)
"""The rows, in the order of the table; `--skip` and `--only` take these names."""
SLOW = 20.0
"""A call that takes longer than this many seconds is not repeated for its median."""


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


@dataclass
class Bench:
    top: Path
    runs: int
    timeout: float
    cpu: dict[str, list[float]] = field(default_factory=dict[str, list[float]])

    @property
    def store(self) -> Path:
        return self.top / "memory"

    def env(self) -> dict[str, str]:
        return {**git_env(AGENT), "MEMSTORE_AGENT": AGENT}

    def cli(self, *args: str, check: bool = True, label: str | None = None) -> float:
        """Seconds one `memstore ARGS` takes in a new process; its CPU seconds (user and
        system, what a quiet machine would take) go to `cpu` under `label`."""
        cmd = [sys.executable, "-m", "memstore", "--store", str(self.store), *args]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(
            cmd, cwd=self.top, env=self.env(), capture_output=True, timeout=self.timeout
        )
        took = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        self.cpu.setdefault(label or args[0], []).append(used)
        if check and done.returncode != 0:
            tail = (done.stderr or done.stdout).decode(errors="replace").strip()[-400:]
            raise RuntimeError(f"memstore {' '.join(args)} exited {done.returncode}: {tail}")
        return took

    def repeat(self, fn: Callable[[], float], runs: int | None = None) -> float:
        """The median of `runs` calls of `fn`; one call when the first is slow."""
        first = fn()
        times = [first]
        if first < SLOW:
            times += [fn() for _ in range((runs or self.runs) - 1)]
        return median(times)

    def forget_caches(self, keep_index: bool = True) -> None:
        """Remove the store's derived caches (trust verdicts, ...), keeping the index."""
        cache = self.store / ".memstore"
        if not cache.is_dir():
            return
        for entry in cache.iterdir():
            if keep_index and entry.name == "index":
                continue
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()


def seconds(value: float) -> str:
    if value >= 10:
        return f"{value:.0f} s"
    if value >= 1:
        return f"{value:.1f} s"
    return f"{value:.2f} s"


def millis(value: float) -> str:
    return f"{value * 1000:.1f} ms" if value < 0.1 else f"{value * 1000:.0f} ms"


def queries(n: int, seed: int = 11) -> list[str]:
    """Queries in the generated stores' words (the same vocabulary: the same seed builds it)."""
    text = Text(random.Random(7))
    text.rng = random.Random(seed)
    return [text.sample(random.Random(seed + i).randint(2, 5)) for i in range(n)]


def rss_peak(pid: int | None) -> int | None:
    """The peak resident memory of process `pid` in bytes (VmHWM), where /proc tells."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def server_pid(tag: str) -> int | None:
    wanted = f"MEMSTORE_BENCH_SCALE={tag}".encode()
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if wanted in environ.read_bytes().split(b"\0"):
                return int(environ.parent.name)
        except OSError:
            continue
    return None


async def mcp_rows(bench: Bench, rows: set[str], size: int) -> dict[str, str]:
    """The MCP rows: each `session_start` on a new server, and one server for the rest."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.types import CallToolResult, TextContent

    def params(tag: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "memstore", "--store", str(bench.store), "serve"],
            env={**bench.env(), "MEMSTORE_BENCH_SCALE": tag},
            cwd=str(bench.top),
        )

    def checked(result: CallToolResult) -> CallToolResult:
        if result.is_error:
            block = result.content[0] if result.content else None
            raise RuntimeError(block.text if isinstance(block, TextContent) else "tool error")
        return result

    out: dict[str, str] = {}
    errlog = open(os.devnull, "w")  # noqa: SIM115  (open for the servers' whole life)

    async def call(client: Client, tool: str, arguments: dict[str, object]) -> float:
        t0 = time.perf_counter()
        with anyio.fail_after(bench.timeout):
            checked(await client.call_tool(tool, arguments))
        return time.perf_counter() - t0

    if "session_start" in rows:
        times: list[float] = []
        for run in range(bench.runs):
            log(f"  session_start on a new server ({run + 1}/{bench.runs})")
            async with Client(
                stdio_client(params(f"start-{run}"), errlog=errlog),
                read_timeout_seconds=bench.timeout,
            ) as client:
                await client.list_tools()
                try:
                    times.append(await call(client, "session_start", {"task": TASK}))
                except TimeoutError:
                    out["session_start"] = f"> {bench.timeout:.0f} s (timed out)"
                    break
            if times[-1] > SLOW:
                break
        if times:
            out["session_start"] = (
                seconds(median(times)) if median(times) >= 1 else millis(median(times))
            )
    wanted = {"first_recall", "recall", "store", "serve_memory"} & rows
    if not wanted:
        errlog.close()
        return out
    qs = queries(101)
    tag = f"main-{os.getpid()}"
    log("  one server: first recall, 100 recalls, 30 writes, session_start")
    async with Client(
        stdio_client(params(tag), errlog=errlog), read_timeout_seconds=bench.timeout
    ) as client:
        await client.list_tools()
        pid = server_pid(tag)
        first = await call(client, "memory_recall", {"query": qs[0]})
        out["first_recall"] = millis(first) if first < 1 else seconds(first)
        recalls = [await call(client, "memory_recall", {"query": q}) for q in qs[1:]]
        out["recall"] = f"{millis(median(recalls))} / {millis(pct(recalls, 0.95))}"
        text = Text(random.Random(7))
        text.rng = random.Random(23)
        writes: list[float] = []
        for i in range(30):
            arguments: dict[str, object] = {
                "name": f"scale-write-{os.getpid()}-{i:02d}",
                "type": "fact",
                "description": text.sample(10)[:200],
                "body": text.sample(80),
            }
            writes.append(await call(client, "memory_store", arguments))
        out["store"] = millis(median(writes))
        try:
            await call(client, "session_start", {"task": TASK})
        except TimeoutError:
            log("  session_start timed out on the measured server")
        peak = rss_peak(pid)
        out["serve_memory"] = f"{peak / 1e6:.0f} MB" if peak else "n/a"
    errlog.close()
    return out


def git_row(top: Path) -> str:
    done = subprocess.run(
        ["git", "count-objects", "-v"], cwd=top, capture_output=True, text=True, check=True
    )
    fields = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    kib = int(fields.get("size", "0")) + int(fields.get("size-pack", "0"))
    return f"{kib / 1024:.1f} MB, {int(fields.get('count', '0')):,} loose objects"


class Logged(dict[str, str]):
    """A row's figures, each also said on stderr as it is measured (a long run shows them)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def __setitem__(self, key: str, value: str) -> None:
        log(f"[{self.size:,}]   {key}: {value}")
        super().__setitem__(key, value)


def measure(source: Path, size: int, rows: set[str], runs: int, timeout: float) -> dict[str, str]:
    """Every wanted row on a fresh clone of the repository at `source`."""
    import tempfile

    out: dict[str, str] = Logged(size)
    with tempfile.TemporaryDirectory(prefix=f"scale-{size}-") as tmp:
        top = Path(tmp) / "repo"
        log(f"[{size:,}] clone {source}")
        subprocess.run(["git", "clone", "-q", str(source), str(top)], check=True, env=git_env())
        bench = Bench(top, runs, timeout)
        qs = queries(runs * 2 + 2, seed=5)
        if "reindex" in rows:
            log(f"[{size:,}] reindex")
            out["reindex"] = seconds(bench.repeat(lambda: bench.cli("reindex"), runs=1))
        else:
            bench.cli("reindex")
        if "fresh_search" in rows:
            # As a fresh clone whose index is built: no trust verdicts cached yet.
            log(f"[{size:,}] first search with no trust cache")
            bench.forget_caches()
            out["fresh_search"] = seconds(bench.cli("search", qs[0], label="search (no cache)"))
        bench.cli(
            "search", "warm up", label="warm-up"
        )  # the trust cache and the index, as a used store has them
        if "brief" in rows:
            log(f"[{size:,}] brief")
            out["brief"] = seconds(bench.repeat(lambda: bench.cli("brief", "--no-mark")))
        if "list" in rows:
            log(f"[{size:,}] list / stats")
            listed = bench.repeat(lambda: bench.cli("list"))
            stats = bench.repeat(lambda: bench.cli("stats"))
            out["list"] = f"{seconds(listed)} / {seconds(stats)}"
        if "cli" in rows:
            log(f"[{size:,}] search / add in a new process")
            words = iter(qs[1:])
            found = bench.repeat(lambda: bench.cli("search", next(words)))
            count = iter(range(1000))

            def add() -> float:
                i = next(count)
                return bench.cli(
                    "add", f"scale-add-{i:03d}", "--type", "fact", "-d", f"bench add {i}"
                )

            added = bench.repeat(add)
            out["cli"] = f"{seconds(added)} / {seconds(found)}"
        if rows & {"session_start", "first_recall", "recall", "store", "serve_memory"}:
            import anyio

            log(f"[{size:,}] MCP rows")
            for key, value in anyio.run(mcp_rows, bench, rows, size).items():
                out[key] = value
        if "lint" in rows:
            log(f"[{size:,}] lint with no cache, then warm")
            bench.forget_caches()
            full = bench.cli("lint", check=False, label="lint (no cache)")
            warm = bench.repeat(lambda: bench.cli("lint", check=False))
            out["lint"] = f"{seconds(full)} / {seconds(warm)}"
        if "doctor" in rows:
            log(f"[{size:,}] doctor with no cache, then warm")
            bench.forget_caches()
            cold = bench.cli("doctor", check=False, label="doctor (no cache)")
            warm = bench.repeat(lambda: bench.cli("doctor", check=False))
            out["doctor"] = f"{seconds(cold)} / {seconds(warm)}"
        if "git" in rows:
            out["git"] = git_row(top)
        for label, used in bench.cpu.items():
            if label != "warm-up":
                out[f"cpu:{label}"] = seconds(median(used))
    return out


LABELS = {
    "session_start": "MCP `session_start` with a task (new server)",
    "brief": "`memstore brief`",
    "list": "`memstore list` / `stats`",
    "fresh_search": "first search after a fresh clone (index built, no trust cache)",
    "first_recall": "MCP first recall of a session",
    "recall": "MCP `memory_recall` p50 / p95",
    "store": "MCP `memory_store` p50",
    "cli": "`memstore add` / `memstore search` (new process)",
    "lint": "`lint` no cache / warm",
    "doctor": "`doctor` no cache / warm",
    "reindex": "`reindex`",
    "serve_memory": "`serve` peak memory (100 recalls, 30 writes, a session_start)",
    "git": "`.git` size, loose objects (after the measured writes)",
}


def number(value: str) -> float | None:
    """The first figure of a cell in seconds (or MB), for growth ratios."""
    head = value.split("/")[0].strip().lstrip("> ")
    parts = head.split()
    if len(parts) < 2:
        return None
    try:
        figure = float(parts[0].replace(",", ""))
    except ValueError:
        return None
    return figure / 1000 if parts[1] == "ms" else figure


def table(results: dict[int, dict[str, str]], rows: list[str]) -> str:
    sizes = sorted(results)
    head = "| call | " + " | ".join(f"{s:,}" for s in sizes)
    pairs = list(zip(sizes, sizes[1:], strict=False))
    head += "".join(f" | {b // 1000}k/{a // 1000}k" for a, b in pairs) + " |"
    lines = [head, "|---" * (1 + len(sizes) + len(pairs)) + "|"]
    for row in rows:
        cells = [results[s].get(row, "") for s in sizes]
        if not any(cells):
            continue
        ratios: list[str] = []
        for a, b in pairs:
            x, y = number(results[a].get(row, "")), number(results[b].get(row, ""))
            ratios.append(f"{y / x:.1f}×" if x and y else "")
        label = LABELS.get(row) or f"`memstore {row.removeprefix('cpu:')}`"
        lines.append(f"| {label} | " + " | ".join([*cells, *ratios]) + " |")
    return "\n".join(lines)


# -- the command -------------------------------------------------------------------------------


def names(value: str) -> set[str]:
    picked = {v.strip() for v in value.split(",") if v.strip()}
    unknown = picked - set(ROWS)
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown row {', '.join(sorted(unknown))}; rows are: {', '.join(ROWS)}"
        )
    return picked


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--size", type=int, help="one store size")
    ap.add_argument("--sizes", type=int, nargs="+", help="several sizes (default 1000 10000)")
    ap.add_argument("--out", type=Path, help="with --size: generate the repository there, no more")
    ap.add_argument(
        "--from",
        dest="source",
        help="measure clones of this repository (use {size} for the size) instead of generating",
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=3, help="runs per row for its median")
    ap.add_argument("--timeout", type=float, default=600, help="seconds before a call gives up")
    ap.add_argument("--skip", type=names, default=set(), help="rows to leave out: a,b")
    ap.add_argument("--only", type=names, default=None, help="only these rows: a,b")
    args = ap.parse_args()
    if args.out is not None:
        if args.size is None:
            ap.error("--out needs --size")
        if args.out.exists() and any(args.out.iterdir()):
            ap.error(f"{args.out} exists and is not empty")
        t0 = time.perf_counter()
        commits = generate(args.out, args.size, args.seed)
        log(
            f"generated {args.size:,} memories in {commits:,} commits at {args.out} "
            f"in {time.perf_counter() - t0:.1f} s"
        )
        return
    sizes: list[int] = args.sizes or ([args.size] if args.size else [1000, 10000])
    rows = (args.only or set(ROWS)) - args.skip
    results: dict[int, dict[str, str]] = {}
    import tempfile

    for size in sizes:
        if args.source:
            source = Path(args.source.replace("{size}", str(size)))
            if not (source / ".git").exists():
                ap.error(f"{source} is not a git repository")
            results[size] = measure(source, size, rows, args.runs, args.timeout)
        else:
            with tempfile.TemporaryDirectory(prefix=f"scale-src-{size}-") as tmp:
                log(f"[{size:,}] generate")
                generate(Path(tmp) / "repo", size, args.seed)
                results[size] = measure(Path(tmp) / "repo", size, rows, args.runs, args.timeout)
        log(f"[{size:,}] done: {results[size]}")
    load = os.getloadavg()
    print(
        f"# memstore at scale: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; medians of {args.runs} runs\n"
    )
    print(table(results, [r for r in ROWS if r in rows]))
    cpu = sorted({k for r in results.values() for k in r if k.startswith("cpu:")})
    if cpu:
        print("\nCPU seconds (user + system) of each CLI process, median:\n")
        print(table(results, cpu))


if __name__ == "__main__":
    main()
