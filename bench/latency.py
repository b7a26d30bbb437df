"""Latency benchmark on generated stores: search, edit then search, catch-up, full reindex.

    .venv/bin/python bench/latency.py [--sizes 1000 10000] [--queries 300]

Each store is generated as files written directly and committed once (10k `Store.add` calls
would be 10k git commits), in a temporary folder. Text follows a Zipf-like distribution over
a synthetic vocabulary, with a seeded generator, so runs are comparable.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memstore.model.memory import DEFAULT_TYPES, Memory, render
from memstore.search import upkeep as search
from memstore.search.upkeep import Query
from memstore.storage.store import Store

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}
TECH = (
    "deploy cache database migration kubernetes autoscaling rollback incident latency "
    "timeout retry queue worker postgres redis cdn invalidation checkout payment billing "
    "schema validation token secret rotation certificate dns ingress canary feature flag "
    "index search replica backup restore monitoring alert pager runbook webhook api"
).split()


# The most frequent words of English text, in rough frequency order: as in real notes, they
# lead the Zipf distribution (and the analyzer drops the stop words among them).
COMMON = (
    "the of and to a in is it you that he was for on are with as they be at one have this "
    "from or had by not but what some we can out other were all there when up use your how "
    "said an each she which do their time if will way about many then them would write like "
    "so these her long make thing see him two has look more day could go come did my no most "
    "who over know than call first people may down side been now find"
).split()


def vocabulary(rng: random.Random, size: int = 8000) -> list[str]:
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words = set(TECH) | set(COMMON)
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    rest = sorted(words - set(COMMON))
    rng.shuffle(rest)
    return COMMON + rest


class Text:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.words = vocabulary(rng)
        self.cumulative = list(itertools.accumulate(1 / (i + 1) for i in range(len(self.words))))

    def sample(self, n: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cumulative, k=n))


def generate(root: Path, n: int, seed: int = 7) -> tuple[Store, Text]:
    rng = random.Random(seed)
    text = Text(rng)
    store = Store.init(root, agent="bench")
    names = [f"mem-{i:05d}" for i in range(n)]
    for i, name in enumerate(names):
        kind = DEFAULT_TYPES[i % len(DEFAULT_TYPES)]
        status = rng.choices(["draft", "confirmed", "deprecated"], [5, 4, 1])[0]
        memory = Memory(
            name=name,
            description=text.sample(rng.randint(6, 14))[:200],
            type=kind,
            status=status,
            owner=rng.choice(["alice", "bob", "carol", "deploy-bot"]),
            created="2026-01-01T00:00:00Z",
            updated=f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T00:00:00Z",
            tags=tuple(sorted(set(rng.sample(TECH, rng.randint(0, 3))))),
            links=tuple(sorted(set(rng.sample(names, rng.randint(0, 2))) - {name})),
            body=text.sample(rng.randint(40, 160)),
        )
        path = root / kind / f"{name}.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text(render(memory), encoding="utf-8", newline="\n")
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "add", "."], cwd=root, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "generated"], cwd=root, env=env, check=True)
    return store, text


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def bench(size: int, queries: int, cli_runs: int) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        t0 = time.perf_counter()
        store, text = generate(root, size)
        rows.append(("generate files + one commit", f"{time.perf_counter() - t0:.1f} s"))

        reindex = timed(lambda: search.reindex(store))
        rows.append(("full reindex", f"{reindex:.2f} s ({reindex / size * 1000:.2f} ms/memory)"))

        rng = random.Random(11)
        qs = [text.sample(rng.randint(1, 4)) for _ in range(queries)]
        search.search(store, Query("warm up"))
        lat = [timed(lambda q=q: search.search(store, Query(q))) for q in qs]
        rows.append(
            ("search in-process p50 / p95", f"{pct(lat, 0.5):.1f} / {pct(lat, 0.95):.1f} ms")
        )
        deep = [Query(q, explain=True, graph=True) for q in qs[:100]]
        lat = [timed(lambda q=q: search.search(store, q)) for q in deep]
        rows.append(
            ("search --graph --explain p50 / p95", f"{pct(lat, 0.5):.1f} / {pct(lat, 0.95):.1f} ms")
        )

        cli = [sys.executable, "-m", "memstore", "--store", str(root), "search"]
        lat = [
            timed(lambda q=q: subprocess.run([*cli, q], capture_output=True, check=True))
            for q in qs[:cli_runs]
        ]
        rows.append(("search via CLI p50 / p95", f"{pct(lat, 0.5):.0f} / {pct(lat, 0.95):.0f} ms"))

        editor = Store(root, agent="editor")
        search.search(editor, Query("warm up"))
        edit_lat: list[float] = []
        found_lat: list[float] = []
        for i, m in enumerate(editor.list(type="fact")[:20]):
            t0 = time.perf_counter()
            editor.edit(m.name, body=m.body + f" zzedit{i}", force=True)  # some are deprecated
            edit_lat.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            found = search.search(editor, Query(f"zzedit{i}", include_deprecated=True))
            found_lat.append(time.perf_counter() - t0)
            assert [h.name for h in found] == [m.name], found
        rows.append(
            ("edit via Store.edit (file, git commit), median", f"{pct(edit_lat, 0.5):.0f} ms")
        )
        rows.append(
            (
                "first search after an edit (indexes it, catches up), median",
                f"{pct(found_lat, 0.5):.0f} ms",
            )
        )

        files = sorted(root.glob("*/*.md"))
        picked = random.Random(5).sample(files, 100)
        for i, path in enumerate(picked):
            with open(path, "a", encoding="utf-8", newline="\n") as f:
                f.write(f"\nhand edit {i} zzhandedit\n")
        fresh = Store(root)
        t0 = time.perf_counter()
        result = search.catch_up(fresh)
        catch_up = time.perf_counter() - t0
        assert result.indexed == 100, result
        assert len(search.search(fresh, Query("zzhandedit", limit=200))) == sum(
            1 for p in picked if "status: deprecated" not in p.read_text(encoding="utf-8")
        )
        rows.append(
            ("catch-up after 100 hand edits (new process, incl. scan)", f"{catch_up:.2f} s")
        )
        noop = timed(lambda: search.catch_up(Store(root)))
        rows.append(("catch-up with nothing changed (scan only)", f"{noop * 1000:.0f} ms"))
        size_mb = sum(p.stat().st_size for p in (root / ".memstore" / "index").iterdir()) / 1e6
        rows.append(("index size on disk", f"{size_mb:.1f} MB"))
        for opened in (store, editor, fresh):
            search.close(opened)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--cli-runs", type=int, default=20)
    args = ap.parse_args()
    print(
        f"# machine: {os.cpu_count()} CPUs, {platform.machine()}, Python {sys.version.split()[0]}"
    )
    for size in args.sizes:
        print(f"\n## {size} memories\n")
        print("| measure | value |\n|---|---|")
        for label, value in bench(size, args.queries, args.cli_runs):
            print(f"| {label} | {value} |", flush=True)


if __name__ == "__main__":
    main()
