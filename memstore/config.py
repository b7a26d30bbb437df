"""Configuration resolved once from CLI flags and `MEMSTORE_*` environment variables.

A store's own settings, in its `memstore.yaml`, are read by `storage/settings.py`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_STORE = "memory"
STORE_CONFIG = "memstore.yaml"
"""A store's own settings file at its root (e.g. extra memory types)."""


@dataclass(frozen=True, slots=True)
class Config:
    """Where the store is and who is acting."""

    store: Path
    agent: str | None
    lock_timeout: float = 10.0


def resolve(store: str | None = None, agent: str | None = None) -> Config:
    """Flags win over `MEMSTORE_DIR` / `MEMSTORE_AGENT`; the store defaults to `./memory`."""
    store_dir = store or os.environ.get("MEMSTORE_DIR") or DEFAULT_STORE
    identity = agent or os.environ.get("MEMSTORE_AGENT") or None
    timeout = float(os.environ.get("MEMSTORE_LOCK_TIMEOUT", "10"))
    return Config(
        store=Path(store_dir).expanduser().absolute(), agent=identity, lock_timeout=timeout
    )


SIGNING_KEY_VAR = "MEMSTORE_SIGNING_KEY"


def signing_key() -> str | None:
    """`MEMSTORE_SIGNING_KEY`: the path of the SSH private key memstore signs commits with."""
    return os.environ.get(SIGNING_KEY_VAR) or None
