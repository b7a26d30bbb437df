"""Commands that find and read memories: search, get, and rebuilding the index."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from memstore.faces.cli.common import (
    Result,
    echo_json,
    embedding_progress,
    json_object,
    reports,
    scope_list,
    store_of,
)
from memstore.limits import BUDGETS

if TYPE_CHECKING:
    from memstore.search.query import Hit


@click.command()
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
    type=click.Choice(list(BUDGETS)),
    help="3, 10 or 20 results (when --limit is not given; default normal).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    metavar="N",
    help="Keep only the leading whole results that fit in about N LLM tokens (chars/4).",
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
@click.option(
    "--scope",
    "scope_args",
    multiple=True,
    metavar="NAME[,NAME]",
    help="Only memories for one of these scopes (repeat, or a comma list), or for none.",
)
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
    scope_args: tuple[str, ...],
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
    from memstore.search.query import index_line
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
        scopes=scope_list(scope_args),
    )
    store = store_of(ctx)
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
        echo_json([json_object(h) for h in hits])
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


def _hit_line(hit: Hit) -> str:
    mark = f"[{hit.status}{', expired' if hit.expired else ''}]"
    via = f"  (via {hit.via})" if hit.via else ""
    tags = "  #" + " #".join(hit.tags) if hit.tags else ""
    return (
        f"{hit.score:7.2f}  {hit.name}  {hit.type} {mark}  {hit.updated[:10]}  "
        f"{hit.description}{tags}{via}"
    )


def _flag(field: str) -> str:
    """The search option that sets `Query` field `field`."""
    return {"tags": "--tag", "type": "--type", "index_view": "--index"}.get(
        field, "--" + field.replace("_", "-")
    )


@click.command()
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

    store = store_of(ctx)
    memories = store.get_many(list(names))
    notes = steward.drift_notes(store, memories)
    if as_json:
        echo_json([{**json_object(m), "note": notes.get(m.name)} for m in memories])
        return
    for i, memory in enumerate(memories):
        if i:
            click.echo("")
        click.echo(f"==> {memory.type}/{memory.name}.md <==")
        if memory.name in notes:
            click.echo(f"! {notes[memory.name]}")
        click.echo(render(memory), nl=False)


@click.command()
@click.pass_context
@reports
def reindex(ctx: click.Context) -> Result:
    """Rebuild the search index from the memory files (progress and time left on stderr).

    A large store's documents are analysed on every core, up to four.

    Searches catch up with changed files on their own; use this after the cache folder was
    copied around, or to be sure.

    \b
    Example:
      memstore --store memory reindex
    """
    import os

    from memstore.model.words import plural
    from memstore.search import upkeep as searching

    # Every core, up to four: each process builds segments of its own, and more of them make
    # each search look through more segments.
    procs = max(1, min(4, os.cpu_count() or 1))
    pace = Pace()
    with _why_skipped() as why:
        result = searching.reindex(
            store_of(ctx), pace, embedding_progress, procs, written=pace.writing
        )
    line = f"reindexed {plural(result.indexed, 'memory')}"
    if result.skipped:
        line += f"; skipped {plural(len(result.skipped), 'file')} that is no valid memory"
        line = line.replace("file that is", "files that are") if len(result.skipped) > 1 else line
    notes = [
        f"skipped {path}: {why.get(path, 'not a valid memory')} (`memstore lint` checks them all)"
        for path in result.skipped
    ]
    data = {
        "indexed": result.indexed,
        "skipped": [{"path": p, "why": why.get(p, "not a valid memory")} for p in result.skipped],
    }
    return Result(data, line, notes=notes)


@contextmanager
def _why_skipped() -> Generator[dict[str, str]]:
    """While inside, the index's `not indexing PATH: WHY` warnings are kept (PATH -> WHY)
    rather than printed: `reindex` names each skipped file once, with its reason."""
    import logging

    found: dict[str, str] = {}

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            args = record.args
            if record.msg == "not indexing %s: %s" and isinstance(args, tuple) and len(args) == 2:
                path, why = str(args[0]), str(args[1])
                # The reason usually starts with the file's own path: said once.
                found[path] = why.split(": ", 1)[1] if why.split(": ", 1)[0].endswith(path) else why

    logger = logging.getLogger("memstore.search.index")
    keep, propagate = Keep(), logger.propagate
    logger.addHandler(keep)
    logger.propagate = False
    try:
        yield found
    finally:
        logger.removeHandler(keep)
        logger.propagate = propagate


class Pace:
    """`reindex`'s progress on stderr: the files read ("read N/M files"), then the index
    written ("writing the index: N/M memories"), each with an estimate of the time left once
    the phase has lasted long enough for its rate to say something (`LONG` seconds), and a
    line every `EVERY` seconds at most. A short run says only that its files were read."""

    LONG = 2.0
    EVERY = 1.0

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.start = clock()
        self.last = -1.0
        """When the last line was printed (-1: none yet)."""
        self.read = False
        """Whether every file has been read."""
        self.writing_from: tuple[float, int] | None = None
        """When writing was first heard of once the files were read, and how far it was."""

    def _due(self, now: float) -> bool:
        return now - self.start >= self.LONG and (self.last < 0 or now - self.last >= self.EVERY)

    def __call__(self, done: int, total: int) -> None:
        """The files read."""
        now = self.clock()
        took = now - self.start
        if done < total and not self._due(now):
            return
        line = f"read {done}/{total} files"
        if 0 < done < total:
            left = took / done * (total - done)
            line += f", about {_duration(left)} left to read, then the index is written"
        elif done >= total:
            self.read = True
            if took >= self.LONG:
                line += ", writing the index"
        self.last = now
        click.echo(line, err=True)

    def writing(self, done: int, total: int) -> None:
        """The documents written into the index (those of segments written while files
        were still being read count from where writing stood once they all were)."""
        if not self.read:
            return
        now = self.clock()
        if self.writing_from is None:
            self.writing_from = (now, done)
            return
        start, base = self.writing_from
        if done >= total or now - start < self.LONG or not self._due(now) or done <= base:
            return
        left = (now - start) / (done - base) * (total - done)
        self.last = now
        click.echo(
            f"writing the index: {done}/{total} memories, about {_duration(left)} left", err=True
        )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 60)} min"


COMMANDS: tuple[click.Command, ...] = (
    search,
    get,
    reindex,
)
"""The commands `main` registers from this module."""
