"""What the command groups share: the store an invocation names, stdin, comma lists, JSON
output, and the options several commands take. Light on purpose: `memstore --help` loads it."""

from __future__ import annotations

import sys
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
