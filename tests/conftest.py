"""Shared fixtures: every test gets real temporary git repositories and a real store."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstore.storage.store import Store

REPO = Path(__file__).resolve().parent.parent
"""The repository's top: its docs, README, package and bench scripts."""
DATA = Path(__file__).resolve().parent / "data"
"""Test data: the check banks, the reworded banks and a small project's files."""

# A test's git commands must not read the developer's or CI's global configuration.
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "human",
    "GIT_AUTHOR_EMAIL": "human@example.com",
    "GIT_COMMITTER_NAME": "human",
    "GIT_COMMITTER_EMAIL": "human@example.com",
}


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("MEMSTORE_DIR", "MEMSTORE_AGENT", "MEMSTORE_SIGNING_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("MEMSTORE_DIR", str(tmp_path / "memory"))
    yield


def git(cwd: Path, *args: str) -> str:
    """Run git as a human would in `cwd` and return its stdout."""
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """A fresh store in its own git repository, acting as `alice`."""
    return Store.init(tmp_path / "memory", agent="alice")


def processes_started(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """From now on, the command of every process started (to check a read forks none)."""
    started: list[object] = []
    popen = subprocess.Popen.__init__

    def record(self: subprocess.Popen[bytes], *args: Any, **kwargs: Any) -> None:
        started.append(args[0] if args else kwargs.get("args"))
        popen(self, *args, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", record)
    return started


def as_agent(store: Store, agent: str) -> Store:
    """The same store directory, opened by another identity (as another process would)."""
    return Store(store.root, agent=agent)


def name_humans(root: Path, *names: str) -> None:
    """Commit a `memstore.yaml` naming `names` as the store's humans, as a person would."""
    (root / "memstore.yaml").write_text(f"humans: [{', '.join(names)}]\n", encoding="utf-8")
    git(root, "add", "memstore.yaml")
    git(root, "commit", "-q", "-m", "name the store's humans")


def commit_settings(root: Path, text: str) -> None:
    """Write `memstore.yaml` and commit it, as a person would (trust settings count only once
    committed)."""
    (root / "memstore.yaml").write_text(text, encoding="utf-8")
    git(root, "add", "memstore.yaml")
    git(root, "commit", "-q", "-m", "settings")
