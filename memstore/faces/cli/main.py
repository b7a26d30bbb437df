"""The `memstore` command line: thin commands over `Store`."""

from __future__ import annotations

import gc

# Before click and the core load (their modules make most of the objects a command creates):
# the collector runs rarely from here on, see `_short_lived`; `serve` puts it back as it was.
_COLLECTOR = gc.get_threshold()
gc.set_threshold(100_000, 50, 100)

import functools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memstore import __version__
from memstore.errors import AlreadyExecuted, ClaimHeld, Conflict, MemstoreError

if TYPE_CHECKING:
    from memstore.config import Config
    from memstore.model.memory import Memory
    from memstore.search.index import Hit
    from memstore.storage.store import Store
    from memstore.workflow.care.lint import Problem
    from memstore.workflow.care.steward import Figures, Report
    from memstore.workflow.ledger import lines as ledger

# Each command imports the core it needs when it runs: `memstore --help` loads click alone.
# The choices below are the core's (test_cli.py keeps them equal), spelled out for the same
# reason.
SEVERITIES = ("p0", "p1", "p2", "p3")
"""`workflow.SEVERITIES`."""
RULE_TYPES = ("correction", "warning")
"""`workflow.RULE_TYPES`."""
OUTCOMES = ("heeded", "recurred")
"""The values of `stats.Outcome`."""
MIN_BUDGET = 100
"""`briefing.MIN_BUDGET`."""
DEFAULT_BUDGET = 1500
"""`briefing.DEFAULT_BUDGET`."""


class _Group(click.Group):
    """Turns a `MemstoreError` into `Error: …` on stderr and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemstoreError as e:
            if isinstance(e, Conflict) and e.detail:
                click.echo(e.detail.rstrip("\n"), err=True)
            raise click.ClickException(str(e) + e.cli_hint) from e


def _config(ctx: click.Context) -> Config:
    config: Config = ctx.obj["config"]
    return config


def _stdin_text(only_if_piped: bool) -> str:
    """The text on stdin; empty when `only_if_piped` and stdin is a terminal or closed."""
    stream = sys.stdin
    if stream is None or (only_if_piped and stream.isatty()):  # pyright: ignore[reportUnnecessaryComparison]
        return ""
    return stream.read()


def _store(ctx: click.Context) -> Store:
    from memstore.storage.store import Store

    config = _config(ctx)
    return Store(config.store, config.agent, config.lock_timeout)


def asdict(value: Any) -> dict[str, Any]:
    """`dataclasses.asdict`, imported by the commands that print JSON."""
    import dataclasses

    return dataclasses.asdict(value)


def _split(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _memory_json(memory: Memory) -> dict[str, Any]:
    data = asdict(memory)
    for key, value in list(data.items()):
        if isinstance(value, tuple):
            data[key] = list(value)  # pyright: ignore[reportUnknownArgumentType]
    return data


def _echo_json(data: object) -> None:
    import json

    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _summary(memory: Memory) -> str:
    return f"{memory.type}/{memory.name} [{memory.status}]"


# Options several commands share.
_allow_secret = click.option(
    "--allow-secret",
    is_flag=True,
    help="Save text that looks like a credential (a key, token or password) anyway.",
)
_expect_version = click.option(
    "--expect-version",
    metavar="VERSION",
    help="Refuse if the memory is no longer at this version (from `show`).",
)


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
    "else git's user.name.",
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
    import atexit

    gc.set_threshold(100_000, 50, 100)
    atexit.register(gc.freeze)


@main.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option(
    "--git-root",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Outside any git repository: run `git init` here (the project folder above the "
    "store) rather than in the store itself.",
)
@click.pass_context
def init(ctx: click.Context, directory: str | None, git_root: str | None) -> None:
    """Make DIRECTORY a store (default: the --store directory, else ./memory).

    Inside a git repository the store lives in it. Outside one, `git init` runs in the store
    folder, or with --git-root in the project folder above it, so that the store and the
    project's code share one repository. Writes the store's .gitignore and .gitattributes and
    commits them. Safe to run twice.

    \b
    Example:
      memstore init memory
      memstore init memory --git-root .    # a new project: one repository for code and store
    """
    from memstore.git import history
    from memstore.storage.files import shown
    from memstore.storage.store import Store

    config = _config(ctx)
    root = Path(directory).absolute() if directory else config.store
    new_repo = history.find_repo(root) is None
    store = Store.init(root, config.agent, Path(git_root) if git_root else None)
    click.echo(f"store ready at {store.root} (git repository {store.repo.top})")
    if new_repo and git_root is None:
        click.echo(
            f"note: {shown(root)} was in no git repository, so it is now one of its own. "
            "If it belongs to a project you will put under git later, that project would hold "
            f"it as an embedded repository: instead `rm -rf {shown(root / '.git')}` and run "
            "`memstore init --git-root PROJECT_FOLDER`, or `git init` the project first",
            err=True,
        )
    if store.identity is None:
        click.echo(
            "note: no identity is set; writes will need --agent NAME, MEMSTORE_AGENT or git's "
            "user.name",
            err=True,
        )


@main.command()
@click.argument("name")
@click.option("--type", "type_", required=True, metavar="TYPE", help="decision, fact, runbook, …")
@click.option("--description", "-d", required=True, help="One line, at most 200 characters.")
@click.option("--tags", metavar="A,B", help="Comma-separated tags.")
@click.option("--links", metavar="X,Y", help="Comma-separated names of related memories.")
@click.option("--body", help="Markdown body. Without it, the body is read from stdin if piped.")
@click.option(
    "--files",
    "files",
    multiple=True,
    metavar="PATH",
    help="Repository path or glob it is about (repeat, or A,B; quote globs).",
)
@click.option("--expires", metavar="WHEN", help="Leave recall after: 24h, 7d, 2w or 2026-12-31.")
@click.option("--importance", type=click.Choice(["high", "normal", "low"]))
@click.option("--json", "as_json", is_flag=True, help="Print the memory and similar ones as JSON.")
@_allow_secret
@click.pass_context
def add(
    ctx: click.Context,
    name: str,
    type_: str,
    description: str,
    tags: str | None,
    links: str | None,
    body: str | None,
    files: tuple[str, ...],
    expires: str | None,
    importance: str | None,
    as_json: bool,
    allow_secret: bool,
) -> None:
    """Save a new memory NAME as a draft owned by you, and commit it.

    NAME is a kebab-case slug (a-z, 0-9, '-'), unique in the store. Links must name existing
    memories. A `working` memory expires after the store's `working_expires` (default 30d)
    unless --expires says otherwise. Existing memories much like this one are named after it
    is saved (a hint: the memory is saved all the same).

    \b
    Example:
      memstore add use-zod --type decision --tags api,validation \\
          --files 'src/api/*.py' --description "Validate API input with zod schemas" <<'EOF'
      ## Why
      Hand-written checks drifted from the types.
      EOF
    """
    from memstore.workflow.care import steward

    if body is None:
        body = _stdin_text(only_if_piped=True)
    store = _store(ctx)
    extra: dict[str, Any] = {
        "files": [f for value in files for f in _split(value) or ()] or None,
        "expires": expires,
        "importance": importance,
    }
    memory = store.add(
        name,
        type=type_,
        description=description,
        body=body,
        tags=_split(tags) or (),
        links=_split(links) or (),
        extra={k: v for k, v in extra.items() if v is not None},
        allow_secret=allow_secret,
    )
    close = steward.similar(store, memory.name, memory.description)
    if as_json:
        _echo_json({"memory": _memory_json(memory), "similar": [asdict(c) for c in close]})
        return
    click.echo(f"added {_summary(memory)}")
    for c in close:
        click.echo(
            f"similar: {c.name} ({c.type}, {c.status}, {c.similarity:.0%} alike) — {c.description}",
            err=True,
        )


@main.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the memory as JSON.")
@click.pass_context
def show(ctx: click.Context, name: str, as_json: bool) -> None:
    """Print memory NAME: its fields, status trail and body.

    \b
    Example:
      memstore show use-zod --json
    """
    current = _store(ctx).read(name)
    if as_json:
        _echo_json({**_memory_json(current.memory), "version": current.version})
        return
    m = current.memory
    click.echo(f"{m.name} — {m.description}")
    click.echo(
        f"type: {m.type}   status: {m.status}   owner: {m.owner}   version: {current.version}"
    )
    click.echo(f"created: {m.created}   updated: {m.updated}")
    if m.tags:
        click.echo(f"tags: {', '.join(m.tags)}")
    if m.links:
        click.echo(f"links: {', '.join(m.links)}")
    if m.confirmed_by:
        click.echo(f"confirmed by {m.confirmed_by} at {m.confirmed_at}: {m.confirmed_reason}")
    if m.deprecated_by:
        click.echo(f"deprecated by {m.deprecated_by} at {m.deprecated_at}: {m.deprecated_reason}")
    if m.superseded_by:
        click.echo(f"superseded by: {m.superseded_by}")
    if m.supersedes:
        click.echo(f"supersedes: {', '.join(m.supersedes)}")
    if m.body:
        click.echo("")
        click.echo(m.body)


@main.command(name="list")
@click.option("--type", "type_", metavar="TYPE", help="Only this type.")
@click.option("--status", type=click.Choice(["draft", "confirmed", "deprecated"]))
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="Has this tag (repeat: AND).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.pass_context
def list_(
    ctx: click.Context, type_: str | None, status: str | None, tags: tuple[str, ...], as_json: bool
) -> None:
    """List memories, newest update first: one line each with type, status and description.

    \b
    Example:
      memstore list --status draft --tag api
    """
    found = _store(ctx).list(type=type_, status=status, tags=tags)
    if as_json:
        _echo_json([_memory_json(m) for m in found])
        return
    # Each column as wide as its longest value shown, so a long name never shifts a row (#17).
    name_w = max((len(m.name) for m in found), default=0)
    type_w = max((len(m.type) for m in found), default=0)
    status_w = max((len(m.status) for m in found), default=0)
    for m in found:
        click.echo(
            f"{m.name:{name_w}} {m.type:{type_w}} {m.status:{status_w}} {m.updated[:10]}  "
            f"{m.description}"
        )
    if not found:
        click.echo("no memories match", err=True)


@main.command()
@click.argument("name")
@click.option("--description", "-d", help="New one-line description.")
@click.option("--body", help="New Markdown body ('-' reads it from stdin).")
@click.option("--tags", metavar="A,B", help="New comma-separated tags (replaces the old ones).")
@click.option("--links", metavar="X,Y", help="New comma-separated links (replaces the old ones).")
@_expect_version
@_allow_secret
@click.option(
    "--force", is_flag=True, help="Edit a deprecated memory as it is (it stays deprecated)."
)
@click.pass_context
def edit(
    ctx: click.Context,
    name: str,
    description: str | None,
    body: str | None,
    tags: str | None,
    links: str | None,
    expect_version: str | None,
    allow_secret: bool,
    force: bool,
) -> None:
    """Change a memory's description, body, tags or links, and commit it.

    Changing the description or body of a confirmed memory sends it back to draft, so someone
    other than its owner must confirm it again; tag and link edits keep its status.

    With --expect-version (the version `show` printed), the edit is refused with a diff if the
    memory changed since you read it. Without it, the fields you give replace the current ones
    (the others keep whatever is on disk): fine for a person at a terminal, while agents and
    scripts should pass the version.

    A deprecated memory is refused: restore it first, or pass --force to edit it as it is.

    \b
    Example:
      memstore edit use-zod --tags api,validation,typescript
      memstore edit use-zod --expect-version 3f2a9c1b7d4e --body - < new-body.md
    """
    if body == "-":
        body = _stdin_text(only_if_piped=False)
    if description is None and body is None and tags is None and links is None:
        raise click.UsageError("nothing to change: give --description, --body, --tags or --links")
    memory = _store(ctx).edit(
        name,
        description=description,
        body=body,
        tags=_split(tags),
        links=_split(links),
        expected_version=expect_version,
        allow_secret=allow_secret,
        force=force,
    )
    click.echo(f"edited {_summary(memory)}")


@main.command()
@click.argument("name")
@click.option("--reason", "-r", required=True, help="What you checked (one line).")
@_expect_version
@_allow_secret
@click.pass_context
def confirm(
    ctx: click.Context, name: str, reason: str, expect_version: str | None, allow_secret: bool
) -> None:
    """Confirm draft NAME. You cannot confirm a memory you own.

    Pass --expect-version with the version you reviewed, so a change made since is not
    confirmed unseen.

    \b
    Example:
      memstore --agent bob confirm use-zod --reason "verified in src/types.ts"
    """
    memory = _store(ctx).confirm(
        name, reason, expected_version=expect_version, allow_secret=allow_secret
    )
    click.echo(f"confirmed {_summary(memory)}")


@main.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--reason", "-r", required=True, help="Why it is wrong or stale (one line).")
@click.option("--superseded-by", metavar="NAME", help="The memory that replaces it (one NAME).")
@click.option("--tag", metavar="TAG", help="Every memory with this tag.")
@click.option("--type", "type_", metavar="TYPE", help="Every memory of this type.")
@click.option(
    "--status",
    type=click.Choice(["draft", "confirmed", "unverified"]),
    help="Every memory with this status.",
)
@click.option("--older-than", metavar="WHEN", help="Last updated before WHEN: 30d, a date.")
@click.option("--dry-run", is_flag=True, help="List what would be deprecated; change nothing.")
@_expect_version
@_allow_secret
@click.option("--json", "as_json", is_flag=True, help="Print what was deprecated and refused.")
@click.pass_context
def deprecate(
    ctx: click.Context,
    names: tuple[str, ...],
    reason: str,
    superseded_by: str | None,
    tag: str | None,
    type_: str | None,
    status: str | None,
    older_than: str | None,
    dry_run: bool,
    expect_version: str | None,
    allow_secret: bool,
    as_json: bool,
) -> None:
    """Deprecate NAME, keeping the file and the reason; optionally name its successor.

    Several NAMEs, or a selection (--tag, --type, --status, --older-than: every filter
    given), are deprecated in one commit; a memory that cannot be (already deprecated,
    uncommitted hand edits) is reported and the others still go. --dry-run shows the batch.

    \b
    Example:
      memstore deprecate use-joi --reason "replaced by zod" --superseded-by use-zod
      memstore deprecate --older-than 30d --status draft --reason "stale drafts" --dry-run
    """
    selecting = any(v is not None for v in (tag, type_, status, older_than))
    if len(names) == 1 and not selecting and not dry_run:
        memory = _store(ctx).deprecate(
            names[0],
            reason,
            superseded_by,
            expected_version=expect_version,
            allow_secret=allow_secret,
        )
        if as_json:
            _echo_json(_memory_json(memory))
            return
        click.echo(f"deprecated {_summary(memory)}")
        return
    if names and selecting:
        raise click.UsageError("give NAMEs or a selection (--tag, --type, --status, --older-than)")
    if superseded_by or expect_version:
        raise click.UsageError("--superseded-by and --expect-version take a single NAME")
    from memstore.workflow.care import tidy

    store = _store(ctx)
    chosen = list(names) or [
        m.name
        for m in tidy.select(store, tag=tag, type=type_, status=status, older_than=older_than)
    ]
    batch = tidy.deprecate(store, chosen, reason, dry_run=dry_run, allow_secret=allow_secret)
    if as_json:
        _echo_json(
            {
                "dry_run": dry_run,
                "deprecated": [m.name for m in batch.deprecated],
                "refused": [{"name": n, "why": why} for n, why in batch.refused],
            }
        )
    else:
        verb = "would deprecate" if dry_run else "deprecated"
        for memory in batch.deprecated:
            click.echo(f"{verb} {memory.type}/{memory.name}")
        for name, why in batch.refused:
            click.echo(f"refused {name}: {why}", err=True)
        if not chosen:
            click.echo("no memory matches", err=True)
        elif not dry_run and batch.deprecated:
            click.echo(f"{len(batch.deprecated)} deprecated in one commit", err=True)
    if batch.refused and not batch.deprecated:
        ctx.exit(1)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the queue as JSON (for agents).")
@click.option(
    "--interactive/--list",
    "-i",
    default=None,
    help="Ask about each memory (the default at a terminal), or only list them.",
)
@click.pass_context
def review(ctx: click.Context, as_json: bool, interactive: bool | None) -> None:
    """The drafts awaiting your review (never your own), most relevant first.

    Rules come first (they act already), then the memories most linked to, then those
    waiting longest. At a terminal, each is shown and you confirm, deprecate or skip it
    (the version you saw is the one confirmed: a change made meanwhile is refused).

    \b
    Example:
      memstore --agent bob review
      memstore review --json        # for an agent: then memory_get and memory_promote
    """
    import sys

    from memstore.errors import MemstoreError
    from memstore.workflow.care import tidy

    store = _store(ctx)
    queue = tidy.review_queue(store)
    if as_json:
        _echo_json([_memory_json(m) for m in queue])
        return
    if not queue:
        click.echo("nothing awaits your review", err=True)
        return
    if interactive is None:
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if not interactive:
        for m in queue:
            click.echo(
                f"{m.type}/{m.name} [{m.status}] by {m.owner}, {m.updated[:10]}: {m.description}"
            )
        return
    store.require_identity()
    for at, memory in enumerate(queue, 1):
        try:
            current = store.read(memory.name)
        except MemstoreError as e:
            click.echo(f"skipped {memory.name}: {e}", err=True)
            continue
        m = current.memory
        click.echo(
            f"\n[{at}/{len(queue)}] {m.type}/{m.name} [{m.status}] by {m.owner}, "
            f"updated {m.updated[:10]}"
        )
        click.echo(f"  {m.description}")
        for line in m.body.strip().splitlines()[:20]:
            click.echo(f"  | {line}")
        choice = click.prompt(
            "[c]onfirm, [d]eprecate, [s]kip, [q]uit",
            type=click.Choice(["c", "d", "s", "q"]),
            show_choices=False,
            default="s",
        )
        if choice == "q":
            break
        if choice == "s":
            continue
        reason = click.prompt("reason (one line)")
        try:
            if choice == "c":
                done = store.confirm(m.name, reason, expected_version=current.version)
            else:
                done = store.deprecate(m.name, reason, expected_version=current.version)
        except MemstoreError as e:
            click.echo(f"Error: {e}{e.cli_hint}", err=True)
            continue
        click.echo(f"{'confirmed' if choice == 'c' else 'deprecated'} {_summary(done)}")


@main.command()
@click.argument("name")
@click.option("--reason", "-r", required=True, help="Why it applies again (one line).")
@_expect_version
@_allow_secret
@click.pass_context
def restore(
    ctx: click.Context, name: str, reason: str, expect_version: str | None, allow_secret: bool
) -> None:
    """Bring deprecated NAME back as a draft (someone else must confirm it again).

    \b
    Example:
      memstore restore use-joi --reason "zod migration reverted"
    """
    memory = _store(ctx).restore(
        name, reason, expected_version=expect_version, allow_secret=allow_secret
    )
    click.echo(f"restored {_summary(memory)}")


@main.command()
@click.argument("name")
@click.option("--reason", "-r", required=True, help="What you checked (one line).")
@_expect_version
@click.option("--json", "as_json", is_flag=True, help="Print the memory as JSON.")
@_allow_secret
@click.pass_context
def verify(
    ctx: click.Context,
    name: str,
    reason: str,
    expect_version: str | None,
    as_json: bool,
    allow_secret: bool,
) -> None:
    """Record that confirmed NAME is still true, without changing its content.

    Writes verified_by, verified_at and verified_reason, and commits them. You cannot verify a
    memory you created. Drift and staleness are measured from the last confirmation or
    verification.

    \b
    Example:
      memstore --agent bob verify use-zod --reason "re-read src/api/validate.py, still so"
    """
    memory = _store(ctx).verify(
        name, reason, expected_version=expect_version, allow_secret=allow_secret
    )
    if as_json:
        _echo_json(_memory_json(memory))
        return
    click.echo(f"verified {_summary(memory)}")


@main.command()
@click.argument("name")
@click.option("--unpin", is_flag=True, help="Remove the pin.")
@click.option("--json", "as_json", is_flag=True, help="Print the memory as JSON.")
@click.pass_context
def pin(ctx: click.Context, name: str, unpin: bool, as_json: bool) -> None:
    """Pin NAME: it ranks higher in search and survives briefing budgets.

    Pinning is not content: a confirmed memory stays confirmed.

    \b
    Example:
      memstore pin deploy-runbook
      memstore pin deploy-runbook --unpin
    """
    memory = _store(ctx).pin(name, not unpin)
    if as_json:
        _echo_json(_memory_json(memory))
        return
    click.echo(f"{'unpinned' if unpin else 'pinned'} {_summary(memory)}")


@main.command(name="history")
@click.argument("name")
@click.pass_context
def history_(ctx: click.Context, name: str) -> None:
    """Show the git history of memory NAME, newest first: when, who, what and why.

    \b
    Example:
      memstore history use-zod
    """
    revisions = _store(ctx).history(name)
    if not revisions:
        click.echo(f"'{name}' has no commits yet", err=True)
    for rev in revisions:
        subject, _, rest = rev.message.partition("\n")
        click.echo(
            f"{rev.date[:16].replace('T', ' ')}  {rev.commit[:10]}  {rev.author:16} {subject}"
        )
        for line in rest.strip().splitlines():
            click.echo(f"{'':46}{line}")


@main.command()
@click.argument("name", required=False)
@click.option("--tag", metavar="TAG", help="Only memories with this tag.")
@click.option("--type", "type_", metavar="TYPE", help="Only memories of this type.")
@click.option("--since", metavar="WHEN", help="Only from WHEN on: 24h, 7d, a date, a time.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of events.")
@click.pass_context
def timeline(
    ctx: click.Context,
    name: str | None,
    tag: str | None,
    type_: str | None,
    since: str | None,
    as_json: bool,
) -> None:
    """What happened to the store's knowledge, oldest first, read from git.

    Creations, edits, confirmations, deprecations, supersessions, restores, renames, retypes
    and removals: when, the commit, who made it, and why (the reason in the status trail,
    else the commit's subject). With NAME, that memory under every name it had. A
    confirmation the history does not back says so.

    \b
    Example:
      memstore timeline hpa-disabled-on-api
      memstore timeline --tag k8s --since 7d --json
    """
    from memstore.workflow.care import timeline as history_of

    events = history_of.timeline(_store(ctx), name, tag=tag, type=type_, since=since)
    if as_json:
        _echo_json([asdict(e) for e in events])
        return
    if not events:
        click.echo("nothing happened yet" if name is None else f"no history for '{name}'", err=True)
    who = max((len(e.who) for e in events), default=0)
    for e in events:
        detail = f"  ({e.detail})" if e.detail else ""
        click.echo(
            f"{e.at[:16].replace('T', ' ')}  {e.commit[:10]}  {e.who:{who}}  {e.kind:10}  "
            f"{e.type}/{e.name}  {e.why}{detail}"
        )


@main.command("mv")
@click.argument("name")
@click.argument("new_name")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the renamed memory and who pointed at it."
)
@click.pass_context
def mv(ctx: click.Context, name: str, new_name: str, as_json: bool) -> None:
    """Rename memory NAME to NEW_NAME in one commit, rewriting every link to it.

    `links`, `supersedes`, `superseded_by` and `[[NAME]]` in bodies are pointed at NEW_NAME
    in the same commit. The memory keeps its owner and its confirmation, and
    `git log --follow` shows its history across the rename.

    \b
    Example:
      memstore mv hpa-notes hpa-disabled-on-api
    """
    memory, pointing = _store(ctx).rename(name, new_name)
    if as_json:
        _echo_json({"memory": _memory_json(memory), "rewritten": pointing})
        return
    click.echo(f"renamed {name} to {_summary(memory)}")
    if pointing:
        click.echo(f"links rewritten in: {', '.join(pointing)}")


@main.command()
@click.argument("name")
@click.argument("type_", metavar="TYPE")
@click.option("--json", "as_json", is_flag=True, help="Print the memory as JSON.")
@click.pass_context
def retype(ctx: click.Context, name: str, type_: str, as_json: bool) -> None:
    """Make memory NAME a TYPE (it moves to that folder) in one commit.

    The type is part of what a reviewer confirmed: a confirmed memory goes back to draft.

    \b
    Example:
      memstore retype skip-staging-tests warning
    """
    memory = _store(ctx).retype(name, type_)
    if as_json:
        _echo_json(_memory_json(memory))
        return
    click.echo(f"retyped {_summary(memory)}")


@main.command()
@click.argument("name")
@click.option("--reason", "-r", required=True, help="Why it goes (one line, kept in the commit).")
@_allow_secret
@click.option("--json", "as_json", is_flag=True, help="Print the removed memory as JSON.")
@click.pass_context
def forget(ctx: click.Context, name: str, reason: str, allow_secret: bool, as_json: bool) -> None:
    """Remove memory NAME in one commit that says why. Its history stays in git.

    To deprecate is usually better: the file and why it was wrong stay visible. Forget what
    should not be there at all. If it held a secret, the secret is still in the history:
    rotate the secret, then purge it (see docs/cli.md, "Purging a secret").

    \b
    Example:
      memstore forget scratch-notes --reason "test note, never knowledge"
    """
    memory = _store(ctx).forget(name, reason, allow_secret=allow_secret)
    if as_json:
        _echo_json(_memory_json(memory))
        return
    click.echo(f"forgot {memory.type}/{memory.name} (its history stays in git)")


@main.command()
@click.option(
    "--staged",
    is_flag=True,
    help="Check the store's files as git's index holds them (what the next commit will hold), "
    "not the working tree: what the pre-commit hook runs.",
)
@click.pass_context
def lint(ctx: click.Context, staged: bool) -> None:
    """Check every file in the store and how each confirmation was committed.

    Reports bad names, unknown types or statuses, duplicates, over-long descriptions, YAML
    errors (with the line), self-approvals and confirmations committed by someone other than
    the identity they name. Exits 1 if anything is wrong, so hooks and CI can enforce it.

    \b
    Example:
      memstore --store memory lint
      memstore --store memory --agent alice lint --staged   # before `git commit`
    """
    from memstore.workflow.care.lint import lint_store

    store = _store(ctx)
    problems = lint_store(store, staged=staged)
    for problem in problems:
        click.echo(_where(store, problem))
    if problems:
        files = len({p.path for p in problems})
        raise click.ClickException(f"{len(problems)} problem(s) in {files} file(s)")
    if staged:
        click.echo("ok: the staged store files have no problems")
        return
    count = sum(1 for _ in store.memories())
    click.echo(f"ok: {count} memories, no problems")


def _where(store: Store, problem: Problem) -> str:
    """A lint problem with its file as the user would type it from where they stand."""
    from memstore.storage.files import shown

    path = problem.path if problem.path.startswith("/") else shown(store.root / problem.path)
    where = f"{path}:{problem.line}" if problem.line else path
    return f"{where}: {problem.message}"


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@click.option("--no-lint", is_flag=True, help="Skip lint (it replays the whole history).")
@click.pass_context
def doctor(ctx: click.Context, as_json: bool, no_lint: bool) -> None:
    """Look the store over: duplicates, broken links, expired, stale and drifted memories,
    lint problems and the search index's health, on one screen.

    It starts with the set-up: who would act and where that identity came from, the store,
    repository and branch, whether the pre-commit hook checks this store, and the drafts
    awaiting you. Stale: confirmed and not verified within `stale_after` (memstore.yaml,
    default 90 days). Drifted: confirmed, and a file it names changed in git since. Exits 1
    only on lint problems; the rest are for someone to tidy.

    \b
    Example:
      memstore doctor
      memstore doctor --json | jq '.drifted'
    """
    from memstore.workflow.care import orientation, steward

    store = _store(ctx)
    setup, report = steward.checkup(
        store, ctx.find_root().params.get("agent"), lint=not no_lint, embedded=_embedded
    )
    if as_json:
        _echo_json({"setup": asdict(setup), **asdict(report), "ok": report.ok})
    else:
        for line in [*orientation.lines(setup, index=False), *_doctor_lines(report)]:
            click.echo(line)
    if not report.ok:
        ctx.exit(1)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


def _figure_lines(f: Figures) -> list[str]:
    age = (
        f" (median age {f.draft_median_age_days} days)"
        if f.draft_median_age_days is not None
        else ""
    )
    latency = (
        f"{f.confirmation_latency_median_days} days (median, creation to confirmation)"
        if f.confirmation_latency_median_days is not None
        else "no confirmations yet"
    )
    share = (
        f"{f.recalls_with_confirmed / f.recalls:.0%} of {f.recalls}"
        if f.recalls
        else "none counted"
    )
    return [
        f"memories: {f.memories}",
        f"  by type: {_counts(f.by_type)}",
        f"  by status: {_counts(f.by_status)}",
        f"  by owner: {_counts(f.by_owner)}",
        f"drafts awaiting review: {f.drafts_awaiting_review}{age}",
        f"confirmation latency: {latency}",
        f"recalls that returned a confirmed memory: {share}",
    ]


DOCTOR_SHOWN = 5
"""How many of each kind `doctor` names before `… and N more` (all with --json)."""


def _doctor_lines(report: Report) -> list[str]:
    lines = [f"{report.memories} memories; index: {report.index}"]

    def section(title: str, items: list[str], advice: str) -> None:
        lines.append(f"{title}: {len(items) or 'none'}" + (f"  ({advice})" if items else ""))
        lines.extend(f"  {item}" for item in items[:DOCTOR_SHOWN])
        if len(items) > DOCTOR_SHOWN:
            lines.append(f"  … and {len(items) - DOCTOR_SHOWN} more (--json lists all)")

    section(
        "duplicate clusters",
        [", ".join(c) for c in report.duplicates],
        "deprecate all but one with --superseded-by",
    )
    for title, items, advice in (
        ("broken links", report.broken_links, "save the missing memory or fix the link"),
        ("expired", report.expired, "deprecate them, or edit expires"),
        ("stale", report.stale, "`memstore verify NAME --reason R` if still true"),
        ("drifted", report.drifted, "re-read the files, then verify or edit"),
    ):
        section(title, [f"{f.name}: {f.detail}" for f in items], advice)
    section("lint problems", report.lint, "`memstore lint` for details")
    lines.append("ok" if report.ok else "FAIL: lint problems")
    return lines


@main.command(name="install-hook")
@click.option("--force", is_flag=True, help="Replace a pre-commit hook memstore did not install.")
@click.pass_context
def install_hook(ctx: click.Context, force: bool) -> None:
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
    import memstore
    from memstore.git import precommit

    store = _store(ctx)
    package = Path(memstore.__file__).parent
    hook = precommit.install(store.repo, store.root, sys.executable, package, force)
    click.echo(f"installed {hook}")


@main.command(name="uninstall-hook")
@click.pass_context
def uninstall_hook(ctx: click.Context) -> None:
    """Remove the pre-commit hook `memstore install-hook` installed; any other is left alone.

    \b
    Example:
      memstore --store memory uninstall-hook
    """
    from memstore.git import history, precommit

    # The store may be gone already: the repository around where it was is enough.
    where = _config(ctx).store
    while not where.exists() and where != where.parent:
        where = where.parent
    repo = history.find_repo(where)
    if repo is None:
        raise click.ClickException(
            f"{where} is not in a git repository; there is no hook to remove"
        )
    hook = precommit.uninstall(repo)
    if hook is None:
        click.echo(f"no pre-commit hook at {precommit.hook_path(repo)}; nothing to remove")
    else:
        click.echo(f"removed {hook}")


# -- server --


@main.command()
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
    default="127.0.0.1",
    show_default=True,
    help="With --http: the address to listen on. Anything but loopback needs tokens.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="With --http: the port (0: any free one, printed on start).",
)
@click.option(
    "--sync-every",
    metavar="DURATION",
    help="Also run `memstore sync` this often (60s, 5m), keeping the store in step with its "
    "git remote while the server runs; failures are logged, never fatal.",
)
@click.pass_context
def serve(
    ctx: click.Context,
    grouped: bool,
    over_http: bool,
    host: str,
    port: int,
    sync_every: str | None,
) -> None:
    """Run the MCP server over stdio for one agent (its identity: --agent or $MEMSTORE_AGENT),
    or with --http over streamable HTTP for every agent holding a token.

    Over stdio, an MCP client starts this command; stdout carries the protocol, logs go to
    stderr. Over HTTP, identity comes from each request's bearer token, never from --agent.

    \b
    Examples:
      MEMSTORE_AGENT=claude-code memstore --store /path/to/memory serve
      memstore --store /path/to/memory serve --http --port 8765
      MEMSTORE_AGENT=ci-agent memstore serve --sync-every 60s
    """
    every = None
    if sync_every is not None:
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
    wire = None
    if not over_http and not sys.stdin.isatty():
        from memstore.faces import handshake

        # Before the store and the SDK load: a client's opening requests answered before
        # are answered at once (see handshake.py).
        wire = handshake.begin(_config(ctx).store, grouped)
    store = _store(ctx)
    if over_http:
        from memstore.faces import web  # only `serve --http` pays for the web stack

        web.serve(store, host, port, grouped=grouped, sync_every=every)
        return
    if sys.stdin.isatty():  # a person typed the command: say what it waits for
        click.echo(
            f"memstore: serving {store.root} over MCP on stdin/stdout as "
            f"{store.identity or '(no identity: writes are refused)'}; waiting for an MCP "
            "client (an agent's config starts this command). Press Ctrl-C to stop.",
            err=True,
        )
    from memstore.faces import sdk

    if wire is not None and wire.closed.is_set() and not wire.asked:
        return  # the client left, all it asked answered: no SDK to load
    sdk.load_server()  # the SDK's server half, before anything imports all of it
    from memstore.faces.server import build_server  # only `serve` pays for importing the SDK

    build_server(store, grouped=grouped, sync_every=every).run("stdio")
    if wire is not None:
        wire.finish()


@main.command(name="sync")
@click.option("--remote", metavar="NAME", help="The git remote (default: origin).")
@click.option(
    "--branch", metavar="BRANCH", help="The remote's branch (default: the branch HEAD is on)."
)
@click.pass_context
def sync_(ctx: click.Context, remote: str | None, branch: str | None) -> None:
    """Bring the store in step with its git remote: fetch, merge, push.

    Merges (never rebases), so every commit keeps its author; ledger and outcomes merge as
    unions; a memory changed on both sides keeps this clone's version as a draft with a note
    naming the other. Moves only store files: your own branch work and staged changes stay.

    \b
    Example:
      memstore sync
      memstore sync --remote origin --branch memory
    """
    from memstore.workflow.ledger import sync

    result = sync.sync(_store(ctx), remote, branch)
    click.echo(
        f"synced with {result.remote}/{result.branch}: {result.integrated}, "
        f"{len(result.received)} file(s) received, "
        f"{'pushed' if result.pushed else 'nothing to push'}"
        + (f" (after {result.attempts} attempts)" if result.attempts > 1 else "")
    )
    for name in result.conflicts:
        click.echo(
            f"conflict: {name} was changed on both sides; kept this clone's version as a draft "
            "with a note naming the other",
            err=True,
        )


# -- tokens --


@main.group(name="token")
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
def token_add(ctx: click.Context, name: str, human: bool) -> None:
    """Make a token for identity NAME and print it once (store it in the client's config).

    \b
    Example:
      memstore token add qa-agent
    """
    from memstore.faces import bearer as tokens

    store = _store(ctx)
    token = tokens.add(store.cache, name, human=human, timeout=store.lock_timeout)
    click.echo(token)
    kind = "a person (console sign-in and MCP)" if human else "an agent (MCP only)"
    click.echo(
        f"added a token for {name}, {kind}; it is shown only now: put it in the client's "
        "Authorization header (memstore config CLIENT --http prints one)",
        err=True,
    )


@token_group.command(name="list")
@click.pass_context
def token_list(ctx: click.Context) -> None:
    """List who has a token (never the tokens: only their hashes are kept).

    \b
    Example:
      memstore token list
    """
    from memstore.faces import bearer as tokens

    found = tokens.read(_store(ctx).cache)
    if not found:
        click.echo("no tokens: add one with memstore token add NAME", err=True)
    for t in sorted(found.values(), key=lambda t: t.name):
        click.echo(f"{t.name:<24} {'human' if t.human else 'agent':<6} added {t.created}")


@token_group.command(name="revoke")
@click.argument("name")
@click.pass_context
def token_revoke(ctx: click.Context, name: str) -> None:
    """Revoke NAME's token: a running `serve --http` refuses it from its next request on.

    \b
    Example:
      memstore token revoke qa-agent
    """
    from memstore.faces import bearer as tokens

    store = _store(ctx)
    tokens.revoke(store.cache, name, timeout=store.lock_timeout)
    click.echo(f"revoked the token of {name}")


CLIENTS = ("claude-code", "claude-desktop", "cursor", "codex")


@main.command(name="config")
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
    default="http://127.0.0.1:8765/mcp",
    show_default=True,
    help="With --http: the server's MCP endpoint.",
)
@click.pass_context
def config_(ctx: click.Context, client: str, grouped: bool, over_http: bool, url: str) -> None:
    """Print a ready-to-paste MCP configuration for CLIENT, with absolute paths to this store.

    The agent's identity is --agent, else the client's name; never your own $MEMSTORE_AGENT
    or git user.name, which name you: an agent acting as you could confirm your drafts and
    you its. A warning says when the two would match. With --http the identity is the
    token's, which the client reads from $MEMSTORE_TOKEN.

    \b
    Examples:
      memstore --store ~/work/memory --agent deploy-bot config claude-desktop
      memstore config claude-code --http --url http://build-box:8765/mcp
    """
    from memstore.faces.clients import HTTP_CLIENTS, WHERE, client_config, http_config
    from memstore.model.memory import check_identity, same_identity
    from memstore.storage.store import Store

    config = _config(ctx)
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
    agent = check_identity(flag) if flag else client
    you = os.environ.get("MEMSTORE_AGENT") or store.identity
    click.echo(f"# paste into {WHERE[client]}", err=True)
    if you and same_identity(agent, you):
        click.echo(
            f"# warning: the agent would act as '{agent}', which is you "
            "($MEMSTORE_AGENT or git user.name): it could confirm your drafts and you its; "
            "give it a name of its own with --agent NAME",
            err=True,
        )
    elif not flag:
        click.echo(f"# the agent acts as '{agent}' (choose another with --agent NAME)", err=True)
    click.echo(client_config(client, sys.executable, store.root, agent, grouped=grouped))


# -- search --


def _hit_json(hit: Hit) -> dict[str, Any]:
    data = asdict(hit)
    for key, value in list(data.items()):
        if isinstance(value, tuple):
            data[key] = list(value)  # pyright: ignore[reportUnknownArgumentType]
    return data


def _hit_line(hit: Hit) -> str:
    mark = f"[{hit.status}{', expired' if hit.expired else ''}]"
    via = f"  (via {hit.via})" if hit.via else ""
    tags = "  #" + " #".join(hit.tags) if hit.tags else ""
    return (
        f"{hit.score:7.2f}  {hit.name}  {hit.type} {mark}  {hit.updated[:10]}  "
        f"{hit.description}{tags}{via}"
    )


@main.command()
@click.argument("query", nargs=-1)
@click.option("--type", "type_", metavar="TYPE", help="Only this type.")
@click.option("--status", type=click.Choice(["draft", "confirmed", "deprecated"]))
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="Has this tag (repeat: AND).")
@click.option("--owner", metavar="NAME", help="Only memories owned by NAME.")
@click.option(
    "--since", metavar="WHEN", help="Only memories updated since WHEN: 24h, 7d, a date or a time."
)
@click.option("--limit", "-n", type=click.IntRange(min=1), help="At most N results.")
@click.option(
    "--budget",
    type=click.Choice(["tiny", "normal", "deep"]),
    help="3, 10 or 20 results (when --limit is not given; default normal).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    metavar="N",
    help="Keep only the leading whole results that fit in about N tokens (chars/4).",
)
@click.option("--include-deprecated", is_flag=True, help="Also show deprecated and expired ones.")
@click.option("--graph", is_flag=True, help="Add memories linked (1-2 hops) to the matches.")
@click.option(
    "--feedback/--no-feedback",
    default=True,
    show_default=True,
    help="Re-rank with words the best matches share (better recall, a little slower).",
)
@click.option("--explain", is_flag=True, help="Show the BM25 score, boosts and matched terms.")
@click.option("--index", "index_view", is_flag=True, help="One line each: no description.")
@click.option(
    "--as-of",
    metavar="WHEN",
    help="Answer from the store as it was then (read from git): 2026-11-01, 7d, a UTC time.",
)
@click.option("--path", metavar="PATH", help="Memories about this repository path rank first.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of results.")
@click.pass_context
def search(
    ctx: click.Context,
    query: tuple[str, ...],
    type_: str | None,
    status: str | None,
    tags: tuple[str, ...],
    owner: str | None,
    since: str | None,
    limit: int | None,
    budget: str | None,
    max_tokens: int | None,
    include_deprecated: bool,
    graph: bool,
    feedback: bool,
    explain: bool,
    index_view: bool,
    as_of: str | None,
    path: str | None,
    as_json: bool,
) -> None:
    """Find memories by relevance (BM25 over name, description, tags and body), best first.

    Every result shows its status: a draft is a hypothesis, only confirmed is a fact.
    Deprecated and expired memories are left out unless --include-deprecated. QUERY may use
    Whoosh syntax (AND, OR, NOT, "a phrase", field:value). Pinned and high-importance
    memories rank higher; with --path, memories whose `files` cover that path come first. A
    confirmed memory whose files changed since it was confirmed is marked "may be out of date".

    \b
    Example:
      memstore search "hpa autoscaling" --tag k8s --budget tiny --explain
      memstore search deploy --index --max-tokens 200
      memstore search "hpa" --as-of 2026-11-01   # what the team believed then
      memstore search "when did we turn off the HPA?" --no-feedback
      memstore search validation --path src/api/users.py
    """
    from memstore.search import upkeep as searching
    from memstore.search.index import index_line
    from memstore.search.upkeep import Query

    query_value = Query(
        " ".join(query),
        type=type_,
        status=status,
        tags=tags,
        owner=owner,
        since=since,
        limit=limit,
        budget=budget,
        max_tokens=max_tokens,
        include_deprecated=include_deprecated,
        explain=explain,
        graph=graph,
        feedback=feedback,
        index_view=index_view,
        path=path,
    )
    store = _store(ctx)
    if as_of is not None:
        from memstore.model import render_text
        from memstore.search import asof

        past = asof.search(store, query_value, as_of)
        hits = list(past.hits)
        click.echo(render_text.as_of_line(past.at, past.commit, past.committed), err=True)
    else:
        found = searching.recall(store, query_value)
        hits = found.hits
        if found.expired and hits:
            names = ", ".join(h.name for h in found.expired[:5])
            click.echo(
                f"{len(found.expired)} expired memor{'y' if len(found.expired) == 1 else 'ies'} "
                f"also matched, left out: {names} (--include-deprecated shows them)",
                err=True,
            )
    if as_json:
        _echo_json([_hit_json(h) for h in hits])
        return
    for hit in hits:
        click.echo(index_line(hit) if index_view else _hit_line(hit))
        if hit.note:
            click.echo(f"         ! {hit.note}")
        for line in hit.explain:
            click.echo(f"         {line}")
    if not hits:
        click.echo("no memories match", err=True)
        if as_of is None:  # what the live store hides says nothing about the past
            for line in searching.hidden(store, query_value).say(_flag):
                click.echo(f"note: {line}", err=True)


def _flag(field: str) -> str:
    """The search option that sets `Query` field `field`."""
    return {"tags": "--tag", "type": "--type", "index_view": "--index"}.get(
        field, "--" + field.replace("_", "-")
    )


@main.command()
@click.argument("names", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of the memories.")
@click.pass_context
def get(ctx: click.Context, names: tuple[str, ...], as_json: bool) -> None:
    """Print the memories NAMES in the order given, each as its file (front matter and body).

    Use it after `search --index` to read only the memories worth reading.

    \b
    Example:
      memstore get use-zod disable-hpa-checkout --json
    """
    from memstore.model.memory import render
    from memstore.workflow.care import steward

    store = _store(ctx)
    memories = store.get_many(list(names))
    notes = steward.drift_notes(store, memories)
    if as_json:
        _echo_json([{**_memory_json(m), "note": notes.get(m.name)} for m in memories])
        return
    for i, memory in enumerate(memories):
        if i:
            click.echo("")
        click.echo(f"==> {memory.type}/{memory.name}.md <==")
        if memory.name in notes:
            click.echo(f"! {notes[memory.name]}")
        click.echo(render(memory), nl=False)


def _embedded(done: int, total: int) -> None:
    """Semantic recall's pace through memories it has not embedded yet, on stderr."""
    click.echo(f"embedded {done}/{total} memories for semantic recall", err=True)


@main.command()
@click.pass_context
def reindex(ctx: click.Context) -> None:
    """Rebuild the search index from the memory files (progress on stderr).

    Searches catch up with changed files on their own; use this after the cache folder was
    copied around, or to be sure.

    \b
    Example:
      memstore --store memory reindex
    """
    from memstore.search import upkeep as searching

    def progress(done: int, total: int) -> None:
        click.echo(f"indexed {done}/{total} files", err=True)

    result = searching.reindex(_store(ctx), progress, _embedded)
    click.echo(f"reindexed {result.indexed} memories")
    for path in result.skipped:
        click.echo(f"skipped {path}: not a valid memory (run `memstore lint`)", err=True)


# -- moving knowledge in and out --------------------------------------------------------------

EXPORT_FORMATS = ("jsonl", "json", "markdown")
"""`porting.FORMATS`."""


def _imported_lines(result: Any, verbose: bool) -> list[str]:
    """What an import or a close did, a line each: counts, then each draft, then skips."""
    kinds = ", ".join(f"{n} {t}" for t, n in sorted(result.by_type.items())) or "nothing new"
    verb = "would create" if result.dry_run else "created"
    lines = [
        f"found {result.found}, {verb} {len(result.created)} ({kinds}), "
        f"skipped {len(result.skipped)} already in the store"
        + (f" — commit {result.commit[:12]}" if result.commit else "")
    ]
    lines += [f"  + {what}" for what in result.created]
    if verbose:
        lines += [f"  = {what}: {why}" for what, why in result.skipped]
    return lines


@main.command(name="import")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--dry-run", is_flag=True, help="List what would be created; write nothing.")
@click.option(
    "--exact",
    is_flag=True,
    help="Write an export's memory files back byte for byte (status, owner and trail too).",
)
@click.option("--verbose", "-v", is_flag=True, help="Also list what was skipped, and why.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@_allow_secret
@click.pass_context
def import_(
    ctx: click.Context,
    path: Path,
    dry_run: bool,
    exact: bool,
    verbose: bool,
    as_json: bool,
    allow_secret: bool,
) -> None:
    """Import what PATH (a file or a folder) knows, as drafts owned by you, in one commit.

    Reads agent instruction files (CLAUDE.md, AGENTS.md, .cursorrules, …: each rule line
    becomes a correction when it says never/always/don't/must, with its wording as
    applies_when patterns, else a decision), ADRs in MADR or Nygard format (decisions), and
    files `memstore export` wrote (their memories, as your drafts; with --exact, the files as
    they were). Importing the same source again creates nothing new.

    \b
    Example:
      memstore import CLAUDE.md --dry-run
      memstore import docs/adr
      memstore --store copy import memory-export.jsonl --exact
    """
    from memstore.workflow.care import porting

    result = porting.import_path(
        _store(ctx), path, dry_run=dry_run, allow_secret=allow_secret, exact=exact
    )
    if as_json:
        _echo_json(asdict(result))
        return
    for line in _imported_lines(result, verbose):
        click.echo(line)


@main.command()
@click.option(
    "--format",
    "format_",
    type=click.Choice(list(EXPORT_FORMATS)),
    default="jsonl",
    show_default=True,
    help="jsonl/json: every file's exact text (import restores it); markdown: one context file.",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write here.")
@click.option("--type", "type_", metavar="TYPE", help="Only this type.")
@click.option("--status", type=click.Choice(["draft", "confirmed", "deprecated", "unverified"]))
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="Has this tag (repeat: AND).")
@click.pass_context
def export(
    ctx: click.Context,
    format_: str,
    output: Path | None,
    type_: str | None,
    status: str | None,
    tags: tuple[str, ...],
) -> None:
    """Write the store's memories (or a filtered part) to stdout or --output.

    jsonl and json hold each memory file's exact text: `memstore import` of the export in
    another store writes the same files, byte for byte. markdown is one context file (rules
    first, each with its status) for tools that read a single file; it leaves deprecated
    memories out unless --status asks for them.

    \b
    Example:
      memstore export > memory-export.jsonl
      memstore export --format markdown --status confirmed -o CONTEXT.md
    """
    from memstore.workflow.care import porting

    store = _store(ctx)
    target = porting.check_output(store, output) if output is not None else None
    text = porting.export(store, format_, type=type_, status=status, tags=tags)
    if target is None:
        click.echo(text, nl=False)
        return
    target.write_text(text, encoding="utf-8", newline="\n")
    click.echo(f"wrote {output}", err=True)


# -- workflow ---------------------------------------------------------------------------------


@main.command()
@click.argument("name")
@click.option("--description", "-d", required=True, help="The rule, in one line.")
@click.option(
    "--severity",
    type=click.Choice(list(SEVERITIES)),
    help="p0 blocks matching actions in `check`; p1-p3 warn. Default: p1 (warning: p2).",
)
@click.option(
    "--applies-when",
    "applies_when",
    multiple=True,
    metavar="PATTERN",
    help="Keywords, a phrase or a glob of the actions, commands or paths it applies to (repeat).",
)
@click.option("--evidence", help="What the human said, in their words.")
@click.option("--body", help="Markdown body: why, and what to do instead.")
@click.option("--tags", metavar="A,B", help="Comma-separated tags.")
@click.option(
    "--type",
    "type_",
    type=click.Choice(list(RULE_TYPES)),
    default="correction",
    show_default=True,
    help="A correction (a human corrected an agent) or a warning (a known trap).",
)
@click.pass_context
def correct(
    ctx: click.Context,
    name: str,
    description: str,
    severity: str | None,
    applies_when: tuple[str, ...],
    evidence: str | None,
    body: str | None,
    tags: str | None,
    type_: str,
) -> None:
    """Record a correction NAME. It starts as a draft but acts in `brief` and `check` at once.

    \b
    Example:
      memstore correct no-publish-on-bump --severity p0 \\
          --description "Never npm publish from a version-bump commit; CI publishes tags" \\
          --applies-when "npm publish" --applies-when "version bump" \\
          --evidence "Stop publishing by hand, the release job does it."
    """
    from memstore.workflow.session import agent as session

    memory = session.correct(
        _store(ctx),
        name,
        description=description,
        severity=severity,
        applies_when=applies_when,
        evidence=evidence,
        body=body or "",
        tags=_split(tags) or (),
        type=type_,
    )
    severity_shown = memory.extra.get("severity", "")
    click.echo(f"recorded {_summary(memory)} {severity_shown}: it acts in brief and check now")


@main.command(name="check")
@click.argument("description", required=False)
@click.option("--action", metavar="ACTION", help="The ledger action, e.g. publish.")
@click.option("--target", metavar="TARGET", help="What it acts on: a package, a path, a post.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict and reasons as JSON.")
@click.option(
    "--hook",
    type=click.Choice(["claude-code"]),
    help="Read a PreToolUse hook payload on stdin and answer in that client's format (exit 0).",
)
@click.option("--ask-on-warn", is_flag=True, help="With --hook: make a warning ask the user.")
@click.pass_context
def check_(
    ctx: click.Context,
    description: str | None,
    action: str | None,
    target: str | None,
    as_json: bool,
    hook: str | None,
    ask_on_warn: bool,
) -> None:
    """Check an action before taking it: allow, warn or block, with the reasons.

    Matching corrections and warnings decide (p0 blocks, p1-p3 warn); with --action and
    --target the ledger too (executed, or claimed by someone else, blocks). Confirmed runbooks
    about the action are listed to follow. Exit status: 0 allow, 3 warn, 4 block (1 error,
    2 usage).

    \b
    Example:
      memstore check "bump version to 1.4.1 and npm publish" && npm publish
      memstore check "publish the post" --action publish --target post-1
      echo '{"tool_name":"Bash","tool_input":{"command":"npm publish"}}' \\
          | memstore check --hook claude-code
    """
    import json

    from memstore.faces import hooks
    from memstore.workflow.rules import rules as workflow
    from memstore.workflow.session import agent as session

    if hook:
        try:
            payload: object = json.loads(_stdin_text(only_if_piped=False) or "null")
        except ValueError as e:
            raise click.ClickException(f"the hook payload on stdin is not JSON: {e}") from e
        description, target = hooks.hook_action(payload)
    if not description and not action:
        raise click.UsageError("describe the action, e.g. memstore check 'npm publish 1.4.1'")
    result = session.check(_store(ctx), description or "", action=action, target=target)
    if hook:
        output = hooks.claude_code_output(result, ask_on_warn=ask_on_warn)
        if output is not None:
            click.echo(json.dumps(output, ensure_ascii=False))
        return
    if as_json:
        _echo_json(asdict(result))
    else:
        click.echo(workflow.render_check(result))
    ctx.exit(workflow.EXIT_CODES[result.verdict])


@main.command()
@click.argument("name")
@click.argument("outcome", type=click.Choice(list(OUTCOMES)))
@click.option("--evidence", help="What happened (one line): the command, the commit, the PR.")
@click.pass_context
def outcome(ctx: click.Context, name: str, outcome: str, evidence: str | None) -> None:
    """Record that correction NAME was heeded or recurred (an append-only, committed record).

    \b
    Example:
      memstore outcome no-publish-on-bump heeded --evidence "left publishing to CI for 1.4.1"
    """
    from memstore.workflow.session import agent as session

    record = session.record_outcome(_store(ctx), name, outcome, evidence)
    click.echo(f"recorded {record.outcome.value} for {record.name} [{record.status}]")


@main.group(name="signers")
def signers_group() -> None:
    """Who may sign as whom: the store's allowed-signers file (git's SSH signing format).

    With `require_signatures: true` in memstore.yaml, every commit memstore makes is signed
    with MEMSTORE_SIGNING_KEY, and lint checks each one against this file.

    \b
    Example:
      memstore signers add alice ~/.ssh/id_ed25519.pub
      export MEMSTORE_SIGNING_KEY=~/.ssh/id_ed25519
    """


@signers_group.command(name="add")
@click.argument("identity")
@click.argument("public_key", metavar="KEYFILE.pub", type=click.Path(dir_okay=False))
@click.pass_context
def signers_add(ctx: click.Context, identity: str, public_key: str) -> None:
    """Let the SSH key in KEYFILE.pub sign as IDENTITY (one commit, by you).

    \b
    Example:
      memstore signers add bob bob_ed25519.pub
    """
    from memstore.errors import InvalidMemory
    from memstore.storage import signers

    try:
        text = Path(public_key).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidMemory(f"cannot read the public key {public_key}: {e}") from e
    key = signers.add(_store(ctx), identity, text)
    if key is None:
        click.echo(f"already allowed: {identity}")
    else:
        click.echo(f"allowed {key.identity} to sign with {key.fingerprint}")


@signers_group.command(name="list")
@click.pass_context
def signers_list(ctx: click.Context) -> None:
    """Show each allowed signer and its key's fingerprint; unusable lines go to stderr, exit 1.

    \b
    Example:
      memstore signers list
    """
    from memstore.storage import signers

    keys, problems = signers.allowed(_store(ctx))
    for key in keys:
        click.echo(f"{key.identity:<24} {key.fingerprint}")
    for problem in problems:
        click.echo(f"problem: {problem}", err=True)
    ctx.exit(1 if problems else 0)


@main.command(name="stats")
@click.option("--json", "as_json", is_flag=True, help="Print the figures and rates as JSON.")
@click.pass_context
def stats_(ctx: click.Context, as_json: bool) -> None:
    """The store's figures, then the heed rate of each correction and overall.

    Figures: memories by type, status and owner; drafts awaiting review and their median age;
    the median time from creation to confirmation; the share of recalls (search, MCP
    memory_recall) that returned a confirmed memory, counted in the git-ignored `.memstore/`.
    Heed rates come with a Wilson 95% interval and n; with fewer than 10 observations only the
    interval is shown. A correction that recurred after it was confirmed is flagged for
    rewriting.

    \b
    Example:
      memstore stats
      memstore stats --json | jq .store.by_status
    """
    from memstore.workflow.care import stats, steward
    from memstore.workflow.session import agent as session

    store = _store(ctx)
    rates, overall = session.heed_rates(store)
    figures = steward.figures(store)
    if as_json:
        _echo_json(
            {
                "store": asdict(figures),
                "heed_rates": [
                    {**asdict(r), "n": r.n, "rate": r.rate, "summary": stats.describe(r)}
                    for r in [*rates, overall]
                ],
            }
        )
        return
    for line in _figure_lines(figures):
        click.echo(line)
    click.echo("")
    rows = [*rates, overall]
    name_w = max(len("correction"), *(len(r.name) for r in rows))
    click.echo(f"{'correction':{name_w}} {'heeded':>6} {'recurred':>8}  heed rate")
    for r in rows:
        flag = "  REWRITE: recurred after confirmation" if r.rewrite and r is not overall else ""
        click.echo(f"{r.name:{name_w}} {r.heeded:>6} {r.recurred:>8}  {stats.describe(r)}{flag}")


@main.command()
@click.option("--for", "for_text", metavar="TEXT", help="The task at hand, to pick what applies.")
@click.option(
    "--budget-tokens",
    type=click.IntRange(min=MIN_BUDGET),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="Approximate size limit (characters / 4); the least important parts are cut first.",
)
@click.option(
    "--since",
    metavar="COMMIT|WHEN",
    help="Changes since a commit, 24h, 7d, a date (from its start) or a time, not your last "
    "session.",
)
@click.option("--no-mark", is_flag=True, help="Do not count this as a session for next time.")
@click.option("--json", "as_json", is_flag=True, help="Print text, tokens, budget and cuts.")
@click.option(
    "--fenced",
    is_flag=True,
    help="Fence what agents and people wrote as data, for output that goes into an agent's "
    "context (e.g. a SessionStart hook).",
)
@click.pass_context
def brief(
    ctx: click.Context,
    for_text: str | None,
    budget_tokens: int,
    since: str | None,
    no_mark: bool,
    as_json: bool,
    fenced: bool,
) -> None:
    """Print the session briefing: rules that apply, knowledge, reviews, changes, claims.

    \b
    Example:
      memstore brief --for "release 1.4.1 to npm" --budget-tokens 800
      memstore brief --fenced        # in a client's SessionStart hook
    """
    from memstore.workflow.session import briefing

    result = briefing.brief(
        _store(ctx),
        for_text=for_text,
        budget_tokens=budget_tokens,
        since=since,
        mark=not no_mark,
        fenced=fenced,
    )
    if as_json:
        _echo_json(asdict(result))
    else:
        click.echo(result.text, nl=False)


@main.command(name="close")
@click.argument("summary", required=False)
@click.option(
    "--file",
    "-f",
    "from_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read the session's summary or transcript excerpt from this file.",
)
@click.option("--dry-run", is_flag=True, help="List the drafts it would save; write nothing.")
@click.option(
    "--hook",
    type=click.Choice(["claude-code"]),
    help="Read a SessionEnd or PreCompact hook payload on stdin and close from its transcript.",
)
@click.option("--fenced", is_flag=True, help="Fence what agents and people wrote as data.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def close_(
    ctx: click.Context,
    summary: str | None,
    from_file: Path | None,
    dry_run: bool,
    hook: str | None,
    fenced: bool,
    as_json: bool,
) -> None:
    """Close a session: save what it learned as drafts, and name what it left open.

    Reads SUMMARY (or --file, or stdin): the corrections (never/always/don't lines, a human's
    "no, …"), decisions ("we decided …") and failures with their fixes it holds become drafts
    in one commit, leaving out what the store already says. Then it lists the corrections that
    applied (record their outcomes) and your ledger claims still open.

    \b
    Example:
      memstore close "We decided to pin Node 20. Never run the e2e suite against prod."
      git log -1 --format=%B | memstore close --dry-run
      memstore close --hook claude-code    # in SessionEnd and PreCompact hooks
    """
    import json

    from memstore.faces import hooks
    from memstore.workflow.session import closing

    if hook:
        try:
            payload: object = json.loads(_stdin_text(only_if_piped=False) or "null")
        except ValueError as e:
            raise click.ClickException(f"the hook payload on stdin is not JSON: {e}") from e
        text = hooks.session_text(payload)
        if not text.strip():
            return  # a session with nothing said: nothing to close
    elif from_file is not None:
        text = from_file.read_text(encoding="utf-8", errors="replace")
    else:
        text = summary if summary is not None else _stdin_text(only_if_piped=True)
    result = closing.close(_store(ctx), text, dry_run=dry_run)
    if as_json:
        _echo_json(asdict(result))
        return
    click.echo(closing.text(result, fenced=fenced), nl=False)


# -- ledger ---------------------------------------------------------------------------------------

CHECK_EXIT = {"NOT_EXECUTED": 0, "IN_PROGRESS": 3, "EXECUTED": 4}
"""`ledger check`'s exit code for each ledger state."""


def _event_json(event: ledger.Event) -> dict[str, Any]:
    return {**asdict(event), "prev": list(event.prev)}


def _warn(warnings: tuple[str, ...] | list[str]) -> None:
    for warning in warnings:
        text = warning if warning.startswith("WARNING") else f"warning: {warning}"
        click.echo(text, err=True)


@main.group(name="ledger")
def ledger_group() -> None:
    """Record external actions so they are never repeated: check → claim → act → record.

    The ledger is <store>/ledger.jsonl: append-only, one JSON event per line, each line
    hash-linked to the ones before it, each append a git commit by you.

    \b
    Example:
      memstore ledger check publish post-1 \\
        && memstore ledger claim publish post-1 --ttl 30m \\
        && ./publish.sh post-1 \\
        && memstore ledger record publish post-1 --evidence https://blog.example.com/post-1
    """


@ledger_group.command(name="check")
@click.argument("action")
@click.argument("target")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.option(
    "--remote/--local",
    default=None,
    help="Fetch the git remote first and count its ledger too (default: when memstore.yaml "
    "says `claims: remote`).",
)
@click.pass_context
def ledger_check(
    ctx: click.Context, action: str, target: str, as_json: bool, remote: bool | None
) -> None:
    """Say whether ACTION on TARGET is NOT_EXECUTED, IN_PROGRESS or EXECUTED.

    Exit codes: 0 NOT_EXECUTED (go ahead), 3 IN_PROGRESS (claimed by someone), 4 EXECUTED,
    1 error — including a damaged ledger that might hide a record (fail closed), 2 usage.
    Reads git history too: a restored, shorter ledger still answers EXECUTED, with a WARNING.

    \b
    Example:
      memstore ledger check publish post-1 && ./publish.sh post-1
    """
    from memstore.workflow.ledger import lines as ledger
    from memstore.workflow.ledger import sync

    result = sync.check(_store(ctx), action, target, remote=remote)
    if as_json:
        _echo_json(asdict(result))
    elif result.state == ledger.State.EXECUTED:
        click.echo(
            f"EXECUTED {action} {target} — by {result.actor} at {result.at}: {result.evidence}"
        )
    elif result.state == ledger.State.IN_PROGRESS:
        click.echo(
            f"IN_PROGRESS {action} {target} — claimed by {result.actor} at {result.at} "
            f"until {result.until}"
        )
    else:
        click.echo(f"NOT_EXECUTED {action} {target}")
    _warn(result.warnings)
    ctx.exit(CHECK_EXIT[result.state])


@ledger_group.command(name="claim")
@click.argument("action")
@click.argument("target")
@click.option(
    "--ttl",
    default="30m",
    show_default=True,
    metavar="DURATION",
    help="How long the claim holds unless recorded or released: 90s, 30m, 2h or 1d, at most "
    "7d. A bare number is seconds.",
)
@click.option(
    "--remote/--local",
    default=None,
    help="Claim through the git remote: won only once the remote accepts the push carrying "
    "it, so it holds across machines (default: when memstore.yaml says `claims: remote`).",
)
@_allow_secret
@click.pass_context
def ledger_claim(
    ctx: click.Context,
    action: str,
    target: str,
    ttl: str,
    remote: bool | None,
    allow_secret: bool,
) -> None:
    """Claim ACTION on TARGET before doing it, so no one else starts it.

    Refused (exit 3) while someone else holds a valid claim, and (exit 4) once it is done.
    Claiming again yourself refreshes your claim. Of several racing claims exactly one wins;
    with --remote, of several machines too. A remote that cannot be reached claims nothing.

    \b
    Example:
      memstore ledger claim deploy api-v2 --ttl 15m && ./deploy.sh api-v2
      memstore ledger claim deploy api-v2 --remote && ./deploy.sh api-v2
    """
    from memstore.workflow.ledger import lines as ledger
    from memstore.workflow.ledger import sync

    seconds = ledger.parse_duration(ttl)
    if not 1 <= seconds <= ledger.TTL_MAX:  # in the flag's own terms, not the core's seconds
        raise click.ClickException(f"--ttl {ttl!r} must be from 1s to 7d")
    try:
        event = sync.claim(
            _store(ctx), action, target, seconds, remote=remote, allow_secret=allow_secret
        )
    except ClaimHeld as e:
        click.echo(f"Error: {e}", err=True)
        ctx.exit(3)
    except AlreadyExecuted as e:
        click.echo(f"Error: {e}", err=True)
        ctx.exit(4)
    click.echo(f"claimed {action} {target} until {event.expires} (event {event.id})")


@ledger_group.command(name="release")
@click.argument("action")
@click.argument("target")
@_allow_secret
@click.pass_context
def ledger_release(ctx: click.Context, action: str, target: str, allow_secret: bool) -> None:
    """Give up your claim on ACTION on TARGET without doing it.

    \b
    Example:
      memstore ledger release deploy api-v2
    """
    from memstore.workflow.ledger import book as ledger_io

    event = ledger_io.release(_store(ctx), action, target, allow_secret=allow_secret)
    click.echo(f"released {action} {target} (event {event.id})")


@ledger_group.command(name="record")
@click.argument("action")
@click.argument("target")
@click.option("--evidence", metavar="URL", help="http(s) URL showing the result (required).")
@click.option("--note", help="Free text; required with --failed.")
@click.option("--failed", is_flag=True, help="Record a failed attempt (ends your claim).")
@_allow_secret
@click.pass_context
def ledger_record(
    ctx: click.Context,
    action: str,
    target: str,
    evidence: str | None,
    note: str | None,
    failed: bool,
    allow_secret: bool,
) -> None:
    """Record that you did ACTION on TARGET, with evidence, or that it failed.

    A record is always written (it happened), with a warning if it was already recorded done.

    \b
    Example:
      memstore ledger record publish post-1 --evidence https://blog.example.com/post-1
      memstore ledger record publish post-1 --failed --note "CMS returned 503"
    """
    from memstore.workflow.ledger import book as ledger_io

    event = ledger_io.record(
        _store(ctx), action, target, evidence, note, failed, allow_secret=allow_secret
    )
    detail = event.evidence or event.note or ""
    click.echo(f"recorded {event.status} {action} {target} — {detail} (event {event.id})")


@ledger_group.command(name="list")
@click.option("--action", metavar="ACTION", help="Only this action.")
@click.option("--target", metavar="TARGET", help="Only this target.")
@click.option("--actor", metavar="NAME", help="Only events by this identity.")
@click.option(
    "--since", metavar="WHEN", help="24h, 7d, 2026-11-30 (from its start) or 2026-11-30T08:00:00Z."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.pass_context
def ledger_list(
    ctx: click.Context,
    action: str | None,
    target: str | None,
    actor: str | None,
    since: str | None,
    as_json: bool,
) -> None:
    """List ledger events, oldest first: when, who, status, action, target, evidence or note.

    \b
    Example:
      memstore ledger list --action publish --since 7d
    """
    from memstore.workflow.ledger import book as ledger_io

    events = ledger_io.events(_store(ctx), action, target, actor, since)
    if as_json:
        _echo_json([_event_json(e) for e in events])
        return
    for e in events:
        detail = e.evidence or e.note or (f"until {e.expires}" if e.expires else "")
        click.echo(f"{e.at}  {e.actor:16} {e.status:8} {e.action} {e.target}  {detail}".rstrip())
    if not events:
        click.echo("no ledger events match", err=True)


@ledger_group.command(name="verify")
@click.pass_context
def ledger_verify(ctx: click.Context) -> None:
    """Check every line's hash and link, and that the file holds every line git committed.

    Prints each problem (an edited line, a deleted line, a line git has that the file lost)
    and exits 1 if there is any; a union merge of two branches verifies.

    \b
    Example:
      memstore ledger verify
    """
    from memstore.workflow.ledger import book as ledger_io

    result = ledger_io.verify(_store(ctx))
    for problem in result.problems:
        click.echo(problem)
    _warn(result.warnings)
    if not result.ok:
        raise click.ClickException(f"ledger verification failed: {len(result.problems)} problem(s)")
    click.echo(
        f"ok: {result.events} events on {result.lines} lines, {result.heads} head(s), "
        f"{result.committed} committed to git"
    )


# -- reliability --------------------------------------------------------------------------------


@main.command()
@click.pass_context
def recover(ctx: click.Context) -> None:
    """Undo a write that a killed memstore process left before its commit.

    Any write does this first; `recover` does only this. The files are put back as HEAD holds
    them: a cut-short write is never committed, because its journal is a file anyone could
    have written, and a write is reported done only once committed. git's own lock files are
    never deleted. `lint` reports a write waiting for this.

    \b
    Example:
      memstore --store memory recover
    """
    left = _store(ctx).recover()
    click.echo(f"undone: {left}" if left else "nothing to recover")
