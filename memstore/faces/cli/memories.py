"""Commands on memories themselves: make a store; add, read, list, edit, pin, rename, retype
and forget memories; their history and timeline; undo a cut-short write."""

from __future__ import annotations

from typing import Any

import click

from memstore.faces.cli.common import (
    Result,
    allow_secret_option,
    asdict,
    comma_list,
    config_of,
    echo_json,
    expect_version_option,
    json_object,
    label,
    memory_json,
    reports,
    stdin_text,
    store_of,
)


@click.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option(
    "--git-root",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Outside any git repository: run `git init` here (the project folder above the "
    "store) rather than in the store itself.",
)
@click.pass_context
@reports
def init(ctx: click.Context, directory: str | None, git_root: str | None) -> Result:
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
    from pathlib import Path

    from memstore.git import repository
    from memstore.storage.files import shown
    from memstore.storage.store import Store

    config = config_of(ctx)
    root = Path(directory).absolute() if directory else config.store
    new_repo = repository.find_repo(root) is None
    store = Store.init(root, config.agent, Path(git_root) if git_root else None)
    notes: list[str] = []
    if new_repo and git_root is None:
        notes.append(
            f"note: {shown(root)} was in no git repository, so it is now one of its own. "
            "If it belongs to a project you will put under git later, that project would hold "
            f"it as an embedded repository: instead `rm -rf {shown(root / '.git')}` and run "
            "`memstore init --git-root PROJECT_FOLDER`, or `git init` the project first"
        )
    if store.identity is None:
        notes.append(
            "note: no identity is set; writes will need --agent NAME, MEMSTORE_AGENT or git's "
            "user.name"
        )
    data = {"store": str(store.root), "repository": str(store.repo.top), "identity": store.identity}
    return Result(
        data, f"store ready at {store.root} (git repository {store.repo.top})", notes=notes
    )


@click.command()
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
@allow_secret_option
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
        body = stdin_text(only_if_piped=True)
    store = store_of(ctx)
    extra: dict[str, Any] = {
        "files": [f for value in files for f in comma_list(value) or ()] or None,
        "expires": expires,
        "importance": importance,
    }
    memory = store.add(
        name,
        type=type_,
        description=description,
        body=body,
        tags=comma_list(tags) or (),
        links=comma_list(links) or (),
        extra={k: v for k, v in extra.items() if v is not None},
        allow_secret=allow_secret,
    )
    close = steward.similar(store, memory.name, memory.description)
    if as_json:
        echo_json({"memory": json_object(memory), "similar": [asdict(c) for c in close]})
        return
    click.echo(f"added {label(memory)}")
    for c in close:
        click.echo(
            f"similar: {c.name} ({c.type}, {c.status}, {c.similarity:.0%} alike) — {c.description}",
            err=True,
        )


@click.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the memory as JSON.")
@click.pass_context
def show(ctx: click.Context, name: str, as_json: bool) -> None:
    """Print memory NAME: its fields, status trail and body.

    \b
    Example:
      memstore show use-zod --json
    """
    current = store_of(ctx).read(name)
    if as_json:
        echo_json({**json_object(current.memory), "version": current.version})
        return
    from memstore.model.memory import RULE_TYPES
    from memstore.model.render_text import proposal, value_text

    m = current.memory
    force = store_of(ctx).force(current) if m.type in RULE_TYPES else None
    click.echo(f"{m.name} — {m.description}")
    click.echo(
        f"type: {m.type}   status: {m.status}   owner: {m.owner}   version: {current.version}"
    )
    click.echo(f"created: {m.created}   updated: {m.updated}")
    for label_, value in (
        ("tags", m.tags),
        ("links", m.links),
        ("pinned", m.pinned),
        *((k, v) for k, v in m.extra.items()),
    ):
        if value:
            click.echo(f"{label_}: {value_text(value)}")
    for verb, by, at, why in (
        ("confirmed", m.confirmed_by, m.confirmed_at, m.confirmed_reason),
        ("verified", m.verified_by, m.verified_at, m.verified_reason),
        ("deprecated", m.deprecated_by, m.deprecated_at, m.deprecated_reason),
    ):
        if by:
            click.echo(_trail(f"{verb} by {by}", at, why))
    if m.deprecation_proposed_by:
        pending = proposal(m) or "deprecation proposed"
        successor = m.deprecation_proposed_successor
        click.echo(
            _trail(
                f"{pending} — proposed by {m.deprecation_proposed_by}",
                m.deprecation_proposed_at,
                m.deprecation_proposed_reason,
            )
            + (f" (successor {successor})" if successor else "")
        )
    if m.superseded_by:
        click.echo(f"superseded by: {m.superseded_by}")
    if m.supersedes:
        click.echo(f"supersedes: {', '.join(m.supersedes)}")
    if force is not None and force.held_by is not None:
        click.echo(
            f"NOT IN EFFECT: {force.held_by}'s change in commit {force.commit[:10]} (a rule "
            "that binds the agents keeps the version before it: see `memstore lint`)"
        )
    if m.body:
        click.echo("")
        click.echo(m.body)


def _trail(who: str, at: str | None, why: str | None) -> str:
    """One step of a memory's status trail: who, then when and why when its file says."""
    return who + (f" at {at}" if at else "") + (f": {why}" if why else "")


LIST_SHOWN = 50
"""How many memories `list` prints unless told otherwise: a screen or two."""


@click.command(name="list")
@click.option("--type", "type_", metavar="TYPE", help="Only this type.")
@click.option("--status", type=click.Choice(["draft", "confirmed", "deprecated", "unverified"]))
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="Has this tag (repeat: AND).")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=None,
    help=f"Print at most N (default {LIST_SHOWN}; with --json, all); 0 prints all.",
)
@click.option("--all", "all_", is_flag=True, help="Print every match (as --limit 0).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.pass_context
def list_(
    ctx: click.Context,
    type_: str | None,
    status: str | None,
    tags: tuple[str, ...],
    limit: int | None,
    all_: bool,
    as_json: bool,
) -> None:
    """List memories, newest update first: one line each with type, status and description.

    Prints the newest 50 and a line saying how many more match; `--limit N` or `--all` for
    more. Read from the catalog under `.memstore/` (kept in step with the files: git says which
    may have changed, hand edits included), a page at a time, not by parsing every file.

    \b
    Example:
      memstore list --status draft --tag api
      memstore list --all
    """
    from memstore.model.render_text import proposal
    from memstore.workflow.care import catalog

    if limit is None:
        limit = 0 if as_json else LIST_SHOWN
    if all_:
        limit = 0
    store = store_of(ctx)
    with catalog.opened(store) as found:
        shown, matching = found.page(*catalog.filters(type_, status, tags), limit=limit)
        if as_json:
            memories = [m for e in shown if (m := found.memory(e)) is not None]
            echo_json([json_object(m) for m in memories])
            _more(matching - len(shown))
            return
        # A proposal to lift a rule is on the rule's file only: read the rules shown, no others.
        pendings = {
            e.path: proposal(memory)
            for e in shown
            if e.rule is not None
            and e.status not in ("deprecated", "unverified")
            and (memory := found.memory(e)) is not None
        }
    # Each column as wide as its longest value shown, so a long name never shifts a row (#17).
    name_w = max((len(m.name) for m in shown), default=0)
    type_w = max((len(m.type) for m in shown), default=0)
    status_w = max((len(m.status) for m in shown), default=0)
    for m in shown:
        pending = pendings.get(m.path, "")
        click.echo(
            f"{m.name:{name_w}} {m.type:{type_w}} {m.status:{status_w}} {m.updated[:10]}  "
            f"{m.description}" + (f"  [{pending}]" if pending else "")
        )
    if not matching:
        click.echo("no memories match", err=True)
    _more(matching - len(shown))


def _more(rest: int) -> None:
    if rest > 0:
        click.echo(f"… and {rest} more: `--limit N` or `--all` lists them", err=True)


@click.command()
@click.argument("name")
@click.option("--description", "-d", help="New one-line description.")
@click.option("--body", help="New Markdown body ('-' reads it from stdin).")
@click.option("--tags", metavar="A,B", help="New comma-separated tags (replaces the old ones).")
@click.option("--links", metavar="X,Y", help="New comma-separated links (replaces the old ones).")
@expect_version_option
@allow_secret_option
@click.option(
    "--force", is_flag=True, help="Edit a deprecated memory as it is (it stays deprecated)."
)
@click.pass_context
@reports
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
) -> Result:
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
        body = stdin_text(only_if_piped=False)
    if description is None and body is None and tags is None and links is None:
        raise click.UsageError("nothing to change: give --description, --body, --tags or --links")
    memory = store_of(ctx).edit(
        name,
        description=description,
        body=body,
        tags=comma_list(tags),
        links=comma_list(links),
        expected_version=expect_version,
        allow_secret=allow_secret,
        force=force,
    )
    return Result(memory_json(memory), f"edited {label(memory)}")


@click.command()
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
    memory = store_of(ctx).pin(name, not unpin)
    if as_json:
        echo_json(json_object(memory))
        return
    click.echo(f"{'unpinned' if unpin else 'pinned'} {label(memory)}")


@click.command(name="history")
@click.argument("name")
@click.pass_context
@reports
def history_(ctx: click.Context, name: str) -> Result:
    """Show the git history of memory NAME, newest first: when, who, what and why.

    \b
    Example:
      memstore history use-zod
    """
    from memstore.git import gitlog

    store = store_of(ctx)
    revisions = gitlog.log(store.repo, store.path_for(name))
    lines: list[str] = []
    for rev in revisions:
        subject, _, rest = rev.message.partition("\n")
        lines.append(
            f"{rev.date[:16].replace('T', ' ')}  {rev.commit[:10]}  {rev.author:16} {subject}"
        )
        lines += [f"{'':46}{line}" for line in rest.strip().splitlines()]
    data = [
        {"date": r.date, "commit": r.commit, "author": r.author, "message": r.message}
        for r in revisions
    ]
    return Result(data, lines, notes=[] if revisions else [f"'{name}' has no commits yet"])


@click.command()
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

    events = history_of.timeline(store_of(ctx), name, tag=tag, type=type_, since=since)
    if as_json:
        echo_json([asdict(e) for e in events])
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


@click.command("mv")
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
    memory, pointing = store_of(ctx).rename(name, new_name)
    if as_json:
        echo_json({"memory": json_object(memory), "rewritten": pointing})
        return
    click.echo(f"renamed {name} to {label(memory)}")
    if pointing:
        click.echo(f"links rewritten in: {', '.join(pointing)}")


@click.command()
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
    memory = store_of(ctx).retype(name, type_)
    if as_json:
        echo_json(json_object(memory))
        return
    click.echo(f"retyped {label(memory)}")


@click.command()
@click.argument("name")
@click.option("--reason", "-r", required=True, help="Why it goes (one line, kept in the commit).")
@allow_secret_option
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
    memory = store_of(ctx).forget(name, reason, allow_secret=allow_secret)
    if as_json:
        echo_json(json_object(memory))
        return
    click.echo(f"forgot {memory.type}/{memory.name} (its history stays in git)")


@click.command()
@click.pass_context
@reports
def recover(ctx: click.Context) -> Result:
    """Undo a write that a killed memstore process left before its commit.

    Any write does this first; `recover` does only this. The files are put back as HEAD holds
    them: a cut-short write is never committed, because its journal is a file anyone could
    have written, and a write is reported done only once committed. git's own lock files are
    never deleted. `lint` reports a write waiting for this.

    \b
    Example:
      memstore --store memory recover
    """
    from memstore.storage import transaction

    left = transaction.undo_pending(store_of(ctx))
    return Result({"undone": left or None}, f"undone: {left}" if left else "nothing to recover")


COMMANDS: tuple[click.Command, ...] = (
    init,
    add,
    show,
    list_,
    edit,
    pin,
    history_,
    timeline,
    mv,
    retype,
    forget,
    recover,
)
"""The commands `main` registers from this module."""
