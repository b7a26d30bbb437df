"""The handoff ledger: format, hash links, check/claim/record, concurrency, restores, merges."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstore.errors import (
    AlreadyExecuted,
    ClaimHeld,
    InvalidLedgerEntry,
    LedgerCorrupt,
    MemstoreError,
)
from memstore.git import gitlog
from memstore.model import when
from memstore.storage.store import Store
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.ledger import claims, trust
from memstore.workflow.ledger import lines as ledger
from memstore.workflow.ledger.claims import State
from tests.conftest import GIT_ENV, REPO, as_agent, git

T0 = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)
URL = "https://blog.example.com/post-1"


def lines_of(store: Store) -> list[str]:
    return store.ledger_path.read_text(encoding="utf-8").splitlines()


def commit_count(store: Store) -> int:
    return int(git(store.root, "rev-list", "--count", "HEAD").strip())


def by_actors(*events: ledger.Event) -> tuple[gitlog.Added, ...]:
    """Each event's line as a commit by its actor added it."""
    return tuple(
        gitlog.Added(ledger.render(e), gitlog.Commit(f"{i:040x}", e.actor, e.actor))
        for i, e in enumerate(events)
    )


def pure_view(*events: ledger.Event) -> trust.View:
    """The file holding `events`, each committed by its actor."""
    data = "".join(ledger.render(e) + "\n" for e in events).encode("utf-8")
    return trust.view(data, by_actors(*events))


def chain(count: int) -> list[ledger.Event]:
    events: list[ledger.Event] = []
    for i in range(count):
        prev = (events[-1].hash,) if events else ()
        events.append(
            ledger.new_event(
                actor="alice",
                action="publish",
                target=f"post-{i}",
                status=ledger.DONE,
                at=T0 + timedelta(seconds=i),
                prev=prev,
                evidence=f"https://example.com/{i}",
            )
        )
    return events


# -- the line format ---------------------------------------------------------------------------


def test_a_line_is_one_json_object_with_keys_in_a_fixed_order_and_round_trips() -> None:
    event = chain(1)[0]
    line = ledger.render(event)
    assert "\n" not in line
    assert list(json.loads(line)) == [
        "id",
        "at",
        "actor",
        "action",
        "target",
        "status",
        "evidence",
        "prev",
        "hash",
    ]
    assert ledger.parse_line(line) == event
    assert event.at == "2026-11-30T09:00:00.000Z"


def test_changing_any_value_of_a_line_breaks_its_hash() -> None:
    event = chain(1)[0]
    data = json.loads(ledger.render(event))
    for key, value in (("status", "failed"), ("target", "post-9"), ("actor", "mallory")):
        edited = json.dumps({**data, key: value})
        with pytest.raises(LedgerCorrupt, match="does not match its hash"):
            ledger.parse_line(edited)


def test_a_line_with_an_unknown_field_or_no_hash_is_corrupt() -> None:
    data = json.loads(ledger.render(chain(1)[0]))
    with pytest.raises(LedgerCorrupt, match="unknown field"):
        ledger.parse_line(json.dumps({**data, "extra": 1}))
    del data["hash"]
    with pytest.raises(LedgerCorrupt, match="hash"):
        ledger.parse_line(json.dumps(data))
    with pytest.raises(LedgerCorrupt, match="not JSON"):
        ledger.parse_line('{"id": ')


@pytest.mark.parametrize(
    "value",
    ["", "   ", "two\nlines", "tab\there", "x" * 201, None, 42],
    ids=["empty", "blank", "multi-line", "control", "too-long", "none", "number"],
)
def test_an_action_or_target_must_be_one_short_line(value: object) -> None:
    with pytest.raises(InvalidLedgerEntry, match="action"):
        ledger.check_text(value, "action")


def test_an_action_is_stripped_and_may_hold_unicode_up_to_200_characters() -> None:
    assert ledger.check_text("  publish  ", "action") == "publish"
    assert ledger.check_text("é" * 200, "target") == "é" * 200


@pytest.mark.parametrize(
    "url",
    ["", "example.com/post", "ftp://example.com/x", "https://", "http:///path", "https://a b"],
)
def test_evidence_must_be_an_http_url_with_a_host(url: str) -> None:
    with pytest.raises(InvalidLedgerEntry, match="http"):
        ledger.check_evidence(url)


def test_evidence_with_a_password_in_it_is_refused() -> None:
    with pytest.raises(InvalidLedgerEntry, match="password"):
        ledger.check_evidence("https://deploy:hunter2@ci.example.com/run/1")


def test_durations_and_since_values_parse() -> None:
    assert [ledger.parse_duration(t) for t in ("90", "90s", "30m", "2h", "1d")] == [
        90,
        90,
        1800,
        7200,
        86400,
    ]
    for text in ("soon", "1w", "-5m"):
        with pytest.raises(InvalidLedgerEntry, match=r"like 90s, 30m, 2h or 1d \(a bare number"):
            ledger.parse_duration(text)
    assert ledger.parse_since("2h", T0) == T0 - timedelta(hours=2)
    assert ledger.parse_since("2026-11-30", T0) == datetime(2026, 11, 30, tzinfo=UTC)
    with pytest.raises(InvalidLedgerEntry, match="since"):
        ledger.parse_since("yesterday", T0)


# -- hash links without git --------------------------------------------------------------------


def test_an_intact_chain_verifies_with_one_head() -> None:
    result = trust.verify(pure_view(*chain(4)), "union")
    assert result.ok and result.heads == 1 and result.events == 4


def test_verify_detects_an_edited_line() -> None:
    events = chain(3)
    data = json.loads(ledger.render(events[1]))
    data["evidence"] = "https://example.com/forged"
    text = "\n".join([ledger.render(events[0]), json.dumps(data), ledger.render(events[2])])
    result = trust.verify(trust.view(text.encode() + b"\n", ()), "union")
    assert not result.ok
    assert any("line 2" in p and "hash" in p for p in result.problems)


def test_verify_detects_a_line_deleted_in_the_middle() -> None:
    events = chain(3)
    result = trust.verify(pure_view(events[0], events[2]), "union")
    assert not result.ok
    assert any("line 2" in p and "deleted" in p for p in result.problems)


def test_an_edited_line_resealed_with_a_new_hash_breaks_the_next_lines_link() -> None:
    events = chain(3)
    forged = ledger.new_event(
        actor="alice",
        action="publish",
        target="post-1",
        status=ledger.FAILED,
        at=T0,
        prev=events[1].prev,
        note="never happened",
    )
    result = trust.verify(pure_view(events[0], forged, events[2]), "union")
    assert any("line 3" in p and "deleted" in p for p in result.problems)


def test_a_claim_expires_after_its_ttl_on_a_moved_clock() -> None:
    empty = pure_view()
    claim = claims.claim(empty, "alice", "deploy", "api", ttl=600, now=T0)
    held = pure_view(claim)
    assert claims.check(held, "deploy", "api", T0 + timedelta(seconds=599)).state == (
        State.IN_PROGRESS
    )
    with pytest.raises(ClaimHeld, match="alice"):
        claims.claim(held, "bob", "deploy", "api", ttl=600, now=T0 + timedelta(seconds=599))
    later = T0 + timedelta(seconds=600)
    answer = claims.check(held, "deploy", "api", later)
    assert answer.state == State.NOT_EXECUTED
    assert any("expired" in w for w in answer.warnings)
    assert claims.claim(held, "bob", "deploy", "api", ttl=600, now=later).actor == "bob"


def test_a_torn_last_line_fails_check_closed_instead_of_answering_not_executed() -> None:
    events = chain(2)
    data = (ledger.render(events[0]) + "\n" + ledger.render(events[1])[:40]).encode()
    view = trust.view(data, by_actors(events[0]))
    with pytest.raises(LedgerCorrupt, match="damaged at line 2"):
        claims.check(view, "publish", "post-1", T0)
    # what the readable lines prove stays provable
    assert claims.check(view, "publish", "post-0", T0).state == State.EXECUTED
    with pytest.raises(LedgerCorrupt, match="nothing was written"):
        trust.require_intact(view)


# -- check, claim, release, record on a store --------------------------------------------------


def test_check_claim_record_walks_not_executed_in_progress_executed(store: Store) -> None:
    assert ledger_io.check(store, "publish", "post-1").state == State.NOT_EXECUTED
    claim = ledger_io.claim(store, "publish", "post-1", ttl=600)
    answer = ledger_io.check(store, "publish", "post-1")
    assert (answer.state, answer.actor, answer.until) == (State.IN_PROGRESS, "alice", claim.expires)
    done = ledger_io.record(store, "publish", "post-1", evidence=URL, note="went live")
    answer = ledger_io.check(as_agent(store, "bob"), "publish", "post-1")
    assert (answer.state, answer.actor, answer.at, answer.evidence) == (
        State.EXECUTED,
        "alice",
        done.at,
        URL,
    )
    assert done.prev == (claim.hash,)


def test_each_append_is_one_commit_authored_by_the_stores_identity(store: Store) -> None:
    before = commit_count(store)
    bob = as_agent(store, "bob")
    ledger_io.claim(bob, "publish", "post-1")
    ledger_io.record(bob, "publish", "post-1", evidence=URL)
    assert commit_count(store) == before + 2
    log = git(store.root, "log", "-2", "--format=%an|%s").splitlines()
    assert log == [f"bob|ledger: done publish post-1 — {URL}", log[1]]
    assert log[1].startswith("bob|ledger: claimed publish post-1 — until ")
    assert [json.loads(x)["actor"] for x in lines_of(store)] == ["bob", "bob"]
    assert git(store.root, "status", "--porcelain") == ""


def test_claim_is_refused_when_done_or_validly_claimed_by_someone_else(store: Store) -> None:
    ledger_io.claim(store, "deploy", "api", ttl=600, now=T0)
    bob = as_agent(store, "bob")
    with pytest.raises(ClaimHeld, match="claimed by alice"):
        ledger_io.claim(bob, "deploy", "api", now=T0 + timedelta(seconds=60))
    refreshed = ledger_io.claim(store, "deploy", "api", ttl=600, now=T0 + timedelta(seconds=60))
    check = ledger_io.check(bob, "deploy", "api", now=T0 + timedelta(seconds=601))
    assert (check.state, check.until) == (State.IN_PROGRESS, refreshed.expires)
    ledger_io.record(store, "deploy", "api", evidence=URL, now=T0 + timedelta(seconds=90))
    with pytest.raises(AlreadyExecuted, match="already executed by alice"):
        ledger_io.claim(bob, "deploy", "api", now=T0 + timedelta(days=30))


def test_an_expired_claim_can_be_taken_by_someone_else(store: Store) -> None:
    ledger_io.claim(store, "deploy", "api", ttl=60, now=T0)
    bob = as_agent(store, "bob")
    event = ledger_io.claim(bob, "deploy", "api", now=T0 + timedelta(seconds=61))
    assert ledger_io.check(bob, "deploy", "api", now=T0 + timedelta(seconds=62)).actor == "bob"
    assert event.actor == "bob"


def test_release_and_failure_end_your_claim_but_not_someone_elses(store: Store) -> None:
    ledger_io.claim(store, "deploy", "api", now=T0)
    bob = as_agent(store, "bob")
    with pytest.raises(InvalidLedgerEntry, match="bob holds no valid claim"):
        ledger_io.release(bob, "deploy", "api", now=T0)
    with pytest.raises(ClaimHeld, match="claimed by alice since .* until .*only they may record"):
        ledger_io.record(bob, "deploy", "api", note="tried anyway", failed=True, now=T0)
    assert ledger_io.check(store, "deploy", "api", now=T0).state == State.IN_PROGRESS
    ledger_io.release(store, "deploy", "api", now=T0 + timedelta(seconds=1))
    assert ledger_io.check(store, "deploy", "api", now=T0).state == State.NOT_EXECUTED
    ledger_io.claim(bob, "deploy", "api", now=T0 + timedelta(seconds=2))
    ledger_io.record(bob, "deploy", "api", note="503", failed=True, now=T0 + timedelta(seconds=3))
    answer = ledger_io.check(store, "deploy", "api", now=T0 + timedelta(seconds=4))
    assert answer.state == State.NOT_EXECUTED
    assert any("failed" in w and "503" in w for w in answer.warnings)


def test_recording_done_twice_is_kept_and_check_warns_it_may_have_run_twice(
    store: Store,
) -> None:
    ledger_io.record(store, "publish", "post-1", evidence=URL)
    ledger_io.record(as_agent(store, "bob"), "publish", "post-1", evidence=URL + "?again")
    answer = ledger_io.check(store, "publish", "post-1")
    assert answer.state == State.EXECUTED and answer.actor == "alice"
    assert any("2 times" in w for w in answer.warnings)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("", "post-1", URL, None, False), "action"),
        (("publish", "a\nb", URL, None, False), "target"),
        (("publish", "x" * 201, URL, None, False), "at most 200"),
        (("publish", "post-1", None, None, False), "evidence"),
        (("publish", "post-1", "ftp://example.com/x", None, False), "http"),
        (("publish", "post-1", "javascript:alert(1)", None, False), "http"),
        (("publish", "post-1", None, None, True), "needs a note"),
        (("publish", "post-1", None, "x" * 3000, True), "note"),
    ],
)
def test_bad_input_is_refused_and_leaves_file_and_history_unchanged(
    store: Store, args: tuple[str, str, str | None, str | None, bool], match: str
) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    before, commits = store.ledger_path.read_bytes(), commit_count(store)
    with pytest.raises(InvalidLedgerEntry, match=match):
        ledger_io.record(store, *args)
    for call in (
        lambda: ledger_io.claim(store, "publish", "post-1", ttl=0),
        lambda: ledger_io.claim(store, "", "post-1"),
        lambda: ledger_io.check(store, "publish", ""),
        lambda: ledger_io.events(store, since="whenever"),
    ):
        with pytest.raises(InvalidLedgerEntry):
            call()
    assert store.ledger_path.read_bytes() == before
    assert commit_count(store) == commits


def test_list_filters_by_action_target_actor_and_since(store: Store) -> None:
    ledger_io.record(store, "publish", "post-1", evidence=URL, now=T0)
    ledger_io.record(
        as_agent(store, "bob"), "deploy", "api", evidence=URL, now=T0 + timedelta(hours=1)
    )
    ledger_io.claim(store, "publish", "post-2", now=T0 + timedelta(hours=2))
    assert [e.target for e in ledger_io.events(store, action="publish")] == ["post-1", "post-2"]
    assert [e.target for e in ledger_io.events(store, actor="bob")] == ["api"]
    assert [e.target for e in ledger_io.events(store, target="post-2")] == ["post-2"]
    assert [e.target for e in ledger_io.events(store, since="2026-11-30T10:00:00Z")] == [
        "api",
        "post-2",
    ]


def test_init_marks_the_ledger_merge_union_and_verify_warns_without_it(store: Store) -> None:
    assert "ledger.jsonl text eol=lf merge=union" in (store.root / ".gitattributes").read_text(
        encoding="utf-8"
    )
    ledger_io.record(store, "publish", "post-1", evidence=URL)
    assert ledger_io.verify(store).warnings == ()
    (store.root / ".gitattributes").write_text("*.md text eol=lf\n", encoding="utf-8")
    assert any("merge=union" in w for w in ledger_io.verify(store).warnings)


def test_a_line_nobody_committed_does_not_count_and_no_append_commits_it(store: Store) -> None:
    ledger_io.claim(store, "deploy", "api")
    forged = ledger.new_event(
        actor="alice",
        action="deploy",
        target="api",
        status=ledger.RELEASED,
        at=when.utcnow(),
        prev=ledger_io.view(store).heads,
    )
    with store.ledger_path.open("a", encoding="utf-8", newline="\n") as f:
        f.write(ledger.render(forged) + "\n")  # written by hand: no journal, no commit
    before, commits = store.ledger_path.read_bytes(), commit_count(store)

    bob = as_agent(store, "bob")
    answer = ledger_io.check(bob, "deploy", "api")
    assert (answer.state, answer.actor) == (State.IN_PROGRESS, "alice")
    assert any("line 2 (released deploy api by alice" in w for w in answer.warnings)
    assert any("not committed to git" in w for w in answer.warnings)
    for append in (
        lambda: ledger_io.claim(bob, "deploy", "api"),
        lambda: ledger_io.record(bob, "publish", "post-1", evidence=URL),
    ):
        with pytest.raises(LedgerCorrupt, match=r"line 2 \(released deploy api by alice\) is not"):
            append()
    assert (store.ledger_path.read_bytes(), commit_count(store)) == (before, commits)
    result = ledger_io.verify(store)  # what the appends refuse on, verify reports
    assert not result.ok and result.events == 1
    assert any(
        "line 2 (released deploy api by alice) is not committed" in p for p in result.problems
    )


# -- restores and tampering, with git ----------------------------------------------------------


def test_check_after_a_restore_to_an_older_version_still_answers_executed_and_warns(
    store: Store,
) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    ledger_io.record(store, "publish", "post-1", evidence=URL)
    ledger_io.claim(store, "publish", "post-2")
    older = git(store.root, "show", "HEAD~2:ledger.jsonl")
    store.ledger_path.write_text(older, encoding="utf-8")  # the backup from before post-1
    commits = commit_count(store)

    answer = ledger_io.check(as_agent(store, "bob"), "publish", "post-1")
    assert (answer.state, answer.actor, answer.evidence) == (State.EXECUTED, "alice", URL)
    assert answer.warnings[0].startswith("WARNING: the working ledger.jsonl lacks 2 line(s)")
    assert ledger_io.check(as_agent(store, "bob"), "publish", "post-2").state == State.IN_PROGRESS
    with pytest.raises(LedgerCorrupt, match="lacks 2 line"):
        ledger_io.claim(as_agent(store, "bob"), "publish", "post-3")
    assert store.ledger_path.read_text(encoding="utf-8") == older
    assert commit_count(store) == commits
    problems = ledger_io.verify(store).problems
    assert len(problems) == 2 and all("working ledger lacks it" in p for p in problems)


def test_a_restore_that_was_committed_by_hand_is_still_caught_from_git_history(
    store: Store,
) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    ledger_io.record(store, "publish", "post-1", evidence=URL)
    store.ledger_path.write_text(lines_of(store)[0] + "\n", encoding="utf-8")
    git(store.root, "commit", "-qam", "restore ledger from backup")
    answer = ledger_io.check(store, "publish", "post-1")
    assert answer.state == State.EXECUTED
    assert "lacks 1 line(s)" in answer.warnings[0]
    assert not ledger_io.verify(store).ok


def test_an_edited_line_is_reported_and_check_stays_truthful_or_fails_closed(
    store: Store,
) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    ledger_io.record(store, "publish", "post-1", evidence=URL)
    ledger_io.record(store, "publish", "post-2", evidence=URL)
    lines = lines_of(store)
    lines[1] = lines[1].replace('"done"', '"failed"')
    store.ledger_path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    problems = ledger_io.verify(store).problems
    assert any(p.startswith("line 2: its content does not match its hash") for p in problems)
    answer = ledger_io.check(store, "publish", "post-1")  # git still has the original line
    assert answer.state == State.EXECUTED
    with pytest.raises(LedgerCorrupt, match="cannot tell whether 'publish post-9'"):
        ledger_io.check(store, "publish", "post-9")


def test_a_line_deleted_in_the_middle_is_reported_by_verify(store: Store) -> None:
    for i in range(3):
        ledger_io.record(store, "publish", f"post-{i}", evidence=URL)
    lines = lines_of(store)
    store.ledger_path.write_text(lines[0] + "\n" + lines[2] + "\n", encoding="utf-8")
    result = ledger_io.verify(store)
    assert not result.ok
    assert any("post-1" in p and "lacks it" in p for p in result.problems)
    assert ledger_io.check(store, "publish", "post-1").state == State.EXECUTED


def test_garbage_never_committed_makes_check_fail_closed(store: Store) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    with store.ledger_path.open("a", encoding="utf-8") as f:
        f.write('{"id": "half a line\n')
    with pytest.raises(LedgerCorrupt, match="line 2"):
        ledger_io.check(store, "publish", "post-1")
    with pytest.raises(LedgerCorrupt):
        ledger_io.record(store, "publish", "post-1", evidence=URL)


# -- union merges ------------------------------------------------------------------------------


def test_a_union_merge_of_two_branches_verifies_and_the_next_append_joins_both(
    store: Store,
) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    git(store.root, "checkout", "-q", "-b", "other")
    bob = as_agent(store, "bob")
    ledger_io.record(bob, "publish", "post-b1", evidence=URL)
    ledger_io.claim(bob, "deploy", "api")
    git(store.root, "checkout", "-q", "main")
    ledger_io.record(store, "publish", "post-a1", evidence=URL)
    ledger_io.record(store, "publish", "post-a2", evidence=URL)

    git(store.root, "merge", "-q", "--no-edit", "other")
    assert "<<<<" not in store.ledger_path.read_text(encoding="utf-8")
    assert len(lines_of(store)) == 5
    result = ledger_io.verify(store)
    assert result.ok, result.problems
    assert result.heads == 2
    assert ledger_io.check(store, "publish", "post-b1").state == State.EXECUTED
    assert ledger_io.check(store, "deploy", "api").actor == "bob"

    joined = ledger_io.record(store, "publish", "post-3", evidence=URL)
    assert len(joined.prev) == 2
    result = ledger_io.verify(store)
    assert result.ok and result.heads == 1


def test_deleting_a_branch_tip_after_a_merge_and_join_is_detected(store: Store) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    git(store.root, "checkout", "-q", "-b", "other")
    ledger_io.record(as_agent(store, "bob"), "publish", "post-b1", evidence=URL)
    git(store.root, "checkout", "-q", "main")
    ledger_io.record(store, "publish", "post-a1", evidence=URL)
    git(store.root, "merge", "-q", "--no-edit", "other")
    ledger_io.record(store, "publish", "post-3", evidence=URL)
    kept = [x for x in lines_of(store) if "post-b1" not in x]
    data = ("\n".join(kept) + "\n").encode()
    result = trust.verify(trust.view(data, ()), "union")  # the file alone, without git
    assert any("deleted" in p for p in result.problems)


# -- several processes at once -----------------------------------------------------------------

WRITER = """
import sys
from pathlib import Path
from memstore.workflow.ledger import book as ledger_io
from memstore.storage.store import Store
root, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
store = Store(root, agent=name, lock_timeout=120)
for i in range(count):
    ledger_io.record(store, "publish", f"{name}-{i}", evidence=f"https://example.com/{name}/{i}")
"""


def _env() -> dict[str, str]:
    return {**os.environ, **GIT_ENV, "MEMSTORE_LOCK_TIMEOUT": "120"}


def _wait_all(procs: list[subprocess.Popen[str]], deadline: float) -> list[tuple[int, str]]:
    """Each process's exit code and stderr, waiting at most until `deadline`."""
    results: list[tuple[int, str]] = []
    for proc in procs:
        _, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        results.append((proc.returncode, err))
    return results


def test_eight_concurrent_writers_lose_and_tear_no_line(store: Store) -> None:
    writers, each = 8, 4
    start = commit_count(store)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store.root), f"w{k}", str(each)],
            env=_env(),
            text=True,
            stderr=subprocess.PIPE,
        )
        for k in range(writers)
    ]
    results = _wait_all(procs, time.monotonic() + 100)
    assert [code for code, _ in results] == [0] * writers, results
    lines = lines_of(store)
    assert len(lines) == writers * each
    targets = {ledger.parse_line(x).target for x in lines}
    assert targets == {f"w{k}-{i}" for k in range(writers) for i in range(each)}
    assert commit_count(store) == start + writers * each
    result = ledger_io.verify(store)
    assert result.ok and result.heads == 1 and result.committed == writers * each
    assert git(store.root, "status", "--porcelain") == ""


def test_eight_processes_racing_for_one_claim_leave_exactly_one_winner(store: Store) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "memstore", "--store", str(store.root), "--agent", f"agent{k}"]
            + ["ledger", "claim", "deploy", "api", "--ttl", "10m"],
            env=_env(),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for k in range(8)
    ]
    results = _wait_all(procs, time.monotonic() + 100)
    codes = [code for code, _ in results]
    assert sorted(codes) == [0] + [3] * 7, results
    assert all("claimed by agent" in err for code, err in results if code == 3)
    winner = f"agent{codes.index(0)}"
    claims = [ledger.parse_line(x) for x in lines_of(store)]
    assert [c.actor for c in claims] == [winner]
    assert ledger_io.check(store, "deploy", "api").actor == winner


def test_errors_are_memstore_errors() -> None:
    for cls in (InvalidLedgerEntry, LedgerCorrupt, ClaimHeld, AlreadyExecuted):
        assert issubclass(cls, MemstoreError)


# -- the history cache -------------------------------------------------------------------------


def test_the_history_cache_reads_only_new_commits_and_follows_head(store: Store) -> None:
    cache = store.cache / "ledger-history.json"
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    ledger_io.check(store, "publish", "post-0")
    first = json.loads(cache.read_text(encoding="utf-8"))
    assert first["head"] == git(store.root, "rev-parse", "HEAD").strip()
    assert len(first["lines"]) == 1
    ledger_io.record(store, "publish", "post-1", evidence=URL)
    ledger_io.check(store, "publish", "post-1")
    assert len(json.loads(cache.read_text(encoding="utf-8"))["lines"]) == 2


def test_a_reset_of_history_rebuilds_the_cache_instead_of_reporting_lost_lines(
    store: Store,
) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    ledger_io.record(store, "publish", "post-1", evidence=URL)
    assert ledger_io.verify(store).ok
    git(store.root, "reset", "-q", "--hard", "HEAD~1")
    assert ledger_io.verify(store).ok
    assert ledger_io.check(store, "publish", "post-1").state == State.NOT_EXECUTED


def test_a_broken_or_forged_cache_is_ignored_and_rebuilt(store: Store) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    cache = store.cache / "ledger-history.json"
    for text in ("not json", '{"head": "--output=/tmp/x", "lines": []}', "[]"):
        cache.write_text(text, encoding="utf-8")
        assert ledger_io.check(store, "publish", "post-0").state == State.EXECUTED
        assert ledger_io.verify(store).ok


def test_a_store_in_a_subfolder_of_a_project_reads_its_ledger_history_by_path(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "README.md").write_text("project\n", encoding="utf-8")
    git(project, "add", "README.md")
    git(project, "commit", "-qm", "start")
    store = Store.init(project / "memory", agent="alice")
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    ledger_io.record(store, "publish", "post-1", evidence=URL)
    store.ledger_path.write_text(lines_of(store)[0] + "\n", encoding="utf-8")
    answer = ledger_io.check(store, "publish", "post-1")
    assert answer.state == State.EXECUTED
    assert "memory/ledger.jsonl lacks 1 line(s)" in answer.warnings[0]
    assert (
        git(project, "check-attr", "merge", "--", "memory/ledger.jsonl").strip().endswith("union")
    )


def test_appending_after_a_last_line_without_newline_keeps_lines_apart(store: Store) -> None:
    ledger_io.record(store, "publish", "post-0", evidence=URL)
    text = store.ledger_path.read_text(encoding="utf-8")
    store.ledger_path.write_text(text.rstrip("\n"), encoding="utf-8")  # an editor's save
    ledger_io.record(store, "publish", "post-1", evidence=URL)
    assert len(lines_of(store)) == 2
    assert ledger_io.verify(store).ok


def test_the_example_lines_in_the_docs_verify() -> None:
    text = (REPO / "docs" / "ledger.md").read_text(encoding="utf-8")
    example = text.split("```json\n", 1)[1].split("```", 1)[0]
    events = [ledger.parse_line(line) for line in example.splitlines()]
    result = trust.verify(trust.view(example.encode("utf-8"), by_actors(*events)), "union")
    assert result.ok and result.events == 2
