"""The review console in a real browser (headless Chromium driven by Playwright) against a real
`memstore serve --http` process, plus the requests a hostile page could make."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from memstore.storage.store import Store
from tests.conftest import git
from tests.http_server import Server, add_token, http_server

CHROMIUM = os.environ.get("MEMSTORE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = os.environ.get("MEMSTORE_SCREENSHOTS")
"""A folder to save the README's screenshots into (`make screenshots`); unset in tests."""

SCRIPT_BODY = (
    "Never run the migration twice.\n\n<script>document.title = 'pwned'; window.pwned = 1</script>"
    '\n\n<img src=x onerror="window.pwned = 2">'
)


def _need_chromium() -> None:
    if Path(CHROMIUM).exists():
        return
    message = (
        f"no Chromium at {CHROMIUM}: `make test` installs it (apt-get install chromium); "
        "browser tests skipped"
    )
    if os.environ.get("CI"):  # CI must run them: a missing browser is a failure there
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def reviewed(tmp_path: Path) -> Iterator[tuple[Store, Server, dict[str, str]]]:
    """A store with bob's drafts and alice's, tokens for both, and the server running."""
    store = Store.init(tmp_path / "memory", agent="bob")
    store.add(
        "use-zod",
        type="decision",
        description="Validate request bodies with zod",
        body="We use **zod** for validation.\n\n- schemas live in `src/schemas`\n",
        tags=["api"],
    )
    store.add(
        "migration-once",
        type="correction",
        description="Run the billing migration once only",
        body=SCRIPT_BODY,
        extra={"severity": "p1", "applies_when": ["migrate billing"], "evidence": "ops said"},
    )
    Store(store.root, agent="alice").add(
        "alice-idea", type="decision", description="Alice's own idea, awaiting review"
    )
    secrets = {
        "alice": add_token(store.root, "alice", human=True),
        "bob": add_token(store.root, "bob"),
    }
    with http_server(store.root) as server:
        yield store, server, secrets


@pytest.fixture
def browser() -> Iterator[object]:
    _need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


def _sign_in(browser: object, server: Server, token: str) -> object:
    from playwright.sync_api import Browser

    assert isinstance(browser, Browser)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server.url}/console/")
    assert "/console/login" in page.url
    page.fill("#token", token)
    page.click("#sign-in")
    page.wait_for_url(f"{server.url}/console/")
    return page


def _shot(page: object, name: str) -> None:
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    if SCREENSHOTS:
        page.screenshot(path=str(Path(SCREENSHOTS) / name), full_page=True)


def test_a_human_signs_in_sees_drafts_and_confirms_one(
    reviewed: tuple[Store, Server, dict[str, str]], browser: object
) -> None:
    from playwright.sync_api import Page

    store, server, secrets = reviewed
    page = _sign_in(browser, server, secrets["alice"])
    assert isinstance(page, Page)
    drafts = page.inner_text("#drafts")
    assert "use-zod" in drafts and "migration-once" in drafts and "alice-idea" in drafts
    assert page.inner_text("#count-draft") == "3"
    _shot(page, "console-inbox.png")

    page.click("text=use-zod")
    assert page.inner_text("h1").startswith("use-zod")
    assert page.inner_text("#body strong") == "zod"  # the Markdown is rendered
    page.fill("#reason-confirm", "checked src/schemas uses zod")
    page.click("#confirm")
    page.wait_for_url("**/console/memory/use-zod?done=confirmed")
    assert "confirmed" in page.inner_text("h1")
    history = page.inner_text(".change")  # newest commit first
    assert "alice" in history and "memory: confirm decision/use-zod" in history
    assert "+status: confirmed" in history
    _shot(page, "console-memory.png")

    assert store.get("use-zod").confirmed_by == "alice"
    assert git(store.root, "log", "-1", "--format=%an|%s") == (
        "alice|memory: confirm decision/use-zod — checked src/schemas uses zod\n"
    )


def test_confirming_ones_own_draft_is_refused_with_the_cli_message(
    reviewed: tuple[Store, Server, dict[str, str]], browser: object
) -> None:
    from playwright.sync_api import Page

    store, server, secrets = reviewed
    before = git(store.root, "rev-parse", "HEAD")
    page = _sign_in(browser, server, secrets["alice"])
    assert isinstance(page, Page)
    page.goto(f"{server.url}/console/memory/alice-idea")
    page.fill("#reason-confirm", "looks right to me")
    page.click("#confirm")
    refused = page.inner_text("#refused")
    assert "you (alice) created it, and nobody confirms their own memory" in refused
    assert git(store.root, "rev-parse", "HEAD") == before
    assert store.get("alice-idea").status == "draft"


def test_a_script_in_a_memory_body_shows_as_text_and_never_runs(
    reviewed: tuple[Store, Server, dict[str, str]], browser: object
) -> None:
    from playwright.sync_api import Page

    _, server, secrets = reviewed
    page = _sign_in(browser, server, secrets["alice"])
    assert isinstance(page, Page)
    page.goto(f"{server.url}/console/memory/migration-once")
    body = page.inner_text("#body")
    assert "<script>document.title = 'pwned'" in body
    assert page.evaluate("window.pwned") is None
    assert page.title() != "pwned"
    assert page.locator("#body script").count() == 0
    assert page.locator("#body img").count() == 0
    rule = page.inner_text("table")  # the correction's rule fields
    assert "severity" in rule and "p1" in rule and "migrate billing" in rule


def test_an_agents_token_cannot_sign_in(
    reviewed: tuple[Store, Server, dict[str, str]], browser: object
) -> None:
    from playwright.sync_api import Browser

    _, server, secrets = reviewed
    assert isinstance(browser, Browser)
    page = browser.new_page()
    page.goto(f"{server.url}/console/login")
    page.fill("#token", secrets["bob"])
    page.click("#sign-in")
    assert "sign in with a person's token" in page.inner_text("main")
    assert page.context.cookies() == []


def test_a_move_without_the_cookie_or_the_csrf_token_changes_nothing(
    reviewed: tuple[Store, Server, dict[str, str]],
) -> None:
    store, server, secrets = reviewed
    before = git(store.root, "rev-parse", "HEAD")
    move = f"{server.url}/console/memory/use-zod/move"
    fields = {"action": "confirm", "reason": "forged"}
    with httpx2.Client() as http:
        signed_in = http.post(
            f"{server.url}/console/login", data={"token": secrets["alice"], "next": "/console/"}
        )
        assert signed_in.status_code == 303
        page = http.get(f"{server.url}/console/memory/use-zod")
        csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        # the cookie but no CSRF token, or a wrong one
        no_csrf = http.post(move, data=fields)
        bad_csrf = http.post(move, data={**fields, "csrf": "0" * 64})
    with httpx2.Client() as stranger:
        # no cookie (a cross-site form: SameSite=Strict keeps it home), with a stolen CSRF token
        no_cookie = stranger.post(move, data={**fields, "csrf": csrf})
    assert [no_cookie.status_code, no_csrf.status_code, bad_csrf.status_code] == [403, 403, 403]
    assert git(store.root, "rev-parse", "HEAD") == before
    assert store.get("use-zod").status == "draft"
    set_cookie = signed_in.headers["set-cookie"].lower()
    assert "httponly" in set_cookie and "samesite=strict" in set_cookie


def test_every_page_needs_a_sign_in(reviewed: tuple[Store, Server, dict[str, str]]) -> None:
    _, server, _ = reviewed
    with httpx2.Client() as http:
        for path in ("/", "/search", "/memory/use-zod", "/ledger", "/health"):
            answer = http.get(f"{server.url}/console{path}")
            assert answer.status_code == 303
            assert answer.headers["location"].startswith("/console/login")


def test_search_ledger_and_health_pages_render(
    reviewed: tuple[Store, Server, dict[str, str]],
) -> None:
    store, server, secrets = reviewed
    from memstore.workflow.ledger import book as ledger_io

    ledger_io.claim(Store(store.root, agent="bob"), "migrate", "billing-db", 600)
    with httpx2.Client() as http:
        http.post(f"{server.url}/console/login", data={"token": secrets["alice"]})
        found = http.get(f"{server.url}/console/search", params={"q": "zod", "status": "draft"})
        by_owner = http.get(f"{server.url}/console/search", params={"owner": "alice"})
        ledger = http.get(f"{server.url}/console/ledger")
        health = http.get(f"{server.url}/console/health")
        deadline = time.monotonic() + 60
        while 'id="running"' in health.text and time.monotonic() < deadline:
            time.sleep(0.05)  # the check runs in its own thread; the page shows it running
            health = http.get(f"{server.url}/console/health")
    assert found.status_code == 200 and "use-zod" in found.text
    assert "alice-idea" in by_owner.text and "use-zod" not in by_owner.text
    assert ledger.status_code == 200 and "billing-db" in ledger.text
    assert health.status_code == 200 and "No problems." in health.text


def test_a_human_confirms_ticked_drafts_at_once_then_merges_a_duplicate(
    reviewed: tuple[Store, Server, dict[str, str]], browser: object
) -> None:
    from playwright.sync_api import Page

    store, server, secrets = reviewed
    Store(store.root, agent="bob").add(
        "zod-bodies", type="decision", description="Zod for request bodies", tags=["zod"]
    )
    before = int(git(store.root, "rev-list", "--count", "HEAD"))
    page = _sign_in(browser, server, secrets["alice"])
    assert isinstance(page, Page)
    assert page.locator("input[name=names][value=alice-idea]").count() == 0  # her own
    page.check("input[name=names][value=use-zod]")
    page.check("input[name=names][value=migration-once]")
    page.fill("#batch-reason", "read both against the code")
    page.click("#confirm-selected")
    notice = page.inner_text("main")
    assert "confirmed use-zod" in notice and "confirmed migration-once" in notice
    assert int(git(store.root, "rev-list", "--count", "HEAD")) == before + 1
    assert git(store.root, "log", "-1", "--format=%an").strip() == "alice"

    page.goto(f"{server.url}/console/memory/use-zod")
    page.fill("#merge-others", "zod-bodies")
    page.click("#merge")
    page.wait_for_url("**/console/memory/use-zod?done=merged")
    assert store.get("zod-bodies").superseded_by == "use-zod"
    assert store.get("use-zod").tags == ("api", "zod")
