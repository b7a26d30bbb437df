"""Outcomes and heed rates: the Wilson interval against known values, records on disk and in git."""

from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner

from memstore.errors import InvalidMemory, MemoryNotFound, SecretFound
from memstore.faces.cli.main import main
from memstore.storage.store import Store
from memstore.workflow.care import lint, stats
from memstore.workflow.care.stats import HeedRate, Outcome, OutcomeRecord, heed_rates, wilson
from memstore.workflow.session import agent as session
from memstore.workflow.session import briefing
from tests.conftest import as_agent, git
from tests.storage.test_recovery import kill_inside_commit


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        (8, 10, 0.4902, 0.9433),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 2, 0.0945, 0.9055),
        (50, 100, 0.4038, 0.5962),
        (0, 0, 0.0, 1.0),
    ],
)
def test_wilson_interval_matches_known_values(
    successes: int, n: int, low: float, high: float
) -> None:
    got = wilson(successes, n)
    assert got == (pytest.approx(low, abs=5e-4), pytest.approx(high, abs=5e-4))


def test_wilson_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="successes"):
        wilson(3, 2)


def record(name: str, outcome: Outcome, status: str = "draft") -> OutcomeRecord:
    return OutcomeRecord("2026-11-30T09:00:00Z", "alice", name, outcome, status)


def test_heed_rates_count_per_rule_and_overall_and_flag_recurrence_after_confirmation() -> None:
    records = [record("a", Outcome.HEEDED)] * 8 + [record("a", Outcome.RECURRED)] * 2
    records += [record("b", Outcome.HEEDED), record("b", Outcome.RECURRED, "confirmed")]
    rates, overall = heed_rates(records)
    a, b = rates
    assert (a.name, a.heeded, a.recurred, a.n) == ("a", 8, 2, 10)
    assert a.low == pytest.approx(0.4902, abs=5e-4)
    assert a.high == pytest.approx(0.9433, abs=5e-4)
    assert not a.rewrite
    assert b.rewrite
    assert (overall.heeded, overall.recurred) == (9, 3)


def test_few_observations_show_only_the_interval() -> None:
    few = HeedRate("x", 2, 1, *wilson(2, 3))
    many = HeedRate("y", 8, 2, *wilson(8, 10))
    assert stats.describe(few) == "95% CI 21%–94%, n=3 (too few observations for a rate)"
    assert stats.describe(many) == "80% heeded (95% CI 49%–94%, n=10)"
    assert stats.describe(HeedRate("z", 0, 0, 0.0, 1.0)) == "no observations"


def test_outcome_lines_round_trip_in_a_fixed_key_order() -> None:
    rec = OutcomeRecord("2026-11-30T09:00:00Z", "bob", "x", Outcome.RECURRED, "confirmed", "PR 7")
    line = stats.to_line(rec)
    assert line == (
        '{"at":"2026-11-30T09:00:00Z","actor":"bob","name":"x","outcome":"recurred",'
        '"status":"confirmed","evidence":"PR 7"}\n'
    )
    assert stats.from_line(line, 1) == rec


@pytest.mark.parametrize(
    "line",
    [
        "not json",
        "[1]",
        '{"at":"x"}',
        '{"at":"x","actor":"a","name":"n","outcome":"maybe","status":"draft"}',
    ],
)
def test_a_bad_outcome_line_is_reported_with_its_number(line: str) -> None:
    with pytest.raises(InvalidMemory, match="line 3"):
        stats.from_line(line, 3)


def rule_store(store: Store) -> Store:
    session.correct(
        as_agent(store, "human"),
        "no-publish-on-bump",
        description="Never npm publish from a version-bump commit",
        severity="p0",
        applies_when=["npm publish", "version bump"],
    )
    return store


def test_outcomes_are_appended_and_committed_by_the_acting_identity(store: Store) -> None:
    rule_store(store)
    for _ in range(8):
        session.record_outcome(store, "no-publish-on-bump", "heeded", "left it to CI")
    bob = as_agent(store, "bob")
    session.record_outcome(bob, "no-publish-on-bump", "recurred")
    session.record_outcome(bob, "no-publish-on-bump", "recurred")
    lines = store.outcomes_path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 10
    assert json.loads(lines[-1])["actor"] == "bob"
    log = git(store.root, "log", "--format=%an %s", "-n2", "--", "outcomes.jsonl")
    assert log.splitlines() == [
        "bob outcome: no-publish-on-bump recurred",
        "bob outcome: no-publish-on-bump recurred",
    ]
    assert git(store.root, "status", "--porcelain") == ""
    rates, overall = session.heed_rates(store)
    assert rates[0].low == pytest.approx(0.4902, abs=5e-4)
    assert overall.n == 10


def test_a_recurrence_after_confirmation_flags_the_correction_for_rewriting(store: Store) -> None:
    rule_store(store)
    session.record_outcome(store, "no-publish-on-bump", "recurred")
    assert not session.heed_rates(store)[0][0].rewrite
    store.confirm("no-publish-on-bump", "it is what the release process says")
    session.record_outcome(store, "no-publish-on-bump", "recurred")
    assert session.heed_rates(store)[0][0].rewrite
    text = briefing.brief(store, mark=False).text
    assert "RECURRED after confirmation: rewrite it" in text


def test_outcomes_are_only_for_corrections_and_warnings(store: Store) -> None:
    store.add("use-zod", type="decision", description="Validate with zod")
    with pytest.raises(InvalidMemory, match="is a decision"):
        session.record_outcome(store, "use-zod", "heeded")
    with pytest.raises(MemoryNotFound):
        session.record_outcome(store, "nothing-here", "heeded")
    rule_store(store)
    with pytest.raises(InvalidMemory, match="unknown outcome 'ignored'"):
        session.record_outcome(store, "no-publish-on-bump", "ignored")


def test_cli_outcome_and_stats(store: Store) -> None:
    rule_store(store)
    runner = CliRunner()
    for outcome in ["heeded"] * 8 + ["recurred"] * 2:
        result = runner.invoke(main, ["--agent", "alice", "outcome", "no-publish-on-bump", outcome])
        assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["stats"])
    assert result.exit_code == 0, result.output
    assert "80% heeded (95% CI 49%–94%, n=10)" in result.output
    result = runner.invoke(main, ["stats", "--json"])
    data = json.loads(result.output)["heed_rates"]
    assert data[0]["name"] == "no-publish-on-bump"
    assert data[0]["low"] == pytest.approx(0.4902, abs=5e-4)
    assert data[-1]["name"] == "overall"
    result = runner.invoke(main, ["--agent", "alice", "outcome", "no-publish-on-bump", "maybe"])
    assert result.exit_code == 2


def test_an_outcome_after_a_hand_edit_without_final_newline_starts_its_own_line(
    store: Store,
) -> None:
    rule_store(store)
    session.record_outcome(store, "no-publish-on-bump", "heeded")
    path = store.outcomes_path
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n"), encoding="utf-8")
    session.record_outcome(store, "no-publish-on-bump", "recurred")
    assert [r.outcome for r in session.outcomes(store)] == [Outcome.HEEDED, Outcome.RECURRED]


def test_lint_reports_a_bad_outcome_line_with_its_number(store: Store) -> None:
    rule_store(store)
    session.record_outcome(store, "no-publish-on-bump", "heeded")
    with store.outcomes_path.open("a", encoding="utf-8") as f:
        f.write('{"name": "x"}\n')
    problems = [str(p) for p in lint.lint_store(store)]
    assert any(p.startswith("outcomes.jsonl:2: outcomes.jsonl line 2 lacks") for p in problems)


def test_concurrent_outcomes_are_neither_torn_nor_lost(store: Store) -> None:
    rule_store(store)

    def record(agent: str) -> None:
        mine = as_agent(store, agent)
        for _ in range(3):
            session.record_outcome(mine, "no-publish-on-bump", "heeded", f"by {agent}")

    threads = [threading.Thread(target=record, args=(f"agent-{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = session.outcomes(store)
    assert len(records) == 12
    assert {r.actor for r in records} == {f"agent-{i}" for i in range(4)}
    commits = git(store.root, "log", "--format=%an", "--", "outcomes.jsonl").split()
    assert len(commits) == 12
    assert git(store.root, "status", "--porcelain") == ""


OUTCOME = """
import sys
from pathlib import Path
from memstore.workflow.session import agent as session
from memstore.storage.store import Store
store = Store(Path(sys.argv[1]), agent="coder", lock_timeout=600)
session.record_outcome(store, "no-publish-on-bump", "recurred", "published by hand")
"""


def test_an_outcome_killed_before_its_commit_is_cut_off_by_the_next_writer(store: Store) -> None:
    rule_store(store)
    session.record_outcome(store, "no-publish-on-bump", "heeded")
    kill_inside_commit(store, OUTCOME)
    assert "recurred" in store.outcomes_path.read_text(encoding="utf-8")
    store.add("later", type="fact", description="the next write")
    log = git(store.root, "log", "--format=%an %s", "-n2").splitlines()
    assert log[1] == "alice outcome: no-publish-on-bump heeded"
    assert [r.outcome for r in session.outcomes(store)] == [Outcome.HEEDED]
    assert git(store.root, "status", "--porcelain") == ""


def test_a_credential_in_outcome_evidence_is_refused(store: Store) -> None:
    rule_store(store)
    with pytest.raises(SecretFound):
        session.record_outcome(store, "no-publish-on-bump", "heeded", "token=ghp_" + "a" * 36)
    assert session.outcomes(store) == []
