"""Commands that put the store to work for clients: serve (stdio or HTTP), sync with the git
remote, bearer tokens, client configurations, and the pre-commit hook."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from memstore.faces.cli.common import Result, asdict, config_of, reports, scope_list, store_of
from memstore.limits import HTTP_HOST, HTTP_PORT, HTTP_URL

if TYPE_CHECKING:
    from memstore.storage.store import Store


@click.command()
@click.option(
    "--grouped",
    is_flag=True,
    help="List one tool per family (memory, ledger) taking an op, for a smaller tools/list.",
)
@click.option(
    "--http",
    "over_http",
    is_flag=True,
    help="Serve MCP over streamable HTTP at /mcp, with the review console at /console; each "
    "request acts as its bearer token's identity (memstore token add).",
)
@click.option(
    "--host",
    default=HTTP_HOST,
    show_default=True,
    help="With --http: the address to listen on. Anything but loopback needs bearer tokens.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=HTTP_PORT,
    show_default=True,
    help="With --http: the port (0: any free one, printed on start).",
)
@click.option(
    "--sync-every",
    metavar="DURATION",
    help="Also run `memstore sync` this often (60s, 5m), keeping the store in step with its "
    "git remote while the server runs; failures are logged, never fatal.",
)
@click.option(
    "--scope",
    "scope_args",
    multiple=True,
    metavar="NAME[,NAME]",
    help="Over stdio: the agent's areas (repeat, or a comma list); its recall, session_start "
    "and check see only memories for one of them or for no scope.",
)
@click.pass_context
def serve(
    ctx: click.Context,
    grouped: bool,
    over_http: bool,
    host: str,
    port: int,
    sync_every: str | None,
    scope_args: tuple[str, ...],
) -> None:
    """Run the MCP server over stdio for one agent (its identity: --agent or $MEMSTORE_AGENT),
    or with --http over streamable HTTP for every agent holding a bearer token.

    Over stdio, an MCP client starts this command; stdout carries the protocol, logs go to
    stderr. Over HTTP, identity comes from each request's bearer token, never from --agent.

    \b
    Examples:
      MEMSTORE_AGENT=claude-code memstore --store /path/to/memory serve
      memstore --store /path/to/memory serve --http --port 8765
      MEMSTORE_AGENT=ci-agent memstore serve --sync-every 60s
      MEMSTORE_AGENT=deploy-bot memstore serve --scope deploy,infra
    """
    scopes = scope_list(scope_args)
    if scopes and over_http:
        raise click.UsageError(
            "--scope is one agent's: give it to that agent's stdio server, not to --http"
        )
    every = None
    if sync_every is not None:
        from memstore.errors import MemstoreError
        from memstore.workflow.ledger import lines as ledger

        try:
            every = ledger.parse_duration(sync_every)
        except MemstoreError:
            every = 0.0
        if not 1 <= every <= 86400:
            raise click.BadParameter(
                f"{sync_every!r} must be a duration from 1s to 1d, such as 60s or 5m",
                param_hint="--sync-every",
            )
    from memstore.faces.cli import stopping

    at_terminal = sys.stdin.isatty()  # before the relay puts a pipe on fd 0
    with stopping.stop_on_signals(relay=not over_http and _on_std_fds()) as stop:
        _serve(ctx, grouped, over_http, host, port, every, at_terminal, scopes)
    if stop.signal is not None:
        ctx.exit(stop.status)


def _serve(
    ctx: click.Context,
    grouped: bool,
    over_http: bool,
    host: str,
    port: int,
    every: float | None,
    at_terminal: bool,
    scopes: tuple[str, ...],
) -> None:
    wire = None
    if not over_http and not at_terminal:
        from memstore.faces import handshake

        # Before the store and the SDK load: a client's opening requests answered before
        # are answered at once (see handshake.py).
        wire = handshake.begin(config_of(ctx).store, grouped)
    store = store_of(ctx)
    if not over_http and store.identity:
        store.require_identity()  # a look-alike or a credential is refused before serving
    if over_http:
        from memstore.faces import listening

        keeper, sock = listening.bind(store, host, port)  # a refusal before the web stack loads
        from memstore.faces import web  # only `serve --http` pays for the web stack

        web.serve(store, keeper, host, sock, grouped=grouped, sync_every=every)
        return
    _announce(ctx, store, at_terminal)
    from memstore.faces import sdk

    if wire is not None and wire.closed.is_set() and not wire.asked:
        return  # the client left, all it asked answered: no SDK to load
    sdk.load_server()  # the SDK's server half, before anything imports all of it
    from memstore.faces.server import build_server  # only `serve` pays for importing the SDK

    build_server(store, grouped=grouped, sync_every=every, scopes=scopes).run("stdio")
    if wire is not None:
        wire.finish()


def _announce(ctx: click.Context, store: Store, at_terminal: bool) -> None:
    """Say on stderr, once, what the server serves and as whom; at a terminal, what it waits
    for. An identity taken from git's user.name is the person's own: a hint says how to give
    the agent one of its own (docs/clients.md)."""
    import logging

    from memstore.faces.cli.words import shown_path

    who = store.identity
    from_git = who is not None and config_of(ctx).agent is None
    if at_terminal:
        click.echo(
            f"memstore: serving {shown_path(store.root)} over MCP on stdin/stdout as "
            f"{who or '(no identity: writes are refused)'}"
            f"{' (git user.name)' if from_git else ''}; waiting for an MCP client (an agent's "
            "config starts this command). Press Ctrl-C to stop.",
            err=True,
        )
        # The server's own start line would say the same again.
        logging.getLogger("memstore.faces.server").addFilter(_NotServingLine())
    if from_git:
        click.echo(
            f"memstore: the agent acts as {who!r}, git's user.name, which names you: it could "
            "confirm your drafts and you its; give it a name of its own with MEMSTORE_AGENT=NAME "
            "(`make serve MEMSTORE_AGENT=NAME`) or --agent NAME",
            err=True,
        )


class _NotServingLine:
    """Drops the server's `memstore serving … as …` start line (the banner said it)."""

    def filter(self, record: object) -> bool:
        return not str(getattr(record, "msg", "")).startswith("memstore serving ")


def _on_std_fds() -> bool:
    """Whether stdin and stdout are fd 0 and 1 (not streams a test runner put in their place)."""
    try:
        return sys.stdin.fileno() == 0 and sys.stdout.fileno() == 1
    except (AttributeError, OSError, ValueError):
        return False


@click.command(name="sync")
@click.option("--remote", metavar="NAME", help="The git remote (default: origin).")
@click.option(
    "--branch", metavar="BRANCH", help="The remote's branch (default: the branch HEAD is on)."
)
@click.pass_context
@reports
def sync_(ctx: click.Context, remote: str | None, branch: str | None) -> Result:
    """Bring the store in step with its git remote: fetch, merge, push.

    Merges (never rebases), so every commit keeps its author; ledger and outcomes merge as
    unions; a memory changed on both sides keeps this clone's version as a draft with a note
    naming the other. Moves only store files: your own branch work and staged changes stay.

    \b
    Example:
      memstore sync
      memstore sync --remote origin --branch memory
    """
    from memstore.model.words import plural
    from memstore.workflow.ledger import sync

    result = sync.sync(store_of(ctx), remote, branch)
    line = (
        f"synced with {result.remote}/{result.branch}: {result.integrated}, "
        f"{plural(len(result.received), 'file')} received, "
        f"{'pushed' if result.pushed else 'nothing to push'}"
        + (f" (after {result.attempts} attempts)" if result.attempts > 1 else "")
    )
    notes = [
        f"conflict: {name} was changed on both sides; kept this clone's version as a draft "
        "with a note naming the other"
        for name in result.conflicts
    ]
    data = {
        **asdict(result),
        "received": list(result.received),
        "conflicts": list(result.conflicts),
    }
    return Result(data, line, notes=notes)


@click.group(name="token")
def token_group() -> None:
    """Bearer tokens for `serve --http`: one per agent or person, naming who acts.

    Only each token's SHA-256 is kept, in <store>/.memstore/tokens.json (git-ignored, mode
    0600); the token itself is printed once, by `token add`.

    \b
    Example:
      memstore token add deploy-bot
      memstore token add alice --human
    """


@token_group.command(name="add")
@click.argument("name")
@click.option("--human", is_flag=True, help="A person: the token can sign in to the console.")
@click.pass_context
@reports
def token_add(ctx: click.Context, name: str, human: bool) -> Result:
    """Make a token for identity NAME and print it once (store it in the client's config).

    \b
    Example:
      memstore token add qa-agent
    """
    from memstore.faces import bearer
    from memstore.storage import identities

    store = store_of(ctx)
    name = identities.admit(store.repo, name, store.secret_patterns)
    token = bearer.add(store.cache, name, human=human, timeout=store.lock_timeout)
    kind = "a person (console sign-in and MCP)" if human else "an agent (MCP only)"
    note = (
        f"added a token for {name}, {kind}; it is shown only now: put it in the client's "
        "Authorization header (memstore config CLIENT --http prints one)"
    )
    return Result({"name": name, "human": human, "token": token}, token, notes=[note])


@token_group.command(name="list")
@click.pass_context
@reports
def token_list(ctx: click.Context) -> Result:
    """List who has a token (never the tokens: only their hashes are kept).

    \b
    Example:
      memstore token list
    """
    from memstore.faces import bearer

    found = sorted(bearer.read(store_of(ctx).cache).values(), key=lambda t: t.name)
    return Result(
        [{"name": t.name, "human": t.human, "created": t.created} for t in found],
        [f"{t.name:<24} {'human' if t.human else 'agent':<6} added {t.created}" for t in found],
        notes=[] if found else ["no tokens: add one with memstore token add NAME"],
    )


@token_group.command(name="revoke")
@click.argument("name")
@click.pass_context
@reports
def token_revoke(ctx: click.Context, name: str) -> Result:
    """Revoke NAME's token: a running `serve --http` refuses it from its next request on.

    \b
    Example:
      memstore token revoke qa-agent
    """
    from memstore.faces import bearer

    store = store_of(ctx)
    bearer.revoke(store.cache, name, timeout=store.lock_timeout)
    return Result({"revoked": name}, f"revoked the token of {name}")


CLIENTS = ("claude-code", "claude-desktop", "cursor", "codex")


@click.command(name="config")
@click.argument("client", type=click.Choice(CLIENTS))
@click.option("--grouped", is_flag=True, help="Configure `serve --grouped`.")
@click.option(
    "--http",
    "over_http",
    is_flag=True,
    help="Configure the client for `serve --http` (claude-code, cursor, codex); its token is "
    "read from $MEMSTORE_TOKEN.",
)
@click.option(
    "--url",
    default=HTTP_URL,
    show_default=True,
    help="With --http: the server's MCP endpoint.",
)
@click.option(
    "--scope",
    "scope_args",
    multiple=True,
    metavar="NAME[,NAME]",
    help="Configure `serve --scope`: the agent's areas (repeat, or a comma list).",
)
@click.option(
    "--hooks",
    "hook_settings",
    is_flag=True,
    help="claude-code only: print the hook settings (.claude/settings.json) instead.",
)
@click.pass_context
def config_(
    ctx: click.Context,
    client: str,
    grouped: bool,
    over_http: bool,
    url: str,
    scope_args: tuple[str, ...],
    hook_settings: bool,
) -> None:
    """Print a ready-to-paste MCP configuration for CLIENT, with absolute paths to this store.

    The agent's identity is --agent, else the client's name; never your own $MEMSTORE_AGENT
    or git user.name, which name you: an agent acting as you could confirm your drafts and
    you its. A warning says when the two would match. With --http the identity is the
    token's, which the client reads from $MEMSTORE_TOKEN.

    \b
    Examples:
      memstore --store ~/work/memory --agent deploy-bot config claude-desktop
      memstore config claude-code --http --url http://build-box:8765/mcp
      memstore config claude-code --hooks    # merge into .claude/settings.json
    """
    from memstore.faces.clients import HTTP_CLIENTS, WHERE, agent_for, client_config, http_config
    from memstore.storage.store import Store

    config = config_of(ctx)
    if hook_settings:
        _print_hook_settings(ctx, client)
        return
    if over_http:
        if client not in HTTP_CLIENTS:
            raise click.UsageError(
                f"{client} starts stdio servers from its configuration file; use "
                f"`memstore config {client}` (stdio), or one of: {', '.join(HTTP_CLIENTS)}"
            )
        click.echo(f"# paste into {WHERE[client]}; set MEMSTORE_TOKEN to your token", err=True)
        click.echo(http_config(client, url))
        return
    store = Store(config.store)  # refuse to print a configuration for a directory that is no store
    flag: str | None = ctx.find_root().params.get("agent")
    agent, as_you = agent_for(client, flag, store)
    click.echo(f"# paste into {WHERE[client]}", err=True)
    if as_you:
        click.echo(
            f"# warning: the agent would act as '{agent}', which is you "
            "($MEMSTORE_AGENT or git user.name): it could confirm your drafts and you its; "
            "give it a name of its own with --agent NAME",
            err=True,
        )
    elif not flag:
        click.echo(f"# the agent acts as '{agent}' (choose another with --agent NAME)", err=True)
    scopes = scope_list(scope_args)
    click.echo(
        client_config(client, sys.executable, store.root, agent, grouped=grouped, scopes=scopes)
    )


def _print_hook_settings(ctx: click.Context, client: str) -> None:
    """`config claude-code --hooks`: the hook settings for this store and this install."""
    import shlex

    from memstore.faces.clients import hook_settings, server_command
    from memstore.storage.store import Store

    if client != "claude-code":
        raise click.UsageError(f"--hooks is for claude-code; {client} runs no memstore hooks")
    store = Store(config_of(ctx).store)  # refuse a directory that is no store
    flag: str | None = ctx.find_root().params.get("agent")
    command = " ".join(shlex.quote(a) for a in server_command(sys.executable, store.root)[:-1])
    click.echo("# merge into .claude/settings.json (or .claude/settings.local.json)", err=True)
    click.echo(hook_settings(command, flag or "claude-code"))


@click.command(name="install-hook")
@click.option("--force", is_flag=True, help="Replace a pre-commit hook memstore did not install.")
@click.pass_context
@reports
def install_hook(ctx: click.Context, force: bool) -> Result:
    """Install a git pre-commit hook that runs `memstore lint --staged` on this store (opt-in).

    The hook checks the store's staged files as the commit's author, so a hand edit that
    confirms your own memory, or writes someone else's name in confirmed_by, is refused before
    it is committed. It goes where git runs hooks from (core.hooksPath if set; one hook for
    every worktree), and checks only commits that touch the store. If memstore is later
    removed, the hook says so and refuses only commits that touch the store.

    \b
    Example:
      memstore --store memory install-hook
    """
    from pathlib import Path

    import memstore
    from memstore.git import precommit

    store = store_of(ctx)
    package = Path(memstore.__file__).parent
    hook = precommit.install(store.repo, store.root, sys.executable, package, force)
    return Result({"hook": str(hook), "installed": True}, f"installed {hook}")


@click.command(name="uninstall-hook")
@click.pass_context
@reports
def uninstall_hook(ctx: click.Context) -> Result:
    """Remove the pre-commit hook `memstore install-hook` installed; any other is left alone.

    \b
    Example:
      memstore --store memory uninstall-hook
    """
    from memstore.git import precommit

    hook, removed = precommit.uninstall_from(config_of(ctx).store)
    line = f"removed {hook}" if removed else f"no pre-commit hook at {hook}; nothing to remove"
    return Result({"hook": str(hook), "removed": removed}, line)


COMMANDS: tuple[click.Command, ...] = (
    serve,
    sync_,
    token_group,
    config_,
    install_hook,
    uninstall_hook,
)
"""The commands `main` registers from this module."""
