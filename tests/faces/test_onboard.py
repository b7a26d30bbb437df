"""`memstore onboard`: the paragraph for an agent's instructions file, written idempotently, and
the client configuration and hooks for this store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.faces import onboarding
from memstore.faces.cli.main import main
from memstore.storage.store import Store
from tests.conftest import REPO

TOOLS = ("session_start", "memory_recall", "check", "ledger_claim", "ledger_record", "session_end")


def run(*args: str) -> tuple[int, str]:
    # No --agent: that names the agent the configuration is for (default: the client's name).
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    Store.init(tmp_path / "memory", agent="alice")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_onboard_prints_the_paragraph_the_config_and_the_hooks(project: Path) -> None:
    code, out = run("onboard")
    assert code == 0, out
    assert all(f"`{tool}`" in out for tool in TOOLS)
    assert onboarding.block() in out
    assert f'"--store",\n        "{project / "memory"}"' in out  # the MCP configuration
    assert '"MEMSTORE_AGENT": "claude-code"' in out
    assert "check --hook claude-code" in out and '"SessionEnd"' in out  # the hooks


def test_write_adds_the_block_once_and_a_second_run_changes_nothing(project: Path) -> None:
    claude = project / "CLAUDE.md"
    claude.write_text("# My project\n\nUse pnpm.", encoding="utf-8")
    code, out = run("onboard", "--write", "CLAUDE.md")
    assert code == 0 and "CLAUDE.md: added the memstore paragraph" in out
    first = claude.read_bytes()
    assert first.decode() == f"# My project\n\nUse pnpm.\n\n{onboarding.block()}"
    code, again = run("onboard", "--write", "CLAUDE.md")
    assert code == 0 and "nothing changed" in again
    assert claude.read_bytes() == first


def test_write_replaces_its_own_stale_block_in_place(project: Path) -> None:
    agents = project / "AGENTS.md"
    old = f"{onboarding.BEGIN}\n## Team memory\nCall memory_recall first.\n{onboarding.END}\n"
    agents.write_text(f"# Agents\n\n{old}\n## Testing\nRun make test.\n", encoding="utf-8")
    code, out = run("onboard", "--write", "AGENTS.md")
    assert code == 0 and "updated its memstore paragraph" in out
    text = agents.read_text(encoding="utf-8")
    assert text == f"# Agents\n\n{onboarding.block()}\n## Testing\nRun make test.\n"
    assert text.count(onboarding.END) == 1


def test_write_creates_a_missing_file(project: Path) -> None:
    code, out = run("onboard", "--write", "docs/AGENTS.md")
    assert code == 0 and "created it" in out
    assert (project / "docs" / "AGENTS.md").read_text(encoding="utf-8") == onboarding.block()


@pytest.mark.parametrize(
    "text",
    [
        f"{onboarding.BEGIN}\nhalf a block\n",
        f"stray\n{onboarding.END}\n",
        f"{onboarding.block()}\n{onboarding.block()}",
    ],
)
def test_a_damaged_block_is_refused_and_the_file_left_alone(project: Path, text: str) -> None:
    claude = project / "CLAUDE.md"
    claude.write_text(text, encoding="utf-8")
    code, out = run("onboard", "--write", "CLAUDE.md")
    assert code == 1 and out.startswith("Error: CLAUDE.md: its memstore block is damaged")
    assert len(out.strip().splitlines()) == 1
    assert claude.read_text(encoding="utf-8") == text


def test_write_refuses_a_file_inside_the_store(project: Path) -> None:
    code, out = run("onboard", "--write", "memory/CLAUDE.md")
    assert code == 1 and "is inside the store" in out
    assert not (project / "memory" / "CLAUDE.md").exists()


def test_onboard_json(project: Path) -> None:
    code, out = run("onboard", "--write", "CLAUDE.md", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["written"] == {"path": "CLAUDE.md", "action": "created"}
    assert data["paragraph"] == onboarding.block()
    assert data["config"]["mcpServers"]["memstore"]["env"] == {"MEMSTORE_AGENT": "claude-code"}
    assert "PreToolUse" in data["hooks"]["hooks"]
    code, out = run("onboard", "--client", "cursor", "--json")
    assert json.loads(out)["hooks"] is None
    code, out = run("--agent", "deploy-bot", "onboard", "--json")
    assert json.loads(out)["agent"] == "deploy-bot"


def test_the_documented_paragraph_is_the_one_onboard_writes() -> None:
    docs = (REPO / "docs" / "clients.md").read_text(encoding="utf-8")
    assert onboarding.block() in docs
