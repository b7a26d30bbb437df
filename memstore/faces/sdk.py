"""Loading the `mcp` SDK for `memstore serve`: the server half only, its models built when used.

`import mcp` runs the package's `__init__`, which imports the client half too (`Client`, its
sessions and transports), and pydantic builds the validator and serializer of each of the SDK's
~550 protocol models (two protocol versions' worth) as its class is defined, though a server
answering `initialize` and `tools/list` uses a few dozen. Together that is most of the time
from spawn to the first `tools/list`. `load_server` imports the server modules under the bare
package and has pydantic defer each SDK model's build to its first use (pydantic's own
`defer_build`); validation and output are the same. Anything else asks `mcp` for runs the
package's `__init__` then, so `from mcp import Client` still works.

It serves the target "first `tools/list` ≤ 0.5 s at 10,000 memories" whenever the handshake has
no answer kept (the first server after an install, a code or `memstore.yaml` change, or of a
new client), and speeds every session's first tool call. Measured with the SDK's `Client`
over stdio against `memstore serve` on a 10,000-memory store (index built), 12 alternating
runs each, medians, load average 1.1–2.4 on 2 cores: with no answer kept, first `tools/list`
510 ms (min 418) against 630 ms without this module, 525 against 701 ms with `mode="legacy"`
(a bare SDK server, `bench/sdk_floor.py`: 517 and 566 ms); first `memory_recall` with answers
kept 694 against 847 ms, 701 against 829 ms (the early `tools/list` is the same, 56–60 ms).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import logging
import sys
import types
from collections.abc import Generator
from contextlib import contextmanager

log = logging.getLogger(__name__)

SERVER_MODULES = ("mcp.types", "mcp.server.mcpserver", "mcp.server.stdio")
"""What `memstore serve` imports from the SDK over stdio (server, toolkit and the transport)."""

KNOWN_MAJOR = "2"
"""The SDK major version whose layout this was written against: a package named `mcp` whose
`__init__` only re-exports (types, client, server). Another major version loads the usual way."""


def load_server() -> bool:
    """Import the SDK's server modules without its client half, models built on first use.

    Returns whether it did: False when `mcp` is already imported, or is of another major
    version, or its layout is not what this expects (then it is imported the usual way)."""
    if "mcp" in sys.modules:
        return False
    try:
        version = importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        version = ""
    if version.split(".")[0] != KNOWN_MAJOR:
        log.debug("mcp %s: importing it whole", version or "(no metadata)")
        return False
    spec = importlib.util.find_spec("mcp")
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return False
    package = _bare(spec)
    sys.modules["mcp"] = package
    try:
        with _models_deferred():
            for name in SERVER_MODULES:
                importlib.import_module(name)
    except Exception:
        # A layout this does not know: finish the package as `import mcp` would, so the
        # ordinary imports that follow either work or raise the SDK's own error.
        log.debug("mcp %s: light import failed; importing it whole", version, exc_info=True)
        _complete(package)
        return False
    return True


def _bare(spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
    """The package `mcp` with its submodule path but without running its `__init__`; the
    first name asked of it that is no submodule runs the `__init__` (PEP 562)."""
    package = importlib.util.module_from_spec(spec)

    def rest(name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        if importlib.util.find_spec(f"mcp.{name}") is not None:
            return importlib.import_module(f"mcp.{name}")
        _complete(package)
        return getattr(package, name)

    package.__getattr__ = rest
    return package


def _complete(package: types.ModuleType) -> None:
    """Run the package's `__init__` in it, once."""
    if "__getattr__" not in package.__dict__:
        return
    del package.__getattr__
    spec = package.__spec__
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(package)


@contextmanager
def _models_deferred() -> Generator[None]:
    """While inside, each pydantic model class and type adapter defined builds its validator on
    first use. Models take pydantic's `defer_build` setting from `BaseModel`'s config; a
    `TypeAdapter` over a union has no config of its own to carry it, so its `_defer_build`
    answer is set for the while (where pydantic has it: a version without it builds them at
    once). The SDK's six message-union adapters are never used by a server."""
    import pydantic

    config = pydantic.BaseModel.model_config
    if "defer_build" in config:
        yield
        return
    adapters = pydantic.TypeAdapter
    original = adapters.__dict__.get("_defer_build")
    deferred = isinstance(original, property)
    config["defer_build"] = True
    if deferred:
        setattr(adapters, "_defer_build", property(lambda _: True))  # noqa: B010
    try:
        yield
    finally:
        del config["defer_build"]
        if deferred:
            setattr(adapters, "_defer_build", original)  # noqa: B010
