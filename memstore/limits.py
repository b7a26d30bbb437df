"""The limits the layers and faces share: search budgets, rule severities, briefing and claim
sizes, and the one estimate of a text's LLM tokens. It imports nothing of memstore's, so a face
can spell out its choices and defaults from here without loading the core."""

from __future__ import annotations

from typing import Literal, get_args

Budget = Literal["tiny", "normal", "deep"]
"""How many results a search asks for when it names no limit (the MCP schema's enum)."""
BUDGETS: dict[str, int] = dict(zip(get_args(Budget), (3, 10, 20), strict=True))
"""How many results each budget asks for: tiny 3, normal 10, deep 20."""

Severity = Literal["p0", "p1", "p2", "p3"]
"""How hard a rule acts, most severe first: p0 blocks a matching action in `check`, p1-p3 warn."""
SEVERITIES: tuple[str, ...] = get_args(Severity)
DEFAULT_SEVERITY = {"correction": "p1", "warning": "p2"}
"""A rule without `severity` warns: a correction at p1, a warning at p2. Only p0 blocks."""

BRIEFING_BUDGET = 1500
"""LLM tokens: about 6,000 characters, small enough to push into every session."""
BRIEFING_BUDGET_MIN = 100
"""Room for the header, the rules heading and a short note of what was cut (LLM tokens)."""

CLAIM_TTL = 30 * 60
"""How long a ledger claim holds when its claimer names no time, in seconds."""
CLAIM_TTL_MAX = 7 * 24 * 3600
"""The longest a ledger claim may hold, in seconds."""

HTTP_HOST = "127.0.0.1"
"""Where `serve --http` listens unless told otherwise: loopback, which needs no bearer token."""
HTTP_PORT = 8765
"""The port `serve --http` listens on, and the one client configurations name, by default."""
HTTP_URL = f"http://{HTTP_HOST}:{HTTP_PORT}/mcp"
"""Where `memstore serve --http` answers MCP by default."""

CHARS_PER_TOKEN = 4
"""Approximate LLM tokens as characters / 4: close enough for English Markdown and JSON, and
tokenizer-free."""


def estimate_tokens(text: str) -> int:
    """About how many LLM tokens `text` costs a model: its characters / 4, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)
