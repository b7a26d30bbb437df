"""How long `check` and `brief` take on a generated store, in-process and through the CLI.

A PreToolUse hook runs `memstore check --hook claude-code` before every shell command, so its
wall time through the CLI (Python start-up included) is what an agent waits for each time.

    .venv/bin/python bench/workflow_bench.py [--sizes 1000,10000] [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memstore.model.memory import Memory, render
from memstore.storage.store import Store
from memstore.workflow.session import agent as session
from memstore.workflow.session import briefing

TYPES = ("decision", "fact", "runbook", "pattern", "incident")
WORDS = "deploy publish release migrate cache index api schema queue worker token build".split()


def generate(root: Path, size: int) -> Store:
    """A store of `size` memories (about 2% of them rules, a third drafts), in one commit."""
    store = Store.init(root, agent="bench")
    at = "2026-11-30T09:00:00Z"
    for i in range(size):
        rule = i % 50 == 0
        kind = ("correction" if i % 100 == 0 else "warning") if rule else TYPES[i % len(TYPES)]
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
        extra = {"severity": f"p{i % 4}", "applies_when": [f"{a} {b}", f"{b}-{i}/*.sql"]}
        memory = Memory(
            name=f"{kind}-{i}",
            description=f"When you {a} the {b}, remember item {i}",
            type=kind,
            status="draft" if i % 3 else "confirmed",
            owner="alice" if i % 2 else "bob",
            created=at,
            updated=at,
            confirmed_by=None if i % 3 else ("bob" if i % 2 else "alice"),
            body=f"Body of memory {i}: why and how to apply, a few lines of text.",
            extra=extra if rule else {},
        )
        path = store.root / kind / f"{memory.name}.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text(render(memory), encoding="utf-8", newline="\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "b@x",
    }
    subprocess.run(["git", "add", "-A"], cwd=store.root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "bench store"], cwd=store.root, check=True, env=env)
    return store


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median and max wall time of `fn` in milliseconds, after one warm-up call."""
    fn()
    times: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times)


def measure(store: Store, size: int, payload: str, runs: int) -> None:
    """Print the timings of one store."""
    cli = [sys.executable, "-m", "memstore", "--store", str(store.root), "--agent", "x"]
    few = max(3, runs // 3)
    rows = {
        "Store.check": timed(lambda: session.check(store, "deploy the release and publish"), runs),
        "Store.brief --for": timed(
            lambda: briefing.brief(store, for_text="release 1.4.1", mark=False), runs
        ),
        "CLI check --hook": timed(
            lambda: subprocess.run(
                [*cli, "check", "--hook", "claude-code"],
                input=payload,
                capture_output=True,
                text=True,
                check=True,
            ),
            few,
        ),
        "CLI brief": timed(
            lambda: subprocess.run(
                [*cli, "brief", "--no-mark"], capture_output=True, text=True, check=True
            ),
            few,
        ),
    }
    print(f"\n{size} memories ({len(session.rules(store))} rules):")
    for label, (median, worst) in rows.items():
        print(f"  {label:20} median {median:8.1f} ms   max {worst:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": "npm publish 1.4.1"}})
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "memory"
            measure(generate(root, size), size, payload, args.runs)


if __name__ == "__main__":
    main()
