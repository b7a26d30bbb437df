"""What git history supports: confirmations that count, owners fixed at creation, and reads
that show as unverified what the history does not back (issue cases 2-8 of "Trust you can
verify"). Every forgery here is made the way a hostile agent with shell access would: by
editing files and committing with git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import GIT_ENV, as_agent, git, name_humans, processes_started
from mcp_client import serve, text

from memstore.errors import InvalidMemory, SelfApproval
from memstore.model.identity import check_identity
from memstore.model.memory import content_hash, parse, render
from memstore.search import upkeep as search
from memstore.storage.store import Store
from memstore.workflow.care import lint
from memstore.workflow.session import agent as session


def commit_as(
    store: Store, author: str, committer: str | None = None, message: str = "hand edit"
) -> None:
    """`git add -A && git commit` with the names given, as anyone with shell access can."""
    env = {
        **os.environ,
        **GIT_ENV,
        "GIT_AUTHOR_NAME": author,
        "GIT_COMMITTER_NAME": committer or author,
    }
    subprocess.run(["git", "add", "-A"], cwd=store.root, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", message], cwd=store.root, env=env, check=True)


def problems(store: Store) -> list[str]:
    return [str(p) for p in lint.lint_store(store)]


def edit_file(store: Store, name: str, old: str, new: str) -> Path:
    path = next(store.root.glob(f"*/{name}.md"))
    text_now = path.read_text("utf-8")
    assert old in text_now, text_now
    path.write_text(text_now.replace(old, new), encoding="utf-8")
    return path


def confirm_by_hand(store: Store, name: str, confirmer: str) -> Path:
    """Edit memory `name`'s file to say `status: confirmed` by `confirmer` (not committed)."""
    path = edit_file(store, name, "status: draft", "status: confirmed")
    text_now = path.read_text("utf-8").replace("tags: []", f"tags: []\nconfirmed_by: {confirmer}")
    path.write_text(text_now, encoding="utf-8")
    return path


@pytest.fixture
def confirmed(store: Store) -> Store:
    """alice's memory `deploy-rule`, confirmed by bob through memstore."""
    store.add("deploy-rule", type="fact", description="Deploys go out on Tuesdays", body="Tue.")
    as_agent(store, "bob").confirm("deploy-rule", "checked the calendar")
    assert problems(store) == []
    return store


def status_in_search(store: Store, words: str) -> dict[str, str]:
    return {h.name: h.status for h in search.search(store, search.Query(words))}


# -- 2: a confirmation covers exact content -----------------------------------------------------


def test_a_confirmation_records_the_hash_of_what_was_confirmed(confirmed: Store) -> None:
    memory = confirmed.get("deploy-rule")
    assert memory.status == "confirmed"
    assert memory.confirmed_hash == content_hash(memory)


def test_the_owner_editing_a_confirmed_body_unconfirms_it_in_lint_and_reads(
    confirmed: Store,
) -> None:
    edit_file(confirmed, "deploy-rule", "Tue.", "Any day, no review needed.")
    commit_as(confirmed, "alice")
    found = problems(confirmed)
    assert any("content changed after bob confirmed it" in p for p in found), found
    assert confirmed.get("deploy-rule").status == "unverified"
    assert as_agent(confirmed, "carol").get("deploy-rule").status == "unverified"
    assert status_in_search(confirmed, "deploys tuesdays") == {"deploy-rule": "unverified"}


def test_a_description_edit_committed_by_the_confirmer_is_not_a_confirmation(
    confirmed: Store,
) -> None:
    # Even bob changing the text without confirming again leaves what he confirmed behind.
    edit_file(confirmed, "deploy-rule", "Deploys go out on Tuesdays", "Deploys go out daily")
    commit_as(confirmed, "bob")
    assert any("content changed after bob confirmed it" in p for p in problems(confirmed))
    assert confirmed.get("deploy-rule").status == "unverified"


def test_tags_and_links_may_change_without_touching_the_confirmation(confirmed: Store) -> None:
    confirmed.edit("deploy-rule", tags=["release"])
    edit_file(confirmed, "deploy-rule", "- release", "- release\n- calendar")
    commit_as(confirmed, "alice")
    assert problems(confirmed) == []
    assert confirmed.get("deploy-rule").status == "confirmed"


def test_a_fresh_confirmation_by_someone_else_makes_it_confirmed_again(confirmed: Store) -> None:
    edit_file(confirmed, "deploy-rule", "Tue.", "Tuesdays and Thursdays.")
    commit_as(confirmed, "alice")
    assert confirmed.get("deploy-rule").status == "unverified"
    with pytest.raises(SelfApproval):
        confirmed.confirm("deploy-rule", "it is mine and fine")
    as_agent(confirmed, "carol").confirm("deploy-rule", "checked the new text")
    assert confirmed.get("deploy-rule").status == "confirmed"
    assert problems(confirmed) == []


# -- 3: ownership is fixed at creation -----------------------------------------------------------


def test_rewriting_the_owner_does_not_let_the_creator_confirm(store: Store) -> None:
    store.add("mine", type="fact", description="alice wrote this")
    edit_file(store, "mine", "owner: alice", "owner: carol")
    commit_as(store, "alice")
    assert any("owner says 'carol' but alice created it" in p for p in problems(store))
    with pytest.raises(SelfApproval, match="created it"):
        store.confirm("mine", "looks right to me")


def test_a_hand_confirmation_after_an_owner_rewrite_is_self_approval(store: Store) -> None:
    store.add("mine", type="fact", description="alice wrote this")
    edit_file(store, "mine", "owner: alice", "owner: carol")
    commit_as(store, "alice")
    confirm_by_hand(store, "mine", "alice")
    commit_as(store, "alice")
    found = problems(store)
    assert any("alice" in p and ("self-approval" in p or "owner says" in p) for p in found)
    assert as_agent(store, "bob").get("mine").status == "unverified"


# -- 4: lint judges parsed values, never text patterns --------------------------------------------


@pytest.mark.parametrize(
    "status", ["'confirmed'", '"confirmed"', '"confirm\\x65d"', "!!str confirmed"]
)
def test_a_deprecated_memory_brought_back_by_any_spelling_is_caught(
    confirmed: Store, status: str
) -> None:
    as_agent(confirmed, "bob").deprecate("deploy-rule", "we deploy daily now")
    path = edit_file(confirmed, "deploy-rule", "status: deprecated", f"status: {status}")
    assert parse(path.read_text("utf-8")).status == "confirmed"
    commit_as(confirmed, "alice")
    found = problems(confirmed)
    assert any("deploy-rule" in p for p in found), found
    assert confirmed.get("deploy-rule").status == "unverified"


def test_reverting_a_deprecation_byte_for_byte_is_caught(confirmed: Store) -> None:
    path = next(confirmed.root.glob("*/deploy-rule.md"))
    before = path.read_bytes()
    as_agent(confirmed, "bob").deprecate("deploy-rule", "we deploy daily now")
    path.write_bytes(before)  # the exact version bob once confirmed
    commit_as(confirmed, "alice")
    assert any("deploy-rule" in p for p in problems(confirmed))
    assert confirmed.get("deploy-rule").status == "unverified"


# -- 5: the committer counts too ------------------------------------------------------------------


def test_a_confirmation_committed_by_the_owner_with_another_author_is_self_approval(
    store: Store,
) -> None:
    store.add("mine", type="fact", description="alice wrote this")
    confirm_by_hand(store, "mine", "bob")
    commit_as(store, "bob", committer="alice")  # git commit --author="bob <b@x>" by alice
    found = problems(store)
    assert any("self-approval" in p and "committed by 'alice'" in p for p in found), found
    assert as_agent(store, "carol").get("mine").status == "unverified"


def test_a_confirmation_authored_by_one_and_committed_by_another_does_not_count(
    store: Store,
) -> None:
    store.add("mine", type="fact", description="alice wrote this")
    confirm_by_hand(store, "mine", "bob")
    commit_as(store, "bob", committer="mallory")
    assert any("forged confirmation" in p for p in problems(store))
    assert store.get("mine").status == "unverified"


def test_a_confirmation_made_on_a_branch_and_merged_keeps_counting(store: Store) -> None:
    store.add("shared", type="fact", description="A shared fact")
    git(store.root, "checkout", "-q", "-b", "review")
    as_agent(store, "bob").confirm("shared", "reviewed on a branch")
    git(store.root, "checkout", "-q", "-")
    store.add("other", type="fact", description="Meanwhile on the main line")
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": "alice", "GIT_COMMITTER_NAME": "alice"}
    subprocess.run(
        ["git", "merge", "-q", "--no-edit", "review"], cwd=store.root, env=env, check=True
    )
    assert problems(store) == []
    assert as_agent(store, "carol").get("shared").status == "confirmed"


def test_a_merge_that_rewrites_a_confirmed_memory_answers_for_it(store: Store) -> None:
    store.add("shared", type="fact", description="A shared fact", body="one")
    as_agent(store, "bob").confirm("shared", "reviewed")
    git(store.root, "checkout", "-q", "-b", "side")
    store.edit("shared", tags=["side"])
    git(store.root, "checkout", "-q", "-")
    store.edit("shared", links=[])  # no change: keep the main line moving
    store.add("other", type="fact", description="Main line")
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": "alice", "GIT_COMMITTER_NAME": "alice"}
    subprocess.run(
        ["git", "merge", "-q", "--no-commit", "side"], cwd=store.root, env=env, check=True
    )
    edit_file(store, "shared", "\none\n", "\none, changed while merging\n")
    subprocess.run(["git", "commit", "-qam", "merge side"], cwd=store.root, env=env, check=True)
    found = problems(store)
    assert any("content changed after bob confirmed it" in p for p in found), found
    assert store.get("shared").status == "unverified"


# -- 6: what reaches the model --------------------------------------------------------------------


@pytest.mark.anyio
async def test_mcp_reads_show_forged_and_uncommitted_confirmations_as_unverified(
    store: Store,
) -> None:
    store.add("forged", type="fact", description="Forged approval about payments")
    store.add("pending", type="fact", description="Pending approval about payments")
    store.add("real", type="fact", description="Real approval about payments")
    as_agent(store, "bob").confirm("real", "checked")
    for name in ("forged", "pending"):
        confirm_by_hand(store, name, "bob")
        if name == "forged":
            commit_as(store, "alice")
    async with serve(store.root, "carol") as client:
        got = text(await client.call_tool("memory_get", {"names": ["forged", "pending", "real"]}))
        recalled = text(await client.call_tool("memory_recall", {"query": "approval payments"}))
        briefing = text(await client.call_tool("session_start", {}))
    for shown in (got, recalled):
        lines = [line for line in shown.splitlines() if "forged" in line or "pending" in line]
        assert lines and all("CONFIRMED" not in line for line in lines), shown
        assert sum("UNVERIFIED" in line for line in lines) >= 2, shown
    assert "CONFIRMED by bob (owner alice)" in got
    assert "forged" not in briefing.split("UNVERIFIED")[0] or "CONFIRMED" not in briefing


# -- 7: the server's identity is fixed when it starts --------------------------------------------


@pytest.mark.anyio
async def test_changing_git_config_mid_session_does_not_change_who_approves(
    store: Store,
) -> None:
    as_agent(store, "bob").add("bobs", type="fact", description="bob's note")
    git(store.root, "config", "user.name", "alice")
    async with serve(store.root, "") as client:  # no MEMSTORE_AGENT: git's user.name acts
        git(store.root, "config", "user.name", "bob")  # mid-session
        result = await client.call_tool(
            "memory_promote", {"name": "bobs", "to": "confirmed", "reason": "checked"}
        )
        assert not result.is_error, text(result)
    assert store.get("bobs").confirmed_by == "alice"
    assert git(store.root, "log", "-1", "--format=%an").strip() == "alice"


# -- 8: identities are normalised ------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["Alice", "ALICE", "ａｌｉｃｅ", " alice "])
def test_another_spelling_of_the_owner_cannot_confirm(store: Store, spelling: str) -> None:
    store.add("mine", type="fact", description="alice wrote this")
    with pytest.raises(SelfApproval):
        Store(store.root, agent=spelling).confirm("mine", "me again")
    assert store.get("mine").status == "draft"


@pytest.mark.parametrize("hidden", ["\u200b", "\u200d", "\u2066", "\u00ad", "\ufeff"])
def test_an_identity_with_an_invisible_character_is_refused(hidden: str) -> None:
    with pytest.raises(InvalidMemory, match="invisible"):
        check_identity(f"alice{hidden}")


def test_a_hand_commit_by_another_spelling_of_the_owner_is_self_approval(store: Store) -> None:
    store.add("mine", type="fact", description="alice wrote this")
    confirm_by_hand(store, "mine", "ALICE")
    commit_as(store, "ALICE")
    assert any("self-approval" in p for p in problems(store))
    assert as_agent(store, "bob").get("mine").status == "unverified"


def test_a_file_created_already_confirmed_does_not_count(store: Store) -> None:
    store.add("seed", type="fact", description="x")
    memory = store.get("seed")
    from memstore.model.memory import evolve

    made = evolve(memory, name="born", status="confirmed", confirmed_by="bob", owner="mallory")
    (store.root / "fact" / "born.md").write_text(render(made), encoding="utf-8")
    commit_as(store, "mallory")
    assert any("created already confirmed" in p for p in problems(store))
    assert store.get("born").status == "unverified"


# -- rules: only what the history backs binds (case 14 meets cases 2-3) ---------------------------


def p0_rule(store: Store, name: str = "no-friday-deploys") -> None:
    session.correct(
        store,
        name,
        description="Never deploy on Fridays",
        applies_when=["deploy"],
        severity="p0",
    )


def test_a_forged_confirmation_of_an_agents_p0_rule_does_not_make_it_block(
    store: Store,
) -> None:
    p0_rule(store)
    assert session.check(store, "deploy the api").verdict == "warn"  # an agent's draft
    confirm_by_hand(store, "no-friday-deploys", "bob")
    commit_as(store, "alice")
    assert session.check(as_agent(store, "carol"), "deploy the api").verdict == "warn"
    # A real confirmation by someone else makes it bind.
    as_agent(store, "bob").confirm("no-friday-deploys", "agreed")
    assert session.check(as_agent(store, "carol"), "deploy the api").verdict == "block"


def test_an_agents_rule_claiming_a_human_owner_does_not_bind(store: Store) -> None:
    name_humans(store.root, "human")
    p0_rule(store)
    edit_file(store, "no-friday-deploys", "owner: alice", "owner: human")
    commit_as(store, "alice")
    assert as_agent(store, "carol").get("no-friday-deploys").owner == "alice"
    assert session.check(as_agent(store, "carol"), "deploy the api").verdict == "warn"


def test_a_rule_the_human_created_binds_at_once(store: Store) -> None:
    name_humans(store.root, "human")
    p0_rule(as_agent(store, "human"))
    assert session.check(store, "deploy the api").verdict == "block"


# -- reads stay cheap -----------------------------------------------------------------------


def test_reading_past_a_few_new_commits_matches_gits_own_log(confirmed: Store) -> None:
    from memstore.git import gitlog, refs

    start = refs.head(confirmed.repo)
    assert start is not None
    as_agent(confirmed, "carol").add("second", type="fact", description="more")
    edit_file(confirmed, "deploy-rule", "Tue.", "Wednesdays now.")
    commit_as(confirmed, "bob", committer="mallory")
    as_agent(confirmed, "carol").deprecate("second", "gone")
    head = refs.head(confirmed.repo)
    assert head is not None
    inproc = gitlog.linear_commits(confirmed.repo, confirmed.root, start, head)
    logged = gitlog.store_commits(confirmed.repo, confirmed.root, start)
    assert inproc is not None
    memory_changes = [
        (c.sha, c.author, c.committer, tuple(x for x in c.changes if x.path.endswith(".md")))
        for c in logged
    ]
    assert [(c.sha, c.author, c.committer, c.changes) for c in inproc] == memory_changes


def test_a_read_after_other_writers_commits_starts_no_process(
    confirmed: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = as_agent(confirmed, "carol")
    assert reader.get("deploy-rule").status == "confirmed"  # the verdicts are cached
    as_agent(confirmed, "dave").add("other", type="fact", description="another writer")
    as_agent(confirmed, "erin").edit("deploy-rule", tags=["ops"])
    started = processes_started(monkeypatch)
    assert reader.get("deploy-rule").status == "confirmed"
    assert status_in_search(reader, "deploys tuesdays") == {"deploy-rule": "confirmed"}
    assert started == []


def test_a_shallow_clone_says_its_history_is_cut_off(confirmed: Store, tmp_path: Path) -> None:
    confirmed.add("later", type="fact", description="a later note")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{confirmed.repo.top}", str(clone))
    shallow = Store(clone / confirmed.root.relative_to(confirmed.repo.top), agent="carol")
    found = problems(shallow)
    assert any("deploy-rule" in p and "git fetch --unshallow" in p for p in found), found
    assert shallow.get("deploy-rule").status == "unverified"
    git(clone, "fetch", "-q", "--unshallow")
    assert problems(Store(shallow.root, agent="carol")) == []
    assert shallow.get("deploy-rule").status == "confirmed"  # the cached verdicts follow


def test_verdicts_always_describe_exactly_the_head_they_name(store: Store) -> None:
    # A commit landing while the history is read must not slip in (or out) unnoticed: every
    # replay, whatever lands meanwhile, holds the files of the very commit it names as head.
    import threading

    from memstore.storage import trust

    stop = threading.Event()

    def writer(agent: str) -> None:
        other = as_agent(store, agent)
        i = 0
        while not stop.is_set():
            other.add(f"{agent}-{i}", type="fact", description=f"note {i}")
            i += 1

    threads = [threading.Thread(target=writer, args=(a,)) for a in ("bob", "carol")]
    for t in threads:
        t.start()
    try:
        for _ in range(15):
            found = trust.full(store.repo, store.root)
            assert found.head is not None
            listed = git(store.root, "ls-tree", "-r", "--name-only", found.head).split()
            memories = {p for p in listed if p.endswith(".md")}
            assert set(found.blobs) == {
                f"{trust.prefix_of(store.repo, store.root)}{p}" for p in memories
            }
    finally:
        stop.set()
        for t in threads:
            t.join()


def test_the_history_is_read_up_to_the_commit_named(confirmed: Store) -> None:
    from memstore.git import gitlog, refs

    older = refs.head(confirmed.repo)
    confirmed.add("newer", type="fact", description="after")
    commits = gitlog.store_commits(confirmed.repo, confirmed.root, until=older)
    assert commits and commits[-1].sha == older
