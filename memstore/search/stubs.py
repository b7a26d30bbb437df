"""Loading Whoosh without the two modules it loads for nothing: every module importing Whoosh
does so under `without_unused_modules`, whichever of them a process loads first."""

from __future__ import annotations

import sys
import types
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

_UNUSED = {"urllib.request": "urlretrieve", "whoosh.lang.morph_en": "variations"}
"""Modules whoosh imports at load time for one function memstore never calls, and that
function: whoosh's py2/py3 shim loads `urllib.request` (with http.client and the email
package) for a download helper, and its query module compiles the English morphology rules
(a regex of some 200 alternatives) for `Variations` queries. Together about 80 ms and 7 MB a
process."""


def _stub(name: str, attr: str) -> types.ModuleType:
    stub = types.ModuleType(name)

    def load_then_call(*args: Any, **kwargs: Any) -> Any:
        import importlib

        if sys.modules.get(name) is stub:
            del sys.modules[name]
        return getattr(importlib.import_module(name), attr)(*args, **kwargs)

    setattr(stub, attr, load_then_call)
    return stub


@contextmanager
def without_unused_modules() -> Generator[None]:
    """While whoosh loads, each module in `_UNUSED` not yet loaded is a stub whose function
    loads the real module when called; afterwards, importing the module loads the real one."""
    stubs = {n: _stub(n, a) for n, a in _UNUSED.items() if n not in sys.modules}
    sys.modules.update(stubs)
    try:
        yield
    finally:
        for name, stub in stubs.items():
            if sys.modules.get(name) is stub:
                del sys.modules[name]
