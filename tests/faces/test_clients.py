"""`memstore config CLIENT` prints a configuration that starts this store's server."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.faces.cli.main import main
from memstore.storage.store import Store


@pytest.mark.parametrize("client", ["claude-code", "claude-desktop", "cursor"])
def test_json_clients_get_absolute_paths_and_the_agent(store: Store, client: str) -> None:
    done = CliRunner().invoke(main, ["--store", str(store.root), "--agent", "qa", "config", client])
    assert done.exit_code == 0, done.output
    entry = json.loads(done.stdout)["mcpServers"]["memstore"]
    assert entry["command"] == sys.executable and Path(entry["command"]).is_absolute()
    assert entry["args"] == ["-m", "memstore", "--store", str(store.root), "serve"]
    assert entry["env"] == {"MEMSTORE_AGENT": "qa"}


def test_codex_gets_toml_and_the_agent_defaults_to_the_clients_name(store: Store) -> None:
    done = CliRunner().invoke(main, ["--store", str(store.root), "config", "codex", "--grouped"])
    assert done.exit_code == 0, done.output
    entry = tomllib.loads(done.stdout)["mcp_servers"]["memstore"]
    assert entry["args"][-2:] == ["serve", "--grouped"]
    assert entry["env"] == {"MEMSTORE_AGENT": "codex"}


def test_config_for_a_directory_that_is_no_store_is_an_error(tmp_path: Path) -> None:
    done = CliRunner().invoke(main, ["--store", str(tmp_path / "none"), "config", "cursor"])
    assert done.exit_code == 1 and "Error: no store at" in done.output


def test_the_humans_own_identity_is_never_baked_into_an_agents_config(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSTORE_AGENT", "alice")
    done = CliRunner().invoke(main, ["--store", str(store.root), "config", "cursor"])
    assert done.exit_code == 0, done.output
    entry = json.loads(done.stdout)["mcpServers"]["memstore"]
    assert entry["env"] == {"MEMSTORE_AGENT": "cursor"}
    assert "acts as 'cursor'" in done.stderr


def test_an_agent_named_as_the_human_gets_a_warning(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSTORE_AGENT", "Alice")
    done = CliRunner().invoke(
        main, ["--store", str(store.root), "--agent", "alice", "config", "claude-code"]
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["mcpServers"]["memstore"]["env"] == {"MEMSTORE_AGENT": "alice"}
    assert "warning: the agent would act as 'alice', which is you" in done.stderr


def test_the_agent_is_the_flag_else_the_client_and_is_you_when_it_names_you(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.faces.clients import agent_for

    monkeypatch.setenv("MEMSTORE_AGENT", "Alice")
    assert agent_for("cursor", None, store) == ("cursor", False)
    assert agent_for("cursor", " alice ", store) == ("alice", True)
    monkeypatch.delenv("MEMSTORE_AGENT")
    assert agent_for("cursor", "bob", store) == ("bob", False)


def _http_config(store: Store, client: str) -> str:
    done = CliRunner().invoke(
        main, ["--store", str(store.root), "config", client, "--http", "--url", URL]
    )
    assert done.exit_code == 0, done.output
    return done.stdout


URL = "http://build-box:8765/mcp"


def test_claude_code_gets_an_http_entry_whose_token_comes_from_the_environment(
    store: Store,
) -> None:
    entry = json.loads(_http_config(store, "claude-code"))["mcpServers"]["memstore"]
    assert entry == {
        "type": "http",
        "url": URL,
        "headers": {"Authorization": "Bearer ${MEMSTORE_TOKEN}"},
    }


def test_cursor_and_codex_get_http_entries_without_the_token_itself(store: Store) -> None:
    cursor = json.loads(_http_config(store, "cursor"))["mcpServers"]["memstore"]
    assert cursor == {"url": URL, "headers": {"Authorization": "Bearer ${env:MEMSTORE_TOKEN}"}}
    codex = tomllib.loads(_http_config(store, "codex"))["mcp_servers"]["memstore"]
    assert codex == {"url": URL, "bearer_token_env_var": "MEMSTORE_TOKEN"}


def test_claude_desktop_over_http_is_a_usage_error(store: Store) -> None:
    done = CliRunner().invoke(
        main, ["--store", str(store.root), "config", "claude-desktop", "--http"]
    )
    assert done.exit_code == 2 and "starts stdio servers" in done.output
