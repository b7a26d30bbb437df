"""Semantic recall's benchmark: quality on the reworded bank, and what it costs, side by side
with search by words alone in the same run.

    .venv/bin/python bench/distill.py      # once: bench/.models/all-MiniLM-L6-v2, minilm-static
    .venv/bin/python bench/semantic.py [--model bench/.models/all-MiniLM-L6-v2] [--size 10000]
        [--bank tests/data/reworded_fresh.yaml] [--sample 200] [--skip-costs]

1. A reworded bank (tests/data/reworded_bank.yaml; or a test bank written after it,
   tests/data/reworded_fresh.yaml, and two written blind, tests/data/reworded_blind.yaml and
   tests/data/reworded_blind2.yaml; all never tuned against, unlike the reworded_dev*.yaml banks
   bench/tune_semantic.py tunes on): Hit@5 and MRR@10 with the extra off, on, and the dense
   list alone.
2. At `--size` generated memories (bench/latency.py's generator): in-process search p50/p95
   by words and with semantic recall (and how many queries the words answer poorly, which
   alone embed the query), the encoder's embedding rate on `--sample` memories, writes
   (`Store.add`: file and git commit) alternately with and without a model configured, and
   the CLI's `memstore search` start to finish.
3. The dense list's exact cosine (matrix product and top 40) at 10,000 and 100,000 memories.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from time import perf_counter
from typing import Any

import yaml

from memstore.model.memory import Memory, render
from memstore.search import embedding
from memstore.search import upkeep as search
from memstore.search.upkeep import Query
from memstore.storage.store import Store

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from latency import generate, pct, timed  # noqa: E402

BANK = HERE.parent / "tests" / "data" / "reworded_bank.yaml"
DEFAULT_MODEL = HERE / ".models" / "all-MiniLM-L6-v2"


def bank_store(
    root: Path, model: Path | None, bank: Path = BANK
) -> tuple[Store, list[tuple[str, str]]]:
    """A store of `bank`'s memories (with `model` named, if any), and its questions."""
    data = yaml.safe_load(bank.read_text(encoding="utf-8"))
    store = Store.init(root, agent="bench")
    if model is not None:
        (root / "memstore.yaml").write_text(f"embedding_model: {model}\n", encoding="utf-8")
    for m in data["memories"]:
        memory = Memory(
            name=m["name"],
            description=m["description"],
            type=m["type"],
            status="draft",
            owner="bench",
            created="2026-01-01T00:00:00Z",
            updated="2026-01-01T00:00:00Z",
            body=m.get("body", ""),
        )
        path = root / m["type"] / f"{m['name']}.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text(render(memory), encoding="utf-8", newline="\n")
    search.reindex(store)
    return store, [(q["q"], q["expect"]) for q in data["questions"]]


def quality(tmp: Path, model: Path, bank: Path = BANK) -> None:
    rows = []
    for label, with_model in (("words only (extra off)", None), ("words + meaning", model)):
        store, questions = bank_store(tmp / f"bank-{len(rows)}", with_model, bank)
        ranks = []
        for question, expect in questions:
            names = [h.name for h in search.search(store, Query(question, limit=10))]
            ranks.append(names.index(expect) + 1 if expect in names else None)
        rows.append((label, ranks))
        if with_model is not None:
            vectors = search.upkeep(store).vectors
            assert vectors is not None
            dense = []
            for question, expect in questions:
                names = [p.split("/")[-1][:-3] for p, _ in vectors.nearest(question, 10)]
                dense.append(names.index(expect) + 1 if expect in names else None)
            rows.append(("meaning alone (dense list, for reference)", dense))
            misses = [q for (q, _), r in zip(questions, ranks, strict=True) if not r or r > 5]
            print(f"# missed at 5 with meaning: {misses}")
    n = len(rows[0][1])
    print(f"# reworded bank: {n} questions, {bank.name}")
    print("| search | Hit@5 | MRR@10 |")
    print("|---|---|---|")
    for label, ranks in rows:
        hit5 = sum(1 for r in ranks if r and r <= 5) / n
        mrr = sum(1 / r for r in ranks if r) / n
        print(f"| {label} | {hit5:.2f} | {mrr:.3f} |")


def prefill(store: Store, sample: int) -> float:
    """Embed `sample` memories (timed: memories/s), and fill the vectors cache's other rows
    with random unit vectors: a search's cost does not depend on the rows' values, and a
    transformer takes minutes for 10,000 memories on this machine. Returns the rate."""
    import numpy as np

    up = search.upkeep(store)
    up.fresh(store)
    vectors = up.semantic(store)
    files = up.index.files()
    assert vectors is not None and files is not None
    state, digests = files
    paths = sorted(p for p, d in digests.items() if d)
    texts = [search._text(store)(p) or "" for p in paths[:sample]]  # pyright: ignore[reportPrivateUsage]
    started = perf_counter()
    rows = vectors.model.vectors(texts)
    rate = len(texts) / (perf_counter() - started)
    rest = np.random.default_rng(3).normal(size=(len(paths) - len(texts), rows.shape[1]))
    rest = (rest / np.linalg.norm(rest, axis=1, keepdims=True)).astype(np.float32)
    vectors.paths, vectors.digests = paths, [digests[p] for p in paths]
    vectors.matrix = np.concatenate([rows, rest])
    vectors._save()  # pyright: ignore[reportPrivateUsage]
    return rate


def costs(tmp: Path, model: Path, size: int, queries: int, cli_runs: int, sample: int) -> None:
    import random

    root = tmp / "big"
    store, text = generate(root, size)
    search.reindex(store)
    rng = random.Random(11)
    qs = [text.sample(rng.randint(1, 4)) for _ in range(queries)]
    rows: list[tuple[str, str]] = []

    def lat(s: Store) -> list[float]:
        search.search(s, Query("warm up"))
        return [timed(lambda q=q: search.search(s, Query(q))) for q in qs]

    def cli() -> list[float]:
        command = [sys.executable, "-m", "memstore", "--store", str(root), "search"]
        return [
            timed(lambda q=q: subprocess.run([*command, q], capture_output=True, check=True))
            for q in qs[:cli_runs]
        ]

    def writes(s: Store, tag: str, n: int = 15) -> list[float]:
        return [
            timed(lambda i=i: s.add(f"w-{tag}-{i}", type="fact", description=text.sample(8)))
            for i in range(n)
        ]

    words = Store(root, agent="bench")
    words_lat = lat(words)
    words_cli = cli()
    (root / "memstore.yaml").write_text(f"embedding_model: {model}\n", encoding="utf-8")
    meaning = Store(root, agent="bench")
    rate = prefill(meaning, sample)
    first = timed(lambda: search.search(meaning, Query("warm up")))
    # How many queries the words answer poorly: only those embed the query.
    nearest, asked = embedding.Vectors.nearest, [0]

    def counted(self: embedding.Vectors, text: str, count: int) -> list[tuple[str, float]]:
        asked[0] += 1
        return nearest(self, text, count)

    embedding.Vectors.nearest = counted  # type: ignore[method-assign]
    meaning_lat = lat(meaning)
    embedding.Vectors.nearest = nearest  # type: ignore[method-assign]
    weak = asked[0]
    # Writes alternate between a store without a model and one with, so that neither pays
    # for the repository growing (each write is a commit) or for the load moving.
    words_add: list[float] = []
    meaning_add: list[float] = []
    for i in range(15):
        words_add += writes(words, f"off{i}", 1)
        meaning_add += writes(meaning, f"on{i}", 1)
    after = timed(lambda: search.search(meaning, Query("first search after the writes")))
    meaning_cli = cli()
    # The same again by words, interleaved: the load on a shared machine moves.
    (root / "memstore.yaml").unlink()
    words2 = Store(root, agent="bench")
    words_lat2 = lat(words2)
    rows += [
        (
            "search by words, in-process p50 / p95 (two runs)",
            f"{pct(words_lat, 0.5):.1f} / {pct(words_lat, 0.95):.1f} ms; "
            f"{pct(words_lat2, 0.5):.1f} / {pct(words_lat2, 0.95):.1f} ms",
        ),
        (
            "search with semantic recall, in-process p50 / p95",
            f"{pct(meaning_lat, 0.5):.1f} / {pct(meaning_lat, 0.95):.1f} ms",
        ),
        (
            "p50 difference (semantic − words, mean of the two word runs)",
            f"{pct(meaning_lat, 0.5) - (pct(words_lat, 0.5) + pct(words_lat2, 0.5)) / 2:+.1f} ms",
        ),
        (
            f"embedding memories (a sample of {sample}; the other rows filled, see `prefill`)",
            f"{rate:.0f} memories/s, so {size / rate / 60:.0f} min for all {size}",
        ),
        (
            "queries the words answer poorly (their best match lacks a word of the query, "
            "and its BM25F is below DENSE_WEAK_BM25, by default any): embedded",
            f"{weak} of {len(qs) + 1}",
        ),
        ("first search with a model (loads it)", f"{first * 1000:.0f} ms"),
        ("search after 30 writes (embeds them)", f"{after * 1000:.0f} ms"),
        (
            "write (Store.add: file + git commit), median: without / with a model",
            f"{statistics.median(words_add) * 1000:.0f} / "
            f"{statistics.median(meaning_add) * 1000:.0f} ms",
        ),
        (
            "CLI `memstore search`, p50: words / semantic",
            f"{pct(words_cli, 0.5):.0f} / {pct(meaning_cli, 0.5):.0f} ms",
        ),
    ]
    vectors = root / ".memstore" / "vectors" / "vectors.npy"
    rows.append(("vectors cache on disk", f"{vectors.stat().st_size / 1e6:.1f} MB"))
    print(
        f"# {size} generated memories, {queries} queries, {cli_runs} CLI runs; model {model.name}"
    )
    print("| measure | value |")
    print("|---|---|")
    for label, value in rows:
        print(f"| {label} | {value} |")


def exact_cosine(sizes: tuple[int, ...] = (10_000, 100_000), dim: int = 384) -> None:
    """The dense list's own cost by store size: `Vectors.nearest`'s matrix product and top-40
    selection over random unit rows (all-MiniLM-L6-v2's width), the query already embedded."""
    import numpy as np

    rng = np.random.default_rng(5)
    print("| memories | cosine + top 40, p50 | matrix in memory |")
    print("|---|---|---|")
    for n in sizes:
        matrix = rng.standard_normal((n, dim), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        queries = [matrix[int(i)] + 0.1 for i in rng.integers(0, n, 50)]

        def top(q: object, matrix: Any = matrix) -> None:
            scores = matrix @ q
            best = np.argpartition(-scores, 39)[:40]
            best[np.lexsort((best, -scores[best]))]

        times = [timed(lambda q=q: top(q)) for q in queries]
        print(f"| {n} | {pct(times, 0.5):.2f} ms | {matrix.nbytes / 1e6:.0f} MB |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--bank", type=Path, default=BANK)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--cli-runs", type=int, default=10)
    ap.add_argument("--sample", type=int, default=200, help="memories embedded for real")
    ap.add_argument("--skip-costs", action="store_true")
    args = ap.parse_args()
    model = args.model.resolve()
    print(
        f"# machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}, load {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        quality(Path(tmp), model, args.bank)
        if not args.skip_costs:
            costs(Path(tmp), model, args.size, args.queries, args.cli_runs, args.sample)
            exact_cosine()


if __name__ == "__main__":
    main()
