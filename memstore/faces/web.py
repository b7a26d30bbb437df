"""`memstore serve --http`: the MCP tools over streamable HTTP and the review console, in one
process.

Each request's bearer token decides who acts: every identity gets its own `Store` and its own
MCP server (as if it ran its own `memstore serve`), so two clients with different tokens act as
themselves at the same moment, and the store lock orders their writes as it orders processes.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncGenerator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.to_thread
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memstore.errors import TokenError
from memstore.faces import bearer, console
from memstore.faces.listening import SETUP
from memstore.faces.server import build_server
from memstore.limits import HTTP_HOST
from memstore.search.watch import Watcher
from memstore.storage.files import shown as shown_path
from memstore.storage.store import Store

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"


@dataclass
class _Agent:
    store: Store
    manager: StreamableHTTPSessionManager | None = None


class Agents:
    """One store (and, once it calls, one MCP server) per identity, made on first use."""

    def __init__(self, config_store: Store, host: str, grouped: bool) -> None:
        self.root = config_store.root
        self.lock_timeout = config_store.lock_timeout
        self.keeper = bearer.Keeper(config_store.cache)
        self.reader = config_store
        self.host = host
        self.grouped = grouped
        self._agents: dict[str, _Agent] = {}
        self._lock = threading.Lock()
        self._starting = anyio.Lock()
        self._group: anyio.abc.TaskGroup | None = None

    def store_for(self, identity: str) -> Store:
        """The store acting as `identity`."""
        with self._lock:
            agent = self._agents.get(identity)
            if agent is None:
                store = Store(self.root, agent=identity, lock_timeout=self.lock_timeout)
                agent = self._agents[identity] = _Agent(store)
            return agent.store

    async def manager_for(self, identity: str) -> StreamableHTTPSessionManager:
        """`identity`'s MCP session manager, started on its first request."""
        known = self._agents.get(identity)
        if known is not None and known.manager is not None:
            return known.manager
        store = await anyio.to_thread.run_sync(self.store_for, identity)
        agent = self._agents[identity]
        async with self._starting:
            if agent.manager is None:
                assert self._group is not None, "the app's lifespan is not running"
                # One watcher for the process (started in the lifespan) re-indexes hand edits;
                # each identity's searcher sees the index's new generations.
                server = build_server(store, grouped=self.grouped, watch=False)
                # Plain JSON answers to POSTs (no SSE stream): no tool here streams progress.
                server.streamable_http_app(host=self.host, json_response=True)
                manager = server.session_manager
                await self._group.start(_run_manager, manager)
                agent.manager = manager
            return agent.manager

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """Hold the session managers' task group and the watcher while the app runs."""
        watcher = await anyio.to_thread.run_sync(lambda: Watcher(self.reader).start(timeout=0))
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                yield
                group.cancel_scope.cancel()
        finally:
            self._group = None
            await anyio.to_thread.run_sync(watcher.stop)


async def _run_manager(
    manager: StreamableHTTPSessionManager,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()


def bearer_token(headers: Any) -> str | None:
    """The token of an `Authorization: Bearer …` header, or None."""
    value: str = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def unauthorized(message: str) -> Response:
    """401 with the bearer challenge MCP clients look for."""
    return JSONResponse(
        {"error": "invalid_token", "error_description": message},
        status_code=401,
        headers={
            "WWW-Authenticate": f'Bearer error="invalid_token", error_description="{message}"'
        },
    )


def unavailable(message: str) -> Response:
    """503: the server cannot tell who anyone is (its token file is damaged)."""
    return JSONResponse(
        {"error": "token_file_damaged", "error_description": message}, status_code=503
    )


class McpGate:
    """The `/mcp` endpoint: checks the bearer token, then hands the request to that identity's
    MCP server. A request without a valid token gets 401 and reaches no tool."""

    def __init__(self, agents: Agents) -> None:
        self.agents = agents

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        token = bearer_token(request.headers)
        if token is None:
            await unauthorized("send Authorization: Bearer <token>")(scope, receive, send)
            return
        try:
            found = self.agents.keeper.identify(token)  # a stat and a hash: no thread needed
        except TokenError as e:  # fail closed: logged once by the keeper
            await unavailable(str(e))(scope, receive, send)
            return
        if found is None:
            await unauthorized("unknown or revoked token")(scope, receive, send)
            return
        manager = await self.agents.manager_for(found.name)
        await manager.handle_request(scope, receive, send)


def health(request: Request) -> Response:
    """`/health`: that the server answers, for a load balancer or a supervisor. No token is
    needed, so it says nothing of the store (no path, no name, no count): only that it is up."""
    return JSONResponse({"status": "ok"}, headers={"Cache-Control": "no-store"})


class _Timed:
    """Adds `Server-Timing: app;dur=MS` to each response: what rendering a page cost the server,
    apart from the network (bench/serve_http.py reads it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                took = (time.perf_counter() - started) * 1000
                headers = MutableHeaders(scope=message)
                headers.append("Server-Timing", f"app;dur={took:.1f}")
            await send(message)

        await self.app(scope, receive, timed_send)


def build_app(store: Store, *, host: str = HTTP_HOST, grouped: bool = False) -> Starlette:
    """The HTTP app over `store`: MCP at `/mcp` (bearer tokens), the console at `/console`."""
    agents = Agents(store, host, grouped)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        async with agents.running():
            yield

    def home(request: Request) -> Response:
        return RedirectResponse("/console/", status_code=303)

    routes = [
        Route(MCP_PATH, endpoint=McpGate(agents)),
        Route("/", endpoint=home),
        Route("/health", endpoint=health),
        Mount("/console", app=_Timed(Router(console.routes(agents.keeper, agents.store_for)))),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.agents = agents
    return app


def serve(
    store: Store,
    keeper: bearer.Keeper,
    host: str,
    sock: socket.socket,
    grouped: bool = False,
    sync_every: float | None = None,
) -> None:
    """Serve `store` over HTTP on `sock` (from `listening.bind`, which refuses what must not
    be served) until interrupted; says where on stderr. `sync_every` (seconds) runs
    `sync.sync` that often in a thread meanwhile."""
    import uvicorn

    # A stop signal is held from here until the event loop runs: one that came while the
    # loop was being made left it half made, and its `__del__` printed a traceback.
    held = _hold_stop_signals()
    try:
        _serve(store, keeper, host, sock, grouped, sync_every, uvicorn, held)
    finally:
        _release(held)


def _hold_stop_signals() -> Iterable[int] | None:
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))


def _release(held: Iterable[int] | None) -> None:
    if held is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _serve(
    store: Store,
    keeper: bearer.Keeper,
    host: str,
    sock: socket.socket,
    grouped: bool,
    sync_every: float | None,
    uvicorn: Any,
    held: Iterable[int] | None,
) -> None:
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    _say(
        f"memstore: serving {shown_path(store.root)} over MCP streamable HTTP at "
        f"http://{shown}:{bound}{MCP_PATH} and the review console at "
        f"http://{shown}:{bound}/console/ (Ctrl-C stops)"
    )
    if not keeper.current():
        _say(f"memstore: no tokens yet, so every request gets 401: {SETUP}")
    app = build_app(store, host=host, grouped=grouped)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    syncer = None
    if sync_every:
        from memstore.workflow.ledger import sync  # only a server that syncs pays for it

        syncer = sync.Every(store, sync_every).start()
    server = uvicorn.Server(config)

    async def serving() -> None:
        _release(held)  # the loop runs: a stop now ends it as any other
        await server.serve(sockets=[sock])

    try:
        with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
            runner.run(serving())
    finally:
        if syncer is not None:
            syncer.stop()


def _say(line: str) -> None:
    """A line for the person who started the server (stderr: a test reads the port there)."""
    print(line, file=sys.stderr, flush=True)
