"""Eight agent processes and a human with git, all on one store at once: every write and ledger
record that reported success is there afterwards, once (see bench/stress.py for the bigger run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench import stress
from tests.conftest import git

PROCS, OPS, HUMAN_OPS = 8, 25, 5


def test_eight_agents_and_a_human_at_once_lose_nothing_and_commit_each_change_once(
    tmp_path: Path,
) -> None:
    root = tmp_path / "memory"
    stress.new_store(root)
    records = stress.run(root, PROCS, OPS, HUMAN_OPS, seed=11)
    counts = stress.verify(root, records)
    assert counts.problems == []
    assert counts.attempted == PROCS * OPS + HUMAN_OPS
    assert counts.lost == 0
    assert counts.commits_present == counts.commits_expected  # one commit per change
    assert counts.files_present == counts.files_expected
    assert counts.tokens_present == counts.tokens_expected > 0  # no edit overwrote another
    assert counts.ledger_lines_present == counts.ledger_lines_expected > 0  # no torn, no lost line
    assert counts.ledger_done_twice == 0  # of agents racing for a job, one claimed and did it
    assert counts.index_present == counts.index_expected == counts.files_present  # converged
    assert counts.index_tokens_found == counts.index_tokens_checked > 0  # with the latest text
    assert set(counts.by_kind) == {"add", "edit", "confirm", "deprecate", "ledger"}
    # Refusals are conflicts, moves someone else made first, or jobs another agent already
    # claimed or did: never errors.
    assert set(counts.refused_why) <= {
        "confirm: Conflict",
        "confirm: InvalidTransition",
        "deprecate: Conflict",
        "deprecate: InvalidTransition",
        "edit: conflict",
        "edit: EditDeprecated",
        "ledger: ClaimHeld",
        "ledger: AlreadyExecuted",
    }


def test_cli_processes_started_at_once_each_land_one_commit(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    stress.new_store(root)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "MEMSTORE_LOCK_TIMEOUT": "60"}
    cli = [sys.executable, "-m", "memstore", "--store", str(root)]
    procs = [
        subprocess.Popen(
            [
                *cli,
                "--agent",
                f"p{n}",
                "add",
                f"cli-{n}",
                "--type",
                "fact",
                "-d",
                f"from {n}",
                "--body",
                f"tokcli{n}",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(8)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, results
    assert len(stress.memory_files(root)) == 8
    log = git(root, "log", "--format=%an %s").splitlines()
    assert sorted(line.split()[0] for line in log[:8]) == [f"p{n}" for n in range(8)]
    assert git(root, "status", "--porcelain") == ""
