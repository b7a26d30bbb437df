"""A live claim is its holder's to record, and `ledger verify` finds fault with whatever an
append would refuse: real `memstore` processes and the SDK client against `memstore serve`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstore.storage.store import Store
from tests.conftest import git
from tests.mcp_client import serve, text

URL = "https://deploy.example.com/run/7"
ROOT = Path(__file__).resolve().parent.parent.parent


def cli(store: Path, agent: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(store), "--agent", agent, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _ledger_lines(store: Store) -> list[str]:
    path = store.ledger_path
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_record_while_another_holds_a_live_claim_is_refused(store: Store) -> None:
    assert (
        cli(store.root, "alice", "ledger", "claim", "deploy", "api", "--ttl", "1h").returncode == 0
    )
    before = _ledger_lines(store)
    for extra in ([], ["--failed", "--note", "gave up"]):
        args = ["--evidence", URL] if not extra else extra
        done = cli(store.root, "bob", "ledger", "record", "deploy", "api", *args)
        assert done.returncode == 3, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in done.stderr
        assert "claimed by alice" in lines[0] and "until 20" in lines[0]
        assert "nothing was written" in lines[0]
    assert _ledger_lines(store) == before
    # The holder records; then anyone may record again (with the usual warning).
    assert (
        cli(store.root, "alice", "ledger", "record", "deploy", "api", "--evidence", URL).returncode
        == 0
    )
    again = cli(store.root, "bob", "ledger", "record", "deploy", "api", "--evidence", URL)
    assert again.returncode == 0 and "may have run twice" in again.stderr


@pytest.mark.anyio
async def test_record_over_mcp_while_another_holds_the_claim_is_a_tool_error(store: Store) -> None:
    assert cli(store.root, "alice", "ledger", "claim", "publish", "post-1").returncode == 0
    async with serve(store.root, "bob") as client:
        result = await client.call_tool(
            "ledger_record", {"action": "publish", "target": "post-1", "evidence": URL}
        )
    assert result.is_error and "claimed by alice" in text(result)
    assert len(_ledger_lines(store)) == 1


def test_verify_reports_the_uncommitted_line_claim_refuses_on(store: Store) -> None:
    assert (
        cli(store.root, "alice", "ledger", "record", "deploy", "api", "--evidence", URL).returncode
        == 0
    )
    # A hand-appended sound line (a copy of a real event, re-hashed by memstore's own format)
    # that nobody committed: the next append would commit it as the appender's.
    assert cli(store.root, "carol", "ledger", "claim", "migrate", "db").returncode == 0
    last = _ledger_lines(store)[-1]
    git(store.root, "reset", "-q", "--soft", "HEAD~1")
    git(store.root, "reset", "-q", "HEAD", "--", str(store.ledger_path))
    assert last in _ledger_lines(store)
    claimed = cli(store.root, "bob", "ledger", "claim", "publish", "post-2")
    assert claimed.returncode == 1 and "not committed to git" in claimed.stderr
    verified = cli(store.root, "bob", "ledger", "verify")
    assert verified.returncode != 0, verified.stdout
    assert "not committed to git" in verified.stdout + verified.stderr
    # Committed by its actor, the line counts and both agree again.
    env = {**os.environ, "GIT_AUTHOR_NAME": "carol", "GIT_COMMITTER_NAME": "carol"}
    subprocess.run(
        ["git", "commit", "-q", "-m", "ledger", "--", str(store.ledger_path)],
        cwd=store.root,
        env={**env, "GIT_AUTHOR_EMAIL": "c@x", "GIT_COMMITTER_EMAIL": "c@x"},
        check=True,
    )
    assert cli(store.root, "bob", "ledger", "verify").returncode == 0
    assert cli(store.root, "bob", "ledger", "claim", "publish", "post-2").returncode == 0
