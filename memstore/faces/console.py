"""The review console at `/console`: server-rendered pages where people read what agents
learned and confirm, deprecate or restore it, through the same core as the CLI.

Sign-in takes a human's token (`memstore token add NAME --human`), kept in an HttpOnly,
SameSite=Strict cookie; every form that changes something carries a CSRF token derived from it.
Memory text is escaped (Markdown rendered with raw HTML off): it is data, never markup or code.
"""

from __future__ import annotations

import difflib
import hashlib
import hmac
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from memstore.errors import MemoryNotFound, MemstoreError, TokenError
from memstore.faces import bearer
from memstore.git import gitlog, refs
from memstore.model.identity import same_identity
from memstore.model.memory import RULE_TYPES, Memory, now
from memstore.model.render_text import rule_status
from memstore.model.status import VERBS, Status
from memstore.search import upkeep as search
from memstore.search.index import Sync
from memstore.search.upkeep import Query
from memstore.storage import settings
from memstore.storage.store import Store
from memstore.workflow.care import lint
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.rules.rules import binds_shown

COOKIE = "memstore_token"
INBOX_MAX = 200
RESULTS_MAX = 50
EVENTS_MAX = 100
HISTORY_MAX = 30
STATUSES = tuple(s.value for s in Status)
MOVES = {verb: status for status, verb in VERBS.items()}
PAST = {"confirm": "confirmed", "deprecate": "deprecated", "restore": "restored"}


def shown(value: object) -> str:
    """A value as the console prints it: a list or tuple as its items joined by commas (never
    Python's `['a', 'b']`), a mapping as `key: value` pairs, None as nothing."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        items: list[object] = list(value)  # pyright: ignore[reportUnknownArgumentType]
        return ", ".join(shown(v) for v in items)
    if isinstance(value, dict):
        pairs: dict[object, object] = value  # pyright: ignore[reportUnknownVariableType]
        return ", ".join(f"{shown(k)}: {shown(v)}" for k, v in pairs.items())
    return str(value)


def _finalize(value: object) -> object:
    # Every `{{ … }}` of every template goes through here: no list ever prints as Python's.
    return value if isinstance(value, str) else shown(value)


_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False})
_env = Environment(
    loader=PackageLoader("memstore.faces", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
    finalize=_finalize,
)
_env.filters["markdown"] = lambda text: Markup(_markdown.render(str(text)))  # pyright: ignore[reportUnknownLambdaType]

StoreFor = Callable[[str], Store]


@dataclass(frozen=True, slots=True)
class Change:
    """One commit of a memory file, with its diff as lines (`+`, `-`, ` `, `@`)."""

    commit: str
    author: str
    date: str
    subject: str
    body: str
    diff: tuple[tuple[str, str], ...]


def routes(keeper: bearer.Keeper, store_for: StoreFor) -> list[Route]:
    """The console's routes, mounted at `/console`."""
    pages = _Pages(keeper, store_for)
    return [
        Route("/", pages.inbox),
        Route("/login", pages.login, methods=["GET", "POST"]),
        Route("/logout", pages.logout, methods=["POST"]),
        Route("/search", pages.search),
        Route("/memory/{name}", pages.memory),
        Route("/memory/{name}/move", pages.move, methods=["POST"]),
        Route("/memory/{name}/merge", pages.merge, methods=["POST"]),
        Route("/review", pages.review_many, methods=["POST"]),
        Route("/ledger", pages.ledger),
        Route("/health", pages.health),
        Route("/health/check", pages.recheck, methods=["POST"]),
    ]


def _render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = _env.get_template(name).render(**context)
    return HTMLResponse(
        html,
        status_code=status,
        headers={
            # Nothing but this page's own inline style: no script at all, no remote resource.
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
            "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin",
            "Cache-Control": "no-store",
        },
    )


def diff_lines(old: bytes | None, new: bytes | None) -> tuple[tuple[str, str], ...]:
    """A unified diff of two versions of a file as (kind, line) pairs, kind one of `+ - @` or
    a space."""
    before = (old or b"").decode("utf-8", "replace").splitlines()
    after = (new or b"").decode("utf-8", "replace").splitlines()
    out: list[tuple[str, str]] = []
    for line in difflib.unified_diff(before, after, lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        out.append((line[:1] if line[:1] in "+-@" else " ", line))
    return tuple(out)


def changes(store: Store, path: Path, limit: int = HISTORY_MAX) -> list[Change]:
    """The commits that changed `path`, newest first, each with its diff (`git log -p`)."""
    found: list[Change] = []
    for each in gitlog.file_revisions(store.repo, path, limit=limit):
        rev = each.revision
        subject, _, body = rev.message.partition("\n")
        diff = diff_lines(each.before, each.after)
        found.append(Change(rev.commit, rev.author, rev.date, subject, body.strip(), diff))
    return found


def front_matter(memory: Memory) -> list[tuple[str, tuple[str, ...]]]:
    """The memory's fields (not its body) as (key, items) rows — one item for a single
    value, one per entry for a list — empty ones left out."""
    rows: list[tuple[str, tuple[str, ...]]] = []
    pairs: list[tuple[str, object]] = [
        (f.name, getattr(memory, f.name)) for f in fields(memory) if f.name not in ("body", "extra")
    ]
    pairs += [(str(k), v) for k, v in memory.extra.items()]
    for key, value in pairs:
        if value in (None, "", (), []):
            continue
        if isinstance(value, list | tuple):
            listed: list[object] = list(value)  # pyright: ignore[reportUnknownArgumentType]
            rows.append((key, tuple(shown(v) for v in listed)))
        else:
            rows.append((key, (shown(value),)))
    return rows


def trail(memory: Memory) -> list[tuple[str, str, str, str]]:
    """The status moves the front matter records: (what, who, when, why)."""
    moves = [
        ("created", memory.owner, memory.created, ""),
        ("confirmed", memory.confirmed_by, memory.confirmed_at, memory.confirmed_reason),
        ("deprecated", memory.deprecated_by, memory.deprecated_at, memory.deprecated_reason),
        (
            "deprecation proposed",
            memory.deprecation_proposed_by,
            memory.deprecation_proposed_at,
            memory.deprecation_proposed_reason,
        ),
        ("restored", memory.restored_by, memory.restored_at, memory.restored_reason),
    ]
    done = [(what, who or "", when or "", why or "") for what, who, when, why in moves if who]
    return sorted(done, key=lambda m: m[2])


class _Pages:
    def __init__(self, keeper: bearer.Keeper, store_for: StoreFor) -> None:
        self.keeper = keeper
        self.store_for = store_for
        # Forms are bound to the sign-in and to this process: a CSRF token is worthless to
        # anyone without the cookie, and forms opened before a restart are refused.
        self._secret = secrets.token_bytes(32)
        self.checkup = Checkup()

    # -- sign-in -----------------------------------------------------------------------------

    def who(self, request: Request) -> bearer.Token | None:
        token = request.cookies.get(COOKIE)
        if not token:
            return None
        try:
            found = self.keeper.identify(token)
        except TokenError:  # fail closed: the keeper logs it
            return None
        return found if found is not None and found.human else None

    def csrf(self, token: bearer.Token) -> str:
        return hmac.new(self._secret, token.sha256.encode(), hashlib.sha256).hexdigest()

    def page(
        self, request: Request, name: str, user: bearer.Token, status: int = 200, **context: Any
    ) -> HTMLResponse:
        return _render(
            name, status, user=user, csrf=self.csrf(user), here=request.url.path, **context
        )

    async def login(self, request: Request) -> Response:
        if request.method == "GET":
            return _render("login.html", next=_local(request.query_params.get("next")))
        form = await _form(request)
        token = form.get("token", "").strip()
        try:
            found = await run_in_threadpool(self.keeper.identify, token) if token else None
        except TokenError as e:
            return _render("login.html", 503, error=str(e), next=_local(form.get("next")))
        if found is None or not found.human:
            why = (
                "that token is an agent's: sign in with a person's token "
                "(memstore token add NAME --human)"
                if found is not None
                else "unknown or revoked token"
            )
            return _render("login.html", 401, error=why, next=_local(form.get("next")))
        response = RedirectResponse(_local(form.get("next")), status_code=303)
        response.set_cookie(
            COOKIE,
            token,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/console",
        )
        return response

    async def logout(self, request: Request) -> Response:
        user = await run_in_threadpool(self.who, request)
        form = await _form(request)
        if user is not None and self.form_ok(form, user):
            response = RedirectResponse("/console/login", status_code=303)
            response.delete_cookie(COOKIE, path="/console")
            return response
        return RedirectResponse("/console/", status_code=303)

    def form_ok(self, form: dict[str, str], user: bearer.Token) -> bool:
        """Whether `form` carries the CSRF token of `user`'s sign-in."""
        return hmac.compare_digest(form.get("csrf", ""), self.csrf(user))

    # -- pages -------------------------------------------------------------------------------

    def inbox(self, request: Request, notice: list[str] | None = None) -> Response:
        user = self.who(request)
        if user is None:
            return _to_login(request)
        store = self.store_for(user.name)
        drafts = search.search(store, Query("", status="draft", limit=INBOX_MAX))
        counts = {s: search.count(store, s) for s in STATUSES}
        humans = _humans(store)
        return self.page(
            request,
            "inbox.html",
            user,
            drafts=drafts,
            counts=counts,
            standing={d.name: standing(d.type, d.status, d.owner, humans) for d in drafts},
            yours={d.name for d in drafts if same_identity(d.owner, user.name)},
            notice=notice or [],
        )

    def search(self, request: Request) -> Response:
        user = self.who(request)
        if user is None:
            return _to_login(request)
        store = self.store_for(user.name)
        params = request.query_params
        text = params.get("q", "")
        wanted = {k: params.get(k) or None for k in ("status", "type", "owner")}
        hits = []
        error = None
        if any(wanted.values()) or text:
            try:
                hits = search.search(
                    store,
                    Query(
                        text,
                        type=wanted["type"],
                        status=wanted["status"],
                        owner=wanted["owner"],
                        limit=RESULTS_MAX,
                        # "any status" is every status: deprecated memories too.
                        include_deprecated=wanted["status"] in (None, "deprecated"),
                    ),
                )
            except MemstoreError as e:
                error = str(e)
        humans = _humans(store)
        return self.page(
            request,
            "search.html",
            user,
            status=400 if error else 200,
            q=text,
            wanted=wanted,
            hits=hits,
            error=error,
            types=store.types,
            statuses=STATUSES,
            standing={h.name: standing(h.type, h.status, h.owner, humans) for h in hits},
        )

    def memory(self, request: Request, error: str | None = None, status: int = 200) -> Response:
        user = self.who(request)
        if user is None:
            return _to_login(request)
        store = self.store_for(user.name)
        name = request.path_params["name"]
        try:
            current = store.read(name)
        except MemoryNotFound as e:
            return self.page(request, "error.html", user, 404, error=str(e))
        except MemstoreError as e:
            return self.page(request, "error.html", user, 400, error=str(e))
        memory = current.memory
        rule = (
            [
                (k, memory.extra[k])
                for k in ("severity", "applies_when", "evidence")
                if k in memory.extra
            ]
            if memory.type in RULE_TYPES
            else []
        )
        return self.page(
            request,
            "memory.html",
            user,
            status,
            memory=memory,
            version=current.version,
            path=current.path,
            rows=front_matter(memory),
            trail=trail(memory),
            rule=rule,
            changes=changes(store, store.root / current.path),
            moves=[VERBS[m] for m in store.moves(current)],
            standing=standing(memory.type, memory.status, memory.owner, _humans(store)),
            error=error,
            done=request.query_params.get("done"),
        )

    async def move(self, request: Request) -> Response:
        user = await run_in_threadpool(self.who, request)
        form = await _form(request)
        refused = self._refused(user, form)
        if refused is not None or user is None:
            return refused or Response("sign in first", status_code=403)
        return await run_in_threadpool(self._move, request, user, form)

    def _move(self, request: Request, user: bearer.Token, form: dict[str, str]) -> Response:
        name = request.path_params["name"]
        verb = form.get("action", "")
        if verb not in MOVES:
            return self.memory(request, f"unknown action {verb!r}", 400)
        try:
            moved = self.store_for(user.name).move(
                name,
                MOVES[verb],
                form.get("reason", "").strip(),
                form.get("superseded_by", "").strip() or None,
                expected_version=form.get("version") or None,
            )
        except MemstoreError as e:
            return self.memory(request, str(e), 409)
        # A rule that binds the signed-in identity: the deprecation is only proposed.
        proposed = verb == "deprecate" and moved.status != Status.DEPRECATED
        done = "proposed" if proposed else PAST[verb]
        return RedirectResponse(f"/console/memory/{name}?done={done}", status_code=303)

    async def review_many(self, request: Request) -> Response:
        """Confirm or deprecate the drafts ticked in the inbox, in one commit (see
        `tidy.promote_many`): the inbox again, saying what moved and what was refused."""
        user = await run_in_threadpool(self.who, request)
        async with request.form(max_files=0) as posted:
            form = {k: v for k, v in posted.items() if isinstance(v, str)}
            names = [v for v in posted.getlist("names") if isinstance(v, str)]
        refused = self._refused(user, form)
        if refused is not None:
            return refused
        assert user is not None
        return await run_in_threadpool(self._review_many, request, user, form, names)

    def _review_many(
        self, request: Request, user: bearer.Token, form: dict[str, str], names: list[str]
    ) -> Response:
        from memstore.workflow.care import tidy

        verb = form.get("action", "")
        if verb not in ("confirm", "deprecate") or not names:
            return self.inbox(request, ["tick the drafts, then confirm or deprecate them"])
        try:
            done, refused = tidy.promote_many(
                self.store_for(user.name), names, MOVES[verb], form.get("reason", "").strip()
            )
        except MemstoreError as e:
            return self.inbox(request, [str(e)])
        lines = [f"{PAST[verb]} {m.name}" for m in done]
        lines += [f"refused {name}: {why}" for name, why in refused]
        return self.inbox(request, lines)

    async def merge(self, request: Request) -> Response:
        """Merge the duplicates named into this memory (see `merge.merge`)."""
        user = await run_in_threadpool(self.who, request)
        form = await _form(request)
        refused = self._refused(user, form)
        if refused is not None:
            return refused
        assert user is not None
        return await run_in_threadpool(self._merge, request, user, form)

    def _merge(self, request: Request, user: bearer.Token, form: dict[str, str]) -> Response:
        from memstore.workflow.care import merge

        name = request.path_params["name"]
        others = form.get("others", "").replace(",", " ").split()
        try:
            merge.merge(
                self.store_for(user.name),
                name,
                others,
                form.get("reason", "").strip() or None,
                body=form.get("body") == "on",
            )
        except MemstoreError as e:
            return self.memory(request, str(e), 409)
        return RedirectResponse(f"/console/memory/{name}?done=merged", status_code=303)

    def _refused(self, user: bearer.Token | None, form: dict[str, str]) -> Response | None:
        """Why a posted form is not acted on (not signed in, a foreign form), else None."""
        if user is None:
            return Response("sign in first", status_code=403, media_type="text/plain")
        if not self.form_ok(form, user):
            return Response(
                "this form has expired or did not come from this console; reload the page",
                status_code=403,
                media_type="text/plain",
            )
        return None

    def ledger(self, request: Request) -> Response:
        user = self.who(request)
        if user is None:
            return _to_login(request)
        store = self.store_for(user.name)
        try:
            events = ledger_io.events(store)[-EVENTS_MAX:][::-1]
            claims = ledger_io.open_claims(store)
            error = None
        except MemstoreError as e:
            events, claims, error = [], [], str(e)
        return self.page(request, "ledger.html", user, events=events, claims=claims, error=error)

    def health(self, request: Request) -> Response:
        user = self.who(request)
        if user is None:
            return _to_login(request)
        if self.checkup.result is None:
            self.checkup.start(self.store_for(user.name))
        return self.page(
            request,
            "health.html",
            user,
            result=self.checkup.result,
            running=self.checkup.running_since,
        )

    async def recheck(self, request: Request) -> Response:
        user = await run_in_threadpool(self.who, request)
        form = await _form(request)
        if user is None or not self.form_ok(form, user):
            return Response("sign in first", status_code=403, media_type="text/plain")
        self.checkup.start(self.store_for(user.name))
        return RedirectResponse("/console/health", status_code=303)


@dataclass(frozen=True, slots=True)
class Checked:
    """What the last health check found: lint's problems and the index catch-up, at a HEAD."""

    problems: tuple[lint.Problem, ...]
    sync: Sync | None
    error: str | None
    head: str | None
    at: str


class Checkup:
    """The health check, run in a thread of its own: linting a large store takes seconds (it
    replays the history), and a page must not wait for it. The page shows the last result."""

    def __init__(self) -> None:
        self.result: Checked | None = None
        self.running_since: str | None = None
        self._lock = threading.Lock()

    def start(self, store: Store) -> None:
        """Start a check unless one is running."""
        with self._lock:
            if self.running_since is not None:
                return
            self.running_since = now()
        threading.Thread(target=self._run, args=(store,), daemon=True).start()

    def _run(self, store: Store) -> None:
        try:
            head = refs.head(store.repo)
            try:
                found = Checked(
                    tuple(lint.lint_store(store)), search.catch_up(store), None, head, ""
                )
            except MemstoreError as e:
                found = Checked((), None, str(e), head, "")
            self.result = replace(found, at=now())
        finally:
            with self._lock:
                self.running_since = None


def standing(type: str, status: str, owner: str, humans: tuple[str, ...]) -> str:
    """A memory's status as the console shows it: for a rule, with its strength in the words
    `check` and `brief` use (a person's draft is in force; an agent's only warns)."""
    if type not in RULE_TYPES or status == Status.DEPRECATED:
        return status
    return rule_status(status, binds_shown(status, owner, humans))


def _humans(store: Store) -> tuple[str, ...]:
    try:
        return settings.store_humans(store.root)
    except MemstoreError:  # a damaged memstore.yaml: lint names it; nobody's draft binds
        return ()


async def _form(request: Request) -> dict[str, str]:
    """The fields of a posted form (files are refused: no form here takes one)."""
    async with request.form(max_files=0) as form:
        return {k: v for k, v in form.items() if isinstance(v, str)}


def _local(target: str | None) -> str:
    """`target` if it is a console path, else the inbox (no redirect off this site)."""
    if target and target.startswith("/console/") and "//" not in target and "\\" not in target:
        return target
    return "/console/"


def _to_login(request: Request) -> Response:
    from urllib.parse import quote

    return RedirectResponse(f"/console/login?next={quote(request.url.path)}", status_code=303)
