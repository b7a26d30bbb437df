"""The index stays in step with the files: memstore writes, hand edits, git, crashes, processes."""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import GIT_ENV, as_agent, git, processes_started
from filelock import FileLock
from whoosh import index as windex
from whoosh.query import NullQuery, Term

from memstore.model.memory import Memory, render
from memstore.search import analysis, bulk, index, schema
from memstore.search import upkeep as search
from memstore.search.analysis import content_words, index_terms
from memstore.search.query import (  # pyright: ignore[reportPrivateUsage]
    _clean_query,
    _parser,
    parse_query,
)
from memstore.search.rank import _nlargest  # pyright: ignore[reportPrivateUsage]
from memstore.search.upkeep import Hit, Query
from memstore.storage.store import Store


def write_memory(
    store: Store, name: str, description: str, body: str = "", **fields: object
) -> Path:
    """Write a memory file by hand, as an editor or `git pull` would."""
    memory = Memory(
        name=name,
        description=description,
        type=str(fields.pop("type", "fact")),
        status=str(fields.pop("status", "draft")),
        owner=str(fields.pop("owner", "alice")),
        created="2026-11-01T10:00:00Z",
        updated=str(fields.pop("updated", "2026-11-01T10:00:00Z")),
        body=body,
        **fields,  # pyright: ignore[reportArgumentType]
    )
    path = store.root / memory.type / f"{name}.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text(render(memory), encoding="utf-8", newline="\n")
    return path


def find(store: Store, text: str = "", **options: Any) -> list[Hit]:
    """`search.search` with the query's fields as keywords (tags as a list or tuple)."""
    if "tags" in options:
        options["tags"] = tuple(options["tags"])
    return search.search(store, Query(text, **options))


def names(store: Store, query: str, **options: Any) -> list[str]:
    return [h.name for h in find(store, query, **options)]


def test_cjk_text_is_indexed_as_character_bigrams() -> None:
    assert index_terms("CDNキャッシュ") == ["cdn", "キャ", "ャッ", "ッシ", "シュ"]
    assert index_terms("値") == ["値"]


def test_english_words_are_stemmed_so_variants_meet() -> None:
    assert len(set(index_terms("autoscaling autoscaler autoscaled autoscalers"))) == 1
    assert index_terms("the deploying of deployments") == ["deploy", "deploy"]


@pytest.mark.parametrize(
    "text",
    [
        "force push main",
        "When did Caroline's friend move?",
        "force-push, the main/dev branch; don't",
        "CDNキャッシュの無効化 cache",
        "deploy deploy deploying",
        "the of and",
        "what about 2026-11-30 v1.4.1 api@v2",
    ],
)
def test_plain_words_make_the_query_whoosh_would_parse(text: str) -> None:
    # Plain words skip Whoosh's parser (several milliseconds for a question); the query
    # made instead must be the one it would have made of the words left once the question
    # and function words are dropped.
    parsed = _parser().parse(_clean_query(content_words(text)))
    assert parse_query(text) == (None if parsed is NullQuery else parsed)


def test_a_question_drops_its_question_words_but_a_query_of_only_those_still_searches() -> None:
    assert parse_query("When did Caroline's friend move?") == parse_query("Caroline friend move")
    assert parse_query("what about 2026-11-30") == parse_query("2026-11-30")
    assert parse_query("what did we do") == _parser().parse("what did we do")


def test_a_memory_added_through_memstore_is_found_at_once(store: Store) -> None:
    assert names(store, "zod") == []
    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    assert names(store, "zod") == ["use-zod"]


def test_the_write_path_hands_the_paths_it_wrote_to_the_next_search(store: Store) -> None:
    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    store.add("zod-errors", type="fact", description="zod reports every error at once")
    assert store.written.take() == ["decision/use-zod.md", "fact/zod-errors.md"]
    assert store.written.take() == []


def test_a_search_starts_no_process(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    started = processes_started(monkeypatch)
    assert names(store, "zod") == ["use-zod"]  # indexes the write first
    assert names(Store(store.root), "zod", explain=True, graph=True) == ["use-zod"]
    assert started == []


def test_only_memory_files_noted_as_written_are_indexed(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    names(store, "")  # the index is built
    path = write_memory(store, "pool-size", "Database pool size is 20")
    (store.root / "ledger.jsonl").write_text("{}\n", encoding="utf-8")
    store.written.landed(["ledger.jsonl", "fact/pool-size.md", "fact/gone.md"])
    with caplog.at_level(logging.WARNING):
        assert names(store, "pool") == ["pool-size"]
    assert caplog.text == ""
    path.unlink()
    store.written.landed(["fact/pool-size.md"])  # as a write path that deleted it would
    assert names(store, "pool") == []


def test_a_write_does_not_wait_for_the_search_index(store: Store) -> None:
    search.catch_up(store)
    patient = Store(store.root, agent="alice", lock_timeout=30)
    with FileLock(store.cache / "index.lock"):  # another process indexing, say
        started = time.monotonic()
        patient.add("use-zod", type="decision", description="Validate API input with zod")
        assert time.monotonic() - started < 10
    assert names(patient, "zod") == ["use-zod"]


def test_a_write_by_another_store_is_seen_by_an_open_one(store: Store) -> None:
    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    assert names(store, "schemas") == ["use-zod"]
    other = as_agent(store, "bob")
    other.add("zod-errors", type="fact", description="zod schemas report every error at once")
    other.confirm("use-zod", "checked")
    hits = find(store, "schemas")
    assert {h.name: h.status for h in hits} == {"use-zod": "confirmed", "zod-errors": "draft"}


def test_files_caught_up_in_one_batch_replace_their_documents(store: Store) -> None:
    for i in range(5):
        store.add(f"pool-{i}", type="fact", description=f"old pool note {i}")
    assert len(find(store, "old")) == 5
    for i in range(5):  # hand edits and a deletion, caught up by one index write
        write_memory(store, f"pool-{i}", f"new pool note {i}")
    (store.root / "fact" / "pool-4.md").unlink()
    assert find(store, "old") == []
    assert sorted(h.name for h in find(store, "new")) == [f"pool-{i}" for i in range(4)]
    assert search.upkeep(store).index.count("type", "fact") == 4


def test_a_copied_store_reindexes_nothing_yet_sees_an_edit_that_kept_the_size(
    store: Store, tmp_path: Path
) -> None:
    # A store copied, moved or restored with its cache: every file has a new inode, the same
    # bytes. It used to be indexed all over again (seconds for thousands of memories),
    # leaving every old document deleted in its segment for good.
    for i in range(6):
        write_memory(store, f"pool-{i}", f"Database pool note {i}")
    assert len(find(store, "pool")) == 6
    search.close(store)
    copy = Store(Path(shutil.copytree(store.root, tmp_path / "copy", symlinks=True)))
    assert search.catch_up(copy).indexed == 0
    assert len(find(copy, "pool")) == 6
    whoosh_index = windex.open_dir(str(copy.cache / "index"))
    assert whoosh_index.doc_count_all() == whoosh_index.doc_count() == 6  # nothing deleted
    edited = copy.root / "fact" / "pool-3.md"
    text = edited.read_text(encoding="utf-8").replace("Database", "Datacase")
    edited.write_text(text, encoding="utf-8", newline="\n")  # same size, new content
    reopened = Store(copy.root)  # (an open store rescans for edits in place only now and then)
    assert [h.name for h in find(reopened, "datacase")] == ["pool-3"]
    assert len(find(reopened, "database")) == 5


def test_a_hand_edit_made_while_nothing_ran_is_found_after_restart(store: Store) -> None:
    path = write_memory(store, "pool-size", "Database pool size is 20")
    assert names(store, "pool") == ["pool-size"]
    text = path.read_text(encoding="utf-8").replace("pool size is 20", "pool size is pgbouncer")
    with open(path, "w", encoding="utf-8", newline="\n") as f:  # in place, like many editors
        f.write(text)
    assert names(Store(store.root), "pgbouncer") == ["pool-size"]


def test_an_open_store_without_a_watcher_rescans_for_edits_in_place(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_memory(store, "pool-size", "Database pool size is 20")
    assert names(store, "pool") == ["pool-size"]
    text = path.read_text(encoding="utf-8").replace("pool size is 20", "pool size is pgbouncer")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    monkeypatch.setattr(
        "memstore.search.upkeep.RESCAN_SECONDS", 0.0
    )  # as if the interval had passed
    assert names(store, "pgbouncer") == ["pool-size"]


def test_deleted_and_renamed_files_vanish_from_results(store: Store) -> None:
    gone = write_memory(store, "old-cache", "Cache TTL is five minutes")
    moved = write_memory(store, "cache-keys", "Cache keys include the tenant")
    assert sorted(names(store, "cache")) == ["cache-keys", "old-cache"]
    gone.unlink()
    (store.root / "decision").mkdir()
    moved.rename(store.root / "decision" / "cache-keys.md")
    hits = find(Store(store.root), "cache")
    assert [(h.name, h.path) for h in hits] == [("cache-keys", "decision/cache-keys.md")]


def test_checking_out_another_branch_is_picked_up(store: Store) -> None:
    store.add("on-main", type="fact", description="Branch main knows about widgets")
    git(store.root, "checkout", "-q", "-b", "feature")
    write_memory(store, "on-feature", "Branch feature knows about widgets too")
    git(store.root, "add", ".")
    git(store.root, "commit", "-q", "-m", "feature memory")
    assert sorted(names(store, "widgets")) == ["on-feature", "on-main"]
    git(store.root, "checkout", "-q", "main")
    assert names(store, "widgets") == ["on-main"]


def test_a_malformed_file_is_skipped_with_a_warning_naming_it(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    write_memory(store, "good-one", "Widgets are blue")
    (store.root / "fact" / "broken.md").write_text(
        "---\nname: [oops\n---\nwidgets", encoding="utf-8"
    )
    with caplog.at_level(logging.WARNING):
        assert names(store, "widgets") == ["good-one"]
    assert "fact/broken.md" in caplog.text


def test_an_index_left_half_written_is_rebuilt(store: Store) -> None:
    write_memory(store, "kept", "Widgets are blue")
    assert search.catch_up(store).rebuilt
    (store.cache / "index" / "DIRTY").touch()
    result = search.catch_up(Store(store.root))
    assert result.rebuilt and result.indexed == 1
    assert not (store.cache / "index" / "DIRTY").exists()


CRASHER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from memstore.search import index
    from memstore.search.upkeep import Query, search
    from memstore.storage.store import Store

    def die(self, files):  # the index is committed, the manifest not yet written
        os._exit(9)

    index.Index._write_manifest = die
    store = Store(Path(sys.argv[1]), agent="crasher")
    store.add("late-note", type="fact", description="Written by a process that then died")
    search(store, Query("written"))  # indexes the new file, and dies doing it
    """
)


def test_a_process_killed_in_the_middle_of_an_index_write_leaves_it_rebuilt(store: Store) -> None:
    write_memory(store, "kept", "Widgets are blue")
    assert names(store, "widgets") == ["kept"]
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run([sys.executable, "-c", CRASHER, str(store.root)], env=env, check=False)
    assert done.returncode == 9
    assert (store.cache / "index" / "DIRTY").exists()
    result = search.catch_up(Store(store.root))
    assert result.rebuilt and result.indexed == 2
    assert names(Store(store.root), "written") == ["late-note"]


def test_a_corrupt_index_is_rebuilt_not_trusted(store: Store) -> None:
    write_memory(store, "kept", "Widgets are blue")
    search.catch_up(store)
    for toc in (store.cache / "index").glob("*.toc"):
        toc.write_bytes(b"garbage")
    (store.cache / "index" / "manifest.json").write_text("{", encoding="utf-8")
    assert names(Store(store.root), "widgets") == ["kept"]


def test_reindex_rebuilds_everything_and_reports_progress(store: Store) -> None:
    for i in range(3):
        write_memory(store, f"m-{i}", f"Memory number {i}")
    seen: list[tuple[int, int]] = []
    result = search.reindex(store, lambda done, total: seen.append((done, total)))
    assert result.rebuilt and result.indexed == 3
    assert seen[-1] == (3, 3)


def test_a_reindex_in_two_processes_finds_what_one_process_finds(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "SPLIT_FROM", 200)  # a parallel rebuild of a small store
    rng = random.Random(3)
    words = [f"w{i}{c}" for i in range(60) for c in "abc"]
    for i in range(450):
        text = " ".join(rng.sample(words, 12))
        body = " ".join(rng.sample(words, 30))
        write_memory(store, f"m-{i:03d}", f"{text} note {i}", body)
    queries = [" ".join(rng.sample(words, 3)) for _ in range(30)]

    def found() -> list[list[tuple[str, float]]]:
        search.close(store)
        return [
            [(h.name, round(h.score, 9)) for h in search.search(store, Query(q, limit=500))]
            for q in queries
        ]

    assert search.reindex(store, procs=1).indexed == 450
    alone = found()
    segments = windex.open_dir(str(store.cache / "index")).reader().leaf_readers()
    assert len(segments) == 1
    seen: list[tuple[int, int]] = []
    result = search.reindex(store, lambda done, total: seen.append((done, total)), procs=2)
    assert result.rebuilt and result.indexed == 450
    assert seen[-1] == (450, 450)
    segments = windex.open_dir(str(store.cache / "index")).reader().leaf_readers()
    assert len(segments) == 2  # one a process, numbered in the files' order
    # Whole-index statistics: the same hits with the same scores, in the same order.
    assert found() == alone
    assert len(search.search(store, Query("note", limit=1000))) == 450


WORKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memstore.search.upkeep import Query, search
    from memstore.storage.store import Store

    root, me = Path(sys.argv[1]), sys.argv[2]
    store = Store(root, agent=me)
    if me == "reader":
        while not (root / "done").exists():
            search(store, Query("widget note"))
            search(Store(root), Query("shared"))
        sys.exit(0)
    for i in range(6):
        store.add(f"{me}-{i}", type="fact", description=f"shared widget note {i} by {me}")
        assert search(store, Query("widget")), "a search found nothing"
        if i == 2:
            from memstore.search import upkeep as searching
            searching.reindex(store)
        search(Store(root), Query("widget note"))
    """
)


def test_processes_writing_and_reading_one_index_at_once_get_no_error(store: Store) -> None:
    env = {**os.environ, **GIT_ENV}

    def spawn(agent: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", WORKER, str(store.root), agent],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    reader = spawn("reader")
    writers = [spawn("agent-a"), spawn("agent-b")]
    for proc in writers:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "Traceback" not in err and "WARNING" not in err, err
    (store.root / "done").touch()
    _, err = reader.communicate(timeout=60)
    assert reader.returncode == 0 and "Traceback" not in err, err
    assert len(find(Store(store.root), "widget", limit=50)) == 12


def same_size_same_mtime_edit(path: Path, old: str, new: str) -> None:
    """Rewrite a file in place keeping its size and modification time, as an edit within the
    same tick of the file system's clock does (or `touch -r`, `cp -p`, `rsync -t`)."""
    assert len(old) == len(new)
    st = path.stat()
    text = path.read_text(encoding="utf-8")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        st.st_mtime_ns,
        st.st_size,
        st.st_ino,
    )


def test_catch_up_finds_an_edit_that_kept_the_size_and_mtime_of_a_file_just_indexed(
    store: Store,
) -> None:
    path = write_memory(store, "pool-size", "Database pool size is 20")
    # Its mtime as the file system's clock had it when it was indexed, a tick from now.
    os.utime(path, ns=(time.time_ns(), time.time_ns() + index.RACY_NS))
    assert names(store, "pool") == ["pool-size"]
    same_size_same_mtime_edit(path, "size is 20", "size is 30")
    result = search.catch_up(Store(store.root))
    assert result.indexed == 1
    assert names(Store(store.root), "30") == ["pool-size"]
    assert names(store, "30") == ["pool-size"]


def test_a_file_indexed_long_after_its_last_change_is_not_read_again(store: Store) -> None:
    path = write_memory(store, "pool-size", "Database pool size is 20")
    old = time.time_ns() - 10 * index.RACY_NS
    os.utime(path, ns=(old, old))
    assert names(store, "pool") == ["pool-size"]
    manifest = json.loads((store.cache / "index" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["racy"] == []  # its stamp alone is compared from now on: no read


def test_a_searcher_whose_readers_whoosh_closed_is_reopened_not_an_error(store: Store) -> None:
    # Whoosh's reader refresh, retried after a concurrent commit removed a segment, can leave
    # the searcher's readers closed (then raises ReaderClosed); a search must reopen, and a
    # write's duplicate hint must never fail the write (seen under `make test` load).
    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    assert names(store, "schemas") == ["use-zod"]
    searcher = search.upkeep(store).index._searcher  # pyright: ignore[reportPrivateUsage]
    assert searcher is not None
    searcher.ixreader.close()  # pyright: ignore[reportUnknownMemberType]
    other = as_agent(store, "bob")
    other.add("zod-errors", type="fact", description="zod schemas report every error at once")
    assert sorted(names(other, "schemas")) == ["use-zod", "zod-errors"]
    assert sorted(names(store, "schemas")) == ["use-zod", "zod-errors"]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"positions": True, "chars": True},
        {"removestops": False},
        {"no_morph": True},
        {"tokenize": False},
        {"keeporiginal": True, "chars": True, "start_char": 5, "start_pos": 3, "mode": "query"},
    ],
)
def test_the_one_pass_analyzer_gives_the_chain_s_tokens(options: dict[str, Any]) -> None:
    texts = [
        "The Autoscaler's HPA was DISABLED at 3am; autoscaling autoscaled, see [[foo-bar]]",
        "naïve café Ünïcödé straße 東京都の天気 한국어 テスト x y I a the of",
        "e2e_test snake_case CamelCase 42 4.2 東",
        "",
    ]

    def seen(analyzer: Any, text: str) -> list[tuple[Any, ...]]:
        keys = ("text", "pos", "startchar", "endchar", "stopped", "boost", "original")
        return [tuple(getattr(t, k, None) for k in keys) for t in analyzer(text, **options)]

    one, chain = analysis.analyzer(), analysis._chain()  # pyright: ignore[reportPrivateUsage]
    for text in texts:
        assert seen(one, text) == seen(chain, text)
    assert seen(one, texts[0])  # the comparison compared something


def test_a_search_lists_the_index_folder_only_after_it_changed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from whoosh.filedb.filestore import FileStorage

    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    assert names(store, "schemas") == ["use-zod"]
    folder = store.cache / "index"
    old = time.time_ns() - 10 * index.RACY_NS  # past the clock tick in which a commit may hide
    os.utime(folder, ns=(old, old))
    assert names(store, "schemas") == ["use-zod"]  # looks once at this folder time
    listed: list[str] = []
    real = FileStorage.list

    def counting(self: FileStorage) -> list[str]:
        listed.append(str(self.folder))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        return real(self)

    monkeypatch.setattr(FileStorage, "list", counting)
    for _ in range(3):
        assert names(store, "schemas") == ["use-zod"]
    assert listed == []  # nothing committed since: the searcher is current
    other = as_agent(store, "bob")  # another process's commit moves the folder's time
    other.add("zod-errors", type="fact", description="zod schemas report every error at once")
    assert sorted(names(other, "schemas")) == ["use-zod", "zod-errors"]
    assert sorted(names(store, "schemas")) == ["use-zod", "zod-errors"]
    assert listed  # and the next search looked


def test_a_description_that_repeats_the_body_counts_once_and_a_summary_counts_more() -> None:
    def text(description: str, body: str) -> str:
        memory = Memory(
            name="m",
            description=description,
            type="fact",
            status="draft",
            owner="alice",
            created="2026-11-01T10:00:00Z",
            updated="2026-11-01T10:00:00Z",
            body=body,
        )
        return schema.document("fact/m.md", memory)["text"]

    body = "Redis evicts keys under memory pressure. We raised maxmemory to 4 GB."
    cut = "Redis evicts keys under memory pressure. We raised maxmem"  # a first line cut short
    assert text(cut, body).count("evicts") == 1
    summary = "Cache evictions: raise maxmemory"
    weight = schema.TEXT_WEIGHTS["description"]
    assert text(summary, body).count("Cache evictions") == weight > 1


def test_ascii_text_splits_into_the_same_tokens_without_the_script_ranges() -> None:
    # The tokenizer skips compiling its CJK-aware pattern for ASCII text: same matches.
    import random
    import string

    rng = random.Random(7)
    texts = [
        "k8s HPA_off v1.4.1 don't",
        "",
        "__",
        *("".join(rng.choices(string.printable, k=40)) for _ in range(2000)),
    ]
    for text in texts:
        quick = [(m.span(), m.group("cjk")) for m in analysis._ASCII_WORD_RE.finditer(text)]  # pyright: ignore[reportPrivateUsage]
        full = [(m.span(), m.group("cjk")) for m in analysis._word_re().finditer(text)]  # pyright: ignore[reportPrivateUsage]
        assert quick == full, text


def test_the_best_candidates_are_the_highest_scores_then_the_lowest_documents() -> None:
    rng = random.Random(5)
    for _ in range(200):
        scores = {d: float(rng.choice([0.5, 1.0, 1.5, 2.0, rng.random()])) for d in range(60)}
        for n in (0, 1, 7, 30, 60, 61):
            # Whoosh's order: a higher score first, then the lower document number.
            wanted = sorted(((s, d) for d, s in scores.items()), key=lambda p: (-p[0], p[1]))
            assert _nlargest(scores, n) == wanted[:n]


def test_a_segments_text_lengths_are_whooshs_own(store: Store) -> None:
    from memstore.search.postings import Segment

    for i in range(40):
        write_memory(store, f"note-{i}", f"note {i}", body=" ".join(["word"] * (i * 37)))
    search.catch_up(store)
    ix = windex.open_dir(str(store.cache / "index"))
    with ix.searcher() as searcher:
        for sub, _ in searcher.subsearchers or [(searcher, 0)]:
            reader = sub.reader()
            expected = [
                reader.doc_field_length(d, "text", 0) or 0 for d in range(reader.doc_count_all())
            ]
            assert Segment(reader).lengths == expected
            assert len(set(expected)) > 20  # lengths short and long, as Whoosh rounds them


def _postings_store(store: Store) -> None:
    """Memories in words of a small vocabulary, so that common words fill many blocks of
    postings (compressed ones too), some deleted by later edits."""
    rng = random.Random(11)
    vocabulary = [f"w{i}" for i in range(40)]
    for i in range(700):
        words = rng.choices(vocabulary, weights=[1 / (k + 1) for k in range(40)], k=30)
        kind = "decision" if i % 25 == 0 else "fact"
        write_memory(store, f"note-{i}", f"note {i}", body=" ".join(words), type=kind)
    search.catch_up(store)
    for i in range(0, 700, 9):  # edits delete the documents they replace
        write_memory(store, f"note-{i}", f"note {i} again", body=f"w{i % 40} w1 w2")
    search.catch_up(store)


def test_a_words_postings_are_read_as_whoosh_reads_them(store: Store) -> None:
    from memstore.search.postings import _all_postings, _blocks  # pyright: ignore

    _postings_store(store)
    ix = windex.open_dir(str(store.cache / "index"))
    blocks = 0
    with ix.searcher() as searcher:
        for sub, _ in searcher.subsearchers or [(searcher, 0)]:
            reader = sub.reader()
            for raw in reader.lexicon("text"):
                word = raw.decode("utf-8")
                ids: list[int] = []
                weights: list[float] = []
                for block_ids, block_weights in _blocks(_all_postings(reader, word)):
                    ids.extend(block_ids)
                    weights.extend(block_weights)
                    blocks += 1
                m = _all_postings(reader, word)
                expected_ids: list[int] = []
                expected_weights: list[float] = []
                while m.is_active():  # Whoosh's own reads of each block
                    expected_ids.append(m.id())
                    expected_weights.append(m.weight())
                    m.next()
                assert (ids, weights) == (expected_ids, expected_weights), word
    assert blocks > 60  # several blocks a common word


def test_a_narrow_filter_scores_its_memories_as_every_posting_would(store: Store) -> None:
    from memstore.search.postings import Cache
    from memstore.search.rank import Ranker

    _postings_store(store)
    ix = windex.open_dir(str(store.cache / "index"), schema=schema.index_schema())
    with ix.searcher(weighting=schema.weighting()) as searcher:
        cache = Cache(searcher)
        decisions = cache.docset(searcher, Term("type", "decision"))
        assert 0 < len(decisions) * 4 < 700
        words = ["w0", "w3", "w17", "w39", "w1"]
        every = Ranker(searcher, cache, filter=None, mask=None, today="", explain=False)
        narrow = Ranker(searcher, cache, filter=decisions, mask=None, today="", explain=False)
        wide = every._totals(words)  # pyright: ignore[reportPrivateUsage]
        expected = {d: s for d, s in wide.items() if d in decisions}
        assert narrow._totals(words) == expected  # pyright: ignore[reportPrivateUsage]


def test_a_filters_documents_are_read_as_whoosh_matches_them(store: Store) -> None:
    from whoosh.query import And, Or, TermRange

    from memstore.search.postings import Cache

    _postings_store(store)
    ix = windex.open_dir(str(store.cache / "index"), schema=schema.index_schema())
    filters = [
        Term("type", "decision"),
        Term("type", "fact"),
        Term("status", "draft"),
        Term("type", "no-such-type"),
        Term("no-such-field", "x"),
        Or([Term("type", "decision"), Term("type", "no-such-type")]),
        And([Term("type", "fact"), Term("status", "draft")]),
        And([Term("type", "fact"), Or([Term("type", "decision"), Term("status", "draft")])]),
        Or([Term("text", "w3"), Term("text", "w39")]),
        TermRange("updated", "0", None),  # another form: Whoosh's matchers
    ]
    with ix.searcher(weighting=schema.weighting()) as searcher:
        assert any(sub.reader().has_deletions() for sub, _ in searcher.subsearchers)
        cache = Cache(searcher)
        sizes: list[int] = []
        for q in filters:
            expected = set(searcher.docs_for_query(q))
            assert cache.docset(searcher, q) == expected, q
            sizes.append(len(expected))
        assert sizes[0] > 0 and sizes[1] > 600 and sizes[2] > 0 and sizes[3] == 0


def test_a_filters_documents_leave_out_those_deleted_since_it_was_read(store: Store) -> None:
    from memstore.search.postings import Cache

    for i in range(30):
        write_memory(store, f"note-{i}", f"note {i}", body="words", type="decision")
    search.catch_up(store)
    ix = windex.open_dir(str(store.cache / "index"), schema=schema.index_schema())
    decisions = Term("type", "decision")
    with ix.searcher(weighting=schema.weighting()) as searcher:
        first = Cache(searcher)
        assert len(first.docset(searcher, decisions)) == 30
    for i in range(0, 30, 3):  # their documents are deleted in the old segment
        (store.root / "decision" / f"note-{i}.md").unlink()
    write_memory(store, "other", "another one", body="words", type="decision")
    search.catch_up(store)
    with windex.open_dir(str(store.cache / "index")).searcher() as searcher:
        kept = Cache(searcher, first.segments)
        assert set(kept.segments.values()) & set(first.segments.values())  # carried over
        assert kept.docset(searcher, decisions) == set(searcher.docs_for_query(decisions))
        assert len(kept.docset(searcher, decisions)) == 21
