"""Commands a session runs around its work: correct, check, outcome, brief and close."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from memstore.faces.cli.common import (
    Result,
    asdict,
    comma_list,
    config_of,
    echo_json,
    label,
    memory_json,
    reports,
    scope_list,
    stdin_text,
    store_of,
)
from memstore.limits import BRIEFING_BUDGET, BRIEFING_BUDGET_MIN, SEVERITIES

if TYPE_CHECKING:
    from memstore.storage.store import Store

# The choices below are the core's (test_cli.py keeps them equal), spelled out here so that
# registering the commands imports no core module.
RULE_TYPES = ("correction", "warning")
"""`workflow.RULE_TYPES`."""


OUTCOMES = ("heeded", "recurred")
"""The values of `stats.Outcome`."""


@click.command()
@click.argument("name", required=False)
@click.option("--description", "-d", help="The rule, in one line.")
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
@click.option(
    "--hook",
    type=click.Choice(["claude-code"]),
    help="Read a UserPromptSubmit hook payload on stdin and save the corrections its prompt "
    "sets, as drafts of the person (--agent, else git user.name); never fails the prompt.",
)
@click.pass_context
@reports
def correct(
    ctx: click.Context,
    name: str | None,
    description: str | None,
    severity: str | None,
    applies_when: tuple[str, ...],
    evidence: str | None,
    body: str | None,
    tags: str | None,
    type_: str,
    hook: str | None,
) -> Result:
    """Record a correction NAME. It starts as a draft but acts in `brief` and `check` at once.

    With --hook claude-code (a UserPromptSubmit hook), the person's prompt is read instead:
    a sentence that sets a standing rule ("no — never bump the version without asking",
    "from now on …") becomes a draft correction with a short name, the prompt as evidence.

    \b
    Example:
      memstore correct no-publish-on-bump --severity p0 \\
          --description "Never npm publish from a version-bump commit; CI publishes tags" \\
          --applies-when "npm publish" --applies-when "version bump" \\
          --evidence "Stop publishing by hand, the release job does it."
      memstore correct --hook claude-code    # in a UserPromptSubmit hook
    """
    if hook:
        _correct_from_prompt(ctx)
        return Result(None)  # the hook's answer is printed already, or nothing
    if name is None:
        raise click.UsageError("Missing argument 'NAME'.")
    if description is None:
        raise click.UsageError("Missing option '--description' / '-d'.")
    from memstore.workflow.session import agent as session

    memory = session.correct(
        store_of(ctx),
        name,
        description=description,
        severity=severity,
        applies_when=applies_when,
        evidence=evidence,
        body=body or "",
        tags=comma_list(tags) or (),
        type=type_,
    )
    severity_shown = memory.extra.get("severity", "")
    return Result(
        memory_json(memory),
        f"recorded {label(memory)} {severity_shown}: it acts in brief and check now",
    )


HOOK_LOCK = 3.0
"""The longest the prompt hook waits for the store's lock, in seconds (its timeout is 10)."""


def _correct_from_prompt(ctx: click.Context) -> None:
    """The UserPromptSubmit hook: save the prompt's corrections as the person's drafts and
    tell Claude; whatever goes wrong, the prompt goes on (exit 0, nothing on stdout)."""
    import json

    try:
        from memstore.faces import hooks
        from memstore.workflow.session import heard

        prompt, session_id = hooks.prompt_of(json.loads(stdin_text(only_if_piped=False) or "null"))
        if not heard.corrections(prompt):
            return  # the common case: no store opened
        from memstore.storage.store import Store

        # The person at the keyboard: --agent on the hook's command line, else git's
        # user.name; never $MEMSTORE_AGENT, which Claude Code's settings set to the agent.
        config = config_of(ctx)
        # A store busy for long must not hold up the prompt: give up within HOOK_LOCK seconds.
        lock = min(config.lock_timeout, HOOK_LOCK)
        store = Store(config.store, ctx.find_root().params.get("agent"), lock)
        saved = heard.capture(store, prompt, session_id)
        owner = store.identity or ""
        pairs = list(
            zip((p.partition("/")[2] for p in saved.created), saved.descriptions, strict=True)
        )
        output = hooks.prompt_output(pairs, owner)
    except Exception as e:  # noqa: BLE001 — a hook must never break the prompt
        click.echo(f"memstore: no correction saved from the prompt: {e}", err=True)
        return
    if output is not None:
        click.echo(json.dumps(output, ensure_ascii=False))


def _touched(store: Store, payload: object, target: str | None, command: str) -> str:
    """For a PreToolUse call: record this session's edit of `target` (an edit tool), and say
    which other live sessions changed that file, or the files a shell command names; ""
    when none did. A soft warning: a failure here says nothing and costs the check nothing."""
    from memstore.faces import hooks
    from memstore.workflow.session import touches

    try:
        session_id, tool, cwd = hooks.session_of(payload)
        if tool in hooks.EDIT_TOOLS and target:
            path = touches.relative(store, target, cwd)
            found = touches.others(store, session_id or None, paths=[path])
            touches.record(store, session_id, path, tool)
        elif tool == "Bash":
            found = touches.others(store, session_id or None, text=command)
        else:
            return ""
        return touches.note(found)
    except Exception as e:  # noqa: BLE001 — never let the warning cost the check
        click.echo(f"memstore: file touches not read: {e}", err=True)
        return ""


@click.command(name="check")
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
@click.option(
    "--scope",
    "scope_args",
    multiple=True,
    metavar="NAME[,NAME]",
    help="Only the rules and runbooks for one of these scopes (repeat, or a comma list), or "
    "for none.",
)
@click.pass_context
def check_(
    ctx: click.Context,
    description: str | None,
    action: str | None,
    target: str | None,
    as_json: bool,
    hook: str | None,
    ask_on_warn: bool,
    scope_args: tuple[str, ...],
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

    payload: object = None
    if hook:
        try:
            payload = json.loads(stdin_text(only_if_piped=False) or "null")
        except ValueError as e:
            raise click.ClickException(f"the hook payload on stdin is not JSON: {e}") from e
        description, target = hooks.hook_action(payload)
    if not description and not action:
        raise click.UsageError("describe the action, e.g. memstore check 'npm publish 1.4.1'")
    store = store_of(ctx)
    result = session.check(
        store,
        description or "",
        action=action,
        target=None if hook else target,
        scopes=scope_list(scope_args),
        path=target if hook else None,
    )
    if hook:
        also = _touched(store, payload, target, description or "")
        output = hooks.claude_code_output(result, ask_on_warn=ask_on_warn, also=also)
        if output is not None:
            click.echo(json.dumps(output, ensure_ascii=False))
        return
    if as_json:
        echo_json(asdict(result))
    else:
        click.echo(workflow.render_check(result))
    ctx.exit(workflow.EXIT_CODES[result.verdict])


@click.command()
@click.argument("name")
@click.argument("outcome", type=click.Choice(list(OUTCOMES)))
@click.option("--evidence", help="What happened (one line): the command, the commit, the PR.")
@click.pass_context
@reports
def outcome(ctx: click.Context, name: str, outcome: str, evidence: str | None) -> Result:
    """Record that correction NAME was heeded or recurred (an append-only, committed record).

    \b
    Example:
      memstore outcome no-publish-on-bump heeded --evidence "left publishing to CI for 1.4.1"
    """
    from memstore.workflow.session import agent as session

    record = session.record_outcome(store_of(ctx), name, outcome, evidence)
    return Result(
        {**asdict(record), "outcome": record.outcome.value},
        f"recorded {record.outcome.value} for {record.name} [{record.status}]",
    )


@click.command()
@click.option("--for", "for_text", metavar="TEXT", help="The task at hand, to pick what applies.")
@click.option(
    "--budget-tokens",
    type=click.IntRange(min=BRIEFING_BUDGET_MIN),
    default=BRIEFING_BUDGET,
    show_default=True,
    help="Approximate size limit in LLM tokens (characters / 4); the least important parts are "
    "cut first.",
)
@click.option(
    "--since",
    metavar="COMMIT|WHEN",
    help="Changes since a commit, 24h, 7d, a date (from its start) or a time, not your last "
    "session.",
)
@click.option("--no-mark", is_flag=True, help="Do not count this as a session for next time.")
@click.option("--json", "as_json", is_flag=True, help="Print text, LLM tokens, budget and cuts.")
@click.option(
    "--fenced",
    is_flag=True,
    help="Fence what agents and people wrote as data, for output that goes into an agent's "
    "context (e.g. a SessionStart hook).",
)
@click.option(
    "--scope",
    "scope_args",
    multiple=True,
    metavar="NAME[,NAME]",
    help="Only what is for one of these scopes (repeat, or a comma list), or for none.",
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
    scope_args: tuple[str, ...],
) -> None:
    """Print the session briefing: rules that apply, knowledge, reviews, changes, claims.

    \b
    Example:
      memstore brief --for "release 1.4.1 to npm" --budget-tokens 800
      memstore brief --fenced        # in a client's SessionStart hook
    """
    from memstore.workflow.session import briefing, touches

    result = briefing.brief(
        store_of(ctx),
        for_text=for_text,
        budget_tokens=budget_tokens,
        since=since,
        mark=not no_mark,
        fenced=fenced,
        scopes=scope_list(scope_args),
        client=touches.client_pid(),
    )
    if as_json:
        echo_json(asdict(result))
    else:
        click.echo(result.text, nl=False)


@click.command(name="close")
@click.argument("summary", required=False)
@click.option(
    "--file",
    "-f",
    "from_file",
    type=click.Path(exists=True, dir_okay=False),  # a str: pathlib loads only if it is given
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
    from_file: str | None,
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
            payload: object = json.loads(stdin_text(only_if_piped=False) or "null")
        except ValueError as e:
            raise click.ClickException(f"the hook payload on stdin is not JSON: {e}") from e
        text = hooks.session_text(payload)
        if not text.strip():
            return  # a session with nothing said: nothing to close
    elif from_file is not None:
        from pathlib import Path

        text = Path(from_file).read_text(encoding="utf-8", errors="replace")
    else:
        text = summary if summary is not None else stdin_text(only_if_piped=True)
    result = closing.close(store_of(ctx), text, dry_run=dry_run)
    if as_json:
        echo_json(asdict(result))
        return
    click.echo(closing.text(result, fenced=fenced), nl=False)


COMMANDS: tuple[click.Command, ...] = (
    correct,
    check_,
    outcome,
    brief,
    close_,
)
"""The commands `main` registers from this module."""
