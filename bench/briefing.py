"""CPU of a briefing on a big store: MCP `session_start` on a warm server, `memstore brief`.

    .venv/bin/python bench/briefing.py /tmp/clone [--runs 5] [--python OTHER/.venv/bin/python]

`/tmp/clone` is a repository whose `memory/` store is indexed (`memstore reindex`), e.g. a
clone of a `bench/scale.py` store. One `memstore serve` is started through the real `mcp`
client; its first `session_start` warms it (the catalog, the verdicts, the index), then each
later call's cost is the server's own CPU time (`/proc/<pid>/stat`), which moves far less
with a shared machine's load than wall time. `memstore brief --for TASK --no-mark` runs in a
new process each time, its CPU from the children's rusage. `--python` runs another
checkout's memstore (its venv's Python) the same way: a before-and-after on the same store.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

TASK = "deploy the cache migration to postgres and roll back on timeout"
AGENT = "bench-user"
"""Who the calls act as: an identity that owns none of the generated memories."""


def env(tag: str) -> dict[str, str]:
    return {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "MEMSTORE_AGENT": AGENT,
        "MEMSTORE_BENCH_BRIEFING": tag,
    }


def server_pid(tag: str) -> int | None:
    wanted = f"MEMSTORE_BENCH_BRIEFING={tag}".encode()
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if wanted in environ.read_bytes().split(b"\0"):
                return int(environ.parent.name)
        except OSError:
            continue
    return None


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds process `pid` has used so far."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


async def session_starts(python: str, top: Path, runs: int) -> list[tuple[float, float]]:
    """(server CPU, wall) seconds of each `session_start` after the first, on one server."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    tag = f"serve-{os.getpid()}-{time.monotonic_ns()}"
    params = StdioServerParameters(
        command=python,
        args=["-m", "memstore", "--store", str(top / "memory"), "serve"],
        env=env(tag),
        cwd=str(top),
    )
    out: list[tuple[float, float]] = []
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=600) as client:
            await client.list_tools()
            pid = server_pid(tag)
            assert pid is not None, "the server's process was not found"
            for run in range(runs + 1):
                before, t0 = cpu_seconds(pid), time.perf_counter()
                with anyio.fail_after(600):
                    result = await client.call_tool("session_start", {"task": TASK})
                wall = time.perf_counter() - t0
                assert not result.is_error, result.content
                if run:  # the first call warms the server
                    out.append((cpu_seconds(pid) - before, wall))
    return out


def brief(python: str, top: Path) -> tuple[float, float]:
    """(CPU, wall) seconds of one `memstore brief --for TASK --no-mark` in a new process."""
    cmd = [python, "-m", "memstore", "--store", str(top / "memory"), "brief", "--no-mark"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([*cmd, "--for", TASK], cwd=top, env=env("cli"), check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu, wall


def figures(label: str, pairs: list[tuple[float, float]]) -> str:
    cpu = sorted(c for c, _ in pairs)
    wall = sorted(w for _, w in pairs)
    return (
        f"{label:<34} CPU median {cpu[len(cpu) // 2]:.2f} s (min {cpu[0]:.2f}, max {cpu[-1]:.2f})"
        f"   wall median {wall[len(wall) // 2]:.2f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("top", type=Path, help="a repository whose memory/ store is indexed")
    ap.add_argument("--runs", type=int, default=5, help="measured calls of each kind")
    ap.add_argument("--python", default=sys.executable, help="the Python of the memstore to run")
    ap.add_argument("--only", choices=("session_start", "brief"), help="one of the two")
    args = ap.parse_args()
    import anyio

    print(f"load average: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    if args.only != "brief":
        pairs = anyio.run(session_starts, args.python, args.top, args.runs)
        print(figures("MCP session_start (warm server)", pairs), flush=True)
    if args.only != "session_start":
        brief(args.python, args.top)  # the first run may bring the caches up to date
        print(
            figures(
                "memstore brief --for (new process)",
                [brief(args.python, args.top) for _ in range(args.runs)],
            ),
            flush=True,
        )
    print(f"load average: {os.getloadavg()[0]:.1f}", file=sys.stderr)


if __name__ == "__main__":
    main()
