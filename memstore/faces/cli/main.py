"""The `memstore` command line: the group every command hangs from, its global options, and
the one wrapper that turns a `MemstoreError` into `Error: …`; the commands live in the group
modules beside this one."""

from __future__ import annotations

import atexit
import gc

# Before click and the core load (their modules make most of the objects a command creates):
# the collector runs rarely from here on, see `_short_lived`; `serve` puts it back as it was.
_COLLECTOR = gc.get_threshold()
gc.set_threshold(100_000, 50, 100)

import functools
import importlib
from typing import Any

import click

from memstore import __version__
from memstore.faces.cli import completion

WHERE: dict[str, str] = {
    **dict.fromkeys(
        ("init", "add", "show", "list", "edit", "pin", "history", "timeline", "mv", "retype"),
        "memories",
    ),
    **dict.fromkeys(("forget", "recover"), "memories"),
    **dict.fromkeys(("confirm", "deprecate", "review", "restore", "verify", "merge"), "review"),
    **dict.fromkeys(("lint", "doctor", "stats", "signers"), "care"),
    **dict.fromkeys(("search", "get", "reindex"), "search"),
    **dict.fromkeys(
        ("serve", "sync", "token", "config", "install-hook", "uninstall-hook"), "serving"
    ),
    **dict.fromkeys(("import", "export"), "porting"),
    "onboard": "onboarding",
    **dict.fromkeys(("correct", "check", "outcome", "brief", "close"), "workflow"),
    "ledger": "ledger",
}
"""Each command's name and the group module (in `memstore.faces.cli`) that defines it.

A command's module is loaded when the command is asked for, not at start: `memstore add`
loads `memories` alone, not the other seven modules' some fifty click objects (a tenth of
a new process's time). The modules load click and `common` alone; each command imports the
core it needs when it runs, so that `memstore --help` loads no core module either."""


class _Group(click.Group):
    """Loads a command's module when the command is asked for (see `WHERE`), and turns a
    `MemstoreError` into `Error: …` on stderr and exit 1."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *WHERE})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in WHERE:
            module = importlib.import_module(f"memstore.faces.cli.{WHERE[cmd_name]}")
            for command in module.COMMANDS:
                self.add_command(command)
            completion.attach(self)  # the new commands' arguments complete too
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        # Here rather than at the top: `memstore --help` ends before this, on click alone.
        from memstore.errors import Conflict, MemstoreError

        try:
            return super().invoke(ctx)
        except MemstoreError as e:
            if isinstance(e, Conflict) and e.detail:
                click.echo(e.detail.rstrip("\n"), err=True)
            raise click.ClickException(str(e) + e.cli_hint) from e


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--store",
    "store",
    metavar="DIR",
    help="The store directory. Default: $MEMSTORE_DIR, else ./memory.",
)
@click.option(
    "--agent",
    metavar="NAME",
    help="Who is acting (commit author, owner of new memories). Default: $MEMSTORE_AGENT, "
    "else git's user.name. Refused: empty, credential-like, or looking like another identity "
    "of the store.",
)
@click.version_option(__version__, prog_name="memstore")
@click.pass_context
def main(ctx: click.Context, store: str | None, agent: str | None) -> None:
    """Shared, reviewable memory for teams of AI agents.

    Each memory is one Markdown file in a git-tracked store; new memories are drafts until
    someone other than their author confirms them, and every change is a commit.

    \b
    Example:
      memstore init
      memstore --agent alice add use-zod --type decision \\
          --description "Validate API input with zod schemas" --body "Why: ..."
      memstore --agent bob confirm use-zod --reason "checked src/types.ts"
    """
    from memstore.config import resolve

    if ctx.invoked_subcommand == "serve":
        gc.set_threshold(*_COLLECTOR)  # a server lives long: the usual collector
        atexit.register(gc.freeze)  # ...but no last pass over its heap at exit (see below)
    else:
        _short_lived()
    ctx.ensure_object(dict)["config"] = resolve(store, agent)


@functools.cache
def _short_lived() -> None:
    """Fit the cyclic garbage collector to a command that runs for a fraction of a second.

    The modules a command loads make some 200,000 objects that live until it exits: the
    collector's passes over them, and its last pass at exit, cost a `memstore add` about a
    fifth of its CPU and free next to nothing. So it runs far less often (set when this
    module loads, before click does), and the objects left at exit are frozen (never
    examined again) rather than collected: every file memstore writes is closed and synced
    by then, and the process's end frees the rest.
    """
    gc.set_threshold(100_000, 50, 100)
    atexit.register(gc.freeze)


completion.attach(main)
