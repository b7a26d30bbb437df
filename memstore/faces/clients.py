"""Ready-to-paste MCP client configurations that start `memstore serve` on one store."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memstore.limits import HTTP_URL
from memstore.model.identity import check_identity, same_identity

if TYPE_CHECKING:
    from memstore.storage.store import Store

WHERE = {
    "claude-code": ".mcp.json at the project root (or: claude mcp add-json memstore '<inner>')",
    "claude-desktop": "claude_desktop_config.json (Settings → Developer → Edit Config)",
    "cursor": ".cursor/mcp.json in the project (or ~/.cursor/mcp.json for every project)",
    "codex": "~/.codex/config.toml",
}
"""Where each client reads its configuration."""

TOKEN_VAR = "MEMSTORE_TOKEN"
"""The environment variable an HTTP client reads its bearer token from (never the file)."""
HTTP_CLIENTS = ("claude-code", "cursor", "codex")
"""Clients whose configuration file can name a streamable HTTP server with headers."""


def server_command(
    python: str, store: Path, grouped: bool = False, scopes: tuple[str, ...] = ()
) -> list[str]:
    """The command line a client runs: this install's Python, this store, `serve` (with the
    agent's scopes, if any)."""
    return (
        [python, "-m", "memstore", "--store", str(store), "serve"]
        + (["--grouped"] if grouped else [])
        + (["--scope", ",".join(scopes)] if scopes else [])
    )


def agent_for(client: str, flag: str | None, store: Store) -> tuple[str, bool]:
    """The identity a stdio client's agent acts as (`flag`, else the client's name), and whether
    that is the person configuring it ($MEMSTORE_AGENT, else the store's identity): an agent
    acting as you could confirm your drafts, and you its.

    Raises:
        InvalidMemory: for a `flag` that cannot be an identity.
    """
    agent = check_identity(flag) if flag else client
    you = os.environ.get("MEMSTORE_AGENT") or store.identity
    return agent, same_identity(agent, you)


def client_config(
    client: str,
    python: str,
    store: Path,
    agent: str,
    grouped: bool = False,
    scopes: tuple[str, ...] = (),
) -> str:
    """The configuration text for `client` (a JSON document, or TOML for codex)."""
    command, *args = server_command(python, store, grouped, scopes)
    env = {"MEMSTORE_AGENT": agent}
    if client == "codex":
        quoted = ", ".join(json.dumps(a, ensure_ascii=False) for a in args)
        return "\n".join(
            [
                "[mcp_servers.memstore]",
                f"command = {json.dumps(command, ensure_ascii=False)}",
                f"args = [{quoted}]",
                f"env = {{ MEMSTORE_AGENT = {json.dumps(agent, ensure_ascii=False)} }}",
            ]
        )
    entry: dict[str, object] = {"command": command, "args": args, "env": env}
    if client == "claude-code":
        entry = {"type": "stdio", **entry}
    return json.dumps({"mcpServers": {"memstore": entry}}, ensure_ascii=False, indent=2)


def http_config(client: str, url: str = HTTP_URL) -> str:
    """The configuration text for `client` to reach `serve --http` at `url`, its bearer token
    read from `$MEMSTORE_TOKEN` (each client spells the reference its own way)."""
    if client == "codex":
        return "\n".join(
            [
                "[mcp_servers.memstore]",
                f"url = {json.dumps(url, ensure_ascii=False)}",
                f'bearer_token_env_var = "{TOKEN_VAR}"',
            ]
        )
    if client == "claude-code":
        entry: dict[str, object] = {
            "type": "http",
            "url": url,
            "headers": {"Authorization": f"Bearer ${{{TOKEN_VAR}}}"},
        }
    elif client == "cursor":
        entry = {"url": url, "headers": {"Authorization": f"Bearer ${{env:{TOKEN_VAR}}}"}}
    else:
        raise ValueError(f"{client} cannot be configured for HTTP here")
    return json.dumps({"mcpServers": {"memstore": entry}}, ensure_ascii=False, indent=2)


EDIT_TOOLS = "Edit|Write|MultiEdit|NotebookEdit"
"""The Claude Code tools that change files: their PreToolUse check also warns when another live
session touched the same file."""


def hook_settings(command: str, agent: str = "claude-code") -> str:
    """The Claude Code hook settings (a `.claude/settings.json` fragment) that run memstore's
    commands, `command` being how to start memstore on the store (`memstore --store …`): the
    briefing at SessionStart, the person's corrections at UserPromptSubmit, the check before
    shell commands and file edits, and closing before compaction and at SessionEnd."""

    def run(args: str, timeout: int) -> list[dict[str, object]]:
        return [{"type": "command", "command": f"{command} {args}", "timeout": timeout}]

    hooks: dict[str, list[dict[str, object]]] = {
        "SessionStart": [
            {
                "matcher": "startup|resume|clear|compact",
                "hooks": run("brief --fenced --budget-tokens 1500", 30),
            }
        ],
        "UserPromptSubmit": [{"hooks": run("correct --hook claude-code", 10)}],
        "PreToolUse": [
            {"matcher": f"Bash|{EDIT_TOOLS}", "hooks": run("check --hook claude-code", 30)}
        ],
        "PreCompact": [{"matcher": "manual|auto", "hooks": run("close --hook claude-code", 60)}],
        "SessionEnd": [{"hooks": run("close --hook claude-code", 60)}],
    }
    settings = {"env": {"MEMSTORE_AGENT": agent}, "hooks": hooks}
    return json.dumps(settings, ensure_ascii=False, indent=2)
