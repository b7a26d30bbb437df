"""The `ledger` group: check → claim → act → record each external action, then list and verify
the ledger."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from memstore.faces.cli.common import (
    Result,
    allow_secret_option,
    asdict,
    echo_json,
    reports,
    store_of,
)
from memstore.limits import CLAIM_TTL, CLAIM_TTL_MAX

if TYPE_CHECKING:
    from memstore.workflow.ledger import lines as ledger


CHECK_EXIT = {"NOT_EXECUTED": 0, "IN_PROGRESS": 3, "EXECUTED": 4}
"""`ledger check`'s exit code for each ledger state."""


def _event_json(event: ledger.Event) -> dict[str, Any]:
    return {**asdict(event), "prev": list(event.prev)}


def _warn(warnings: tuple[str, ...] | list[str]) -> None:
    for warning in warnings:
        text = warning if warning.startswith("WARNING") else f"warning: {warning}"
        click.echo(text, err=True)


@click.group(name="ledger")
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
    from memstore.workflow.ledger import claims, sync

    result = sync.check(store_of(ctx), action, target, remote=remote)
    if as_json:
        echo_json(asdict(result))
    elif result.state == claims.State.EXECUTED:
        click.echo(
            f"EXECUTED {action} {target} — by {result.actor} at {result.at}: {result.evidence}"
        )
    elif result.state == claims.State.IN_PROGRESS:
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
    default=f"{CLAIM_TTL // 60}m",
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
@allow_secret_option
@click.pass_context
@reports
def ledger_claim(
    ctx: click.Context,
    action: str,
    target: str,
    ttl: str,
    remote: bool | None,
    allow_secret: bool,
) -> Result:
    """Claim ACTION on TARGET before doing it, so no one else starts it.

    Refused (exit 3) while someone else holds a valid claim, and (exit 4) once it is done.
    Claiming again yourself refreshes your claim. Of several racing claims exactly one wins;
    with --remote, of several machines too. A remote that cannot be reached claims nothing.

    \b
    Example:
      memstore ledger claim deploy api-v2 --ttl 15m && ./deploy.sh api-v2
      memstore ledger claim deploy api-v2 --remote && ./deploy.sh api-v2
    """
    from memstore.errors import AlreadyExecuted, ClaimHeld
    from memstore.workflow.ledger import lines as ledger
    from memstore.workflow.ledger import sync

    seconds = ledger.parse_duration(ttl)
    if not 1 <= seconds <= CLAIM_TTL_MAX:  # in the flag's own terms, not the core's seconds
        raise click.ClickException(f"--ttl {ttl!r} must be from 1s to 7d")
    try:
        event = sync.claim(
            store_of(ctx), action, target, seconds, remote=remote, allow_secret=allow_secret
        )
    except ClaimHeld as e:
        click.echo(f"Error: {e}", err=True)
        ctx.exit(3)
    except AlreadyExecuted as e:
        click.echo(f"Error: {e}", err=True)
        ctx.exit(4)
    return Result(
        _event_json(event), f"claimed {action} {target} until {event.expires} (event {event.id})"
    )


@ledger_group.command(name="release")
@click.argument("action")
@click.argument("target")
@allow_secret_option
@click.pass_context
@reports
def ledger_release(ctx: click.Context, action: str, target: str, allow_secret: bool) -> Result:
    """Give up your claim on ACTION on TARGET without doing it.

    \b
    Example:
      memstore ledger release deploy api-v2
    """
    from memstore.workflow.ledger import book as ledger_io

    event = ledger_io.release(store_of(ctx), action, target, allow_secret=allow_secret)
    return Result(_event_json(event), f"released {action} {target} (event {event.id})")


@ledger_group.command(name="record")
@click.argument("action")
@click.argument("target")
@click.option("--evidence", metavar="URL", help="http(s) URL showing the result (required).")
@click.option("--note", help="Free text; required with --failed.")
@click.option("--failed", is_flag=True, help="Record a failed attempt (ends your claim).")
@allow_secret_option
@click.pass_context
@reports
def ledger_record(
    ctx: click.Context,
    action: str,
    target: str,
    evidence: str | None,
    note: str | None,
    failed: bool,
    allow_secret: bool,
) -> Result:
    """Record that you did ACTION on TARGET, with evidence, or that it failed.

    A record needs no claim and is written with a warning if it was already recorded done;
    while someone else's claim is live only they may record it (refused, exit 3, naming who
    holds it until when).

    \b
    Example:
      memstore ledger record publish post-1 --evidence https://blog.example.com/post-1
      memstore ledger record publish post-1 --failed --note "CMS returned 503"
    """
    from memstore.errors import ClaimHeld
    from memstore.workflow.ledger import book as ledger_io

    try:
        event = ledger_io.record(
            store_of(ctx), action, target, evidence, note, failed, allow_secret=allow_secret
        )
    except ClaimHeld as e:
        click.echo(f"Error: {e}", err=True)
        ctx.exit(3)
    detail = event.evidence or event.note or ""
    return Result(
        _event_json(event),
        f"recorded {event.status} {action} {target} — {detail} (event {event.id})",
    )


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

    events = ledger_io.events(store_of(ctx), action, target, actor, since)
    if as_json:
        echo_json([_event_json(e) for e in events])
        return
    for e in events:
        detail = e.evidence or e.note or (f"until {e.expires}" if e.expires else "")
        click.echo(f"{e.at}  {e.actor:16} {e.status:8} {e.action} {e.target}  {detail}".rstrip())
    if not events:
        click.echo("no ledger events match", err=True)


@ledger_group.command(name="verify")
@click.pass_context
@reports
def ledger_verify(ctx: click.Context) -> Result:
    """Check every line's hash and link, and that the file holds every line git committed.

    Prints each problem (an edited line, a deleted line, a line git has that the file lost, a
    line no commit has, on which claim and record refuse too) and exits 1 if there is any; a
    union merge of two branches verifies.

    \b
    Example:
      memstore ledger verify
    """
    from memstore.model.words import plural
    from memstore.workflow.ledger import book as ledger_io

    result = ledger_io.verify(store_of(ctx))
    data = {**asdict(result), "problems": list(result.problems), "warnings": list(result.warnings)}
    notes = [w if w.startswith("WARNING") else f"warning: {w}" for w in result.warnings]
    if not result.ok:
        return Result(
            data,
            list(result.problems),
            notes=notes,
            failure=f"ledger verification failed: {plural(len(result.problems), 'problem')}",
        )
    return Result(
        data,
        f"ok: {plural(result.events, 'event')} on {plural(result.lines, 'line')}, "
        f"{plural(result.heads, 'head')}, {result.committed} committed to git",
        notes=notes,
    )


COMMANDS: tuple[click.Command, ...] = (ledger_group,)
"""The commands `main` registers from this module."""
