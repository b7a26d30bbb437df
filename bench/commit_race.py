"""A person committing with plain git while agents write: does every memory land, in its
agent's own commit?

    python bench/commit_race.py [--runs 10] [--agents 4] [--adds 5] [--commits 10] [--seed 1]

Each run is a fresh project repository with a store in `memory/`. `--agents` agents add
`--adds` memories each, at once: the even-numbered ones through the CLI (a new
`memstore add` process per memory), the odd-numbered ones through the real MCP client and a
`memstore serve` process each (`memory_store`). Meanwhile a person edits a project file and
commits with plain git, at least `--commits` times and until the agents are done, turn about
`git commit --allow-empty`, `git add -A && git commit` and `git commit -a`, retrying after
a pause whenever git refuses (another git, or memstore, holds `index.lock`; HEAD moved).

After each run:

- every memory an agent was told was saved is at HEAD, and the commit that added it is its
  agent's (never the person's: a memory swept into a person's commit would be theirs);
- no commit of the person's touches the store;
- `git status` is clean, `git fsck --strict` finds no error, and no lock file (`*.lock` in
  `.git`), memstore mark or journal is left.

Prints one JSON line per run and a summary; exits 1 if any run broke one of the above.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

PERSON_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "person",
    "GIT_AUTHOR_EMAIL": "person@example.com",
    "GIT_COMMITTER_NAME": "person",
    "GIT_COMMITTER_EMAIL": "person@example.com",
}
AGENT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "MEMSTORE_LOCK_TIMEOUT": "60",
    "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
}
STYLES = ("allow-empty", "add-all", "commit-all")
REFUSALS = ("index.lock", "cannot lock ref", "Unable to create", "but expected")


def _git(top: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=top,
        env={**os.environ, **PERSON_ENV},
        capture_output=True,
        text=True,
        check=check,
    )


def _memstore(store: Path, agent: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "memstore", "--store", str(store), "--agent", agent, *args]


def setup(top: Path) -> Path:
    """A project repository with one committed file and a store in `memory/`."""
    top.mkdir()
    _git(top, "init", "-q", "--initial-branch=main")
    (top / "notes.txt").write_text("notes\n", encoding="utf-8")
    _git(top, "add", "notes.txt")
    _git(top, "commit", "-q", "-m", "project start")
    store = top / "memory"
    done = subprocess.run(
        _memstore(store, "setup", "init"),
        env={**os.environ, **AGENT_ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memstore init failed: {done.stderr}")
    return store


def _name(agent: int, i: int) -> str:
    return f"a{agent}-note-{i}"


async def cli_agent(store: Path, n: int, adds: int, saved: dict[str, str], errors: list[str]):
    agent = f"agent-{n}"
    for i in range(adds):
        name = _name(n, i)
        args = _memstore(store, agent, "add", name, "--type", "fact", "-d", f"fact {i} by {agent}")
        done = await anyio.run_process(
            [*args, "--body", f"token {name}"],
            env={**os.environ, **AGENT_ENV},
            check=False,
        )
        if done.returncode == 0:
            saved[name] = agent
        else:
            errors.append(f"{agent} add {name}: {done.stderr.decode('utf-8', 'replace').strip()}")


async def mcp_agent(store: Path, n: int, adds: int, saved: dict[str, str], errors: list[str]):
    agent = f"agent-{n}"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memstore", "--store", str(store), "serve"],
        env={**AGENT_ENV, "MEMSTORE_AGENT": agent, "PATH": os.environ.get("PATH", "")},
    )
    async with Client(params, read_timeout_seconds=120) as client:
        for i in range(adds):
            name = _name(n, i)
            result = await client.call_tool(
                "memory_store",
                {
                    "name": name,
                    "type": "fact",
                    "description": f"fact {i} by {agent}",
                    "body": f"token {name}",
                },
            )
            if result.is_error:
                block = result.content[0]
                why = block.text if isinstance(block, TextContent) else str(block)
                errors.append(f"{agent} memory_store {name}: {why}")
            else:
                saved[name] = agent


def _person_commit(top: Path, style: str, n: int, rng: random.Random) -> tuple[bool, int]:
    """One commit by the person in `style`, retried while git refuses; (done, refusals)."""
    refused = 0
    if style != "allow-empty":
        with (top / "notes.txt").open("a", encoding="utf-8") as f:
            f.write(f"line {n}\n")
    for _ in range(500):
        if style == "allow-empty":
            steps = [["commit", "-q", "--allow-empty", "-m", f"person {n}"]]
        elif style == "add-all":
            steps = [["add", "-A"], ["commit", "-q", "-m", f"person {n}"]]
        else:
            steps = [["commit", "-q", "-a", "-m", f"person {n}"]]
        for step in steps:
            done = _git(top, *step, check=False)
            if done.returncode != 0:
                break
        else:
            return True, refused
        said = done.stdout + done.stderr
        if not any(r in said for r in REFUSALS):
            raise RuntimeError(f"git {' '.join(step)} failed: {said.strip()}")
        refused += 1
        time.sleep(rng.uniform(0.001, 0.02))
    return False, refused


async def person(top: Path, commits: int, rng: random.Random, agents_done: anyio.Event):
    made = refused = 0
    failed: list[str] = []
    while made < commits or not agents_done.is_set():
        style = STYLES[made % len(STYLES)]
        ok, refusals = await anyio.to_thread.run_sync(_person_commit, top, style, made, rng)
        refused += refusals
        if not ok:
            failed.append(f"person {made} ({style}) never got through")
        made += 1
        await anyio.sleep(rng.uniform(0, 0.05))
    return {"commits": made, "refused by git": refused, "failed": failed}


def check(top: Path, store: Path, saved: dict[str, str]) -> list[str]:
    """What is wrong after a run (nothing, when all is well)."""
    problems: list[str] = []
    rel = store.relative_to(top).as_posix()
    at_head = set(_git(top, "ls-tree", "-r", "--name-only", "HEAD", "--", rel).stdout.split())
    for name, agent in sorted(saved.items()):
        path = f"{rel}/fact/{name}.md"
        if path not in at_head:
            problems.append(f"{path}: saved by {agent}, missing at HEAD")
            continue
        added = _git(top, "log", "--diff-filter=A", "--format=%an", "--", path).stdout.split()
        if added != [agent]:
            problems.append(f"{path}: added by {added or 'nobody'}, not by {agent}")
    for line in _git(top, "log", "--format=%H %an").stdout.splitlines():
        sha, author = line.split(" ", 1)
        if author == "person":
            touched = _git(top, "show", "--name-only", "--format=", sha).stdout.split()
            if [p for p in touched if p.startswith(f"{rel}/")]:
                problems.append(f"the person's commit {sha[:10]} holds {touched}")
    status = _git(top, "status", "--porcelain", "--untracked-files=all").stdout
    if status:
        problems.append(f"git status not clean: {status.strip()}")
    fsck = _git(top, "fsck", "--strict", check=False)
    errors = [
        ln for ln in (fsck.stdout + fsck.stderr).splitlines() if not ln.startswith("dangling")
    ]
    if fsck.returncode != 0 or errors:
        problems.append(f"git fsck --strict: {errors}")
    git_dir = top / ".git"
    left = [p.relative_to(git_dir).as_posix() for p in git_dir.rglob("*.lock")]
    left += [p.name for p in git_dir.glob("memstore-index.*")]
    if (store / ".memstore" / "pending.json").exists():
        left.append("memory/.memstore/pending.json")
    if left:
        problems.append(f"left behind: {left}")
    return problems


async def one_run(top: Path, agents: int, adds: int, commits: int, seed: int) -> dict[str, Any]:
    store = setup(top)
    rng = random.Random(seed)
    saved: dict[str, str] = {}
    errors: list[str] = []
    done = anyio.Event()
    result: dict[str, Any] = {}
    start = time.perf_counter()

    async def agents_then_done() -> None:
        async with anyio.create_task_group() as inner:
            for n in range(agents):
                runner = cli_agent if n % 2 == 0 else mcp_agent
                inner.start_soon(runner, store, n, adds, saved, errors)
        done.set()

    async def the_person() -> None:
        result.update(await person(top, commits, rng, done))

    async with anyio.create_task_group() as group:
        group.start_soon(agents_then_done)
        group.start_soon(the_person)
    problems = errors + result.pop("failed") + check(top, store, saved)
    return {
        "seed": seed,
        "memories saved": len(saved),
        "memories asked": agents * adds,
        **result,
        "seconds": round(time.perf_counter() - start, 1),
        "problems": problems,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--adds", type=int, default=5)
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memstore-commit-race-") as tmp:
        for r in range(args.runs):
            top = Path(tmp) / f"run-{r}"
            run = anyio.run(one_run, top, args.agents, args.adds, args.commits, args.seed + r)
            print(json.dumps(run), flush=True)
            runs.append(run)
    bad = [r for r in runs if r["problems"] or r["memories saved"] != r["memories asked"]]
    summary = {
        "runs": len(runs),
        "runs with a problem": len(bad),
        "memories saved": sum(r["memories saved"] for r in runs),
        "memories asked": sum(r["memories asked"] for r in runs),
        "person commits": sum(r["commits"] for r in runs),
        "person refused by git (retried)": sum(r["refused by git"] for r in runs),
    }
    print(json.dumps(summary, indent=2))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
