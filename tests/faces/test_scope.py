"""Scopes: an agent served with `--scope` recalls, is briefed on and is checked against only
the memories for its scopes and those for no scope in particular, filtered in the index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.faces.cli.main import main
from memstore.model.status import Status
from memstore.search import manifest
from memstore.search.upkeep import Query, close, search
from memstore.storage.store import Store
from memstore.workflow.session import agent as session
from memstore.workflow.session import briefing
from tests.conftest import as_agent
from tests.mcp_client import call, data, serve, text

pytestmark = pytest.mark.anyio

CROWD = 25
"""Memories of another scope that outrank the wanted ones: a capped list post-filtered would
lose the wanted ones."""


def scoped_store(root: Path) -> Store:
    store = Store.init(root, agent="alice")
    for n in range(CROWD):
        session.save(
            store,
            f"web-deploy-{n}",
            type="runbook",
            description=f"Deploy rollback: deploy the web deploy preview {n}",
            tags=["deploy"],
            scope=["web"],
        )
    session.save(
        store, "deploy-window", type="decision", description="Deploy only in the morning window"
    )
    session.save(
        store,
        "deploy-rollback",
        type="runbook",
        description="Deploy rollback: run the deploy script with --rollback",
        scope=["deploy"],
    )
    session.correct(
        store,
        "web-no-friday-deploy",
        description="Never deploy the web app on Fridays",
        applies_when=["deploy"],
        extra={"scope": ["web"]},
    )
    session.correct(
        store,
        "deploy-ask-first",
        description="Always ask before a deploy to production",
        applies_when=["deploy"],
        extra={"scope": "Deploy"},  # one word, any case: as a person may write it
    )
    bob = as_agent(store, "bob")
    for name in ["deploy-rollback", "deploy-window", *(f"web-deploy-{n}" for n in range(CROWD))]:
        bob.move(name, Status.CONFIRMED, "checked")
    return store


def names(hits: list[dict[str, object]]) -> list[object]:
    return [h["name"] for h in hits]


async def test_served_scope_filters_recall_session_start_and_check(tmp_path: Path) -> None:
    store = scoped_store(tmp_path / "memory")
    async with serve(store.root, "deploy-bot", args=("--scope", "deploy,infra")) as client:
        recalled = await client.call_tool("memory_recall", {"query": "deploy", "budget": "tiny"})
        found = names(data(recalled)["results"])
        assert len(found) == 3
        assert not any(str(n).startswith("web-") for n in found), found
        assert {"deploy-window", "deploy-rollback", "deploy-ask-first"} == set(found)
        brief = text(await client.call_tool("session_start", {"task": "deploy the service"}))
        assert "deploy-ask-first" in brief and "web-no-friday-deploy" not in brief
        assert "web-deploy-" not in brief
        check = data(await client.call_tool("check", {"description": "deploy to production"}))
        reasons = [r["name"] for r in check["check"]["reasons"]]
        assert "deploy-ask-first" in reasons and "web-no-friday-deploy" not in reasons
        prompt = await client.get_prompt("session_start", {"task": "deploy"})
        said = str(prompt.messages[0].content.text)  # type: ignore[union-attr]
        assert "deploy-ask-first" in said and "web-no-friday-deploy" not in said
        saved = await client.call_tool(
            "memory_store",
            {"name": "infra-note", "type": "fact", "description": "d", "scope": ["Infra"]},
        )
        assert data(saved)["memory"]["extra"]["scope"] == ["infra"]
    # Unscoped, the same server sees everything.
    async with serve(store.root, "all-bot") as client:
        recalled = await client.call_tool("memory_recall", {"query": "deploy", "budget": "tiny"})
        assert all(str(n).startswith("web-deploy-") for n in names(data(recalled)["results"]))
        check = data(await client.call_tool("check", {"description": "deploy to production"}))
        reasons = [r["name"] for r in check["check"]["reasons"]]
        assert {"deploy-ask-first", "web-no-friday-deploy"} <= set(reasons)


def test_scope_filter_is_in_the_index_and_an_old_index_is_rebuilt(tmp_path: Path) -> None:
    store = scoped_store(tmp_path / "memory")
    wanted = Query("deploy", limit=2, scopes=("deploy",))
    assert {h.name for h in search(store, wanted)} <= {
        "deploy-window",
        "deploy-rollback",
        "deploy-ask-first",
    }
    assert len(search(store, wanted)) == 2
    # An index written before scopes were indexed: its manifest names another schema.
    close(store)
    path = store.cache / "index" / manifest.FILE
    old = json.loads(path.read_text("utf-8"))
    path.write_text(json.dumps({**old, "schema": manifest.SCHEMA_VERSION - 1}), "utf-8")
    again = Store(store.root, agent="alice")
    assert len(search(again, wanted)) == 2
    unseen = briefing.search.outside(again, ("deploy",))
    assert "correction/web-no-friday-deploy.md" in unseen
    assert "correction/deploy-ask-first.md" not in unseen
    assert "decision/deploy-window.md" not in unseen


def test_cli_scope_options(tmp_path: Path) -> None:
    store = scoped_store(tmp_path / "memory")
    runner = CliRunner()
    base = ["--store", str(store.root), "--agent", "alice"]
    found = runner.invoke(main, [*base, "search", "deploy", "--limit", "3", "--scope", "deploy"])
    assert found.exit_code == 0, found.output
    assert "web-deploy" not in found.output and "deploy-rollback" in found.output
    brief = runner.invoke(main, [*base, "brief", "--no-mark", "--scope", "deploy"])
    assert "deploy-ask-first" in brief.output and "web-no-friday-deploy" not in brief.output
    check = runner.invoke(main, [*base, "check", "deploy now", "--scope", "web"])
    assert "web-no-friday-deploy" in check.output and "deploy-ask-first" not in check.output
    bad = runner.invoke(main, [*base, "search", "deploy", "--scope", "two words"])
    assert bad.exit_code == 2 and "invalid scope" in bad.output
    config = runner.invoke(main, [*base, "config", "cursor", "--scope", "deploy", "--scope", "Web"])
    assert config.exit_code == 0, config.output
    args = json.loads(config.stdout)["mcpServers"]["memstore"]["args"]
    assert args[-3:] == ["serve", "--scope", "deploy,web"]
    http = runner.invoke(main, [*base, "serve", "--http", "--scope", "deploy"])
    assert http.exit_code == 2 and "--scope is one agent's" in http.output


async def test_memory_store_refuses_a_bad_scope(store: Store) -> None:
    bad = await call(store, "memory_store", name="x", type="fact", description="d", scope=["a b"])
    assert bad.is_error and "invalid scope" in text(bad)


def test_an_agent_cannot_scope_a_binding_rule_away(store: Store) -> None:
    from tests.workflow.test_binding import PATH, RULE, commit_as, person_rule

    person_rule(store)  # a person's p0, unscoped: it binds every agent
    rule = store.root / PATH
    text = rule.read_text(encoding="utf-8")
    assert "tags: []" in text
    rule.write_text(text.replace("tags: []", "tags: []\nscope: [nowhere]"), encoding="utf-8")
    commit_as(store.root, "coder", "hand edit: scope the rule away")
    coder = as_agent(store, "coder")
    checked = session.check(coder, "deploy prod", scopes=("deploy",))
    assert checked.verdict.value == "block" and checked.reasons[0].name == RULE
    brief = briefing.brief(coder, for_text="deploy prod", scopes=("deploy",), mark=False).text
    assert f"`{RULE}`" in brief
