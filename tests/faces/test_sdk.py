"""`memstore serve` loads the SDK's server half with its models built on first use, and falls
back to the ordinary import whenever that cannot be done. Each case runs in a fresh Python,
since what it checks is which modules a process has imported."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.conftest import REPO

ROOT = REPO


def run(code: str) -> dict[str, object]:
    """Run `code` in a fresh interpreter; it prints one JSON object, which is returned."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_server_half_loads_without_the_client_and_models_build_on_use() -> None:
    seen = run(
        """
        import json, sys
        from memstore.faces import sdk
        loaded = sdk.load_server()
        import mcp_types, pydantic
        client = "mcp.client.client" in sys.modules
        deferred = not mcp_types.Tool.__pydantic_complete__
        tool = mcp_types.Tool(name="t", input_schema={"type": "object"})
        dumped = tool.model_dump(by_alias=True, exclude_none=True)
        # pydantic's own defaults are back: a model or adapter made now is built at once
        class Later(pydantic.BaseModel):
            x: int
        adapter = pydantic.TypeAdapter(int | str)
        from mcp import Client
        from mcp.server.mcpserver import MCPServer
        import mcp
        print(json.dumps({
            "loaded": loaded,
            "client_before": client,
            "deferred": deferred,
            "dumped": dumped,
            "later_complete": Later.__pydantic_complete__,
            "adapter_complete": adapter.pydantic_complete,
            "config": dict(pydantic.BaseModel.model_config),
            "client_after": Client.__module__,
            "types": mcp.types.Tool is mcp_types.Tool,
            "server": MCPServer.__name__,
        }))
        """
    )
    assert seen == {
        "loaded": True,
        "client_before": False,
        "deferred": True,
        "dumped": {"name": "t", "inputSchema": {"type": "object"}},
        "later_complete": True,
        "adapter_complete": True,
        "config": {},
        "client_after": "mcp.client.client",
        "types": True,
        "server": "MCPServer",
    }


def test_a_bad_message_is_still_refused_by_a_deferred_model() -> None:
    seen = run(
        """
        import json
        from memstore.faces import sdk
        sdk.load_server()
        import pydantic
        from mcp.types import CallToolResult
        try:
            CallToolResult(content="not a list")
            refused = False
        except pydantic.ValidationError:
            refused = True
        print(json.dumps({"refused": refused}))
        """
    )
    assert seen == {"refused": True}


def test_an_sdk_already_imported_is_left_alone() -> None:
    seen = run(
        """
        import json, sys
        import mcp
        from memstore.faces import sdk
        print(json.dumps({"loaded": sdk.load_server(), "same": sys.modules["mcp"] is mcp}))
        """
    )
    assert seen == {"loaded": False, "same": True}


def test_another_major_version_is_imported_the_usual_way() -> None:
    seen = run(
        """
        import json, sys
        from memstore.faces import sdk
        sdk.KNOWN_MAJOR = "99"
        loaded = sdk.load_server()
        print(json.dumps({"loaded": loaded, "imported": "mcp" in sys.modules}))
        """
    )
    assert seen == {"loaded": False, "imported": False}


def test_a_layout_it_does_not_know_falls_back_to_the_whole_package() -> None:
    seen = run(
        """
        import json, sys
        from memstore.faces import sdk
        sdk.SERVER_MODULES = ("mcp.types", "mcp.server.no_such_module")
        loaded = sdk.load_server()
        import mcp
        from mcp.server.mcpserver import MCPServer
        import pydantic
        print(json.dumps({
            "loaded": loaded,
            "client": "mcp.client.client" in sys.modules,
            "has_client": hasattr(mcp, "Client"),
            "config": dict(pydantic.BaseModel.model_config),
        }))
        """
    )
    assert seen == {"loaded": False, "client": True, "has_client": True, "config": {}}
