"""The briefing, `list` and `stats` at scale: the one-pass fit cuts what the old one did, and
the catalog they read follows the files as the search index does."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.errors import StoreLocked
from memstore.faces.cli.main import main
from memstore.limits import BRIEFING_BUDGET_MIN, estimate_tokens
from memstore.model.render_text import Bullet, Fence
from memstore.storage.store import Store
from memstore.workflow.care import catalog, steward
from memstore.workflow.rules import rules as workflow
from memstore.workflow.session import agent as session
from memstore.workflow.session import briefing
from memstore.workflow.session.briefing import Section, fit
from tests.conftest import as_agent, git


def _fit_by_dropping(
    header: str, sections: list[Section], budget: int, fence: Fence | None = None
) -> briefing.Briefing:
    """The fit as it was: drop one bullet, render everything again, until it fits."""
    budget = max(budget, BRIEFING_BUDGET_MIN)
    kept = {s.title: len(s.lines) for s in sections}
    render_ = briefing._render  # pyright: ignore[reportPrivateUsage]
    notes = briefing._cut_notes  # pyright: ignore[reportPrivateUsage]
    text = render_(header, sections, kept, "", fence)
    order = sorted(sections, key=lambda s: s.priority, reverse=True)
    while estimate_tokens(text) > budget:
        victim = next((s for s in order if kept[s.title] > s.pinned), None)
        if victim is None:
            if any(s.compact and s.lines[: s.pinned] != s.compact for s in sections):
                sections = [briefing._compacted(s) for s in sections]  # pyright: ignore[reportPrivateUsage]
                text = render_(header, sections, kept, "; ".join(notes(sections, kept)), fence)
                continue
            short = briefing._short_note(sections, kept)  # pyright: ignore[reportPrivateUsage]
            text = render_(header, sections, kept, short, fence)
            break
        kept[victim.title] -= 1
        text = render_(header, sections, kept, "; ".join(notes(sections, kept)), fence)
    cut = tuple(notes(sections, kept))
    return briefing.Briefing(text=text, tokens=estimate_tokens(text), budget=budget, cut=cut)


def _sections(rng: random.Random) -> list[Section]:
    def bullets(n: int) -> tuple[Bullet, ...]:
        return tuple(
            Bullet(f"- item {i} " + "x" * rng.randint(0, 60), "data " * rng.randint(0, 20))
            for i in range(n)
        )

    sections: list[Section] = []
    for i in range(rng.randint(1, 7)):
        lines = bullets(rng.choice([0, 0, 1, 3, 10, 40, 200]))
        pinned = rng.randint(0, len(lines)) if rng.random() < 0.3 else 0
        compact = tuple(Bullet(b.own[:12], b.data[:5]) for b in lines[:pinned])
        sections.append(
            Section(
                f"Section {i}",
                rng.randint(1, 6),
                lines,
                empty="- none" if rng.random() < 0.4 else None,
                pinned=pinned,
                compact=compact if rng.random() < 0.5 else (),
            )
        )
    return sections


@pytest.mark.parametrize("seed", range(300))
def test_the_one_pass_fit_keeps_what_dropping_one_by_one_kept(seed: int) -> None:
    rng = random.Random(seed)
    sections = _sections(rng)
    header = "# memstore briefing for alice" + "\nTask: t" * rng.randint(0, 30)
    budget = rng.choice([1, 100, 150, 300, 800, 1500, 5000, 100_000])
    fence = Fence("cafe0123") if rng.random() < 0.5 else None
    assert fit(header, sections, budget, fence) == _fit_by_dropping(header, sections, budget, fence)


def _rule(store: Store, name: str, description: str, *patterns: str, severity: str = "p2") -> None:
    session.correct(
        store, name, description=description, severity=severity, applies_when=list(patterns)
    )


def test_the_rules_looked_up_for_a_task_are_those_that_bear_on_it(store: Store) -> None:
    """Each way a rule can bear on a task (a pattern, a synonym, a glob, two words of its
    description, no pattern at all), and rules that do not: the catalog's lookup and
    `related` over every rule agree."""
    _rule(store, "npm-publish", "Bump the version first", "npm publish")
    _rule(store, "ship-it", "Ask before a release", "cut release")
    _rule(store, "force-push", "Never force-push main", "git push --force*")
    _rule(store, "sql-files", "Review migration files", "migrations/*.sql")
    _rule(store, "always-on", "Write tests for every change")
    _rule(store, "billing-words", "The billing ledger reconciles nightly", "invoices")
    _rule(store, "unrelated", "Feed the office plants", "water plants")
    _rule(store, "typo", "Kubernetes clusters need care", "kubectl drain")
    tasks = [
        "ship 1.4.1 to the npm registry",
        "publsh the package",
        "git push --force origin main",
        "edit db/migrations/001_init.sql",
        "reconcile the billing ledger",
        "water the garden",
        "nothing at all",
        "drain the kubectl node",
        "",
    ]
    rules = session.rules(store)
    with catalog.opened(store) as found:
        paths = {e.name: e.path for e in found.entries()}
        for task in tasks:
            maybe = found.rule_candidates(task)
            looked_up = {
                r.name for r in rules if paths[r.name] in maybe and workflow.related(r, task)
            }
            assert looked_up == {r.name for r in rules if workflow.related(r, task)}, task


def test_list_stats_and_the_briefing_follow_hand_edits_and_deletions(store: Store) -> None:
    store.add("use-zod", type="decision", description="Validate input with zod")
    store.add("old-note", type="fact", description="An old note")
    store.add("pin-me", type="fact", description="Pinned one")
    runner = CliRunner()
    first = runner.invoke(main, ["--store", str(store.root), "list"])
    assert "Validate input with zod" in first.output
    # By hand, as an editor or a `git pull` would: an edit in place, a removal, a pin.
    path = store.root / "decision" / "use-zod.md"
    path.write_text(path.read_text().replace("with zod", "with pydantic"), encoding="utf-8")
    (store.root / "fact" / "old-note.md").unlink()
    pinned = store.root / "fact" / "pin-me.md"
    pinned.write_text(pinned.read_text().replace("\n---\n", "\npinned: true\n---\n", 1))
    listed = runner.invoke(main, ["--store", str(store.root), "list"]).output
    assert "Validate input with pydantic" in listed and "old-note" not in listed
    assert steward.figures(store).memories == 2
    text = briefing.brief(store, mark=False).text
    assert "`pin-me`" in text.split("## Pinned and important")[1].split("##")[0]


def test_a_forged_confirmation_lists_as_unverified(store: Store) -> None:
    store.add("forged", type="decision", description="Nobody reviewed this")
    path = store.root / "decision" / "forged.md"
    text = path.read_text().replace("status: draft", "status: confirmed")
    path.write_text(text, encoding="utf-8")
    git(store.root, "commit", "-qam", "confirm it myself")
    out = CliRunner().invoke(main, ["--store", str(store.root), "list", "--json"]).output
    assert '"status": "unverified"' in out
    listed = CliRunner().invoke(main, ["--store", str(store.root), "list"]).output
    assert "unverified" in listed and "confirmed" not in listed
    assert steward.figures(store).by_status == {"unverified": 1}


def test_list_prints_a_page_and_says_how_many_more(store: Store) -> None:
    for i in range(7):
        store.add(f"note-{i}", type="fact", description=f"note {i}")
    runner = CliRunner()
    page = runner.invoke(main, ["--store", str(store.root), "list", "--limit", "3"])
    assert page.exit_code == 0
    assert len(page.stdout.splitlines()) == 3
    assert "4 more" in page.stderr and "--all" in page.stderr
    every = runner.invoke(main, ["--store", str(store.root), "list", "--all"])
    assert len(every.stdout.splitlines()) == 7 and "more" not in every.stderr
    zero = runner.invoke(main, ["--store", str(store.root), "list", "--limit", "0"])
    assert zero.stdout == every.stdout
    bad = runner.invoke(main, ["--store", str(store.root), "list", "--limit", "-1"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_a_damaged_catalog_is_built_again(store: Store) -> None:
    store.add("kept", type="fact", description="Still listed")
    CliRunner().invoke(main, ["--store", str(store.root), "list"])
    (store.cache / catalog.FILE).write_bytes(b"not a database at all" * 100)
    out = CliRunner().invoke(main, ["--store", str(store.root), "list"])
    assert out.exit_code == 0 and "Still listed" in out.stdout


def test_only_drafts_bearing_on_the_task_are_offered_for_review(store: Store) -> None:
    bob = as_agent(store, "bob")
    bob.add("cache-redis", type="fact", description="Redis cache eviction policy")
    bob.add("newer-other", type="fact", description="Something else entirely")
    text = briefing.brief(store, for_text="tune the redis cache", mark=False).text
    review = text.split("## Drafts awaiting your review")[1]
    assert "`cache-redis` by bob (bears on your task)" in review
    assert "newer-other" not in review and "1 more awaiting review" in review
    without_task = briefing.brief(store, mark=False).text
    assert "newer-other" in without_task.split("## Drafts awaiting your review")[1]


def test_the_catalog_is_not_read_again_when_nothing_changed(store: Store, tmp_path: Path) -> None:
    store.add("one", type="fact", description="One")
    with catalog.opened(store) as found:
        assert [e.name for e in found.entries()] == ["one"]
    stamp = (store.cache / catalog.FILE).stat().st_mtime_ns
    with catalog.opened(store) as found:
        assert [e.name for e in found.entries()] == ["one"]
    assert (store.cache / catalog.FILE).stat().st_mtime_ns == stamp


def test_a_catalog_another_process_holds_is_busy_not_rebuilt(tmp_path: Path) -> None:
    Store.init(tmp_path / "s", agent="alice")
    store = Store(tmp_path / "s", agent="alice", lock_timeout=0.2)
    store.add("kept", type="fact", description="Still listed")
    with catalog.opened(store):
        pass
    path = store.cache / catalog.FILE
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        store.add("more", type="fact", description="A change to bring in")
        with pytest.raises(StoreLocked), catalog.opened(store):
            pass
    finally:
        other.execute("ROLLBACK")
        other.close()
    with catalog.opened(store) as found:
        assert sorted(e.name for e in found.entries()) == ["kept", "more"]
