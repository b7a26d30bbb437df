"""The built-in guards: each warns before an obviously destructive action (a recursive delete,
a dropped table, a force push, …), even in a store without rules, unless turned off by name.

Their reasons, patterns and words are in the word tables; what each looks for is code here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from memstore.errors import InvalidWords
from memstore.workflow.rules.concepts import Analysis, analyse
from memstore.workflow.rules.shell import Command, commands, is_shell, reads
from memstore.workflow.rules.words import Words, table


@dataclass(frozen=True, slots=True)
class Guard:
    """A built-in rule: warns before an obviously destructive action, named so it can be
    turned off in `memstore.yaml`."""

    name: str
    description: str
    test: Callable[[Analysis], str | None]
    """What it saw in the action (a short quote), or None when it does not apply."""


def _scan(a: Analysis, pattern: re.Pattern[str]) -> str | None:
    """The first match of a command pattern, outside commands that only search or print
    (unless what they print is piped into an interpreter)."""
    t = table()
    piped = t.patterns["interpreter"].search(a.raw) is not None
    for command in commands(a.raw):
        if reads(command) and not (piped and command.name in t.words["printers"]):
            continue
        m = pattern.search(command.raw)
        if m:
            return " ".join(m.group(0).split())[:60]
    return None


def _near(a: Analysis, verbs: set[int], objects: frozenset[str], window: int = 3) -> str | None:
    """Words from a verb to one of `objects` within `window` words after it, unless a code or
    document noun comes first or right after ("the database module", "table of contents").
    English only: a shell line's arguments are names (`git rm --cached .env`), not objects."""
    if is_shell(a.raw):
        return None
    code_nouns = table().terms["code_nouns"]
    passive = _PASSIVE.search(a.raw) is not None
    for pos in sorted(verbs):
        if passive:
            before = a.words[max(0, pos - window) : pos]
            hit = next((w for w in reversed(before) if w in objects), None)
            if hit is not None and not set(before[before.index(hit) + 1 :]) & code_nouns:
                return " ".join(a.words[pos - len(before) + before.index(hit) : pos + 1])
        after = a.words[pos + 1 : pos + 1 + window]
        if after[:1] in (("me",), ("us",)):
            continue  # "drop me a line", "remove us from the thread"
        for i, w in enumerate(after):
            if w in code_nouns and not set(after[i + 1 : i + 3]) & objects:
                break  # "the test file"; but "the test database", "test and prod stacks"
            if w in code_nouns:
                continue
            if w in objects:
                if a.words[pos + 2 + i : pos + 3 + i] and a.words[pos + 2 + i] in code_nouns:
                    break
                return " ".join(a.words[pos : pos + 2 + i])
    return None


_PASSIVE = re.compile(
    r"\b(?:be|been|being|is|are|was|were|gets?|got|getting)\s+(?:\w+ly\s+)?"
    r"(?:\w+ed|\w+en|\w+wn|cut|shut|reset|rm'd)\b"
    r"|\b(?:need|needs|want|wants)\s+(?:[\w'-]+\s+){1,4}?\w+ed\b"
)
"""A verb in the passive: its object comes before it ("the users table needs to be
dropped")."""


def _verbs(a: Analysis, *extra: frozenset[str]) -> set[int]:
    """Where the action's delete words are, and any word of the `extra` verb lists."""
    found = set(a.concepts.get("delete", ()))
    return found | {i for i, w in enumerate(a.words) if any(w in e for e in extra)}


def _disposable(path: str) -> bool:
    """Whether a path is a temp folder, or a build/cache folder inside the project."""
    t = table()
    disposable = t.words["disposable"]
    p = path.strip("'\"").lower()
    if p.startswith(tuple(t.words["temp_prefixes"])) or p in ("/tmp", "$tmpdir", "${tmpdir}"):
        return ".." not in p.split("/")
    if p.startswith(("/", "~", "$home", "${home", "..")) or "/../" in p:
        return False
    parts = [x for x in p.rstrip("/*").split("/") if x not in ("", ".")]
    if not parts:
        return False  # `.`, `*`, `./*`: the whole working folder
    last = parts[-1]
    if last in disposable or last.endswith((".egg-info", ".log", ".tmp", ".pyc", ".o")):
        return True
    return any(x in disposable for x in parts[:-1])


def _rm(a: Analysis) -> str | None:
    t = table()
    for command in commands(a.raw):
        words, name = command.words, command.name
        if name == "find" and ("-delete" in words or ("-exec" in words and "rm" in words)):
            roots = [w for w in words[1:] if not w.startswith("-")][:1]
            if not roots or not _disposable(roots[0]):
                return " ".join(words[:6])
        if name in ("remove-item", "ri") and any(w.startswith("-r") for w in words):
            return " ".join(words[:6])  # PowerShell's rm -r
        if name in ("rmdir", "rd", "del", "erase") and "/s" in words:
            # Split as cmd.exe does: a backslash is a folder separator, not an escape.
            targets = [w for w in command.raw.split()[1:] if not w.startswith("/")]
            windows_temp = re.compile(r"(?:^|[/:])(?:temp|tmp|%temp%|\$env:temp)(?:/|$)")
            paths = [x.replace("\\", "/") for x in targets]
            if not paths or not all(_disposable(p) or windows_temp.search(p) for p in paths):
                return " ".join(words[:6])  # cmd.exe's recursive delete
        if name not in ("rm", "rmdir", "shred", "srm"):
            continue
        flags = "".join(w[1:] for w in words[1:] if w.startswith("-") and not w.startswith("--"))
        long = {w for w in words[1:] if w.startswith("--")}
        recursive = "r" in flags.lower() or "--recursive" in long or name in ("shred", "srm")
        paths = [w for w in words[1:] if not w.startswith("-")]
        if recursive and (not paths or not all(_disposable(p) for p in paths)):
            return " ".join(words[:6])
        if "--no-preserve-root" in long or any(p in ("/", "/*", "~", "~/", "*") for p in paths):
            return " ".join(words[:6])
    if a.has("delete") and not any(c.name == "rm" for c in commands(a.raw)):
        m = None if is_shell(a.raw) else t.patterns["all_of"].search(a.raw)
        if m:
            return " ".join(m.group(0).split())[:60]
        seen = _near(a, _verbs(a), t.terms["everything"], 4)
        if seen:
            return seen
        if t.patterns["system"].search(a.raw) and not re.search(
            r"(?:^|\s)/(?:tmp|var/tmp)\b", a.raw
        ):
            return "delete " + " ".join(a.raw.split())[:40]
    return None


def _sql(a: Analysis) -> str | None:
    t = table()
    seen = _scan(a, t.patterns["sql"])
    if seen:
        return seen
    m = t.patterns["blank_out"].search(a.raw)
    if m and not is_shell(a.raw):
        return " ".join(m.group(0).split())
    return _near(a, _verbs(a, t.terms["retire"], t.terms["drop_verbs"]), t.terms["data"], 4)


def _force_push(a: Analysis) -> str | None:
    t = table()
    shared_branches = t.patterns["shared_branches"]
    push_shared = t.terms["push_shared"]
    for command in commands(a.raw):
        words = command.words
        if command.name != "git" or "push" not in words[1:3]:
            continue
        args = words[words.index("push") + 1 :]
        flags = [w for w in args if w.startswith("-")]
        short = "".join(w[1:] for w in flags if not w.startswith("--"))
        lease = any(w.startswith(("--force-with-lease", "--force-if-includes")) for w in flags)
        force = "--force" in flags or "f" in short or any(w.startswith("+") for w in args)
        deleting = "--delete" in flags or "d" in short or any(w.startswith(":") for w in args)
        refs = [w.lstrip("+:").split(":")[-1] for w in args if not w.startswith("-")][1:]
        refs = [r.removeprefix("refs/heads/") for r in refs]
        shared = not refs or any(shared_branches.match(r) for r in refs)
        # `--force` to a branch of one's own (`feature/x`) rewrites only that branch.
        if "--mirror" in flags or ((force or deleting or lease) and shared):
            return " ".join(words[:6])
    if is_shell(a.raw) and any(c.name == "git" and "push" in c.words[1:3] for c in commands(a.raw)):
        return None  # the push's own flags and branches said it above
    m = t.patterns["overwrite_remote"].search(a.raw) or t.patterns["overwrite_shared"].search(a.raw)
    if m:
        return " ".join(m.group(0).split())
    if a.has("force-push"):
        if "leas" in a.words and not set(a.words) & push_shared:
            return None  # with lease, to a branch of one's own
        return "force push"
    verbs = _verbs(a)
    named = {w for w in re.findall(r"[\w./-]+", a.raw) if shared_branches.match(w)}
    for pos in sorted(verbs):
        near = set(a.words[pos + 1 : pos + 4])
        if "branch" in near and (
            near & push_shared or (named and set(a.words) & t.terms["remote"])
        ):
            return " ".join(a.words[pos : pos + 4])
    return None


def _infra(a: Analysis) -> str | None:
    t = table()
    seen = _scan(a, t.patterns["infra"])
    if seen:
        return seen
    verbs = _verbs(a, t.terms["retire"], t.terms["destroy_verbs"])
    return _near(a, verbs, t.terms["infra_objects"], 4)


def _kube(a: Analysis) -> str | None:
    t = table()
    return _scan(a, t.patterns["kube"]) or _near(a, _verbs(a), t.terms["kube_objects"], 4)


def _git_discard(a: Analysis) -> str | None:
    t = table()
    seen = _scan(a, t.patterns["git_discard"])
    if seen:
        return seen
    discard, unsaved, work = t.terms["discard"], t.terms["unsaved"], t.terms["work"]
    for pos, word in enumerate(a.words):
        if word not in discard:
            continue
        after = a.words[pos + 1 : pos + 5]
        for i, w in enumerate(after):
            if w in unsaved and set(after[i + 1 : i + 3]) & work:
                return "discard uncommitted work"
    return None


def _revoke(a: Analysis) -> str | None:
    t = table()
    seen = _scan(a, t.patterns["revoke"])
    if seen:
        return seen
    return _near(a, _verbs(a, t.terms["revoke_verbs"]), t.terms["secrets"], 4)


_TESTS: dict[str, Callable[[Analysis], str | None]] = {
    "rm-rf": _rm,
    "drop-data": _sql,
    "force-push": _force_push,
    "destroy-infra": _infra,
    "kubectl-delete": _kube,
    "discard-work": _git_discard,
    "revoke-credentials": _revoke,
}
"""What each built-in guard looks for: a guard of the word tables needs one of these."""

GUARD_NAMES = tuple(_TESTS)
"""The names of the built-in guards, which `memstore.yaml` may turn off."""


def guards() -> tuple[Guard, ...]:
    """The built-in guards, in the order of the word tables (the order reasons are listed).

    Raises:
        InvalidWords: when the tables' guards are not exactly those memstore has tests for.
    """
    return _guards(table())


@functools.cache
def _guards(t: Words) -> tuple[Guard, ...]:
    for name in t.guards:
        if name not in _TESTS:
            raise InvalidWords(
                f"{t.path}: guards.{name} is not a built-in guard; guards: {', '.join(_TESTS)}"
            )
    for name in _TESTS:
        if name not in t.guards:
            raise InvalidWords(f"{t.path}: guards.{name} is missing")
    return tuple(Guard(name, reason, _TESTS[name]) for name, reason in t.guards.items())


def guard_hits(text: str, disabled: frozenset[str] = frozenset()) -> list[tuple[Guard, str]]:
    """The enabled guards that apply to `text`, each with what it saw."""
    a = analyse(text)
    out: list[tuple[Guard, str]] = []
    found: tuple[Command, ...] = commands(a.raw)
    if found and all(reads(c) for c in found):
        return out  # `grep "DROP TABLE"`, `echo "rm -rf /"`: a search or a print
    for guard in guards():
        if guard.name in disabled:
            continue
        seen = guard.test(a)
        if seen is not None:
            out.append((guard, seen))
    return out
