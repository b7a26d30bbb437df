"""Parallel sessions: an agent about to change a file learns which other live sessions changed
it, who and when, through the PreToolUse hook, `session_start` and `check`; the records live
in the ignored cache, expire by themselves and stay small."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from memstore.model import when
from memstore.storage.store import Store
from memstore.workflow.session import touches
from tests.conftest import git
from tests.mcp_client import data, serve, text
from tests.workflow.test_workflow import hook_command, run_hook


def edit(session: str, path: str, cwd: Path, tool: str = "Edit") -> str:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(cwd / f"{session}.jsonl"),
            "cwd": str(cwd),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": {"file_path": path, "old_string": "a", "new_string": "b"},
        }
    )


def bash(session: str, command: str, cwd: Path) -> str:
    return json.dumps(
        {
            "session_id": session,
            "cwd": str(cwd),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "edit the file"},
        }
    )


def context(done: object) -> str:
    out = json.loads(done.stdout)["hookSpecificOutput"]  # type: ignore[attr-defined]
    assert "permissionDecision" not in out  # a soft warning decides nothing
    return str(out["additionalContext"])


def test_pre_tool_use_hook_warns_of_another_sessions_edit(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "memory", agent="alice")
    before = git(store.root, "rev-list", "--count", "HEAD")
    hook = hook_command("PreToolUse")
    app = tmp_path / "src" / "app.py"
    first = run_hook(hook, tmp_path, edit("aaaa1111-one", str(app), tmp_path))
    assert (first.returncode, first.stdout) == (0, ""), first.stderr  # nobody else yet
    # Another session, the same file named relative to its own working directory.
    second = run_hook(hook, tmp_path, edit("bbbb2222-two", "app.py", tmp_path / "src", "Write"))
    assert second.returncode == 0, second.stderr
    said = context(second)
    assert "claude-code (session aaaa1111)" in said and "src/app.py" in said
    assert "min ago" in said or "just now" in said
    # The first session, back on the file: now it hears of the second.
    again = run_hook(hook, tmp_path, edit("aaaa1111-one", str(app), tmp_path, "MultiEdit"))
    assert "session bbbb2222" in context(again) and "session aaaa1111" not in context(again)
    # A shell command naming the file, from a third session.
    shell = run_hook(hook, tmp_path, bash("cccc3333", "sed -i s/a/b/ src/app.py", tmp_path))
    assert "session aaaa1111" in context(shell) and "session bbbb2222" in context(shell)
    # Another file: nothing to say. And no commit was made for any of it.
    other = run_hook(hook, tmp_path, edit("bbbb2222-two", str(tmp_path / "README.md"), tmp_path))
    assert (other.returncode, other.stdout) == (0, "")
    assert git(store.root, "rev-list", "--count", "HEAD") == before
    assert (store.cache / touches.FILE).is_file()


def test_touches_expire_and_the_log_stays_small(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "memory", agent="alice")
    old = when.stamp(when.utcnow() - timedelta(seconds=touches.TTL + 60))
    store.cache.mkdir(parents=True, exist_ok=True)
    log = store.cache / touches.FILE
    stale = {"at": old, "session": "old", "who": "bob", "path": "src/a.py", "tool": "Edit"}
    log.write_text(json.dumps(stale) + "\nnot json\n[1]\n", encoding="utf-8")
    assert touches.others(store, paths=["src/a.py"]) == []  # an hour-old edit warns nobody
    for n in range(touches.FILE_MAX // 100):
        touches.record(store, f"s{n % 7}", f"src/file{n}.py", "Edit")
    assert log.stat().st_size <= touches.FILE_MAX + 1024
    assert "old" not in log.read_text(encoding="utf-8")  # the cut keeps only live lines
    live = touches.others(store, "s0", paths=[f"src/file{touches.FILE_MAX // 100 - 1}.py"])
    assert [t.session for t in live] == [f"s{(touches.FILE_MAX // 100 - 1) % 7}"]


def test_a_command_names_a_file_only_as_a_whole_word(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "memory", agent="alice")
    touches.record(store, "s1", "a.py", "Edit")
    touches.record(store, "s1", "src/app.py", "Edit")
    assert touches.others(store, "s2", text="cat data.py src/app.pyc") == []
    named = touches.others(store, "s2", text="python a.py && vim ./src/app.py")
    assert sorted(t.path for t in named) == ["a.py", "src/app.py"]


@pytest.mark.anyio
async def test_session_start_and_check_name_other_sessions_files(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "memory", agent="alice")
    touches.record(store, "dddd4444-other", "src/billing.py", "Edit")
    async with serve(store.root, "claude-code") as client:
        brief = text(await client.call_tool("session_start", {}))
        assert "## Files other live sessions are changing" in brief
        assert "(session dddd4444)" in brief and "src/billing.py" in brief
        checked = await client.call_tool("check", {"description": "refactor src/billing.py"})
        assert "Other live sessions changed these files" in text(checked)
        (seen,) = data(checked)["sessions"]
        assert (seen["path"], seen["session"], seen["who"]) == (
            "src/billing.py",
            "dddd4444-other",
            "alice",
        )
        quiet = await client.call_tool("check", {"description": "refactor src/orders.py"})
        assert "sessions" not in data(quiet)
