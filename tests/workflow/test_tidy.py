"""Tidying up through the real CLI: rename, retype, forget, bulk deprecate, review."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.faces.cli.main import main
from tests.conftest import git


def run(*args: str, agent: str = "alice", input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--agent", agent, *args], input=input)
    return result.exit_code, result.output


def ok(*args: str, agent: str = "alice") -> str:
    code, out = run(*args, agent=agent)
    assert code == 0, out
    return out


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    ok("init")
    return tmp_path / "memory"


def shown(name: str) -> dict[str, object]:
    return json.loads(ok("show", name, "--json"))


def test_mv_keeps_owner_and_confirmation_and_rewrites_links_in_one_commit(store_dir: Path) -> None:
    ok("add", "hpa-notes", "--type", "decision", "-d", "HPA is off on api", "--body", "Flapping.")
    ok(
        "add",
        "why-hpa",
        "--type",
        "fact",
        "-d",
        "Why",
        "--links",
        "hpa-notes",
        "--body",
        "[[hpa-notes]]",
    )
    ok("confirm", "hpa-notes", "-r", "checked the chart", agent="bob")
    ok("confirm", "why-hpa", "-r", "read it", agent="carol")
    before = git(store_dir, "rev-list", "--count", "HEAD")

    out = ok("mv", "hpa-notes", "hpa-off-on-api", "--json", agent="dave")

    assert json.loads(out)["rewritten"] == ["why-hpa"]
    assert int(git(store_dir, "rev-list", "--count", "HEAD")) == int(before) + 1
    moved = shown("hpa-off-on-api")
    assert (moved["status"], moved["owner"], moved["confirmed_by"]) == ("confirmed", "alice", "bob")
    other = shown("why-hpa")
    assert other["status"] == "confirmed"  # a rewritten reference is not new content
    assert other["links"] == ["hpa-off-on-api"] and "[[hpa-off-on-api]]" in str(other["body"])
    assert not (store_dir / "decision" / "hpa-notes.md").exists()
    follow = git(store_dir, "log", "--follow", "--format=%s", "--", "decision/hpa-off-on-api.md")
    assert "memory: add decision/hpa-notes" in follow
    assert run("lint")[0] == 0
    code, out = run("show", "hpa-notes")
    assert code == 1 and "no memory named 'hpa-notes'" in out


def test_a_draft_moved_is_confirmed_by_another_but_never_by_its_owner(store_dir: Path) -> None:
    ok("add", "draft-one", "--type", "fact", "-d", "A draft")
    ok("mv", "draft-one", "draft-two", agent="bob")  # the mover does not become the owner
    code, out = run("confirm", "draft-two", "-r", "mine?", agent="alice")
    assert code == 1 and "nobody confirms their own memory" in out
    code, out = run("confirm", "draft-two", "-r", "checked", agent="bob")
    assert code == 0, out
    assert shown("draft-two")["status"] == "confirmed"
    assert run("lint")[0] == 0


def test_a_fresh_clone_sees_the_moved_memory_confirmed(store_dir: Path, tmp_path: Path) -> None:
    ok("add", "a-fact", "--type", "fact", "-d", "A fact")
    ok("confirm", "a-fact", "-r", "checked", agent="bob")
    ok("mv", "a-fact", "b-fact", agent="carol")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(store_dir), str(clone)], check=True)
    code, out = run("--store", str(clone), "show", "b-fact", "--json")
    assert code == 0, out
    assert (json.loads(out)["status"], json.loads(out)["owner"]) == ("confirmed", "alice")
    assert run("--store", str(clone), "lint")[0] == 0


def test_mv_onto_an_existing_name_or_over_a_hand_edit_changes_nothing(store_dir: Path) -> None:
    ok("add", "one", "--type", "fact", "-d", "One")
    ok("add", "two", "--type", "fact", "-d", "Two", "--links", "one")
    head = git(store_dir, "rev-parse", "HEAD")
    code, out = run("mv", "one", "two")
    assert code == 1 and "already exists" in out
    path = store_dir / "fact" / "two.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nhand edit\n", encoding="utf-8")
    code, out = run("mv", "one", "three")
    assert code == 1 and "not committed" in out
    assert git(store_dir, "rev-parse", "HEAD") == head
    assert (store_dir / "fact" / "one.md").exists() and not (
        store_dir / "fact" / "three.md"
    ).exists()
    assert "hand edit" in path.read_text(encoding="utf-8")


def test_retype_moves_the_folder_keeps_the_owner_and_needs_a_new_confirmation(
    store_dir: Path,
) -> None:
    ok("add", "no-friday", "--type", "fact", "-d", "No deploys on Friday")
    ok("confirm", "no-friday", "-r", "team rule", agent="bob")
    out = ok("retype", "no-friday", "warning", "--json", agent="bob")
    assert json.loads(out)["status"] == "draft"
    assert (store_dir / "warning" / "no-friday.md").exists()
    assert not (store_dir / "fact" / "no-friday.md").exists()
    assert shown("no-friday")["owner"] == "alice"
    code, out = run("retype", "no-friday", "nonsense")
    assert code == 1 and "unknown type" in out
    ok("confirm", "no-friday", "-r", "still a rule", agent="bob")
    assert run("lint")[0] == 0


def test_forget_removes_the_file_in_one_commit_and_the_history_keeps_it(store_dir: Path) -> None:
    ok("add", "scratch", "--type", "working", "-d", "Scratch note")
    code, out = run("forget", "scratch")
    assert code == 2 and "--reason" in out
    out = ok("forget", "scratch", "--reason", "test note, never knowledge", agent="bob")
    assert "its history stays" in out
    assert not (store_dir / "working" / "scratch.md").exists()
    log = git(store_dir, "log", "-1", "--format=%an %s")
    assert log.startswith("bob memory: forget working/scratch")
    old = git(store_dir, "show", "HEAD~1:working/scratch.md")
    assert "Scratch note" in old
    code, out = run("search", "scratch", "--json")
    assert code == 0 and json.loads(out) == []


def test_a_removal_a_killed_writer_left_uncommitted_is_put_back(store_dir: Path) -> None:
    ok("add", "kept", "--type", "fact", "-d", "Kept")
    path = store_dir / "fact" / "kept.md"
    text = path.read_text(encoding="utf-8")
    journal = {
        "message": "memory: forget fact/kept",
        "actor": "alice",
        "files": [{"path": "fact/kept.md", "old": text, "new": None}],
    }
    (store_dir / ".memstore" / "pending.json").write_text(json.dumps(journal), encoding="utf-8")
    path.unlink()  # the writer died after removing the file, before its commit
    ok("recover")
    assert path.read_text(encoding="utf-8") == text
    assert git(store_dir, "status", "--porcelain") == ""


def timeline(*args: str) -> list[dict[str, object]]:
    return json.loads(ok("timeline", *args, "--json"))


def test_timeline_tells_each_memory_s_story_oldest_first_with_who_and_why(
    store_dir: Path,
) -> None:
    ok("add", "hpa-notes", "--type", "decision", "-d", "HPA is off", "--tags", "k8s")
    ok("add", "old-way", "--type", "runbook", "-d", "Scale by hand", "--tags", "k8s")
    ok("confirm", "hpa-notes", "-r", "checked the chart", agent="bob")
    ok("edit", "hpa-notes", "--body", "Since the flapping incident.", agent="carol")
    ok("mv", "hpa-notes", "hpa-off", agent="dave")
    ok("deprecate", "old-way", "-r", "HPA is off", "--superseded-by", "hpa-off", agent="bob")
    ok("add", "scratch", "--type", "working", "-d", "Scratch")
    ok("forget", "scratch", "--reason", "never knowledge")
    story = [(e["kind"], e["who"], e["name"], e["why"]) for e in timeline("hpa-off")]
    assert story == [
        ("created", "alice", "hpa-notes", "HPA is off"),
        ("confirmed", "bob", "hpa-notes", "checked the chart"),
        ("edited", "carol", "hpa-notes", "edit decision/hpa-notes — body (back to draft)"),
        ("renamed", "dave", "hpa-off", "rename — decision/hpa-notes → decision/hpa-off"),
    ]
    kinds = [(e["kind"], e["name"]) for e in timeline("--tag", "k8s")]
    assert ("superseded", "old-way") in kinds and ("created", "old-way") in kinds
    assert [e["kind"] for e in timeline("--type", "working")] == ["created", "removed"]
    assert len(timeline("--since", "1h")) == len(timeline())  # all of it happened just now
    assert timeline("--since", "2099-01-01") == []
    removed = timeline("--type", "working")[-1]
    assert removed["why"] == "forget working/scratch — never knowledge"
    text = ok("timeline", "old-way")
    assert "superseded" in text and "(by hpa-off)" in text and "HPA is off" in text


def test_timeline_sees_hand_commits_and_says_when_a_confirmation_is_not_backed(
    store_dir: Path,
) -> None:
    ok("add", "claim", "--type", "fact", "-d", "A claim")
    path = store_dir / "fact" / "claim.md"
    text = path.read_text(encoding="utf-8").replace("status: draft", "status: confirmed")
    text = text.replace(
        "tags: []\n", "tags: []\nconfirmed_by: bob\nconfirmed_at: 2026-12-01T00:00:00Z\n"
    )
    path.write_text(text, encoding="utf-8")
    git(store_dir, "commit", "-q", "-am", "looks right to me")  # by "human", naming bob
    events = timeline("claim")
    assert [(e["kind"], e["who"]) for e in events] == [("created", "alice"), ("confirmed", "human")]
    assert "the history does not back it: forged confirmation" in str(events[1]["detail"])


def test_bulk_deprecate_by_tag_is_one_commit_and_reports_each_refusal(store_dir: Path) -> None:
    for name in ("k1", "k2", "k3"):
        ok("add", name, "--type", "fact", "-d", f"Note {name}", "--tags", "k8s")
    ok("add", "other", "--type", "fact", "-d", "Other")
    ok("deprecate", "k3", "-r", "wrong")
    path = store_dir / "fact" / "k2.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nhand edit\n", encoding="utf-8")
    head = git(store_dir, "rev-parse", "HEAD")

    out = ok("deprecate", "--tag", "k8s", "-r", "cluster gone", "--dry-run", "--json", agent="bob")
    planned = json.loads(out)
    assert planned["deprecated"] == ["k1"]
    refused = {r["name"]: r["why"] for r in planned["refused"]}
    assert "not committed" in refused["k2"] and "cannot move 'k3'" in refused["k3"]
    assert git(store_dir, "rev-parse", "HEAD") == head  # a dry run writes nothing

    code, out = run("deprecate", "--tag", "k8s", "-r", "cluster gone", agent="bob")
    assert code == 0 and "deprecated fact/k1" in out and "refused k2" in out
    assert int(git(store_dir, "rev-list", "--count", f"{head.strip()}..HEAD")) == 1
    assert shown("k1")["status"] == "deprecated" and shown("other")["status"] == "draft"


def test_bulk_deprecate_of_old_drafts_and_of_several_names(store_dir: Path) -> None:
    ok("add", "a", "--type", "fact", "-d", "A")
    ok("add", "b", "--type", "fact", "-d", "B")
    ok("confirm", "b", "-r", "fine", agent="bob")
    out = ok(
        "deprecate", "--older-than", "2099-01-01", "--status", "draft", "-r", "stale", "--json"
    )
    assert json.loads(out)["deprecated"] == ["a"]  # b is confirmed, not a draft
    out = json.loads(ok("deprecate", "--older-than", "30d", "-r", "stale", "--json"))
    assert out["deprecated"] == []  # nothing is 30 days old
    ok("add", "c", "--type", "fact", "-d", "C")
    out = json.loads(ok("deprecate", "b", "c", "-r", "both wrong", "--json"))
    assert out["deprecated"] == ["b", "c"]
    code, out = run("deprecate", "-r", "what?")
    assert code == 1 and "choose the memories" in out
    code, out = run("deprecate", "b", "-r", "again")
    assert code == 1 and "cannot move 'b' from deprecated" in out


def test_a_selection_that_matches_nothing_deprecates_nothing_and_says_so(store_dir: Path) -> None:
    ok("add", "a", "--type", "fact", "-d", "A", "--tags", "api")
    head = git(store_dir, "rev-parse", "HEAD")
    code, out = run("deprecate", "--tag", "k8s", "-r", "cluster gone")
    assert (code, out.strip()) == (0, "no memory matches")
    assert git(store_dir, "rev-parse", "HEAD") == head


def test_bulk_deprecation_takes_the_names_given_else_those_the_filters_choose(
    store_dir: Path,
) -> None:
    from memstore.storage.store import Store
    from memstore.workflow.care import tidy

    ok("add", "a", "--type", "fact", "-d", "A", "--tags", "api")
    ok("add", "b", "--type", "fact", "-d", "B")
    store = Store(store_dir, "bob")
    batch = tidy.deprecate(store, [], "gone", tag="api", dry_run=True)
    assert [m.name for m in batch.deprecated] == ["a"] and batch.refused == ()
    batch = tidy.deprecate(store, ["b"], "gone", tag="api", dry_run=True)
    assert [m.name for m in batch.deprecated] == ["b"]


def test_review_lists_others_drafts_rules_and_most_linked_first(store_dir: Path) -> None:
    ok("add", "plain", "--type", "fact", "-d", "Plain draft")
    ok("add", "linked", "--type", "fact", "-d", "Linked to")
    ok("add", "pointer", "--type", "fact", "-d", "Points", "--links", "linked")
    ok("add", "mine", "--type", "fact", "-d", "Bob's own", agent="bob")
    ok("correct", "no-force-push", "-d", "Never force-push main", "--severity", "p1")
    queue = [m["name"] for m in json.loads(ok("review", "--json", agent="bob"))]
    assert queue[:2] == ["no-force-push", "linked"] and "mine" not in queue
    assert set(queue) == {"no-force-push", "linked", "plain", "pointer"}
    listed = ok("review", agent="bob")  # not a terminal: a plain list
    assert "fact/linked [draft] by alice" in listed


def test_review_at_a_terminal_confirms_deprecates_and_skips(store_dir: Path) -> None:
    ok("add", "second", "--type", "fact", "-d", "Second")
    ok("add", "first", "--type", "fact", "-d", "First", "--links", "second")
    ok("add", "third", "--type", "fact", "-d", "Third")
    answers = "c\nchecked it\nd\nwrong\ns\n"  # second (most linked), then first, then third
    code, out = run("review", "--interactive", agent="bob", input=answers)
    assert code == 0, out
    assert "confirmed fact/second [confirmed]" in out and "deprecated fact/first" in out
    statuses = {n: shown(n)["status"] for n in ("first", "second", "third")}
    assert statuses == {"first": "deprecated", "second": "confirmed", "third": "draft"}
    code, out = run("review", "--interactive", agent="alice", input="q\n")
    assert "nothing awaits your review" in out  # alice owns what is left


@pytest.mark.anyio
async def test_an_agent_sees_a_moved_memory_and_confirms_it_under_its_new_name(
    store_dir: Path,
) -> None:
    from tests.mcp_client import data, serve, text

    ok("add", "cache-notes", "--type", "fact", "-d", "The CDN caches api responses for 60 s")
    ok("add", "see-cache", "--type", "fact", "-d", "Pointer", "--body", "See [[cache-notes]].")
    ok("mv", "cache-notes", "cdn-cache-ttl", agent="dave")
    async with serve(store_dir, "bob") as client:
        found = data(await client.call_tool("memory_recall", {"query": "cdn caches"}))
        assert found["results"][0]["name"] == "cdn-cache-ttl"
        assert "cache-notes" not in [h["name"] for h in found["results"]]
        assert found["results"][0]["owner"] == "alice"  # the owner moved with it
        promoted = await client.call_tool(
            "memory_promote", {"name": "cdn-cache-ttl", "to": "confirmed", "reason": "checked"}
        )
        assert not promoted.is_error, text(promoted)
        got = await client.call_tool("memory_get", {"names": ["see-cache"]})
        assert "[[cdn-cache-ttl]]" in text(got)
    assert shown("cdn-cache-ttl")["status"] == "confirmed"
    code, out = run("confirm", "see-cache", "-r", "self", agent="alice")
    assert code == 1 and "nobody confirms their own memory" in out
    assert run("lint")[0] == 0


def test_a_rename_that_also_changes_content_or_a_reference_without_a_rename_is_no_free_pass(
    store_dir: Path,
) -> None:
    ok("add", "fact-a", "--type", "fact", "-d", "A", "--body", "About [[fact-b]].")
    ok("add", "fact-b", "--type", "fact", "-d", "B")
    ok("confirm", "fact-a", "-r", "checked", agent="bob")
    # By hand: rename fact-a and change its description in the same commit.
    old = store_dir / "fact" / "fact-a.md"
    text = old.read_text(encoding="utf-8")
    new = store_dir / "fact" / "fact-c.md"
    new.write_text(
        text.replace("name: fact-a", "name: fact-c").replace("description: A", "description: C"),
        encoding="utf-8",
    )
    old.unlink()
    git(store_dir, "add", "-A", ".")
    git(store_dir, "commit", "-q", "-m", "rename and reword")
    assert shown("fact-c")["status"] == "unverified"
    ok("add", "fact-d", "--type", "fact", "-d", "D", "--body", "About [[fact-b]].")
    ok("confirm", "fact-d", "-r", "checked", agent="bob")
    # By hand: point a confirmed body at another memory, with no rename in that commit.
    path = store_dir / "fact" / "fact-d.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("[[fact-b]]", "[[fact-c]]"), encoding="utf-8"
    )
    git(store_dir, "commit", "-q", "-am", "repoint")
    assert shown("fact-d")["status"] == "unverified"
