"""A person's correction caught as they say it: the sentences of a prompt that set a standing
rule for the agent ("no — never bump the version without asking", "from now on, run the
linter first") become draft corrections owned by that person, the prompt as their evidence.

`corrections(prompt)` is a pure, rule-based reading (no model call) that leans hard towards
saying nothing: an ordinary request ("fix the failing test", "please don't touch the docs for
now", "stop the dev server") is never a correction. `capture` saves what it found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memstore.storage.store import Store
    from memstore.workflow.care.porting import Imported
    from memstore.workflow.care.sources import Candidate

PROMPT_MAX = 2000
"""A longer prompt is read as a task (a pasted spec, a log, a file), never as corrections: its
"always …" lines are the material's, not the person's rules for the agent."""
SENTENCE_MAX = 300
PER_PROMPT = 3
"""The most corrections taken from one prompt."""

# What a person says before correcting: "no", "nope", "stop.", "wrong", "ugh".
_CUE = re.compile(
    r"^(?:(?:no+(?!\s+(?:more|longer)\b)|nope|nah|wrong|stop(?!\s+\w+ing\b)|ugh|argh|"
    r"that'?s\s+(?:wrong|not\s+(?:right|it|what\s+i\s+(?:asked|said|meant)))|"
    r"not\s+like\s+that)(?![\w'])[\s,.!:;\u2014\u2013-]*)+",
    re.IGNORECASE,
)
# Words that open a sentence and say nothing of a correction ("ok, don't change the API in
# this PR" is a request): taken off, but no cue.
_SOFT = re.compile(
    r"^(?:(?:ok(?:ay)?|hey|wait|hm+|actually|again|alright)(?![\w'])[\s,.!:;\u2014\u2013-]*)+",
    re.IGNORECASE,
)
# Words a rule may open with: courtesy, "remember", "I told you".
_COURTESY = re.compile(
    r"^(?:(?:please|pls|and|also|but|so|just|seriously|remember(?:\s+(?:to|that|:))?|"
    r"(?:i|we)\s+(?:told|said|asked)(?:\s+you)?(?:\s+to)?|like\s+i\s+said|as\s+i\s+said|"
    r"rule|note)(?![\w'])[\s,:]*)+",
    re.IGNORECASE,
)
_STANDING = re.compile(
    r"^(?:from\s+now\s+on|going\s+forward|from\s+here\s+on(?:\s+out)?|in\s+(?:the\s+)?future|"
    r"for\s+future\s+reference|next\s+time|every\s+time|each\s+time)(?![\w'])[\s,:]*",
    re.IGNORECASE,
)
_WHO = r"(?:(?:you|we|agents?|claude)\s+(?:should\s+|must\s+|need\s+to\s+|have\s+to\s+)?)?"
_NEVER_ALWAYS = re.compile(
    rf"^{_WHO}(?:never|always)\s+(?:ever\s+)?(?:to\s+)?(?P<verb>[\w'-]+)", re.I
)
_DONT_EVER = re.compile(r"^(?:don'?t|do\s+not)\s+ever\s+(?P<verb>[\w'-]+)", re.IGNORECASE)
_STOP_ING = re.compile(r"^(?:stop|quit)\s+(?P<verb>\w+ing)\b", re.IGNORECASE)
_NO_MORE = re.compile(r"^no\s+(?:more|longer)\s+(?P<verb>[\w'-]+)", re.IGNORECASE)
# Only after a cue ("no, don't …"): on its own, "don't …" is usually about the task at hand.
_DONT = re.compile(
    r"^(?:don'?t|do\s+not|(?:you|we|claude)\s+(?:shouldn'?t|should\s+not|mustn'?t|must\s+not))"
    r"\s+(?!have\b|worry\b|mind\b|bother\b)(?P<verb>[\w'-]+)",
    re.IGNORECASE,
)
_USE_INSTEAD = re.compile(
    r"^use\s+(?P<verb>\S+).*?(?:,\s*not\s|\s+instead\s+of\s|\s+rather\s+than\s|\s+not\s)\S",
    re.IGNORECASE,
)
# What follows never/always when they describe, not command: "never mind", "always the same
# error", "it never worked".
_NOT_A_VERB = frozenset(
    """
    mind the a an this that these those it its it's there here been was were is are am be had
    has have having did does got gets seems seemed happens happened again before once knew
    thought said like same so too sure true false when if because where what how why one ones
    works fails breaks crashes returns takes gives makes
    """.split()
)
_VAGUE = frozenset(
    """
    do does did doing done that this it its again thing things stuff so like way anything
    something everything ever never always dont don't stop more no not please just
    """.split()
)
_NEVER_TO = re.compile(r"^((?:never|always)\s+)to\s+", re.IGNORECASE)
_TAIL = re.compile(r"[\s,]+(?:please|pls|thanks|thank\s+you|ok(?:ay)?)[\s.!]*$", re.IGNORECASE)
_FUNCTION = frozenset(
    """
    a about above after against all am an and any are as at be because been before being below
    between both but by can could did do does doing done down during each else few for from
    further get gets got had has have having he her here hers him his how i if in into is it its
    me might more most must my nor now of off on once only or other our ours out over own same
    shall she should so some such than that the their them then there these they this those
    through to too under until up very was we were what when where which while who whom why will
    with would yet you your yours
    """.split()
)
"""Function words, which say nothing of what a rule is about (a short list: this module loads
on every prompt, before anything else)."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)|\s+[\u2014\u2013]\s+(?=[A-Za-z])|;\s+")
_FENCE = re.compile(r"^\s*(```|~~~)")
_WORD = re.compile(r"[\w'-]+")


@dataclass(frozen=True, slots=True)
class Heard:
    """A correction found in a prompt."""

    said: str
    """The sentence, the cue before it ("no —") taken off."""
    wording: str
    """What it applies to, its opening words ("from now on", "never") left for
    `sources.patterns_of` to drop."""


def _verb_ok(verb: str) -> bool:
    low = verb.lower()
    if low in _NOT_A_VERB:
        return False
    # A past or third-person form describes ("it always failed", "never crashes"), an order
    # does not: "pass", "focus", "proceed" stay.
    if len(low) > 4 and low.endswith("ed") and not low.endswith("eed"):
        return False
    return not (low.endswith("s") and not low.endswith(("ss", "us", "is")))


def _content(text: str) -> list[str]:
    return [
        w
        for w in (m.group(0).lower().strip("'-") for m in _WORD.finditer(text))
        if w and w not in _FUNCTION and w not in _VAGUE
    ]


def _rule(sentence: str, cued: bool) -> tuple[str, str] | None:
    """(the rule as said, its wording for patterns) when `sentence` sets one, else None."""
    text = sentence.strip().strip("\"'*_`")
    if not text or len(text) > SENTENCE_MAX or text.rstrip().endswith("?"):
        return None
    for _ in range(2):  # "ok, no — never …", "no, actually, don't …"
        text = _SOFT.sub("", text, count=1)
        cue = _CUE.match(text)
        if cue and cue.end() < len(text):
            cued, text = True, text[cue.end() :]
    text = _COURTESY.sub("", text, count=1)
    if not text:
        return None
    standing = _STANDING.match(text)
    if standing:
        rest = text[standing.end() :]
        if len(_content(rest)) < 2:
            return None
        return text, _COURTESY.sub("", rest, count=1)
    needed = 1 if cued else 2
    for pattern, wants_cue in (
        (_NEVER_ALWAYS, False),
        (_DONT_EVER, False),
        (_STOP_ING, False),
        (_NO_MORE, False),
        (_DONT, True),
        (_USE_INSTEAD, True),
    ):
        m = pattern.match(text)
        if m is None or (wants_cue and not cued):
            continue
        if pattern is not _STOP_ING and not _verb_ok(m.group("verb")):
            return None
        if len(_content(text)) < needed:
            return None
        return text, text
    return None


def _sentences(prompt: str) -> list[str]:
    """The prompt's sentences and list items, code blocks, quotes and indented lines out."""
    out: list[str] = []
    in_code = False
    for raw in prompt.splitlines():
        if _FENCE.match(raw):
            in_code = not in_code
            continue
        if in_code or not raw.strip() or raw.startswith(("    ", "\t")):
            continue
        line = raw.strip()
        if line.startswith((">", "<", "$ ", "#!")):
            continue
        line = re.sub(r"^(?:[-*+]|\d{1,3}[.)])\s+", "", line)
        out.extend(s for s in _SENTENCE.split(line) if s.strip())
    return out


def corrections(prompt: str) -> list[Heard]:
    """The standing corrections a person's prompt sets, at most `PER_PROMPT`.

    A sentence counts when it opens (after a cue such as "no," and courtesy such as "please")
    with never/always + a verb, "don't ever", "stop/quit …ing", "no more …", "from now on" /
    "going forward" / "next time" …; "don't …", "you shouldn't …" and "use X, not Y" only
    after a cue ("no, don't …"), in the sentence or opening the prompt. Questions, slash
    commands, tagged text, code, quotes and prompts over `PROMPT_MAX` characters never count.
    """
    text = prompt.strip()
    if not text or len(text) > PROMPT_MAX or text.startswith(("/", "<", "!")):
        return []
    found: list[Heard] = []
    seen: set[str] = set()
    opening = _CUE.match(_SOFT.sub("", text, count=1))
    cued = opening is not None and opening.end() > 0
    for sentence in _sentences(text):
        rule = _rule(sentence, cued)
        if rule is None:
            continue
        said, wording = rule
        said = _TAIL.sub("", _NEVER_TO.sub(r"\1", said.strip())).rstrip(" ,;:")
        wording = _TAIL.sub("", _NEVER_TO.sub(r"\1", wording.strip()))
        said = said[:1].upper() + said[1:]
        key = " ".join(_content(said))
        if key in seen:
            continue
        seen.add(key)
        found.append(Heard(said, wording))
        if len(found) == PER_PROMPT:
            break
    return found


def _lead_for_patterns(wording: str) -> str:
    """`wording` as `sources.patterns_of` reads an imperative: "no more X" → "never X"."""
    wording = re.sub(r"^no\s+(?:more|longer)\s+", "never ", wording, flags=re.IGNORECASE)
    wording = re.sub(r"^(?:quit)\s+", "stop ", wording, flags=re.IGNORECASE)
    return re.sub(r"^use\s+", "always use ", wording, flags=re.IGNORECASE)


_ONLY_IF = re.compile(r"\s+(?:without|unless|except|until|before|if)\s+.*$", re.IGNORECASE)
_PROHIBITION = re.compile(r"^(?:never|don'?t|do\s+not|no\s+more|stop|quit|you\s+sh)", re.I)


def patterns(heard: Heard) -> tuple[str, ...]:
    """`applies_when` for a correction heard: its wording's patterns (`sources.patterns_of`),
    and for a prohibition with a condition ("never bump the version without asking") the
    action alone first, so `check` warns on "bump the version to 1.5"."""
    from memstore.workflow.care import sources

    found = list(sources.patterns_of(_lead_for_patterns(heard.wording)))
    if _PROHIBITION.match(heard.said) and found:
        bare = _ONLY_IF.sub("", found[-1])
        if bare != found[-1] and len(_content(bare)) >= 1:
            found.insert(0, bare)
    return tuple(dict.fromkeys(found))


def candidates(prompt: str, session: str = "") -> list[Candidate]:
    """The drafts `corrections(prompt)` makes: short names, the sentence as description, the
    prompt as evidence."""
    from memstore.model.fields import DESCRIPTION_MAX
    from memstore.workflow.care import sources
    from memstore.workflow.rules.rules import EVIDENCE_MAX

    evidence = " ".join(prompt.split())
    if len(evidence) > EVIDENCE_MAX:
        evidence = evidence[: EVIDENCE_MAX - 1] + "…"
    where = f"prompt:{session}" if session else "prompt"
    out: list[sources.Candidate] = []
    for heard in corrections(prompt):
        description = heard.said
        if len(description) > DESCRIPTION_MAX:
            description = description[: DESCRIPTION_MAX - 1].rsplit(" ", 1)[0] + "…"
        out.append(
            sources.Candidate(
                name=sources.short_name(heard.said),
                type="correction",
                description=description,
                body=f"{heard.said}\n\nSaid in a prompt, caught as it was said.",
                tags=("prompt",),
                applies_when=patterns(heard),
                source=where,
                extra=(("evidence", evidence),),
            )
        )
    return out


def capture(store: Store, prompt: str, session: str = "") -> Imported:
    """Save the corrections `prompt` sets as drafts owned by the store's identity (the person),
    in one commit, minus what the store already says.

    Raises:
        NoIdentity, StoreLocked, InvalidMemory.
    """
    from memstore.workflow.care import porting  # only a prompt that holds a correction

    found = candidates(prompt, session)
    count = len(found)
    return porting.save(
        store,
        found,
        [],
        f"memory: correction said in a prompt — {count} proposed draft{'s' if count != 1 else ''}",
        loose=True,
        skip_secrets=True,
    )
