"""Credentials in store text: memories, ledger lines and outcome records are committed to git
and shared, so none may hold one.

Two detectors run on every field: memstore's own patterns below (each with a check on what it
matched, so placeholders and prose pass), then the regex plugins of Yelp's detect-secrets,
imported on the first scan only (`memstore --help` and reads never load it), with the few
shapes it lacks written as its plugins are (`_more_plugins`). Each field is scanned as
written, with tokens split over lines joined up again, URL-decoded, and with base64 runs that
decode to text decoded, so a wrapped, encoded or folded key is still found. A line that
detect-secrets' allow-list comment marks (`# pragma: allowlist secret`) is not scanned.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import re
import string
import urllib.parse
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from memstore.errors import InvalidMemory, SecretFound

if TYPE_CHECKING:
    from memstore.model.memory import Memory

# -- what a secret value looks like -----------------------------------------------------------

# Text that stands for a secret without being one.
_PLACEHOLDER_RUN = re.compile(r"x{4,}|X{4,}|\*{3,}|•{3,}|#{4,}|\.{3}|…|0{8,}")
_PLACEHOLDER_WORDS = re.compile(
    r"(?i)(?:example|sample|dummy|placeholder|redacted|changeme|fake|notasecret|your|my)"
)
_PLACEHOLDER_EXACT = frozenset(
    "password passwd pass pw pwd secret token key apikey api_key none null nil empty "
    "true false undefined unset required optional hidden masked todo tbd".split()
)
_VAR_REF = re.compile(
    r"\$(?:\{[^}]*\}?|\([^)]*\)?|[A-Za-z_][A-Za-z0-9_]*)$|%\([^)]*\)s?|%[A-Za-z_]+%|"
    r"\{\{.*|<.*|\[.*\]|\{[A-Za-z_][\w.]*\}"
)
_NUMERIC = re.compile(r"[0-9.,:/+ TZ-]+")
_PATH = re.compile(r"(?:/|\./|\.\./|~/|[A-Za-z]:\\|file:)")
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\)?)?")
_WORDISH = re.compile(r"(?:[a-z]+|[A-Z]+|[A-Z][a-z]+)")


def is_placeholder(value: str) -> bool:
    """Whether `value` stands for a secret: `${TOKEN}`, `<your key>`, `xxxx`, `***`,
    `YOUR_API_KEY`, `password`, `example-token`; a lower-case value naming itself an example;
    a key ending `EXAMPLE` or `EXAMPLEKEY`, as AWS's documentation writes its example keys
    (`AKIAIOSFODNN7EXAMPLE`): public and never valid, and a random key ends so once in 36^7.
    """
    value = value.strip("\"'`")
    if not value or _PLACEHOLDER_RUN.search(value) or _VAR_REF.match(value):
        return True
    if value.endswith(("EXAMPLE", "EXAMPLEKEY")):
        return True
    low = value.lower()
    if low in _PLACEHOLDER_EXACT:
        return True
    return value == low and _PLACEHOLDER_WORDS.search(value) is not None


def looks_generated(value: str, *, minimum: int = 6, digits_ok: bool = False) -> bool:
    """Whether `value`, written after `password:` or `token=`, looks like a credential rather
    than a placeholder, a number, a date, a path, a name in code or a few words.

    `digits_ok`: a run of digits counts (a password may be a PIN; a token count is not).
    """
    value = value.strip("\"'`").rstrip(".,;:!?)]}>")
    if len(value) < minimum or is_placeholder(value) or "://" in value:
        return False
    if _NUMERIC.fullmatch(value):
        return digits_ok and value.isdigit()
    if _PATH.match(value) or _DOTTED_NAME.fullmatch(value):
        return False
    parts = [p for p in re.split(r"[-_./:]", value) if p]
    if all(_WORDISH.fullmatch(p) and len(p) <= 24 for p in parts):
        return False  # words: `rotated`, `enabled-by-default`, `SECRET_KEY_BASE`, `vault.read`
    return True


@functools.cache
def _key_meta() -> re.Pattern[str]:
    """A key ending in one of these holds something about the secret, not the secret itself.
    (Compiled on first use: case-insensitive alternatives cost milliseconds, and most writes
    name no key.)"""
    return re.compile(
        r"(?i)[-_.]?(?:ids?|names?|files?|paths?|dirs?|urls?|uris?|endpoints?|hosts?|env|vars?"
        r"|fields?|headers?|length|len|count|size|type|version|ttl|expiry|expires|expiration"
        r"|age|days|policy|format|prefix|hash|digest|sha\d*|md5|rotation|enabled|required"
        r"|provider|source|store|manager|ref|arn|label|mode|helper|usage|limit|min|max|scope"
        r"|scopes)$"
    )


def _value(m: re.Match[str]) -> bool:
    return looks_generated(m.group("value"), minimum=4, digits_ok=True)


def _url_password(m: re.Match[str]) -> bool:
    password = m.group("value")
    if is_placeholder(password) or password.isdigit():  # `host:8080@` is a port
        return False
    return not (m.group("user").lower() in ("user", "username") and password.isalpha())


def _mixed_token(m: re.Match[str]) -> bool:
    value = m.group("value")
    has_digit = any(c.isdigit() for c in value)
    return has_digit and any(c.isalpha() for c in value) and not is_placeholder(value)


# A Sentry DSN, `https://<32 hex>@o1.ingest.sentry.io/42`: its key is public by design (it
# ships in every web page that reports errors); a DSN with a secret (`key:secret@`) is still
# a password in a URL.
_DSN_KEY = re.compile(r"[0-9a-f]{32}")
_DSN_REST = re.compile(r"[\w.-]+(?::\d+)?/(?:[\w.-]+/)*\d+(?![\w/.-])")


def _url_token(m: re.Match[str]) -> bool:
    if _DSN_KEY.fullmatch(m.group("value")) and _DSN_REST.match(m.string, m.end()):
        return False
    return _mixed_token(m)


def _b64_pair(m: re.Match[str]) -> bool:
    """A base64 `user:password` (HTTP Basic, a docker config's `auth`)."""
    text = _b64_text(m.group("value"))
    if text is None or ":" not in text:
        return False
    user, _, password = text.partition(":")
    return bool(user.strip()) and len(password) >= 3 and not is_placeholder(password)


_END = r"(?![A-Za-z0-9])"
_KEYWORDS = (
    r"pass(?:word|wd|phrase|code|(?![a-z]))|pwd|secret(?!ar)|token(?!i[sz])|api[-_.]?key|apikey"
    r"|access[-_.]?key|private[-_.]?key|auth[-_.]?key|client[-_.]?key|credentials?"
    r"|app[-_.]?key|master[-_.]?key|signing[-_.]?key|encryption[-_.]?key|session[-_.]?key"
    r"|account[-_.]?key|contrase[nñ]a"
)
_KEY_CHARS = re.compile(r"[A-Za-z0-9_.-]*$")
_ASSIGN = r"[\"'\]]{0,2}\s*(?::=|=>|=|:|\s+(?:is|was)\s+)\s*"
# The value is looked at, not taken, so that `db: password=…` still finds the second key.
_VALUE_AHEAD = r"(?=[\"'`]?(?P<value>[^\s\"'`,;<>()\[\]{}]+))"


def _starts_token(m: re.Match[str]) -> bool:
    """The match does not start inside a longer word (`_` counts as a separator: `\\b` does
    not, and missed `KEY_AKIA…`)."""
    at = m.start()
    return at == 0 or not m.string[at].isalnum() or not m.string[at - 1].isalnum()


def _token(m: re.Match[str]) -> bool:
    return _starts_token(m) and not is_placeholder(m.group(0))


def _assignment(m: re.Match[str]) -> bool:
    # `db_password`, `AWS_SECRET_ACCESS_KEY`, `"clientSecret"`, `--api-key`, `_authToken`:
    # the regex found the keyword; the key is the whole word around it.
    before = _KEY_CHARS.search(m.string, 0, m.start())
    key = (before.group(0) if before else "") + m.group("key")
    if _key_meta().search(key) and not re.search(r"(?i)(?:secret|password)[-_.]?(?:key)?$", key):
        return False
    passwordish = re.search(r"(?i)pass|pwd", key) is not None
    return looks_generated(m.group("value"), digits_ok=passwordish)


@functools.cache
def _compiled(rx: str) -> re.Pattern[str]:
    return re.compile(rx)


@dataclass(frozen=True, slots=True)
class Pattern:
    """One kind of credential: a regex, and `valid`, which must accept what it matched.

    The regex compiles on first use: a text holding none of a pattern's needles never needs it,
    and compiling all of them cost every writing process ~40 ms."""

    name: str
    rx: str
    valid: Callable[[re.Match[str]], bool] | None = None
    show: bool = True
    """Whether the match's first four characters may be shown (a fixed prefix or a key)."""
    needles: tuple[str, ...] = ()
    """Lower-case strings of which a text must hold one for the regex to be tried (speed)."""

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.rx)


def _p(
    name: str,
    rx: str,
    needles: tuple[str, ...] | str,
    valid: Callable[[re.Match[str]], bool] | None = _token,
    show: bool = True,
) -> Pattern:
    needles = (needles,) if isinstance(needles, str) else needles
    return Pattern(name, rx, valid, show, needles)


BUILTIN: tuple[Pattern, ...] = (
    _p(
        "private key block",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
        "private key",
        None,
    ),
    _p("PuTTY private key", r"PuTTY-User-Key-File-\d+:", "putty", None),
    _p("age secret key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", "age-secret"),
    _p(
        "AWS access key id",
        r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16}" + _END,
        ("akia", "asia", "abia", "acca", "a3t"),
    ),
    _p("Google API key", r"AIza[0-9A-Za-z_-]{35}", "aiza"),
    _p(
        "Google OAuth token or secret",
        r"(?:ya29\.[\w-]{20,}|GOCSPX-[\w-]{24,})",
        ("ya29.", "gocspx-"),
    ),
    _p("Firebase server key", r"AAAA[\w-]{7}:APA91b[\w-]{60,}", ":apa91b"),
    _p(
        "GitHub token",
        r"(?:gh[pousr]_[A-Za-z0-9_]{30,}|github_pat_[A-Za-z0-9_]{50,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _p(
        "GitLab token",
        r"(?:gl(?:pat|dt|rt|ptt|ft|cbt|oas|soat|imt|agent|ffct)-[\w-]{20,}|GR1348941[\w-]{20,})",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glcbt-", "gloas-", "glsoat-", "glimt-")
        + ("glagent-", "glffct-", "gr1348941"),
    ),
    _p(
        "Slack token",
        r"(?:xox[abposre]-|xoxe\.xox[bp]-|xapp-\d-)[A-Za-z0-9-]{10,}",
        ("xox", "xapp-"),
    ),
    _p(
        "Slack webhook URL",
        r"(?i)https://hooks\.slack\.com/(?:services|workflows)/[\w/-]{20,}",
        "hooks.slack.com",
    ),
    _p(
        "Stripe secret key",
        r"(?:[rs]k_live_[0-9A-Za-z]{16,}|whsec_[A-Za-z0-9]{24,})",
        ("k_live_", "whsec_"),
    ),
    _p("API secret key (sk-)", r"sk-(?:ant-|proj-|svcacct-|admin-)?[\w-]{32,}", "sk-"),
    _p("npm token", r"npm_[A-Za-z0-9]{36}" + _END, "npm_"),
    _p("PyPI token", r"pypi-AgE[\w-]{50,}", "pypi-"),
    _p("SendGrid key", r"SG\.[\w-]{22}\.[\w-]{43}", "sg."),
    _p("Mailgun key", r"key-[0-9a-f]{32}" + _END, "key-"),
    _p("Mailchimp key", r"[0-9a-f]{32}-us\d{1,2}" + _END, "-us", show=False),
    _p("Twilio API key", r"SK[0-9a-fA-F]{32}" + _END, "sk"),
    _p("Azure storage key", r"(?i)AccountKey=[A-Za-z0-9+/]{80,}={0,2}", "accountkey="),
    _p("Azure SAS signature", r"[?&;]sig=[A-Za-z0-9%+/=]{30,}", "sig="),
    _p("Azure client secret", r"[\w~.-]{3}\dQ~[\w~.-]{31,34}" + _END, "q~", show=False),
    _p(
        "Shopify token",
        r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _END,
        ("shpat_", "shpss_", "shpca_", "shppa_"),
    ),
    _p("DigitalOcean token", r"do[por]_v1_[a-f0-9]{64}", "_v1_"),
    _p("Databricks token", r"dapi[a-f0-9]{32}", "dapi"),
    _p("Linear API key", r"lin_api_[A-Za-z0-9]{40}", "lin_api_"),
    _p("Vault token", r"hv[sbr]\.[\w-]{24,}", ("hvs.", "hvb.", "hvr.")),
    _p(
        "Doppler token",
        r"dp\.(?:st|pt|ct|sa|scim|audit)\.(?:[\w-]{1,30}\.)?[A-Za-z0-9]{40,}",
        "dp.",
    ),
    _p("Postman key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", "pmak-"),
    _p(
        "Grafana token",
        r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[\w+/]{32,})",
        ("glsa_", "glc_"),
    ),
    _p("Telegram bot token", r"\d{8,10}:AA[\w-]{33}" + _END, ":aa", show=False),
    _p("Square token", r"sq0(?:csp|atp)-[\w-]{22,43}", "sq0"),
    _p("Alibaba key id", r"LTAI[A-Za-z0-9]{12,20}" + _END, "ltai"),
    _p(
        "Terraform Cloud token",
        r"[A-Za-z0-9]{14}\.atlasv1\.[\w=-]{60,}",
        ".atlasv1.",
        show=False,
    ),
    _p("Atlassian token", r"ATATT3[\w=-]{150,}", "atatt3"),
    _p(
        "JSON web token",
        r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        "eyj",
    ),
    _p(
        "authorization header",
        r"(?i)(?:authorization|bearer|x-auth-token)[\"']?\s*[:=]?\s*[\"']?"
        r"(?:bearer|token|ssws|bot|apikey|api-key)?\s+(?P<value>[\w.~+/-]{16,}=*)",
        ("authorization", "bearer", "x-auth-token"),
        _mixed_token,
    ),
    _p("basic auth", r"(?i)\bbasic\s+(?P<value>[A-Za-z0-9+/]{6,}={0,2})", "basic", _b64_pair),
    _p(
        "registry auth",
        r"(?i)[\"']auth[\"']\s*:\s*[\"'](?P<value>[A-Za-z0-9+/]{6,}={0,2})",
        ('auth"', "auth'"),
        _b64_pair,
    ),
    _p(
        "password in a URL",
        r"(?i)[a-z][a-z0-9+.-]*://(?P<user>[^/\s:@?#\"']*):(?P<value>[^/\s@?#\"']{3,})@",
        "://",
        _url_password,
    ),
    _p(
        "token in a URL",
        r"(?i)[a-z][a-z0-9+.-]*://(?P<value>[\w-]{30,})@",
        "://",
        _url_token,
    ),
    _p(
        "password on a command line",
        r"(?i)(?:(?:^|\s)(?:-u|--user)\s+[\"']?[^\s:\"']+:(?P<value>[^\s\"']+)"
        r"|\b(?:mysql\w*|sshpass|(?:docker|podman|helm\s+registry)\s+login)\b[^\n]*?"
        r"\s-p\s*[\"']?(?P<value2>[^\s\"'-][^\s\"']*))",
        ("-u", "--user", "mysql", "sshpass", "login"),
        lambda m: looks_generated(m.group("value") or m.group("value2"), minimum=4),
    ),
    _p(
        "password in .netrc",
        r"(?i)\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<value>\S+)",
        "machine",
        _value,
    ),
    _p(
        "password in SQL",
        r"(?i)(?:identified\s+by|password)\s+'(?P<value>[^'\s]{4,})'",
        ("identified", "password"),
        _value,
    ),
    _p(
        "password in code",
        r"(?i)\bauth\s*=\s*\(\s*[\"'][^\"']+[\"']\s*,\s*[\"'](?P<value>[^\"']{4,})[\"']\s*\)",
        "auth",
        _value,
    ),
    _p(
        "password in XML",
        r"(?i)<(?P<key>[\w:.-]*(?:password|secret|token|api[-_]?key)[\w:.-]*)>"
        r"(?P<value>[^<]{4,})</",
        "</",
        _value,
    ),
    _p(
        "password or secret assignment",
        r"(?i)(?P<key>(?:" + _KEYWORDS + r")[A-Za-z0-9_.-]*)" + _ASSIGN + _VALUE_AHEAD,
        ("pass", "pwd", "secret", "token", "key", "credential", "contrase"),
        _assignment,
    ),
)
"""The credentials memstore refuses by default, with its own patterns."""

PATTERNS: dict[str, str] = {p.name: p.rx for p in BUILTIN}
"""Name → regular expression of each of memstore's own patterns."""


@dataclass(frozen=True, slots=True)
class Finding:
    """Text in one field that looks like a credential; `excerpt` shows at most its start."""

    field: str
    pattern: str
    excerpt: str


@dataclass(frozen=True, slots=True)
class Patterns:
    """What a store scans with: the built-in patterns, detect-secrets, and its own `extra`."""

    extra: tuple[Pattern, ...] = ()
    builtin: tuple[Pattern, ...] = field(default=BUILTIN)


def compile_patterns(extra: Mapping[str, str] | None = None) -> Patterns:
    """The built-in patterns plus `extra` (name → regex), compiled.

    Raises:
        InvalidMemory: naming an extra pattern that is not a valid regular expression.
    """
    compiled: list[Pattern] = []
    for name, rx in (extra or {}).items():
        try:
            _compiled(rx)
            compiled.append(Pattern(name, rx))
        except re.error as e:
            raise InvalidMemory(
                f"secret pattern {name!r} is not a valid regular expression: {e}"
            ) from e
    return Patterns(tuple(compiled))


# -- the views of a text that are scanned -----------------------------------------------------

# A line break inside a token: `ghp_abc1\n    def2`, `"eyJ…" \\\n "…"`, a PEM-style fold. Only
# where a token-like run with a digit meets the break, so prose lines stay apart.
_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_+/=.~-")
_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{20,}={0,2}")
_B64_MAX_RUNS = 32


def _fold(text: str) -> str:
    """`text` with the line breaks inside tokens taken out (`ghp_abc1` at the end of one line,
    `def2` indented on the next; a string continued with a backslash; a PEM-style fold). Only
    where a token-like run of 8+ characters ends the line, a run of 4+ starts the next, and
    one of them holds a digit, so that prose lines stay apart."""
    lines = text.split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        last = out[-1]
        tail = last.rstrip(" \t\\\r")
        tail = tail[:-1] if tail[-1:] in ("'", '"') else tail
        head = line.lstrip(" \t")
        head = head[1:] if head[:1] in ("'", '"') else head
        before, after = _token_end(tail), _token_start(head)
        if len(before) >= 8 and len(after) >= 4 and _has_digit(before + after):
            out[-1] = tail + head
        else:
            out.append(line)
    return "\n".join(out)


def _token_end(text: str) -> str:
    n = len(text)
    start = n
    while start > 0 and n - start < 256 and text[start - 1] in _TOKEN_CHARS:
        start -= 1
    return text[start:]


def _token_start(text: str) -> str:
    end = 0
    while end < len(text) and end < 256 and text[end] in _TOKEN_CHARS:
        end += 1
    return text[:end]


def _has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


def _b64_text(run: str) -> str | None:
    """`run` decoded from (url-safe) base64 if it is mostly printable text, else None."""
    padded = run + "=" * (-len(run) % 4)
    try:
        data = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        text = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(1 for c in text if c.isprintable() or c in "\n\r\t")
    return text if text and printable >= 0.95 * len(text) else None


_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")


def _views(text: str) -> Iterator[str]:
    """`text`, then with tokens folded over lines joined, then URL-decoded (`ghp%5F…`,
    `token%3Dghp_…`), then any base64 in it decoded."""
    yield text
    folded = _fold(text) if "\n" in text else text
    if folded != text:
        yield folded
    if "%" in folded and _PERCENT.search(folded):
        decoded = urllib.parse.unquote(folded)
        if decoded != folded:
            yield decoded
            folded = decoded
    for n, m in enumerate(_B64_RUN.finditer(folded)):
        if n >= _B64_MAX_RUNS:
            break
        decoded = _b64_text(m.group(0))
        if decoded is not None and len(decoded) >= 8:
            yield decoded


# -- detect-secrets ---------------------------------------------------------------------------

# Its keyword plugin (our assignment pattern, with placeholder checks, replaces it), its
# entropy plugins (hashes, commit ids and base64 images are high-entropy too), public IPs
# (not secrets), and Artifactory's pattern (any capitalised word starting AP).
_SKIPPED_PLUGINS = frozenset(
    {
        "KeywordDetector",
        "Base64HighEntropyString",
        "HexHighEntropyString",
        "IPPublicDetector",
        "ArtifactoryDetector",
    }
)
# Lower-case strings of which a line must hold one for a plugin's regexes to be tried: each
# plugin's regexes cannot match without one (speed). A plugin not named here always runs.
_PLUGIN_NEEDLES: dict[str, tuple[str, ...]] = {
    "AWSKeyDetector": ("akia", "asia", "abia", "acca", "a3t", "aws"),
    "AzureStorageKeyDetector": ("accountkey",),
    "BasicAuthDetector": ("://",),
    "CloudantDetector": ("cloudant", "cl_", "cl-", "clkey", "clpw", "clpass", "cltoken", "clapi")
    + ("clou",),
    "GitHubTokenDetector": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "GitLabTokenDetector": ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941")
    + ("glcbt-", "glimt-", "glptt-", "glagent-", "gloas-"),
    "IbmCloudIamDetector": ("key", "pwd", "pass", "token"),
    "IbmCosHmacDetector": ("secret",),
    "JwtTokenDetector": ("eyj",),
    "MailchimpDetector": ("-us",),
    "NpmDetector": ("_authtoken",),
    "OpenAIDetector": ("t3blbkfj",),
    "PrivateKeyDetector": ("private key", "putty"),
    "PypiTokenDetector": ("pypi-",),
    "SendGridDetector": ("sg.",),
    "SlackDetector": ("xox", "hooks.slack.com"),
    "SoftlayerDetector": ("softlayer", "sl_", "sl-", "slkey", "slpw", "slpass", "sltoken")
    + ("slapi",),
    "SquareOAuthDetector": ("sq0csp-",),
    "StripeDetector": ("k_live_",),
    "HuggingFaceTokenDetector": ("hf_", "api_org_"),
    "DiscordWebhookDetector": ("discord",),
    "StripeTestKeyDetector": ("k_test_",),
}
# Plugins whose every match is a run of 24+ token characters: tried on such lines only.
_LONG_TOKEN_PLUGINS = frozenset(
    {"DiscordBotTokenDetector", "TelegramBotTokenDetector", "TwilioKeyDetector"}
)
_LONG_RUN = re.compile(r"[A-Za-z0-9_-]{24}")
_EVERY_PLUGIN_NEEDLE = frozenset(n for needles in _PLUGIN_NEEDLES.values() for n in needles)
"""Every plugin runs only on a line holding one of its needles, or (the rest) a long token."""
# The findings whose start is a fixed, public prefix, safe to show.
_PREFIXED = re.compile(r"[A-Za-z]{2,8}[_.-]|AKIA|ASIA|eyJ")


@dataclass(frozen=True, slots=True)
class _Plugin:
    name: str
    needles: tuple[str, ...]
    long_run: bool
    matches: Callable[[str], Iterator[re.Match[str]]]


_plugins: list[_Plugin] | None = None


def _detect_secrets() -> list[_Plugin]:
    """detect-secrets' regex plugins, imported once, on the first scan."""
    global _plugins
    if _plugins is None:
        import importlib
        import inspect
        import pkgutil

        with _verifying_later():
            from detect_secrets import plugins as package
            from detect_secrets.plugins.base import RegexBasedDetector

            classes: list[tuple[str, type[Any]]] = []
            modules = sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name)
            loaded = [importlib.import_module(f"{package.__name__}.{i.name}") for i in modules]
        for module in loaded:
            for name, cls in inspect.getmembers(module, inspect.isclass):
                if (
                    issubclass(cls, RegexBasedDetector)
                    and cls is not RegexBasedDetector
                    and cls.__module__ == module.__name__
                    and name not in _SKIPPED_PLUGINS
                ):
                    classes.append((name, cls))
        classes += [(cls.__name__, cls) for cls in _more_plugins(RegexBasedDetector)]
        found: list[_Plugin] = []
        for name, cls in classes:
            needles = _PLUGIN_NEEDLES.get(name, ())
            long_run = name in _LONG_TOKEN_PLUGINS
            found.append(_Plugin(str(cls.secret_type), needles, long_run, _plugin_scan(cls())))
        _plugins = found
    return _plugins


@contextmanager
def _verifying_later() -> Generator[None]:
    """While detect-secrets loads, `requests` (which its plugins import to verify a secret
    with its service, a call memstore never makes) is a module that loads the real one when
    first used: loading it and urllib3 was two thirds of loading detect-secrets, which every
    new server pays to check its identity before it serves (0.3 s)."""
    import sys
    import types

    name = "requests"
    if name in sys.modules:
        yield
        return

    loading = True

    class _Later(types.ModuleType):
        def __getattr__(self, attr: str) -> Any:
            import importlib

            if loading and attr[:1].isupper():
                # A type named while the plugins load: in two return annotations
                # (`-> requests.Response`), never used to verify anything.
                return type(attr, (), {"__module__": name})
            if sys.modules.get(name) is self:
                del sys.modules[name]
            return getattr(importlib.import_module(name), attr)

    stub = sys.modules[name] = _Later(name)
    try:
        yield
    finally:
        loading = False
        if sys.modules.get(name) is stub:
            del sys.modules[name]


def _more_plugins(base: type[Any]) -> list[type[Any]]:
    """Credential shapes detect-secrets 1.5 has no plugin for, written as its plugins are (a
    `RegexBasedDetector` with a `secret_type` and a `denylist`), so they run, and are
    checked for placeholders, exactly as its own do."""

    class HuggingFaceTokenDetector(base):
        secret_type = "Hugging Face Token"
        denylist = [re.compile(r"(?<![A-Za-z0-9_])(?:hf|api_org)_[A-Za-z0-9]{34}(?![A-Za-z0-9])")]

    class DiscordWebhookDetector(base):
        secret_type = "Discord Webhook"
        denylist = [
            re.compile(
                r"(?i)https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api(?:/v\d+)?/webhooks/"
                r"\d{17,20}/[\w-]{60,80}"
            )
        ]

    class StripeTestKeyDetector(base):
        secret_type = "Stripe Test Key"
        denylist = [re.compile(r"(?<![A-Za-z0-9])[rs]k_test_[0-9a-zA-Z]{24,}")]

    return [HuggingFaceTokenDetector, DiscordWebhookDetector, StripeTestKeyDetector]


def _plugin_scan(plugin: Any) -> Callable[[str], Iterator[re.Match[str]]]:
    """A plugin's matches in a line: whole matches, so that placeholders can be told and the
    findings lined up with ours; a plugin's own check on a match (a JWT's JSON) is kept."""
    from detect_secrets.plugins.base import RegexBasedDetector

    regexes: list[re.Pattern[str]] = list(plugin.denylist)
    base: object = RegexBasedDetector.__dict__["analyze_string"]
    checked = type(plugin).__dict__.get("analyze_string", base) is not base

    def matches(line: str) -> Iterator[re.Match[str]]:
        for rx in regexes:
            for m in rx.finditer(line):
                if not checked or any(True for _ in plugin.analyze_string(m.group(0))):
                    yield m

    return matches


def _plugin_findings(
    view: str, spans: list[tuple[int, int]], found: dict[str, str], present: set[str]
) -> None:
    """Add to `found` what detect-secrets' plugins find in `view` that `spans` (ours) miss.

    The plugins are line-based, as detect-secrets runs them; a line is given to a plugin
    only if it holds one of the plugin's needles.
    """
    long_run = _LONG_RUN.search(view) is not None
    if not long_run and present.isdisjoint(_EVERY_PLUGIN_NEEDLE):
        return  # no plugin could match: detect-secrets is not even imported (CLI start-up)
    lines: list[tuple[int, str, str]] | None = None
    for plugin in _detect_secrets():
        if plugin.needles and present.isdisjoint(plugin.needles):
            continue
        if plugin.long_run and not long_run:
            continue
        if lines is None:
            lines, at = [], 0
            for line in view.split("\n"):
                lines.append((at, line, line.lower()))
                at += len(line) + 1
        for at, line, line_low in lines:
            if plugin.needles and not any(n in line_low for n in plugin.needles):
                continue
            if plugin.long_run and not _LONG_RUN.search(line):
                continue
            if _plugin_found(plugin, line, [(s - at, e - at) for s, e in spans], found):
                break


def _plugin_found(
    plugin: _Plugin, line: str, spans: list[tuple[int, int]], found: dict[str, str]
) -> bool:
    for m in plugin.matches(line):
        start, end, value = m.start(), m.end(), m.group(0).strip()
        secret = next((g for g in reversed(m.groups()) if g), value)  # its group
        overlaps = any(start < e and s < end for s, e in spans)
        if not overlaps and not is_placeholder(value) and not is_placeholder(secret):
            found.setdefault(plugin.name, value[:4] if _PREFIXED.match(value) else "")
            return True
    return False


# -- scanning ---------------------------------------------------------------------------------


_needles: list[str] | None = None


def _present(low: str) -> set[str]:
    """The needles of the built-in patterns and of detect-secrets' plugins that `low` holds."""
    global _needles
    if _needles is None:
        _needles = sorted({*(n for p in BUILTIN for n in p.needles), *_EVERY_PLUGIN_NEEDLE})
    # One `in` per needle: about 3x faster than one pass of a regex of them all, on short
    # texts and long ones alike, and nothing to compile (that regex cost each process 4 ms).
    return {n for n in _needles if n in low}


_orders: dict[int, tuple[Patterns, tuple[Pattern, ...], tuple[Pattern, ...]]] = {}


def _in_order(patterns: Patterns) -> tuple[tuple[Pattern, ...], tuple[Pattern, ...]]:
    """A store's patterns in the order they are tried, and those of them with no needles
    (tried on every text): most texts hold no needle at all, and then only these run. Kept
    by the object's identity (hashing the patterns would cost what this saves)."""
    kept = _orders.get(id(patterns))
    if kept is not None and kept[0] is patterns:
        return kept[1], kept[2]
    ordered = (*patterns.builtin, *patterns.extra)
    free = tuple(p for p in ordered if not p.needles)
    if len(_orders) > 64:
        _orders.clear()
    _orders[id(patterns)] = (patterns, ordered, free)  # held, so its id is not reused
    return ordered, free


def _own(patterns: Patterns, view: str, present: set[str]) -> Iterator[tuple[str, int, int, str]]:
    ordered, free = _in_order(patterns)
    for p in ordered if present else free:
        if p.needles and present.isdisjoint(p.needles):
            continue
        for m in p.regex.finditer(view):
            if p.valid is None or p.valid(m):
                yield p.name, m.start(), m.end(), m.group(0)[:4] if p.show else ""
                break


def _allowed_out(text: str) -> str:
    """`text` with the lines detect-secrets' allow-list comments mark left out: a line ending
    `# pragma: allowlist secret` (or `//`, `/* */`, `--`, `<!-- -->`), and the line after a
    line that is only `# pragma: allowlist nextline secret`."""
    from detect_secrets.filters.allowlist import is_line_allowlisted
    from detect_secrets.util.code_snippet import CodeSnippet

    lines = text.split("\n")
    kept = [
        "" if is_line_allowlisted("", line, CodeSnippet(lines, 0, i)) else line
        for i, line in enumerate(lines)
    ]
    return "\n".join(kept)


def _scan_text(
    text: str, patterns: Patterns, among: set[str] | None = None
) -> list[tuple[str, str]]:
    """(pattern, excerpt) for each kind of credential in `text`; `among`: needles that
    include every one `text` holds as written (see `scan`)."""
    found: dict[str, str] = {}
    written = text
    if "pragma" in text and "allowlist" in text:
        text = _allowed_out(text)
    for view in _views(text):
        low = view.lower()
        present = (
            {n for n in among if n in low}
            if among is not None and view is written
            else (_present(low))
        )
        spans: list[tuple[int, int]] = []
        for name, start, end, excerpt in _own(patterns, view, present):
            spans.append((start, end))
            found.setdefault(name, excerpt)
        _plugin_findings(view, spans, found, present)
    return list(found.items())


def scan(
    fields: Mapping[str, str | Iterable[str] | None], patterns: Patterns | None = None
) -> list[Finding]:
    """Every credential-like string in `fields` (name → text or list of texts), in field order."""
    patterns = patterns if patterns is not None else Patterns()
    findings: list[Finding] = []
    # A list (tags) is scanned as one text, its items kept apart by a blank line.
    texts = [(n, v if isinstance(v, str) else "\n\n".join(v or ())) for n, v in fields.items()]
    texts = [(n, t) for n, t in texts if t]
    # The needles all the fields hold, looked for once: each field's are among these few (its
    # text is a part of theirs), so a field is not searched for every needle in turn.
    among = _present("\n".join(t for _, t in texts).lower()) if len(texts) > 1 else None
    for name, text in texts:
        for pattern, excerpt in _scan_text(text, patterns, among):
            findings.append(Finding(name, pattern, excerpt))
    return findings


# Set by memstore itself, never free text: a type, a status, times.
_MEMORY_FIXED = frozenset({"type", "status", "created", "updated", "extra"})


def memory_fields(memory: Memory) -> dict[str, list[str]]:
    """Every text a memory file holds, by front-matter key: description, body, tags, the
    trail (reasons, who, successors) and each extra field, as lint scans them."""
    found: dict[str, list[str]] = {}
    for f in dataclasses.fields(memory):
        if f.name not in _MEMORY_FIXED and not f.name.endswith("_at"):
            found[f.name] = texts_of(getattr(memory, f.name))
    for key, value in memory.extra.items():
        found[key] = texts_of(value)
    return found


def texts_of(value: object) -> list[str]:
    """The text in a front-matter or JSON value: a string, or the strings in a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in cast("Iterable[object]", value) if isinstance(v, str)]
    return []


def describe(finding: Finding) -> str:
    """`pattern: 'ghp_…'`, or the pattern alone when its start is not safe to show."""
    if not finding.excerpt:
        return finding.pattern
    return f"{finding.pattern}: '{finding.excerpt}…'"


MEMORIES_SHARED = "memories are committed to git and shared"
LEDGER_PERMANENT = "the ledger is committed to git and append-only, so nothing in it can be removed"


def refuse(
    fields: Mapping[str, str | Iterable[str] | None],
    patterns: Patterns | None = None,
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
            f"{first.field} looks like it holds a credential ({describe(first)}){more}; "
            f"{because}: remove it",
            tuple((f.field, f.pattern) for f in findings),
        )
