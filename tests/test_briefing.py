"""The session briefing: what it lists, for whom, since when, and within its budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore import briefing, ledger_io, session
from memstore.briefing import Section, fit, tokens
from memstore.cli import main
from memstore.errors import InvalidMemory
from memstore.render_text import Bullet
from memstore.store import Store
from tests.conftest import as_agent, git


def test_fit_keeps_everything_that_fits() -> None:
    sections = [
        Section("A", 1, (Bullet("- a1"), Bullet("- a2"))),
        Section("B", 2, (Bullet("- b1"),)),
    ]
    result = fit("# head", sections, 1000)
    assert result.text == "# head\n\n## A\n- a1\n- a2\n\n## B\n- b1\n"
    assert result.cut == ()
    assert result.tokens == tokens(result.text)


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
    lines = changes.splitlines()
    assert [line.split(" ", 4)[-1] for line in lines] == [
        "outcome: `no-publish-on-bump` heeded",
        "added `correction/no-publish-on-bump`",
        "deprecated `decision/use-pnpm`",
        "added `decision/use-pnpm`",
        "confirmed `decision/use-zod`",
    ]
    assert "bob deprecated" in changes and "human added" in changes
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
    small = briefing.brief(store, mark=False, budget_tokens=300)
    assert small.tokens <= 300
    assert tokens(small.text) == small.tokens
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
    assert briefing.MIN_BUDGET == 100


def test_a_bad_outcome_line_or_session_marker_does_not_cost_the_briefing(store: Store) -> None:
    p0(store)
    store.outcomes_path.write_text("not json\n", encoding="utf-8")
    marker = store.cache / "sessions" / "alice.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text('{"head": 42}', encoding="utf-8")
    text = briefing.brief(store).text
    assert "no-publish-on-bump" in text
    assert "human added `correction/no-publish-on-bump`" in text  # fell back to 7 days
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
    assert "ledger.jsonl: migrate db@42 done" in after  # and it shows among the changes


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
        store, for_text="deploy " * 300, budget_tokens=briefing.MIN_BUDGET, mark=False
    )
    assert result.tokens <= briefing.MIN_BUDGET
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
    assert [line.split(" ", 4)[-1] for line in changes.splitlines()] == [
        "confirmed `decision/use-zod`",
        "added `decision/use-zod`",
    ]
