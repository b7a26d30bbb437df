"""What a project already knows, read into candidate memories: instruction files (CLAUDE.md,
AGENTS.md, `.cursorrules`), architecture decision records (MADR and Nygard), and the text of a
session (a summary or a transcript excerpt). Pure functions: nothing here opens a store."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

import yaml

from memstore.model.fields import BODY_MAX, DESCRIPTION_MAX, NAME_RE, RESERVED_NAMES
from memstore.workflow.rules.rules import APPLIES_WHEN_MAX, PATTERN_MAX, words

INSTRUCTION_FILES = (
    "CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
    "GEMINI.md",
    ".cursorrules",
    ".windsurfrules",
    ".clinerules",
    "copilot-instructions.md",
)
"""File names read as agent instruction files, wherever they are in a folder."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory to propose: a draft nobody has reviewed yet."""

    name: str
    type: str
    description: str
    body: str = ""
    tags: tuple[str, ...] = ()
    applies_when: tuple[str, ...] = ()
    """For a correction: the wording of its imperative line, as patterns `check` matches."""
    source: str = ""
    """Where it was found, e.g. `CLAUDE.md:12`."""
    extra: tuple[tuple[str, str], ...] = ()
    """Other front-matter fields to keep (an ADR's own status and date)."""
    links: tuple[str, ...] = ()
    """Names of other candidates of the same import it links to (renamed with them on save)."""
    origin: str = ""
    """How the source's item became this draft, for `import --dry-run` (e.g. `entity "Ada"
    (person → fact)`)."""


# -- names ----------------------------------------------------------------------------------


def slug(text: str, limit: int = 56) -> str:
    """A memory name made from `text`: lower-case ASCII words joined by '-', cut at a word."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    ascii_text = re.sub(r"(?<=\w)'(?=\w)", "", ascii_text)  # don't → dont
    parts = re.findall(r"[a-z0-9]+", ascii_text.lower())
    name = ""
    for part in parts:
        longer = f"{name}-{part}" if name else part
        if len(longer) > limit:
            break
        name = longer
    name = name or (parts[0][:limit] if parts else "")
    if not name or not NAME_RE.fullmatch(name) or name in RESERVED_NAMES:
        name = f"note-{name}".strip("-")[:limit] if name else "note"
    return name


SHORT_WORDS = 5
"""The most words in a name made from a session's sentence (`short_name`)."""

# Words a short name leaves out: function words, and the cues that only say what kind of
# memory it is (its type says that). Negations and `always` stay: they are the rule's point.
_NAME_STOP = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each else ever few
    for from further get gets got had has have having he her here hers herself him himself his
    how i if in into is it its itself just let me might more most my myself nor now of off on
    once or other ought our ours ourselves out over own same shall she should so some such than
    that the their theirs them themselves then there these they this those through to too under
    until up very was we were what whatever when where whether which while who whom whose why
    will with would yet you your yours yourself yourselves please also really actually okay ok
    decided decision agreed settled chose chosen going switched from now on correction
    remember make sure ensure must
    """.split()
)
_NAME_WORDS: dict[str, str] = {"don": "dont", "doesnt": "dont", "cant": "cannot"}


def short_name(text: str, limit: int = SHORT_WORDS) -> str:
    """A memory name of at most `limit` words that says what `text` (a sentence) is about: its
    content words in order, lower-case ASCII joined by '-' (function words and cue words such
    as "we decided" left out; never, always and don't kept)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    ascii_text = re.sub(r"(?<=\w)['\u2019](?=\w)", "", ascii_text)  # don't → dont
    parts: list[str] = [
        _NAME_WORDS.get(p) or p for p in re.findall(r"[a-z0-9]+", ascii_text.lower())
    ]
    kept = [p for p in parts if p not in _NAME_STOP and (len(p) > 1 or p.isdigit())]
    return slug(" ".join(list(dict.fromkeys(kept))[:limit] or parts[:limit]), 64)


def _key(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def key(text: str) -> tuple[str, frozenset[str]]:
    """What `duplicate` compares of a text: its words, and its stemmed words."""
    return _key(text), frozenset(words(text))


def duplicate(
    a: tuple[str, frozenset[str]],
    b: tuple[str, frozenset[str]],
    loose: bool,
    threshold: float = 0.8,
) -> bool:
    """Whether two texts (as `key` gives them) say the same, ignoring case, spacing and
    punctuation; with `loose`, whether they share most of their stemmed words (Jaccard at least
    `threshold`)."""
    if a[0] == b[0]:
        return True
    if not loose or not a[1] or not b[1]:
        return False
    return len(a[1] & b[1]) / len(a[1] | b[1]) >= threshold


KINDS = (
    ("decision", ("decision", "decisions", "adr", "choice")),
    ("runbook", ("runbook", "howto", "procedure", "playbook", "guide", "workflow", "steps")),
    ("postmortem", ("postmortem", "retro", "retrospective")),
    ("incident", ("incident", "outage", "bug", "issue", "failure", "error")),
    ("pattern", ("pattern", "convention", "practice", "preference", "style", "idiom")),
    ("reference", ("reference", "link", "doc", "docs", "resource", "url", "bookmark")),
)
"""Words of another tool's type or category, and the memstore type each suggests."""


def kind_of(label: str, default: str = "fact") -> str:
    """The memstore type another tool's type or category (`Decision`, `how-to`, `person`)
    suggests: the first of `KINDS` one of its words names, else `default`. Never a rule type:
    a rule is only made from wording that reads as one."""
    found = set(re.findall(r"[a-z0-9]+", label.lower().replace("how-to", "howto")))
    for kind, cues in KINDS:
        if found & set(cues):
            return kind
    return default


# -- lines of Markdown ------------------------------------------------------------------------

_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(?P<text>\S.*)$")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(?P<text>.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")

# An imperative line: a prohibition or a requirement, kept as a correction.
_PROHIBIT = re.compile(
    r"^(?:(?:you|we|agents?|claude)\s+)?(?:never|don'?t|do\s+not|must\s+not|mustn'?t|"
    r"should\s+not|shouldn'?t|cannot|can'?t|avoid|stop|no\s+longer|under\s+no\s+circumstances)\b",
    re.IGNORECASE,
)
_REQUIRE = re.compile(
    r"^(?:(?:you|we|agents?|claude)\s+)?(?:always|must|make\s+sure|ensure|only|"
    r"important:?|note:?)\b",
    re.IGNORECASE,
)
# Leading words an imperative drops when its wording becomes a pattern.
_LEAD = re.compile(
    r"^(?:(?:you|we|agents?|claude)\s+)?(?:never\s+ever|never|always|don'?t\s+ever|don'?t|"
    r"do\s+not|must\s+not|mustn'?t|must|should\s+not|shouldn'?t|cannot|can'?t|avoid|stop|"
    r"no\s+longer|under\s+no\s+circumstances|make\s+sure\s+(?:to|that|you)?|ensure\s+(?:that)?|"
    r"only|important:?|note:?)\s*[:,-]?\s*",
    re.IGNORECASE,
)


def plain_line(text: str) -> str:
    """Markdown emphasis and links taken out of one line, spacing collapsed."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])[*_]([^*_]+)[*_](?![\w*])", r"\1", text)
    return " ".join(text.split())


def is_imperative(line: str) -> bool:
    """Whether a line, or one of its clauses, reads as a rule: never, always, don't, must
    (not), avoid…"""
    return _imperative_clause(line) is not None


def _imperative_clause(line: str) -> str | None:
    """The first clause of `line` (split at `;`, `:` and `, `) that is an imperative."""
    bare = plain_line(line).replace("`", "")
    for clause in [bare, *re.split(r"[;:]\s+|,\s+", bare)[1:]]:
        clause = clause.strip()
        if _PROHIBIT.match(clause) or _REQUIRE.match(clause):
            return clause
    return None


def patterns_of(line: str) -> tuple[str, ...]:
    """`applies_when` candidates from an imperative line: its code spans (`npm publish`),
    then its wording without the leading never/always/don't."""
    found: list[str] = []
    clause = _imperative_clause(line) or plain_line(line).replace("`", "")
    for span in _CODE_SPAN.findall(line):
        span = span.strip()
        # One bare word (`main`, `print`) would match far more than the rule means.
        if (
            words(span)
            and len(span) <= PATTERN_MAX
            and any(c in span for c in " /.")
            and span in clause
        ):
            found.append(span)
    wording = clause
    for _ in range(3):
        wording = _LEAD.sub("", wording, count=1)
    wording = re.split(r"[.;:(]\s|\s[—–-]\s|,\s(?:because|since|as|unless|use|instead)\b", wording)[
        0
    ]
    wording = wording.strip(" .;:,!")
    if wording and words(wording) and len(wording) <= PATTERN_MAX:
        found.append(wording)
    return tuple(dict.fromkeys(found))[:APPLIES_WHEN_MAX]


def describe(text: str) -> str:
    """One line of at most DESCRIPTION_MAX characters, cut at a word with '…'."""
    line = " ".join(text.split())
    if len(line) <= DESCRIPTION_MAX:
        return line
    return line[: DESCRIPTION_MAX - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


def unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        taken.add(name)
        return name
    for n in range(2, 1000):
        suffix = f"-{n}"
        other = f"{name[: 64 - len(suffix)]}{suffix}"
        if other not in taken:
            taken.add(other)
            return other
    raise ValueError(f"too many memories named like {name!r}")  # a thousand same lines


# -- instruction files ------------------------------------------------------------------------


def rule_lines(text: str) -> list[tuple[int, str, str]]:
    """The rule lines of an instruction file: (line number, section heading, the rule's text).

    A rule line is a list item, or a paragraph line that reads as an imperative, outside code
    blocks, front matter and HTML comments. A list item's continuation lines join it.
    """
    found: list[tuple[int, str, str]] = []
    lines = text.splitlines()
    heading = ""
    in_code = False
    in_comment = False
    start = 0
    if lines and lines[0].strip() == "---":  # front matter (`.mdc` rule files have it)
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        start = 0 if end is None else end + 1
    current: list[Any] | None = None  # [line number, heading, text] of the item being read
    for number, raw in enumerate(lines[start:], start=start + 1):
        if _FENCE.match(raw):
            in_code = not in_code
            current = None
            continue
        if in_code:
            continue
        if in_comment or raw.strip().startswith("<!--"):
            in_comment = "-->" not in raw
            current = None
            continue
        if m := _HEADING.match(raw):
            heading = plain_line(m.group("text"))
            current = None
            continue
        stripped = raw.strip()
        if not stripped or stripped.startswith(("|", ">", "<")) or set(stripped) <= set("-=*_"):
            current = None
            continue
        if m := _LIST_ITEM.match(raw):
            current = [number, heading, m.group("text").strip()]
            found.append((number, heading, current[2]))
            continue
        if current is not None and raw.startswith((" ", "\t")):  # the item goes on
            current[2] = f"{current[2]} {stripped}"
            found[-1] = (current[0], current[1], current[2])
            continue
        current = None
        for sentence in _sentences(stripped):
            if is_imperative(sentence):
                found.append((number, heading, sentence))
    return [(n, h, t) for n, h, t in found if words(plain_line(t))]


def _sentences(line: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`*])", line) if s.strip()]


def instruction_candidates(text: str, source: str, taken: set[str]) -> list[Candidate]:
    """A draft for every rule line of an instruction file: a correction when the line is an
    imperative (never, always, don't, must), else a decision. `taken` holds the names already
    used (it is extended)."""
    out: list[Candidate] = []
    for number, heading, line in rule_lines(text):
        plain = plain_line(line)
        imperative = is_imperative(line)
        section = f", section “{heading}”" if heading else ""
        body = f"{plain}\n\nImported from `{source}` (line {number}{section})."
        tags = ("imported", *(t for t in [slug(heading, 32)] if heading and t != "note"))
        out.append(
            Candidate(
                name=unique(slug(plain), taken),
                type="correction" if imperative else "decision",
                description=describe(plain),
                body=body,
                tags=tags,
                applies_when=patterns_of(line) if imperative else (),
                source=f"{source}:{number}",
            )
        )
    return out


# -- architecture decision records ------------------------------------------------------------

_ADR_STEM = re.compile(r"^(?:adr[-_]?)?(\d{1,5})[-_. ]+(.*)$", re.IGNORECASE)
_SECTION = re.compile(r"^#{2,3}\s+(.*?)\s*$", re.MULTILINE)


def is_adr(text: str) -> bool:
    """Whether a Markdown file reads as an architecture decision record (Nygard's
    Status/Context/Decision sections, or MADR's Decision Outcome)."""
    sections = {s.lower() for s in _SECTION.findall(text)}
    if "decision outcome" in sections:
        return True
    return "decision" in sections and bool(sections & {"context", "status", "consequences"})


def front_matter(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---", 4)
    if end < 0:
        return {}, text
    try:
        data: Any = yaml.safe_load(text[4:end])
    except yaml.YAMLError:
        return {}, text
    rest = text[end + 4 :].lstrip("\n")
    return (data if isinstance(data, dict) else {}), rest  # pyright: ignore[reportUnknownVariableType]


def _section(text: str, *titles: str) -> str:
    """The text under the first `##`/`###` heading named one of `titles` (case-insensitive)."""
    wanted = {t.lower() for t in titles}
    heads = list(_SECTION.finditer(text))
    for i, m in enumerate(heads):
        if m.group(1).lower() in wanted:
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            return text[m.end() : end].strip()
    return ""


def adr_candidate(text: str, stem: str, source: str, taken: set[str]) -> Candidate:
    """A draft decision from an ADR: its title, its status and date as the ADR states them,
    the chosen option, and the whole record as the body."""
    meta, rest = front_matter(text)
    title_match = re.search(r"^#\s+(.+?)\s*$", rest, re.MULTILINE)
    title = plain_line(title_match.group(1)) if title_match else stem
    title = re.sub(r"^(?:ADR[-\s]?)?\d{1,5}[.:]?\s+", "", title, flags=re.IGNORECASE)
    status = str(meta.get("status") or "").strip()
    if not status:
        block = _section(rest, "status")
        status = block.splitlines()[0].strip() if block else ""
        if not status:
            bullet = re.search(r"^\s*[-*]\s*Status:\s*(.+)$", rest, re.MULTILINE | re.IGNORECASE)
            status = bullet.group(1).strip() if bullet else ""
    date = str(meta.get("date") or "").strip()
    if not date:
        found = re.search(r"^\s*(?:[-*]\s*)?Date:\s*(\S+)", rest, re.MULTILINE | re.IGNORECASE)
        date = found.group(1) if found else ""
    outcome = _section(rest, "decision outcome", "decision")
    chosen = re.search(r"Chosen option:\s*\"?([^\",\n]+)", outcome)
    summary = chosen.group(1).strip() if chosen else _first_sentence(outcome)
    description = describe(f"{title}: {summary}" if summary and summary != title else title)
    number = _ADR_STEM.match(stem)
    base = f"adr-{number.group(1)}-{slug(number.group(2), 40)}" if number else f"adr-{slug(stem)}"
    extra = tuple(
        (k, v) for k, v in (("adr_status", plain_line(status).lower()), ("adr_date", date)) if v
    )
    body = rest.strip()
    if len(body) > BODY_MAX - 200:
        body = body[: BODY_MAX - 200].rsplit("\n", 1)[0] + "\n\n[…]"
    return Candidate(
        name=unique(slug(base, 64), taken),
        type="decision",
        description=description,
        body=f"{body}\n\nImported from `{source}`.",
        tags=("adr", "imported"),
        source=source,
        extra=extra,
    )


def _first_sentence(text: str) -> str:
    for line in text.splitlines():
        line = plain_line(line.strip().lstrip("-*").strip())
        if line and not line.startswith("#"):
            return re.split(r"(?<=[.!?])\s", line)[0].rstrip(".")
    return ""


# -- a session's text -------------------------------------------------------------------------

_DECISION = re.compile(
    r"\b(?:we\s+)?(?:decided|decision:|agreed|settled\s+on|chose|chosen|going\s+with|"
    r"switched\s+to|we\s+will\s+use|we'll\s+use|from\s+now\s+on)\b",
    re.IGNORECASE,
)
_FAILURE = re.compile(
    r"\b(?:failed|fails|failing|broke|broken|crash(?:ed|es)?|error|regression|outage|"
    r"root\s+cause|flaky)\b",
    re.IGNORECASE,
)
_FIX = re.compile(
    r"\b(?:fixed|fix(?:ed)?\s+(?:by|with|it)|the\s+fix|resolved\s+by|solution|workaround|"
    r"worked\s+around)\b",
    re.IGNORECASE,
)
_CORRECTION_CUE = re.compile(
    r"^(?:no[,.!]|nope|wrong|actually|stop|that's\s+(?:wrong|not)|correction:)\s*",
    re.IGNORECASE,
)
_CORRECTION_LABEL = re.compile(
    r"^(?:corrections?|decisions?|fix(?:es)?|failures?|lessons?|learned)\s*:\s*", re.IGNORECASE
)


def session_candidates(text: str, taken: set[str]) -> list[Candidate]:
    """Drafts proposed from what a session did: corrections (imperative lines, a human's
    "no, don't…"), decisions ("we decided…"), and failures with their fixes, one per sentence
    or list item."""
    out: list[Candidate] = []
    seen: set[str] = set()
    for number, _, item in _session_items(text):
        plain = plain_line(item)
        label = _CORRECTION_LABEL.match(plain)
        said = _CORRECTION_CUE.sub("", plain)
        if label and label.group(0).lower().startswith("correction"):
            kind = "correction"
        elif is_imperative(said):
            kind = "correction"
        elif _DECISION.search(plain) or (label and label.group(0).lower().startswith("decision")):
            kind = "decision"
        elif _FAILURE.search(plain) and _FIX.search(plain):
            kind = "incident"
        elif label and label.group(0).lower().startswith(("fix", "failure", "lesson", "learned")):
            kind = "incident"
        else:
            continue
        line = _CORRECTION_LABEL.sub("", said) if kind == "correction" else plain
        line = _CORRECTION_LABEL.sub("", line).strip()
        if not words(line) or _key(line) in seen:
            continue
        seen.add(_key(line))
        out.append(
            Candidate(
                name=unique(short_name(line), taken),
                type=kind,
                description=describe(line),
                body=f"{line}\n\nProposed at the end of a session (line {number} of its text).",
                tags=("session",),
                applies_when=patterns_of(line) if kind == "correction" else (),
                source=f"session:{number}",
            )
        )
    return out


def _session_items(text: str) -> list[tuple[int, str, str]]:
    """Every list item and every sentence of a session's text, with its line number."""
    items: list[tuple[int, str, str]] = []
    in_code = False
    for number, raw in enumerate(text.splitlines(), start=1):
        if _FENCE.match(raw):
            in_code = not in_code
            continue
        if in_code or not raw.strip() or _HEADING.match(raw):
            continue
        m = _LIST_ITEM.match(raw)
        if m:
            items.append((number, "", m.group("text").strip()))
            continue
        items.extend((number, "", s) for s in _sentences(raw.strip()) if len(s) < 600)
    return items
