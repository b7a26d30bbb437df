"""A rule that binds an agent stays in force on every face: a real `memstore serve` over stdio,
the same tools over HTTP with bearer tokens, and the review console's form."""

from __future__ import annotations

import httpx2
import pytest

from memstore.storage.store import Store
from memstore.workflow.session import agent as session
from tests.conftest import as_agent, git
from tests.http_server import add_token, http_server, mcp_client
from tests.mcp_client import data, serve, text
from tests.workflow.test_binding import RULE, agents_p0, person_rule

pytestmark = pytest.mark.anyio


async def test_over_mcp_an_agents_deprecation_is_a_proposal_and_check_still_blocks(
    store: Store,
) -> None:
    person_rule(store)
    async with serve(store.root, "coder") as coder:
        before = data(await coder.call_tool("check", {"description": "deploy prod"}))
        assert before["check"]["verdict"] == "block"
        moved = await coder.call_tool(
            "memory_promote", {"name": RULE, "to": "deprecated", "reason": "not relevant"}
        )
        assert "proposed deprecating" in text(moved)
        assert "awaiting a person or another identity" in text(moved)
        assert data(moved)["memory"]["status"] == "draft"
        after = data(await coder.call_tool("check", {"description": "deploy prod"}))
        assert after["check"]["verdict"] == "block"
        again = await coder.call_tool(
            "memory_promote", {"name": RULE, "to": "deprecated", "reason": "still not"}
        )
        assert again.is_error and "already" in text(again)
        got = await coder.call_tool("memory_get", {"names": [RULE]})
        assert "deprecation proposed by coder" in text(got)
        version = data(got)["memories"][0]["version"]
        rewrite = await coder.call_tool(
            "memory_update", {"name": RULE, "version": version, "body": "Ignore this rule."}
        )
        assert rewrite.is_error and "binds you" in text(rewrite)
        brief = await coder.call_tool("session_start", {"task": "deploy prod"})
        assert "deprecation proposed by coder" in text(brief)
    assert session.check(as_agent(store, "coder"), "deploy prod").verdict.value == "block"


async def test_over_http_another_identity_completes_the_proposal(store: Store) -> None:
    agents_p0(store)
    tokens = {name: add_token(store.root, name) for name in ("coder", "bob")}
    with http_server(store.root) as server:
        async with mcp_client(server, tokens["coder"]) as coder:
            moved = await coder.call_tool(
                "memory_promote", {"name": RULE, "to": "deprecated", "reason": "not relevant"}
            )
            assert "proposed deprecating" in text(moved), text(moved)
            check = data(await coder.call_tool("check", {"description": "deploy prod"}))
            assert check["check"]["verdict"] == "block"
            own = await coder.call_tool(
                "memory_promote", {"name": RULE, "to": "deprecated", "reason": "I agree"}
            )
            assert own.is_error
        async with mcp_client(server, tokens["bob"]) as bob:
            agreed = await bob.call_tool(
                "memory_promote", {"name": RULE, "to": "deprecated", "reason": "agreed"}
            )
            assert data(agreed)["memory"]["status"] == "deprecated"
            check = data(await bob.call_tool("check", {"description": "deploy prod"}))
            assert check["check"]["verdict"] == "allow"


def test_in_the_console_a_bound_reviewers_deprecation_is_a_proposal(store: Store) -> None:
    person_rule(store)
    # carol signs in to the console, but `humans:` does not name her: the rule binds her.
    secret = add_token(store.root, "carol", human=True)
    with http_server(store.root) as server, httpx2.Client() as http:
        signed_in = http.post(f"{server.url}/console/login", data={"token": secret})
        assert signed_in.status_code == 303
        page = http.get(f"{server.url}/console/memory/{RULE}")
        csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        moved = http.post(
            f"{server.url}/console/memory/{RULE}/move",
            data={"action": "deprecate", "reason": "not relevant", "csrf": csrf},
            follow_redirects=True,
        )
        assert moved.status_code == 200
        assert "You proposed its deprecation" in moved.text
        assert "deprecation proposed" in moved.text
    assert store.get(RULE).status == "draft"
    assert "propose deprecating" in git(store.root, "log", "-1", "--format=%s")
    assert session.check(as_agent(store, "carol"), "deploy prod").verdict.value == "block"
