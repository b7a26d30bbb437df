"""Kept verdicts read back as they were saved, whatever their fields hold."""

from __future__ import annotations

from pathlib import Path

from memstore.storage import trust as history
from memstore.storage import verdicts


def test_kept_verdicts_read_back_whole_and_in_part_as_saved(tmp_path: Path) -> None:
    kept = history.Trust(head="h" * 40, tip="t" * 40, humans=("ann",))
    odd = ["m/fact/tab\there.md", 'm/fact/"quoted.md', "m/fact/back\\slash.md", "m/fact/日本.md"]
    plain = [f"m/fact/plain-{i}.md" for i in range(6)]
    for i, path in enumerate([*odd, *plain]):
        blob = f"{i:040x}"
        kept.blobs[path] = blob
        kept.owners[path] = 'bob "the builder"' if i == 1 else "agent\tx" if i == 2 else "ann"
        kept.writers[path] = f"{i + 100:040x}"
        if i % 3 != 2:  # some versions have no verdict kept
            problem = None if i % 2 else f'not confirmed by "a human"\nsee log {i % 4}'
            # Several files share one verdict, as a commit confirming many does.
            kept.verdicts[f"{path}\0{blob}"] = history.Verdict(i % 2 == 1, problem, "c" * 40)
    kept.writers["m/fact/removed.md"] = "r" * 40  # a file removed: its writer only
    file = tmp_path / "trust.json"
    verdicts.save(file, kept, False, frozenset())
    back = verdicts.load(file, False, frozenset())
    assert back is not None
    assert (back.head, back.tip, back.humans) == (kept.head, kept.tip, kept.humans)
    assert (back.blobs, back.owners, back.writers) == (kept.blobs, kept.owners, kept.writers)
    assert back.verdicts == kept.verdicts
    part = verdicts.load_some(file, False, frozenset(), kept.head, odd[:2])
    assert part is not None
    assert part.blobs == {p: kept.blobs[p] for p in odd[:2]}
    assert part.verdicts == {k: v for k, v in kept.verdicts.items() if k.split("\0")[0] in odd[:2]}
    assert verdicts.load(file, True, frozenset()) is None  # made without signatures required
