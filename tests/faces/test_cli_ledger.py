"""`memstore ledger …`: exit codes a shell script can chain, output, JSON and errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.faces.cli.main import main
from tests.conftest import git

URL = "https://blog.example.com/post-1"


def run(*args: str, agent: str = "alice") -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--agent", agent, "ledger", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    result = CliRunner().invoke(main, ["--agent", "alice", "init"])
    assert result.exit_code == 0, result.output
    return tmp_path / "memory"


def test_check_exit_codes_are_0_not_executed_3_in_progress_4_executed(store_dir: Path) -> None:
    assert run("check", "publish", "post-1")[:2] == (0, "NOT_EXECUTED publish post-1\n")
    assert run("claim", "publish", "post-1", "--ttl", "10m")[0] == 0
    code, out, _ = run("check", "publish", "post-1", agent="bob")
    assert code == 3 and out.startswith("IN_PROGRESS publish post-1 — claimed by alice at ")
    assert run("record", "publish", "post-1", "--evidence", URL)[0] == 0
    code, out, _ = run("check", "publish", "post-1", agent="bob")
    assert code == 4 and out.startswith("EXECUTED publish post-1 — by alice at ")
    assert out.rstrip().endswith(URL)


def test_check_json_has_state_who_when_and_evidence(store_dir: Path) -> None:
    run("record", "publish", "post-1", "--evidence", URL, "--note", "live")
    code, out, _ = run("check", "publish", "post-1", "--json")
    data = json.loads(out)
    assert code == 4
    assert (data["state"], data["actor"], data["evidence"], data["note"]) == (
        "EXECUTED",
        "alice",
        URL,
        "live",
    )
    assert data["warnings"] == []


def test_claim_exits_3_when_held_by_someone_else_and_4_when_done(store_dir: Path) -> None:
    assert run("claim", "deploy", "api")[0] == 0
    code, _, err = run("claim", "deploy", "api", agent="bob")
    assert code == 3 and err.startswith("Error: 'deploy api' is claimed by alice")
    assert run("record", "deploy", "api", "--evidence", URL)[0] == 0
    code, _, err = run("claim", "deploy", "api", agent="bob")
    assert code == 4 and "already executed by alice" in err


def test_release_gives_the_claim_up_and_then_has_nothing_to_release(store_dir: Path) -> None:
    run("claim", "deploy", "api")
    assert run("release", "deploy", "api")[0] == 0
    assert run("check", "deploy", "api")[0] == 0
    code, _, err = run("release", "deploy", "api")
    assert code == 1 and "nothing to release" in err


def test_record_failed_needs_a_note_and_done_needs_http_evidence(store_dir: Path) -> None:
    code, _, err = run("record", "publish", "post-1", "--failed")
    assert code == 1 and "needs a note" in err
    code, _, err = run("record", "publish", "post-1", "--evidence", "file:///tmp/x")
    assert code == 1 and err.startswith("Error: evidence 'file:///tmp/x' is not an http(s) URL")
    code, _, err = run("record", "publish", "post-1")
    assert code == 1 and "evidence" in err
    assert not (store_dir / "ledger.jsonl").exists()
    assert run("record", "publish", "post-1", "--failed", "--note", "503")[0] == 0
    code, _, err = run("check", "publish", "post-1")
    assert code == 0 and "last attempt failed" in err


def test_bad_action_target_or_ttl_is_an_error_not_a_state(store_dir: Path) -> None:
    assert run("check", "", "post-1")[0] == 1
    assert run("check", "publish", "a\nb")[0] == 1
    assert run("check", "publish", "x" * 201)[0] == 1
    assert run("claim", "publish", "post-1", "--ttl", "soon")[0] == 1
    assert run("claim", "publish", "post-1", "--ttl", "30d")[0] == 1


def test_ttl_takes_units_says_what_a_bare_number_means_and_refuses_nonsense(
    store_dir: Path,
) -> None:
    assert "A bare number is seconds" in run("claim", "--help")[1]
    code, _, err = run("claim", "publish", "post-1", "--ttl", "0")
    assert code == 1 and err.strip() == "Error: --ttl '0' must be from 1s to 7d"
    code, _, err = run("claim", "publish", "post-1", "--ttl", "30min")
    assert code == 1 and "(a bare number is seconds)" in err and len(err.splitlines()) == 1
    assert run("claim", "publish", "post-1", "--ttl", "8d")[2].startswith("Error: --ttl '8d'")
    assert run("claim", "publish", "post-1", "--ttl", "2h")[0] == 0
    (event,) = map(json.loads, (store_dir / "ledger.jsonl").read_text("utf-8").splitlines())
    held = datetime.fromisoformat(event["expires"][:-1]) - datetime.fromisoformat(event["at"][:-1])
    assert held == timedelta(hours=2)


def test_check_after_a_restore_exits_4_with_a_loud_warning(store_dir: Path) -> None:
    run("record", "publish", "post-0", "--evidence", URL)
    run("record", "publish", "post-1", "--evidence", URL)
    older = git(store_dir, "show", "HEAD~1:ledger.jsonl")
    (store_dir / "ledger.jsonl").write_text(older, encoding="utf-8")
    code, out, err = run("check", "publish", "post-1")
    assert code == 4 and out.startswith("EXECUTED")
    assert err.startswith("WARNING: the working ledger.jsonl lacks 1 line(s)")
    code, out, err = run("verify")
    assert code == 1 and "but the working ledger lacks it" in out
    assert "verification failed: 1 problem" in err


def test_check_on_a_damaged_ledger_exits_1_not_0(store_dir: Path) -> None:
    run("record", "publish", "post-0", "--evidence", URL)
    with (store_dir / "ledger.jsonl").open("a", encoding="utf-8") as f:
        f.write("not json\n")
    code, _, err = run("check", "publish", "post-1")
    assert code == 1 and "cannot tell whether 'publish post-1' was executed" in err


def test_list_prints_lines_and_json_with_filters(store_dir: Path) -> None:
    run("record", "publish", "post-1", "--evidence", URL)
    run("claim", "deploy", "api", agent="bob")
    code, out, _ = run("list")
    assert code == 0 and len(out.splitlines()) == 2
    assert "alice" in out and "done     publish post-1  " + URL in out
    code, out, _ = run("list", "--actor", "bob", "--json", "--since", "1h")
    data = json.loads(out)
    assert [(e["actor"], e["status"], e["action"]) for e in data] == [("bob", "claimed", "deploy")]
    assert isinstance(data[0]["prev"], list) and len(data[0]["hash"]) == 32
    code, out, err = run("list", "--target", "nothing")
    assert (code, out, err) == (0, "", "no ledger events match\n")


def test_verify_is_ok_on_an_intact_ledger(store_dir: Path) -> None:
    run("record", "publish", "post-1", "--evidence", URL)
    code, out, _ = run("verify")
    assert code == 0 and out.startswith("ok: 1 event on 1 line, 1 head, 1 committed")


def test_every_ledger_command_has_help_with_an_example(store_dir: Path) -> None:
    for command in ("check", "claim", "release", "record", "list", "verify"):
        result = CliRunner().invoke(main, ["ledger", command, "--help"])
        assert result.exit_code == 0
        assert "Example:" in result.output and f"memstore ledger {command}" in result.output


def test_the_shell_chain_check_act_record_runs_once(store_dir: Path, tmp_path: Path) -> None:
    marker = tmp_path / "published"
    script = (
        "memstore ledger check publish post-1 "
        f"&& echo once >> {marker} "
        f"&& memstore ledger record publish post-1 --evidence {URL}"
    )
    bin_dir = str(Path(sys.executable).parent)  # where the venv installed `memstore`
    env = {
        **os.environ,
        "MEMSTORE_DIR": str(store_dir),
        "MEMSTORE_AGENT": "alice",
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
    }
    codes = [subprocess.run(["sh", "-c", script], env=env, check=False).returncode for _ in "12"]
    assert codes == [0, 4]
    assert marker.read_text(encoding="utf-8") == "once\n"
