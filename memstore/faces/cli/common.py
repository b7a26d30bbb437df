"""What the command groups share: the store an invocation names, stdin, comma lists, JSON
output, and the options several commands take. Light on purpose: `memstore --help` loads it."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from memstore.config import Config
    from memstore.model.memory import Memory
    from memstore.storage.store import Store


def config_of(ctx: click.Context) -> Config:
    """The configuration `main` resolved from the global options and the environment."""
    config: Config = ctx.obj["config"]
    return config


def stdin_text(only_if_piped: bool) -> str:
    """The text on stdin; empty when `only_if_piped` and stdin is a terminal or closed."""
    stream = sys.stdin
    if stream is None or (only_if_piped and stream.isatty()):  # pyright: ignore[reportUnnecessaryComparison]
        return ""
    return stream.read()


def store_of(ctx: click.Context) -> Store:
    """The store the invocation names, acting as its identity."""
    from memstore.storage.store import Store

    config = config_of(ctx)
    return Store(config.store, config.agent, config.lock_timeout)


def scope_list(values: tuple[str, ...]) -> tuple[str, ...]:
    """The scopes of repeated `--scope` options, each possibly a comma list, checked.

    Raises:
        click.BadParameter: for a scope that is not a short word.
    """
    from memstore.errors import InvalidMemory
    from memstore.model.fields import check_scope

    parts = [p.strip() for v in values for p in v.split(",") if p.strip()]
    try:
        return check_scope(parts)
    except InvalidMemory as e:
        raise click.BadParameter(str(e), param_hint="--scope") from e


def asdict(value: Any) -> dict[str, Any]:
    """`dataclasses.asdict`, imported by the commands that print JSON."""
    import dataclasses

    return dataclasses.asdict(value)


def comma_list(value: str | None) -> tuple[str, ...] | None:
    """The parts of `A,B` with blanks dropped; None when the option was not given."""
    if value is None:
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())


def json_object(item: Any) -> dict[str, Any]:
    """A memory or a search hit as a JSON object, its tuples as lists."""
    data = asdict(item)
    for key, value in list(data.items()):
        if isinstance(value, tuple):
            data[key] = list(value)  # pyright: ignore[reportUnknownArgumentType]
    return data


def echo_json(data: object) -> None:
    import json

    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def label(memory: Memory) -> str:
    """`type/name [status]`, as the writing commands report a memory."""
    return f"{memory.type}/{memory.name} [{memory.status}]"


def embedding_progress(done: int, total: int) -> None:
    """Semantic recall's pace through memories it has not embedded yet, on stderr."""
    click.echo(f"embedded {done}/{total} memories for semantic recall", err=True)


# Options several commands share.
allow_secret_option = click.option(
    "--allow-secret",
    is_flag=True,
    help="Save text that looks like a credential (a key, token or password) anyway.",
)
expect_version_option = click.option(
    "--expect-version",
    metavar="VERSION",
    help="Refuse if the memory is no longer at this version (from `show`).",
)


class Result:
    """What a command reports: the lines a person reads (stdout), notes for them (stderr),
    the data `--json` prints instead of the lines, and how the command ends: `failure` is
    said as `Error: …` on stderr with exit 1, in both forms; `status` is an exit code
    without one."""

    def __init__(
        self,
        data: object,
        lines: str | Iterable[str] = (),
        *,
        notes: Iterable[str] = (),
        failure: str | None = None,
        status: int = 0,
    ) -> None:
        self.data = data
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        self.notes = list(notes)
        self.failure = failure
        self.status = status

    def print(self, as_json: bool) -> None:
        if as_json:
            echo_json(self.data)
        else:
            for line in self.lines:
                click.echo(line)
        for note in self.notes:
            click.echo(note, err=True)
        if self.failure is not None:
            raise click.ClickException(self.failure)
        if self.status:
            raise click.exceptions.Exit(self.status)


JSON_HELP = "Print the result as JSON (each command's shape: docs/cli.md, JSON output)."


def reports(command: Callable[..., Result]) -> Callable[..., None]:
    """Give `command` the `--json` flag: it returns a `Result`, printed as lines or as JSON.

    Goes under `@click.command()` (and `@click.pass_context`), over the function."""

    @click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
    @functools.wraps(command)
    def reporting(*args: Any, as_json: bool, **kwargs: Any) -> None:
        command(*args, **kwargs).print(as_json)

    return reporting


def memory_json(memory: Memory) -> dict[str, Any]:
    """The memory a writing command changed, as `show --json` prints it (without `version`)."""
    return json_object(memory)
