"""The workflow through MCP: session_start (tool and prompt), check, outcome, and rules saved
with memory_store."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp.types import TextContent

from memstore.faces.server import build_server
from memstore.storage.store import Store
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.session import agent as session
from tests.conftest import as_agent, git, name_humans
from tests.faces.test_stdio import serve
from tests.mcp_client import call, data, text

pytestmark = pytest.mark.anyio

P0 = {
    "name": "no-publish-on-bump",
    "type": "correction",
    "description": "Never npm publish from a version-bump commit; CI publishes tags",
    "severity": "p0",
    "applies_when": ["npm publish", "version bump"],
    "evidence": "Stop publishing by hand, the release job does it.",
}


async def test_memory_store_saves_a_correction_that_blocks_check_at_once(store: Store) -> None:
    name_humans(store.root, "human")
    human = as_agent(store, "human")
    saved = data(await call(human, "memory_store", **P0))["memory"]
    assert saved["status"] == "draft"
    assert saved["extra"]["severity"] == "p0"
    assert saved["extra"]["applies_when"] == ["npm publish", "version bump"]
    result = await call(store, "check", description="bump version to 1.4.1 and npm publish")
    verdict = data(result)["check"]
    assert verdict["verdict"] == "block"
    assert verdict["reasons"][0]["name"] == "no-publish-on-bump"
    first, preamble, status, said, *_ = text(result).splitlines()
    assert first == "BLOCK: do NOT act" and preamble.startswith("Text between <data-")
    assert status == "- [block] no-publish-on-bump (correction p0, draft, from a human: in force)"
    assert said.startswith("  <data-") and "Never npm publish" in said


async def test_rule_fields_on_another_type_are_a_tool_error(store: Store) -> None:
    result = await call(
        store, "memory_store", name="x", type="decision", description="d", severity="p0"
    )
    assert result.is_error
    assert "not a 'decision'" in text(result)
    bad = await call(store, "memory_store", **{**P0, "applies_when": ["two\nlines"]})
    assert bad.is_error and "invalid applies_when pattern" in text(bad)


async def test_check_consults_the_ledger_with_action_and_target(store: Store) -> None:
    ledger_io.claim(store, "publish", "post-1")
    ledger_io.record(store, "publish", "post-1", evidence="https://blog.example.com/post-1")
    result = await call(
        as_agent(store, "bob"), "check", description="publish", action="publish", target="post-1"
    )
    assert data(result)["check"]["verdict"] == "block"
    assert "already executed by alice" in text(result)
    allowed = await call(store, "check", description="ls -la")
    assert text(allowed) == "ALLOW: go ahead"


async def test_session_start_tool_returns_the_fenced_briefing_within_budget(store: Store) -> None:
    await call(as_agent(store, "human"), "memory_store", **P0)
    result = await call(store, "session_start", task="release 1.4.1 to npm", budget_tokens=200)
    briefing = data(result)["briefing"]
    assert briefing["tokens"] <= 200
    assert text(result).startswith("# memstore briefing for alice\nTask: <data-")
    rules = briefing["text"].split("## Corrections and warnings that apply\n")[1]
    assert rules.startswith("- **p0** correction `no-publish-on-bump` [draft, from an agent: ")
    assert (await call(store, "session_start", budget_tokens=10)).is_error


async def test_outcome_is_recorded_as_the_servers_identity(store: Store) -> None:
    await call(as_agent(store, "human"), "memory_store", **P0)
    result = await call(store, "outcome", name="no-publish-on-bump", outcome="heeded")
    record = data(result)["outcome"]
    assert (record["actor"], record["outcome"], record["status"]) == ("alice", "heeded", "draft")
    assert session.heed_rates(store)[1].heeded == 1
    wrong = await call(store, "outcome", name="no-publish-on-bump", outcome="ignored")
    assert wrong.is_error


async def test_the_session_start_prompt_carries_the_briefing(store: Store) -> None:
    await call(as_agent(store, "human"), "memory_store", **P0)
    async with Client(build_server(store, watch=False), raise_exceptions=True) as client:
        prompt = await client.get_prompt("session_start", {"task": "npm publish"})
    block = prompt.messages[0].content
    assert isinstance(block, TextContent)
    assert "no-publish-on-bump" in block.text and "memory_recall" in block.text


async def test_end_to_end_a_correction_from_one_server_blocks_another(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    name_humans(root, "human")
    async with serve(root, "human") as human, serve(root, "coder") as coder:
        saved = await human.call_tool("memory_store", P0)
        assert not saved.is_error, text(saved)
        start = await coder.call_tool("session_start", {"task": "release 1.4.1"})
        assert "**p0** correction `no-publish-on-bump` [draft, from a human: in force]" in text(
            start
        )
        verdict = await coder.call_tool("check", {"description": "npm publish"})
        assert text(verdict).startswith("BLOCK: do NOT act")
        done = await coder.call_tool("outcome", {"name": "no-publish-on-bump", "outcome": "heeded"})
        assert not done.is_error, text(done)
    log = git(root, "log", "--format=%an|%s", "-n2").splitlines()
    assert log[0] == "coder|outcome: no-publish-on-bump heeded"
    assert log[1].startswith("human|memory: add correction/no-publish-on-bump")
    assert git(root, "status", "--porcelain") == ""


async def test_end_to_end_check_reads_paraphrases_and_guards_over_stdio(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    name_humans(root, "human")
    async with serve(root, "human") as human, serve(root, "coder") as coder:
        saved = await human.call_tool("memory_store", {**P0, "applies_when": ["npm publish"]})
        assert not saved.is_error, text(saved)
        shipped = await coder.call_tool("check", {"description": "ship 1.4.1 to the npm registry"})
        assert text(shipped).startswith("BLOCK: do NOT act")
        wiped = await coder.call_tool("check", {"description": "rm -rf ~/projects/app"})
        guard = wiped.structured_content["check"]["reasons"][0]  # type: ignore[index]
        assert (guard["kind"], guard["name"], guard["verdict"]) == ("guard", "rm-rf", "warn")
        assert "built-in guard rm-rf" in text(wiped)
        pushed = await coder.call_tool("check", {"description": "git push origin feature/x"})
        assert text(pushed) == "ALLOW: go ahead"


async def test_end_to_end_a_150_token_session_start_keeps_the_release_p0(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    name_humans(root, "human")
    async with serve(root, "human") as human, serve(root, "coder") as coder:
        saved = await human.call_tool("memory_store", {**P0, "applies_when": ["npm publish"]})
        assert not saved.is_error, text(saved)
        for i in range(8):
            other = {
                "name": f"style-{i}",
                "type": "warning",
                "description": f"Prefer small functions in module {i} " + "w" * 40,
            }
            assert not (await coder.call_tool("memory_store", other)).is_error
        for _ in range(5):
            done = await coder.call_tool(
                "outcome", {"name": "no-publish-on-bump", "outcome": "heeded"}
            )
            assert not done.is_error, text(done)
        full = await human.call_tool("session_start", {"task": "cut release 1.4.1"})
        assert "- 5 outcomes recorded\n" in text(full)  # one line, its names fenced below
        start = await human.call_tool(
            "session_start", {"task": "cut release 1.4.1", "budget_tokens": 150}
        )
        briefing = start.structured_content["briefing"]  # type: ignore[index]
        assert briefing["tokens"] <= 150
        assert "**p0** correction `no-publish-on-bump`" in briefing["text"]
