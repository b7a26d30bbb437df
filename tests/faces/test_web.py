"""`memstore serve --http`: the real SDK client over streamable HTTP, bearer tokens deciding who
acts, and `memstore token`."""

from __future__ import annotations

import stat
import subprocess
import sys

import anyio
import httpx2
import pytest
from click.testing import CliRunner

from memstore.faces import bearer
from memstore.faces.cli.main import main
from memstore.storage.store import Store
from tests.conftest import git
from tests.http_server import add_token, http_server, mcp_client, server_env
from tests.mcp_client import data, text

pytestmark = pytest.mark.anyio


def _commits(store: Store) -> list[str]:
    return git(store.root, "log", "--format=%an|%s").splitlines()


STORE_CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {
        "name": "memory_store",
        "arguments": {"name": "sneaky", "type": "decision", "description": "no token"},
    },
}


async def test_a_request_without_a_valid_token_gets_401_and_changes_nothing(store: Store) -> None:
    add_token(store.root, "bob")
    before = _commits(store)
    with http_server(store.root) as server:
        async with httpx2.AsyncClient() as http:
            bare = await http.post(server.mcp, json=STORE_CALL)
            wrong = await http.post(
                server.mcp, json=STORE_CALL, headers={"Authorization": "Bearer mst_wrong"}
            )
            basic = await http.post(
                server.mcp, json=STORE_CALL, headers={"Authorization": "Basic Ym9iOmJvYg=="}
            )
    assert [bare.status_code, wrong.status_code, basic.status_code] == [401, 401, 401]
    assert bare.headers["www-authenticate"].startswith("Bearer")
    assert _commits(store) == before
    assert not (store.root / "decision" / "sneaky.md").exists()


async def test_each_client_acts_as_its_tokens_identity_at_the_same_time(store: Store) -> None:
    tokens_by_name = {name: add_token(store.root, name) for name in ("coder", "qa")}
    with http_server(store.root) as server:

        async def save(name: str) -> None:
            async with mcp_client(server, tokens_by_name[name]) as client:
                result = await client.call_tool(
                    "memory_store",
                    {"name": f"by-{name}", "type": "decision", "description": f"saved by {name}"},
                )
                assert data(result)["memory"]["owner"] == name

        async with anyio.create_task_group() as group:
            for name in tokens_by_name:
                group.start_soon(save, name)

        async with mcp_client(server, tokens_by_name["coder"]) as coder:
            own = await coder.call_tool(
                "memory_promote", {"name": "by-coder", "to": "confirmed", "reason": "mine"}
            )
            other = await coder.call_tool(
                "memory_promote", {"name": "by-qa", "to": "confirmed", "reason": "checked it"}
            )
    assert own.is_error and "nobody confirms their own memory" in text(own)
    assert data(other)["memory"]["confirmed_by"] == "coder"
    commits = _commits(store)
    assert "coder|memory: confirm decision/by-qa — checked it" in commits
    assert {c.split("|")[0] for c in commits if "memory: add" in c} == {"coder", "qa"}
    assert store.get("by-qa").owner == "qa"


async def test_eight_http_clients_at_once_lose_no_write(store: Store) -> None:
    names = [f"agent-{i}" for i in range(8)]
    secrets = {name: add_token(store.root, name) for name in names}
    writes = 5
    with http_server(store.root) as server:

        async def work(name: str) -> None:
            async with mcp_client(server, secrets[name]) as client:
                for i in range(writes):
                    result = await client.call_tool(
                        "memory_store",
                        {"name": f"{name}-{i}", "type": "decision", "description": f"{name} {i}"},
                    )
                    assert not result.is_error, text(result)

        async with anyio.create_task_group() as group:
            for name in names:
                group.start_soon(work, name)
        async with mcp_client(server, secrets["agent-0"]) as client:
            found = await client.call_tool(
                "memory_recall", {"query": "agent", "status": "draft", "index": True}
            )
    assert not found.is_error
    authors = [c.split("|")[0] for c in _commits(store) if "memory: add" in c]
    assert sorted(authors) == sorted(n for n in names for _ in range(writes))
    assert len(store.list()) == len(names) * writes
    assert git(store.root, "status", "--porcelain") == ""


async def test_a_revoked_token_is_refused_by_the_running_server(store: Store) -> None:
    secret = add_token(store.root, "qa")
    with http_server(store.root) as server:
        async with mcp_client(server, secret) as client:
            assert not (await client.call_tool("memory_recall", {"query": "x"})).is_error
        bearer.revoke(store.cache, "qa")
        async with httpx2.AsyncClient() as http:
            refused = await http.post(
                server.mcp, json=STORE_CALL, headers={"Authorization": f"Bearer {secret}"}
            )
    assert refused.status_code == 401


def test_listening_beyond_loopback_without_tokens_is_refused(store: Store) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(store.root), "serve", "--http"]
        + ["--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
    )
    assert done.returncode == 1
    assert "refusing to listen on 0.0.0.0 with no tokens" in done.stderr
    assert "memstore token add NAME" in done.stderr
    assert "Traceback" not in done.stderr


def test_token_add_prints_the_token_once_and_keeps_only_its_hash(store: Store) -> None:
    runner = CliRunner()
    added = runner.invoke(main, ["--store", str(store.root), "token", "add", "alice", "--human"])
    assert added.exit_code == 0, added.output
    token = added.stdout.strip()
    assert token.startswith(bearer.PREFIX) and len(token) > 40
    file = bearer.path(store.cache)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert token not in file.read_text(encoding="utf-8")
    assert bearer.read(store.cache)["alice"].sha256 == bearer.digest(token)
    assert ".memstore/" in (store.root / ".gitignore").read_text(encoding="utf-8")

    listed = runner.invoke(main, ["--store", str(store.root), "token", "list"])
    assert "alice" in listed.stdout and "human" in listed.stdout
    assert token not in listed.output

    again = runner.invoke(main, ["--store", str(store.root), "token", "add", "alice"])
    assert again.exit_code == 1 and "already has a token" in again.output
    revoked = runner.invoke(main, ["--store", str(store.root), "token", "revoke", "alice"])
    assert revoked.exit_code == 0
    assert bearer.read(store.cache) == {}
    missing = runner.invoke(main, ["--store", str(store.root), "token", "revoke", "alice"])
    assert missing.exit_code == 1 and "'alice' has no token" in missing.output


def test_a_token_name_must_be_an_identity(store: Store) -> None:
    result = CliRunner().invoke(main, ["--store", str(store.root), "token", "add", "<evil>"])
    assert result.exit_code == 1 and "Error:" in result.output
    assert not bearer.path(store.cache).exists()


def test_tokens_stay_out_of_git(store: Store) -> None:
    add_token(store.root, "alice")
    assert git(store.root, "status", "--porcelain", "--ignored=no") == ""


def test_a_store_that_requires_signatures_is_not_served_over_http(store: Store) -> None:
    (store.root / "memstore.yaml").write_text("require_signatures: true\n", encoding="utf-8")
    git(store.root, "add", "memstore.yaml")
    git(store.root, "commit", "-q", "-m", "settings")
    add_token(store.root, "bob")
    done = subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(store.root), "serve", "--http"]
        + ["--port", "0"],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
    )
    assert done.returncode == 1
    assert "requires signed commits" in done.stderr and "Traceback" not in done.stderr


DAMAGED_TOKEN_FILES = [
    "{not json",
    "[]",
    '{"tokens": []}',
    '{"tokens": {"bob": {"human": false, "created": "x"}}}',
    '{"tokens": {"bob": {"human": "no", "created": "x", "sha256": "' + "0" * 64 + '"}}}',
    '{"tokens": {"<bob>": {"human": false, "created": "x", "sha256": "' + "0" * 64 + '"}}}',
]


@pytest.mark.parametrize("damaged", DAMAGED_TOKEN_FILES)
def test_a_server_refuses_to_start_on_a_damaged_token_file(store: Store, damaged: str) -> None:
    store.cache.mkdir(parents=True, exist_ok=True)
    bearer.path(store.cache).write_text(damaged, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(store.root), "serve", "--http"]
        + ["--port", "0"],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
    )
    assert done.returncode == 1
    assert "serving" not in done.stderr and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "token file" in lines[0] and "damaged" in lines[0], lines


async def test_a_token_file_damaged_while_serving_fails_closed(store: Store) -> None:
    secret = add_token(store.root, "qa")
    with http_server(store.root) as server:
        async with mcp_client(server, secret) as client:
            assert not (await client.call_tool("memory_recall", {"query": "x"})).is_error
        bearer.path(store.cache).write_text('{"tokens": {"qa": ', encoding="utf-8")
        async with httpx2.AsyncClient() as http:
            answers = [
                await http.post(
                    server.mcp, json=STORE_CALL, headers={"Authorization": f"Bearer {secret}"}
                )
                for _ in range(2)
            ]
            console = await http.post(
                f"{server.url}/console/login", data={"token": secret}, follow_redirects=False
            )
        assert [a.status_code for a in answers] == [503, 503]
        body = answers[0].json()
        assert body["error"] == "token_file_damaged" and "damaged" in body["error_description"]
        assert console.status_code == 503
    logged = "".join(server.lines)
    assert "Traceback" not in logged
    damage = [line for line in server.lines if "is damaged" in line]
    assert len(damage) == 1, damage  # one line, not one per request
