"""How memstore declares MCP tools with the `mcp` SDK: a `MemstoreError` reaches the model as a
tool error with its message, schemas lose pydantic's titles, and the grouped mode lists one
dispatching tool per family."""

import functools
from collections.abc import Callable, Collection
from typing import Any, ParamSpec, TypeVar, cast

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedToolError,
)
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import ValidationError

from memstore.errors import InvalidName, MemoryNotFound, MemstoreError
from memstore.model.render_text import error_text

P = ParamSpec("P")
R = TypeVar("R")


def reported(fn: Callable[P, R]) -> Callable[P, R]:
    """Let a `MemstoreError` reach the model as a tool error carrying its message.

    The SDK hides the text of any exception other than `ToolError` (it may hold secrets), but a
    `MemstoreError` message is written for the caller to read and act on. It is fenced: it may
    quote a file (a malformed memory, the ledger) or the caller's own words.
    """

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except MemstoreError as e:
            raise ToolError(error_text(str(e) + e.mcp_hint)) from e

    return wrapper


def resource_reported(fn: Callable[P, R]) -> Callable[P, R]:
    """Like `reported`, for resources: a missing or malformed memory is a clear read error."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (MemoryNotFound, InvalidName) as e:
            raise ResourceNotFoundError(error_text(str(e))) from e
        except MemstoreError as e:
            raise ResourceError(error_text(str(e))) from e

    return wrapper


def compact_schema(schema: Any) -> Any:
    """`schema` without pydantic's generated `title` keys, nor the defaults an omitted argument
    means anyway (`false`, `""`), which every client pays for."""
    if isinstance(schema, dict):
        schema = _optional(schema)  # pyright: ignore[reportUnknownArgumentType]
        out: dict[str, Any] = {}
        for key, value in schema.items():  # pyright: ignore[reportUnknownVariableType]
            if key == "title" and isinstance(value, str):
                continue
            if key == "default" and (value is False or value == ""):
                continue
            if key in ("properties", "$defs") and isinstance(value, dict):
                out[key] = {k: compact_schema(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
            else:
                out[str(key)] = compact_schema(value)  # pyright: ignore[reportUnknownArgumentType]
        return out
    if isinstance(schema, list):
        return [compact_schema(v) for v in schema]  # pyright: ignore[reportUnknownVariableType]
    return schema


def _optional(schema: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [X, {"type": "null"}], "default": null}` as plain X: omitting it means None."""
    options: Any = schema.get("anyOf")
    if schema.get("default", ...) is not None or not isinstance(options, list):
        return schema
    kept: list[Any] = [o for o in options if o != {"type": "null"}]  # pyright: ignore[reportUnknownVariableType]
    if len(kept) != 1 or len(options) != 2 or not isinstance(kept[0], dict):  # pyright: ignore[reportUnknownArgumentType]
        return schema
    rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
    return {**kept[0], **rest}


class OneLineTool(Tool):
    """A tool whose arguments, when they do not fit its schema, are refused in one line that
    names each argument and what it should be (pydantic's own message spans several lines
    and links to its docs)."""

    async def run(
        self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False
    ) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except UnexpectedToolError:
            raise
        except ToolError as e:
            cause = e.__cause__
            if not isinstance(cause, ValidationError):
                raise
            said = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in cause.errors(include_url=False)
            )
            message = f"Error executing tool {self.name}: invalid arguments: {said}"
            raise ToolError(" ".join(message.split())) from cause


GROUPED = ("memory", "ledger")
"""The families the grouped mode folds into one tool each. `session_start` and `session_end`
stay tools of their own: instructions and hooks name them, and one is read-only."""


class Tools:
    """The tools of one server, collected so their schemas can be compacted before listing."""

    def __init__(self) -> None:
        self.tools: list[Tool] = []

    def __call__(
        self, annotations: ToolAnnotations
    ) -> Callable[[Callable[P, CallToolResult]], Callable[P, CallToolResult]]:
        def decorator(fn: Callable[P, CallToolResult]) -> Callable[P, CallToolResult]:
            tool = OneLineTool.from_function(reported(fn), annotations=annotations)
            description = " ".join(tool.description.split())
            self.tools.append(
                tool.model_copy(
                    update={
                        "parameters": compact_schema(tool.parameters),
                        "description": description,
                    }
                )
            )
            return fn

        return decorator

    def served(self, grouped: bool) -> tuple[list[Tool], ServerMiddleware[Any] | None]:
        """The tools a server runs and, in the grouped mode, the middleware that lists only the
        family tools: an ordinary name (`memory_recall`) still runs there, since agents,
        prompts and docs name the tools by it."""
        if not grouped:
            return self.tools, None
        listed = self.grouped()
        names = {t.name for t in listed}
        return [*listed, *(t for t in self.tools if t.name not in names)], _listing(names)

    def grouped(self) -> list[Tool]:
        """One dispatching tool per family of GROUPED (`memory_*` → `memory`); the others as
        they are."""
        families: dict[str, list[Tool]] = {}
        for t in self.tools:
            families.setdefault(t.name.split("_", 1)[0], []).append(t)
        out: list[Tool] = []
        for family, members in families.items():
            if family not in GROUPED or len(members) < 2 or any("_" not in t.name for t in members):
                out.extend(members)
            else:
                out.append(_dispatcher(family, members))
        return out


def _listing(names: Collection[str]) -> ServerMiddleware[Any]:
    """A middleware that leaves out of `tools/list` every tool not in `names` (they still run)."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        answer = await call_next(ctx)
        if ctx.method != "tools/list" or not isinstance(answer, dict):
            return answer  # the SDK shapes a result for the wire (a dict) inside the chain
        tools: Any = answer.get("tools")
        if not isinstance(tools, list):
            return answer
        kept: list[Any] = [t for t in cast(list[Any], tools) if _named(t) in names]
        return {**answer, "tools": kept}

    return middleware


def _named(listed: Any) -> object:
    """The name of a tool as the wire lists it (a mapping), or None."""
    return cast(dict[str, Any], listed).get("name") if isinstance(listed, dict) else None


def _signature(tool: Tool) -> str:
    props: dict[str, Any] = tool.parameters.get("properties", {})
    required: list[str] = tool.parameters.get("required", [])
    args = [p if p in required else f"{p}?" for p in props]
    first = tool.description.split(". ")[0].rstrip(".")
    return f"{tool.name.split('_', 1)[1]}({', '.join(args)}): {first}."


def _dispatcher(family: str, members: list[Tool]) -> Tool:
    """A tool `family(op, args)` that runs `family_<op>` with `args`, validated the same way."""
    by_op = {t.name.split("_", 1)[1]: t for t in members}
    read_only = all(t.annotations is not None and t.annotations.read_only_hint for t in members)

    async def dispatch(
        op: str, ctx: Context[Any, Any], args: dict[str, Any] | None = None
    ) -> CallToolResult:
        tool = by_op.get(op)
        if tool is None:
            raise ToolError(f"unknown op {op!r}; ops are: {', '.join(by_op)}")
        try:
            done = await tool.run(args or {}, ctx, convert_result=True)
        except UnexpectedToolError:
            raise
        except ToolError as e:  # drop the inner "Error executing tool x: " the outer adds again
            raise ToolError(str(e).split(": ", 1)[-1]) from e
        if not isinstance(done, CallToolResult):
            raise ToolError(f"op {op!r} asked for input this server does not request")
        return done

    description = f"{family} operations; args per op (? = optional): " + " ".join(
        _signature(t) for t in members
    )
    tool = OneLineTool.from_function(
        dispatch,
        name=family,
        description=description,
        annotations=ToolAnnotations(read_only_hint=read_only, open_world_hint=False),
    )
    schema = compact_schema(tool.parameters)
    schema["properties"]["op"]["enum"] = list(by_op)
    return tool.model_copy(update={"parameters": schema})
