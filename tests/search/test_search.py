"""Queries: filters, status-aware ranking, CJK, explain, budgets, links and fetching by name."""

from __future__ import annotations

import ast
import json
import random
import re
from dataclasses import asdict
from pathlib import Path

import pytest
from conftest import as_agent, git

import memstore
from memstore.errors import InvalidQuery, MemoryNotFound
from memstore.limits import BUDGETS
from memstore.search.query import QUERY_MAX, estimate_hit_tokens
from memstore.search.rank import HOP_DECAY
from memstore.storage.store import Store
from tests.search.test_index import find, names, write_memory


def test_deprecated_memories_are_left_out_unless_asked_for(store: Store) -> None:
    store.add("use-joi", type="decision", description="Validate input with joi")
    as_agent(store, "bob").deprecate("use-joi", "replaced by zod")
    assert find(store, "validate input") == []
    hits = find(store, "validate input", include_deprecated=True)
    assert [(h.name, h.status) for h in hits] == [("use-joi", "deprecated")]
    assert names(store, "validate", status="deprecated") == ["use-joi"]


def test_expired_memories_are_left_out_unless_asked_for_and_marked(store: Store) -> None:
    write_memory(store, "promo-price", "Promo price is 9 EUR", extra={"expires": "2020-01-31"})
    write_memory(store, "promo-next", "Promo price next year", extra={"expires": "2999-01-31"})
    assert names(store, "promo") == ["promo-next"]
    hits = find(store, "promo", include_deprecated=True)
    assert {h.name: h.expired for h in hits} == {"promo-price": True, "promo-next": False}


def test_confirmed_ranks_above_draft_on_equal_text(store: Store) -> None:
    write_memory(store, "a-draft", "Rotate the signing key every month")
    write_memory(store, "b-confirmed", "Rotate the signing key every month", status="confirmed")
    assert names(store, "rotate signing key") == ["b-confirmed", "a-draft"]


def test_warnings_and_corrections_get_a_modest_boost(store: Store) -> None:
    write_memory(store, "a-fact", "Force push rewrites history on main")
    write_memory(store, "b-warning", "Force push rewrites history on main", type="warning")
    write_memory(store, "c-better", "Force push to main rewrites shared history; force push")
    hits = find(store, "force push main history")
    assert hits[0].name in ("b-warning", "c-better")
    assert [h.name for h in hits].index("b-warning") < [h.name for h in hits].index("a-fact")
    # The boost multiplies the words' score inside each ranked list, before fusion.
    by_name = {h.name: h for h in hits}
    assert by_name["b-warning"].score > by_name["a-fact"].score
    assert (
        "boost type warning x1.15"
        in find(store, "force push main history", explain=True)[
            [h.name for h in hits].index("b-warning")
        ].explain
    )


def test_a_japanese_query_finds_japanese_text(store: Store) -> None:
    write_memory(store, "cdn-stale-price", "CDNキャッシュの無効化漏れで古い価格が表示された障害")
    write_memory(store, "other", "データベースの接続数を増やした")
    assert names(store, "キャッシュ") == ["cdn-stale-price"]
    assert names(store, "接続数") == ["other"]


def test_stemming_matches_word_variants(store: Store) -> None:
    write_memory(store, "hpa-off", "Disabled the HPA autoscaler on checkout")
    assert names(store, "autoscaling") == ["hpa-off"]
    assert names(store, "disabling") == ["hpa-off"]


def test_every_result_shows_its_status(store: Store) -> None:
    write_memory(store, "one", "Widgets are blue")
    store.add("two", type="fact", description="Widgets are red")
    as_agent(store, "bob").confirm("two", "saw one")
    # A file that says confirmed, which no commit supports: shown as unverified.
    write_memory(store, "three", "Widgets are green", status="confirmed", confirmed_by="bob")
    found = {h.name: h.status for h in find(store, "widgets")}
    assert found == {"one": "draft", "two": "confirmed", "three": "unverified"}


def test_filters_combine_and_tags_are_anded(store: Store) -> None:
    write_memory(store, "a", "Deploy note", tags=("k8s", "prod"), owner="bob")
    write_memory(store, "b", "Deploy note", tags=("k8s",), type="runbook")
    write_memory(store, "c", "Deploy note", tags=("prod",), updated="2026-11-20T00:00:00Z")
    assert sorted(names(store, "deploy", tags=["k8s"])) == ["a", "b"]
    assert names(store, "deploy", tags=["k8s", "prod"]) == ["a"]
    assert names(store, "deploy", type="runbook") == ["b"]
    assert names(store, "deploy", owner="bob") == ["a"]
    assert names(store, "deploy", since="2026-11-15") == ["c"]
    assert names(store, "deploy", tags=["nobody-has-it"]) == []
    assert names(store, "deploy", type="runbook", owner="bob") == []


def test_an_empty_query_lists_the_newest_first(store: Store) -> None:
    write_memory(store, "old", "Old note", updated="2026-01-01T00:00:00Z")
    write_memory(store, "new", "New note", updated="2026-06-01T00:00:00Z")
    assert names(store, "") == ["new", "old"]


def test_explain_shows_bm25_each_boost_and_the_matched_terms(store: Store) -> None:
    write_memory(store, "no-force", "Never force push to main", type="warning", status="confirmed")
    (hit,) = find(store, "force push", explain=True)
    assert hit.explain[0].startswith("bm25 ")
    assert "matched forc push in name, description" in hit.explain  # stems, per field
    assert "boost status confirmed x1.2" in hit.explain
    assert "boost type warning x1.15" in hit.explain
    # The last line shows each ranked list's place and share; the shares make the score.
    fused = hit.explain[-1]
    assert fused.startswith(f"fused {hit.score:.3f} = bm25 #1 (0.984)")
    shares = [float(s) for s in re.findall(r"\(([\d.]+)\)", fused)]
    assert hit.score == pytest.approx(sum(shares), abs=2e-3)
    assert find(store, "force push")[0].explain == ()


def _explained(store: Store, word: str) -> list[tuple[str, ...]]:
    return [h.explain for h in find(store, word, explain=True, include_deprecated=True)]


def test_explain_works_after_any_change_to_a_memory(store: Store) -> None:
    # Each change replaces or deletes an indexed document; the words it took away from the
    # name, description or tags must not break explaining the memories still found by them.
    store.add("skip-review", type="fact", description="Skip review for typo fixes", body="review")
    store.add("cache-keys", type="decision", description="Cache keys hold the tenant", tags=["k8s"])
    bob = as_agent(store, "bob")
    path = store.root / "fact" / "skip-review.md"
    changes = [
        lambda: store.edit("skip-review", description="Skip checks for typo fixes"),
        lambda: store.edit("skip-review", body="typo fixes skip the cache"),
        lambda: store.edit("cache-keys", tags=["infra"]),
        lambda: bob.confirm("cache-keys", "checked"),
        lambda: store.deprecate("cache-keys", "tenants moved"),
        lambda: bob.restore("cache-keys", "tenants are back"),
        lambda: path.write_text(
            path.read_text(encoding="utf-8").replace("typo fixes skip", "k8s review"),
            encoding="utf-8",
        ),
        lambda: (store.root / "decision" / "cache-keys.md").rename(
            store.root / "fact" / "cache-keys.md"
        ),
        lambda: path.unlink(),
    ]
    words = ["review", "skip", "typo", "cache", "tenant", "k8s", "infra", "keys", "fixes"]
    for change in [lambda: None, *changes]:  # first the memories as added
        change()
        for word in words:
            for lines in _explained(store, word):
                assert lines[0].startswith("bm25 ") and lines[1].startswith("matched "), lines


def test_explain_names_the_parts_that_hold_the_words_after_an_edit(store: Store) -> None:
    store.add("skip-review", type="fact", description="Skip review for typos", body="review")
    assert "matched review in name, description" in _explained(store, "review")[0]
    store.edit("skip-review", description="Skip checks for typos")
    assert "matched review in name" in _explained(store, "review")[0]
    store.edit("skip-review", body="skip checks")
    assert _explained(store, "review")[0][1] == "matched review in name"
    assert _explained(store, "typos")[0][1] == "matched typo in description"
    store.edit("skip-review", body="typos happen")
    assert _explained(store, "happen")[0][1] == "matched happen in body"


def test_budgets_cut_to_3_10_and_20_results(store: Store) -> None:
    for i in range(25):
        write_memory(store, f"note-{i:02}", f"Widget note number {i}")
    for budget, size in BUDGETS.items():
        assert len(find(store, "widget", budget=budget)) == size
    assert len(find(store, "widget")) == 10
    assert len(find(store, "widget", budget="tiny", limit=5)) == 5
    with pytest.raises(InvalidQuery, match="huge"):
        find(store, "widget", budget="huge")


def test_a_token_cap_keeps_only_whole_results_that_fit(store: Store) -> None:
    for i in range(10):
        write_memory(store, f"note-{i}", f"Widget note number {i} " + "padding " * i)
    full = find(store, "widget")
    costs = [estimate_hit_tokens(h) for h in full]
    cap = sum(costs[:3]) + costs[3] - 1
    kept = find(store, "widget", max_tokens=cap)
    assert kept == full[:3]
    assert sum(len(json.dumps(asdict(h), ensure_ascii=False)) for h in kept) / 4 <= cap
    index = find(store, "widget", max_tokens=cap, index_view=True)
    assert len(index) > 3  # index lines are cheaper


def test_graph_adds_linked_memories_with_decaying_scores(store: Store) -> None:
    write_memory(store, "hpa-off", "Disable HPA on checkout", links=("scaling-spec",))
    write_memory(store, "scaling-spec", "Specification for pods", body="see [[capacity-plan]]")
    write_memory(store, "capacity-plan", "Quarterly numbers")
    write_memory(store, "postmortem-7", "Outage review", body="caused by [[hpa-off]]")
    write_memory(store, "unrelated", "Something else")
    assert names(store, "checkout") == ["hpa-off"]
    hits = find(store, "checkout", graph=True, explain=True)
    by_name = {h.name: h for h in hits}
    assert set(by_name) == {"hpa-off", "scaling-spec", "postmortem-7", "capacity-plan"}
    top = by_name["hpa-off"].score
    assert by_name["scaling-spec"].score == pytest.approx(top * HOP_DECAY, rel=1e-3)
    assert by_name["postmortem-7"].via == "hpa-off"
    assert by_name["capacity-plan"].via == "scaling-spec"
    assert by_name["capacity-plan"].score == pytest.approx(top * HOP_DECAY**2, rel=1e-3)
    assert any("hop 2" in line for line in by_name["capacity-plan"].explain)


def test_graph_does_not_bring_back_deprecated_memories(store: Store) -> None:
    write_memory(store, "hpa-off", "Disable HPA on checkout", links=("old-spec",))
    write_memory(store, "old-spec", "Old spec", status="deprecated")
    assert names(store, "hpa", graph=True) == ["hpa-off"]


def test_get_many_returns_memories_in_the_order_asked(store: Store) -> None:
    for name in ("a", "b", "c"):
        write_memory(store, name, f"Memory {name}")
    assert [m.name for m in store.get_many(["c", "a", "b"])] == ["c", "a", "b"]
    with pytest.raises(MemoryNotFound, match="'x', 'y'"):
        store.get_many(["a", "x", "y"])


def test_a_bad_date_limit_type_or_status_is_refused_with_the_allowed_values(store: Store) -> None:
    with pytest.raises(InvalidQuery, match="yesterday"):
        find(store, "x", since="yesterday")
    with pytest.raises(InvalidQuery, match="at least 1"):
        find(store, "x", limit=0)
    with pytest.raises(InvalidQuery, match="unknown type 'decisions'; types are: decision, "):
        find(store, "x", type="decisions")
    with pytest.raises(InvalidQuery, match="unknown status 'done'"):
        find(store, "x", status="done")


def test_a_question_mark_is_not_a_wildcard(store: Store) -> None:
    write_memory(store, "pool", "We use pgbouncer for pooling")
    assert names(store, "what do we use for pooling?") == ["pool"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('description:"skip review"', "the description field keeps no word order"),
        ('typo name_text:"skip review"', "the name_text field keeps no word order"),
        ("NOT NOT review", "an operator (AND, OR, NOT, ANDNOT, ANDMAYBE) has no word"),
        ("review ANDNOT ANDMAYBE skip", "has no word to act on"),
        ("review " * 300, f"the limit is {QUERY_MAX}"),
    ],
)
def test_a_query_whoosh_cannot_run_is_refused_naming_the_problem(
    store: Store, text: str, problem: str
) -> None:
    write_memory(store, "skip-review", "We skip review for typo fixes")
    with pytest.raises(InvalidQuery, match=re.escape(problem)) as refused:
        find(store, text)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('"skip review"', ["skip-review"]),  # a phrase over the whole memory is fine
        ('"skip review', ["skip-review"]),  # an unbalanced quote: the words
        ("(skip OR review", ["skip-review"]),
        ("review)", ["skip-review"]),
        ("nosuchfield:review", ["skip-review"]),  # not a field: the words
        ("description:", []),
        ("skip [alpha TO", ["skip-review"]),
        ("updated:[2026-01 TO", []),
        ("*", ["skip-review"]),
        ("typ*", ["skip-review"]),
        ("review^", ["skip-review"]),
        ("don't skip", ["skip-review"]),
        ("NOT", []),
        ("", ["skip-review"]),
    ],
)
def test_a_malformed_query_whoosh_can_read_is_read_leniently(
    store: Store, text: str, found: list[str]
) -> None:
    write_memory(store, "skip-review", "We skip review for typo fixes")
    assert names(store, text, explain=True, graph=True) == found


def test_no_query_text_fails_other_than_with_an_invalid_query_message(store: Store) -> None:
    write_memory(store, "skip-review", "We skip review for typo fixes", tags=("k8s",))
    atoms = [*"()[]{}\"'*?^~:<>=+-!\\", "AND", "OR", "NOT", "ANDNOT", "ANDMAYBE", "TO"]
    atoms += ["review", "skip", "2026-01-01", "description:", "name:", "tags:", "updated:"]
    rng = random.Random(3)
    for _ in range(400):
        text = "".join(rng.choice(atoms) + rng.choice(["", " "]) for _ in range(rng.randint(1, 8)))
        try:
            find(store, text, explain=True, graph=True)
        except InvalidQuery as e:
            assert "\n" not in str(e) and text in str(e), text


def test_plain_words_rank_exactly_as_whoosh_ranks_them(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Plain words are scored from cached postings rather than by Whoosh's matchers: the same
    # hits, scores and order, with every filter and option, over one segment or several
    # with deleted documents.
    rng = random.Random(1)
    vocab = [f"{a}{b}" for a in ("dep", "cach", "rol", "pag", "shard") for b in ("lo", "ra", "xi")]
    vocab += ["deploy", "cache", "review", "typo", "k8s"]
    for i in range(150):
        write_memory(
            store,
            f"m-{i:03}",
            " ".join(rng.choices(vocab, k=rng.randint(3, 8))),
            body=" ".join(rng.choices(vocab, k=rng.randint(0, 40))),
            type=rng.choice(["fact", "warning", "decision"]),
            status=rng.choice(["draft", "confirmed", "deprecated"]),
            tags=tuple(rng.sample(vocab, 2)),
            links=tuple({f"m-{rng.randrange(150):03}" for _ in range(i % 3)} - {f"m-{i:03}"}),
        )
    queries = [" ".join(rng.choices(vocab, k=rng.randint(1, 5))) for _ in range(40)]
    options: list[dict[str, object]] = [
        {},
        {"include_deprecated": True, "limit": 3},
        {"type": "warning", "budget": "deep"},
        {"graph": True},
    ]

    def results(**extra: object) -> list[list[tuple[str, float]]]:
        return [
            [(h.name, h.score) for h in find(store, q, **o, **extra)]
            for q in queries
            for o in options
        ]

    def whoosh_results() -> list[list[tuple[str, float]]]:
        with monkeypatch.context() as m:
            m.setattr("memstore.search.rank._or_terms", lambda q: None)
            return results()

    fast = results()
    assert fast == whoosh_results()
    assert fast == results(explain=True)  # explaining changes no ranking
    assert sum(map(len, fast)) > 500
    git(store.root, "add", ".")
    git(store.root, "commit", "-qm", "generated memories")
    for i in range(0, 150, 7):
        # force: some are deprecated, and the index must follow their edits too
        store.edit(f"m-{i:03}", body=" ".join(rng.choices(vocab, k=20)), force=True)
        find(store, "deploy")  # indexes each edit on its own: a segment each, until merged
    for i in range(3, 150, 11):
        next(store.root.glob(f"*/m-{i:03}.md")).unlink()
    fast = results()
    assert fast == whoosh_results()
    assert fast == results(explain=True)


def test_explain_lists_the_matched_words_of_plain_and_whoosh_queries_alike(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_memory(store, "no-force", "Never force push to main", body="rewrites history")
    write_memory(store, "history", "History of main", tags=("push",))
    fast = [h.explain for h in find(store, "force push history", explain=True)]
    monkeypatch.setattr("memstore.search.rank._or_terms", lambda q: None)
    assert fast == [h.explain for h in find(store, "force push history", explain=True)]
    assert "matched forc histori push in name, description, body" in fast[0]


def test_the_store_has_no_search_or_index_member_and_does_not_import_search(
    store: Store,
) -> None:
    for name in ("search", "catch_up", "reindex", "index", "upkeep", "_upkeep", "watched"):
        assert not hasattr(store, name), name
    for module in ("storage/store", "storage/reading", "search/index"):
        source = Path(memstore.__file__).parent / f"{module}.py"
        tree = ast.parse(source.read_text(encoding="utf-8"))
        imported = {
            alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        }
        assert not {"memstore.search.upkeep"} & imported, module


def test_a_question_finds_what_its_content_words_find_and_nothing_by_its_question_words(
    store: Store,
) -> None:
    write_memory(store, "deploy-freeze", "Deploy freeze from 2026-12-20 to 2027-01-04")
    write_memory(store, "freeze-why", "Why we freeze deploys over the holidays")
    write_memory(store, "retro", "What did we do well? What did we do badly? How did it go?")
    question = "When did the deploy freeze start in 2026-12?"
    assert names(store, question) == names(store, "deploy freeze 2026-12")
    assert names(store, question)[0] == "deploy-freeze"
    assert "retro" not in names(store, question)


def test_feedback_reorders_what_the_words_found_but_never_adds_or_drops_a_first_match(
    store: Store,
) -> None:
    rng = random.Random(7)
    topics = [
        ["deploy", "rollout", "canary", "helm", "release"],
        ["cache", "redis", "ttl", "eviction", "tenant"],
        ["billing", "invoice", "stripe", "refund", "tax"],
    ]
    filler = ["team", "note", "week", "check", "plan", "fix", "run", "test"]
    for i in range(90):
        words = rng.choices(topics[i % 3], k=4) + rng.choices(filler, k=4)
        write_memory(store, f"m-{i:02}", " ".join(words[:5]), body=" ".join(words[3:] * 2))
    queries = [" ".join(rng.sample(t + filler, 2)) for t in topics for _ in range(8)]

    def ranked(feedback: bool) -> list[list[str]]:
        return [names(store, q, limit=10, feedback=feedback) for q in queries]

    with_feedback = ranked(True)
    words_only = ranked(False)
    assert [r[0] for r in with_feedback] == [r[0] for r in words_only]
    assert with_feedback != words_only  # feedback did reorder some results
    for q in queries:
        for hit in find(store, q, limit=10, explain=True, feedback=True):
            assert hit.explain[1].startswith("matched ") and " - in " not in hit.explain[1]
    top = find(store, queries[0], explain=True, feedback=True)[0]
    assert "+ feedback #1" in top.explain[-1]
    assert "+ feedback #1" in find(store, queries[0], explain=True)[0].explain[-1]  # the default
    assert "feedback" not in find(store, queries[0], explain=True, feedback=False)[0].explain[-1]


def test_the_same_search_gives_the_same_order_every_time(store: Store) -> None:
    for i in range(30):
        write_memory(store, f"same-{i:02}", "Widget cache note")  # all tied
    first = names(store, "widget cache", budget="deep")
    assert first == sorted(first)  # ties broken by name
    search_again = [names(Store(store.root), "widget cache", budget="deep") for _ in range(3)]
    assert search_again == [first] * 3
