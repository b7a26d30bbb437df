"""Project documents in recall: how long a generated docs folder takes to index, and recall
latency with and without it, side by side in one run.

    .venv/bin/python bench/docs.py [--pages 200] [--memories 680] [--queries 300]

A temporary project repository gets a store of generated memories (bench/latency.py's
generator) and a `docs/` folder of generated Markdown pages (a few headings each, Zipf-like
text). The figures: the first indexing of the documents (`Upkeep.documents`, force; wall
and CPU time), a re-scan with nothing changed, one edited page, and search p50/p90 over the
same queries on the store without `docs:` and with it.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.latency import GIT_ENV, Text, generate  # noqa: E402
from memstore.search import upkeep as search  # noqa: E402
from memstore.search.upkeep import Query  # noqa: E402
from memstore.storage.store import Store  # noqa: E402


def pages(top: Path, count: int, text: Text) -> int:
    """Write `count` Markdown pages under `top/docs` (ten folders); returns the sections."""
    rng = text.rng
    sections = 0
    for n in range(count):
        folder = top / "docs" / f"area-{n % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"# {text.sample(3).capitalize()}", "", text.sample(60), ""]
        for _ in range(rng.randint(4, 10)):
            lines += [f"## {text.sample(rng.randint(1, 4)).capitalize()}", ""]
            for _ in range(rng.randint(1, 4)):
                lines += [text.sample(rng.randint(30, 90)), ""]
            if rng.random() < 0.3:
                lines += ["```sh", f"kubectl rollout undo deployment/{text.sample(1)}", "```", ""]
            sections += 1
        (folder / f"page-{n:03d}.md").write_text("\n".join(lines), encoding="utf-8")
        sections += 1
    return sections


def timed_searches(store: Store, texts: list[str]) -> list[float]:
    times: list[float] = []
    for text in texts:
        start = time.perf_counter()
        search.search(store, Query(text, limit=10))
        times.append((time.perf_counter() - start) * 1000)
    return times


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--memories", type=int, default=680)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    os.environ.update(GIT_ENV)
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp) / "plain"
        top.mkdir()
        subprocess.run(["git", "init", "-q", str(top)], check=True)
        _, text = generate(top / "memory", args.memories)
        sections = pages(top, args.pages, text)
        size = sum(f.stat().st_size for f in (top / "docs").rglob("*.md"))
        rng = random.Random(11)
        texts = [text.sample(rng.randint(1, 4)) for _ in range(args.queries)]
        # The same project twice: one store without `docs:`, one with, searched in turn.
        other = Path(tmp) / "docs"
        shutil.copytree(top, other, symlinks=True)
        (other / "memory" / "memstore.yaml").write_text('docs: ["docs/**/*.md"]\n')
        plain = Store(top / "memory", agent="bench")
        search.catch_up(plain)
        store = Store(other / "memory", agent="bench")
        up = search.upkeep(store)
        up.docs = ()  # the memories' catch-up alone first: the figure is the documents'
        up.catch_up(store)
        up.docs = None
        start, cpu = time.perf_counter(), time.process_time()
        result = up.documents(store, force=True)
        first, first_cpu = time.perf_counter() - start, time.process_time() - cpu
        start = time.perf_counter()
        again = up.documents(store, force=True)
        rescan = time.perf_counter() - start
        page = other / "docs" / "area-3" / "page-013.md"
        page.write_text(page.read_text(encoding="utf-8") + "\n## Edited\n\nnew words\n")
        start = time.perf_counter()
        edited = up.documents(store, force=True)
        one = time.perf_counter() - start

        for warm in (plain, store):  # the searcher and caches, as a server has them
            timed_searches(warm, texts[:20])
        without: list[float] = []
        with_docs: list[float] = []
        for query in texts:
            without += timed_searches(plain, [query])
            with_docs += timed_searches(store, [query])
        doc_hits = sum(
            1
            for t in texts[:50]
            for h in search.search(store, Query(t, limit=10))
            if h.kind == "doc"
        )

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"docs: {args.pages} pages, {sections} sections, {size / 1024:.0f} KiB; "
        f"store: {args.memories} memories"
    )
    print(
        f"index {result.indexed} pages (first time): {first:.2f} s wall, {first_cpu:.2f} s CPU "
        "(on a loaded machine the CPU time is the figure to compare)"
    )
    print(f"re-scan, nothing changed ({again.indexed} re-indexed): {rescan * 1000:.1f} ms")
    print(f"one page edited ({edited.indexed} re-indexed): {one * 1000:.1f} ms")
    print(
        f"search without docs, p50 / p90: {statistics.median(without):.2f} / "
        f"{p(without, 0.9):.2f} ms ({len(texts)} queries, each on both stores in turn)"
    )
    print(
        f"search with docs,    p50 / p90: {statistics.median(with_docs):.2f} / "
        f"{p(with_docs, 0.9):.2f} ms (ratio p50 "
        f"{statistics.median(with_docs) / statistics.median(without):.2f}x)"
    )
    print(f"doc hits in the top 10 of the first 50 queries: {doc_hits}")


if __name__ == "__main__":
    main()
