"""Ready-to-paste MCP client configurations that start `memstore serve` on one store."""

import json
from pathlib import Path

WHERE = {
    "claude-code": ".mcp.json at the project root (or: claude mcp add-json memstore '<inner>')",
    "claude-desktop": "claude_desktop_config.json (Settings → Developer → Edit Config)",
    "cursor": ".cursor/mcp.json in the project (or ~/.cursor/mcp.json for every project)",
    "codex": "~/.codex/config.toml",
}
"""Where each client reads its configuration."""


def server_command(python: str, store: Path, grouped: bool = False) -> list[str]:
    """The command line a client runs: this install's Python, this store, `serve`."""
    return [python, "-m", "memstore", "--store", str(store), "serve"] + (
        ["--grouped"] if grouped else []
    )


def client_config(client: str, python: str, store: Path, agent: str, grouped: bool = False) -> str:
    """The configuration text for `client` (a JSON document, or TOML for codex)."""
    command, *args = server_command(python, store, grouped)
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
