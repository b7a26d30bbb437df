"""Writers killed with SIGKILL at random points, fifty times: after every kill each memory file
and ledger line is whole; afterwards the store is consistent and every reported write is
there."""

from __future__ import annotations

from pathlib import Path

from bench import stress

KILLS = 50


def test_writers_killed_at_random_leave_whole_files_and_lose_no_reported_write(
    tmp_path: Path,
) -> None:
    root = tmp_path / "memory"
    stress.new_store(root)
    records, after_kills, recoveries = stress.crash(root, KILLS, seed=5)
    assert after_kills == []  # no empty, half-written or unparsable file after any kill
    stress.finish(root)  # the next writer undoes what the last kill left
    counts = stress.verify(root, records)
    assert counts.problems == []  # clean status, git fsck, lint; no temp, journal or git lock
    assert counts.lost == 0 and counts.succeeded > 0
    assert counts.commits_present >= counts.commits_expected
    assert counts.tokens_present == counts.tokens_expected
    assert counts.ledger_lines_present >= counts.ledger_lines_expected  # ledger verify is clean
    assert counts.ledger_done_twice == 0
    # A search index left half-written by a kill is rebuilt; a fresh process's catches up.
    assert counts.index_present == counts.index_expected == counts.files_present
    assert counts.index_tokens_found == counts.index_tokens_checked > 0
    assert sum(recoveries.values()) > 0  # the kills did land inside writes
