"""Which live sessions are changing which files: a soft, self-expiring warning between agents
working on one clone in parallel.

Each file edit a session makes (the Claude Code PreToolUse hook on Edit, Write, MultiEdit,
NotebookEdit) appends one line to `.memstore/touches.jsonl` in the store's ignored cache: when,
which session, who, which file. Nothing is committed. `others` reads the lines of the last
`TTL` seconds by other sessions; the file is cut back to its live lines once it passes
`FILE_MAX` bytes, so a read costs the same at any store size and any age.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstore.model import when
from memstore.model.render_text import Bullet, fence_for, word
from memstore.storage.files import atomic_write

if TYPE_CHECKING:
    from memstore.storage.store import Store

TTL = 30 * 60
"""How long a touch warns others, in seconds: a session that stopped editing a file half an
hour ago is no longer in the way."""
FILE_MAX = 64 * 1024
"""Past this size the log is cut back to its live lines (the newest `KEEP` of them)."""
KEEP = 400
FILE = "touches.jsonl"
LOCK = "touches.lock"
SHOWN = 5
"""The most touches a warning names."""


@dataclass(frozen=True, slots=True)
class Touch:
    """One file edit by a session."""

    at: str
    """UTC, ISO 8601 with `Z`, to the second."""
    session: str
    who: str
    path: str
    """Relative to the top of the store's git working tree, or absolute when outside it."""
    tool: str = ""
    client: int = 0
    """The process id of the client (Claude Code) whose session it is, 0 when unknown: what
    tells an MCP server, which knows no session id, its own session's touches."""


def _log(store: Store) -> Path:
    return store.cache / FILE


@contextlib.contextmanager
def _locked(store: Store) -> Generator[None]:
    """The touch log's own short lock (not the store's): appends and the cut never interleave."""
    store.cache.mkdir(parents=True, exist_ok=True)
    fd = os.open(store.cache / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def relative(store: Store, path: str, cwd: str | None = None) -> str:
    """`path` (absolute, or relative to `cwd`) relative to the top of the store's working tree;
    the resolved absolute path when it lies outside."""
    here = Path(cwd) if cwd else Path.cwd()
    full = Path(os.path.normpath(here / Path(path).expanduser()))
    with contextlib.suppress(OSError):
        full = full.resolve()
    top = store.repo.top.resolve()
    try:
        return full.relative_to(top).as_posix()
    except ValueError:
        return full.as_posix()


_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "fish", "ksh", "timeout", "env"})


def client_pid() -> int:
    """The process that started this one, past any shell in between (a hook's command runs
    through `sh -c`): the client both a hook and the MCP server of one session descend from.
    Where /proc cannot be read, the parent as it is."""
    pid = os.getppid()
    for _ in range(4):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return pid
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        if name not in _SHELLS:
            return pid
        parent = int(stat[stat.rfind(")") + 2 :].split()[1])
        if parent <= 1:
            return pid
        pid = parent
    return pid


def record(store: Store, session: str, path: str, tool: str = "") -> Touch:
    """Append that `session` (as the store's identity) is changing `path` now.

    Raises:
        OSError: when the cache cannot be written.
    """
    touch = Touch(
        when.stamp(when.utcnow()), session, store.identity or "", path, tool, client_pid()
    )
    line = _line(touch)
    log = _log(store)
    with _locked(store):
        with log.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
            size = f.tell()
        if size > FILE_MAX:
            live = _live(_read(log), when.stamp(when.utcnow() - timedelta(seconds=TTL)))
            text = "".join(_line(t) + "\n" for t in live[-KEEP:])
            atomic_write(log, text)
    return touch


def _line(t: Touch) -> str:
    data = {
        "at": t.at,
        "session": t.session,
        "who": t.who,
        "path": t.path,
        "tool": t.tool,
        "client": t.client,
    }
    return json.dumps(data, ensure_ascii=False)


def _read(log: Path) -> list[Touch]:
    try:
        with log.open("rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4 * FILE_MAX))  # never more than that
            raw = f.read()
    except OSError:
        return []
    found: list[Touch] = []
    for line in raw.decode("utf-8", "replace").splitlines():
        try:
            item: Any = json.loads(line)
        except ValueError:
            continue  # a cut first line, or a torn one
        if not isinstance(item, dict):
            continue
        data: dict[str, Any] = item  # pyright: ignore[reportUnknownVariableType]
        fields = [data.get(k) for k in ("at", "session", "who", "path", "tool")]
        if all(isinstance(v, str) for v in fields[:4]):
            tool = fields[4] if isinstance(fields[4], str) else ""
            client = data.get("client")
            pid = client if isinstance(client, int) else 0
            at, session, who, path = (str(v) for v in fields[:4])
            found.append(Touch(at, session, who, path, tool, pid))
    return found


def _live(touches: list[Touch], since: str) -> list[Touch]:
    return [t for t in touches if t.at >= since]


def others(
    store: Store,
    session: str | None = None,
    paths: Iterable[str] | None = None,
    text: str | None = None,
    client: int | None = None,
) -> list[Touch]:
    """The live touches (of the last `TTL` seconds) by sessions other than `session` (and, for
    a caller that knows no session id, other than its `client` process's): the newest per
    session and file, newest first. With `paths`, only of those files; with `text` (a shell
    command, an action), only of the files it names."""
    since = when.stamp(when.utcnow() - timedelta(seconds=TTL))
    wanted = set(paths) if paths is not None else None
    newest: dict[tuple[str, str], Touch] = {}
    for t in _live(_read(_log(store)), since):
        if session is not None and t.session == session:
            continue
        if client and t.client == client:
            continue
        if wanted is not None and t.path not in wanted:
            continue
        if text is not None and not _names(text, t.path):
            continue
        newest[(t.session, t.path)] = t
    return sorted(newest.values(), key=lambda t: (t.at, t.path), reverse=True)


def _names(text: str, path: str) -> bool:
    """Whether `text` names the file at `path`: its path, or its last two parts, as a whole
    word of the text (`a.py` is not named by `data.py`)."""
    short = "/".join(path.rsplit("/", 2)[-2:])
    for part in (path, short) if "/" in short else (path,):
        if re.search(rf"(?<![\w.-]){re.escape(part)}(?![\w/-])", text):
            return True
    return False


def ago(at: str) -> str:
    """`4 min ago` for a touch's time."""
    try:
        then = when.moment(at)
    except Exception:  # noqa: BLE001 — a line written by hand: say nothing of when
        return "recently"
    minutes = int((when.utcnow() - then).total_seconds() // 60)
    return "just now" if minutes < 1 else f"{minutes} min ago"


HEADING = (
    "Other live sessions changed these files in the last 30 min (a soft warning: re-read the "
    "file before changing it, and keep out of each other's way):"
)


def bullets(found: list[Touch]) -> list[Bullet]:
    """A bullet per touch shown: `- claude-code (session 0f9c2a51) changed it 4 min ago`
    (memstore's words; who and the session as plain words), the file as data."""
    out: list[Bullet] = []
    for t in found[:SHOWN]:
        own = f"- {word(t.who or 'someone')} (session {word(t.session[:8] or '?')}) {ago(t.at)}"
        out.append(
            Bullet(own, t.path, plain=f"- `{t.path}` by {t.who} ({t.session[:8]}), {ago(t.at)}")
        )
    if len(found) > SHOWN:
        out.append(Bullet(f"- and {len(found) - SHOWN} more"))
    return out


def note(found: list[Touch]) -> str:
    """The warning for an agent's context, what agents wrote (the paths) fenced; "" for none."""
    if not found:
        return ""
    shown = bullets(found)
    fence = fence_for([HEADING, *(f"{b.own} {b.data}" for b in shown)])
    return "\n".join([HEADING, fence.preamble, *(b.render(fence) for b in shown)])


def data(found: list[Touch]) -> list[dict[str, str]]:
    """The touches as JSON objects, for structured output."""
    return [{"at": t.at, "session": t.session, "who": t.who, "path": t.path} for t in found]
