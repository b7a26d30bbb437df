"""Commands that move a memory through review: confirm and deprecate (one, or a batch in one
commit), merge duplicates, restore, verify, and the queue of drafts awaiting you (defer one,
or ask someone to review it)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from memstore.faces.cli.common import (
    Result,
    allow_secret_option,
    echo_json,
    expect_version_option,
    json_object,
    label,
    memory_json,
    reports,
    store_of,
)

if TYPE_CHECKING:
    from memstore.model.memory import Memory


@click.command()
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@click.option("--reason", "-r", required=True, help="What you checked (one line).")
@expect_version_option
@allow_secret_option
@click.pass_context
@reports
def confirm(
    ctx: click.Context,
    names: tuple[str, ...],
    reason: str,
    expect_version: str | None,
    allow_secret: bool,
) -> Result:
    """Confirm draft NAME. You cannot confirm a memory you own.

    Pass --expect-version with the version you reviewed, so a change made since is not
    confirmed unseen.

    Several NAMEs are confirmed in one commit, each judged as one would be: one you cannot
    confirm (your own, not a draft) is refused with the reason, and the others still go
    (exit 1 only when none could be).

    \b
    Example:
      memstore --agent bob confirm use-zod --reason "verified in src/types.ts"
      memstore --agent bob confirm use-zod retry-429 --reason "read both against the code"
    """
    if len(names) == 1:
        memory = store_of(ctx).confirm(
            names[0], reason, expected_version=expect_version, allow_secret=allow_secret
        )
        return Result(memory_json(memory), f"confirmed {label(memory)}")
    if expect_version:
        raise click.UsageError("--expect-version takes a single NAME")
    from memstore.workflow.care import tidy

    done, refused = tidy.promote_many(
        store_of(ctx), names, "confirmed", reason, allow_secret=allow_secret
    )
    return _batch_result("confirmed", done, refused)


def _batch_result(verb: str, done: list[Memory], refused: list[tuple[str, str]]) -> Result:
    """A batch's report: the memories moved, each refused one with why (exit 1 when none
    moved)."""
    notes = [f"refused {name}: {why}" for name, why in refused]
    if done and refused:
        notes.append(f"{len(done)} {verb} in one commit, {len(refused)} refused")
    return Result(
        {verb: [m.name for m in done], "refused": [{"name": n, "why": w} for n, w in refused]},
        [f"{verb} {label(memory)}" for memory in done],
        notes=notes,
        status=1 if refused and not done else 0,
    )


@click.command()
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
@expect_version_option
@allow_secret_option
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

    A rule that binds you (a person's rule, or a confirmed p0, and you are not in `humans:`)
    is not deprecated but proposed for deprecation: it stays in force until a person, or for
    an agent's p0 another identity, deprecates it in turn.

    \b
    Example:
      memstore deprecate use-joi --reason "replaced by zod" --superseded-by use-zod
      memstore deprecate --older-than 30d --status draft --reason "stale drafts" --dry-run
    """
    selecting = any(v is not None for v in (tag, type_, status, older_than))
    if len(names) == 1 and not selecting and not dry_run:
        memory = store_of(ctx).deprecate(
            names[0],
            reason,
            superseded_by,
            expected_version=expect_version,
            allow_secret=allow_secret,
        )
        if as_json:
            echo_json(json_object(memory))
            return
        pending = _proposal(memory)
        if pending:  # a rule that binds you: it stays in force until someone agrees
            click.echo(f"proposed deprecating {label(memory)}: {pending}")
            return
        click.echo(f"deprecated {label(memory)}")
        return
    if names and selecting:
        raise click.UsageError("give NAMEs or a selection (--tag, --type, --status, --older-than)")
    if superseded_by or expect_version:
        raise click.UsageError("--superseded-by and --expect-version take a single NAME")
    from memstore.workflow.care import tidy

    batch = tidy.deprecate(
        store_of(ctx),
        list(names),
        reason,
        tag=tag,
        type=type_,
        status=status,
        older_than=older_than,
        dry_run=dry_run,
        allow_secret=allow_secret,
    )
    if as_json:
        echo_json(
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
        if not batch.deprecated and not batch.refused:
            click.echo("no memory matches", err=True)
        elif not dry_run and batch.deprecated:
            click.echo(f"{len(batch.deprecated)} deprecated in one commit", err=True)
    if batch.refused and not batch.deprecated:
        ctx.exit(1)


@click.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--defer", "defer", metavar="SPAN", help="Put NAMEs off for SPAN (3d; now ends it).")
@click.option("--for", "reviewer", metavar="WHO", help="Ask WHO to review NAMEs (first in theirs).")
@click.option("--all", "show_all", is_flag=True, help="List the ones you deferred too.")
@click.option("--json", "as_json", is_flag=True, help="Print the queue as JSON (for agents).")
@click.option(
    "--interactive/--list",
    "-i",
    default=None,
    help="Ask about each memory (the default at a terminal), or only list them.",
)
@click.pass_context
def review(
    ctx: click.Context,
    names: tuple[str, ...],
    defer: str | None,
    reviewer: str | None,
    show_all: bool,
    as_json: bool,
    interactive: bool | None,
) -> None:
    """The drafts awaiting your review (never your own), most worth reviewing first; or, with
    NAMEs, put them off (--defer) or ask someone to review them (--for).

    First those someone asked you to review, then rules (they act already), then the drafts
    recalled most, then the most linked to, then those waiting longest; each says why. At a
    terminal, each is shown and you confirm, deprecate, defer or skip it (the version you saw
    is the one confirmed: a change made meanwhile is refused).

    --defer and --for are committed to reviews.jsonl, so the team sees them: a deferral hides
    the memory from your queue and briefing only, until SPAN is over; a request puts it first
    in WHO's queue and briefing.

    \b
    Example:
      memstore --agent bob review
      memstore --agent bob review retry-429 --defer 3d
      memstore review use-zod --for carol
      memstore review --json        # for an agent: then memory_get and memory_promote
    """
    from memstore.errors import MemstoreError
    from memstore.workflow.care import reviews, tidy

    store = store_of(ctx)
    if names or defer or reviewer:
        if not names or bool(defer) == bool(reviewer):
            raise click.UsageError("give NAMEs with one of --defer SPAN or --for WHO")
        if defer:
            done = reviews.defer(store, names, defer)
            click.echo(f"deferred {', '.join(r.name for r in done)} until {done[0].until}")
        else:
            done = reviews.ask(store, names, reviewer or "")
            click.echo(f"asked {reviewer} to review {', '.join(r.name for r in done)}")
        return
    queue = tidy.inbox(store, deferred=show_all)
    if as_json:
        echo_json([json_object(w.memory) | {"why": list(w.why)} for w in queue])
        return
    if not queue:
        click.echo("nothing awaits your review", err=True)
        return
    if interactive is None:
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if not interactive:
        for w in queue:
            m = w.memory
            pending = _proposal(m)
            click.echo(
                f"{m.type}/{m.name} [{m.status}] by {m.owner}, {m.updated[:10]}: {m.description}"
                + (f" [{pending}: {m.deprecation_proposed_reason}]" if pending else "")
                + (f" ({'; '.join(w.why)})" if w.why else "")
            )
        return
    store.require_identity()
    for at, waiting in enumerate(queue, 1):
        try:
            current = store.read(waiting.memory.name)
        except MemstoreError as e:
            click.echo(f"skipped {waiting.memory.name}: {e}", err=True)
            continue
        m = current.memory
        click.echo(
            f"\n[{at}/{len(queue)}] {m.type}/{m.name} [{m.status}] by {m.owner}, "
            f"updated {m.updated[:10]}" + (f" ({'; '.join(waiting.why)})" if waiting.why else "")
        )
        click.echo(f"  {m.description}")
        if _proposal(m):
            click.echo(f"  {_proposal(m)}: {m.deprecation_proposed_reason}")
        for line in m.body.strip().splitlines()[:20]:
            click.echo(f"  | {line}")
        choice = click.prompt(
            f"[c]onfirm, [d]eprecate, [l]ater (defer {reviews.LATER}), [s]kip, [q]uit",
            type=click.Choice(["c", "d", "l", "s", "q"]),
            show_choices=False,
            default="s",
        )
        if choice == "q":
            break
        if choice == "s":
            continue
        try:
            if choice == "l":
                reviews.defer(store, [m.name], reviews.LATER)
                click.echo(f"deferred {m.type}/{m.name} for {reviews.LATER}")
                continue
            reason = click.prompt("reason (one line)")
            if choice == "c":
                done = store.confirm(m.name, reason, expected_version=current.version)
            else:
                done = store.deprecate(m.name, reason, expected_version=current.version)
        except MemstoreError as e:
            click.echo(f"Error: {e}{e.cli_hint}", err=True)
            continue
        verb = "confirmed" if choice == "c" else "deprecated"
        if choice == "d" and _proposal(done):
            verb = "proposed deprecating"
        click.echo(f"{verb} {label(done)}")


@click.command()
@click.argument("keep", metavar="KEEP")
@click.argument("others", nargs=-1, required=True, metavar="OTHER...")
@click.option("--reason", "-r", help='Why they are one (one line; default "merged into KEEP").')
@click.option("--body", is_flag=True, help="Append each OTHER's body KEEP lacks as a section.")
@allow_secret_option
@click.option("--json", "as_json", is_flag=True, help="Print what the merge did.")
@click.pass_context
def merge(
    ctx: click.Context,
    keep: str,
    others: tuple[str, ...],
    reason: str | None,
    body: bool,
    allow_secret: bool,
    as_json: bool,
) -> None:
    """Merge duplicates into KEEP in one commit: the tags, links and files of each OTHER join
    KEEP (with --body, its text too, as a section), each OTHER is deprecated as superseded by
    KEEP with the reason, and links to an OTHER in other memories name KEEP instead.

    KEEP goes back to draft when its content changed (files or body folded in), so someone
    else confirms what it now says. `memstore doctor` prints this command for each duplicate
    cluster, the one to keep first.

    \b
    Example:
      memstore merge use-zod zod-for-validation validate-with-zod --body
    """
    from memstore.workflow.care import merge as merging

    done = merging.merge(
        store_of(ctx), keep, list(others), reason, body=body, allow_secret=allow_secret
    )
    if as_json:
        echo_json(
            {
                "kept": json_object(done.kept),
                "deprecated": [m.name for m in done.deprecated],
                "redirected": list(done.redirected),
                "left": list(done.left),
                "back_to_draft": done.back_to_draft,
            }
        )
        return
    click.echo(f"kept {label(done.kept)}" + (" (back to draft)" if done.back_to_draft else ""))
    for m in done.deprecated:
        click.echo(f"deprecated {label(m)}, superseded by {keep}")
    if done.redirected:
        click.echo(f"links redirected in {', '.join(done.redirected)}")
    if done.left:
        click.echo(
            f"[[references]] left in confirmed {', '.join(done.left)} (they lead to {keep} "
            "through superseded_by)",
            err=True,
        )


@click.command()
@click.argument("name")
@click.option("--reason", "-r", required=True, help="Why it applies again (one line).")
@expect_version_option
@allow_secret_option
@click.pass_context
@reports
def restore(
    ctx: click.Context, name: str, reason: str, expect_version: str | None, allow_secret: bool
) -> Result:
    """Bring deprecated NAME back as a draft (someone else must confirm it again).

    \b
    Example:
      memstore restore use-joi --reason "zod migration reverted"
    """
    memory = store_of(ctx).restore(
        name, reason, expected_version=expect_version, allow_secret=allow_secret
    )
    return Result(memory_json(memory), f"restored {label(memory)}")


@click.command()
@click.argument("name")
@click.option("--reason", "-r", required=True, help="What you checked (one line).")
@expect_version_option
@click.option("--json", "as_json", is_flag=True, help="Print the memory as JSON.")
@allow_secret_option
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
    memory = store_of(ctx).verify(
        name, reason, expected_version=expect_version, allow_secret=allow_secret
    )
    if as_json:
        echo_json(json_object(memory))
        return
    click.echo(f"verified {label(memory)}")


COMMANDS: tuple[click.Command, ...] = (
    confirm,
    deprecate,
    review,
    merge,
    restore,
    verify,
)
"""The commands `main` registers from this module."""


def _proposal(memory: Memory) -> str:
    # Imported when asked: the CLI's start (and `--help`) never loads the memory model.
    from memstore.model.render_text import proposal

    return proposal(memory)
