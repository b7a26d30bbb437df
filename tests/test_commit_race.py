"""A person committing with plain git (and retrying when git refuses) while four agents add
memories, through the CLI and through MCP servers: every memory lands at HEAD in its agent's
own commit, and the repository is left clean (see bench/commit_race.py for the full run)."""

from __future__ import annotations

from pathlib import Path

import anyio

from bench import commit_race


def test_a_person_committing_beside_four_agents_takes_no_memory_and_loses_none(
    tmp_path: Path,
) -> None:
    for run in range(3):
        result = anyio.run(commit_race.one_run, tmp_path / f"run-{run}", 4, 2, 6, 100 + run)
        assert result["problems"] == [], result
        assert result["memories saved"] == result["memories asked"] == 8
        assert result["commits"] >= 6
