"""Every command that reports a result takes `--json` and prints one JSON value on stdout.

The test walks the CLI's own parser: a command added later without `--json`, or without a
run here, fails it, unless it is one of `REPORTS_NOTHING` (each with why)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memstore.faces.cli.main import main
from tests.conftest import git

REPORTS_NOTHING = {
    "serve": "speaks MCP on stdout until stopped: nothing to report",
    "export": "its output is the data itself, in the format asked (--format json for JSON)",
    "config": "its output is a client configuration to paste, already JSON (TOML for codex)",
}
"""Commands without `--json`, and why."""


def commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name in group.list_commands(click.Context(group)):
        command = group.get_command(click.Context(group), name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name)


def command_at(path: tuple[str, ...]) -> click.Command:
    command: click.Command = main
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(click.Context(command), name)
        assert found is not None, name
        command = found
    return command


def test_every_command_that_reports_takes_json() -> None:
    missing = []
    for path in commands(main):
        opts = {o for p in command_at(path).params if isinstance(p, click.Option) for o in p.opts}
        if " ".join(path) in REPORTS_NOTHING:
            assert "--json" not in opts, f"{path} has --json: take it off REPORTS_NOTHING"
        elif "--json" not in opts:
            missing.append(" ".join(path))
    assert not missing, f"commands without --json: {missing}"


def _runs(tmp: Path) -> list[tuple[str, list[str], tuple[int, ...]]]:
    """(who, arguments, exit codes allowed) for a run of each command, in an order that
    gives each what it needs (a draft of alice's for bob to confirm, and so on)."""
    key = tmp / "key"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "k", "-f", str(key)], check=True
    )
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    add = ["--type", "decision", "--body", "why"]
    return [
        ("alice", ["init", str(tmp / "second")], (0,)),
        ("alice", ["add", "use-zod", "-d", "Validate input with zod", *add], (0,)),
        ("alice", ["add", "old-way", "-d", "Validate input by hand", *add], (0,)),
        ("alice", ["add", "to-move", "-d", "A memory to rename", *add], (0,)),
        ("alice", ["add", "to-forget", "-d", "A memory to forget", *add], (0,)),
        ("alice", ["show", "use-zod"], (0,)),
        ("alice", ["list"], (0,)),
        ("alice", ["edit", "use-zod", "--tags", "api"], (0,)),
        ("alice", ["pin", "use-zod"], (0,)),
        ("alice", ["history", "use-zod"], (0,)),
        ("alice", ["timeline"], (0,)),
        ("alice", ["mv", "to-move", "moved"], (0,)),
        ("alice", ["retype", "moved", "fact"], (0,)),
        ("alice", ["forget", "to-forget", "--reason", "not needed"], (0,)),
        ("alice", ["recover"], (0,)),
        ("bob", ["confirm", "use-zod", "--reason", "checked src/types.ts"], (0,)),
        ("bob", ["deprecate", "old-way", "--reason", "zod now"], (0,)),
        ("bob", ["review"], (0,)),
        ("bob", ["restore", "old-way", "--reason", "back again"], (0,)),
        ("carol", ["verify", "use-zod", "--reason", "still so"], (0,)),
        ("bob", ["merge", "use-zod", "moved", "--reason", "the same thing"], (0,)),
        ("alice", ["onboard"], (0,)),
        ("alice", ["lint"], (0,)),
        ("alice", ["doctor", "--no-lint"], (0,)),
        ("alice", ["stats"], (0,)),
        ("alice", ["signers", "add", "alice", f"{key}.pub"], (0,)),
        ("alice", ["signers", "list"], (0,)),
        ("alice", ["search", "zod"], (0,)),
        ("alice", ["get", "use-zod"], (0,)),
        ("alice", ["reindex"], (0,)),
        ("alice", ["token", "add", "deploy-bot"], (0,)),
        ("alice", ["token", "list"], (0,)),
        ("alice", ["token", "revoke", "deploy-bot"], (0,)),
        ("alice", ["install-hook"], (0,)),
        ("alice", ["uninstall-hook"], (0,)),
        ("alice", ["import", str(tmp / "export.jsonl")], (0,)),
        ("alice", ["correct", "no-npm", "-d", "Never npm publish", "--applies-when", "npm"], (0,)),
        ("alice", ["check", "npm publish"], (0, 3, 4)),
        ("alice", ["outcome", "no-npm", "heeded"], (0,)),
        ("alice", ["brief"], (0,)),
        ("alice", ["close", "--dry-run", "Decided: deploys go through CI."], (0,)),
        ("alice", ["ledger", "check", "deploy", "api"], (0,)),
        ("alice", ["ledger", "claim", "publish", "post-1"], (0,)),
        ("alice", ["ledger", "release", "publish", "post-1"], (0,)),
        ("alice", ["ledger", "claim", "deploy", "api"], (0,)),
        ("alice", ["ledger", "record", "deploy", "api", "--evidence", "https://ci/1"], (0,)),
        ("alice", ["ledger", "list"], (0,)),
        ("alice", ["ledger", "verify"], (0,)),
        ("alice", ["sync", "--remote", "origin", "--branch", "main"], (0,)),
    ]


def test_every_json_output_parses(tmp_path: Path) -> None:
    root = tmp_path / "memory"

    def cli(agent: str, args: list[str]) -> click.testing.Result:
        return CliRunner().invoke(main, ["--store", str(root), "--agent", agent, *args])

    assert cli("alice", ["init"]).exit_code == 0
    git(root, "branch", "-M", "main")
    git(root, "remote", "add", "origin", str(tmp_path / "remote.git"))
    runs = _runs(tmp_path)
    ran: set[str] = set()
    for agent, args, codes in runs:
        if args[0] == "import":
            exported = cli(agent, ["export", "--output", args[1]])
            assert exported.exit_code == 0, exported.output
        path = next(" ".join(args[:n]) for n in (2, 1) if " ".join(args[:n]) in _all_commands())
        done = cli(agent, [*args, "--json"])
        assert done.exit_code in codes, f"{args}: {done.output}"
        try:
            json.loads(done.stdout)
        except ValueError:
            pytest.fail(f"{' '.join(args)} --json printed no JSON:\n{done.stdout}")
        ran.add(path)
    expected = _all_commands() - set(REPORTS_NOTHING)
    assert ran == expected, f"not run here: {sorted(expected - ran)}"


def _all_commands() -> set[str]:
    return {" ".join(p) for p in commands(main)}
