"""The session briefing: what it lists, for whom, since when, and within its budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.errors import InvalidMemory
from memstore.faces.cli.main import main
from memstore.limits import BRIEFING_BUDGET_MIN, estimate_tokens
from memstore.model.render_text import Bullet
from memstore.storage.store import Store
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.session import agent as session
from memstore.workflow.session import briefing
from memstore.workflow.session.briefing import Section, fit
from tests.conftest import as_agent, git, name_humans


def test_fit_keeps_everything_that_fits() -> None:
    sections = [
        Section("A", 1, (Bullet("- a1"), Bullet("- a2"))),
        Section("B", 2, (Bullet("- b1"),)),
    ]
    result = fit("# head", sections, 1000)
    assert result.text == "# head\n\n## A\n- a1\n- a2\n\n## B\n- b1\n"
    assert result.cut == ()
    assert result.tokens == estimate_tokens(result.text)


def test_fit_cuts_the_least_important_section_first_and_says_so() -> None:
    first = Section("Rules", 1, tuple(Bullet(f"- rule {i} " + "x" * 40) for i in range(5)))
    last = Section("Changes", 9, tuple(Bullet(f"- change {i} " + "y" * 40) for i in range(30)))
    middle = Section("Drafts", 5, tuple(Bullet(f"- draft {i} " + "z" * 40) for i in range(5)))
    result = fit("# head", [first, middle, last], 150)
    assert result.tokens <= 150
    assert all(f"rule {i}" in result.text for i in range(5))
    assert all(f"draft {i}" in result.text for i in range(5))
    assert "## Changes" not in result.text or "change 29" not in result.text
    assert result.cut and "changes" in result.cut[-1]
    assert result.text.rstrip().endswith("._")
    assert "Cut to fit the budget" in result.text


def test_fit_shows_the_empty_message_of_an_empty_section() -> None:
    result = fit("# h", [Section("Rules", 1, (), empty="- none"), Section("X", 2, ())], 500)
    assert result.text == "# h\n\n## Rules\n- none\n"


def p0(store: Store) -> None:
    session.correct(
        as_agent(store, "human"),
        "no-publish-on-bump",
        description="Never npm publish from a version-bump commit; CI publishes tags",
        severity="p0",
        applies_when=["npm publish", "version bump"],
    )


def test_the_p0_correction_comes_first_in_the_briefing(store: Store) -> None:
    session.correct(store, "mind-the-changelog", description="Update CHANGELOG.md", severity="p3")
    session.correct(
        store,
        "deploy-window",
        description="No deploys on Friday",
        applies_when=["deploy"],
        type="warning",
    )
    p0(store)
    text = briefing.brief(store, for_text="bump version to 1.4.1 and npm publish").text
    rules = text.split("## Corrections and warnings that apply\n", 1)[1]
    first = rules.splitlines()[0]
    assert first.startswith("- **p0** correction `no-publish-on-bump` [draft, from an agent: ")
    assert "applies when: npm publish, version bump" in first
    assert "mind-the-changelog" in rules.split("##")[0]  # no applies_when: applies to all
    assert "deploy-window" in text.split("## Other corrections and warnings", 1)[1]


def test_drafts_you_own_are_not_listed_for_your_review(store: Store) -> None:
    store.add("mine", type="decision", description="My own draft decision")
    bob = as_agent(store, "bob")
    bob.add("bobs-idea", type="decision", description="Bob's draft decision")
    bob.add("bobs-fact", type="fact", description="Bob's confirmed fact")
    store.confirm("bobs-fact", "checked")
    text = briefing.brief(store).text
    review = text.split("## Drafts awaiting your review\n", 1)[1].split("\n\n")[0]
    assert "bobs-idea" in review
    assert "mine" not in review and "bobs-fact" not in review
    assert "`mine`" in briefing.brief(bob).text.split("## Drafts awaiting your review\n", 1)[1]


def test_confirmed_decisions_and_runbooks_about_the_task_are_listed(store: Store) -> None:
    bob = as_agent(store, "bob")
    bob.add("release-npm", type="runbook", description="Release the npm package via CI tags")
    bob.add("use-zod", type="decision", description="Validate API input with zod")
    bob.add("old-release", type="runbook", description="Release npm package by hand")
    store.confirm("release-npm", "used it")
    store.confirm("use-zod", "used it")
    text = briefing.brief(store, for_text="release npm package 1.4.1").text
    knowledge = text.split("## Decisions and runbooks about this task\n", 1)[1].split("\n\n")[0]
    assert "release-npm" in knowledge
    assert "use-zod" not in knowledge and "old-release" not in knowledge  # unrelated; draft


def test_changes_since_the_last_session_come_from_git(store: Store) -> None:
    bob = as_agent(store, "bob")
    bob.add("use-zod", type="decision", description="Validate API input with zod")
    briefing.brief(store)  # the first session marks where alice's next one starts
    store.confirm("use-zod", "checked")
    bob.add("use-pnpm", type="decision", description="Use pnpm")
    bob.deprecate("use-pnpm", "we stay on npm")
    p0(store)
    session.record_outcome(store, "no-publish-on-bump", "heeded")
    text = briefing.brief(store).text
    changes = text.split("## Changes since your last session\n", 1)[1].split("\n\n")[0]
    assert changes.splitlines() == [  # grouped by what happened, the latest first
        "- 1 outcome recorded by alice: `no-publish-on-bump heeded`",
        "- 2 memories added by human, bob: `correction/no-publish-on-bump`, `decision/use-pnpm`",
        "- 1 memory deprecated by bob: `decision/use-pnpm`",
        "- 1 memory confirmed by alice: `decision/use-zod`",
    ]
    again = briefing.brief(store).text
    assert "## Changes since your last session\n- nothing new" in again


def test_since_overrides_the_last_session(store: Store) -> None:
    store.add("a-fact", type="fact", description="One fact")
    first = git(store.root, "rev-parse", "HEAD").strip()
    store.add("b-fact", type="fact", description="Another fact")
    text = briefing.brief(store, since=first, mark=False).text
    assert "`fact/b-fact`" in text and "`fact/a-fact`" not in text
    with pytest.raises(InvalidMemory, match="--since"):
        briefing.brief(store, since="--all")


def test_the_briefing_respects_its_budget_and_says_what_it_cut(store: Store) -> None:
    p0(store)
    bob = as_agent(store, "bob")
    for i in range(40):
        bob.add(f"draft-{i}", type="fact", description=f"A draft fact number {i} " + "x" * 60)
    big = briefing.brief(store, mark=False, budget_tokens=100_000)
    assert big.cut == ()
    small = briefing.brief(store, mark=False, budget_tokens=150)
    assert small.tokens <= 150
    assert estimate_tokens(small.text) == small.tokens
    assert "no-publish-on-bump" in small.text  # the rules are cut last
    assert any("drafts awaiting your review" in c for c in small.cut)
    assert "Cut to fit the budget" in small.text


def test_cli_brief_prints_markdown_or_json(store: Store) -> None:
    p0(store)
    runner = CliRunner()
    result = runner.invoke(main, ["--agent", "bob", "brief", "--for", "npm publish", "--no-mark"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("# memstore briefing for bob\nTask: npm publish\n")
    as_json = runner.invoke(main, ["brief", "--json", "--budget-tokens", "100", "--no-mark"])
    assert as_json.exit_code == 0, as_json.output
    assert '"budget": 100' in as_json.output
    too_small = runner.invoke(main, ["brief", "--budget-tokens", "5"])
    assert too_small.exit_code == 2
    assert BRIEFING_BUDGET_MIN == 100


def test_a_bad_outcome_line_or_session_marker_does_not_cost_the_briefing(store: Store) -> None:
    p0(store)
    store.outcomes_path.write_text("not json\n", encoding="utf-8")
    marker = store.cache / "sessions" / "alice.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text('{"head": 42}', encoding="utf-8")
    text = briefing.brief(store).text
    assert "no-publish-on-bump" in text
    assert "1 memory added by human: `correction/no-publish-on-bump`" in text  # 7 days back
    assert '"head": "' in marker.read_text(encoding="utf-8")


def test_claims_in_progress_are_listed_until_recorded(store: Store) -> None:
    bob = as_agent(store, "bob")
    ledger_io.claim(bob, "migrate", "db@42")
    ledger_io.claim(store, "publish", "post-1")
    text = briefing.brief(store, mark=False).text
    claims = text.split("## Claims in progress\n", 1)[1].split("\n\n")[0].splitlines()
    assert len(claims) == 2
    assert claims[0].startswith("- `migrate db@42` claimed by bob until ")
    assert claims[1].startswith("- `publish post-1` claimed by you until ")
    ledger_io.record(bob, "migrate", "db@42", evidence="https://ci.example.com/run/42")
    after = briefing.brief(store, mark=False).text
    assert "migrate db@42` claimed" not in after
    # and it shows among the changes, grouped
    assert "- 3 records appended to ledger.jsonl by bob, alice: `migrate db@42 done`" in after


def test_knowledge_for_the_task_comes_from_search_even_in_japanese(store: Store) -> None:
    bob = as_agent(store, "bob")
    bob.add(
        "cdn-purge",
        type="runbook",
        description="CDNキャッシュの無効化漏れで古い価格が表示された障害の対応手順",
    )
    store.confirm("cdn-purge", "手順どおりに確認した")
    text = briefing.brief(store, for_text="キャッシュを消す", mark=False).text
    assert "runbook `cdn-purge`" in text.split("## Decisions and runbooks about this task\n")[1]


def test_even_the_smallest_budget_holds_with_a_long_task_and_a_busy_store(store: Store) -> None:
    p0(store)
    bob = as_agent(store, "bob")
    for i in range(12):
        bob.add(f"fact-{i}", type="fact", description=f"Fact {i} " + "y" * 80)
    ledger_io.claim(bob, "deploy", "api")
    result = briefing.brief(
        store, for_text="deploy " * 300, budget_tokens=BRIEFING_BUDGET_MIN, mark=False
    )
    assert result.tokens <= BRIEFING_BUDGET_MIN
    assert "…" in result.text.splitlines()[1]  # the task is cut short
    assert "_Cut to fit the budget: " in result.text


@pytest.mark.parametrize("folder", ["mémoire", "my memory"])
def test_changes_since_list_a_store_in_a_folder_with_any_name(tmp_path: Path, folder: str) -> None:
    git(tmp_path, "init", "-q", "repo")  # the store is a folder inside a bigger repository
    store = Store.init(tmp_path / "repo" / folder, agent="alice")
    briefing.brief(store)
    as_agent(store, "bob").add("use-zod", type="decision", description="Validate with zod")
    store.confirm("use-zod", "checked")
    text = briefing.brief(store).text
    changes = text.split("## Changes since your last session\n", 1)[1].split("\n\n")[0]
    assert changes.splitlines() == [
        "- 1 memory confirmed by alice: `decision/use-zod`",
        "- 1 memory added by bob: `decision/use-zod`",
    ]


# -- what matters within any budget (issue 12) ----------------------------------------------


def release_store(store: Store) -> Store:
    """A busy store: two p0 release rules, unrelated p2 warnings, many drafts and outcomes."""
    name_humans(store.root, "human")
    human = as_agent(store, "human")
    session.correct(
        human,
        "no-manual-publish",
        description="Never npm publish by hand; CI publishes tags",
        severity="p0",
        applies_when=["npm publish"],
    )
    session.correct(
        human,
        "changelog-before-tag",
        description="Write the changelog entry before tagging a release",
        severity="p0",
        applies_when=["tag release"],
    )
    bob = as_agent(store, "bob")
    for i in range(6):
        session.correct(
            bob,
            f"style-{i}",
            description=f"Prefer small functions in module {i} " + "w" * 40,
            severity="p2",
            type="warning",
        )
    for i in range(9):
        bob.add(f"draft-{i}", type="fact", description=f"A draft fact number {i} " + "x" * 40)
    bob.add("release-checklist", type="fact", description="The release checklist lives in docs")
    for _ in range(12):
        session.record_outcome(human, "no-manual-publish", "heeded")
    return store


def test_a_150_token_briefing_for_a_release_keeps_the_release_p0_rules(store: Store) -> None:
    release_store(store)
    result = briefing.brief(store, for_text="cut release 1.4.1", budget_tokens=150, mark=False)
    assert result.tokens <= 150, result.text
    rules = result.text.split("## Corrections and warnings that apply\n", 1)[1]
    assert rules.startswith("- **p0** correction `changelog-before-tag`")
    assert "`no-manual-publish`" in rules


def test_p0_and_p1_rules_that_apply_stay_whatever_the_budget(store: Store) -> None:
    name_humans(store.root, "human")
    for i in range(4):
        session.correct(
            as_agent(store, "human"),
            f"deploy-rule-{i}",
            description=f"Deploy rule {i}: " + "z" * 150,
            severity="p1" if i else "p0",
            applies_when=["deploy"],
        )
    result = briefing.brief(
        store, for_text="roll out to prod", budget_tokens=BRIEFING_BUDGET_MIN, mark=False
    )
    assert all(f"`deploy-rule-{i}`" in result.text for i in range(4))
    assert result.tokens > BRIEFING_BUDGET_MIN  # over budget rather than silent about a p0
    assert "z" * 150 not in result.text  # in their short form


def test_sections_come_in_order_changes_grouped_and_drafts_capped(store: Store) -> None:
    release_store(store)
    ledger_io.claim(store, "publish", "pkg@1.4.1")
    text = briefing.brief(store, for_text="cut release 1.4.1", mark=False).text
    titles = [line for line in text.splitlines() if line.startswith("## ")]
    assert titles == [
        "## Corrections and warnings that apply",
        "## Claims in progress",
        "## Changes since your last session",
        "## Drafts awaiting your review",
    ]
    changes = text.split("## Changes since your last session\n", 1)[1].split("\n\n")[0]
    assert "- 12 outcomes recorded by human: `no-manual-publish heeded` ×12" in changes
    assert len(changes.splitlines()) <= 3
    drafts = text.split("## Drafts awaiting your review\n", 1)[1].split("\n\n")[0]
    lines = drafts.splitlines()
    shown = "\n".join(lines)  # only the drafts about the task, each saying why
    assert all(f"`{n}`" in shown for n in ("release-checklist", "no-manual-publish"))
    assert "(bears on your task" in shown
    assert "`draft-0`" not in shown
    offered = len(lines) - 1
    assert lines[-1] == f"- and {6 + 10 + 2 - offered} more awaiting review: `memstore review`"


def test_cli_brief_keeps_the_release_rule_in_150_tokens(store: Store) -> None:
    release_store(store)
    done = CliRunner().invoke(
        main, ["brief", "--for", "cut release 1.4.1", "--budget-tokens", "150", "--no-mark"]
    )
    assert done.exit_code == 0, done.output
    assert "**p0** correction `changelog-before-tag`" in done.output
    assert estimate_tokens(done.output.rstrip("\n") + "\n") <= 150
    full = CliRunner().invoke(main, ["brief", "--for", "cut release 1.4.1", "--no-mark"])
    titles = [line for line in full.output.splitlines() if line.startswith("## ")]
    assert titles == [
        "## Corrections and warnings that apply",
        "## Changes since your last session",
        "## Drafts awaiting review",  # no identity given: everyone's drafts
    ]
    assert "- 12 outcomes recorded by human: `no-manual-publish heeded` ×12\n" in full.output
    assert "more awaiting review: `memstore review`\n" in full.output


def test_past_twenty_p0_rules_the_rest_are_cut_and_counted(store: Store) -> None:
    human = as_agent(store, "human")
    name_humans(store.root, "human")
    for i in range(briefing.PINNED_MAX + 2):
        session.correct(
            human, f"rule-{i:02d}", description=f"Rule {i}", severity="p0", applies_when=["deploy"]
        )
    result = briefing.brief(store, for_text="deploy", budget_tokens=BRIEFING_BUDGET_MIN, mark=False)
    shown = [i for i in range(briefing.PINNED_MAX + 2) if f"`rule-{i:02d}`" in result.text]
    assert len(shown) == briefing.PINNED_MAX
    assert "2 of 22 corrections and warnings that apply" in result.cut
