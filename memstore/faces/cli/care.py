"""Commands that look the store over: lint, doctor and stats, and the allowed signers that lint
checks commits against."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from memstore.faces.cli.common import (
    Result,
    asdict,
    echo_json,
    embedding_progress,
    reports,
    store_of,
)

if TYPE_CHECKING:
    from memstore.storage.store import Store
    from memstore.workflow.care.lint import Problem
    from memstore.workflow.care.steward import Figures, Report


@click.command()
@click.option(
    "--staged",
    is_flag=True,
    help="Check the store's files as git's index holds them (what the next commit will hold), "
    "not the working tree: what the pre-commit hook runs.",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Read and check every file and replay the whole history, trusting nothing kept "
    "under .memstore/ (what a fresh clone does); what it finds is kept for the next run.",
)
@click.pass_context
@reports
def lint(ctx: click.Context, staged: bool, no_cache: bool) -> Result:
    """Check every file in the store and how each confirmation was committed.

    Reports bad names, unknown types or statuses, duplicates, over-long descriptions, YAML
    errors (with the line), self-approvals and confirmations committed by someone other than
    the identity they name. Exits 1 if anything is wrong, so hooks and CI can enforce it.

    Each file's checks are kept in .memstore/ by its stamp and blob id, and the history's
    verdicts for the HEAD they were made at: a file not changed since the last run is not
    read again, and only the commits since are judged. --no-cache checks it all anew.

    \b
    Example:
      memstore --store memory lint
      memstore --store memory --agent alice lint --staged   # before `git commit`
      memstore --store memory lint --no-cache               # as a fresh clone would
    """
    from memstore.model.words import plural
    from memstore.workflow.care import lint as linting

    store = store_of(ctx)
    memo = None if staged else linting.FileMemo(store, reuse=not no_cache)
    linted = linting.lint(store, staged=staged, memo=memo, whole=no_cache)
    problems = linted.problems
    data = {
        "ok": not problems,
        "staged": staged,
        "memories": linted.memories,
        "problems": [
            {"path": _path(store, p), "line": p.line, "message": p.message} for p in problems
        ],
    }
    if problems:
        files = len({p.path for p in problems})
        return Result(
            data,
            [_where(store, p) for p in problems],
            failure=f"{plural(len(problems), 'problem')} in {plural(files, 'file')}",
        )
    if staged:
        return Result(data, "ok: the staged store files have no problems")
    return Result(data, f"ok: {plural(linted.memories, 'memory')}, no problems")


def _where(store: Store, problem: Problem) -> str:
    """A lint problem with its file as the user would type it from where they stand."""
    path = _path(store, problem)
    where = f"{path}:{problem.line}" if problem.line else path
    return f"{where}: {problem.message}"


def _path(store: Store, problem: Problem) -> str:
    from memstore.storage.files import shown

    return problem.path if problem.path.startswith("/") else shown(store.root / problem.path)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@click.option("--no-lint", is_flag=True, help="Skip lint (it judges the whole history).")
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

    store = store_of(ctx)
    setup, report = steward.checkup(
        store, ctx.find_root().params.get("agent"), lint=not no_lint, embedded=embedding_progress
    )
    if as_json:
        echo_json({"setup": asdict(setup), **asdict(report), "ok": report.ok})
    else:
        for line in [*orientation.lines(setup, index=False), *_doctor_lines(report)]:
            click.echo(line)
    if not report.ok:
        ctx.exit(1)


DOCTOR_SHOWN = 5
"""How many of each kind `doctor` names before `… and N more` (all with --json)."""


def _doctor_lines(report: Report) -> list[str]:
    from memstore.model.words import plural

    lines = [f"{plural(report.memories, 'memory')}; index: {report.index}"]

    def section(title: str, items: list[str], advice: str) -> None:
        lines.append(f"{title}: {len(items) or 'none'}" + (f"  ({advice})" if items else ""))
        lines.extend(f"  {item}" for item in items[:DOCTOR_SHOWN])
        if len(items) > DOCTOR_SHOWN:
            lines.append(f"  … and {len(items) - DOCTOR_SHOWN} more (--json lists all)")

    section(
        "duplicate clusters",
        [
            f"{', '.join(c)}: `{fix}`"
            for c, fix in zip(report.duplicates, report.merges, strict=True)
        ],
        "merge each into the first named",
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


@click.command(name="stats")
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

    store = store_of(ctx)
    rates, overall = session.heed_rates(store)
    figures = steward.figures(store)
    if as_json:
        echo_json(
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


@click.group(name="signers")
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
@reports
def signers_add(ctx: click.Context, identity: str, public_key: str) -> Result:
    """Let the SSH key in KEYFILE.pub sign as IDENTITY (one commit, by you).

    \b
    Example:
      memstore signers add bob bob_ed25519.pub
    """
    from pathlib import Path

    from memstore.errors import InvalidMemory
    from memstore.storage import signers

    try:
        text = Path(public_key).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidMemory(f"cannot read the public key {public_key}: {e}") from e
    key = signers.add(store_of(ctx), identity, text)
    if key is None:
        return Result({"identity": identity, "added": False}, f"already allowed: {identity}")
    return Result(
        {"identity": key.identity, "fingerprint": key.fingerprint, "added": True},
        f"allowed {key.identity} to sign with {key.fingerprint}",
    )


@signers_group.command(name="list")
@click.pass_context
@reports
def signers_list(ctx: click.Context) -> Result:
    """Show each allowed signer and its key's fingerprint; unusable lines go to stderr, exit 1.

    \b
    Example:
      memstore signers list
    """
    from memstore.storage import signers

    keys, problems = signers.allowed(store_of(ctx))
    return Result(
        {
            "signers": [{"identity": k.identity, "fingerprint": k.fingerprint} for k in keys],
            "problems": list(problems),
        },
        [f"{key.identity:<24} {key.fingerprint}" for key in keys],
        notes=[f"problem: {problem}" for problem in problems],
        status=1 if problems else 0,
    )


COMMANDS: tuple[click.Command, ...] = (
    lint,
    doctor,
    stats_,
    signers_group,
)
"""The commands `main` registers from this module."""
