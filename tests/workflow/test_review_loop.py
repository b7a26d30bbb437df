"""The review loop: merging duplicates, batch confirmation, deferrals and requests, the ranked
inbox and what the briefing asks, in-process on real stores (the faces have their own tests)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from click.testing import CliRunner

from memstore.errors import InvalidTransition, MemoryNotFound, RuleBinds, SelfApproval
from memstore.faces.cli.main import main
from memstore.model import when
from memstore.storage import uses
from memstore.storage.store import Store
from memstore.workflow.care import lint, merge, reviews, steward, tidy
from memstore.workflow.session import agent as session
from memstore.workflow.session import briefing
from tests.conftest import as_agent, git


def commits(store: Store) -> int:
    return int(git(store.root, "rev-list", "--count", "HEAD"))


def duplicates(store: Store) -> None:
    store.add(
        "use-zod",
        type="decision",
        description="Validate API input with zod schemas",
        body="Zod everywhere.",
        tags=["api"],
    )
    bob = as_agent(store, "bob")
    bob.add(
        "zod-for-input",
        type="decision",
        description="Use zod for API input validation",
        body="Hand-written checks drifted from the types.",
        tags=["zod"],
        extra={"files": ["src/api/*.py"]},
    )
    bob.add("why-zod", type="fact", description="Why zod", links=["zod-for-input"])
    bob.add("see-zod", type="fact", description="See it", body="Read [[zod-for-input]].")
    as_agent(store, "carol").confirm("see-zod", "read it")


def test_merge_folds_deprecates_and_redirects_in_one_commit(store: Store) -> None:
    duplicates(store)
    as_agent(store, "carol").confirm("use-zod", "checked")
    as_agent(store, "carol").confirm("why-zod", "checked")
    before = commits(store)

    done = merge.merge(as_agent(store, "dave"), "use-zod", ["zod-for-input"], body=True)

    assert commits(store) == before + 1
    assert git(store.root, "log", "-1", "--format=%an").strip() == "dave"
    kept = store.get("use-zod")
    assert kept.tags == ("api", "zod") and kept.extra["files"] == ["src/api/*.py"]
    assert "## From `zod-for-input`" in kept.body and "drifted" in kept.body
    assert kept.status == "draft" and done.back_to_draft  # its content changed
    assert kept.supersedes == ("zod-for-input",)
    gone = store.get("zod-for-input")
    assert (gone.status, gone.superseded_by, gone.deprecated_by) == (
        "deprecated",
        "use-zod",
        "dave",
    )
    assert gone.deprecated_reason == "merged into use-zod"
    assert store.get("why-zod").links == ("use-zod",)
    assert store.read("why-zod").memory.status == "confirmed"  # links are not content
    assert lint.lint_store(store) == []  # the history backs every move the merge made
    # A confirmed body keeps its reference (and its confirmation), reported.
    assert done.left == ("see-zod",) and "[[zod-for-input]]" in store.get("see-zod").body
    assert store.read("see-zod").memory.status == "confirmed"
    assert set(done.redirected) == {"why-zod"}


def test_merge_of_tags_only_keeps_the_confirmation(store: Store) -> None:
    duplicates(store)
    as_agent(store, "carol").confirm("use-zod", "checked")
    bob = as_agent(store, "bob")
    bob.add("zod-again", type="decision", description="Zod again", tags=["validation"])
    done = merge.merge(bob, "use-zod", ["zod-again"], "same decision")
    assert not done.back_to_draft
    assert store.read("use-zod").memory.status == "confirmed"  # as the history backs it
    assert store.get("zod-again").deprecated_reason == "same decision"


@pytest.mark.parametrize(
    ("keep", "others", "error"),
    [
        ("use-zod", [], InvalidTransition),
        ("use-zod", ["use-zod"], InvalidTransition),
        ("use-zod", ["why-zod", "why-zod"], InvalidTransition),
        ("use-zod", ["no-such"], MemoryNotFound),
        ("no-such", ["why-zod"], MemoryNotFound),
        ("use-zod", ["gone"], InvalidTransition),
    ],
)
def test_a_bad_merge_changes_nothing(
    store: Store, keep: str, others: list[str], error: type[Exception]
) -> None:
    duplicates(store)
    store.add("gone", type="fact", description="Old")
    store.deprecate("gone", "old")
    before = commits(store)
    with pytest.raises(error):
        merge.merge(store, keep, others)
    assert commits(store) == before
    assert git(store.root, "status", "--porcelain") == ""


def test_merge_refuses_to_lift_a_rule_that_binds_the_agent(store: Store) -> None:
    duplicates(store)
    store.add(
        "no-friday-deploys",
        type="correction",
        description="Never deploy on Fridays",
        extra={"severity": "p0"},
    )
    as_agent(store, "bob").confirm("no-friday-deploys", "agreed")
    with pytest.raises(RuleBinds):
        merge.merge(as_agent(store, "carol"), "use-zod", ["no-friday-deploys"])
    assert store.get("no-friday-deploys").status == "confirmed"


def test_doctor_names_the_merge_to_run(store: Store) -> None:
    store.add("retry-429", type="fact", description="Retry HTTP 429 responses with backoff")
    as_agent(store, "bob").add(
        "backoff-429", type="fact", description="Retry HTTP 429 responses with a backoff"
    )
    as_agent(store, "carol").confirm("backoff-429", "checked")
    report = steward.doctor(store, lint=False)
    assert report.duplicates == [["backoff-429", "retry-429"]]
    assert report.merges == ["memstore merge backoff-429 retry-429"]  # the confirmed one kept
    out = CliRunner().invoke(main, ["--store", str(store.root), "doctor", "--no-lint"])
    assert "`memstore merge backoff-429 retry-429`" in out.output


def test_batch_confirm_refuses_your_own_and_confirms_the_rest_in_one_commit(
    store: Store,
) -> None:
    bob = as_agent(store, "bob")
    bob.add("b-one", type="fact", description="Bob's first")
    bob.add("b-two", type="fact", description="Bob's second")
    store.add("mine", type="fact", description="Alice's own")
    before = commits(store)

    done, refused = tidy.promote_many(store, ["b-one", "mine", "b-two", "nope"], "confirmed", "ok")

    assert [m.name for m in done] == ["b-one", "b-two"]
    assert [n for n, _ in refused] == ["mine", "nope"]
    assert "nobody confirms their own memory" in refused[0][1]
    assert commits(store) == before + 1
    assert {store.read(n).memory.status for n in ("b-one", "b-two")} == {"confirmed"}
    assert store.get("mine").status == "draft"
    none, all_refused = tidy.promote_many(store, ["mine"], "confirmed", "ok")
    assert none == [] and len(all_refused) == 1 and commits(store) == before + 1


def test_batch_confirm_through_the_cli(store: Store) -> None:
    bob = as_agent(store, "bob")
    bob.add("b-one", type="fact", description="Bob's first")
    store.add("mine", type="fact", description="Alice's own")
    args = ["--store", str(store.root), "--agent", "alice", "confirm", "b-one", "mine"]
    out = CliRunner().invoke(main, [*args, "-r", "read both", "--json"])
    assert out.exit_code == 0, out.output
    shown = json.loads(out.stdout)
    assert shown["confirmed"] == ["b-one"] and shown["refused"][0]["name"] == "mine"
    again = CliRunner().invoke(main, [*args[:-1], "mine", "-r", "x"])
    assert again.exit_code == 1 and "nobody confirms their own memory" in again.output


def test_defer_hides_a_draft_from_the_deferrer_until_its_time(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    bob = as_agent(store, "bob")
    bob.add("later-one", type="fact", description="Something to review later")
    carol = as_agent(store, "carol")
    before = commits(store)
    reviews.defer(store, ["later-one"], "3d")
    assert commits(store) == before + 1 and (store.root / "reviews.jsonl").is_file()
    assert "later-one" not in [m.name for m in tidy.review_queue(store)]
    assert "later-one" in [m.name for m in tidy.review_queue(carol)]  # only the deferrer's
    text = briefing.brief(store, mark=False).text
    assert "## Drafts awaiting your review" not in text  # (the only draft is deferred)
    start = when.utcnow()
    monkeypatch.setattr(when, "utcnow", lambda: start + timedelta(days=4))
    assert "later-one" in [m.name for m in tidy.review_queue(store)]
    monkeypatch.setattr(when, "utcnow", lambda: start)
    reviews.defer(store, ["later-one"], "1w")
    assert "later-one" not in [m.name for m in tidy.review_queue(store)]
    reviews.defer(store, ["later-one"], "now")  # the latest deferral counts
    assert "later-one" in [m.name for m in tidy.review_queue(store)]


@pytest.mark.parametrize("span", ["0d", "-3d", "soon", "400d", "2000-01-01"])
def test_a_bad_deferral_is_refused_and_changes_nothing(store: Store, span: str) -> None:
    as_agent(store, "bob").add("x-one", type="fact", description="X")
    before = commits(store)
    out = CliRunner().invoke(
        main, ["--store", str(store.root), "--agent", "alice", "review", "x-one", "--defer", span]
    )
    assert out.exit_code != 0 and "Traceback" not in out.output
    assert commits(store) == before


def test_a_request_puts_the_draft_first_in_that_reviewer_s_inbox_and_briefing(
    store: Store,
) -> None:
    bob = as_agent(store, "bob")
    bob.add("rule-a", type="warning", description="Mind the cache", extra={"severity": "p2"})
    bob.add("plain-fact", type="fact", description="A plain fact about billing")
    with pytest.raises(SelfApproval):
        reviews.ask(store, ["plain-fact"], "Bob")  # its author
    reviews.ask(store, ["plain-fact"], "carol")
    carol = as_agent(store, "carol")
    first = tidy.inbox(carol)[0]
    assert first.memory.name == "plain-fact" and first.why[0] == "asked by alice"
    assert [w.memory.name for w in tidy.inbox(store)][0] == "rule-a"  # rules first otherwise
    text = briefing.brief(carol, for_text="deploy the frontend", mark=False).text
    review = text.split("## Drafts awaiting your review\n", 1)[1]
    assert "`plain-fact` by bob (alice asked you)" in review
    assert "- 1 note for review recorded by alice: `ask plain-fact`" in text


def test_the_inbox_ranks_rules_then_recalled_then_oldest(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    bob = as_agent(store, "bob")
    start = when.utcnow()
    for days, name in ((3, "new-fact"), (1, "old-fact"), (2, "used-fact")):
        monkeypatch.setattr(when, "utcnow", lambda d=days: start + timedelta(days=d))
        bob.add(name, type="fact", description=f"The {name}")
    bob.add("a-rule", type="correction", description="Never skip tests", extra={"severity": "p2"})
    uses.note(store, uses.RECALL, ["used-fact"])
    uses.note(as_agent(store, "carol"), uses.RECALL, ["used-fact"])
    ranked = tidy.inbox(store)
    assert [w.memory.name for w in ranked] == ["a-rule", "used-fact", "old-fact", "new-fact"]
    assert "recalled 2 times" in ranked[1].why


def test_the_briefing_asks_whoever_relied_on_a_draft_to_judge_it(store: Store) -> None:
    bob = as_agent(store, "bob")
    bob.add("no-force-push", type="correction", description="Never force-push main")
    bob.add("cache-ttl", type="fact", description="The cache TTL is 5 minutes")
    session.record_outcome(store, "no-force-push", "heeded", "pushed a branch instead")
    uses.note(store, uses.GET, ["cache-ttl"])
    assert "cache-ttl` by bob (you" not in briefing.brief(store, mark=False).text  # not recalled
    uses.note(store, uses.RECALL, ["cache-ttl"])
    text = briefing.brief(store, for_text="write the billing report", mark=False).text
    relied = text.split("## Drafts you relied on: confirm or deprecate them\n", 1)[1]
    relied = relied.split("\n\n")[0]
    assert "`no-force-push` by bob (you recorded heeding it; confirm or deprecate it" in relied
    assert "`cache-ttl` by bob (you recalled it and read it whole;" in relied
    # Not its author: bob is asked nothing about his own drafts.
    session.record_outcome(bob, "no-force-push", "heeded")
    assert "Drafts you relied on" not in briefing.brief(bob, mark=False).text
    # Once judged, it is asked no more.
    store.confirm("no-force-push", "it held")
    assert "no-force-push` by bob (you" not in briefing.brief(store, mark=False).text
