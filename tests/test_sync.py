"""`memstore sync` and remote claims against a real git server on loopback (`git daemon`), with
clones acting as machines."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore import history, ledger_io, sync
from memstore.cli import main
from memstore.errors import RemoteUnreachable, SyncFailed
from memstore.memory import parse
from memstore.store import Store
from tests.gitserver import GitServer, git


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
    assert history.head(a.repo) == history.head(b.repo)
    assert clean(a) and clean(b)


def test_a_sync_with_nothing_to_do_changes_nothing(pair: tuple[Store, Store]) -> None:
    a, _ = pair
    before = history.head(a.repo)
    result = sync.sync(a)
    assert (result.integrated, result.pushed, result.received) == ("up to date", False, ())
    assert history.head(a.repo) == before


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
    first = history.head(a.repo)
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
    before = history.head(b.repo)
    with pytest.raises(SyncFailed, match=r"the remote's branch changed files sync does not"):
        sync.sync(b)
    assert history.head(b.repo) == before and clean(b)


def test_an_unreachable_remote_is_a_clear_error_that_changes_nothing(
    pair: tuple[Store, Store], server: GitServer
) -> None:
    a, _ = pair
    a.add("offline", type="decision", description="made offline")
    before = history.head(a.repo)
    server.kill()
    with pytest.raises(RemoteUnreachable, match=r"cannot reach the remote 'origin'"):
        sync.sync(a)
    assert history.head(a.repo) == before and clean(a)
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
    assert "synced with origin/main: fast-forward, 1 file(s) received" in done.output
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
    waited = 0
    while not marker.exists() and syncing.poll() is None and waited < 2000:
        waited += 1
        threading.Event().wait(0.01)  # polling a condition, with a bound
    assert marker.exists()
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
