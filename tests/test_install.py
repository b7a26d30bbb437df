"""`pipx install .` and `uv tool install .`, as the README documents them, give a working
`memstore` command of its own (each tool with its own empty home, so nothing else is used)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    found = BIN / name
    if not found.exists():
        pytest.fail(f"{name} is not in {BIN}: `make test` installs it with the dev extra")
    return str(found)


def test_pipx_and_uv_install_a_memstore_that_runs(tmp_path: Path) -> None:
    homes = {"pipx": tmp_path / "pipx", "uv": tmp_path / "uv"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PIPX_", "UV_"))}
    pipx_env = {
        **env,
        "PIPX_HOME": str(homes["pipx"] / "home"),
        "PIPX_BIN_DIR": str(homes["pipx"] / "bin"),
        "PIPX_MAN_DIR": str(homes["pipx"] / "man"),
    }
    uv_env = {
        **env,
        "UV_TOOL_DIR": str(homes["uv"] / "tools"),
        "UV_TOOL_BIN_DIR": str(homes["uv"] / "bin"),
        "UV_PYTHON_PREFERENCE": "only-system",
        "UV_PYTHON": sys.executable,
    }
    # Both at once: each takes ~12 s on a cold cache, mostly fetching the dependencies.
    runs = [
        subprocess.Popen(
            [_tool("pipx"), "install", "--python", sys.executable, str(ROOT)],
            env=pipx_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ),
        subprocess.Popen(
            [_tool("uv"), "tool", "install", str(ROOT)],
            env=uv_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ),
    ]
    for run in runs:
        out, _ = run.communicate(timeout=600)
        assert run.returncode == 0, out
    for tool, home in homes.items():
        memstore = home / "bin" / "memstore"
        assert memstore.exists(), f"{tool} put no memstore command in {home / 'bin'}"
        store = tmp_path / f"store-{tool}"
        steps = [
            ["init", str(store)],
            ["--store", str(store), "add", "port", "--type", "fact", "-d", "API on 8080"],
            ["--store", str(store), "search", "port"],
        ]
        for args in steps:
            done = subprocess.run(
                [str(memstore), "--agent", "alice", *args],
                env=env,
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                timeout=120,
            )
            assert done.returncode == 0, f"{tool}: memstore {' '.join(args)}\n{done.stderr}"
        assert "port" in done.stdout
    shutil.rmtree(tmp_path, ignore_errors=True)
