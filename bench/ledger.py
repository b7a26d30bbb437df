"""How long ledger check, record and verify take as the ledger's git history grows.

Builds a store whose ledger has N events, one commit each (as memstore makes them), with
`git fast-import`, then times the first `ledger_io.check` (no history cache yet: one full
`git log -p`), then warm `ledger_io.check`, `record` and `verify`, and a plain
`git log -p` of the ledger for scale.

    .venv/bin/python bench/ledger.py            # N = 100, 1000, 5000
    .venv/bin/python bench/ledger.py 200 2000   # other sizes
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memstore.storage.store import Store
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.ledger import lines as ledger

REPEAT = 9
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def build(root: Path, count: int) -> Store:
    """A store with `count` chained `done` events, each in its own commit."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    store = Store.init(root, agent="bench")
    lines: list[str] = []
    heads: tuple[str, ...] = ()
    chunks: list[bytes] = []
    parent = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, env=env, capture_output=True, text=True
    ).stdout.strip()
    for i in range(count):
        event = ledger.new_event(
            actor=f"agent{i % 8}",
            action="publish",
            target=f"post-{i}",
            status=ledger.DONE,
            at=T0 + timedelta(seconds=i),
            prev=heads,
            evidence=f"https://blog.example.com/post-{i}",
        )
        heads = (event.hash,)
        lines.append(ledger.render(event))
        content = ("\n".join(lines) + "\n").encode("utf-8")
        message = ledger.commit_message(event).encode("utf-8")
        stamp = 1767225600 + i
        chunks.append(
            b"commit refs/heads/main\n"
            + f"committer {event.actor} <x@memstore.invalid> {stamp} +0000\n".encode()
            + f"data {len(message)}\n".encode()
            + message
            + b"\n"
            + (f"from {parent}\n".encode() if i == 0 else b"")
            + f"M 100644 inline ledger.jsonl\ndata {len(content)}\n".encode()
            + content
            + b"\n"
        )
    subprocess.run(
        ["git", "fast-import", "--quiet", "--force"],
        cwd=root,
        env=env,
        input=b"".join(chunks),
        check=True,
    )
    subprocess.run(["git", "reset", "--hard", "-q", "main"], cwd=root, env=env, check=True)
    return store


def median_ms(action: Callable[[], object]) -> float:
    times: list[float] = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(count: int) -> str:
    """One row of the table for a ledger of `count` events."""
    with tempfile.TemporaryDirectory() as tmp:
        store = build(Path(tmp) / "memory", count)
        counter = iter(range(10**6))
        start = time.perf_counter()
        ledger_io.check(store, "publish", "post-0")  # no cache yet: reads the whole history
        cold = (time.perf_counter() - start) * 1000
        check = median_ms(lambda: ledger_io.check(store, "publish", f"post-{count // 2}"))
        record = median_ms(
            lambda: ledger_io.record(
                store, "deploy", f"api-{next(counter)}", evidence="https://ci.example.com/1"
            )
        )
        verify = median_ms(lambda: ledger_io.verify(store))
        log = median_ms(
            lambda: subprocess.run(
                ["git", "log", "-p", "--", "ledger.jsonl"],
                cwd=store.root,
                capture_output=True,
                check=True,
            )
        )
        assert ledger_io.verify(store).ok
        return f"{count:>7} {cold:>11.1f} {check:>8.1f} {record:>8.1f} {verify:>8.1f} {log:>11.1f}"


def main(sizes: list[int]) -> None:
    print(f"machine: {platform.machine()} {platform.processor() or ''} cpus={os.cpu_count()}")
    print(f"python {platform.python_version()}, {subprocess.getoutput('git --version')}")
    print(f"median of {REPEAT} runs, milliseconds")
    print(
        f"{'events':>7} {'cold check':>11} {'check':>8} {'record':>8} {'verify':>8} "
        f"{'git log -p':>11}"
    )
    for count in sizes:
        print(measure(count), flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100, 1000, 5000])
