"""Merges in the history: a version a merge takes whole from a parent keeps that parent's
verdict only when that parent's side made the change since they forked; anything else the
merge writes (an older version brought back, a deleted memory resurrected, a rename) is the
merging committer's own change. Every merge here is made with real `git merge` or
`git commit-tree`, as anyone with shell access can."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import GIT_ENV, as_agent, git

from memstore.search import upkeep as search
from memstore.storage.store import Store
from memstore.workflow.care import lint


def problems(store: Store) -> list[str]:
    return [str(p) for p in lint.lint_store(store)]


def rev(store: Store, name: str = "HEAD") -> str:
    return git(store.root, "rev-parse", name).strip()


def env_of(who: str) -> dict[str, str]:
    return {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": who, "GIT_COMMITTER_NAME": who}


def forge_merge(
    store: Store, parents: list[str], take: dict[str, str | None], who: str = "mallory"
) -> str:
    """A merge of `parents` holding HEAD's tree with each path of `take` as it is in the
    commit named (None: removed), committed by `who` with `git commit-tree`; HEAD and the
    working tree move to it."""
    git(store.root, "read-tree", "HEAD")
    for path, source in take.items():
        if source is None:
            git(store.root, "rm", "-q", "--cached", path)
        else:
            blob = git(store.root, "rev-parse", f"{source}:{path}").strip()
            git(store.root, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    tree = git(store.root, "write-tree").strip()
    args = [x for p in parents for x in ("-p", p)]
    done = subprocess.run(
        ["git", "commit-tree", tree, *args, "-m", "merge"],
        cwd=store.root,
        env=env_of(who),
        check=True,
        capture_output=True,
        text=True,
    )
    sha = done.stdout.strip()
    git(store.root, "reset", "-q", "--hard", sha)
    return sha


def shown(store: Store, name: str) -> str:
    return as_agent(store, "carol").get(name).status


def in_search(store: Store, words: str) -> dict[str, str]:
    return {h.name: h.status for h in search.search(store, search.Query(words))}


@pytest.fixture
def deprecated(store: Store) -> tuple[Store, str]:
    """alice's `cache-ttl`, confirmed by bob, then deprecated by carol as wrong; the commit
    holding bob's confirmation."""
    store.add("cache-ttl", type="fact", description="The cache TTL is ten minutes", body="600s")
    as_agent(store, "bob").confirm("cache-ttl", "checked the config")
    confirmed = rev(store)
    as_agent(store, "carol").deprecate("cache-ttl", "wrong: the TTL is one minute")
    assert problems(store) == []
    return store, confirmed


PATH = "fact/cache-ttl.md"


def assert_not_confirmed(store: Store) -> None:
    found = problems(store)
    assert any(p.startswith(PATH) for p in found), found
    assert shown(store, "cache-ttl") == "unverified"
    assert in_search(store, "cache ttl minutes") == {"cache-ttl": "unverified"}


def test_a_merge_taking_the_file_from_an_old_second_parent_is_the_mergers_change(
    deprecated: tuple[Store, str],
) -> None:
    store, confirmed = deprecated
    forge_merge(store, [rev(store), confirmed], {PATH: confirmed})
    assert "status: confirmed" in (store.root / PATH).read_text("utf-8")
    assert_not_confirmed(store)


def test_the_same_with_the_old_commit_as_first_parent(deprecated: tuple[Store, str]) -> None:
    store, confirmed = deprecated
    forge_merge(store, [confirmed, rev(store)], {PATH: confirmed})
    assert_not_confirmed(store)


def test_the_same_with_an_ancestor_several_commits_back(deprecated: tuple[Store, str]) -> None:
    store, confirmed = deprecated
    store.add("other", type="fact", description="Something else")
    as_agent(store, "bob").add("third", type="fact", description="And another")
    forge_merge(store, [rev(store), confirmed], {PATH: confirmed})
    assert_not_confirmed(store)


def test_the_same_in_an_octopus_merge(deprecated: tuple[Store, str]) -> None:
    store, confirmed = deprecated
    git(store.root, "checkout", "-q", "-b", "side", confirmed)
    as_agent(store, "dave").add("side-note", type="fact", description="From a side branch")
    side = rev(store)
    git(store.root, "checkout", "-q", "-")
    forge_merge(store, [rev(store), side, confirmed], {PATH: confirmed, "fact/side-note.md": side})
    assert_not_confirmed(store)
    assert shown(store, "side-note") == "draft"


def test_the_same_when_the_old_side_made_other_changes(deprecated: tuple[Store, str]) -> None:
    # The old side's own commit (a new memory) does not make the old version its change.
    store, confirmed = deprecated
    git(store.root, "checkout", "-q", "-b", "side", confirmed)
    as_agent(store, "mallory").add("decoy", type="fact", description="A decoy")
    side = rev(store)
    git(store.root, "checkout", "-q", "-")
    env = env_of("mallory")
    subprocess.run(
        ["git", "merge", "-q", "--no-commit", "-s", "ours", side],
        cwd=store.root,
        env=env,
        check=True,
    )
    git(store.root, "checkout", side, "--", PATH, "fact/decoy.md")
    subprocess.run(["git", "commit", "-qm", "merge"], cwd=store.root, env=env, check=True)
    assert_not_confirmed(store)


def test_a_merge_resurrecting_a_forgotten_memory_does_not_bring_its_confirmation(
    store: Store,
) -> None:
    store.add("cache-ttl", type="fact", description="The cache TTL is ten minutes", body="600s")
    as_agent(store, "bob").confirm("cache-ttl", "checked the config")
    confirmed = rev(store)
    store.forget("cache-ttl", "wrong, and nobody should read it")
    forge_merge(store, [rev(store), confirmed], {PATH: confirmed})
    assert (store.root / PATH).is_file()
    assert_not_confirmed(store)


def test_a_merge_renaming_an_old_version_back_is_judged_as_a_rename(
    deprecated: tuple[Store, str],
) -> None:
    store, confirmed = deprecated
    old = git(store.root, "show", f"{confirmed}:{PATH}")
    moved = old.replace("name: cache-ttl", "name: cache-ttl-v2")
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=store.root,
        input=moved,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(store.root, "read-tree", "HEAD")
    git(store.root, "rm", "-q", "--cached", PATH)
    git(store.root, "update-index", "--add", "--cacheinfo", f"100644,{blob},fact/cache-ttl-v2.md")
    tree = git(store.root, "write-tree").strip()
    done = subprocess.run(
        ["git", "commit-tree", tree, "-p", rev(store), "-p", confirmed, "-m", "merge"],
        cwd=store.root,
        env=env_of("mallory"),
        check=True,
        capture_output=True,
        text=True,
    )
    git(store.root, "reset", "-q", "--hard", done.stdout.strip())
    found = problems(store)
    assert any(p.startswith("fact/cache-ttl-v2.md") for p in found), found
    assert shown(store, "cache-ttl-v2") == "unverified"


# -- what a merge may keep ----------------------------------------------------------------------


def test_a_deprecation_made_on_a_branch_and_merged_stays_fine(store: Store) -> None:
    store.add("cache-ttl", type="fact", description="The cache TTL is ten minutes")
    as_agent(store, "bob").confirm("cache-ttl", "checked")
    git(store.root, "checkout", "-q", "-b", "review")
    as_agent(store, "carol").deprecate("cache-ttl", "wrong")
    git(store.root, "checkout", "-q", "-")
    store.add("other", type="fact", description="Meanwhile on the main line")
    subprocess.run(
        ["git", "merge", "-q", "--no-edit", "review"],
        cwd=store.root,
        env=env_of("alice"),
        check=True,
    )
    assert problems(store) == []
    assert shown(store, "cache-ttl") == "deprecated"


def test_a_confirmation_merged_into_a_branch_behind_it_keeps_counting(store: Store) -> None:
    # The first parent is the old one, but the second parent's side made the change.
    store.add("cache-ttl", type="fact", description="The cache TTL is ten minutes")
    git(store.root, "checkout", "-q", "-b", "behind")
    as_agent(store, "dave").add("side-note", type="fact", description="On the branch")
    git(store.root, "checkout", "-q", "-")
    as_agent(store, "bob").confirm("cache-ttl", "checked")
    git(store.root, "checkout", "-q", "behind")
    subprocess.run(
        ["git", "merge", "-q", "--no-edit", "-"],
        cwd=store.root,
        env=env_of("dave"),
        check=True,
    )
    assert problems(store) == []
    assert shown(store, "cache-ttl") == "confirmed"


def test_verdicts_after_a_merge_agree_between_reads_and_a_full_replay(
    deprecated: tuple[Store, str],
) -> None:
    # A process that read the verdicts before the merge extends them; lint replays it all.
    store, confirmed = deprecated
    reader = as_agent(store, "carol")
    assert reader.get("cache-ttl").status == "deprecated"
    forge_merge(store, [rev(store), confirmed], {PATH: confirmed})
    assert reader.get("cache-ttl").status == "unverified"


def test_signatures_required_do_not_let_an_unsigned_merge_bring_a_confirmation_back(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.git import signing

    lines = ""
    keys: dict[str, Path] = {}
    for who in ("alice", "bob", "carol"):
        key = keys[who] = tmp_path / f"key-{who}"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", who, "-f", str(key)], check=True
        )
        public = Path(f"{key}.pub").read_text(encoding="utf-8")
        lines += signing.allowed_line(who, public) + "\n"
    (store.root / "allowed_signers").write_text(lines, encoding="utf-8")
    (store.root / "memstore.yaml").write_text("require_signatures: true\n", encoding="utf-8")
    git(store.root, "add", "allowed_signers", "memstore.yaml")
    git(store.root, "commit", "-qm", "signatures required")

    def signer(who: str) -> Store:
        monkeypatch.setenv("MEMSTORE_SIGNING_KEY", str(keys[who]))
        return as_agent(store, who)

    signer("alice").add("cache-ttl", type="fact", description="The cache TTL is ten minutes")
    signer("bob").confirm("cache-ttl", "checked the config")
    confirmed = rev(store)
    assert signer("carol").get("cache-ttl").status == "confirmed"
    signer("carol").deprecate("cache-ttl", "wrong: the TTL is one minute")
    assert problems(signer("carol")) == []
    forge_merge(store, [rev(store), confirmed], {PATH: confirmed})
    found = problems(signer("carol"))
    assert any(p.startswith(PATH) for p in found), found
    assert signer("carol").get("cache-ttl").status == "unverified"


# -- judging a few files without the whole history ---------------------------------------------


def branchy(store: Store, confirmed: str) -> None:
    """A rename, confirmations by others, a side branch merged, and a forged merge."""
    store.add("renamed-rule", type="fact", description="Old name", body="see [[cache-ttl]]")
    as_agent(store, "bob").confirm("renamed-rule", "fine")
    store.rename("renamed-rule", "new-name")
    as_agent(store, "bob").add("bobs", type="fact", description="Bob's own")
    as_agent(store, "carol").confirm("bobs", "checked")
    git(store.root, "checkout", "-q", "-b", "side", confirmed)
    as_agent(store, "dave").add("side-note", type="fact", description="From a side branch")
    as_agent(store, "erin").confirm("side-note", "seen on the side")
    git(store.root, "checkout", "-q", "-")
    subprocess.run(
        ["git", "merge", "-q", "--no-edit", "side"], cwd=store.root, env=env_of("alice"), check=True
    )
    forge_merge(store, [rev(store), confirmed], {PATH: confirmed})


def test_a_few_files_judged_alone_get_the_verdicts_of_the_whole_replay(
    deprecated: tuple[Store, str],
) -> None:
    from memstore.storage import trust

    store, confirmed = deprecated
    branchy(store, confirmed)
    whole = trust.full(store.repo, store.root)
    for path in sorted(whole.blobs):
        alone = trust.partial(store.repo, store.root, [path])
        blob = whole.blobs[path]
        assert alone.blobs.get(path) == blob, path
        assert alone.owners.get(path) == whole.owners.get(path), path
        assert alone.verdict(path, blob) == whole.verdict(path, blob), path
    assert not whole.verdict(PATH, whole.blobs[PATH]).ok
    assert whole.verdict("fact/new-name.md", whole.blobs["fact/new-name.md"]).ok


def test_several_files_read_a_path_at_a_time_give_the_one_log_and_its_verdicts(
    deprecated: tuple[Store, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the commit-graph's changed-path filters, several files' history is read a file
    # at a time (git uses the filters for one path only): it must be the one log exactly.
    from memstore.git import gitlog, graph
    from memstore.storage import trust

    store, confirmed = deprecated
    branchy(store, confirmed)
    paths = ["fact/cache-ttl.md", "fact/new-name.md", "fact/bobs.md", "fact/side-note.md"]
    wanted = [f"{trust.prefix_of(store.repo, store.root)}{p}" for p in paths]
    whole = trust.full(store.repo, store.root)
    assert not graph.has_filters(store.repo)
    assert not graph.ensure(store.repo)  # a small tree: no graph written
    one_log = gitlog.store_commits(store.repo, store.root, paths=wanted)
    assert sum(len(c.parents) > 1 for c in one_log) == 2  # both merges are in it
    monkeypatch.setattr(graph, "LARGE_INDEX", 100)
    assert graph.ensure(store.repo)
    assert graph.has_filters(store.repo)
    read: list[list[str]] = []
    single = gitlog.git
    monkeypatch.setattr(gitlog, "git", lambda repo, *a: read.append(list(a)) or single(repo, *a))
    by_path = gitlog.store_commits(store.repo, store.root, paths=wanted)
    logs = [a for a in read if a[0] == "log"]
    assert len(logs) == len(wanted) and all(len(a) == len(gitlog._LOG) + 3 for a in logs)

    def shown(commits: list[gitlog.StoreCommit]) -> dict[str, object]:
        return {
            c.sha: (c.parents, c.author, c.message, sorted(c.changes, key=lambda x: x.path))
            for c in commits
        }

    assert shown(by_path) == shown(one_log)
    seen: set[str] = set()
    for c in by_path:  # parents first
        assert all(p in seen for p in c.parents), c.sha
        seen.add(c.sha)
    together = trust.partial(store.repo, store.root, wanted)
    for path in paths:
        blob = whole.blobs[path]
        assert together.owners.get(path) == whole.owners.get(path), path
        assert together.verdict(path, blob) == whole.verdict(path, blob), path
    assert not together.verdict(PATH, whole.blobs[PATH]).ok


def test_a_read_on_a_store_without_its_verdicts_judges_only_what_it_shows(
    deprecated: tuple[Store, str],
) -> None:
    store, confirmed = deprecated
    forge_merge(store, [rev(store), confirmed], {PATH: confirmed})
    as_agent(store, "bob").add("other", type="fact", description="Something else about cache")
    fresh = as_agent(store, "carol")
    (fresh.cache / "trust.json").unlink(missing_ok=True)
    assert fresh.get("cache-ttl").status == "unverified"
    assert in_search(fresh, "cache ttl minutes")["cache-ttl"] == "unverified"
    assert fresh.trust.trust is None  # no whole replay was needed
    assert not (fresh.cache / "trust.json").exists()
    assert any(p.startswith(PATH) for p in problems(fresh))


def test_cached_verdicts_extend_across_a_merge_of_a_branch_that_forked_before_them(
    deprecated: tuple[Store, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.storage import trust

    store, confirmed = deprecated
    reader = as_agent(store, "carol")
    reader.trust.current()  # every verdict at this HEAD, kept under .memstore/
    assert (reader.cache / "trust.json").is_file()
    git(store.root, "checkout", "-q", "-b", "side", confirmed)
    as_agent(store, "dave").add("side-note", type="fact", description="From a side branch")
    as_agent(store, "erin").confirm("side-note", "checked")
    git(store.root, "checkout", "-q", "-")
    subprocess.run(
        ["git", "merge", "-q", "--no-edit", "side"], cwd=store.root, env=env_of("alice"), check=True
    )
    forge_merge(store, [rev(store), confirmed], {PATH: confirmed})
    replays: list[object] = []
    whole = trust.full
    monkeypatch.setattr(trust, "full", lambda *a, **k: replays.append(a) or whole(*a, **k))
    assert reader.get("side-note").status == "confirmed"
    assert reader.get("cache-ttl").status == "unverified"
    assert replays == []  # extended, not replayed from the start
    extended = reader.trust.current()
    again = whole(store.repo, store.root)
    assert extended.blobs == again.blobs and extended.owners == again.owners
    for path, blob in again.blobs.items():
        assert extended.verdict(path, blob) == again.verdict(path, blob), path


def test_kept_verdicts_at_head_are_read_for_the_files_shown_only(
    deprecated: tuple[Store, str],
) -> None:
    store, confirmed = deprecated
    forge_merge(store, [rev(store), confirmed], {PATH: confirmed})
    as_agent(store, "bob").add("other", type="fact", description="Something else")
    as_agent(store, "carol").confirm("other", "checked")
    (store.cache / "trust.json").unlink(missing_ok=True)
    as_agent(store, "dave").trust.current()  # kept under .memstore/ for this HEAD
    store.add("unrelated", type="fact", description="A memstore commit since")
    fresh = as_agent(store, "erin")
    assert fresh.get("other").status == "confirmed"
    assert fresh.get("cache-ttl").status == "unverified"
    assert fresh.trust.trust is None  # the whole file was not loaded
    as_agent(store, "bob").edit("other", body="changed since")
    assert as_agent(store, "erin").get("other").status != "confirmed"


def test_verdicts_kept_for_another_history_are_not_used(
    deprecated: tuple[Store, str], tmp_path: Path
) -> None:
    # A cache copied from a clone where bob's confirmation still stood says nothing here.
    store, confirmed = deprecated
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(store.root), str(other))
    git(other, "reset", "-q", "--hard", confirmed)
    there = Store(other, agent="carol")
    assert there.get("cache-ttl").status == "confirmed"
    there.trust.current()
    forge_merge(store, [rev(store), confirmed], {PATH: confirmed})
    store.cache.mkdir(exist_ok=True)
    (store.cache / "trust.json").write_bytes((there.cache / "trust.json").read_bytes())
    assert as_agent(store, "dave").get("cache-ttl").status == "unverified"


def test_a_process_that_reads_on_takes_the_whole_verdicts_once(
    deprecated: tuple[Store, str],
) -> None:
    # A server on a fresh clone (no verdicts kept): its first recall judges the files it
    # shows; the recalls after it must not judge (or replay) file by file again and again.
    store, _ = deprecated
    for i in range(6):
        store.add(f"note-{i}", type="fact", description=f"Note number {i}")
    (store.cache / "trust.json").unlink(missing_ok=True)
    cache = as_agent(store, "erin").trust
    paths = [f"{cache.prefix}fact/note-{i}.md" for i in range(6)]
    cache.current_for(paths[:1])
    assert cache.trust is None  # the first read judged its file only
    for path in paths[1:]:
        assert cache.current_for([path]).blobs.get(path)
    assert cache.trust is not None  # the whole verdicts, kept and extended from now on
    assert (store.cache / "trust.json").exists()
