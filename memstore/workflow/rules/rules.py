"""Corrections and warnings as rules: their front-matter fields, matching, and check verdicts.

A rule is a `correction` or `warning` memory that is not deprecated. It acts from the moment it
is recorded and shows its status wherever it appears. It binds (a p0 blocks) when it is
confirmed or its owner is one of the store's humans; an agent's draft only warns until another
identity confirms it, so no agent can stop every `check` on its own say-so. Nor can an agent
lift, alone, a rule that binds it (a person's, or a confirmed p0): see `storage.binding`.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from memstore.errors import InvalidMemory
from memstore.limits import DEFAULT_SEVERITY, SEVERITIES
from memstore.model.fields import type_name
from memstore.model.identity import same_identity
from memstore.model.memory import RULE_TYPES as RULE_TYPES
from memstore.model.memory import Memory
from memstore.model.render_text import Bullet, Fence, fence_for, kind, proposal, rule_status
from memstore.model.status import Status
from memstore.workflow.ledger import claims
from memstore.workflow.rules import concepts, guards, intent

RULE_KEYS = ("severity", "applies_when", "evidence")
"""The rule fields, kept in `Memory.extra` and written in this order."""

APPLIES_WHEN_MAX = 32
PATTERN_MAX = 200
EVIDENCE_MAX = 2000
GLOB_CHARS = frozenset("*?[")


class Verdict(StrEnum):
    """What `check` says about an action: go ahead, go ahead carefully, or stop."""

    ALLOW = "allow"
    WARN = "warn"
    BLOCK = "block"


@dataclass(frozen=True, slots=True)
class Rule:
    """A correction or warning that applies when one of its patterns matches an action."""

    name: str
    type: str
    status: str
    severity: str
    applies_when: tuple[str, ...]
    description: str
    evidence: str | None = None
    owner: str = ""
    binding: bool = False
    """Confirmed, or made by one of the store's humans: a p0 blocks. Otherwise it only warns."""
    proposal: str = ""
    """The deprecation an agent proposed and nobody agreed to yet, in memstore's words."""
    held: str | None = None
    """Why this version is the one in force though its file says otherwise (a change an agent
    made alone to a rule that binds it: see `storage.binding`), or None."""

    @property
    def rank(self) -> tuple[int, int, int, str]:
        """Sort key: most severe first, then binding before not, confirmed before draft, name."""
        return (
            SEVERITIES.index(self.severity),
            0 if self.binding else 1,
            0 if self.status == "confirmed" else 1,
            self.name,
        )

    @property
    def shown_status(self) -> str:
        """The rule's status and strength in memstore's words."""
        return rule_status(self.status, self.binding)


@dataclass(frozen=True, slots=True)
class Reason:
    """One reason behind a verdict: a matching rule, a ledger record, or a runbook to follow."""

    kind: str
    """`correction`, `warning`, `guard` (built in), `ledger` or `runbook`."""
    name: str
    verdict: Verdict
    message: str
    severity: str | None = None
    status: str | None = None
    matched: str | None = None
    """The `applies_when` pattern that matched, for a rule."""
    binding: bool | None = None
    """For a rule: whether it binds (see `Rule.binding`); a p0 that does not only warns."""

    @property
    def shown_status(self) -> str:
        """A rule's status and strength in memstore's words ('' for other reasons)."""
        if self.binding is None or self.status is None:
            return ""
        return rule_status(self.status, self.binding)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The verdict on an action and every reason behind it, most severe first."""

    verdict: Verdict
    action: str
    reasons: tuple[Reason, ...] = ()
    runbooks: tuple[Reason, ...] = field(default=())


# -- validating the fields ------------------------------------------------------------------


def check_severity(value: object) -> str:
    """Return `value` if it is a severity p0–p3.

    Raises:
        InvalidMemory: naming the value and the allowed ones.
    """
    if not isinstance(value, str) or value.strip().lower() not in SEVERITIES:
        raise InvalidMemory(f"invalid severity {value!r}; severities are: {', '.join(SEVERITIES)}")
    return value.strip().lower()


def check_applies_when(value: object) -> tuple[str, ...]:
    """Return `applies_when` as a tuple of one-line patterns (keywords, phrases or globs).

    Raises:
        InvalidMemory: naming the first bad pattern.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        raise InvalidMemory(
            f"applies_when must be a list of patterns, got {type_name(value)}"  # pyright: ignore[reportUnknownArgumentType]
        )
    items: list[Any] = list(value)  # pyright: ignore[reportUnknownArgumentType]
    if len(items) > APPLIES_WHEN_MAX:
        raise InvalidMemory(
            f"{len(items)} applies_when patterns given; at most {APPLIES_WHEN_MAX} are allowed"
        )
    out: list[str] = []
    for item in items:
        if not isinstance(item, str) or not item.strip() or "\n" in item or "\r" in item:
            raise InvalidMemory(
                f"invalid applies_when pattern {item!r}: use one non-empty line of keywords, "
                "a phrase, or a glob such as 'migrations/*.sql'"
            )
        item = item.strip()
        if len(item) > PATTERN_MAX:
            raise InvalidMemory(
                f"applies_when pattern is {len(item)} characters; the limit is {PATTERN_MAX}"
            )
        if not words(item) and not is_glob(item):
            raise InvalidMemory(f"applies_when pattern {item!r} has no words to match on")
        if item not in out:
            out.append(item)
    return tuple(out)


def check_evidence(value: object) -> str | None:
    """Return the evidence (what the human said), or None when empty.

    Raises:
        InvalidMemory: for a non-string or over-long value.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidMemory(f"evidence must be text, got {type_name(value)}")
    value = value.replace("\r\n", "\n").strip()
    if len(value) > EVIDENCE_MAX:
        raise InvalidMemory(
            f"evidence is {len(value)} characters; the limit is {EVIDENCE_MAX} (quote what was "
            "said, link to the rest)"
        )
    return value or None


def rule_fields(
    severity: str, applies_when: list[str] | tuple[str, ...], evidence: str | None
) -> dict[str, Any]:
    """The front-matter fields of a rule, validated, in canonical order (empty ones left out).

    Raises:
        InvalidMemory: naming the first bad field.
    """
    fields: dict[str, Any] = {"severity": check_severity(severity)}
    patterns = check_applies_when(list(applies_when))
    if patterns:
        fields["applies_when"] = list(patterns)
    checked = check_evidence(evidence)
    if checked is not None:
        fields["evidence"] = checked
    return fields


def rule_problems(memory: Memory) -> list[str]:
    """What is wrong with a memory's rule fields (for `lint`); empty for non-rule memories."""
    problems: list[str] = []
    present = [k for k in RULE_KEYS if k in memory.extra]
    if memory.type not in RULE_TYPES:
        if "severity" in present or "applies_when" in present:
            problems.append(
                f"severity/applies_when only act on {' or '.join(RULE_TYPES)} memories, not on "
                f"a {memory.type}"
            )
        return problems
    for key, check in (
        ("severity", check_severity),
        ("applies_when", check_applies_when),
        ("evidence", check_evidence),
    ):
        if key in memory.extra:
            try:
                check(memory.extra[key])
            except InvalidMemory as e:
                problems.append(str(e))
    return problems


def binds(memory: Memory, humans: tuple[str, ...] = ()) -> bool:
    """Whether a rule memory binds: it is confirmed, or a draft whose owner is one of `humans`
    (an unverified one never binds: its history does not back its status or owner)."""
    return binds_shown(memory.status, memory.owner, humans)


def binds_shown(status: str, owner: str, humans: tuple[str, ...] = ()) -> bool:
    """`binds` for a rule shown with `status` and `owner`."""
    if status == Status.CONFIRMED:
        return True
    return status == Status.DRAFT and any(same_identity(owner, h) for h in humans)


def rule_of(memory: Memory, humans: tuple[str, ...] = ()) -> Rule | None:
    """The rule a memory carries, or None if it is not an active correction or warning.

    Fields that fail validation fall back to safe values (the type's default severity, only the
    good patterns), so one bad hand edit never disables the rule; `lint` reports the bad field.
    `humans` are the store's people: their drafts bind at once.
    """
    if memory.type not in RULE_TYPES or memory.status == Status.DEPRECATED:
        return None
    try:
        severity = check_severity(memory.extra.get("severity", DEFAULT_SEVERITY[memory.type]))
    except InvalidMemory:
        severity = DEFAULT_SEVERITY[memory.type]
    raw: Any = memory.extra.get("applies_when")
    try:
        patterns = check_applies_when(raw)
    except InvalidMemory:  # keep every pattern that is still good
        items: list[Any] = list(raw) if isinstance(raw, list) else []  # pyright: ignore[reportUnknownArgumentType]
        patterns = tuple(p for p in items if _valid_pattern(p))
    try:
        evidence = check_evidence(memory.extra.get("evidence"))
    except InvalidMemory:
        evidence = None
    return Rule(
        name=memory.name,
        type=memory.type,
        status=memory.status,
        severity=severity,
        applies_when=patterns,
        description=memory.description,
        evidence=evidence,
        owner=memory.owner,
        binding=binds(memory, humans),
        proposal=proposal(memory),
    )


def _valid_pattern(item: object) -> bool:
    try:
        return bool(check_applies_when([item]))
    except InvalidMemory:
        return False


# -- matching -------------------------------------------------------------------------------


def words(text: str) -> list[str]:
    """The words of `text` as search indexes them: stemmed, stop words out, CJK as bigrams."""
    return list(concepts.analyse(text).terms)


def is_glob(pattern: str) -> bool:
    """Whether a pattern is a glob (it holds `*`, `?` or `[`)."""
    return not GLOB_CHARS.isdisjoint(pattern)


def _words(text: str) -> list[str]:
    return [t.strip("'\"`()<>;,") for t in text.split()]


def match(pattern: str, text: str, targets: tuple[str, ...] = ()) -> bool:
    """Whether an `applies_when` pattern matches an action described by `text` and `targets`.

    A glob with spaces (`git push --force*`) matches anywhere in the text; a glob without
    spaces (`migrations/*.sql`) matches one whole word of the text or a target, in any folder.
    Otherwise every word of the pattern must appear in the text, in any order, analysed as
    search analyses it, or be met by a synonym from the action concepts (`words.toml`):
    "version bump" matches "bump version to 1.4.1", "npm publish" matches "ship 1.4.1 to the
    npm registry". Case never matters.
    """
    lowered = text.lower()
    if is_glob(pattern):
        glob = pattern.lower()
        # What any match holds, looked for first: a glob is a regex to compile, and most
        # patterns a briefing tries are about other actions.
        hay = "\0".join([lowered, *(t.lower() for t in targets)])
        if not all(piece in hay for piece in glob_pieces(pattern)):
            return False
        if any(c.isspace() for c in glob):
            return fnmatch.fnmatchcase(lowered, f"*{glob}*")
        candidates = _words(lowered) + [t.lower() for t in targets]
        alternatives = [glob] if glob.startswith(("*", "/")) else [glob, f"*/{glob}"]
        return any(fnmatch.fnmatchcase(c, g) for c in candidates for g in alternatives)
    return concepts.meets(pattern, " ".join([text, *targets]))


@functools.lru_cache(maxsize=1 << 16)
def glob_pieces(pattern: str) -> tuple[str, ...]:
    """The literal pieces of a glob that any text it `match`es holds, lowercased (the runs
    between `*` and `?`; a run touching a `[...]` set is left out)."""
    runs = re.split(r"[*?]", pattern.lower())
    return tuple(r for r in runs if r and "[" not in r and "]" not in r)


def first_match(rule: Rule, text: str, targets: tuple[str, ...] = ()) -> str | None:
    """The first of a rule's patterns that matches the action, or None."""
    return next((p for p in rule.applies_when if match(p, text, targets)), None)


def related(rule: Rule, task: str) -> bool:
    """Whether a rule bears on a task described loosely (the briefing's `--for`).

    Looser than `check`: a rule without patterns always applies; otherwise one pattern must
    match, or a word of a pattern (itself or a synonym: "cut release" meets "npm publish")
    or two of the description must appear in the task.
    """
    return relating(task)(rule)


def relating(task: str) -> Callable[[Rule], bool]:
    """`related` to `task`, for judging many rules: what the task offers is read once."""
    offered = concepts.features(task)
    loose = concepts.loose_features(task)
    have = {w for w in words(task) if len(w) >= 3 and not w.isdigit()}

    def bears(rule: Rule) -> bool:
        patterns = rule.applies_when
        if not patterns:
            return True
        for p in patterns:
            if match(p, task) if is_glob(p) else concepts.meets(p, task, offered):
                return True
        if any(concepts.overlaps(p, task, loose) for p in patterns if not is_glob(p)):
            return True
        return len(have & set(words(rule.description))) >= 2

    return bears


# -- the verdict ----------------------------------------------------------------------------


def rule_reason(rule: Rule, matched: str) -> Reason:
    """The reason a matching rule gives: a binding p0 blocks; anything else warns."""
    verdict = Verdict.BLOCK if rule.severity == "p0" and rule.binding else Verdict.WARN
    said = f' (the human said: "{_one_line(rule.evidence)}")' if rule.evidence else ""
    held = f" [{rule.held}]" if rule.held else ""
    message = f"{rule.description}{said}{held}"
    return Reason(
        kind=rule.type,
        name=rule.name,
        verdict=verdict,
        message=message,
        severity=rule.severity,
        status=rule.status,
        matched=matched,
        binding=rule.binding,
    )


SIMILAR_MIN = 0.8
"""With semantic recall on, an action this similar in meaning (cosine) to a rule's
`applies_when` pattern, that no pattern matched by its words, gets the rule's warning. Chosen on
tests/data/check_bank.yaml (bench/check_bank.py --embedding-model): the words already catch every
risky action there, and 0.8 is the lowest threshold that flags no more benign ones (0.7 adds
one, 0.6 eight)."""


def similar_reasons(
    rules: list[Rule],
    action: str,
    targets: tuple[str, ...],
    cosines: Callable[[str, list[str]], list[float]],
    threshold: float = SIMILAR_MIN,
) -> list[Reason]:
    """Warnings, never blocks, for the rules whose patterns the action resembles in meaning
    though none matches its words: `cosines(action, patterns)` gives each pattern's cosine."""
    unmatched = [
        r for r in rules if first_match(r, action, targets) is None and _plain(r.applies_when)
    ]
    if not unmatched:
        return []
    patterns = [p for r in unmatched for p in _plain(r.applies_when)]
    scores = dict(zip(patterns, cosines(action, patterns), strict=True))
    reasons: list[Reason] = []
    for rule in unmatched:
        best = max(_plain(rule.applies_when), key=lambda p: scores[p])
        if scores[best] >= threshold:
            reason = rule_reason(rule, best)
            reasons.append(
                replace(
                    reason,
                    verdict=Verdict.WARN,
                    message=f"{reason.message} (similar in meaning to '{best}': "
                    f"cosine {scores[best]:.2f})",
                )
            )
    return reasons


def _plain(patterns: tuple[str, ...]) -> list[str]:
    """The patterns that are words (globs name files and commands exactly: no similarity)."""
    return [p for p in patterns if not is_glob(p)]


def ledger_reason(check: claims.Check, identity: str | None) -> Reason:
    """What the ledger's answer means before acting: executed, or claimed by another, blocks."""
    name = f"{check.action} {check.target}"
    warned = "".join(f" Warning: {w}." for w in check.warnings)
    if check.state is claims.State.EXECUTED:
        evidence = f" ({check.evidence})" if check.evidence else ""
        message = f"already executed by {check.actor} at {check.at}{evidence}; do not repeat it"
        return Reason("ledger", name, Verdict.BLOCK, message + warned)
    if check.state is claims.State.IN_PROGRESS:
        if identity is not None and check.actor == identity:
            message = (
                f"you hold the claim until {check.until}: act, then record it with "
                f"`memstore ledger record {check.action} {check.target} --evidence URL`"
            )
            return Reason("ledger", name, Verdict.ALLOW, message + warned)
        message = f"claimed by {check.actor} at {check.at} until {check.until}; wait or ask them"
        return Reason("ledger", name, Verdict.BLOCK, message + warned)
    message = (
        "not executed yet: claim it first (`memstore ledger claim "
        f"{check.action} {check.target}`), act, then record it with evidence"
    )
    return Reason("ledger", name, Verdict.ALLOW, message + warned)


def guard_reasons(action: str, disabled: Collection[str] = ()) -> list[Reason]:
    """A warning for each built-in guard (`guards.guards`) the action trips, unless disabled."""
    return [
        Reason(
            kind="guard",
            name=guard.name,
            verdict=Verdict.WARN,
            message=guard.description,
            matched=seen,
        )
        for guard, seen in guards.guard_hits(action, frozenset(disabled))
    ]


def decide(
    action: str,
    rules: list[Rule],
    targets: tuple[str, ...] = (),
    extra: list[Reason] | None = None,
    runbooks: list[Reason] | None = None,
    disabled_guards: Collection[str] = (),
) -> CheckResult:
    """The verdict on `action`: the worst of the matching rules, the built-in guards (all but
    `disabled_guards`) and the `extra` reasons.

    `extra` carries reasons found elsewhere (the ledger); `runbooks` are listed to follow but
    never change the verdict.
    """
    reasons: list[Reason] = []
    # Only what the text asks to do: not a report, a question, a read-only command or quoted
    # text it talks about (`intent.acted`).
    asked = intent.acted(action)
    # A rule that names the program of a read-only command is about that read ("never cat
    # .env"): it is matched against the whole command.
    named = intent.readers(action) if not asked else frozenset[str]()
    for rule in sorted(rules, key=lambda r: r.rank):
        matched = first_match(rule, asked, targets)
        if matched is None and named:
            matched = next(
                (
                    p
                    for p in rule.applies_when
                    if named & set(p.lower().split()) and match(p, action, targets)
                ),
                None,
            )
        if matched is not None:
            reasons.append(rule_reason(rule, matched))
    reasons.extend(guard_reasons(" ".join([asked, *targets]).strip(), disabled_guards))
    reasons.extend(extra or [])
    order = {Verdict.BLOCK: 0, Verdict.WARN: 1, Verdict.ALLOW: 2}
    reasons.sort(key=lambda r: order[r.verdict])  # stable: severity order kept within a verdict
    verdict = reasons[0].verdict if reasons else Verdict.ALLOW
    return CheckResult(
        verdict=verdict, action=action, reasons=tuple(reasons), runbooks=tuple(runbooks or [])
    )


def _one_line(text: str | None, limit: int = 160) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def render_check(result: CheckResult, fence: Fence | None = None) -> str:
    """The check result as short Markdown: the verdict line, then one bullet per reason.

    With `fence` (for an agent), each bullet's status is a line in memstore's words and what
    agents or people wrote (descriptions, patterns, ledger text) follows it, fenced.
    """
    action = fence.inline(result.action) if fence else result.action
    lines = [f"{result.verdict.value.upper()}: {action}"]
    for r in result.reasons:
        lines.append(_reason_bullet(r).render(fence))
    for r in result.runbooks:
        lines.append(Bullet(f"- [follow] runbook {r.name}", r.message).render(fence))
    rules = [r.name for r in result.reasons if r.kind in RULE_TYPES]
    if rules:
        lines.append(
            "Afterwards record what happened: `memstore outcome NAME heeded` (or `recurred`) "
            f"for {', '.join(rules)}."
        )
    return "\n".join(lines)


def _reason_bullet(r: Reason) -> Bullet:
    if r.kind == "guard":  # memstore's own words, with what it saw in the action quoted
        return Bullet(
            f"- [{r.verdict.value}] built-in guard {r.name}: {r.message}",
            f"saw '{r.matched}'",
            plain=f"- [{r.verdict.value}] {r.name} (built-in guard) — saw '{r.matched}': "
            f"{r.message}",
        )
    if r.kind not in RULE_TYPES:  # a ledger reason: its name and message quote the ledger
        return Bullet(
            f"- [{r.verdict.value}] {r.kind}",
            f"{r.name}: {r.message}",
            plain=f"- [{r.verdict.value}] {r.name} ({r.kind}): {r.message}",
        )
    tag = f"{r.kind} {r.severity}, {r.shown_status}"
    on = f" — matched '{r.matched}'" if r.matched else ""
    return Bullet(
        f"- [{r.verdict.value}] {r.name} ({tag})",
        f"matched '{r.matched}': {r.message}" if r.matched else r.message,
        plain=f"- [{r.verdict.value}] {r.name} ({tag}){on}: {r.message}",
    )


def check_fence(result: CheckResult) -> Fence:
    """A fence safe for every text a check result quotes."""
    texts = [result.action] + [
        t for r in (*result.reasons, *result.runbooks) for t in (r.name, r.message, r.matched or "")
    ]
    return fence_for(texts)


def agent_check_text(result: CheckResult, lead: str | None = None) -> str:
    """A check result for an agent's context: `lead` (else the verdict and the fenced action),
    the fence's preamble, then each reason's status line with its text fenced on the next."""
    fence = check_fence(result)
    first, _, rest = render_check(result, fence).partition("\n")
    head = lead if lead is not None else first
    return f"{head}\n{fence.preamble}\n{rest}" if rest else head


def rule_line(rule: Rule, rewrite: bool = False, short: bool = False) -> Bullet:
    """A briefing bullet for a rule: severity, name and status are memstore's; the rest quoted.
    `short` keeps the description alone, cut to one line (for a tight budget)."""
    when = f" — applies when: {', '.join(rule.applies_when)}" if rule.applies_when else ""
    said = f' — the human said: "{_one_line(rule.evidence)}"' if rule.evidence else ""
    flag = " — RECURRED after confirmation: rewrite it" if rewrite else ""
    flag += f" — {rule.proposal}" if rule.proposal else ""
    own = f"- **{rule.severity}** {kind(rule.type)} `{rule.name}` [{rule.shown_status}]"
    data = _one_line(rule.description, 100) if short else f"{rule.description}{when}{said}"
    return Bullet(f"{own}{flag}", data, plain=f"{own}: {data}{flag}")


# -- scripts ------------------------------------------------------------------------------

EXIT_CODES = {Verdict.ALLOW: 0, Verdict.WARN: 3, Verdict.BLOCK: 4}
"""`memstore check` exit codes; 1 stays an error and 2 a usage error, as everywhere in the CLI."""
