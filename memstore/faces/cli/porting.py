"""Commands that move knowledge in and out of a store: import and export."""

from __future__ import annotations

from typing import Any

import click

from memstore.faces.cli.common import allow_secret_option, asdict, echo_json, store_of

EXPORT_FORMATS = ("jsonl", "json", "markdown")
"""`porting.FORMATS`."""


def _imported_lines(result: Any, verbose: bool) -> list[str]:
    """What an import or a close did, a line each: counts, then each draft, then skips."""
    kinds = ", ".join(f"{n} {t}" for t, n in sorted(result.by_type.items())) or "nothing new"
    verb = "would create" if result.dry_run else "created"
    lines = [
        f"found {result.found}, {verb} {len(result.created)} ({kinds}), "
        f"skipped {_skips(result.skipped)}"
        + (f" — commit {result.commit[:12]}" if result.commit else "")
    ]
    origins = result.origins or ("",) * len(result.created)
    for what, origin in zip(result.created, origins, strict=True):
        lines.append(f"  + {what}")
        if origin and (verbose or result.dry_run):  # the mapping: what it was, and how
            lines.append(f"      ← {origin}")
    if verbose:
        lines += [f"  = {what}: {why}" for what, why in result.skipped]
    return lines


def _skips(skipped: tuple[tuple[str, str], ...]) -> str:
    """`0 already in the store`, `1 deprecated (--exact keeps it)`, or `3: 2 …, 1 …`: the
    count by reason, so a deprecated memory left out is not said to be in the store."""
    from collections import Counter

    def kind(why: str) -> str:
        if why.startswith("deprecated"):
            return "deprecated (--exact keeps them)"
        return "whose name is taken" if why.endswith(" exists") else why

    counts = Counter(kind(why) for _, why in skipped)
    if len(counts) <= 1:
        reason = next(iter(counts), "already in the store")
        return f"{len(skipped)} {reason}"
    return f"{len(skipped)}: " + ", ".join(f"{n} {reason}" for reason, n in counts.items())


@click.command(name="import")
# click.Path yields a str here, made a Path when the command runs: so that `memstore --help`
# never loads pathlib (nor urllib.parse and ipaddress with it).
@click.argument("path", type=click.Path(exists=True))
@click.option("--dry-run", is_flag=True, help="List what would be created; write nothing.")
@click.option(
    "--exact",
    is_flag=True,
    help="Write an export's memory files back byte for byte (status, owner and trail too).",
)
@click.option("--verbose", "-v", is_flag=True, help="Also list what was skipped, and why.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@allow_secret_option
@click.pass_context
def import_(
    ctx: click.Context,
    path: str,
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
    from pathlib import Path

    from memstore.workflow.care import porting

    result = porting.import_path(
        store_of(ctx), Path(path), dry_run=dry_run, allow_secret=allow_secret, exact=exact
    )
    if as_json:
        echo_json(asdict(result))
        return
    for line in _imported_lines(result, verbose):
        click.echo(line)


@click.command()
@click.option(
    "--format",
    "format_",
    type=click.Choice(list(EXPORT_FORMATS)),
    default="jsonl",
    show_default=True,
    help="jsonl/json: every file's exact text (import --exact restores it); markdown: one "
    "context file.",
)
# A str, as import's PATH is.
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write here.")
@click.option("--type", "type_", metavar="TYPE", help="Only this type.")
@click.option("--status", type=click.Choice(["draft", "confirmed", "deprecated", "unverified"]))
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="Has this tag (repeat: AND).")
@click.pass_context
def export(
    ctx: click.Context,
    format_: str,
    output: str | None,
    type_: str | None,
    status: str | None,
    tags: tuple[str, ...],
) -> None:
    """Write the store's memories (or a filtered part) to stdout or --output.

    jsonl and json hold each memory file's exact text: `memstore import --exact` of the
    export in another store writes the same files, byte for byte (a plain import makes each
    memory your draft, and leaves deprecated ones out). markdown is one context file (rules
    first, each with its status) for tools that read a single file; it leaves deprecated
    memories out unless --status asks for them.

    \b
    Example:
      memstore export > memory-export.jsonl
      memstore export --format markdown --status confirmed -o CONTEXT.md
    """
    from pathlib import Path

    from memstore.workflow.care import porting

    store = store_of(ctx)
    where = Path(output) if output is not None else None
    target = porting.check_output(store, where) if where is not None else None
    text = porting.export(store, format_, type=type_, status=status, tags=tags)
    if target is None:
        click.echo(text, nl=False)
        return
    target.write_text(text, encoding="utf-8", newline="\n")
    click.echo(f"wrote {where}", err=True)


COMMANDS: tuple[click.Command, ...] = (
    import_,
    export,
)
"""The commands `main` registers from this module."""
