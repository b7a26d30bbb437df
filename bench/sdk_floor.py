"""The `mcp` SDK's own cost of a tool call: a server built the way `memstore serve` is (the
SDK's `MCPServer` over its stdio transport, a plain function as the tool), whose one tool does
nothing but return a fixed answer. bench/compare.py runs it beside `memstore serve` and
server-memory, with memstore's own answer to one of the questions, so the difference between
it and `memory_recall` is memstore's share of a recall and the rest is the SDK's.

    .venv/bin/python bench/sdk_floor.py ANSWER.json     # serves over stdio until stdin closes

ANSWER.json is a `tools/call` result as the client received it (content and structured
content); the tool `answer` returns it unchanged, whatever its arguments.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult


def main() -> None:
    fixed = CallToolResult.model_validate(json.loads(Path(sys.argv[1]).read_text("utf-8")))
    server = MCPServer("sdk-floor")

    @server.tool()
    def answer(query: str) -> CallToolResult:
        """Return the fixed answer."""
        return fixed

    server.run()


if __name__ == "__main__":
    main()
