"""Client hook formats: a Claude Code hook payload in, a check verdict out in its JSON."""

from __future__ import annotations

from typing import Any

from memstore.errors import InvalidMemory
from memstore.workflow import CheckResult, Verdict, agent_check_text

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


def claude_code_output(result: CheckResult, ask_on_warn: bool = False) -> dict[str, Any] | None:
    """The `PreToolUse` hook output for a check result, or None to let the call go on as usual.

    `block` denies the call and tells Claude why; `warn` adds the reasons to Claude's context
    (or, with `ask_on_warn`, asks the user); `allow` with runbooks adds them as context.
    """
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
    else:
        return None
    return {"hookSpecificOutput": out}
