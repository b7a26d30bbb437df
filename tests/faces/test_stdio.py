"""End to end: real `memstore serve` processes over stdio, driven by the real `mcp` client."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.types import ListToolsResult, ServerNotification

from memstore.faces import handshake
from memstore.faces.cli.main import main
from memstore.faces.server import build_server
from memstore.search import watch
from memstore.storage.store import Store
from tests.conftest import REPO, git
from tests.mcp_client import serve, text
from tests.search.test_watch import edit_in_place

pytestmark = pytest.mark.anyio


async def test_two_agents_share_one_store_through_their_own_servers(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    async with serve(root, "agent-a") as a, serve(root, "agent-b") as b:
        saved = await a.call_tool(
            "memory_store",
            {
                "name": "hpa-disabled",
                "type": "decision",
                "description": "HPA is off on the api service: it fought the VPA",
                "body": "Re-enable only with VPA in recommend mode.",
                "tags": ["k8s"],
            },
        )
        assert not saved.is_error, text(saved)

        seen = await b.call_tool("memory_get", {"names": ["hpa-disabled"]})
        assert "DRAFT by agent-a" in text(seen)
        assert seen.structured_content is not None
        assert seen.structured_content["memories"][0]["status"] == "draft"

        mine = await a.call_tool(
            "memory_promote", {"name": "hpa-disabled", "to": "confirmed", "reason": "sure"}
        )
        assert mine.is_error and "nobody confirms their own memory" in text(mine)

        confirmed = await b.call_tool(
            "memory_promote",
            {"name": "hpa-disabled", "to": "confirmed", "reason": "checked the HPA manifest"},
        )
        assert not confirmed.is_error, text(confirmed)
        assert "CONFIRMED by agent-b (owner agent-a)" in text(confirmed)

        bad = await a.call_tool(
            "memory_store", {"name": "../../etc/x", "type": "fact", "description": "x"}
        )
        assert bad.is_error and "invalid name" in text(bad)

        still = await a.call_tool("memory_recall", {"query": "HPA api service"})
        assert "hpa-disabled · decision · CONFIRMED (owner agent-a)" in text(still)

        deploy = {"action": "deploy", "target": "api@1.4.1"}
        first = await a.call_tool("ledger_check", deploy)
        assert text(first).startswith("NOT_EXECUTED")
        claimed = await a.call_tool("ledger_claim", deploy)
        assert not claimed.is_error, text(claimed)
        no_url = await a.call_tool("ledger_record", {**deploy, "evidence": "trust me"})
        assert no_url.is_error and "not an http(s) URL" in text(no_url)
        done = await a.call_tool(
            "ledger_record", {**deploy, "evidence": "https://ci.example.com/runs/981"}
        )
        assert not done.is_error, text(done)
        again = await b.call_tool("ledger_check", deploy)
        assert text(again).startswith("EXECUTED")
        assert again.structured_content is not None
        assert again.structured_content["check"]["actor"] == "agent-a"

    authors = git(root, "log", "--format=%an").split()
    assert {"agent-a", "agent-b"} <= set(authors)
    assert git(root, "status", "--porcelain") == ""
    assert "confirmed_by: agent-b" in (root / "decision" / "hpa-disabled.md").read_text("utf-8")
    ledger_lines = (root / "ledger.jsonl").read_text("utf-8").splitlines()
    assert [json.loads(line)["status"] for line in ledger_lines] == ["claimed", "done"]


async def test_garbage_on_the_wire_neither_crashes_nor_hangs_the_server(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw"}}
    lines = [
        "not json at all",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {',
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "memory_get", "arguments": {"names": [1, None]}},
            }
        ),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    ]
    env = {**os.environ, "MEMSTORE_AGENT": "raw", "GIT_CONFIG_GLOBAL": os.devnull}
    command = [sys.executable, "-m", "memstore", "--store", str(root), "serve"]
    async with await anyio.open_process(command, env=env) as process:
        assert process.stdin is not None and process.stdout is not None
        await process.stdin.send(("\n".join(lines) + "\n").encode("utf-8"))
        answers: dict[int, dict[str, object]] = {}
        buffer = b""
        with anyio.fail_after(20):
            while 4 not in answers:
                buffer += await process.stdout.receive()
                *complete, buffer = buffer.split(b"\n")
                for line in complete:
                    message = json.loads(line)
                    if isinstance(message.get("id"), int):
                        answers[message["id"]] = message
        await process.stdin.aclose()
        with anyio.fail_after(20):
            await process.wait()
    bad_arguments = answers[3]["result"]
    assert isinstance(bad_arguments, dict) and bad_arguments["isError"] is True
    listed = answers[4]["result"]
    assert isinstance(listed, dict) and listed["tools"]
    assert process.returncode == 0


async def test_the_printed_client_config_starts_a_working_server(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    printed = CliRunner().invoke(main, ["--store", str(root), "--agent", "cfg", "config", "cursor"])
    entry = json.loads(printed.stdout)["mcpServers"]["memstore"]
    env = {
        **entry["env"],
        "GIT_CONFIG_GLOBAL": os.devnull,
        "PYTHONPATH": str(REPO),
    }
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
    async with Client(params, read_timeout_seconds=30) as client:
        saved = await client.call_tool(
            "memory_store", {"name": "via-config", "type": "fact", "description": "it works"}
        )
    assert saved.structured_content is not None
    assert saved.structured_content["memory"]["owner"] == "cfg"


async def _raw_session(
    root: Path, lines: list[str], wanted: set[int]
) -> tuple[list[dict[str, object]], int, dict[int, bytes]]:
    """Send `lines` to a `memstore serve` process, read until every id in `wanted` is
    answered, close its stdin; every message it wrote, its exit code, and the line that
    answered each id as it was written."""
    env = {**os.environ, "MEMSTORE_AGENT": "raw", "GIT_CONFIG_GLOBAL": os.devnull}
    command = [sys.executable, "-m", "memstore", "--store", str(root), "serve"]
    written: list[bytes] = []
    async with await anyio.open_process(command, env=env) as process:
        assert process.stdin is not None and process.stdout is not None
        await process.stdin.send(("\n".join(lines) + "\n").encode("utf-8"))
        buffer = b""
        with anyio.fail_after(30):
            while not wanted <= {json.loads(line).get("id") for line in written}:
                buffer += await process.stdout.receive()
                *complete, buffer = buffer.split(b"\n")
                written += complete
        await process.stdin.aclose()
        with anyio.fail_after(30):
            async for chunk in process.stdout:
                buffer += chunk
            await process.wait()
        written += [line for line in buffer.split(b"\n") if line.strip()]
    messages = [json.loads(line) for line in written]
    raw = {m["id"]: line for m, line in zip(messages, written, strict=True) if "id" in m}
    return messages, process.returncode or 0, raw


async def test_a_restarted_server_answers_the_opening_requests_as_the_sdk_did(
    tmp_path: Path,
) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    (root / ".memstore").mkdir(exist_ok=True)
    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "memory_get", "arguments": {"names": ["nothing-here"]}},
            }
        ),
    ]
    first, code, first_raw = await _raw_session(root, lines, {1, 2, 3})
    assert code == 0
    answers_file = root / ".memstore" / "answers.json"
    kept = json.loads(answers_file.read_text("utf-8"))
    assert len(kept) == 1  # one fingerprint: this code, this store's settings

    # The next server sends the SDK's lines of the first run, byte for byte, and drops the
    # SDK's own answers (one answer per request).
    second, code, second_raw = await _raw_session(root, lines, {1, 2, 3})
    assert code == 0
    assert [m.get("id") for m in second if "id" in m].count(1) == 1
    assert [m.get("id") for m in second if "id" in m].count(2) == 1
    assert (second_raw[1], second_raw[2]) == (first_raw[1], first_raw[2])
    assert json.loads(answers_file.read_text("utf-8")) == kept

    # An edited file is the one way to an early answer the SDK would not give: the client
    # gets it (so the answer came from the file, not the SDK) but is told nothing the SDK's
    # capabilities do not allow (it advertises no tool list changes), and the SDK's answer
    # replaces the edited one for the next server.
    ((fingerprint, entry),) = kept.items()
    for key, result in entry["answers"].items():
        if '"tools/list"' in key:
            entry["answers"][key] = result.replace("Save a draft memory", "Stale words", 1)
    answers_file.write_text(json.dumps(kept), "utf-8")
    third, code, _ = await _raw_session(root, lines, {1, 2, 3})
    assert code == 0
    again = {m["id"]: m for m in third if "id" in m}
    assert "Stale words" in json.dumps(again[2])
    assert [m.get("id") for m in third if "id" in m].count(2) == 1
    assert [m for m in third if "method" in m] == []
    assert "no memory named 'nothing-here'" in json.dumps(again[3])  # the SDK ran the call
    healed = json.loads(answers_file.read_text("utf-8"))[fingerprint]["answers"]
    assert "Stale words" not in json.dumps(healed)
    _, _, fourth_raw = await _raw_session(root, lines, {1, 2, 3})
    assert fourth_raw[2] == first_raw[2]


@dataclass
class _Opening:
    """What a client saw of a session's opening, as JSON: the server's capabilities and tool
    list, and every notification it was sent."""

    capabilities: dict[str, object]
    tools: str
    notifications: list[str]


async def _opening(root: Path, *, grouped: bool, mode: str) -> _Opening:
    """Open a session with `memstore serve [--grouped]` through the SDK's own client, list the
    tools, and make one tool call (any notification about the opening arrives before its
    answer, as the SDK's answer to tools/list does)."""
    notifications: list[str] = []

    async def record(message: object) -> None:
        if isinstance(message, ServerNotification):
            notifications.append(message.model_dump_json(by_alias=True, exclude_none=True))

    env = {
        "MEMSTORE_AGENT": "sdk",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "PYTHONPATH": str(REPO),
    }
    args = ["-m", "memstore", "--store", str(root), "serve", *(["--grouped"] if grouped else [])]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    async with Client(params, read_timeout_seconds=30, mode=mode, message_handler=record) as c:
        listed = await c.list_tools()
        get = {"names": ["nothing-here"]}
        if grouped:
            await c.call_tool("memory", {"op": "get", "args": get})
        else:
            await c.call_tool("memory_get", get)
        capabilities = c.server_capabilities.model_dump(by_alias=True, exclude_none=True)
    tools = ListToolsResult(tools=listed.tools).model_dump_json(by_alias=True, exclude_none=True)
    return _Opening(capabilities, tools, notifications)


async def _sdk_tools(root: Path, *, grouped: bool, mode: str = "legacy") -> str:
    """The tool list of the SDK's server itself, in process: no early answer involved."""
    server = build_server(Store(root), grouped=grouped, watch=False)
    async with Client(server, mode=mode) as client:
        listed = await client.list_tools()
    return ListToolsResult(tools=listed.tools).model_dump_json(by_alias=True, exclude_none=True)


def _kept(root: Path, grouped: bool) -> dict[str, str]:
    """The opening answers kept for this code, store and mode."""
    kept = json.loads((root / ".memstore" / "answers.json").read_text("utf-8"))
    return kept[handshake.fingerprint(root, grouped)]["answers"]


@pytest.mark.parametrize("grouped", [False, True], ids=["default", "grouped"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_early_answers_are_the_sdks_and_advertise_what_it_does(
    tmp_path: Path, grouped: bool, mode: str
) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    (root / ".memstore").mkdir(exist_ok=True)
    cold = await _opening(root, grouped=grouped, mode=mode)  # the SDK answers, and is kept
    kept = _kept(root, grouped)
    assert any('"tools/list"' in key for key in kept)
    warm = await _opening(root, grouped=grouped, mode=mode)  # answered from what was kept
    assert _kept(root, grouped) == kept  # the SDK's answers were the ones sent early
    assert warm == cold
    assert warm.tools == await _sdk_tools(root, grouped=grouped, mode=mode)
    tools = warm.capabilities["tools"]
    assert isinstance(tools, dict)
    if not tools.get("listChanged"):
        assert not any("list_changed" in n for n in warm.notifications)


async def test_a_settings_file_changed_in_place_is_not_answered_from_before(
    tmp_path: Path,
) -> None:
    # The same size and modification time, other types: only the content tells it apart.
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    (root / ".memstore").mkdir(exist_ok=True)
    settings = root / "memstore.yaml"
    settings.write_text("types: [alpha]\n", "utf-8")
    stamp = settings.stat()
    before = await _opening(root, grouped=False, mode="legacy")
    assert '"alpha"' in before.tools
    settings.write_text("types: [gamma]\n", "utf-8")
    os.utime(settings, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    after = await _opening(root, grouped=False, mode="legacy")
    assert '"gamma"' in after.tools and '"alpha"' not in after.tools
    assert after.tools == await _sdk_tools(root, grouped=False)
    assert after.notifications == []


@pytest.mark.parametrize("grouped", [False, True], ids=["default", "grouped"])
async def test_an_edited_answers_file_brings_no_notification_the_sdk_does_not_advertise(
    tmp_path: Path, grouped: bool
) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    (root / ".memstore").mkdir(exist_ok=True)
    await _opening(root, grouped=grouped, mode="legacy")
    answers_file = root / ".memstore" / "answers.json"
    kept = json.loads(answers_file.read_text("utf-8"))
    for entry in kept.values():
        for key, result in entry["answers"].items():
            if '"tools/list"' in key:
                entry["answers"][key] = result.replace('"name":"check"', '"name":"checks"', 1)
    answers_file.write_text(json.dumps(kept), "utf-8")
    edited = await _opening(root, grouped=grouped, mode="legacy")
    assert '"checks"' in edited.tools  # sent from the file, before the SDK's answer came
    assert edited.capabilities["tools"] == {"listChanged": False}
    assert edited.notifications == []
    healed = await _opening(root, grouped=grouped, mode="legacy")
    assert healed.tools == await _sdk_tools(root, grouped=grouped)


def test_the_opening_answers_are_not_reused_after_the_store_settings_change(
    tmp_path: Path,
) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    before = handshake.fingerprint(root, grouped=False)
    assert handshake.fingerprint(root, grouped=False) == before
    assert handshake.fingerprint(root, grouped=True) != before
    (root / "memstore.yaml").write_text("types: [experiment]\n", "utf-8")
    assert handshake.fingerprint(root, grouped=False) != before


def test_the_fingerprint_sees_every_file_of_a_package_but_its_bytecode(tmp_path: Path) -> None:
    # A package's answers may come from any of its files (a data file, a submodule), not
    # only its `__init__`; the caches Python writes as it runs change nothing.
    package = tmp_path / "package"
    (package / "sub" / "__pycache__").mkdir(parents=True)
    (package / "__init__.py").write_text("", "utf-8")
    (package / "sub" / "words.txt").write_text("alpha\n", "utf-8")
    stamps = handshake._stamps(str(package))  # pyright: ignore[reportPrivateUsage]
    (package / "sub" / "__pycache__" / "words.cpython-311.pyc").write_bytes(b"x")
    assert handshake._stamps(str(package)) == stamps  # pyright: ignore[reportPrivateUsage]
    (package / "sub" / "words.txt").write_text("alpha beta\n", "utf-8")
    assert handshake._stamps(str(package)) != stamps  # pyright: ignore[reportPrivateUsage]
    (package / "sub" / "more.py").write_text("", "utf-8")
    assert len(handshake._stamps(str(package))) == len(stamps) + 1  # pyright: ignore[reportPrivateUsage]


def test_serve_in_process_leaves_the_process_stdin_and_stdout_alone(tmp_path: Path) -> None:
    # With streams in place of sys.stdin/sys.stdout (a test runner, an embedding program),
    # nothing takes over fd 0 and 1: the SDK reads and answers through the streams given.
    root = tmp_path / "memory"
    Store.init(root, agent="setup")
    (root / ".memstore").mkdir(exist_ok=True)
    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "r", "version": "1"},
    }
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ]

    def fds() -> list[tuple[int, int]]:
        return [(os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in (0, 1)]

    before = fds()
    done = CliRunner().invoke(
        main, ["--store", str(root), "--agent", "r", "serve"], input="\n".join(lines) + "\n"
    )
    assert done.exit_code == 0, done.output
    assert '"id":1,"result"' in done.output  # (at the end of input the SDK may drop the rest)
    assert fds() == before
    assert not (root / ".memstore" / "answers.json").exists()


def test_the_wire_hands_on_whole_lines_however_the_bytes_arrive() -> None:
    lines = handshake._Lines()  # pyright: ignore[reportPrivateUsage]
    text = b'{"a":1}\n' + b"x" * 200_000 + b"\n{partial"
    handed = b""
    for start in range(0, len(text), 4096):
        whole = lines.add(text[start : start + 4096])
        assert not whole or whole.endswith(b"\n")
        handed += whole
    assert handed == text[: text.rindex(b"\n") + 1]
    assert lines.take() == b"{partial" and lines.take() == b""


def _held(lock: Path) -> bool:
    """Whether another process holds the flock of `lock`."""
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


async def _recall_finds(client: Client, query: str, name: str, within: float) -> bool:
    with anyio.move_on_after(within):
        while True:
            found = await client.call_tool("memory_recall", {"query": query})
            if f"{name} ·" in text(found):
                return True
            await anyio.sleep(0.2)
    return False


async def test_a_hand_edit_is_found_after_the_indexing_server_is_killed(tmp_path: Path) -> None:
    # Of several servers on one store, one watcher indexes for all; when its server dies
    # (SIGKILL: no clean-up), another takes over and still sees an in-place hand edit.
    root = tmp_path / "memory"
    store = Store.init(root, agent="setup")
    store.add("pool-size", type="fact", description="Database pool size is 20")
    path = root / "fact" / "pool-size.md"
    env = {
        **os.environ,
        "MEMSTORE_AGENT": "agent-a",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTHONPATH": str(REPO),
    }
    leader = subprocess.Popen(
        [sys.executable, "-m", "memstore", "--store", str(root), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        with anyio.fail_after(30):
            while not _held(root / ".memstore" / watch.LEADER_LOCK):
                assert leader.poll() is None, "the first server ended"
                await anyio.sleep(0.05)
        async with serve(root, "agent-b") as follower:
            await follower.call_tool("memory_recall", {"query": "pool"})
            await anyio.sleep(1)  # its watcher in place: only a watcher sees an in-place edit
            edit_in_place(path, "size is 20", "size is pgbouncer")
            assert await _recall_finds(follower, "pgbouncer", "pool-size", within=10)

            leader.kill()
            leader.wait(10)
            edit_in_place(path, "size is pgbouncer", "size is odyssey")
            assert await _recall_finds(follower, "odyssey", "pool-size", within=10)
    finally:
        leader.kill()
        leader.wait(10)
        if leader.stdin is not None:
            leader.stdin.close()
