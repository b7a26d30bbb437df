"""Stewardship benchmark: `doctor` on a generated store, and the duplicate hint on a write.

    .venv/bin/python bench/doctor.py [--size 10000] [--writes 100]

The store is generated as in bench/latency.py (files written directly, few commits): every
memory created as a draft by `bench` in one commit, 40% confirmed by `reviewer` in a second
(real confirmations the history backs), a fifth of them naming code files, a third commit
changing some of that code (so some confirmations have drifted), and 2% near-duplicates.

Timings on a shared machine read high: compare the figures of one run with each other.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency import TECH, Text  # noqa: E402  (a sibling script, not a package)

from memstore.model.memory import DEFAULT_TYPES, Memory, content_hash, evolve, now, render  # noqa: E402
from memstore.search import upkeep as search
from memstore.storage.store import Store  # noqa: E402
from memstore.workflow.care import steward  # noqa: E402


def git_env(who: str) -> dict[str, str]:
    return {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": who,
        "GIT_AUTHOR_EMAIL": f"{who}@example.com",
        "GIT_COMMITTER_NAME": who,
        "GIT_COMMITTER_EMAIL": f"{who}@example.com",
    }


def commit(top: Path, who: str, message: str) -> None:
    subprocess.run(["git", "add", "-A"], cwd=top, env=git_env(who), check=True)
    subprocess.run(["git", "commit", "-qm", message], cwd=top, env=git_env(who), check=True)


def generate(top: Path, n: int, seed: int = 7) -> Store:
    rng = random.Random(seed)
    text = Text(rng)
    subprocess.run(["git", "init", "-q", str(top)], check=True, env=git_env("bench"))
    code = [f"src/mod{i:03d}/file{j}.py" for i in range(200) for j in range(5)]
    for rel in code:
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text("v1\n", encoding="utf-8")
    commit(top, "bench", "code")
    root = top / "memory"
    store = Store.init(root, agent="bench")  # commits the store's .gitignore itself
    drafts: list[tuple[Path, Memory]] = []
    for i in range(n):
        name = f"mem-{i:05d}"
        kind = DEFAULT_TYPES[i % len(DEFAULT_TYPES)]
        if kind == "working" or kind in ("correction", "warning"):
            kind = "fact"
        description = text.sample(rng.randint(6, 14))[:200]
        if i % 50 == 1:  # a near-duplicate of the one before
            description = drafts[-1][1].description
        extra: dict[str, object] = {}
        if rng.random() < 0.2:
            extra["files"] = [rng.choice(code), f"src/mod{rng.randrange(200):03d}/*.py"]
        if rng.random() < 0.03:
            extra["expires"] = "2026-01-01"
        memory = Memory(
            name=name,
            description=description,
            type=kind,
            status="draft",
            owner="bench",
            created="2026-01-01T00:00:00Z",
            updated="2026-01-01T00:00:00Z",
            tags=tuple(sorted(set(rng.sample(TECH, rng.randint(0, 3))))),
            body=text.sample(rng.randint(40, 160)),
            extra=extra,
        )
        path = root / kind / f"{name}.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text(render(memory), encoding="utf-8", newline="\n")
        drafts.append((path, memory))
    commit(top, "bench", "generated drafts")
    for path, memory in drafts:
        if rng.random() < 0.4:
            done = evolve(
                memory,
                status="confirmed",
                confirmed_by="reviewer",
                confirmed_at=now(),
                confirmed_reason="checked",
                confirmed_hash=content_hash(memory),
            )
            path.write_text(render(done), encoding="utf-8", newline="\n")
    commit(top, "reviewer", "confirmations")
    for rel in rng.sample(code, 100):
        (top / rel).write_text("v2\n", encoding="utf-8")
    # Dated a minute after the confirmations: drift compares commit times to the second.
    os.environ["GIT_COMMITTER_DATE"] = f"{int(time.time()) + 60} +0000"
    try:
        commit(top, "bench", "code moves on")
    finally:
        del os.environ["GIT_COMMITTER_DATE"]
    return store


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--writes", type=int, default=100)
    args = ap.parse_args()
    print(
        f"# machine: {os.cpu_count()} CPUs, {platform.machine()}, Python {sys.version.split()[0]}"
    )
    print(f"\n## doctor on {args.size} memories\n\n| measure | value |\n|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp) / "repo"
        t0 = time.perf_counter()
        store = generate(top, args.size)
        print(f"| generate (4 commits) | {time.perf_counter() - t0:.1f} s |", flush=True)
        t0 = time.perf_counter()
        search.reindex(store)
        print(f"| full reindex (before doctor) | {time.perf_counter() - t0:.1f} s |", flush=True)

        def doctor_cli(*extra: str) -> tuple[float, float]:
            """Wall and CPU seconds (user + system) of one `memstore doctor`: on a shared
            machine the CPU time is what an idle one would take."""
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            cmd = [sys.executable, "-m", "memstore", "--store", str(store.root), "doctor", *extra]
            subprocess.run(cmd, env=git_env("bench"), capture_output=True, check=False)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            return wall, cpu

        def median(runs: list[tuple[float, float]]) -> str:
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            return f"{wall:.2f} s wall, {cpu:.2f} s CPU"

        first = [doctor_cli()]
        print(f"| `memstore doctor`, first run (caches cold) | {median(first)} |")
        runs = [doctor_cli() for _ in range(3)]
        print(f"| `memstore doctor`, median of 3 (caches warm) | {median(runs)} |")
        runs = [doctor_cli("--no-lint") for _ in range(3)]
        print(f"| `memstore doctor --no-lint`, median of 3 | {median(runs)} |")
        report = steward.doctor(store)
        print(
            f"| found | {len(report.duplicates)} duplicate clusters, {len(report.drifted)} "
            f"drifted, {len(report.expired)} expired, {len(report.stale)} stale, "
            f"{len(report.lint)} lint problems |"
        )

        print(f"\n## duplicate hint on write ({args.writes} writes, in-process, as a server)\n")
        print("| measure | value |\n|---|---|")
        rng = random.Random(3)
        text = Text(rng)
        writer = Store(store.root, agent="writer")
        search.search(writer, search.Query("warm up"))
        # As under `memstore serve`, whose watcher keeps the index current in the background:
        # the hint is one query on the index, not a catch-up with the write before it.
        search.upkeep(writer).watched = True
        hint: list[float] = []
        write: list[float] = []
        for i in range(args.writes):
            description = text.sample(rng.randint(6, 14))[:200]
            t0 = time.perf_counter()
            writer.add(f"new-{i:04d}", type="fact", description=description)
            t1 = time.perf_counter()
            steward.similar(writer, f"new-{i:04d}", description)
            t2 = time.perf_counter()
            write.append((t1 - t0) * 1000)
            hint.append((t2 - t1) * 1000)
        p95 = sorted(hint)[int(0.95 * len(hint))]
        print(f"| duplicate hint p50 / p95 | {statistics.median(hint):.1f} / {p95:.1f} ms |")
        print(f"| the write itself (add + commit) p50 | {statistics.median(write):.1f} ms |")


if __name__ == "__main__":
    main()
