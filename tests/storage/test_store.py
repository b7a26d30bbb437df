"""The store on real git repositories: writes, refusals, commits and reads that never write."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memstore.errors import (
    Conflict,
    InvalidMemory,
    InvalidName,
    InvalidTransition,
    MemoryExists,
    MemoryNotFound,
    NoIdentity,
    NotAStore,
    SelfApproval,
)
from memstore.git import gitlog
from memstore.storage.store import Store, atomic_write
from memstore.workflow.ledger import book as ledger_io
from tests.conftest import as_agent, git


def head(store: Store) -> str:
    return git(store.root, "rev-parse", "HEAD").strip()


def status(store: Store) -> str:
    return git(store.root, "status", "--porcelain", "--untracked-files=all")


def add(store: Store, name: str = "use-zod", **kw: object) -> None:
    args: dict[str, object] = {"type": "decision", "description": "Validate input with zod"}
    args.update(kw)
    store.add(name, **args)  # type: ignore[arg-type]


def test_init_outside_git_creates_a_repository_with_ignore_and_attributes(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "notes", agent="alice")
    assert (tmp_path / "notes" / ".git").is_dir()
    assert ".memstore/" in (store.root / ".gitignore").read_text(encoding="utf-8")
    assert "merge=union" in (store.root / ".gitattributes").read_text(encoding="utf-8")
    assert git(store.root, "log", "--format=%an %s").strip() == "alice memory: init store"
    assert status(store) == ""


def test_files_memstore_creates_get_the_usual_mode_under_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        store = Store.init(tmp_path / "notes", agent="alice")
        add(store)
        ledger_io.record(store, "publish", "post-1", evidence="https://example.com/1")
        os.umask(0o027)
        store.add("later", type="fact", description="made under a stricter umask")
    finally:
        os.umask(old)
    made = [
        store.root / ".gitignore",
        store.root / ".gitattributes",
        store.path_for("use-zod"),
        store.ledger_path,
    ]
    assert [stat.S_IMODE(p.stat().st_mode) for p in made] == [0o644] * 4
    assert stat.S_IMODE(store.path_for("later").stat().st_mode) == 0o640


def test_init_inside_a_repository_uses_it_and_is_idempotent(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "src.py").write_text("x = 1\n", encoding="utf-8")
    store = Store.init(tmp_path / "memory", agent="alice")
    assert not (tmp_path / "memory" / ".git").exists()
    assert Path(store.repo.top or "") == tmp_path
    before = git(tmp_path, "rev-parse", "HEAD")
    Store.init(tmp_path / "memory", agent="alice")
    assert git(tmp_path, "rev-parse", "HEAD") == before


def test_opening_a_folder_that_is_not_a_store_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(NotAStore, match="memstore init"):
        Store(tmp_path / "nowhere")


def test_add_writes_a_draft_file_and_one_commit_by_the_author(store: Store) -> None:
    before = head(store)
    add(store, tags=["api"], body="## Why\nDrift.")
    path = store.root / "decision" / "use-zod.md"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\nname: use-zod\ndescription: Validate input with zod\n")
    assert "status: draft\nowner: alice\n" in text
    assert git(store.root, "rev-list", "--count", f"{before}..HEAD").strip() == "1"
    log = git(store.root, "log", "-1", "--format=%an|%s")
    assert log.strip() == "alice|memory: add decision/use-zod — Validate input with zod"
    assert git(store.root, "show", "--name-only", "--format=", "HEAD").split() == [
        "decision/use-zod.md"
    ]
    assert status(store) == ""


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"name": "../escape"}, InvalidName, "invalid name"),
        ({"name": "/abs"}, InvalidName, "invalid name"),
        ({"name": "Has Space"}, InvalidName, "invalid name"),
        ({"type": "opinion"}, InvalidMemory, "unknown type 'opinion'"),
        ({"description": "d" * 201}, InvalidMemory, "limit is 200"),
        ({"description": "a\nstatus: confirmed"}, InvalidMemory, "one line"),
        ({"tags": ["no spaces allowed"]}, InvalidMemory, "invalid tag"),
        ({"links": ["../x"]}, InvalidName, "invalid link"),
    ],
)
def test_refused_add_writes_nothing_and_commits_nothing(
    store: Store, kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    before = head(store)
    name = str(kwargs.pop("name", "fine-name"))
    with pytest.raises(error, match=message):
        add(store, name, **kwargs)
    assert head(store) == before
    assert status(store) == ""
    assert not list(store.root.rglob("*.md"))


def test_a_name_is_unique_across_type_folders(store: Store) -> None:
    add(store)
    before = head(store)
    with pytest.raises(MemoryExists, match="decision/use-zod.md"):
        add(store, type="fact")
    assert head(store) == before and status(store) == ""


def test_write_without_any_identity_says_how_to_set_one(tmp_path: Path) -> None:
    Store.init(tmp_path / "memory")
    store = Store(tmp_path / "memory")
    with pytest.raises(NoIdentity, match="MEMSTORE_AGENT"):
        add(store)
    assert not list(store.root.rglob("*.md"))


def test_identity_falls_back_to_git_user_name(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "memory")
    git(store.root, "config", "user.name", "Grace Hopper")
    add(Store(store.root))
    assert git(store.root, "log", "-1", "--format=%an").strip() == "Grace Hopper"
    assert Store(store.root).get("use-zod").owner == "Grace Hopper"


def test_commits_as_git_user_use_its_email_and_other_identities_the_synthetic_one(
    tmp_path: Path,
) -> None:
    store = Store.init(tmp_path / "memory")
    git(store.root, "config", "user.name", "Grace Hopper")
    git(store.root, "config", "user.email", "grace@example.com")
    add(Store(store.root))
    assert git(store.root, "log", "-1", "--format=%an <%ae>").strip() == (
        "Grace Hopper <grace@example.com>"
    )
    as_agent(store, "grace hopper").add("second", type="fact", description="same person")
    assert git(store.root, "log", "-1", "--format=%ae").strip() == "grace@example.com"
    as_agent(store, "bob").add("third", type="fact", description="someone else")
    assert git(store.root, "log", "-1", "--format=%ae").strip() == "bob@memstore.invalid"


def test_confirm_by_another_identity_is_a_small_commit_by_them(store: Store) -> None:
    add(store, body="Some body\nwith lines\n" * 5)
    bob = as_agent(store, "bob")
    bob.confirm("use-zod", "verified in src/types.ts")
    assert bob.get("use-zod").status == "confirmed"
    log = git(store.root, "log", "-1", "--format=%an|%s")
    assert log.strip() == "bob|memory: confirm decision/use-zod — verified in src/types.ts"
    # Only front-matter lines change: the status, the time (when the second moved on) and the
    # confirmation's own keys; the body is untouched.
    diff = git(store.root, "show", "--format=", "--unified=0", "HEAD").splitlines()
    changed = [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    keys = {line[1:].split(":", 1)[0] for line in changed}
    assert keys <= {
        "status",
        "updated",
        "confirmed_by",
        "confirmed_at",
        "confirmed_reason",
        "confirmed_hash",
    }, changed
    assert {"-status", "+status", "+confirmed_by"} <= {line.split(":")[0] for line in changed}


def test_self_confirmation_is_refused_without_a_commit(store: Store) -> None:
    add(store)
    before, text = head(store), (store.root / "decision/use-zod.md").read_bytes()
    with pytest.raises(SelfApproval, match="nobody confirms their own memory"):
        store.confirm("use-zod", "I am sure")
    assert head(store) == before
    assert (store.root / "decision/use-zod.md").read_bytes() == text


def test_deprecate_keeps_the_file_and_links_successor_both_ways_in_one_commit(
    store: Store,
) -> None:
    add(store, "use-joi", description="Validate with joi")
    add(store, "use-zod")
    before = head(store)
    as_agent(store, "bob").deprecate("use-joi", "zod replaced it", superseded_by="use-zod")
    old, new = store.get("use-joi"), store.get("use-zod")
    assert (old.status, old.deprecated_reason, old.superseded_by) == (
        "deprecated",
        "zod replaced it",
        "use-zod",
    )
    assert new.supersedes == ("use-joi",)
    assert git(store.root, "rev-list", "--count", f"{before}..HEAD").strip() == "1"


def test_deprecate_with_unknown_successor_changes_nothing(store: Store) -> None:
    add(store)
    before = head(store)
    with pytest.raises(MemoryNotFound, match="no-such"):
        store.deprecate("use-zod", "stale", superseded_by="no-such")
    assert head(store) == before and store.get("use-zod").status == "draft"


def test_disallowed_move_is_refused_without_a_commit(store: Store) -> None:
    add(store)
    before = head(store)
    with pytest.raises(InvalidTransition, match="from draft it can go to: confirmed, deprecated"):
        store.restore("use-zod", "why not")
    assert head(store) == before


def test_restore_brings_a_deprecated_memory_back_as_draft(store: Store) -> None:
    add(store)
    store.deprecate("use-zod", "stale")
    restored = store.restore("use-zod", "applies again")
    assert restored.status == "draft" and restored.deprecated_reason is None
    assert restored.restored_reason == "applies again"


def test_content_edit_of_confirmed_memory_returns_it_to_draft(store: Store) -> None:
    add(store)
    as_agent(store, "bob").confirm("use-zod", "ok")
    edited = store.edit("use-zod", body="New reasoning.")
    assert edited.status == "draft" and edited.confirmed_by is None
    assert "back to draft" in git(store.root, "log", "-1", "--format=%s")


def test_tag_only_edit_keeps_confirmed(store: Store) -> None:
    add(store)
    as_agent(store, "bob").confirm("use-zod", "ok")
    edited = store.edit("use-zod", tags=["api", "typescript"])
    assert edited.status == "confirmed" and edited.tags == ("api", "typescript")


def test_edit_that_changes_nothing_makes_no_commit(store: Store) -> None:
    add(store)
    before = head(store)
    store.edit("use-zod", description="Validate input with zod")
    assert head(store) == before


def test_edit_with_a_stale_version_is_a_conflict_and_overwrites_nothing(store: Store) -> None:
    add(store)
    seen = store.read("use-zod").version
    as_agent(store, "bob").edit("use-zod", body="bob's change")
    with pytest.raises(Conflict, match=f"you read version {seen}"):
        store.edit("use-zod", body="alice's change", expected_version=seen)
    assert store.get("use-zod").body == "bob's change"


def test_reads_never_write(store: Store) -> None:
    add(store)
    before = head(store)
    reader = as_agent(store, "bob")
    reader.get("use-zod")
    reader.list(status="draft")
    reader.read("use-zod")
    gitlog.log(reader.repo, reader.path_for("use-zod"))
    assert head(store) == before
    assert status(store) == ""


def test_list_filters_combine_and_tags_are_and(store: Store) -> None:
    add(store, "a", tags=["x", "y"])
    add(store, "b", tags=["x"], type="fact")
    add(store, "c", tags=["y"])
    assert [m.name for m in store.list(tags=("x", "y"))] == ["a"]
    assert [m.name for m in store.list(type="fact")] == ["b"]
    assert {m.name for m in store.list(status="draft")} == {"a", "b", "c"}


def test_a_store_may_add_its_own_types(store: Store) -> None:
    (store.root / "memstore.yaml").write_text("types: [adr]\n", encoding="utf-8")
    reopened = Store(store.root, agent="alice")
    reopened.add("first-adr", type="adr", description="Record decisions as ADRs")
    assert reopened.get("first-adr").type == "adr"


def test_history_lists_each_change_newest_first(store: Store) -> None:
    add(store)
    as_agent(store, "bob").confirm("use-zod", "ok")
    revisions = gitlog.log(store.repo, store.path_for("use-zod"))
    assert [r.author for r in revisions] == ["bob", "alice"]
    assert revisions[0].message.startswith("memory: confirm")


def test_nested_store_leaves_unrelated_staged_and_unstaged_work_alone(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "app.py").write_text("v = 1\n", encoding="utf-8")
    (tmp_path / "other.txt").write_text("a\n", encoding="utf-8")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "app")
    (tmp_path / "app.py").write_text("v = 2\n", encoding="utf-8")
    (tmp_path / "new.py").write_text("new\n", encoding="utf-8")
    git(tmp_path, "add", "app.py", "new.py")
    (tmp_path / "other.txt").write_text("b\n", encoding="utf-8")
    before = git(tmp_path, "status", "--porcelain")
    staged_diff = git(tmp_path, "diff", "--cached")

    store = Store.init(tmp_path / "memory", agent="alice")
    add(store)
    as_agent(store, "bob").confirm("use-zod", "ok")

    assert git(tmp_path, "status", "--porcelain") == before
    assert git(tmp_path, "diff", "--cached") == staged_diff
    for sha in git(tmp_path, "log", "--format=%H", "-3").split():
        files = git(tmp_path, "show", "--name-only", "--format=", sha).split()
        assert all(f.startswith("memory/") for f in files), files


def test_two_processes_writing_different_memories_both_land(store: Store) -> None:
    code = (
        "import sys; from pathlib import Path; from memstore.storage.store import Store; "
        "s = Store(Path(sys.argv[1]), agent=sys.argv[2]); "
        "[s.add(f'{sys.argv[2]}-{i}', type='fact', description=f'fact {i}') for i in range(5)]"
    )
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(store.root), who], env=env)
        for who in ("alice", "bob")
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    assert len(store.list()) == 10
    authors = git(store.root, "log", "--format=%an").split()
    assert authors.count("alice") == 6 and authors.count("bob") == 5  # +1 for init
    assert status(store) == ""
    git(store.root, "fsck", "--strict")


def test_failed_atomic_write_leaves_no_temp_file_and_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "x.md"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        atomic_write(target, "bad \udc80 surrogate")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.md"]


def test_commit_subject_stays_short_and_the_body_keeps_the_whole_description(
    store: Store,
) -> None:
    long = "A description that runs on well past what a reviewer scans in git log --oneline, " * 2
    add(store, description=long.strip())
    subject, _, body = git(store.root, "log", "-1", "--format=%B").partition("\n")
    assert len(subject) <= 72 and subject.endswith("…")
    assert long.strip() in body


def test_a_name_not_found_in_a_large_store_is_matched_with_its_neighbours(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.storage import reading

    monkeypatch.setattr(reading, "SUGGEST_AMONG", 8)  # past it: only the neighbours compared
    folder = store.root / "fact"
    folder.mkdir(exist_ok=True)
    for i in range(60):
        (folder / f"note-{i:03d}-about-things.md").write_text("not read\n", encoding="utf-8")
    (folder / "deploy-rollback-steps.md").write_text("not read\n", encoding="utf-8")
    (folder / "zz-directory.md").mkdir()  # listed, never suggested
    with pytest.raises(MemoryNotFound, match="did you mean 'deploy-rollback-steps'"):
        store.read("deploy-rollbak-steps")  # a slip in the middle: its beginning leads to it
    with pytest.raises(MemoryNotFound, match="did you mean 'deploy-rollback-steps'"):
        store.read("xeploy-rollback-steps")  # a slip at the start: its end leads to it
    with pytest.raises(MemoryNotFound) as raised:
        store.read("zz-directory")
    assert "did you mean" not in str(raised.value)
