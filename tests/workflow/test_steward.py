"""Keeping shared memory true as the code moves: verification, pins, expiry, drift, duplicates,
doctor and the store's figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.errors import InvalidMemory, InvalidTransition, SelfApproval
from memstore.faces.cli.main import main
from memstore.search import upkeep as search
from memstore.search.upkeep import Query
from memstore.storage.files import lock_file
from memstore.storage.store import Store
from memstore.workflow.care import catalog, sharing, steward
from memstore.workflow.care.lint import MEMO_FILE, lint_store
from tests.conftest import as_agent, git
from tests.mcp_client import call, data, text


@pytest.fixture
def repo_store(tmp_path: Path) -> Store:
    """A store in `memory/` of a repository that also holds code (`src/api/users.py`)."""
    top = tmp_path / "repo"
    (top / "src" / "api").mkdir(parents=True)
    git(top, "init", "-q")
    (top / "src" / "api" / "users.py").write_text("v1\n", encoding="utf-8")
    (top / "src" / "api" / "orders.py").write_text("v1\n", encoding="utf-8")
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "code")
    return Store.init(top / "memory", agent="alice")


def change_code(store: Store, rel: str, *, later: int = 0) -> str:
    """Commit a change to a code file as a human, `later` seconds in the future."""
    top = store.repo.top
    path = top / rel
    path.write_text(path.read_text(encoding="utf-8") + "more\n", encoding="utf-8")
    git(top, "add", rel)
    env_date = f"{int(time.time()) + later} +0000"
    os.environ["GIT_COMMITTER_DATE"] = env_date
    try:
        git(top, "commit", "-q", "-m", f"change {rel}")
    finally:
        del os.environ["GIT_COMMITTER_DATE"]
    return git(top, "rev-parse", "HEAD").strip()


def confirmed(store: Store, name: str, **fields: object) -> None:
    store.add(name, type="decision", description=f"About {name}", **fields)  # pyright: ignore[reportArgumentType]
    as_agent(store, "bob").confirm(name, "checked")


# -- verification -----------------------------------------------------------------------------


def test_verify_by_someone_else_keeps_the_confirmation_and_records_who(store: Store) -> None:
    confirmed(store, "use-zod")
    memory = as_agent(store, "carol").verify("use-zod", "re-read the code")
    assert (memory.verified_by, memory.verified_reason) == ("carol", "re-read the code")
    shown = as_agent(store, "dave").get("use-zod")
    assert shown.status == "confirmed" and shown.verified_by == "carol"
    assert lint_store(store) == []
    assert "memory: verify decision/use-zod" in git(store.root, "log", "-1", "--format=%s")


def test_the_owner_cannot_verify_their_own_memory_and_nothing_is_written(store: Store) -> None:
    confirmed(store, "use-zod")
    before = git(store.root, "rev-parse", "HEAD")
    with pytest.raises(SelfApproval, match="nobody verifies their own memory"):
        store.verify("use-zod", "still true")
    assert git(store.root, "rev-parse", "HEAD") == before


def test_a_draft_cannot_be_verified(store: Store) -> None:
    store.add("use-zod", type="decision", description="Validate with zod")
    with pytest.raises(InvalidTransition, match="confirm it instead"):
        as_agent(store, "bob").verify("use-zod", "looks right")


def test_a_hand_typed_verification_does_not_count(store: Store) -> None:
    confirmed(store, "use-zod")
    path = store.root / "decision" / "use-zod.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("tags: []\n", "tags: []\n", 1).replace(
            "confirmed_hash:",
            "verified_by: carol\nverified_at: '2026-12-01T00:00:00Z'\nconfirmed_hash:",
        ),
        encoding="utf-8",
    )
    git(store.root, "commit", "-qam", "verify as carol")  # committed by `human`, not carol
    assert store.get("use-zod").status == "unverified"
    assert any("forged verification" in str(p) for p in lint_store(store))


def test_pinning_keeps_a_confirmation_and_ranks_the_memory_higher(store: Store) -> None:
    store.add("cache-rules", type="fact", description="cache invalidation rules for the cache")
    confirmed(store, "notes-b", body="cache")
    top = [h.name for h in search.search(store, Query("cache"))]
    assert top == ["cache-rules", "notes-b"]
    as_agent(store, "carol").pin("notes-b")
    assert store.get("notes-b").status == "confirmed"
    assert [h.name for h in search.search(store, Query("cache"))] == ["notes-b", "cache-rules"]
    assert lint_store(store) == []


@pytest.mark.parametrize(
    ("extra", "pin", "says"),
    [
        ({}, True, ["boost pinned x1.5"]),
        ({"importance": "high"}, False, ["boost importance high x1.3"]),
        ({"importance": "high"}, True, ["boost pinned x1.5", "boost importance high x1.3"]),
    ],
)
def test_the_shown_score_is_the_ranking_one_and_explain_names_each_boost(
    store: Store, extra: dict[str, str], pin: bool, says: list[str]
) -> None:
    store.add("cache-rules", type="fact", description="cache invalidation rules for the cache")
    store.add("notes-b", type="fact", description="notes", body="cache", extra=extra)
    if pin:
        store.pin("notes-b")
    hits = search.search(store, Query("cache", explain=True))
    assert [h.name for h in hits] == ["notes-b", "cache-rules"]
    assert hits[0].score > hits[1].score  # best first, by the score shown
    lines = hits[0].explain
    assert [line for line in lines if line.startswith("boost ") and "status" not in line] == says
    factor = 1.5 if pin else 1.0
    factor *= 1.3 if extra else 1.0
    assert any(line.endswith(f"= {hits[0].score:.3f}") and f"x{factor:g}" in line for line in lines)
    assert not any("boost" in line for line in hits[1].explain)


# -- expiry -----------------------------------------------------------------------------------


def test_an_expired_memory_leaves_recall_with_a_note_that_it_exists(store: Store) -> None:
    store.add(
        "old-note", type="fact", description="deploy freeze notes", extra={"expires": "2020-01-01"}
    )
    store.add("freeze", type="fact", description="deploy freeze policy")
    found = search.recall(store, Query("deploy freeze"))
    assert [h.name for h in found.hits] == ["freeze"]
    assert [h.name for h in found.expired] == ["old-note"]
    runner = CliRunner()
    result = runner.invoke(main, ["search", "deploy", "freeze"])
    assert result.exit_code == 0
    assert "1 expired memory also matched, left out: old-note" in result.output


def test_add_takes_a_relative_expiry_and_working_memories_expire_by_default(store: Store) -> None:
    note = store.add("scratch", type="working", description="what I am trying now")
    assert isinstance(note.extra["expires"], str) and len(note.extra["expires"]) == 10
    (store.root / "memstore.yaml").write_text("working_expires: never\n", encoding="utf-8")
    assert "expires" not in store.add("kept", type="working", description="x").extra
    code = CliRunner().invoke(
        main, ["--agent", "alice", "add", "soon", "--type", "fact", "-d", "x", "--expires", "7d"]
    )
    assert code.exit_code == 0, code.output
    assert store.get("soon").extra["expires"] > note.created[:10]
    with pytest.raises(InvalidMemory, match="invalid expiry"):
        store.add("bad", type="fact", description="x", extra={"expires": "next week"})


@pytest.mark.parametrize("setting", ["90m", "90", "soon"])
def test_a_working_expiry_setting_takes_the_forms_an_expiry_takes(
    store: Store, setting: str
) -> None:
    (store.root / "memstore.yaml").write_text(f"working_expires: '{setting}'\n", encoding="utf-8")
    with pytest.raises(InvalidMemory, match="'working_expires' must be a time such as 30d"):
        store.add("scratch", type="working", description="what I am trying now")
    (store.root / "memstore.yaml").write_text("working_expires: 1.5d\n", encoding="utf-8")
    assert len(store.add("scratch", type="working", description="x").extra["expires"]) == 10


def test_add_refuses_links_to_missing_memories(store: Store) -> None:
    with pytest.raises(InvalidMemory, match="links name no memory: nope"):
        store.add("a", type="fact", description="x", links=["nope"])
    assert not (store.root / "fact" / "a.md").exists()


def test_lint_reports_bad_upkeep_fields(store: Store) -> None:
    store.add("a", type="fact", description="x")
    path = store.root / "fact" / "a.md"
    text = path.read_text(encoding="utf-8").replace(
        "tags: []\n", "tags: []\nexpires: soon\nimportance: urgent\nfiles:\n- ../etc/passwd\n"
    )
    path.write_text(text, encoding="utf-8")
    problems = " | ".join(str(p) for p in lint_store(store))
    assert "expires must be a date" in problems
    assert "invalid importance 'urgent'" in problems
    assert "invalid file '../etc/passwd'" in problems


# -- drift ------------------------------------------------------------------------------------


def test_a_confirmed_memory_whose_files_changed_is_marked_in_recall(
    repo_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = repo_store
    store.add(
        "users-api",
        type="decision",
        description="users api validation",
        extra={"files": ["src/api/*.py"]},
    )
    as_agent(store, "bob").confirm("users-api", "checked")
    assert search.search(store, Query("users"))[0].note is None
    sha = change_code(store, "src/api/users.py", later=3600)
    hit = search.search(store, Query("users"))[0]
    assert (
        hit.note
        == f"may be out of date: src/api/users.py changed in {sha[:10]} since it was confirmed"
    )
    assert steward.drift_notes(store, [store.get("users-api")]) == {"users-api": hit.note}
    result = CliRunner().invoke(main, ["--store", str(store.root), "get", "users-api"])
    assert "! may be out of date: src/api/users.py" in result.output
    report = steward.doctor(store, lint=False)
    assert [f.name for f in report.drifted] == ["users-api"]


def test_a_fresh_verification_clears_drift(
    repo_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = repo_store
    store.add("users-api", type="decision", description="users api", extra={"files": ["src/api"]})
    # The confirmation was made long ago; the code changed since, then carol re-read it.
    with monkeypatch.context() as m:
        m.setattr("memstore.storage.store.now", lambda: "2026-01-01T00:00:00Z")
        as_agent(store, "bob").confirm("users-api", "checked")
    change_code(store, "src/api/orders.py")
    assert steward.drift_notes(store, [store.get("users-api")])
    as_agent(store, "carol").verify("users-api", "re-read src/api")
    assert steward.drift_notes(store, [store.get("users-api")]) == {}


def test_search_path_ranks_memories_about_that_path_first(repo_store: Store) -> None:
    store = repo_store
    store.add("retry-policy", type="fact", description="retry retry retry policy for clients")
    store.add(
        "orders-retry",
        type="fact",
        description="retry orders",
        extra={"files": ["src/api/orders.py"]},
    )
    assert search.search(store, Query("retry"))[0].name == "retry-policy"
    about = search.search(store, Query("retry", path="src/api/orders.py"))
    assert [h.name for h in about][:2] == ["orders-retry", "retry-policy"]
    result = CliRunner().invoke(
        main, ["--store", str(store.root), "search", "retry", "--path", "src/api", "--json"]
    )
    assert json.loads(result.output)[0]["name"] == "orders-retry"


# -- duplicates and doctor --------------------------------------------------------------------


def test_add_names_near_duplicates_and_still_saves(store: Store) -> None:
    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    result = CliRunner().invoke(
        main,
        [
            "--agent",
            "bob",
            "add",
            "zod-validation",
            "--type",
            "decision",
            "-d",
            "Validate API input with zod schema",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["memory"]["name"] == "zod-validation"
    assert [s["name"] for s in out["similar"]] == ["use-zod"]
    assert steward.similar(store, "deploy-freeze", "Deploy freeze on Fridays") == []


def test_hint_names_a_memory_another_process_just_wrote_and_leaves_the_index_alone(
    store: Store,
) -> None:
    store.add("seed", type="fact", description="something else entirely")
    search.search(store, Query("seed"))  # the index is built and current
    manifest = store.cache / "index" / "manifest.json"
    other = as_agent(store, "bob")  # another process: its writes are not indexed yet
    other.add("use-zod", type="decision", description="Validate API input with zod schemas")
    before = manifest.stat()
    close = steward.similar(store, "zod-validation", "Validate API input with zod schema")
    assert [(s.name, s.status) for s in close] == [("use-zod", "draft")]
    after = manifest.stat()
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)
    assert [h.name for h in search.search(store, Query("zod"))] == ["use-zod"]
    # A change the index has not seen yet is read from the file, not the index's entry.
    other.deprecate("use-zod", "zod is gone")
    assert steward.similar(store, "zod-validation", "Validate API input with zod schema") == []
    search.search(store, Query("zod"))  # indexed: now the manifest lists it as deprecated
    assert steward.similar(store, "zod-validation", "Validate API input with zod schema") == []


def test_hint_asks_the_catalog_and_reads_only_the_files_committed_since_its_look(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    store.add("old-zod", type="decision", description="Validate API input with zod schemas")
    store.add("deploy-freeze", type="fact", description="No deploys on Fridays")
    with catalog.opened(store):  # the catalog looks at the store (as list and brief do)
        pass
    other = as_agent(store, "bob")  # since its look: committed, not in the catalog yet
    other.add("zod-input", type="fact", description="Validate API input with zod")
    other.deprecate("old-zod", "zod is gone")

    def every_file(*args: object) -> None:
        raise AssertionError("the hint looked at every file")

    monkeypatch.setattr(steward, "stamps", every_file)
    close = steward.similar(store, "zod-validation", "Validate API input with zod schema")
    assert [s.name for s in close] == ["use-zod", "zod-input"]
    assert not (store.cache / "index").exists()  # no search index built, none read
    assert sharing.CATALOG == catalog.FILE


def test_add_loads_no_search_engine_once_the_index_exists(store: Store) -> None:
    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    search.search(store, Query("zod"))
    script = (
        "import sys; from memstore.faces.cli.main import main\n"
        "try: main(['--agent', 'bob', 'add', 'zod-validation', '--type', 'decision', "
        "'-d', 'Validate API input with zod schema'])\n"
        "except SystemExit: pass\n"
        "print('whoosh' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMSTORE_DIR": str(store.root)},
        check=True,
    )
    assert "similar: use-zod (decision, draft" in done.stderr
    assert done.stdout.splitlines()[-1] == "False"


def _add_in_a_process(store: Store, name: str, description: str) -> tuple[float, str, bool]:
    """`memstore add` in a process of its own (a lock timeout of 30 s): the seconds it took,
    its stderr, and whether it loaded Whoosh."""
    script = (
        "import sys; from memstore.faces.cli.main import main\n"
        f"try: main(['--agent', 'bob', 'add', {name!r}, '--type', 'fact', '-d', {description!r}])\n"
        "except SystemExit: pass\n"
        "print('whoosh' in sys.modules)"
    )
    env = {**os.environ, "MEMSTORE_DIR": str(store.root), "MEMSTORE_LOCK_TIMEOUT": "30"}
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    return time.monotonic() - t0, done.stderr, done.stdout.splitlines()[-1] == "True"


@pytest.mark.parametrize("lock", [steward.CATCHING_UP, steward.INDEX_LOCK])
def test_of_adders_finding_the_index_far_behind_only_one_catches_it_up(
    store: Store, lock: str
) -> None:
    store.add("seed", type="fact", description="something else entirely")
    search.search(store, Query("seed"))  # the index is built
    for i in range(steward.HINT_READS + 1):  # more unindexed files than a hint reads
        store.add(f"note-{i}", type="fact", description=f"note number {i} on the build")
    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    index_dir = store.cache / "index"

    def manifest() -> tuple[bytes, bytes]:  # the file and its log of later changes
        return (index_dir / "manifest.json").read_bytes(), (index_dir / "manifest.log").read_bytes()

    before = manifest()
    # Another adder is catching the index up (or a search is writing it): this one reads the
    # files itself, neither waiting for it (30 s) nor loading Whoosh to do it again.
    held = lock_file(store.cache / lock, 0)
    assert held is not None
    try:
        took, err, whoosh = _add_in_a_process(
            store, "zod-validation", "Validate API input with zod schema"
        )
    finally:
        os.close(held)
    assert "similar: use-zod (decision, draft" in err
    assert took < 15 and not whoosh
    assert manifest() == before
    # With nobody at it, the next adder catches the index up.
    took, err, whoosh = _add_in_a_process(store, "zod-schemas", "Zod schemas validate input")
    assert whoosh and manifest() != before
    assert steward._listed(store) is not None  # pyright: ignore[reportPrivateUsage]


def test_doctor_lists_what_needs_tidying_and_fails_only_on_lint(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    store.add("zod-input", type="decision", description="Validate API input with zod schema")
    store.add("linker", type="fact", description="see the other", body="see [[gone-memory]]")
    store.add("old", type="fact", description="old note", extra={"expires": "2020-01-01"})
    (store.root / "memstore.yaml").write_text("stale_after: 30\n", encoding="utf-8")
    with monkeypatch.context() as m:
        m.setattr("memstore.storage.store.now", lambda: "2026-01-01T00:00:00Z")
        store.add("ancient", type="fact", description="something confirmed long ago")
        as_agent(store, "bob").confirm("ancient", "checked")
    runner = CliRunner()
    result = runner.invoke(main, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["duplicates"] == [["use-zod", "zod-input"]]
    assert report["broken_links"] == [{"name": "linker", "detail": "links to missing gone-memory"}]
    assert [f["name"] for f in report["expired"]] == ["old"]
    assert [f["name"] for f in report["stale"]] == ["ancient"]
    assert report["lint"] == [] and report["ok"] is True
    text = runner.invoke(main, ["doctor"]).output
    assert "duplicate clusters: 1" in text and "use-zod, zod-input" in text
    (store.root / "fact" / "broken.md").write_text("no front matter\n", encoding="utf-8")
    result = runner.invoke(main, ["doctor"])
    assert result.exit_code == 1
    assert "FAIL: lint problems" in result.output


# -- figures ----------------------------------------------------------------------------------


def test_stats_counts_the_store_and_the_recalls_that_found_a_confirmed_memory(store: Store) -> None:
    confirmed(store, "use-zod")
    store.add("draft-one", type="fact", description="zod draft")
    runner = CliRunner()
    runner.invoke(main, ["search", "zod"])
    runner.invoke(main, ["search", "nothing-like-this"])
    result = runner.invoke(main, ["stats", "--json"])
    figures = json.loads(result.output)["store"]
    assert figures["by_type"] == {"decision": 1, "fact": 1}
    assert figures["by_status"] == {"confirmed": 1, "draft": 1}
    assert figures["by_owner"] == {"alice": 2}
    assert figures["drafts_awaiting_review"] == 1
    assert (figures["recalls"], figures["recalls_with_confirmed"]) == (2, 1)
    assert git(store.root, "status", "--porcelain") == ""  # counted in the ignored cache
    assert (
        "recalls that returned a confirmed memory: 50% of 2"
        in runner.invoke(main, ["stats"]).output
    )


# -- MCP --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_memory_store_names_near_duplicates_and_recall_notes_expired_ones(
    store: Store,
) -> None:
    await call(
        store,
        "memory_store",
        name="use-zod",
        type="decision",
        description="Validate API input with zod schemas",
    )
    result = await call(
        store,
        "memory_store",
        name="zod-input",
        type="decision",
        description="Validate API input with zod schema",
        files=["src/api/*.py"],
        expires="2020-01-01",
    )
    saved = data(result)
    assert saved["memory"]["extra"] == {"files": ["src/api/*.py"], "expires": "2020-01-01"}
    assert [s["name"] for s in saved["similar"]] == ["use-zod"]
    assert "Similar memories exist" in text(result)
    recalled = await call(store, "memory_recall", query="zod", path="src/api/users.py")
    assert [h["name"] for h in data(recalled)["results"]] == ["use-zod"]
    assert data(recalled)["expired"] == ["zod-input"]
    assert "1 expired memory also matched" in text(recalled)


def test_an_expired_match_is_named_though_live_memories_outrank_it(store: Store) -> None:
    store.add("freeze", type="fact", description="deploy freeze policy for the deploy freeze")
    store.add("window", type="fact", description="deploy freeze window")
    store.add(
        "old-note", type="fact", description="a note on a freeze", extra={"expires": "2020-01-01"}
    )
    store.add("gone", type="fact", description="deploy freeze", extra={"expires": "2020-01-02"})
    store.deprecate("gone", reason="replaced")
    found = search.recall(store, Query("deploy freeze", limit=1))
    assert [h.name for h in found.hits] == ["freeze"]
    # Named from the expired memories alone: no second ranking of the whole store.
    assert [h.name for h in found.expired] == ["old-note"]


def test_doctor_sees_a_hand_edit_made_since_its_last_run(store: Store) -> None:
    store.add("a", type="fact", description="first")
    runner = CliRunner()
    assert runner.invoke(main, ["doctor"]).exit_code == 0
    path = store.root / "fact" / "a.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("tags: []\n", "tags: []\nimportance: urgent\n"),
        encoding="utf-8",
    )
    result = runner.invoke(main, ["doctor", "--json"])
    assert result.exit_code == 1
    assert any("invalid importance 'urgent'" in p for p in json.loads(result.output)["lint"])
    assert runner.invoke(main, ["lint"]).exit_code == 1  # lint agrees, replaying everything


def test_doctor_finds_the_same_cold_warm_and_after_a_hand_edit_keeping_size_and_mtime(
    repo_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = repo_store
    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    store.add("zod-input", type="decision", description="Validate API input with zod schema")
    store.add("linker", type="fact", description="see the other", body="see [[gone-memory]]")
    store.add("old", type="fact", description="old note", extra={"expires": "2020-01-01"})
    store.add("users-api", type="decision", description="users api", extra={"files": ["src/api"]})
    as_agent(store, "bob").confirm("users-api", "checked")
    (store.root / "memstore.yaml").write_text("stale_after: 30\n", encoding="utf-8")
    with monkeypatch.context() as m:
        m.setattr("memstore.storage.store.now", lambda: "2026-01-01T00:00:00Z")
        store.add("ancient", type="fact", description="something confirmed long ago")
        as_agent(store, "bob").confirm("ancient", "checked")
    change_code(store, "src/api/users.py", later=3600)
    (store.root / "fact" / "bad.md").write_text("no front matter\n", encoding="utf-8")
    search.catch_up(store)  # the index's health is not what this compares
    time.sleep(0.25)  # past the timestamps' tick: the memo may keep every file by its stamp
    caches = [
        store.cache / name
        for name in (MEMO_FILE, steward.CLUSTERS_FILE, "trust.json", "drift.json")
    ]
    runner = CliRunner()

    def doctor(cold: bool) -> dict[str, object]:
        if cold:
            for cache in caches:
                cache.unlink(missing_ok=True)
        result = runner.invoke(main, ["--store", str(store.root), "doctor", "--json"])
        assert result.exit_code == 1, result.output  # bad.md
        return json.loads(result.output)

    cold = doctor(cold=True)
    assert cold["duplicates"] == [["use-zod", "zod-input"]]
    assert [f["name"] for f in cold["broken_links"]] == ["linker"]  # pyright: ignore[reportUnknownVariableType]
    assert [f["name"] for f in cold["expired"]] == ["old"]  # pyright: ignore[reportUnknownVariableType]
    assert [f["name"] for f in cold["stale"]] == ["ancient"]  # pyright: ignore[reportUnknownVariableType]
    assert [f["name"] for f in cold["drifted"]] == ["users-api"]  # pyright: ignore[reportUnknownVariableType]
    assert any(str(p).startswith("fact/bad.md") for p in cold["lint"])  # pyright: ignore[reportGeneralTypeIssues]
    memo = store.cache / MEMO_FILE
    kept = memo.stat().st_mtime_ns
    assert doctor(cold=False) == cold
    assert memo.stat().st_mtime_ns == kept  # the warm run took every file from the memo

    # A hand edit that keeps the file's size, inode and mtime: only its ctime moves.
    path = store.root / "fact" / "old.md"
    before = path.stat()
    data = path.read_bytes()
    assert b"expires: '2020-01-01'" in data or b"expires: 2020-01-01" in data
    with path.open("r+b") as f:  # in place: the same inode
        f.write(data.replace(b"2020-01-01", b"2999-01-01"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        before.st_mtime_ns,
        before.st_size,
        before.st_ino,
    )
    time.sleep(0.25)
    warm = doctor(cold=False)
    assert warm["expired"] == []
    assert warm == doctor(cold=True)


def test_doctor_keeps_its_duplicate_clusters_until_a_memory_file_changes(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add("use-zod", type="decision", description="Validate API input with zod schemas")
    store.add("zod-input", type="decision", description="Validate API input with zod schema")
    store.add("other", type="fact", description="Something else entirely")
    assert steward.doctor(store, lint=False).duplicates == [["use-zod", "zod-input"]]
    assert (store.cache / steward.CLUSTERS_FILE).is_file()

    def refused(_memories: object) -> list[list[str]]:
        raise AssertionError("looked for duplicates again")

    with monkeypatch.context() as m:
        m.setattr(steward, "clusters", refused)
        assert steward.doctor(store, lint=False).duplicates == [["use-zod", "zod-input"]]
    store.edit("zod-input", description="Pick a queue for background jobs")
    assert steward.doctor(store, lint=False).duplicates == []
