"""`memstore onboard`: everything an agent needs to start using this store, in one step."""

from __future__ import annotations

import click

from memstore.faces.cli.common import config_of, echo_json
from memstore.faces.cli.serving import CLIENTS


@click.command()
@click.option(
    "--write",
    "write_to",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Put the paragraph into FILE (CLAUDE.md, AGENTS.md): added once, its block replaced "
    "when it changed, the file left alone when it is current.",
)
@click.option(
    "--client",
    type=click.Choice(CLIENTS),
    default="claude-code",
    show_default=True,
    help="The client whose MCP configuration to print (hooks: claude-code only).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def onboard(ctx: click.Context, write_to: str | None, client: str, as_json: bool) -> None:
    """Print what sets an agent up on this store: the paragraph for CLAUDE.md / AGENTS.md
    (when to call session_start, memory_recall, check, the ledger tools and session_end), the
    client's MCP configuration and, for Claude Code, its hooks.

    With --write FILE the paragraph goes into FILE between markers instead: running it again
    changes nothing, and a newer memstore's paragraph replaces its own block, never
    appending a second one. The configuration and hooks are printed to paste (they hold this
    machine's paths, so they do not belong in a shared file).

    \b
    Examples:
      memstore onboard
      memstore onboard --write CLAUDE.md
      memstore --agent deploy-bot onboard --client cursor
    """
    import json
    import shlex
    import sys
    from pathlib import Path

    from memstore.faces import onboarding
    from memstore.faces.clients import (
        WHERE,
        agent_for,
        client_config,
        hook_settings,
        server_command,
    )
    from memstore.storage.store import Store

    store = Store(config_of(ctx).store)  # refuse a directory that is no store
    written = onboarding.write(Path(write_to), store.root) if write_to is not None else None
    flag: str | None = ctx.find_root().params.get("agent")
    agent, as_you = agent_for(client, flag, store)
    config = client_config(client, sys.executable, store.root, agent)
    hooks = None
    if client == "claude-code":
        command = " ".join(shlex.quote(a) for a in server_command(sys.executable, store.root)[:-1])
        hooks = hook_settings(command, agent)
    warning = (
        f"the agent would act as '{agent}', which is you ($MEMSTORE_AGENT or git user.name): "
        "it could confirm your drafts and you its; give it a name of its own with --agent NAME"
        if as_you
        else None
    )
    if as_json:
        echo_json(
            {
                "paragraph": onboarding.block(),
                "written": None
                if written is None
                else {"path": written.path, "action": written.action},
                "client": client,
                "agent": agent,
                "config_file": WHERE[client],
                "config": config if client == "codex" else json.loads(config),
                "hooks": None if hooks is None else json.loads(hooks),
                "warning": warning,
            }
        )
        return
    if written is None:
        click.echo(
            "# 1. For CLAUDE.md or AGENTS.md (`memstore onboard --write CLAUDE.md` puts it "
            "there and keeps it current):"
        )
        click.echo(onboarding.block())
    else:
        said = {
            "created": "created it with the memstore paragraph",
            "added": "added the memstore paragraph",
            "updated": "updated its memstore paragraph",
            "unchanged": "its memstore paragraph is current; nothing changed",
        }
        click.echo(f"# 1. {written.path}: {said[written.action]}\n")
    click.echo(f"# 2. The MCP server, as '{agent}': paste into {WHERE[client]}")
    if warning:
        click.echo(f"# warning: {warning}")
    click.echo(config)
    if hooks is not None:
        click.echo("\n# 3. Claude Code hooks: merge into .claude/settings.json")
        click.echo(hooks)


COMMANDS: tuple[click.Command, ...] = (onboard,)
"""The commands `main` registers from this module."""
