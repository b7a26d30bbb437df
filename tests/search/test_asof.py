"""`search --as-of` and MCP `as_of`: the store as it was then, read from git, with the
statuses the history supported then; the live index and working tree are never touched."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.faces.cli.main import main
from memstore.model.memory import Memory, content_hash, render
from memstore.storage.store import Store
from tests.conftest import GIT_ENV
from tests.mcp_client import data, serve, text

pytestmark = pytest.mark.anyio


def hand_commit(root: Path, who: str, date: str, memory: Memory) -> None:
    """Write `memory`'s file and commit it as `who` at `date`, as a person with git would."""
    path = root / memory.type / f"{memory.name}.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text(render(memory), encoding="utf-8", newline="\n")
    env = {
        **os.environ,
        **GIT_ENV,
        "GIT_AUTHOR_NAME": who,
        "GIT_COMMITTER_NAME": who,
        "GIT_AUTHOR_EMAIL": f"{who}@example.com",
        "GIT_COMMITTER_EMAIL": f"{who}@example.com",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }
    for args in (["add", "--", str(path)], ["commit", "-q", "-m", f"{who}: {memory.name}"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def run(*args: str, agent: str = "alice") -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--agent", agent, *args])
    return result.exit_code, result.stdout, result.stderr


def search(*args: str) -> dict[str, str]:
    code, out, err = run("search", *args, "--json")
    assert code == 0, err
    return {h["name"]: h["status"] for h in json.loads(out)}


@pytest.fixture
def past(tmp_path: Path) -> Path:
    """A store whose history began in October: HPA on (confirmed by bob on the 10th), a
    forged confirmation, then today HPA turned off and the old runbook deprecated."""
    root = tmp_path / "memory"
    Store.init(root, agent="alice")
    hpa = Memory(
        name="hpa-on-api",
        description="HPA autoscaling is on for api",
        type="fact",
        status="draft",
        owner="human",
        created="2026-10-01T09:00:00Z",
        updated="2026-10-01T09:00:00Z",
        body="HPA scales api between 2 and 10 pods.",
    )
    runbook = Memory(
        name="hpa-runbook",
        description="How to tune HPA autoscaling on api",
        type="runbook",
        status="draft",
        owner="human",
        created="2026-10-01T09:00:00Z",
        updated="2026-10-01T09:00:00Z",
    )
    hand_commit(root, "human", "2026-10-01T09:00:00Z", hpa)
    hand_commit(root, "human", "2026-10-01T09:05:00Z", runbook)
    confirmed = Memory(
        **{
            **{f: getattr(hpa, f) for f in hpa.__dataclass_fields__},
            "status": "confirmed",
            "confirmed_by": "bob",
            "confirmed_at": "2026-10-10T09:00:00Z",
            "confirmed_reason": "checked the chart",
            "confirmed_hash": content_hash(hpa),
        }
    )
    hand_commit(root, "bob", "2026-10-10T09:00:00Z", confirmed)
    forged = Memory(
        **{
            **{f: getattr(runbook, f) for f in runbook.__dataclass_fields__},
            "status": "confirmed",
            "confirmed_by": "bob",
            "confirmed_at": "2026-10-12T09:00:00Z",
            "confirmed_reason": "looks fine",
            "confirmed_hash": content_hash(runbook),
        }
    )
    hand_commit(root, "mallory", "2026-10-12T09:00:00Z", forged)  # mallory signs as bob
    store = Store(root, agent="alice")
    store.edit("hpa-on-api", body="HPA is off on api since the flapping incident.")
    store.deprecate("hpa-runbook", "HPA is off")
    return root


def test_as_of_answers_from_that_moment_with_the_statuses_history_supported(past: Path) -> None:
    assert search("hpa") == {"hpa-on-api": "draft"}  # today: edited back to draft
    assert search("hpa", "--as-of", "2026-10-05") == {"hpa-on-api": "draft", "hpa-runbook": "draft"}
    then = search("hpa", "--as-of", "2026-10-15")
    assert then == {"hpa-on-api": "confirmed", "hpa-runbook": "unverified"}  # forged: not trusted
    assert search("scales", "--as-of", "2026-10-15") == {"hpa-on-api": "confirmed"}
    assert search("flapping", "--as-of", "2026-10-15") == {}
    code, out, err = run("search", "hpa", "--as-of", "2026-09-01")
    assert code == 0 and out == "" and "no commit yet" in err


def test_deprecated_at_the_time_is_hidden_and_shown_when_asked(past: Path) -> None:
    soon = (datetime.now(UTC) + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert search("runbook", "--as-of", soon) == {}  # deprecated today
    hidden = search("runbook", "--as-of", soon, "--include-deprecated")
    assert hidden == {"hpa-runbook": "deprecated"}


def test_as_of_touches_neither_the_working_tree_nor_the_live_index(past: Path) -> None:
    search("hpa")  # the live index exists
    files = [past / ".memstore" / "index" / name for name in ("manifest.json", "manifest.log")]
    before = [(f.stat().st_mtime_ns, f.read_bytes()) for f in files]
    search("hpa", "--as-of", "2026-10-15")
    search("hpa", "--as-of", "2026-10-15")  # the second time from the cached past index
    assert [(f.stat().st_mtime_ns, f.read_bytes()) for f in files] == before
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=past, capture_output=True, text=True, check=True
    )
    assert status.stdout == ""


def test_a_bad_as_of_is_one_error_line(past: Path) -> None:
    code, _, err = run("search", "hpa", "--as-of", "last week")
    assert code == 1 and err.startswith("Error: as-of 'last week' must be")


def test_a_moment_is_searched_without_feedback_whatever_the_flag(past: Path) -> None:
    # Feedback is on by default; a past tree's index keeps no term vectors for it.
    answers = [
        run("search", "hpa", "--as-of", "2026-11-03", *flag, "--json")
        for flag in ((), ("--feedback",), ("--no-feedback",))
    ]
    assert all(code == 0 for code, _, _ in answers)
    found = [[hit["name"] for hit in json.loads(out)] for _, out, _ in answers]
    assert found[0] and found[0] == found[1] == found[2]


async def test_mcp_recall_as_of_says_which_commit_it_read(past: Path) -> None:
    async with serve(past, "carol") as client:
        result = await client.call_tool("memory_recall", {"query": "hpa", "as_of": "2026-10-15"})
        found = data(result)
        assert {h["name"]: h["status"] for h in found["results"]} == {
            "hpa-on-api": "confirmed",
            "hpa-runbook": "unverified",
        }
        assert found["as_of"]["at"] == "2026-10-15T00:00:00Z"
        assert found["as_of"]["committed"] == "2026-10-12T09:00:00Z"
        assert text(result).startswith("As of 2026-10-15T00:00:00Z: read from commit")
        bad = await client.call_tool("memory_recall", {"query": "hpa", "as_of": "soon"})
        assert bad.is_error and "as-of 'soon' must be" in text(bad)


def test_as_of_reads_only_what_was_committed_not_a_hand_edit_in_progress(past: Path) -> None:
    path = past / "fact" / "hpa-on-api.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("flapping", "thrashing"), encoding="utf-8"
    )
    soon = (datetime.now(UTC) + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert search("thrashing", "--as-of", soon) == {}
    assert search("flapping", "--as-of", soon) == {"hpa-on-api": "draft"}
    assert search("thrashing") == {"hpa-on-api": "draft"}  # the live search sees the file


def test_a_moment_built_from_another_moment_s_index_adds_and_drops_what_differs(
    tmp_path: Path,
) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="alice")
    note = Memory(
        name="redis-queue",
        description="Redis is the job queue",
        type="fact",
        status="draft",
        owner="human",
        created="2026-10-01T09:00:00Z",
        updated="2026-10-01T09:00:00Z",
    )
    hand_commit(root, "human", "2026-10-01T09:00:00Z", note)
    env = {**os.environ, **GIT_ENV, "GIT_COMMITTER_DATE": "2026-10-20T09:00:00Z"}
    for args in (["rm", "-q", "fact/redis-queue.md"], ["commit", "-q", "-m", "gone"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    assert search("redis", "--as-of", "2026-10-25") == {}
    assert search("redis", "--as-of", "2026-10-10") == {"redis-queue": "draft"}
    assert search("redis", "--as-of", "2026-10-21") == {}
