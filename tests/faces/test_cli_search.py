"""`memstore search`, `get` and `reindex` on the command line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import as_agent

from memstore.faces.cli.main import main
from memstore.storage.store import Store
from tests.search.test_index import write_memory


def run(store: Store, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--store", str(store.root), *args])
    return result.exit_code, result.stdout, result.stderr


def test_search_prints_each_result_with_its_status(store: Store) -> None:
    store.add("hpa-off", type="fact", description="Disable HPA on checkout", tags=("k8s",))
    as_agent(store, "bob").confirm("hpa-off", "checked the manifests")
    write_memory(store, "hpa-why", "Why HPA flapped", type="incident")
    code, out, _ = run(store, "search", "hpa")
    assert code == 0
    lines = out.splitlines()
    assert "hpa-off  fact [confirmed]" in lines[0] and "#k8s" in lines[0]
    assert "hpa-why  incident [draft]" in lines[1]


def test_search_json_lists_name_type_status_description_and_score(store: Store) -> None:
    write_memory(store, "hpa-off", "Disable HPA on checkout")
    code, out, _ = run(store, "search", "hpa", "--json")
    assert code == 0
    (hit,) = json.loads(out)
    assert {k: hit[k] for k in ("name", "type", "status", "description")} == {
        "name": "hpa-off",
        "type": "fact",
        "status": "draft",
        "description": "Disable HPA on checkout",
    }
    assert hit["score"] > 0


def test_search_explain_prints_the_parts_under_each_result(store: Store) -> None:
    write_memory(store, "no-force", "Never force push", type="warning")
    code, out, _ = run(store, "search", "force", "--explain")
    assert code == 0
    assert [line.strip().split()[0] for line in out.splitlines()[1:]] == [
        "bm25",
        "matched",
        "boost",
        "fused",
    ]


def test_search_feedback_is_a_ranked_list_on_by_default_that_explain_shows(store: Store) -> None:
    write_memory(store, "hpa-off", "Disabled the HPA on checkout", body="pods flapped")
    write_memory(store, "hpa-flap", "HPA flapped pods on checkout", body="scaling storm")
    code, out, _ = run(store, "search", "when did we disable hpa?", "--explain")
    assert code == 0
    assert out.splitlines()[0].split()[1] == "hpa-off"
    assert "fused" in out and "+ feedback #1" in out
    assert "feedback" not in run(store, "search", "hpa", "--no-feedback", "--explain")[1]


def test_search_explain_works_after_an_edit_took_a_word_out_of_the_description(
    store: Store,
) -> None:
    alice = ("--agent", "alice")
    assert (
        run(store, *alice, "add", "skip-review", "--type", "fact", "-d", "We skip review")[0] == 0
    )
    assert run(store, "search", "--explain", "review")[0] == 0
    assert run(store, *alice, "edit", "skip-review", "--description", "We skip checks")[0] == 0
    code, out, err = run(store, "search", "--explain", "review")
    assert code == 0, err
    assert "skip-review" in out and "matched review in name" in out


def test_a_query_whoosh_cannot_run_is_a_one_line_error(store: Store) -> None:
    write_memory(store, "skip-review", "We skip review for typo fixes")
    for query in ('description:"skip review"', "NOT NOT review", "review " * 300):
        code, out, err = run(store, "search", query)
        assert code == 1 and out == "", query
        assert err.startswith("Error: ") and err.count("\n") == 1, err


def test_search_index_view_and_budget(store: Store) -> None:
    for i in range(5):
        write_memory(store, f"note-{i}", f"Widget note {i}")
    code, out, _ = run(store, "search", "widget", "--index", "--budget", "tiny")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[0].split()[1:4] == ["fact", "draft", "2026-11-01"]
    assert "Widget" not in out


def test_search_marks_deprecated_and_expired_when_included(store: Store) -> None:
    write_memory(store, "old", "Widget rule", status="deprecated")
    write_memory(store, "gone", "Widget promo", extra={"expires": "2020-01-01"})
    code, out, err = run(store, "search", "widget")
    assert code == 0 and out == "" and "no memories match" in err
    _, out, _ = run(store, "search", "widget", "--include-deprecated")
    assert "old  fact [deprecated]" in out
    assert "gone  fact [draft, expired]" in out


def test_search_refuses_a_bad_date(store: Store) -> None:
    code, _, err = run(store, "search", "x", "--since", "last-week")
    assert code == 1 and "Error: since 'last-week' must be a duration back from now" in err


def test_get_prints_several_memories_in_order(store: Store) -> None:
    write_memory(store, "a", "First", body="Body A")
    write_memory(store, "b", "Second")
    code, out, _ = run(store, "get", "b", "a")
    assert code == 0
    assert out.index("==> fact/b.md <==") < out.index("==> fact/a.md <==")
    assert "Body A" in out
    code, out, _ = run(store, "get", "a", "b", "--json")
    assert [m["name"] for m in json.loads(out)] == ["a", "b"]
    code, _, err = run(store, "get", "a", "nope")
    assert code == 1 and "Error: no memory named 'nope'" in err


def test_reindex_reports_progress_on_stderr(store: Store) -> None:
    write_memory(store, "a", "First")
    (store.root / "fact" / "bad.md").write_text("no front matter", encoding="utf-8")
    code, out, err = run(store, "reindex")
    assert code == 0
    assert out == "reindexed 1 memory; skipped 1 file that is no valid memory\n"
    assert "read 2/2 files" in err
    # Each skipped file is named once, with why.
    assert err.count("fact/bad.md") == 1
    assert "skipped fact/bad.md: no YAML front matter" in err


def test_an_empty_search_says_what_was_hidden_and_how_to_see_it(store: Store) -> None:
    store.add("old-port", type="fact", description="The API listens on port 8080", body="b")
    store.deprecate("old-port", "moved to 9090")
    code, out, err = run(store, "search", "port")
    assert code == 0 and out == ""
    assert "no memories match" in err
    assert "1 memory matches but is deprecated or expired: --include-deprecated shows it" in err

    store.add("api-port", type="fact", description="The API listens on port 9090", body="b")
    code, out, err = run(store, "search", "port", "--max-tokens", "5")
    assert out == ""
    assert "more than --max-tokens allows" in err and "--index" in err

    code, out, err = run(store, "search", "port", "--tag", "k8s", "--type", "fact")
    assert out == ""
    assert "1 memory matches without --type, --tag" in err  # the deprecated one stays hidden


def test_an_empty_search_with_nothing_hidden_says_only_that(store: Store) -> None:
    store.add("api-port", type="fact", description="The API listens on port 9090", body="b")
    code, out, err = run(store, "search", "kubernetes")
    assert code == 0 and out == ""
    assert err.strip() == "no memories match"


def test_reindex_progress_says_the_time_left_once_a_run_is_long(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memstore.faces.cli.search import Pace

    now = [100.0]
    pace = Pace(clock=lambda: now[0])
    pace(500, 2000)  # at once: too soon for a rate, and nothing to say yet
    now[0] += 10
    pace(1000, 2000)  # 1000 files in 10 s: 10 s for the other 1000
    now[0] += 0.5
    pace(1500, 2000)  # half a second after the last line: quiet
    now[0] += 289.5
    pace(1500, 2000)  # 300 s for 1500: 100 s more
    pace.writing(300, 2000)  # writing is timed from here
    pace(2000, 2000)
    pace.writing(500, 2000)
    now[0] += 10
    pace.writing(1000, 2000)  # 500 more in 10 s: 20 s for the other 1000
    now[0] += 10
    pace.writing(2000, 2000)  # the command's own line says it is done
    assert capsys.readouterr().err.splitlines() == [
        "read 1000/2000 files, about 10 s left to read, then the index is written",
        "read 1500/2000 files, about 2 min left to read, then the index is written",
        "read 2000/2000 files, writing the index",
        "writing the index: 1000/2000 memories, about 20 s left",
    ]


def test_reindex_progress_of_a_short_run_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from memstore.faces.cli.search import Pace

    now = [100.0]
    pace = Pace(clock=lambda: now[0])
    for done in range(500, 4001, 500):
        now[0] += 0.1
        pace(done, 4000)
    for done in range(1000, 4001, 1000):
        now[0] += 0.1
        pace.writing(done, 4000)
    assert capsys.readouterr().err.splitlines() == ["read 4000/4000 files"]
