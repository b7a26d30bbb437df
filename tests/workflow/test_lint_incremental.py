"""`lint` again on a store it has looked at: its own last replay, extended with the commits
since, each judged; never the reads' kept verdicts, and never a forgery let through."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.storage import trust, verdicts
from memstore.storage.store import Store
from tests.conftest import as_agent, git
from tests.workflow.test_lint import human_commit, messages


def _forge(store: Store, name: str, by: str = "mallory") -> None:
    """A confirmation of `name` naming bob as its reviewer, committed by `by`."""
    path = store.root / "fact" / f"{name}.md"
    text = (
        path.read_text(encoding="utf-8")
        .replace("status: draft", "status: confirmed")
        .replace("tags: []", "tags: []\nconfirmed_by: bob")
    )
    path.write_text(text, encoding="utf-8")
    human_commit(store, by)


def _no_whole_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_args: object, **_kwargs: object) -> trust.Trust:
        raise AssertionError("replayed the whole history")

    monkeypatch.setattr(trust, "full", refused)


def test_a_forgery_committed_since_the_last_lint_is_caught(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add("kept", type="fact", description="Reviewed")
    store.add("claim", type="fact", description="A claim")
    as_agent(store, "bob").confirm("kept", "checked")
    assert messages(store) == []
    assert (store.cache / verdicts.LINT_FILE).is_file()
    _forge(store, "claim")
    _no_whole_replay(monkeypatch)  # the commits judged last time are not judged again
    found = messages(Store(store.root, agent="carol"))
    assert any("forged confirmation" in m and "'mallory'" in m for m in found), found
    again = messages(Store(store.root, agent="carol"))  # kept at this HEAD: same verdict
    assert again == found


def test_the_reads_kept_verdicts_never_vouch_for_lint(store: Store) -> None:
    store.add("claim", type="fact", description="A claim")
    assert messages(store) == []
    _forge(store, "claim")
    # The reads' cache says all is well (written by hand, as anyone with access could):
    store.trust.current()
    kept = verdicts.load(store.cache / verdicts.CACHE_FILE, False, frozenset(), _basis(store))
    assert kept is not None
    for key in list(kept.verdicts):
        kept.verdicts[key] = trust.Verdict(True)
    verdicts.save(store.cache / verdicts.CACHE_FILE, kept, False, frozenset(), _basis(store))
    assert any("forged confirmation" in m for m in messages(Store(store.root, agent="carol")))


def test_a_rewritten_history_is_replayed_whole(store: Store, tmp_path: Path) -> None:
    store.add("claim", type="fact", description="A claim")
    base = git(store.root, "rev-parse", "HEAD").strip()
    store.add("other", type="fact", description="Reset away")
    assert messages(store) == []
    git(store.root, "reset", "-q", "--hard", base)
    _forge(store, "claim")
    found = messages(Store(store.root, agent="carol"))
    assert any("forged confirmation" in m for m in found), found
    assert not any("other" in m for m in found)


def test_new_people_are_judged_from_the_whole_history(store: Store) -> None:
    store.add("claim", type="fact", description="A claim")
    assert messages(store) == []
    kept = verdicts.load(store.cache / verdicts.LINT_FILE, False, frozenset(), _basis(store))
    assert kept is not None and kept.humans == ()
    (store.root / "memstore.yaml").write_text("humans: [alice]\n", encoding="utf-8")
    git(store.root, "add", "memstore.yaml")
    git(store.root, "commit", "-qm", "name the humans")
    messages(store)
    kept = verdicts.load(store.cache / verdicts.LINT_FILE, False, frozenset(), _basis(store))
    assert kept is not None and kept.humans == ("alice",)


def _basis(store: Store) -> str:
    from memstore.storage import settings

    return settings.basis(store.root)
