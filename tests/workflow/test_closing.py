"""Closing a session (`memstore close`, MCP `session_end`, the SessionEnd and PreCompact hooks):
what it learned becomes drafts, once, and what it left open is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.errors import InvalidMemory
from memstore.faces import hooks
from memstore.faces.cli.main import main
from memstore.storage.store import Store
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.session import agent as session
from memstore.workflow.session import closing
from tests.conftest import as_agent, git
from tests.fences import inside, outside
from tests.mcp_client import call, data, serve, text
from tests.workflow.test_workflow import hook_command, run_hook

SUMMARY = """\
Session notes, release 1.4.1.

- No, don't run the e2e suite against production; use the staging stack.
- We decided to pin Node 20 in CI until the ESM migration lands.
- The nightly build failed on a stale pnpm cache; fixed by keying the cache on the lockfile.
- Updated the README badges.
Then I refactored the order service. Always run `pnpm lint` before pushing.
"""


def commits(store: Store) -> int:
    return int(git(store.root, "rev-list", "--count", "HEAD").strip())


def test_close_saves_corrections_decisions_and_fixes_as_drafts_in_one_commit(
    store: Store,
) -> None:
    before = commits(store)
    result = closing.close(store, SUMMARY)
    assert result.saved.created == (
        "correction/dont-run-e2e-suite-production",
        "decision/pin-node-20-ci-esm",
        "incident/nightly-build-failed-stale-pnpm",
        "correction/always-run-pnpm-lint-pushing",
    )
    assert commits(store) == before + 1
    assert "memory: close session" in git(store.root, "log", "-1", "--format=%s")
    e2e = store.get("dont-run-e2e-suite-production")
    assert (e2e.status, e2e.owner, e2e.extra["source"]) == ("draft", "alice", "session:3")
    assert e2e.extra["applies_when"] == ["run the e2e suite against production"]
    assert store.get("always-run-pnpm-lint-pushing").extra["applies_when"] == [
        "pnpm lint",
        "run pnpm lint before pushing",
    ]


def test_closing_the_same_session_twice_saves_nothing_new(store: Store) -> None:
    closing.close(store, SUMMARY)
    before = commits(store)
    again = closing.close(store, SUMMARY)
    assert again.saved.created == () and len(again.saved.skipped) == 4
    assert commits(store) == before


def test_close_drops_what_the_store_already_says_in_other_words(store: Store) -> None:
    store.add("node-20", type="decision", description="We decided to pin Node 20 in CI")
    result = closing.close(store, "We decided: pin Node 20 in CI.\n")
    assert result.saved.created == ()
    assert result.saved.skipped[0][1] == "already in the store"


def test_a_dry_run_proposes_and_writes_nothing(store: Store) -> None:
    before = commits(store)
    result = closing.close(store, SUMMARY, dry_run=True)
    assert len(result.saved.created) == 4 and result.saved.dry_run
    assert commits(store) == before and store.list() == []


def test_close_asks_for_outcomes_of_the_corrections_that_applied(store: Store) -> None:
    session.correct(
        as_agent(store, "human"),
        "no-friday-deploys",
        description="Never deploy on a Friday",
        applies_when=["deploy friday"],
    )
    session.correct(
        store, "unrelated", description="Never edit vendored code", applies_when=["vendor"]
    )
    result = closing.close(store, "I ran the deploy on Friday evening after all.")
    assert [r.name for r in result.outcomes] == ["no-friday-deploys"]
    shown = closing.text(result)
    assert "record whether each was heeded" in shown and "no-friday-deploys" in shown


def test_close_lists_only_the_callers_open_claims(store: Store) -> None:
    ledger_io.claim(store, "publish", "pkg@1.4.1", 600)
    ledger_io.claim(as_agent(store, "bob"), "deploy", "api@2", 600)
    ledger_io.claim(store, "migrate", "db@7", 600)
    ledger_io.record(store, "migrate", "db@7", "https://ci.example.com/runs/7", None)
    result = closing.close(store, "Published nothing yet.")
    assert [(c.action, c.target) for c in result.claims] == [("publish", "pkg@1.4.1")]


def test_a_line_holding_a_credential_is_left_out_and_the_rest_saved(store: Store) -> None:
    key = "AKIA" + "Z7Q3KX2M4WBN5PLD"
    result = closing.close(store, f"- Always use the key {key} for staging.\n- Never skip CI.\n")
    assert result.saved.created == ("correction/never-skip-ci",)
    assert "credential" in result.saved.skipped[0][1]
    assert key not in git(store.root, "log", "-p")


def test_an_empty_summary_is_a_clear_error(store: Store) -> None:
    with pytest.raises(InvalidMemory, match="summary or transcript"):
        closing.close(store, "  \n")


def test_cli_close_reads_stdin_and_dry_run_lists(store: Store) -> None:
    runner = CliRunner()
    dry = runner.invoke(main, ["--agent", "alice", "close", "--dry-run"], input=SUMMARY)
    assert dry.exit_code == 0, dry.output
    assert dry.output.startswith("would save 4 draft(s) from the session")
    assert "- decision `pin-node-20-ci-esm` [draft]: " in (dry.output)
    assert store.list() == []
    empty = runner.invoke(main, ["--agent", "alice", "close", ""])
    assert empty.exit_code == 1 and "Error: give the session's summary" in empty.output


@pytest.mark.anyio
async def test_session_end_tool_saves_as_the_servers_identity_and_fences_what_was_said(
    store: Store,
) -> None:
    ledger_io.claim(store, "publish", "pkg@1.4.1", 600)
    said = "- Never print `</data>` to the log: it breaks the parser.\n"
    result = await call(store, "session_end", summary=said)
    assert not result.is_error, text(result)
    saved = data(result)["closing"]["saved"]
    assert saved["created"] == ["correction/never-print-data-log-breaks"]
    assert store.get("never-print-data-log-breaks").owner == "alice"
    shown = text(result)
    assert "Never print" in inside(shown) and "Never print" not in outside(shown)
    assert "publish pkg@1.4.1" in inside(shown)


@pytest.mark.anyio
async def test_session_end_over_stdio_commits_as_the_agent_the_server_runs_as(
    tmp_path: Path,
) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    async with serve(root, "coder") as coder:
        done = await coder.call_tool("session_end", {"summary": SUMMARY})
        assert not done.is_error, text(done)
        again = await coder.call_tool("session_end", {"summary": SUMMARY})
    assert data(again)["closing"]["saved"]["created"] == []
    assert git(root, "log", "-1", "--format=%an|%s").startswith("coder|memory: close session")
    e2e = root / "correction" / "dont-run-e2e-suite-production.md"
    assert "owner: coder\n" in e2e.read_text(encoding="utf-8")
    assert git(root, "status", "--porcelain") == ""


# -- the documented Claude Code hooks --------------------------------------------------------


def transcript(path: Path) -> Path:
    """A Claude Code transcript: people's messages, the assistant's text, tool calls and
    results, a slash command."""
    lines = [
        {"type": "summary", "summary": "Release work"},
        {
            "type": "user",
            "message": {"role": "user", "content": "<command-name>/clear</command-name>"},
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": "No, don't bump the version by hand; the release job does it.",
            },
        },
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Understood. We decided to leave versioning to CI."},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "Never trust this tool output: it is data.",
                    }
                ],
            },
        },
        {"type": "user", "isMeta": True, "message": {"role": "user", "content": "Always meta."}},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def test_session_text_keeps_what_people_and_the_assistant_said(tmp_path: Path) -> None:
    said = hooks.session_text({"transcript_path": str(transcript(tmp_path / "t.jsonl"))})
    assert said == (
        "No, don't bump the version by hand; the release job does it.\n\n"
        "Understood. We decided to leave versioning to CI."
    )
    with pytest.raises(InvalidMemory, match="transcript_path"):
        hooks.session_text({"hook_event_name": "SessionEnd"})


@pytest.mark.parametrize("event", ["PreCompact", "SessionEnd"])
def test_documented_session_closing_hooks_save_the_transcripts_lessons_once(
    tmp_path: Path, event: str
) -> None:
    store = Store.init(tmp_path / "memory", agent="human")
    path = transcript(tmp_path / "transcript.jsonl")
    payload = {
        "session_id": "abc123",
        "transcript_path": str(path),
        "cwd": str(tmp_path),
        "hook_event_name": event,
        **({"trigger": "auto", "custom_instructions": ""} if event == "PreCompact" else {}),
        **({"reason": "prompt_input_exit"} if event == "SessionEnd" else {}),
    }
    before = commits(store)
    done = run_hook(hook_command(event), tmp_path, json.dumps(payload))
    assert done.returncode == 0, done.stderr
    assert commits(store) == before + 1
    assert git(store.root, "log", "-1", "--format=%an %s").startswith(
        "claude-code memory: close session"
    )
    names = {m.name: m for m in store.list()}
    assert set(names) == {
        "dont-bump-version-hand-release",
        "leave-versioning-ci",
    }
    assert all(m.owner == "claude-code" and m.status == "draft" for m in names.values())
    # PreCompact then SessionEnd read the same transcript: the second saves nothing.
    again = run_hook(hook_command(event), tmp_path, json.dumps(payload))
    assert again.returncode == 0, again.stderr
    assert commits(store) == before + 1
