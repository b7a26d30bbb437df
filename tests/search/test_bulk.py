"""A rebuild writes its segments straight through Whoosh's codec: the index Whoosh's own writer
makes of the same memories, in one segment or several, which later writes update as usual."""

from __future__ import annotations

import random
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
from whoosh import index as windex
from whoosh.writing import CLEAR

from memstore.model.memory import Memory
from memstore.search import bulk, schema
from memstore.search import upkeep as search
from memstore.search.index import Index
from memstore.search.manifest import Stamp
from memstore.search.upkeep import Query
from memstore.storage.store import Store

WORDS = [
    f"{stem}{end}" for stem in ("deploy", "cache", "queue", "shard") for end in "s r ing ed".split()
]
WORDS += ["the", "a", "of", "x", "rollback", "kubernetes", "postgres", "latency", "retries"]
CJK = ["部署の手順", "캐시 무효화", "การปรับใช้", "日本語のテキスト検索"]


def memories(count: int, seed: int = 7) -> list[tuple[str, Memory]]:
    """Memories of every shape the index meets: stop words and one-letter words, words said
    many times, CJK runs, a description that repeats its body, tags, scopes, links, expiry,
    long bodies, empty ones; and words in more documents than a postings block holds."""
    rng = random.Random(seed)
    found: list[tuple[str, Memory]] = []
    for i in range(count):
        body = " ".join(rng.choice(WORDS) for _ in range(rng.choice([0, 5, 40, 400])))
        if i % 7 == 0:
            body += " " + rng.choice(CJK)
        if i % 11 == 0:
            body += f" see [[m-{(i + 1) % count:04d}]]"
        description = (
            body[:60] if i % 5 == 0 else f"note {i} on {rng.choice(WORDS)} {rng.choice(WORDS)}"
        )
        extra: dict[str, Any] = {}
        if i % 3 == 0:
            extra["scope"] = rng.choice(["payments", "search", "payments, search"])
        if i % 13 == 0:
            extra["expires"] = "2026-01-01"
        memory = Memory(
            name=f"m-{i:04d}",
            description=description or f"note {i}",
            type=rng.choice(["fact", "warning", "decision"]),
            status=rng.choice(["draft", "confirmed", "deprecated"]),
            owner=rng.choice(["alice", "bob", ""]),
            created="2026-11-01T10:00:00Z",
            updated=f"2026-11-{1 + i % 28:02d}T10:00:00Z",
            tags=tuple(rng.sample(["k8s", "db", "ops", "ci"], rng.choice([0, 1, 2]))),
            links=(f"m-{(i + 3) % count:04d}",) if i % 4 == 0 else (),
            body=body,
            extra=extra,
        )
        found.append((f"{memory.type}/{memory.name}.md", memory))
    return found


def stamp(i: int) -> Stamp:
    return (1_700_000_000_000_000_000 + i, 100 + i, 1000 + i)


def rebuilt(where: Path, entries: list[tuple[str, Memory]], procs: int = 1) -> Index:
    """An index of `entries` made by a rebuild (`bulk`)."""
    by_path = {path: (memory, stamp(i)) for i, (path, memory) in enumerate(entries)}
    index = Index(where, nullcontext)
    index.rebuild(
        {path: s for path, (_, s) in by_path.items()},
        lambda path: (by_path[path][0], by_path[path][1], f"digest-{path}"),
        lambda path: f"digest-{path}",
        procs=procs,
    )
    return index


def written(where: Path, entries: list[tuple[str, Memory]]) -> Index:
    """An index of `entries` written by Whoosh's writer, as a write's update is."""
    index = Index(where, nullcontext)
    index.rebuild({}, lambda path: (None, (0, 0, 0), ""), lambda path: "")
    ordered = sorted(enumerate(entries), key=lambda e: e[1][0])  # as a rebuild reads them
    assert index.update(
        [(path, memory, stamp(i), f"digest-{path}") for i, (path, memory) in ordered]
    )
    return index


QUERIES = [
    "deploying caches",
    "rollback",
    "kubernetes latency retries",
    "shard queue",
    '"deploy cache"',
    "description:note",
    "name_text:m",
    "deploy*",
    "部署",
    "캐시",
    "queued OR sharded",
    "tags:k8s",
]


def answers(index: Index) -> list[list[tuple[str, float, str]]]:
    """Every query's hits (name, score, status), in order, and with filters and feedback."""
    found: list[list[tuple[str, float, str]]] = []
    for text in QUERIES:
        for query in (
            Query(text, limit=400),
            Query(text, limit=400, feedback=False, include_deprecated=True),
            Query(text, limit=50, tags=("db",), type="warning"),
            Query(text, limit=50, scopes=("payments",), graph=True),
        ):
            found.append([(h.name, h.score, h.status) for h in index.search(query, "2026-06-01")])
    return found


def stored(directory: Path) -> list[dict[str, Any]]:
    with windex.open_dir(str(directory)).reader() as reader:
        return [dict(fields) for _, fields in reader.iter_docs()]


def segment_files(directory: Path) -> dict[str, bytes]:
    """The files of the index's one segment by extension (the segment's id left out)."""
    ix = windex.open_dir(str(directory))
    (segment,) = ix._segments()  # pyright: ignore[reportPrivateUsage]
    storage = segment.open_compound_file(ix.storage)
    found: dict[str, bytes] = {}
    for name in storage.list():
        f = storage.open_file(name)
        found[name.split(segment.segment_id(), 1)[1]] = f.read()
        f.close()
    storage.close()
    return found


def test_a_rebuild_writes_the_segment_whooshs_writer_writes(tmp_path: Path) -> None:
    entries = memories(300)
    rebuilt(tmp_path / "bulk", entries)
    (tmp_path / "whoosh").mkdir()
    ix = windex.create_in(str(tmp_path / "whoosh"), schema.index_schema())
    writer = ix.writer()
    for path, memory in sorted(entries, key=lambda e: e[0]):  # as a rebuild reads them
        writer.add_document(**schema.document(path, memory))
    writer.commit(mergetype=CLEAR)
    ours, whooshs = segment_files(tmp_path / "bulk"), segment_files(tmp_path / "whoosh")
    assert sorted(ours) == sorted(whooshs)
    assert {name: data == whooshs[name] for name, data in ours.items()} == dict.fromkeys(
        ours, True
    )  # postings, terms, vectors, lengths, stored fields: byte for byte


@pytest.mark.parametrize("procs", [1, 2])
def test_an_index_rebuilt_in_segments_finds_and_scores_as_written_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, procs: int
) -> None:
    monkeypatch.setattr(bulk, "SEGMENT_DOCS", 70)  # five segments of 60
    monkeypatch.setattr(bulk, "SPLIT_FROM", 100)
    entries = memories(300)
    ours, whooshs = rebuilt(tmp_path / "bulk", entries, procs), written(tmp_path / "w", entries)
    with windex.open_dir(str(tmp_path / "bulk")).reader() as reader:
        assert len(reader.leaf_readers()) == 5
    # Whoosh's scorer and memstore's read the whole index's statistics, not a segment's, and
    # the documents keep the order one writer gives them: the same hits, scores and ties.
    assert answers(ours) == answers(whooshs)
    assert stored(tmp_path / "bulk") == stored(tmp_path / "w")

    # Later writes change a rebuilt index as they change one written document by document.
    changed = memories(40, seed=8)[:3]
    edits = [(path, memory) for (path, _), (_, memory) in zip(entries[10:13], changed, strict=True)]
    for index in (ours, whooshs):
        assert index.update(
            [(path, memory, stamp(9000 + i), "new") for i, (path, memory) in enumerate(edits)]
        )
        assert index.remove([entries[20][0], entries[200][0]])
        index.close()
    assert answers(ours) == answers(whooshs)
    names = {name for hits in answers(ours) for name, _, _ in hits}
    assert "m-0020" not in names and "m-0200" not in names


def test_a_reindex_of_a_store_reports_files_read_and_documents_written(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "SEGMENT_DOCS", 400)
    for i, (_, memory) in enumerate(memories(900)):
        path = store.root / memory.type / f"{memory.name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        from memstore.model.memory import render

        path.write_text(render(memory), encoding="utf-8", newline="\n")
        del i
    read: list[tuple[int, int]] = []
    wrote: list[tuple[int, int]] = []
    result = search.reindex(
        store, lambda d, t: read.append((d, t)), written=lambda d, t: wrote.append((d, t))
    )
    assert result.indexed == 900
    assert read == [(500, 900), (900, 900)]
    assert wrote == sorted(wrote) and wrote[-1] == (900, 900)
    assert len(search.search(store, Query("note", limit=1000, include_deprecated=True))) > 100


def test_a_segment_part_holds_at_most_segment_docs_and_one_per_process() -> None:
    assert bulk.parts(0, 2) == [(0, 0)]
    assert bulk.parts(100, 2) == [(0, 100)]  # too few to share
    assert bulk.parts(10_000, 2) == [(0, 5000), (5000, 10_000)]
    assert bulk.parts(120_000, 1) == [(0, 40_000), (40_000, 80_000), (80_000, 120_000)]
    assert bulk.parts(100_000, 2) == [(0, 50_000), (50_000, 100_000)]
