"""Whose ledger events count: only lines a commit by their actor added, read through every
parent of every merge (issue #11, items 10 and 11)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from click.testing import CliRunner

from memstore.errors import ClaimHeld, LedgerCorrupt
from memstore.faces.cli.main import main
from memstore.model import when
from memstore.storage.store import Store
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.ledger import lines as ledger
from memstore.workflow.ledger.claims import State
from tests.conftest import GIT_ENV, as_agent, git
from tests.mcp_client import call, data, text

URL = "https://ci.example.com/run/1"


def commit_as(store: Store, author: str, committer: str, message: str = "ledger by hand") -> None:
    """Commit the working ledger with git itself, naming `author` and `committer`."""
    env = {
        **os.environ,
        **GIT_ENV,
        "GIT_AUTHOR_NAME": author,
        "GIT_COMMITTER_NAME": committer,
    }
    for args in (["add", "ledger.jsonl"], ["commit", "-qm", message]):
        subprocess.run(["git", *args], cwd=store.root, env=env, check=True, capture_output=True)


def hand_append(store: Store, event: ledger.Event) -> None:
    with store.ledger_path.open("a", encoding="utf-8", newline="\n") as f:
        f.write(ledger.render(event) + "\n")


def released(store: Store, actor: str, action: str, target: str) -> ledger.Event:
    """A correctly hashed `released` line in `actor`'s name, linked to the current heads."""
    return ledger.new_event(
        actor=actor,
        action=action,
        target=target,
        status=ledger.RELEASED,
        at=when.utcnow(),
        prev=ledger_io.view(store).heads,
    )


# -- item 10: a line counts only when a commit by its actor added it ---------------------------


@pytest.mark.parametrize(
    ("author", "committer"),
    [("mallory", "mallory"), ("alice", "mallory"), ("mallory", "alice")],
    ids=["by-someone-else", "committed-by-someone-else", "authored-by-someone-else"],
)
def test_a_release_committed_in_another_agents_name_is_ignored_and_verify_reports_it(
    store: Store, author: str, committer: str
) -> None:
    ledger_io.claim(store, "deploy", "api")  # alice holds the claim
    hand_append(store, released(store, "alice", "deploy", "api"))
    commit_as(store, author, committer)
    bob = as_agent(store, "bob")

    answer = ledger_io.check(bob, "deploy", "api")
    assert (answer.state, answer.actor) == (State.IN_PROGRESS, "alice")
    assert any(
        "line 2 (released deploy api by alice" in w and "is not by alice" in w
        for w in answer.warnings
    ), answer.warnings
    with pytest.raises(ClaimHeld, match="claimed by alice"):
        ledger_io.claim(bob, "deploy", "api")

    result = ledger_io.verify(store)
    assert not result.ok
    assert len(result.problems) == 1
    assert "line 2 (released deploy api by alice" in result.problems[0]
    assert "mallory" in result.problems[0] and "is not by alice" in result.problems[0]


@pytest.mark.anyio
async def test_an_agent_over_mcp_sees_the_claim_held_and_the_forged_release_named(
    store: Store,
) -> None:
    ledger_io.claim(store, "deploy", "api")
    hand_append(store, released(store, "alice", "deploy", "api"))
    commit_as(store, "mallory", "mallory")
    bob = as_agent(store, "bob")

    answer = await call(bob, "ledger_check", action="deploy", target="api")
    assert data(answer)["check"]["state"] == "IN_PROGRESS"
    assert "is ignored" in text(answer) and "is not by alice" in text(answer)
    refused = await call(bob, "ledger_claim", action="deploy", target="api")
    assert refused.is_error and "claimed by alice" in text(refused)


def test_a_line_committed_by_its_actor_by_hand_counts_whatever_the_spelling(store: Store) -> None:
    ledger_io.claim(store, "deploy", "api")
    hand_append(store, released(store, "alice", "deploy", "api"))
    commit_as(store, "Alice", "ALICE")  # same identity: NFKC, case-folded

    assert ledger_io.check(as_agent(store, "bob"), "deploy", "api").state == State.NOT_EXECUTED
    assert ledger_io.claim(as_agent(store, "bob"), "deploy", "api").actor == "bob"
    assert ledger_io.verify(store).ok


def test_a_done_line_forged_for_someone_else_does_not_make_an_action_executed(
    store: Store,
) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    forged = ledger.new_event(
        actor="alice",
        action="publish",
        target="post-1",
        status=ledger.DONE,
        at=when.utcnow(),
        prev=ledger_io.view(store).heads,
        evidence=URL,
    )
    hand_append(store, forged)
    commit_as(store, "mallory", "mallory")
    answer = ledger_io.check(store, "publish", "post-1")
    assert answer.state == State.NOT_EXECUTED
    assert any("is ignored" in w for w in answer.warnings)
    assert [e.target for e in ledger_io.events(store)] == ["post-0"]
    # the line is sound and committed: memstore appends after it, and it still does not count
    ledger_io.record(store, "publish", "post-2", evidence=URL)
    assert ledger_io.check(store, "publish", "post-1").state == State.NOT_EXECUTED


def test_a_line_only_in_git_history_and_by_someone_else_is_not_reported_lost(
    store: Store,
) -> None:
    ledger_io.claim(store, "deploy", "api")
    kept = store.ledger_path.read_text(encoding="utf-8")
    hand_append(store, released(store, "alice", "deploy", "api"))
    commit_as(store, "mallory", "mallory")
    store.ledger_path.write_text(kept, encoding="utf-8")
    commit_as(store, "mallory", "mallory", "take it out again")

    answer = ledger_io.check(store, "deploy", "api")
    assert answer.state == State.IN_PROGRESS
    assert not any("lacks" in w for w in answer.warnings)
    assert any("only in git" in w and "is not by alice" in w for w in answer.warnings)
    ledger_io.record(store, "deploy", "api", evidence=URL)  # appends are not blocked by it
    result = ledger_io.verify(store)
    assert [p for p in result.problems if "lacks" in p] == []
    assert len(result.problems) == 1 and "is not by alice" in result.problems[0]


# -- item 11: every parent of every merge ------------------------------------------------------


def side_branch_with_a_done_action(store: Store) -> None:
    """On branch `side`, bob claims and does `deploy api`; back on main, alice records more."""
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    git(store.root, "checkout", "-q", "-b", "side")
    bob = as_agent(store, "bob")
    ledger_io.claim(bob, "deploy", "api")
    ledger_io.record(bob, "deploy", "api", evidence=URL)
    git(store.root, "checkout", "-q", "main")
    ledger_io.record(store, "publish", "post-1", evidence=URL)


def test_an_action_done_on_a_branch_merged_with_strategy_ours_stays_executed(
    store: Store,
) -> None:
    side_branch_with_a_done_action(store)
    assert ledger_io.check(store, "deploy", "api").state == State.NOT_EXECUTED  # not merged yet
    git(store.root, "merge", "-q", "-s", "ours", "--no-edit", "side")
    assert "deploy" not in store.ledger_path.read_text(encoding="utf-8")

    for cold in (False, True):  # the cache read on from main's commit, then rebuilt
        if cold:
            (store.cache / ledger_io.HISTORY_CACHE).unlink()
        answer = ledger_io.check(as_agent(store, "carol"), "deploy", "api")
        assert (answer.state, answer.actor, answer.evidence) == (State.EXECUTED, "bob", URL)
        assert "2 of them missing at HEAD too" in answer.warnings[0]

    result = ledger_io.verify(store)
    assert not result.ok
    assert len(result.problems) == 2
    assert all("a merge dropped it" in p for p in result.problems)
    assert any("claimed deploy api by bob" in p for p in result.problems)
    with pytest.raises(LedgerCorrupt, match="missing at HEAD too"):
        ledger_io.claim(as_agent(store, "carol"), "deploy", "api")


def test_lines_a_merge_dropped_can_be_added_back_by_hand_and_then_verify(store: Store) -> None:
    side_branch_with_a_done_action(store)
    git(store.root, "merge", "-q", "-s", "ours", "--no-edit", "side")
    side = git(store.root, "show", "side:ledger.jsonl").splitlines()
    here = store.ledger_path.read_text(encoding="utf-8").splitlines()
    missing = [line for line in side if line not in here]
    assert len(missing) == 2
    with store.ledger_path.open("a", encoding="utf-8", newline="\n") as f:
        f.write("".join(line + "\n" for line in missing))
    git(store.root, "commit", "-qam", "ledger: add back the lines the merge dropped")

    result = ledger_io.verify(store)  # committed by a human, but bob's commits added them first
    assert result.ok, result.problems
    assert result.events == 4
    assert ledger_io.check(store, "deploy", "api").warnings == ()
    ledger_io.record(store, "publish", "post-2", evidence=URL)
    assert ledger_io.verify(store).ok


def test_a_line_a_merge_commit_adds_itself_counts_only_when_the_merge_is_by_its_actor(
    store: Store,
) -> None:
    side_branch_with_a_done_action(store)
    git(store.root, "merge", "-q", "--no-commit", "side")
    heads = ledger_io.view(store).heads
    for actor, target in (("human", "by-the-merger"), ("alice", "in-alices-name")):
        hand_append(
            store,
            ledger.new_event(
                actor=actor,
                action="publish",
                target=target,
                status=ledger.DONE,
                at=when.utcnow(),
                prev=heads,
                evidence=URL,
            ),
        )
    git(store.root, "commit", "-qam", "merge side")  # author and committer: human

    assert ledger_io.check(store, "publish", "by-the-merger").state == State.EXECUTED
    answer = ledger_io.check(store, "publish", "in-alices-name")
    assert answer.state == State.NOT_EXECUTED
    assert any("is not by alice" in w for w in answer.warnings)
    assert ledger_io.check(store, "deploy", "api").state == State.EXECUTED
    problems = ledger_io.verify(store).problems
    assert len(problems) == 1 and "in-alices-name" in problems[0]


def test_the_cli_exits_4_for_an_action_a_dropping_merge_hid_and_verify_exits_1(
    store: Store,
) -> None:
    side_branch_with_a_done_action(store)
    git(store.root, "merge", "-q", "-s", "ours", "--no-edit", "side")
    runner = CliRunner()
    args = ["--store", str(store.root), "--agent", "carol", "ledger"]
    checked = runner.invoke(main, [*args, "check", "deploy", "api"])
    assert checked.exit_code == 4 and checked.stdout.startswith("EXECUTED deploy api — by bob")
    assert "missing at HEAD too" in checked.stderr
    verified = runner.invoke(main, [*args, "verify"])
    assert verified.exit_code == 1
    assert verified.stdout.count("a merge dropped it") == 2
    assert "verification failed: 2 problems" in verified.stderr


# -- the cache ---------------------------------------------------------------------------------


def test_the_cache_keeps_each_lines_commit_and_its_names(store: Store) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    ledger_io.check(store, "publish", "post-0")
    cache = json.loads((store.cache / ledger_io.HISTORY_CACHE).read_text(encoding="utf-8"))
    sha = git(store.root, "rev-parse", "HEAD").strip()
    assert cache["head"] == sha
    assert cache["commits"] == {sha: ["alice", "alice", ""]}
    assert [c for _, c in cache["lines"]] == [sha]


def test_a_cache_in_the_old_layout_or_broken_is_rebuilt(store: Store) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    path = store.cache / ledger_io.HISTORY_CACHE
    head = git(store.root, "rev-parse", "HEAD").strip()
    line = store.ledger_path.read_text(encoding="utf-8").rstrip("\n")
    for cached in (
        json.dumps({"head": head, "lines": [line]}),  # the version 1 layout
        json.dumps({"version": 2, "head": head, "commits": {}, "lines": [[line, "x"]]}),
        json.dumps({"version": 3, "head": head, "commits": {}, "lines": [[line, "x"]]}),
        json.dumps({"version": 3, "head": head, "commits": {"x": ["a"]}, "lines": []}),
        json.dumps({"version": 3, "signed": True, "head": head, "commits": {}, "lines": []}),
    ):
        path.write_text(cached, encoding="utf-8")
        assert ledger_io.check(store, "publish", "post-0").state == State.EXECUTED
        assert ledger_io.verify(store).ok
