"""Client hook formats: a Claude Code hook payload in (a tool call, or a session's transcript),
a check verdict out in its JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstore.errors import InvalidMemory

if TYPE_CHECKING:  # a UserPromptSubmit hook with nothing to save loads no rules
    from memstore.workflow.rules.rules import CheckResult

_TARGET_KEYS = ("file_path", "notebook_path", "path")


def hook_action(payload: object) -> tuple[str, str | None]:
    """The action text and target of a Claude Code `PreToolUse` hook payload.

    A `Bash` call is checked by its command (and the description Claude gave it); another tool
    by its name and the file it touches, which is also the target globs match against.

    Raises:
        InvalidMemory: when the payload is not a hook object with a tool name.
    """
    if not isinstance(payload, dict) or not isinstance(payload.get("tool_name"), str):  # pyright: ignore[reportUnknownMemberType]
        raise InvalidMemory("the hook payload must be a JSON object with a 'tool_name'")
    data: dict[str, Any] = payload  # pyright: ignore[reportUnknownVariableType]
    tool: str = data["tool_name"]
    raw: Any = data.get("tool_input")
    tool_input: dict[str, Any] = raw if isinstance(raw, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    target = next((v for k in _TARGET_KEYS if isinstance(v := tool_input.get(k), str) and v), None)
    if tool == "Bash":
        parts = [tool_input.get("command"), tool_input.get("description")]
        # As a shell comment: the description's words are not the command's arguments.
        text = " # ".join(p for p in parts if isinstance(p, str) and p)
    else:
        text = " ".join(x for x in (tool, target) if x)
    return text or tool, target


EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
"""The Claude Code tools that change a file: each call is recorded as the session's touch."""


def session_of(payload: object) -> tuple[str, str, str | None]:
    """The session id, tool name and working directory of a hook payload ("" when absent)."""
    data: dict[str, Any] = payload if isinstance(payload, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    session, tool, cwd = (data.get(k) for k in ("session_id", "tool_name", "cwd"))
    return (
        session if isinstance(session, str) else "",
        tool if isinstance(tool, str) else "",
        cwd if isinstance(cwd, str) and cwd else None,
    )


def claude_code_output(
    result: CheckResult, ask_on_warn: bool = False, also: str = ""
) -> dict[str, Any] | None:
    """The `PreToolUse` hook output for a check result, or None to let the call go on as usual.

    `block` denies the call and tells Claude why; `warn` adds the reasons to Claude's context
    (or, with `ask_on_warn`, asks the user); `allow` with runbooks adds them as context.
    `also` (other sessions' touches of the file) joins the context and decides nothing.
    """
    from memstore.workflow.rules.rules import Verdict, agent_check_text

    # The reasons quote memories that agents wrote: fenced under memstore's status lines.
    context = agent_check_text(result)
    out: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if result.verdict is Verdict.BLOCK:
        out["permissionDecision"] = "deny"
        out["permissionDecisionReason"] = f"memstore blocked this action.\n{context}"
    elif result.verdict is Verdict.WARN:
        if ask_on_warn:
            out["permissionDecision"] = "ask"
            out["permissionDecisionReason"] = context
        out["additionalContext"] = f"memstore warns before this action.\n{context}"
    elif result.runbooks:
        out["additionalContext"] = f"memstore: runbooks to follow.\n{context}"
    elif not also:
        return None
    if also:
        said = out.get("additionalContext")
        out["additionalContext"] = f"{said}\n{also}" if said else f"memstore: {also}"
    return {"hookSpecificOutput": out}


TRANSCRIPT_TAIL = 2_000_000
"""The most of a transcript file read, in bytes (its end: the latest part of the session)."""


def session_text(payload: object) -> str:
    """What a session said, from a Claude Code `SessionEnd` or `PreCompact` hook payload: the
    people's messages and the assistant's text from the transcript it names (tool calls and
    their results left out), one message a paragraph.

    Raises:
        InvalidMemory: when the payload names no transcript, or it cannot be read.
    """
    data: dict[str, Any] = payload if isinstance(payload, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    where = data.get("transcript_path")
    if not isinstance(where, str) or not where:
        raise InvalidMemory("the hook payload must be a JSON object with a 'transcript_path'")
    path = Path(where).expanduser()
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TRANSCRIPT_TAIL))
            raw = f.read()
    except OSError as e:
        raise InvalidMemory(f"cannot read the transcript {path}: {e.strerror}") from e
    lines = raw.decode("utf-8", "replace").splitlines()
    if len(raw) >= TRANSCRIPT_TAIL:
        lines = lines[1:]  # the first may be cut
    return "\n\n".join(t for line in lines if (t := _message_text(line)))


def _message_text(line: str) -> str:
    """The words of one transcript line: a person's message or the assistant's text."""
    try:
        entry: Any = json.loads(line)
    except ValueError:
        return ""
    if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):  # pyright: ignore[reportUnknownMemberType]
        return ""
    item: dict[str, Any] = entry  # pyright: ignore[reportUnknownVariableType]
    if item.get("isMeta"):
        return ""
    raw: Any = item.get("message")
    message: dict[str, Any] = raw if isinstance(raw, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    content: Any = message.get("content")
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        blocks: list[Any] = content  # pyright: ignore[reportUnknownVariableType]
        parts = [
            str(b.get("text", ""))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text"  # pyright: ignore[reportUnknownMemberType]
        ]
    else:
        return ""
    # Slash commands and their output come as tagged text: no one said those words.
    return "\n".join(p.strip() for p in parts if p.strip() and not p.lstrip().startswith("<"))


def prompt_of(payload: object) -> tuple[str, str]:
    """The prompt and session id of a Claude Code `UserPromptSubmit` hook payload.

    Raises:
        InvalidMemory: when the payload is not a hook object with a text `prompt`.
    """
    data: dict[str, Any] = payload if isinstance(payload, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    prompt = data.get("prompt")
    if not isinstance(prompt, str):
        raise InvalidMemory("the hook payload must be a JSON object with a 'prompt'")
    session = data.get("session_id")
    return prompt, session if isinstance(session, str) else ""


def prompt_output(saved: list[tuple[str, str]], owner: str) -> dict[str, Any] | None:
    """The `UserPromptSubmit` hook output telling Claude the corrections just saved (name,
    description), or None for none: the prompt itself always goes on unchanged."""
    if not saved:
        return None
    from memstore.model.render_text import Bullet, fence_for, word

    lead = (
        f"memstore saved the correction(s) in this prompt as draft(s) of {word(owner)}; "
        "check warns on them from now on:"
    )
    bullets = [Bullet(f"- correction `{word(name)}` [draft]", said) for name, said in saved]
    fence = fence_for([lead, *(f"{b.own} {b.data}" for b in bullets)])
    text = "\n".join([lead, fence.preamble, *(b.render(fence) for b in bullets)])
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}
