"""The review console in a real browser (headless Chromium driven by Playwright) against a real
`memstore serve --http` process, plus the requests a hostile page could make."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless Chromium for the module: each test opens its own page, in a context
    (cookies, storage) of its own."""
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
    # Only the moves the store would allow her: no Confirm on her own draft.
    assert page.locator("#confirm").count() == 0
    assert page.locator("#deprecate").count() == 1
    assert "You created it: someone else confirms it." in page.inner_text("#not-yours")
    # A form posted all the same is refused by the store, with the CLI's message.
    csrf = page.get_attribute("input[name=csrf]", "value") or ""
    answer = page.request.post(
        f"{server.url}/console/memory/alice-idea/move",
        form={"action": "confirm", "reason": "looks right to me", "csrf": csrf},
    )
    assert answer.status == 409
    assert "you (alice) created it, and nobody confirms their own memory" in answer.text()
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


LONG = "a-very-long-memory-name-that-keeps-going-and-going-past-the-edge"  # 64 characters


@pytest.fixture(scope="module")
def phone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Server, str]]:
    """One server for the narrow-screen and output checks: alice (a person, `humans:`) with
    a p0 draft, bob's drafts (one with lists in its front matter, one with no body), a
    deprecated memory, and alice's token."""
    from tests.conftest import name_humans

    root = tmp_path_factory.mktemp("phone") / "memory"
    store = Store.init(root, agent="bob")
    name_humans(root, "alice")
    Store(root, agent="alice").add(
        "no-friday-deploys",
        type="correction",
        description="Never deploy prod on a Friday",
        extra={"severity": "p0", "applies_when": ["deploy prod", "npm publish"]},
    )
    store.add(
        LONG,
        type="warning",
        description="A description with a longwordthatdoesnotbreakanywhereatallforsurereally",
        body="```\n" + "x" * 300 + "\n```\n\n" + "word " * 200,
        extra={"applies_when": ["rm -rf build", "git push --force"], "files": ["src/a.py"]},
    )
    store.add("empty-one", type="fact", description="A fact that says it all in one line")
    store.add("old-way", type="decision", description="Deploy with the old shell script")
    Store(root, agent="alice").deprecate("old-way", "replaced by the pipeline")
    secret = add_token(root, "alice", human=True)
    with http_server(root) as server:
        yield store, server, secret


@contextmanager
def _signed_in(server: Server, secret: str) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=server.url) as http:
        assert http.post("/console/login", data={"token": secret}).status_code == 303
        yield http


def test_every_page_fits_a_phone_without_sideways_scrolling(
    phone: tuple[Store, Server, str], browser: object
) -> None:
    from playwright.sync_api import Browser

    _, server, secret = phone
    assert isinstance(browser, Browser)
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(f"{server.url}/console/login")
    assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")
    page.fill("#token", secret)
    page.click("#sign-in")
    page.wait_for_url(f"{server.url}/console/")
    for path in (
        "/console/",
        f"/console/memory/{LONG}",
        "/console/memory/no-friday-deploys",
        "/console/search?q=deploy",
        "/console/search?status=draft",
        "/console/ledger",
        "/console/health",
    ):
        page.goto(f"{server.url}{path}")
        wide, inner = page.evaluate("[document.scrollingElement.scrollWidth, innerWidth]")
        assert wide <= inner, f"{path} is {wide} px wide in a {inner} px window"
        header = page.evaluate(
            "[...document.querySelectorAll('header > *')].map(e => e.getBoundingClientRect().right)"
        )
        assert max(header) <= inner, f"{path}: the header runs past the window"


def test_any_status_finds_deprecated_memories_too(phone: tuple[Store, Server, str]) -> None:
    _, server, secret = phone
    with _signed_in(server, secret) as http:
        anything = http.get("/console/search", params={"q": "shell script", "status": ""})
        drafts = http.get("/console/search", params={"q": "shell script", "status": "draft"})
    assert "old-way" in anything.text and 'class="badge s-deprecated"' in anything.text
    assert "old-way" not in drafts.text


def test_an_empty_body_says_so_instead_of_an_empty_box(phone: tuple[Store, Server, str]) -> None:
    _, server, secret = phone
    with _signed_in(server, secret) as http:
        page = http.get("/console/memory/empty-one").text
    assert 'id="no-body"' in page and 'id="body"' not in page


def test_a_persons_p0_draft_shows_in_force_as_check_says(phone: tuple[Store, Server, str]) -> None:
    store, server, secret = phone
    from memstore.workflow.session import agent as session
    from tests.conftest import as_agent

    assert session.check(as_agent(store, "coder"), "deploy prod").verdict.value == "block"
    with _signed_in(server, secret) as http:
        memory = http.get("/console/memory/no-friday-deploys").text
        inbox = http.get("/console/").text
        found = http.get("/console/search", params={"q": "friday"}).text
        agents = http.get(f"/console/memory/{LONG}").text
    for page in (memory, inbox, found):
        assert "draft, from a human: in force" in page
    assert "draft, from an agent: only warns until someone else confirms it" in agents


def test_lists_print_as_lists_never_as_python(phone: tuple[Store, Server, str]) -> None:
    _, server, secret = phone
    with _signed_in(server, secret) as http:
        pages = [http.get(f"/console/memory/{n}").text for n in (LONG, "no-friday-deploys")]
    for page in pages:
        assert "['" not in page and "&#39;]" not in page and "[&#39;" not in page
    assert "<li>rm -rf build</li><li>git push --force</li>" in pages[0]
    assert "<li>deploy prod</li><li>npm publish</li>" in pages[1]
    assert "src/a.py" in pages[0]


def test_only_the_moves_the_signed_in_person_may_make_are_offered(
    phone: tuple[Store, Server, str],
) -> None:
    _, server, secret = phone
    with _signed_in(server, secret) as http:
        own = http.get("/console/memory/no-friday-deploys").text
        others = http.get("/console/memory/empty-one").text
        gone = http.get("/console/memory/old-way").text
    assert 'id="confirm"' not in own and 'id="deprecate"' in own and 'id="not-yours"' in own
    assert 'id="confirm"' in others and 'id="deprecate"' in others
    assert 'id="restore"' in gone and 'id="confirm"' not in gone and 'id="deprecate"' not in gone


def test_health_answers_without_a_token_and_says_nothing_of_the_store(
    phone: tuple[Store, Server, str],
) -> None:
    store, server, _ = phone
    with httpx2.Client() as http:
        answer = http.get(f"{server.url}/health")
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok"}
    assert str(store.root) not in answer.text and "friday" not in answer.text


def test_no_template_prints_a_list_as_python() -> None:
    from memstore.faces import console

    template = console._env.from_string("{{ a }}|{{ b }}|{{ c }}|{{ d }}")  # pyright: ignore[reportPrivateUsage]
    out = template.render(a=["npm publish", "<b>"], b=("x", 1), c={"k": ["v"]}, d=None)
    assert out == "npm publish, &lt;b&gt;|x, 1|k: v|"


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
