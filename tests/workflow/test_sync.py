"""`memstore sync` and remote claims against a real git server on loopback (`git daemon`), with
clones acting as machines."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from memstore.errors import ClaimHeld, Conflict, RemoteUnreachable, SyncFailed
from memstore.faces.cli.main import main
from memstore.faces.server import build_server
from memstore.git import refs
from memstore.model.memory import parse
from memstore.storage import transaction
from memstore.storage.store import Store
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.ledger import sync
from tests.gitserver import GitServer, git, run_helper
from tests.mcp_client import call, text


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GitServer]:
    (tmp_path / "srv").mkdir()
    found = GitServer(tmp_path / "srv").start()
    yield found
    found.kill()


def first_clone(tmp_path: Path, server: GitServer, agent: str = "alice") -> Store:
    """A store made on one machine and pushed to the server."""
    store = Store.init(tmp_path / "a", agent=agent)
    git(store.root, "remote", "add", "origin", server.url)
    sync.sync(store)
    return store


def another_clone(tmp_path: Path, server: GitServer, name: str, agent: str) -> Store:
    return Store(server.clone(tmp_path / name), agent=agent)


@pytest.fixture
def pair(tmp_path: Path, server: GitServer) -> tuple[Store, Store]:
    a = first_clone(tmp_path, server)
    return a, another_clone(tmp_path, server, "b", "bob")


def names(store: Store) -> set[str]:
    return {m.name for m in store.memories()}


def clean(store: Store) -> bool:
    return git(store.root, "status", "--porcelain", "--untracked-files=no") == ""


def test_memories_made_on_two_clones_reach_both(pair: tuple[Store, Store]) -> None:
    a, b = pair
    a.add("from-a", type="decision", description="made on a")
    b.add("from-b", type="decision", description="made on b")
    assert sync.sync(a).pushed
    result = sync.sync(b)
    assert result.integrated == "merge" and result.pushed
    assert sync.sync(a).integrated == "fast-forward"
    assert names(a) == names(b) == {"from-a", "from-b"}
    assert refs.head(a.repo) == refs.head(b.repo)
    assert clean(a) and clean(b)


def test_a_sync_with_nothing_to_do_changes_nothing(pair: tuple[Store, Store]) -> None:
    a, _ = pair
    before = refs.head(a.repo)
    result = sync.sync(a)
    assert (result.integrated, result.pushed, result.received) == ("up to date", False, ())
    assert refs.head(a.repo) == before


def test_ledger_lines_from_both_clones_merge_as_a_union_that_verifies(
    pair: tuple[Store, Store],
) -> None:
    a, b = pair
    ledger_io.record(a, "publish", "post-1", evidence="https://example.com/1")
    ledger_io.record(b, "publish", "post-2", evidence="https://example.com/2")
    ledger_io.record(b, "deploy", "api", evidence="https://example.com/3")
    sync.sync(a)
    sync.sync(b)
    sync.sync(a)
    for store in (a, b):
        assert len(ledger_io.events(store)) == 3
        verified = ledger_io.verify(store)
        assert verified.ok, verified.problems
        assert "<<<<<<<" not in store.ledger_path.read_text(encoding="utf-8")
    # The next append joins both branches' heads, and still verifies everywhere after a sync.
    ledger_io.record(a, "publish", "post-3", evidence="https://example.com/4")
    sync.sync(a)
    sync.sync(b)
    assert ledger_io.verify(b).ok and len(ledger_io.events(b)) == 4


def test_a_memory_changed_on_both_clones_keeps_the_second_as_a_draft_naming_the_first(
    pair: tuple[Store, Store],
) -> None:
    a, b = pair
    a.add("cache-ttl", type="decision", description="cache TTL", body="TTL is 60s.\n")
    sync.sync(a)
    sync.sync(b)
    b.confirm("cache-ttl", reason="checked")
    sync.sync(b)
    sync.sync(a)
    a.edit("cache-ttl", body="TTL is 30s, since the outage.\n")
    b.edit("cache-ttl", body="TTL is 120s, for the cost.\n")
    sync.sync(a)
    first = refs.head(a.repo)
    assert first is not None
    result = sync.sync(b)
    assert result.conflicts == ("decision/cache-ttl.md",)
    text = (b.root / "decision" / "cache-ttl.md").read_text(encoding="utf-8")
    assert "<<<<<<<" not in text and ">>>>>>>" not in text
    kept = parse(text)
    assert kept.status == "draft" and kept.confirmed_by is None
    assert "TTL is 120s, for the cost." in kept.body
    assert "Sync conflict" in kept.body and first[:10] in kept.body
    # The other version's text is one `git show` away, as the note says.
    assert "TTL is 30s" in git(b.root, "show", f"{first[:10]}:decision/cache-ttl.md")
    assert b.get("cache-ttl").status == "draft"
    sync.sync(a)
    assert parse((a.root / "decision" / "cache-ttl.md").read_text(encoding="utf-8")) == kept
    assert clean(a) and clean(b)


def test_a_memory_removed_on_one_clone_and_changed_on_the_other_is_kept(
    pair: tuple[Store, Store],
) -> None:
    a, b = pair
    a.add("old-note", type="decision", description="an old note", body="v1\n")
    sync.sync(a)
    sync.sync(b)
    git(b.root, "rm", "-q", "decision/old-note.md")  # a person removes it by hand
    git(b.root, "commit", "-q", "-m", "remove an old note")
    a.edit("old-note", body="v2, still true\n")
    sync.sync(a)
    sync.sync(b)
    kept = b.get("old-note")
    assert "v2, still true" in kept.body and "Sync conflict" in kept.body


def test_sync_commits_only_store_files_and_leaves_staged_work_staged(
    pair: tuple[Store, Store],
) -> None:
    a, b = pair
    a.add("from-a", type="decision", description="made on a")
    sync.sync(a)
    b.add("from-b", type="decision", description="made on b")
    (b.root / "draft-notes.txt").write_text("my own work\n", encoding="utf-8")
    git(b.root, "add", "draft-notes.txt")
    sync.sync(b)
    assert "A  draft-notes.txt" in git(b.root, "status", "--porcelain")
    assert "draft-notes.txt" not in git(b.root, "log", "--name-only", "--format=")
    assert "draft-notes.txt" not in git(a.root, "ls-tree", "-r", "--name-only", "origin/main")


def test_sync_refuses_to_push_or_pull_work_outside_the_store(
    tmp_path: Path, server: GitServer
) -> None:
    a = first_clone(tmp_path, server)
    b = another_clone(tmp_path, server, "b", "bob")
    (a.root / "src.py").write_text("print('hi')\n", encoding="utf-8")
    git(a.root, "add", "src.py")
    git(a.root, "commit", "-q", "-m", "code")
    a.add("from-a", type="decision", description="made on a")
    with pytest.raises(SyncFailed, match=r"this branch has commits that change files sync"):
        sync.sync(a)
    git(a.root, "push", "-q", "origin", "HEAD:main")  # the person pushes their own work
    b.add("from-b", type="decision", description="made on b")
    before = refs.head(b.repo)
    with pytest.raises(SyncFailed, match=r"the remote's branch changed files sync does not"):
        sync.sync(b)
    assert refs.head(b.repo) == before and clean(b)


def test_an_unreachable_remote_is_a_clear_error_that_changes_nothing(
    pair: tuple[Store, Store], server: GitServer
) -> None:
    a, _ = pair
    a.add("offline", type="decision", description="made offline")
    before = refs.head(a.repo)
    server.kill()
    with pytest.raises(RemoteUnreachable, match=r"cannot reach the remote 'origin'"):
        sync.sync(a)
    assert refs.head(a.repo) == before and clean(a)
    server.start()
    assert sync.sync(a).pushed


def test_cli_sync_reports_what_it_did_and_errors_without_a_traceback(
    pair: tuple[Store, Store], server: GitServer
) -> None:
    a, b = pair
    b.add("from-b", type="decision", description="made on b")
    sync.sync(b)
    runner = CliRunner()
    args = ["--store", str(a.root), "--agent", "alice", "sync"]
    done = runner.invoke(main, args)
    assert done.exit_code == 0, done.output
    assert "synced with origin/main: fast-forward, 1 file received" in done.output
    server.kill()
    done = runner.invoke(main, args)
    assert done.exit_code == 1
    assert "Error: cannot reach the remote 'origin'" in done.output
    assert "Traceback" not in done.output
    done = runner.invoke(main, [*args, "--remote", "nowhere"])
    assert "Error: this repository has no remote named 'nowhere'" in done.output


def test_a_protected_branch_is_named_in_the_error_and_commits_stay_local(
    pair: tuple[Store, Store], server: GitServer
) -> None:
    a, _ = pair
    hook = server.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'branch main is protected' >&2\nexit 1\n", encoding="utf-8")
    hook.chmod(0o755)
    a.add("kept", type="decision", description="kept locally")
    with pytest.raises(SyncFailed, match=r"refused the push to branch 'main'.*protected"):
        sync.sync(a)
    assert "kept" in names(a) and clean(a)


def test_unrelated_histories_are_refused(tmp_path: Path, server: GitServer) -> None:
    first_clone(tmp_path, server)
    other = Store.init(tmp_path / "other", agent="carol")
    git(other.root, "remote", "add", "origin", server.url)
    with pytest.raises(SyncFailed, match=r"share no history"):
        sync.sync(other)


class _NeedsPassword(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="git"')
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def test_rejected_credentials_are_named_as_such(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "a", agent="alice")
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NeedsPassword)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{web.server_address[1]}/store.git"
        git(store.root, "remote", "add", "origin", url)
        with pytest.raises(SyncFailed, match=r"rejected the credentials"):
            sync.sync(store)
    finally:
        web.shutdown()
        web.server_close()
    assert clean(store)


def test_the_remote_killed_mid_push_loses_nothing_and_the_next_sync_completes(
    pair: tuple[Store, Store], server: GitServer, tmp_path: Path
) -> None:
    a, b = pair
    marker = tmp_path / "push-started"
    hook = server.bare / "hooks" / "pre-receive"
    # The server holds the push open until the test has killed it.
    hook.write_text(
        f"#!/bin/sh\ntouch '{marker}'\nwhile true; do sleep 0.05; done\n", encoding="utf-8"
    )
    hook.chmod(0o755)
    for i in range(5):
        a.add(f"note-{i}", type="decision", description=f"note {i}")
    b.add("from-b", type="decision", description="made on b")
    syncing = subprocess.Popen(
        [sys.executable, "-m", "memstore", "--store", str(a.root), "--agent", "alice", "sync"],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and syncing.poll() is None and time.monotonic() < deadline:
        threading.Event().wait(0.01)  # polling a condition, with a bound
    assert marker.exists(), syncing.communicate(timeout=30)
    server.kill()
    _, err = syncing.communicate(timeout=30)
    assert syncing.returncode == 1 and "Error:" in err and "Traceback" not in err
    assert names(a) == {f"note-{i}" for i in range(5)} and clean(a)
    hook.unlink()
    server.start()
    assert sync.sync(a).pushed
    sync.sync(b)
    sync.sync(a)
    assert names(a) == names(b) == {*(f"note-{i}" for i in range(5)), "from-b"}


@pytest.fixture
def three(tmp_path: Path, server: GitServer) -> list[Store]:
    a = first_clone(tmp_path, server)
    return [
        a,
        another_clone(tmp_path, server, "b", "bob"),
        another_clone(tmp_path, server, "c", "carol"),
    ]


def test_concurrent_edits_and_syncs_on_three_clones_lose_nothing(three: list[Store]) -> None:
    rounds = 4
    agents = ["alice", "bob", "carol"]
    workers = [
        run_helper("editor", str(store.root), agent, str(rounds))
        for store, agent in zip(three, agents, strict=True)
    ]
    for worker in workers:
        out, _ = worker.communicate(timeout=240)
        assert worker.returncode == 0 and out == ""
    for _ in range(2):  # everyone's last changes reach everyone
        for store in three:
            sync.sync(store)
    expected = {f"{agent}-{i}" for agent in agents for i in range(rounds)}
    for store in three:
        assert names(store) == expected
        assert {e.target for e in ledger_io.events(store)} == expected
        verified = ledger_io.verify(store)
        assert verified.ok, verified.problems
        assert clean(store)


def test_eight_claimers_on_three_clones_one_winner_each_time(three: list[Store]) -> None:
    rounds = 20  # as the issue asks; bench/sync.py runs 50 (--claim-rounds)
    claimers = [
        (
            three[i % 3],
            f"claimer-{i}",
            run_helper("claimer", str(three[i % 3].root), f"claimer-{i}"),
        )
        for i in range(8)
    ]
    try:
        for r in range(rounds):
            for _, _, proc in claimers:
                assert proc.stdin is not None
                proc.stdin.write(f"api-{r}\n")
                proc.stdin.flush()
            answers: dict[str, str] = {}
            for _, agent, proc in claimers:
                assert proc.stdout is not None
                answers[agent] = proc.stdout.readline().strip()
            winners = [agent for agent, answer in answers.items() if answer == "won"]
            assert len(winners) == 1, answers
            for agent, answer in answers.items():
                if agent != winners[0]:
                    assert answer.startswith("held ") and f"claimed by {winners[0]}" in answer
    finally:
        for _, _, proc in claimers:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.close()
            proc.wait(timeout=60)
            proc.stdout.close()  # else a ResourceWarning, which the suite makes an error
    for store in three:
        sync.sync(store)
    for store in three:
        sync.sync(store)
        claims = [e for e in ledger_io.events(store) if e.status == "claimed"]
        assert len(claims) == rounds and ledger_io.verify(store).ok


def remote_backed(a: Store, b: Store) -> None:
    """Commit `claims: remote` on clone a and bring it to clone b."""
    (a.root / "memstore.yaml").write_text("claims: remote\n", encoding="utf-8")
    git(a.root, "add", "memstore.yaml")
    git(a.root, "commit", "-q", "-m", "claims go through the remote")
    sync.sync(a)
    sync.sync(b)


def test_a_claim_on_one_machine_holds_on_another_and_check_fetches_first(
    pair: tuple[Store, Store],
) -> None:
    a, b = pair
    remote_backed(a, b)
    sync.claim(b, "deploy", "api-v2", 900)  # `claims: remote`: pushed before it counts
    found = sync.check(a, "deploy", "api-v2")  # a has not synced: check fetches
    assert (found.state, found.actor) == ("IN_PROGRESS", "bob")
    assert ledger_io.check(a, "deploy", "api-v2").state == "NOT_EXECUTED"  # wrote nothing here
    with pytest.raises(ClaimHeld, match=r"claimed by bob"):
        sync.claim(a, "deploy", "api-v2", 900)
    assert [e.actor for e in ledger_io.events(a) if e.status == "claimed"] == ["bob"]


def test_a_remote_claim_fails_closed_and_check_says_when_the_remote_is_unreachable(
    pair: tuple[Store, Store], server: GitServer
) -> None:
    a, b = pair
    remote_backed(a, b)
    before = a.ledger_path.read_bytes() if a.ledger_path.exists() else b""
    server.kill()
    with pytest.raises(RemoteUnreachable, match=r"not claiming 'deploy api-v2'"):
        sync.claim(a, "deploy", "api-v2", 900)
    assert (a.ledger_path.read_bytes() if a.ledger_path.exists() else b"") == before
    found = sync.check(a, "deploy", "api-v2")
    assert found.state == "NOT_EXECUTED"
    assert any("answered from this clone's ledger only" in w for w in found.warnings)


@pytest.mark.anyio
async def test_mcp_ledger_claim_follows_claims_remote(pair: tuple[Store, Store]) -> None:
    a, b = pair
    remote_backed(a, b)
    won = await call(b, "ledger_claim", action="deploy", target="api-v2")
    assert not won.is_error, text(won)
    lost = await call(a, "ledger_claim", action="deploy", target="api-v2")
    assert lost.is_error and "claimed by bob" in text(lost)
    checked = await call(a, "ledger_check", action="deploy", target="api-v2")
    assert "IN_PROGRESS" in text(checked) and "bob" in text(checked)


@pytest.mark.anyio
async def test_serve_sync_every_brings_other_clones_changes(pair: tuple[Store, Store]) -> None:
    a, b = pair
    b.add("from-b", type="decision", description="made on b")
    sync.sync(b)
    server = build_server(a, watch=False, sync_every=0.2)
    async with Client(server, raise_exceptions=True):
        with anyio.fail_after(20):
            while "from-b" not in names(a):
                await anyio.sleep(0.05)  # polling a condition, bounded by fail_after
    assert clean(a)


def test_serve_refuses_a_sync_interval_out_of_range() -> None:
    done = CliRunner().invoke(main, ["serve", "--sync-every", "0s"])
    assert done.exit_code == 2 and "--sync-every" in done.output


def test_cli_remote_claim_names_the_winner_with_exit_3(pair: tuple[Store, Store]) -> None:
    a, b = pair
    runner = CliRunner()
    won = runner.invoke(
        main,
        ["--store", str(b.root), "--agent", "bob", "ledger", "claim", "deploy", "api", "--remote"],
    )
    assert won.exit_code == 0, won.output
    args = ["--store", str(a.root), "--agent", "alice", "ledger"]
    lost = runner.invoke(main, [*args, "claim", "deploy", "api", "--remote"])
    assert lost.exit_code == 3 and "claimed by bob" in lost.output
    checked = runner.invoke(main, [*args, "check", "deploy", "api", "--remote"])
    assert checked.exit_code == 3 and "IN_PROGRESS deploy api — claimed by bob" in checked.output


def test_a_landing_that_fails_puts_every_file_back(pair: tuple[Store, Store]) -> None:
    a, b = pair
    a.add("kept", type="decision", description="stays", body="v1\n")
    a.add("edited", type="decision", description="changes", body="v1\n")
    ledger_io.record(a, "publish", "x", evidence="https://example.com/x")
    sync.sync(a)
    sync.sync(b)
    git(b.root, "rm", "-q", "decision/kept.md")
    git(b.root, "commit", "-q", "-m", "remove kept")
    b.edit("edited", body="v2\n")
    ledger_io.record(b, "publish", "y", evidence="https://example.com/y")
    sync.sync(b)
    theirs = sync.fetch(a, sync.target(a))
    assert theirs is not None
    before = {
        p: p.read_bytes()
        for p in a.root.rglob("*")
        if p.is_file() and ".git" not in p.parts and ".memstore" not in p.parts
    }
    ours = refs.head(a.repo)
    assert ours is not None
    with transaction.locked(a):
        changes = sync._fast_forward(a, "", ours, theirs)[0]  # pyright: ignore[reportPrivateUsage]
        assert {type(c).__name__ for c in changes} == {"Remove", "Write", "Append"}
        with pytest.raises(Conflict, match=r"HEAD moved"):
            transaction.land(a, changes, theirs, "0" * 40, "alice")  # a stale HEAD: refused
    after = {
        p: p.read_bytes()
        for p in a.root.rglob("*")
        if p.is_file() and ".git" not in p.parts and ".memstore" not in p.parts
    }
    assert after == before and refs.head(a.repo) == ours and clean(a)
    assert sync.sync(a).integrated == "fast-forward" and "kept" not in names(a)


def test_a_store_in_a_folder_of_a_code_repository_syncs_its_files_only(
    tmp_path: Path, server: GitServer
) -> None:
    top = tmp_path / "a"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    (top / "app.py").write_text("print('v1')\n", encoding="utf-8")
    git(top, "add", "app.py")
    git(top, "commit", "-q", "-m", "code")
    a = Store.init(top / "memory", agent="alice")
    git(top, "remote", "add", "origin", server.url)
    git(top, "push", "-q", "origin", "main")  # the person publishes the code and the store
    b = Store(server.clone(tmp_path / "b") / "memory", agent="bob")
    b.add("from-b", type="decision", description="made on b")
    ledger_io.record(b, "deploy", "api", evidence="https://example.com/d")
    sync.sync(b)
    (top / "app.py").write_text("print('v2, not committed')\n", encoding="utf-8")
    a.add("from-a", type="decision", description="made on a")
    result = sync.sync(a)
    assert result.integrated == "merge" and result.pushed
    assert set(result.received) == {"decision/from-b.md", "ledger.jsonl"}
    assert names(a) == {"from-a", "from-b"} and ledger_io.verify(a).ok
    assert (top / "app.py").read_text(encoding="utf-8") == "print('v2, not committed')\n"
