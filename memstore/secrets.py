"""Credentials in memory text: memories are committed to git and shared, so none may hold one."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from memstore.errors import InvalidMemory, SecretFound

# A value that names a secret without being one: `$DB_PASSWORD`, `${TOKEN}`, `<your key>`,
# `{{ secret }}`, `%(pw)s`, `***`, `xxxx`, `...`, `redacted`, `changeme` would still be refused.
_PLACEHOLDER = r"(?![$<{%*]|x{3,}\b|\.{3}|\[?redacted\]?\b)"

# A value that looks generated rather than written: a digit or symbol in 6+ characters, or
# 16+ characters in one piece. "token: rotated daily" is prose; "token: a8Fk2-x9" is not.
_VALUE = r"(?:(?=[^\s\"'`,;]*[0-9!@#%^&*+/=_.~-])[^\s\"'`,;]{6,}|[^\s\"'`,;]{16,})"

PATTERNS: dict[str, str] = {
    "private key block": r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    "AWS access key id": r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    "Google API key": r"\bAIza[0-9A-Za-z_-]{35}\b",
    "Google OAuth access token": r"\bya29\.[0-9A-Za-z_-]{20,}",
    "GitHub token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})\b",
    "GitLab token": r"\bglpat-[A-Za-z0-9_-]{20,}\b",
    "Slack token": r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    "Slack webhook URL": r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}",
    "Stripe secret key": r"\b[rs]k_live_[0-9A-Za-z]{16,}\b",
    "API secret key (sk-)": r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{32,}",
    "JSON web token": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "bearer token": r"(?i)\bbearer\s+" + _PLACEHOLDER + r"[A-Za-z0-9._~+/-]{16,}=*",
    "password in a URL": r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:" + _PLACEHOLDER + r"[^/\s@]{3,}@",
    "password or secret assignment": (
        r"(?i)\b(?:password|passwd|pwd|secret|client[_-]?secret|api[_-]?key|access[_-]?key"
        r"|secret[_-]?key|private[_-]?key|auth[_-]?token|access[_-]?token|token)"
        r"[\"']?\s*[:=]\s*[\"']?" + _PLACEHOLDER + _VALUE
    ),
}
"""Name → regular expression of each kind of credential refused by default."""


@dataclass(frozen=True, slots=True)
class Finding:
    """Text in one field that looks like a credential; `excerpt` shows only its start."""

    field: str
    pattern: str
    excerpt: str


def compile_patterns(extra: Mapping[str, str] | None = None) -> dict[str, re.Pattern[str]]:
    """The built-in patterns plus `extra` (name → regex), compiled.

    Raises:
        InvalidMemory: naming an extra pattern that is not a valid regular expression.
    """
    compiled = {name: re.compile(rx) for name, rx in PATTERNS.items()}
    for name, rx in (extra or {}).items():
        try:
            compiled[name] = re.compile(rx)
        except re.error as e:
            raise InvalidMemory(
                f"secret pattern {name!r} is not a valid regular expression: {e}"
            ) from e
    return compiled


def _excerpt(found: str) -> str:
    # Enough to find it in the text, too little to use it.
    return found[:4] + "…"


def scan(
    fields: Mapping[str, str | Iterable[str] | None], patterns: Mapping[str, re.Pattern[str]]
) -> list[Finding]:
    """Every credential-like string in `fields` (name → text or list of texts), in field order."""
    findings: list[Finding] = []
    for field, value in fields.items():
        texts = [value] if isinstance(value, str) else list(value or ())
        for text in texts:
            for name, rx in patterns.items():
                match = rx.search(text)
                if match is not None:
                    findings.append(Finding(field, name, _excerpt(match.group(0))))
    return findings


MEMORIES_SHARED = "memories are committed to git and shared"
LEDGER_PERMANENT = "the ledger is committed to git and append-only, so nothing in it can be removed"


def refuse(
    fields: Mapping[str, str | Iterable[str] | None],
    patterns: Mapping[str, re.Pattern[str]],
    because: str = MEMORIES_SHARED,
) -> None:
    """Raise if any field holds something that looks like a credential; `because` says why
    that matters where the text is going.

    Raises:
        SecretFound: naming the field and the pattern (never the secret itself).
    """
    findings = scan(fields, patterns)
    if findings:
        first = findings[0]
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        raise SecretFound(
            f"{first.field} looks like it holds a credential ({first.pattern}: "
            f"'{first.excerpt}'){more}; {because}, so remove "
            "it, or pass --allow-secret (allow_secret=True) if it is not a secret",
            tuple((f.field, f.pattern) for f in findings),
        )
