"""What a text asks to do: of an action text, the part that asks for something to be done,
without its reports of what happened, its questions, its writing about an action, its negations
and the quoted text or read-only commands it only talks about.

Pure functions over text; `rules` judges only what `acted` keeps.
"""

from __future__ import annotations

import functools
import json
import re

from memstore.workflow.rules.concepts import analyse
from memstore.workflow.rules.shell import Command, commands, is_shell, past, reads
from memstore.workflow.rules.words import Words, table

# A check is asked about an action about to be taken. Text that only talks about an action
# (a report of one that happened, a question about one, a document being written about one, a
# command that only reads) asks for nothing to be done: matching its words against rules and
# guards raised false alarms on "we deleted the old branch yesterday", `man rm` or
# `git log --grep "force push"` (docs/workflow.md, the second bank's first run).


def _words(name: str) -> frozenset[str]:
    """A word list of the tables in use, taken as written."""
    return table().words[name]


@functools.cache
def _bases(t: Words) -> frozenset[str]:
    """The verbs an "-ing" form is taken back to (`_base`)."""
    words = t.words
    return words["look_verbs"] | words["edit_verbs"] | words["talk_only"] | words["before_verbs"]


def _asks_help(words: tuple[str, ...]) -> bool:
    """Whether a command only asks for help or rehearses. `-h` followed by a value is a host
    (`redis-cli -h prod-cache FLUSHALL`, `psql -h db …`), not help."""
    for i, w in enumerate(words):
        if w == "-h" and i + 1 < len(words) and not words[i + 1].startswith("-"):
            continue
        if w in _words("help") or w.startswith("--dry-run=") and w != "--dry-run=none":
            return True
    return False


def _only_reads(command: Command) -> bool:
    """Whether a simple command only searches, shows, plans or prints."""
    words = command.words
    if reads(command) or command.name in _words("show_words"):
        return True
    if _asks_help(words):
        return True
    if any(w in _words("show_words") for w in words[1:3]):
        return True  # `python manage.py showmigrations`
    if re.search(
        r"\b(?:generate|g)\s+migration\b|\bmake:migration\b|\bmakemigrations\b|"
        r"\bmigrations?\s+add\b|"
        r"\balembic\s+revision\b|\bmigrat\w*\s+(?:create|new|make)\b|\bmigrat\w*:(?:make|create)\b",
        " ".join(words),
    ):
        return True  # `rails generate migration …` writes a file; running it is another step
    if any(w.endswith((":status", ":version")) for w in words[1:4]) or re.search(
        r"\bmigrat\w*\s+(?:status|info|history|list)\b", " ".join(words[1:5])
    ):
        return True  # `rails db:migrate:status`, `npx prisma migrate status`
    subcommands = table().read_subcommands.get(command.name)
    if subcommands is not None:
        verbs = [w for w in words[1:] if not w.startswith("-")][:1]
        return bool(verbs) and verbs[0] in subcommands
    return command.name == "aws" and any(
        w == "ls" or w.startswith(("describe-", "get-", "list-")) for w in words[1:4]
    )


def _inert(command: Command) -> bool:
    """Whether a command only prints help or rehearses (`man rm`, `--help`, `--dry-run`)."""
    words = command.words
    return command.name in _words("show_words") or command.name == "man" or _asks_help(words)


def readers(text: str) -> frozenset[str]:
    """The programs of a shell line that only reads, for rules that name them: `cat .env`
    reads, yet a rule "never cat .env" is about exactly that. Help and dry runs name none."""
    raw = text.strip().lower()
    if not is_shell(raw):
        return frozenset()
    found = commands(raw)
    if not found or not all(_only_reads(c) for c in found):
        return frozenset()
    return frozenset(c.name for c in found if not _inert(c))


_CLAUSE = re.compile(r"\s*(?:[;,.!?:]\s+|[;!?]$|\s(?:and then|then|and|but|so)\s)\s*")
_ASKING = re.compile(
    r"^(?:who|whom|whose|what|when|where|why|which|how)(?:'?s)?\b(?!\s+(?:about|if|not)\b)"
    r"|^(?:did|has|have|had|was|were)\s+(?:we|i|you|they|anyone|someone|somebody|it|he|she)\b"
)
"""A question asking what, why or whether something happened, not asking to do it."""
_WONDER = re.compile(
    r"^(?:(?:hypothetically|in theory|theoretically|just wondering),?\s+(?:could|can)\s+|"
    r"(?:(?:hypothetically|in theory|theoretically|just wondering),?\s+)?"
    r"(?:would|does|do|is|are|will|might)\s+)"
    r"(?!(?:you|u|ya|we|i|someone|somebody|anyone|one|it|there|this|that)\b)"
    r"[^?]*\?\s*$"
)
"""A yes/no question about a thing, not about us doing it ("would a force push to main lose
commits?", "is npm publish blocked by CI?"). "can I …?", "should we …?", "could you …?", "is it
ok/time to …?", "does it make sense to …?" ask to act, and so does "can/could X …?" unless
said to be hypothetical ("can the deploy to production go out today?")."""
_HYPOTHETICAL = re.compile(
    r"^(?:(?:what\s+)?if|suppose|supposing|imagine|say)\s+(?:\w+\s+){1,3}(?:were|was)\s+to\b"
    r"|^(?:hypothetically|in theory|theoretically)\b"
)
"""A clause that imagines an action: "if we were to drop the table", "hypothetically, …"."""
_NEGATED = re.compile(
    r"^(?:nobody|no one|no-one|noone)\s+(?:should|must|may|can|could|will|shall|is|ever|gets?|"
    r"needs?|has to|is allowed)\b"
    r"|^no\s+(?!(?:need|problem|problems|worries|rush|doubt|matter|time|way|biggie|one)\b)\w"
    r"|^(?:(?:please|pls|plz|so|and|but|just)\s+)?"
    r"(?:(?:we|you|i|they|one|people|agents?|nobody|no one|everyone)\s+)?"
    r"(?:never|avoid|refrain from|(?:do|does|should|must|shall|will|may|need|ought to)"
    r"(?:\s+not|n'?t|\s+never)|don'?t|dont|won'?t)\b"
    r"(?!\s+(?:forget|hesitate|wait|worry|bother|be afraid)\b)"
)
"""An instruction not to act ("don't force push to main", "we should never deploy on
Fridays"): it asks for nothing to be done. "don't forget to …" asks for it."""
_JUDGES = re.compile(
    r"^(?:this|that|these|those|the|it|lgtm|looks)\b(?:\s+[\w'-]+){0,4}?\s*"
    r"\b(?:looks?|seems?|appears?|reads?|sounds?)\s+(?:good|fine|ok|okay|right|correct|great|"
    r"wrong|off|risky|safe|reasonable|sane)\b"
)
"""A reviewer's judgement of a change ("this migration looks fine to me")."""


def _base(word: str) -> str:
    """A verb's "-ing" form back to its base when the base is a verb of looking, writing,
    talking or waiting ("checking", "writing", "asking"); other words as they are."""
    if not word.endswith("ing") or len(word) < 6:
        return word
    stem = word[:-3]
    known = _bases(table())
    for base in (stem, stem + "e", stem[:-1]):
        if base in known:
            return base
    return word


_REFERENCE = re.compile(
    r"\b(?:before|until|till|ahead of|prior to|about|whether|if|"
    r"for (?:approval|the go-ahead|a go))\b"
)
_TOPIC = re.compile(
    r"(?i)\b(?:comment|comments|note|notes|doc|docs|section|paragraph|ticket|issue|todo|message|"
    r"page|runbook|readme|warning|question|thread|email|slide|slides)\s+"
    r"(?:about|on|regarding|re|describing|explaining|mentioning|that\s+(?:says|mentions|explains))"
    r"\b.*$"
)
"""What a written thing is about is its topic, not an action: "remove the TODO comment about
rotating keys"."""
_IN_GENERAL = re.compile(
    r"^(?:is|are|was)\s+(?:it|there)\s+(?:\w+\s+){0,2}?(?:safe|possible|bad|risky|dangerous|"
    r"normal|common|wise|a good idea|expensive|slow|fast|allowed)\s+to\s+[\w-]+\s+"
    r"(?:a|an|any)\b[^?]*\?\s*$"
)
"""A question about an action in general, on "a"/"an"/"any" thing ("is it safe to drop a column
in a live migration?"): it asks what is true, not leave to act."""
_SQL_READ = re.compile(r"^\s*(?:select|show|explain|describe|desc|with\s+\w+\s+as\s*\()\b")
"""A SQL statement that only reads."""
_PAST_TIME = re.compile(
    r"\b(?:yesterday|ayer|anoche|gestern|last\s+(?:night|week|month|year|sprint|time|friday|monday|tuesday|"
    r"wednesday|thursday|saturday|sunday)|\w+\s+ago|earlier\s+today|this\s+morning)\b"
)
"""A time in the past: with a verb in the past, the clause is a report ("the deploy to prod
went fine yesterday"), whatever its subject."""
_REQUEST = re.compile(
    r"\b(?:please|let's|lets|go ahead|now|should|shall|will|gonna|going to|want to|"
    r"needs? to|needs? \w+ing|(?:need|needs|want|wants)\s+(?:[\w'-]+\s+){1,4}?\w+ed|has to|"
    r"have to|must|make sure|ensure|be sure to|about to|ok to|"
    r"okay to|mind if)\b"
)
_POLITE = re.compile(
    r"^(?:(?:can|could|would|will)\s+(?:you|u|ya)\s+|please\s+|pls\s+|plz\s+|kindly\s+|"
    r"go ahead and\s+|let's\s+|lets\s+|let me\s+|i'll\s+|we'll\s+|just\s+)+"
)
"""The asking words in front of a verb: "can you review …", "please document …"."""
_DESCRIBES = re.compile(
    r"^(?:the|this|that|our|their|its|every|each|a|an)\s+(?:[\w'-]+\s+){1,3}?"
    r"(?:drops|deletes|removes|wipes|truncates|purges|deploys|publishes|pushes|rotates|"
    r"migrates|destroys|runs|releases|ships|revokes|cleans|prunes)\b"
)
"""A clause that says what a thing does ("the cleanup job drops temp tables nightly")."""
_DOING = re.compile(
    r"^(?:(?i:he|she|they|someone|somebody|the\s+\w+)|[A-Z][a-z]+)(?:'s|'re|\s+is|\s+are)\s+"
    r"(?:(?i:still|currently|already|just|now)\s+)?[a-z]+ing\b"
)
"""What someone else is doing ("he's still migrating the bot", "Bob is deploying to prod"):
a report; "I'm deploying …" and "we're deploying …" say what we are about to do."""
_STATEMENT = re.compile(
    r"^(?!(?:please|pls|plz|just|go|let|make|ensure|get)\b)[\w'-]+(?:\s+(?!(?:that|which|who|"
    r"where)\b)[\w'#.-]+){0,5}?\s+(?:is|are|was|were|has been|have been|gets|got)\s+"
    r"(?:\w+ly\s+)?(?:\w+ed|\w+en|done|set|run|shut|held|kept|owned|scheduled|planned)\b"
)
"""A clause that says what is done to a thing, in the passive ("the deploy to production is
scheduled for Thursday", "credential rotation is handled by the security team")."""
_CODE_TALK_AFTER = re.compile(
    r"^\s*(?:is|are|was|were|has|had|does|did|will|would|can|could|should|may|might|must|"
    r"only|just|also|never|always|(?!(?:thanks|pls|plz|thx|guys|folks|yes)\b)\w+s)\b"
    r"(?!\s*(?:and|then)\b)"
)
"""A code span said in English is a command to run ("please `npm publish` the new version",
"let me `kubectl delete ns payments`") unless the sentence talks about it: after an article, a
preposition, a question word or a verb that handles or talks about code ("the `rm -rf ~`
incident", "grep for `rm -rf`", "explain what `DROP TABLE` does", "wrap `kubectl delete` in a
prompt"), after a verb in the third person ("when someone types `…`"), or as the subject of a
verb ("`git push --force` rewrites the remote")."""
_CI_KEY = re.compile(
    r"^\s*(?:-\s+)?(?:run|script|command|cmd|entrypoint|args|before_script|after_script)"
    r"\s*:\s*[|>]?[-+]?\s*(?P<value>.*)$"
)
"""A CI or container step (`run: npm publish`, `- script: …`, `command: ["terraform", …]`):
its value is the command that runs."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" -"))


def _steps(raw: str) -> str:
    """A CI/YAML snippet as the commands it runs, one a line; other text as it is. A key with
    no value on its line (`run: |`, `script:`) runs the more indented lines under it."""
    lines = raw.splitlines()
    if not any(map(_CI_KEY.match, lines)):
        return raw
    out: list[str] = []
    block: int | None = None  # the indent of a key whose value is the lines below it
    for line in lines:
        if block is not None and line.strip() and _indent(line) > block:
            out.append(line.strip().removeprefix("- ").strip())
            continue
        block = None
        m = _CI_KEY.match(line)
        if not m:
            continue
        value = m.group("value").strip()
        if value.startswith("[") and value.endswith("]"):  # an exec form: ["terraform", …]
            value = " ".join(re.findall(r"""["']([^"']*)["']""", value))
        if value:
            out.append(value)
        else:
            block = len(line) - len(line.lstrip())
    return "\n".join(out)


_CODE_CALL = re.compile(
    r"^\s*(?:[\w.\[\]]+\s*:?=\s*)?(?:await\s+|return\s+)?(?P<callee>[\w.]+(?:::\w+)*)!?\s*"
    r"\((?P<args>.*)\)\s*;?\s*$"
)
"""A line of code that is one call (`subprocess.run([...], check=True)`, `os.system("…")`,
`exec.Command("git", "push", "-f")`, `result = await execa("npm", ["publish"])`)."""


def _code_calls(raw: str) -> str:
    """Lines of code that run a command as the shell lines they run, one a line: a call whose
    string arguments (those of its first list, when it starts with one) make a shell line.
    Other text as it is."""
    out: list[str] = []
    for line in raw.splitlines():
        m = _CODE_CALL.match(line)
        if not m:
            return raw
        args = m.group("args").strip()
        if args.startswith("["):
            args = args[: args.find("]") + 1] if "]" in args else args
        literals = re.findall(r"""["']([^"']*)["']""", args)
        said = _api_call(m.group("callee"), m.group("args"), literals)
        command = literals[0] if len(literals) == 1 else " ".join(literals)
        if said is None and is_shell(command.lower()):
            said = command
        if said is None:
            return raw
        out.append(said)
    return "\n".join(out) if out else raw


_RMTREE = re.compile(
    r"(?i)^(?:rmtree|rm_rf|rm_r|removeall|rimraf|rmsync|rm|deletedirectory|delete)$"
)


def _api_call(callee: str, args: str, literals: list[str]) -> str | None:
    """What a call to a library does, in words a rule or guard reads, or None: a recursive
    delete (`shutil.rmtree`, `fs.rmSync(…, {recursive: true})`, `FileUtils.rm_rf`,
    `os.RemoveAll`) as `rm -rf`; SQL handed to a database (`DB::statement('DROP …')`,
    `cursor.execute(…)`) as the SQL; a method named after an action
    (`s3.delete_bucket(Bucket="prod-assets")`) as its words and its string arguments."""
    name = re.split(r"\.|::", callee)[-1]
    words = " ".join(_split_identifier(name))
    target = literals[0] if literals else (re.findall(r"[\w./~-]+", args) or ["?"])[0]
    recursive = name.lower() not in ("rm", "delete") or re.search(
        r"(?i)recursive\s*[:=]\s*true|,\s*true\s*\)?$", args
    )
    if _RMTREE.match(name) and recursive:
        if re.search(r"(?i)tmp|temp|cache|build|dist|scratch", target):
            return ""  # a temporary or build folder: nothing a guard warns about
        return f"rm -rf {target}"
    if name.lower() in _words("sql_calls") and literals:
        return "; ".join(literals)
    if set(words.split()) & _words("api_actions") and literals:
        return " ".join([words, *literals])
    if not literals:
        return f"{callee}()"  # its arguments are names in code (`cache.delete(key)`), not objects
    return None


def _split_identifier(name: str) -> list[str]:
    """`delete_bucket`, `deleteBucket`, `DeleteBucket` → delete, bucket."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").replace("-", " ")
    return spaced.lower().split()


def _json_action(raw: str) -> str:
    """A JSON object an agent states its next step in (`{"action": "rotate_credentials",
    "target": "postgres prod password"}`) as its string values, names split into words."""
    if not raw.startswith("{"):
        return raw
    try:
        data = json.loads(raw)
    except ValueError:
        return raw
    if not isinstance(data, dict):
        return raw
    values = [v for v in data.values() if isinstance(v, str)]  # pyright: ignore[reportUnknownVariableType]
    return " ".join(" ".join(_split_identifier(v)) if " " not in v else v for v in values) or raw


_QUOTED = re.compile(r"""(?:^|(?<=[\s:(]))(?P<q>["'`])(?P<body>.+?)(?P=q)(?=[\s.,;:!?)]|$)""")


def _reports(lower: list[str]) -> bool:
    """Whether a clause that names a past time has its main verb in the past: a verb in the
    past after the first word and not right after a pronoun ("the deploy to prod went fine
    yesterday"). An order keeps its verb first and may say what someone did in a relative
    clause: "delete the branch I pushed yesterday", "push the release we built last week"."""
    if not lower or analyse(lower[0]).concepts:
        return False
    return any(
        past([w]) and lower[i] not in _words("pronouns")
        for i, w in enumerate(lower[1:])
        if w != "ago"
    )


def _talks(clause: str) -> bool:
    """Whether an English clause only talks about an action: reports it, asks about it, or
    edits a document about it."""
    lowered = _TOPIC.sub("", clause.lower().strip())
    if _NEGATED.match(lowered) or _HYPOTHETICAL.match(lowered):
        return True
    core = re.findall(r"[\w'-]+", _POLITE.sub("", lowered))
    core[:1] = [_base(w) for w in core[:1]]  # "checking whether …" looks as "check" does
    if core and core[0] in _words("look_verbs") and core[1:2] not in (["you"], ["u"], ["ya"]):
        return True
    if core and core[0] in _words("before_verbs") and _REFERENCE.search(lowered):
        return True
    if core and (
        core[0] in _words("talk_only")
        or (core[0] in _words("edit_verbs") and any(w in _words("written") for w in core[1:7]))
    ):
        return True
    if _REQUEST.search(lowered):
        return False
    words = re.findall(r"[\w'-]+", clause)
    lower = [w.lower() for w in words]
    if (
        lower
        and _STATEMENT.match(lowered)
        and (
            not set(analyse(lower[0]).concepts) - table().nouns
            or (lower[0].endswith("s") and lower[1:2] in (["are"], ["were"]))
        )
    ):
        return True  # "credential rotation is handled by …", "deploys are frozen"
    if _DESCRIBES.match(lowered) or _DOING.match(clause.strip()):
        return True
    if _ASKING.match(lowered) or past([w if w[:1].isupper() else w.lower() for w in words]):
        return True
    if _JUDGES.match(lowered) or (
        lower[:1]
        and lower[0] in _words("look_verbs")
        and lower[1:2] not in (["you"], ["u"], ["ya"])
    ):
        return True
    if _PAST_TIME.search(lowered) and _reports(lower):
        return True
    if lower and lower[0] in _words("edit_verbs"):
        return any(w in _words("written") for w in lower[1:7])
    return False


_THING = re.compile(
    r"(?i)\b(?:(?:the|this|that|our|prod|production|staging)\s+)?(?:[\w-]+\s+)?"
    r"(?:tables?|databases?|db|schemas?|collections?|buckets?|clusters?|namespaces?|"
    r"certs?|certificates?|keys?|tokens?|credentials?|creds|secrets?|passwords?)\b"
)
"""A thing a later pronoun may stand for: "put the new certs in place and throw out the old
ones", "we found the orphaned table, drop it"."""
_PRONOUN = re.compile(r"(?i)\b(?:the\s+old\s+ones|the\s+ones|it|them|those|these)\b")
_GERMAN_QUESTION = re.compile(r"^(?:ist|sind|war|waren|wurde|wurden|hat|haben)\s[^?]*\?\s*$")
"""A German yes/no question about a state ("Ist das Deployment auf Produktion schon durch?")."""
_COMMIT_SUBJECT = re.compile(
    r"(?i)^(?:feat|fix|docs|doc|chore|refactor|test|tests|ci|build|style|perf|revert)"
    r"(?:\([\w./ -]*\))?!?:\s"
)
"""A commit subject in the conventional form ("fix: migration runner crashed on empty
tables"): it says what a change to the code does, and asks for nothing to be run."""
_DROP_BY = re.compile(
    r"(?i)\bdrop\s+(?:by|in\s+on|me|us|off|(?:a|an)\s+(?:line|note|message|comment|ping|link|"
    r"mail|email|dm))\b"
)
""""drop by the channel", "drop me a line", "drop a note": a visit or a message."""
_ADJECTIVE_EMPTY = re.compile(
    r"(?i)\b(on|an|a|with|for|of|in|into|is|are|was|were|be|any|no|from|all|some|many)\s+empty\b"
)
""""empty" after an article, preposition or copula is an adjective ("on empty tables")."""


def acted(text: str) -> str:
    """The part of an action text that asks for something to be done, for rules and guards:
    a shell line less its commands that only read; English less its clauses that report,
    ask about, or write about an action, and less quoted text it is not asked to run.
    `""` when nothing is asked."""
    if _COMMIT_SUBJECT.match(text.strip()):
        return ""
    raw = _code_calls(_json_action(_steps(text.strip()).strip()))
    raw = _DROP_BY.sub("visit", _ADJECTIVE_EMPTY.sub(r"\1 blank", raw))
    if is_shell(raw.lower()):
        found = commands(raw.lower())
        if found and all(_only_reads(c) for c in found):
            return ""
        return raw
    low = raw.lower()
    statements = [x for x in low.split(";") if x.strip()]
    if statements and all(_SQL_READ.match(x) for x in statements):
        return ""  # `SELECT * FROM migrations ORDER BY id DESC`
    if _IN_GENERAL.match(low) or _GERMAN_QUESTION.match(low):
        return ""
    # A whole question; "when you're done, delete …" opens on a condition, not a question.
    if (
        (_ASKING.match(low) or _WONDER.match(low))
        and not _REQUEST.search(low)
        and (low.endswith("?") or "," not in low)
    ):
        return ""
    kept: list[str] = []
    position = 0
    named: str | None = None  # the last thing a clause named that a pronoun may stand for
    for m in [*_CLAUSE.finditer(raw), None]:
        end = m.start() if m else len(raw)
        clause = raw[position:end]
        if named is not None:
            clause = _PRONOUN.sub(named, clause, count=1)
        found = _THING.findall(clause)
        named = found[-1] if found else named
        if clause.strip() and not _talks(clause):
            kept.append(_TOPIC.sub("", clause) + (m.group(0) if m else ""))
        position = m.end() if m else len(raw)
    out = "".join(kept).strip()

    def quoted(m: re.Match[str]) -> str:
        before = out[: m.start()].split()
        last = before[-1].lower().rstrip(":") if before else ""
        if last in _words("runs") or last.startswith("-") or "/" in last or "." in last:
            return m.group("body")
        said = last in _words("code_talk_before") or (
            last.endswith("s") and last not in ("pls", "plz", "us", "yes")
        )  # "when someone types `…`", "it runs `…`": a report of it
        if m.group("q") == "`" and not said:
            if not (
                _CODE_TALK_AFTER.match(out[m.end() :])
                and (not before or last in _words("subjects"))
            ):
                return m.group("body")
        return " "

    return _QUOTED.sub(quoted, out).strip()
