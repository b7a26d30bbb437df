"""Configuration resolved once from CLI flags and `MEMSTORE_*` environment variables.

A store's own settings, in its `memstore.yaml`, are read by `storage/settings.py`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memstore.errors import InvalidMemory

DEFAULT_STORE = "memory"
AGENT_VAR = "MEMSTORE_AGENT"
STORE_CONFIG = "memstore.yaml"
"""A store's own settings file at its root (e.g. extra memory types)."""


@dataclass(frozen=True, slots=True)
class Config:
    """Where the store is and who is acting."""

    store: Path
    agent: str | None
    lock_timeout: float = 10.0


def resolve(store: str | None = None, agent: str | None = None) -> Config:
    """Flags win over `MEMSTORE_DIR` / `MEMSTORE_AGENT`; the store defaults to `./memory`.

    Raises:
        InvalidMemory: for an identity given empty (`--agent ""`, `MEMSTORE_AGENT=" "`): it
            would silently act as git's `user.name` instead.
    """
    store_dir = store or os.environ.get("MEMSTORE_DIR") or DEFAULT_STORE
    if agent is not None:
        value, source, example = agent, "--agent", "--agent alice"
    else:
        value, source, example = os.environ.get(AGENT_VAR), AGENT_VAR, f"{AGENT_VAR}=alice"
    if value is not None and not value.strip():
        raise InvalidMemory(
            f"{source} is empty: give a name ({example}), or leave it out to act as git's user.name"
        )
    identity = value or None
    timeout = float(os.environ.get("MEMSTORE_LOCK_TIMEOUT", "10"))
    return Config(
        store=Path(store_dir).expanduser().absolute(), agent=identity, lock_timeout=timeout
    )


SIGNING_KEY_VAR = "MEMSTORE_SIGNING_KEY"


def signing_key() -> str | None:
    """`MEMSTORE_SIGNING_KEY`: the path of the SSH private key memstore signs commits with."""
    return os.environ.get(SIGNING_KEY_VAR) or None
