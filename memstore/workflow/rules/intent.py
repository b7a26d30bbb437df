"""What an action means: its words analysed as search analyses them, the action concepts its
synonyms express (publish, deploy, delete, …), and the built-in guards that warn before an
obviously destructive command even in a store without rules.

Pure functions over text; `workflow` turns what they find into check reasons.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from memstore.search.index import tokens

# -- the synonym table --------------------------------------------------------------------

CONCEPTS: dict[str, tuple[str, ...]] = {
    # Each phrase is analysed like search text (stemmed, stop words out); its words must
    # appear in order with at most `PHRASE_GAP` other words between them.
    "publish": (
        "publish",
        "release",
        "ship",
        "upload",
        "upload package",
        "upload wheel",
        "upload pypi",
        "push package",
        *(
            f"{v} {r}"
            for v in ("send", "put", "push", "submit", "post", "deliver", "distribute", "roll out")
            for r in ("registry", "npm", "pypi")
        ),
        "cut release",
        "get out",
        "put out",
        "make available",
        "let loose",
        "cut version",
        "tag release",
        "twine upload",
        "gem push",
        "cargo publish",
        "pypi",
        "npmjs",
    ),
    "deploy": (
        "deploy",
        "deployment",
        "roll out",
        "rollout",
        "promote",
        "ship",
        "go live",
        "get live",
        "make live",
        "put live",
        "take live",
        *(
            f"{v} {e}"
            for v in ("push", "release", "send", "move")
            for e in ("production", "prod", "live")
        ),
        "helm upgrade",
        "kubectl apply",
        "kubectl rollout",
        "kubectl set image",
        "pulumi up",
        "railway up",
        "terraform apply",
        "helm install",
        "sam deploy",
        "cut over",
        "cutover",
        "flip over",
        "switch over",
        "redeploy",
        *(
            f"{v} {e}"
            for v in (
                "launch",
                "land",
                "activate",
                "upgrade",
                "update",
                "install",
                "bump",
                "restart",
                "apply",
                "rollback",
                "roll back",
                "revert",
                "swap",
                "switch",
            )
            for e in ("production", "prod")
        ),
        *(f"{v} traffic" for v in ("switch", "shift", "flip", "cut", "move", "route")),
        *(
            f"{v} {e}"
            for v in ("hotpatch", "hot patch", "hotfix", "patch")
            for e in ("production", "prod")
        ),
        *(
            f"{v} {e}"
            for v in ("put", "bring", "land")
            for e in ("production", "prod servers", "prod hosts")
        ),
    ),
    "delete": (
        "delete",
        "drop",
        "remove",
        "truncate",
        "rm",
        "rmdir",
        "unlink",
        "purge",
        "wipe",
        "erase",
        "destroy",
        "nuke",
        "obliterate",
        "flush",
        "flushall",
        "flushdb",
        "dropdb",
        "empty out",
        "get rid",
        "blow away",
        "throw away",
        "throw out",
        "clean out",
        "tear down",
        "teardown",
        "prune",
        "shred",
        "zap",
        "trash",
        "scrap",
        "expunge",
        "deprovision",
        "annihilate",
        "demolish",
        "yeet",
        "eliminate",
        "eradicate",
        "discard",
        "junk",
        "ditch",
        "axe",
        "cull",
        "dispose",
        "do away",
        "scrub",
    ),
    "force-push": (
        "force push",
        "forcepush",
        "push force",
        "rewrite history",
        "history rewrite",
        "rewrite commit",
        "rewrite log",
        "filter branch",
        "filter repo",
        "bfg",
        "overwrite remote",
        "overwrite origin",
        "clobber remote",
        "push mirror",
        *(f"push over {b}" for b in ("main", "master", "trunk", "develop", "release")),
    ),
    "migrate": (
        "migrate",
        "migration",
        "alter table",
        "schema change",
        "change schema",
        "add column",
        "drop column",
        "rename column",
        "change column",
        "alter column",
        "modify column",
        "column type",
        "alembic upgrade",
        "flyway",
        "liquibase",
        "db migrate",
        "prisma migrate",
        "manage py migrate",
        "ddl",
        "goose up",
        "dbmate up",
        "dbmate migrate",
    ),
    "rotate": (
        "rotate",
        "rotation",
        "revoke",
        "revocation",
        "regenerate",
        "reissue",
        "invalidate",
        *(
            f"{v} {c}"
            for v in ("roll", "cycle", "renew", "swap", "swap out", "replace")
            for c in (
                "key",
                "secret",
                "token",
                "credential",
                "creds",
                "password",
                "passwd",
                "cert",
                "certificate",
            )
        ),
    ),
    "credential": (
        "credential",
        "creds",
        "secret",
        "password",
        "passwd",
        "token",
        "key",
        "access key",
        "ssh key",
        "signing key",
        "private key",
        "keypair",
        "certificate",
        "cert",
    ),
    "production": ("production", "prod", "prd", "live"),
    "registry": (
        "registry",
        "npm",
        "pnpm",
        "yarn",
        "pypi",
        "npmjs",
        "crates io",
        "rubygems",
        "maven central",
        "twine upload",
        "lerna publish",
        "changeset publish",
        "changesets publish",
        "cargo publish",
        "gem push",
        "poetry publish",
        "uv publish",
        "flit publish",
        "hatch publish",
    ),
}
"""Action synonyms: a pattern word that belongs to a concept is also met by any of the
concept's phrases in the action. Documented in docs/workflow.md; keep the two in step."""

PHRASE_GAP = 2
"""How many other words may stand between a phrase's words (`roll the new build out`)."""

# An identifier such as `drop_shipping` or `users.drop_date`, a file name such as
# `delete_user.py`, an option's value: names, not words of the action. Search splits them
# into words; concepts must not read them as verbs.
_NAME = re.compile(
    r"\S*\w/\S*|\S*/\w\S*|[\w.-]*\w_\w[\w.-]*|\b[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|md|txt|json|ya?ml|toml|cfg|ini|html|css|sql|sh|lock)\b"
)


# A script run as a command names its action: `./scripts/deploy_prod.sh` deploys.
_PROGRAM = re.compile(
    r"(^|&&|\|\||[;|\n]|\d[.)]\s|:\s|\b(?:sudo|bash|sh|zsh|python3?|node|ruby|perl|run|execute|exec)\s)"
    r"(\s*)"
    r"([\w.~/-]*/)?([\w-]+)\.(?:sh|py|rb|js|ts|pl|bash)\b"
)


def _program(m: re.Match[str]) -> str:
    return f"{m.group(1)}{m.group(2)}{m.group(4).replace('_', ' ')}"


@dataclass(frozen=True, slots=True)
class Analysis:
    """An action text: its search terms, and where each concept is expressed in them."""

    raw: str
    """The text lower-cased."""
    terms: tuple[str, ...]
    """Every search term of the text (identifiers split, as the index splits them)."""
    words: tuple[str, ...]
    """The terms of the text without identifiers, paths, file names and numbers: the words
    that say what the action does."""
    concepts: dict[str, tuple[int, ...]]
    """Concept → positions in `words` where one of its phrases starts."""

    def has(self, concept: str) -> bool:
        """Whether the action expresses `concept` (a key of `CONCEPTS`)."""
        return concept in self.concepts


@functools.cache
def _phrases() -> dict[str, tuple[tuple[str, ...], ...]]:
    return {c: tuple(tuple(tokens(p)) for p in ps) for c, ps in CONCEPTS.items()}


def _find(words: tuple[str, ...], phrase: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of each occurrence of `phrase` in `words`, gaps allowed."""
    found: list[tuple[int, int]] = []
    if not phrase:
        return found
    for start, w in enumerate(words):
        if w != phrase[0]:
            continue
        at, ok = start, True
        for p in phrase[1:]:
            window = words[at + 1 : at + 2 + PHRASE_GAP]
            if p not in window:
                ok = False
                break
            at = at + 1 + window.index(p)
        if ok:
            found.append((start, at))
    return found


TYPO_MIN = 6
"""Shortest word read as a slip of a synonym word, and shortest synonym word with slips read:
shorter words have too many real words one letter away (`evoke`/`revoke`, `drop`/`drip`)."""


@functools.cache
def _typos() -> dict[str, str]:
    """Each one-letter slip of a long synonym word (a letter left out, two neighbours swapped)
    → the word: `publsh`, `migartion`, `prodution`, `destory`. Substitutions are left out:
    they turn words into other real words (`remote` → `remove`)."""
    words = {w for ps in CONCEPTS.values() for p in ps for w in p.split() if len(w) >= TYPO_MIN}
    out: dict[str, str] = {}
    for w in sorted(words):
        slips = {w[:i] + w[i + 1 :] for i in range(len(w))}
        slips |= {w[:i] + w[i + 1] + w[i] + w[i + 2 :] for i in range(len(w) - 1)}
        for slip in slips - words:
            if len(slip) >= TYPO_MIN:  # `evoke`, `crate`, `rates` are words of their own
                out.setdefault(slip, w)
    return out


def _untypo(raw: str) -> str:
    typos = _typos()
    return re.sub(r"[a-z]{6,}", lambda m: typos.get(m.group(0), m.group(0)), raw)


_PARTICLE = re.compile(
    r"\b(tear|roll|wipe|shut|take|blow|throw|clean|empty|get|put|push|rip|flip|switch|cut)\s+"
    r"((?:(?!down|out|away|off|up|over)[\w'.-]+\s+){1,5}?)(down|out|away|off|over)\b"
)
"""A phrasal verb with its object in the middle, put back together: "tear the staging and
prod environments down" is "tear down the staging and prod environments". (One word in the
middle is already within a phrase's gap.)"""


_FOREIGN: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), english)
    for pattern, english in (
        # Spanish, French and German words for the actions and their objects; whole words
        # only, so English words that share a beginning ("publication") are left alone.
        (
            r"\b(?:despleg\w*|desplieg\w*|d[ée]ployer|d[ée]ployez|"
            r"bereitstell\w*|ausroll\w*)\b",
            "deploy",
        ),
        (
            r"\b(?:publicar|publica|publique\w*|publier|publie[zr]?|ver[öo]ffentlich\w*)\b",
            "publish",
        ),
        (
            r"\b(?:borra\w*|eliminar|elimina|elimine\w*|suprim\w*|supprim\w*|effacer|efface[zr]?|"
            r"l[öo]sch\w*|loesch\w*)\b",
            "delete",
        ),
        (r"\b(?:rotier\w*|rotar|renouvele[rz]|renouvelle\w*)\b", "rotate"),
        (r"\b(?:producci[óo]n|produktion)(?:s(?=server|umgebung|datenbank))?", "production "),
        (r"\bbases?\s+de\s+(?:datos|donn[ée]es)\b|\bdatenbank(?:en)?", "database "),
        (r"\b(?:tabla|tabelle)\b", "table"),
        (r"\b(?:contrase[ñn]a|mot\s+de\s+passe|passwort)\b", "password"),
        (r"\b(?:clave|cl[ée]|schl[üu]ssel)\b", "key"),
        (r"\b(?:migraci[óo]n|migrer|migrier\w*)\b", "migration"),
    )
)
"""Action words of a few other languages read as their English words (docs/workflow.md):
"supprime la base de données clients en prod" deletes a database."""


def _english(raw: str) -> str:
    if raw.isascii() and not re.search(
        r"\b(?:despl|depl|d[eé]ploy|bereit|publi|borr|elimin|"
        r"supr|suppr|effac|l[oö]sch|rotier|rotar|renouv|produc|"
        r"produk|base|datenb|tabl|contra|mot|passw|clav|cl[eé]|"
        r"schl|migr|ver[oö]ff|ausroll)",
        raw,
    ):
        return raw
    for pattern, english in _FOREIGN:
        raw = pattern.sub(english, raw)
    return raw


@functools.lru_cache(maxsize=4096)
def analyse(text: str) -> Analysis:
    """The search terms, action words and concepts of an action text or a pattern."""
    raw = _PARTICLE.sub(r"\1 \3 \2", _english(_untypo(text.lower())))
    # Numbers (versions, ids) say nothing about the action: "get 2.3.0 out" is "get out".
    words = tuple(w for w in tokens(_NAME.sub(" ", _PROGRAM.sub(_program, raw))) if not w.isdigit())
    concepts: dict[str, tuple[int, ...]] = {}
    present = set(words)
    shell = _is_shell(raw)
    for concept, phrases in _phrases().items():
        starts = sorted(
            {
                s
                for p in phrases
                if p and p[0] in present
                for s, e in _find(words, p)
                if concept in _NOUNS
                or (not _names_document(words, e, s) and not _looked_at(words, s, shell))
            }
        )
        if starts:
            concepts[concept] = tuple(starts)
    for concept, command in _COMMANDS:
        if command.search(raw) and concept not in concepts:
            concepts[concept] = ()
    return Analysis(raw=raw, terms=tuple(tokens(raw)), words=words, concepts=concepts)


_RUN_WORDS = frozenset(tokens("run execute exec invoke launch trigger start kick apply"))
_RUNNABLE = frozenset(tokens("script scripts step steps workflow hook hooks"))


def _names_document(words: tuple[str, ...], end: int, start: int | None = None) -> bool:
    """Whether the words after a concept phrase ending at `end` name a document ("release
    notes", "the deploy logs"); a document noun before a noun that holds data is a modifier
    ("wipe the test database", "drop the log tables")."""
    if words[end + 1 : end + 2] and words[end + 1] in _noun_words():
        end += 1  # "the rotate-credentials runbook", "the deploy-prod script"
    if (
        start is not None
        and words[end + 1 : end + 2]
        and words[end + 1] in _RUNNABLE
        and set(words[max(0, start - 3) : start]) & _RUN_WORDS
    ):
        return False  # "executing the migration script against prod" runs a migration
    return words[end + 1 : end + 2] in _DOC_NOUNS and not set(words[end + 2 : end + 3]) & (
        _DATA | _INFRA_OBJECTS | _KUBE_OBJECTS
    )


@functools.cache
def _noun_words() -> frozenset[str]:
    """The one-word phrases of the noun concepts (credential, production, registry)."""
    return frozenset(p[0] for c in _NOUNS for p in _phrases()[c] if len(p) == 1)


_POSSESSIVES = frozenset("my our your their his her its this that these those".split())


def _looked_at(words: tuple[str, ...], start: int, shell: bool = True) -> bool:
    """Whether a meta verb comes right before the concept phrase starting at `start`, a
    possessive or demonstrative between them allowed: "review my migration". In English,
    "get" before a verb is a passive ("the table gets truncated"), not a look."""
    i = start - 1
    while i >= 0 and words[i] in _POSSESSIVES:
        i -= 1
    if i >= 0 and words[i] == "get" and not shell:
        return False
    return i >= 0 and (words[i],) in _META_VERBS


_NOUNS = frozenset({"credential", "production", "registry"})
_DOC_NOUNS = frozenset(
    (w,)
    for w in tokens(
        "note notes guide doc docs documentation comment test tests readme changelog button module "
        "dropdown menu modal diagram ticket issue log logs checklist page section template folder "
        "directory runbook script check checks guard hook hooks policy pr mr step steps "
        "workflow label labels dashboard dashboards channel board boards column wiki "
        "dependencies deps requirements status"
    )
)
"""A concept word right before one of these names a document or a safeguard, not an action:
"release notes", "migration guide", "delete button", "deploy logs", "the force-push check"."""
_META_VERBS = frozenset(
    (w,)
    for w in tokens(
        "document explain describe discuss review investigate debug refactor rename "
        "get show list view inspect watch"
    )
)
"""A concept word right after one of these is talked about or looked at, not done: "document
the migration process", "explain the deploy", `kubectl get deploy -n prod`."""

_COMMANDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Command forms whose flags the word analysis drops (one-letter words, punctuation).
    (
        "force-push",
        re.compile(r"\bgit\b[^;&|\n]*\bpush\b[^;&|\n]*(?:\s-[a-z]*f[a-z]*\b|--force\b|\s\+[\w/])"),
    ),
    ("delete", re.compile(r"\brm\s+-")),
    # Bringing something into production deploys it ("bring the new schema into production").
    (
        "deploy",
        re.compile(
            r"\b(?:bring|put|push|move|roll|send|land|ship|promote|take|get)\b"
            r"(?:[^.;,!?]|\.(?=\w)){0,40}?"
            r"\b(?:into|onto|to|on)\s+(?:the\s+)?(?:production|prod)\b(?!\s+(?:logs?|issues?|"
            r"dashboards?|metrics|incidents?|alerts?|channels?|columns?|boards?|folders?|labels?|"
            r"tags?|lists?|docs?|pages?|wiki|runbooks?|notes|tickets?|team|on-?call)\b)"
        ),
    ),
    # Wanting production to run something new deploys it ("we need prod running the new
    # image", "get production on 2.3").
    (
        "deploy",
        re.compile(
            r"\b(?:need|needs|want|wants|get|have)\s+(?:prod|production)\s+"
            r"(?:running|on|serving|using)\b"
        ),
    ),
    # Production named inside a name or a path (`--stack acme/prod`, `inventories/production`,
    # `ProdStack`, `$PROD_URL`, `prod-db:5432`).
    (
        "production",
        re.compile(
            r"(?<![a-z0-9])(?:prod|production|prd)(?![a-z])"
            r"|(?<![a-z0-9])prod(?=stack|db|env|cluster|server|api|app|site)"
        ),
    ),
    # Migration runners under other names.
    (
        "migrate",
        re.compile(
            r"flyway\w*migrate|liquibase\w*update|\bef\s+database\s+update\b|\bdb:migrate\b"
            r"|\bmigrate\s+(?:up|deploy|latest)\b|\bmigrate:(?:latest|up|fresh|refresh|reset)\b"
        ),
    ),
    # Deploying commands with their options in between (`kubectl --context prod apply -f …`,
    # `helm -n prod upgrade …`), and CI workflows named for a deploy run by hand
    # (`gh workflow run deploy.yml -f environment=production`).
    (
        "deploy",
        re.compile(
            r"\bkubectl\b[^;&|\n]*\s(?:apply|set\s+image|rollout\s+(?:restart|undo))\b"
            r"|\bhelm\b[^;&|\n]*\s(?:upgrade|install)\b"
            r"|\b(?:workflow|pipeline)\s+(?:run|trigger|start)\s+[\w./-]*deploy"
        ),
    ),
    # Hosting CLIs that deploy (`vercel --prod`, `netlify deploy --prod`, `fly deploy`).
    (
        "deploy",
        re.compile(
            r"\bvercel\b[^;&|\n]*--prod\b|\b(?:netlify|fly|flyctl|firebase|serverless|sls|eb)\s+"
            r"deploy\b|\bgcloud\s+(?:app|run|functions)\s+deploy\b"
        ),
    ),
    # Changing, resetting or expiring a shared credential rotates it; one's own ("change my
    # password") is not a team's credential.
    (
        "rotate",
        re.compile(
            r"\b(?:change|reset|expire|generate\s+new|issue\s+new|re-?key)\s+"
            r"(?!my\b|your\b|his\b|her\b)(?:(?:the|all|every|our)\s+)?(?:[\w-]+\s+){0,3}?"
            r"(?:passwords?|passwd|credentials?|creds|secrets?|tokens?|keys?|certs?|certificates?)\b"
            r"(?!\s+(?:of|in)\s+(?:the|a|this|that)?\s*(?:dict|map|hash|object|json|yaml|array|"
            r"record|row|column|table|config|list|enum)\b)"
            r"|\bre-?key\s+the\b"
        ),
    ),
    # HashiCorp Vault rotating a secret engine's credentials (`vault write -f
    # database/rotate-root/prod-postgres`, `…/rotate-role/…`).
    ("rotate", re.compile(r"\bvault\s+write\b[^;&|\n]*/rotate(?:-root|-role)?\b")),
    ("credential", re.compile(r"\bvault\s+write\b[^;&|\n]*/rotate(?:-root|-role)?\b")),
    # Force-updating a shared branch or the remote.
    (
        "force-push",
        re.compile(
            r"\bforce[- ]update\s+(?:the\s+)?(?:main|master|trunk|develop|release|origin|remote|"
            r"upstream)\b"
        ),
    ),
    # Indexes and backfills on tables are schema and data migrations.
    (
        "migrate",
        re.compile(
            r"\b(?:add|create|drop|build|rebuild)\s+(?:an?\s+|the\s+)?(?:unique\s+)?index\b"
            r"[^.;!?]{0,40}?\b(?:tables?|columns?|concurrently)\b"
            r"|\bcreate\s+(?:unique\s+)?index\b[^;]*\bon\s+[\w.\"]+\s*\("
            r"|\bbackfill\b[^.;!?]{0,40}?\b(?:columns?|tables?|rows|records)\b"
        ),
    ),
    # An npm package scope (`@acme/ui`) names the npm registry.
    ("registry", re.compile(r"(?:^|\s)@[a-z0-9][\w.-]*/[a-z0-9][\w.-]*")),
)


@functools.lru_cache(maxsize=4096)
def units(pattern: str) -> tuple[frozenset[str], ...]:
    """What an `applies_when` phrase asks for, one set of alternatives per word: a word that a
    synonym phrase covers asks for its concepts (`@publish`), any other word for itself.
    A name in the pattern (`drop_shipping`, `db/seed.sql`) asks for its own words."""
    a = analyse(pattern)
    covered: list[set[str]] = [set() for _ in a.words]
    for concept, phrases in _phrases().items():
        for phrase in phrases:
            for start, end in _find(a.words, phrase):
                for i in range(start, end + 1):
                    if a.words[i] in phrase:
                        covered[i].add(f"@{concept}")
    wanted = [frozenset(c or {w}) for w, c in zip(a.words, covered, strict=True)]
    wanted += [frozenset({t}) for t in a.terms if t not in a.words]
    return tuple(dict.fromkeys(wanted))


def features(text: str) -> frozenset[str]:
    """What an action offers to a pattern: its search terms and `@concept` for each concept."""
    a = analyse(text)
    return frozenset(a.terms) | {f"@{c}" for c in a.concepts}


def meets(pattern: str, text: str) -> bool:
    """Whether every word of `pattern` appears in `text`, itself or as a synonym."""
    wanted = units(pattern)
    have = features(text)
    return bool(wanted) and all(u & have for u in wanted)


def overlaps(pattern: str, text: str) -> bool:
    """Whether some word of `pattern` (itself or a synonym) appears in `text`: looser than
    `meets`, for a task described in a sentence."""
    have = {f for f in features(text) if f.startswith("@") or (len(f) >= 3 and not f.isdigit())}
    return any(u & have for u in units(pattern) if not u <= {"@production", "@registry"})


# -- built-in guards --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Guard:
    """A built-in rule: warns before an obviously destructive action, named so it can be
    turned off in `memstore.yaml`."""

    name: str
    description: str
    test: Callable[[Analysis], str | None]
    """What it saw in the action (a short quote), or None when it does not apply."""


_SEP = re.compile(r"&&|\|\||[;|\n]|\$\(|`|\s#\s")
_WRAPPERS = frozenset({"sudo", "xargs", "env", "exec", "command", "nohup", "time", "doas"})
_READERS = frozenset(
    {"grep", "rg", "ag", "ack", "echo", "printf", "cat", "less", "more", "head", "tail", "man"}
    | {"cd", "pushd", "popd", "open", "code", "vim", "vi", "nvim", "nano", "emacs"}
)
"""Commands that only search or print: `grep -r "DROP TABLE" migrations/` drops nothing."""
_PRINTERS = frozenset({"echo", "printf", "cat"})
_TEMP_PREFIXES = (
    *("/tmp/", "/var/tmp/", "/private/tmp/", "/dev/shm/"),
    *("$tmpdir", "${tmpdir", "$tmp", "${tmp", "$runner_temp", "%temp%"),
)
DISPOSABLE = frozenset(
    {
        "build", "dist", "out", "target", "node_modules", ".cache", "__pycache__",
        ".pytest_cache", ".mypy_cache", ".ruff_cache", "coverage", ".coverage", "htmlcov",
        ".tox", ".nox", ".next", ".nuxt", ".turbo", ".parcel-cache", ".gradle", "tmp", "temp",
        ".tmp", "_build", "_site", ".eggs", ".venv", "venv", "obj", ".sass-cache",
        "storybook-static", ".terraform", ".angular", ".svelte-kit", ".docusaurus",
    }
)  # fmt: skip
"""Folders that builds and tools recreate: a recursive `rm` of them stays ALLOW."""

SHARED_BRANCHES = re.compile(
    r"^(?:main|master|trunk|develop|development|dev|staging|stage|prod|production|live|"
    r"gh-pages|release|releases|stable|hotfix)(?:[/-].*)?$"
)
"""Branches a team shares: any force push to them warns."""


@dataclass(frozen=True, slots=True)
class _Command:
    raw: str
    words: tuple[str, ...]
    """Shell words, with `sudo`, `env X=1` and the like taken off the front."""

    @property
    def name(self) -> str:
        return self.words[0].rsplit("/", 1)[-1] if self.words else ""


@functools.lru_cache(maxsize=256)
def _commands(raw: str) -> tuple[_Command, ...]:
    """The simple commands of a shell line (split at `&&`, `;`, `|`, …)."""
    out: list[_Command] = []
    for part in _SEP.split(raw):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            words = part.split()
        while words and (words[0] in _WRAPPERS or "=" in words[0] or words[0].startswith("-")):
            words = words[1:]
        if words:
            out.append(_Command(part, tuple(words)))
    return tuple(out)


_GIT_TEXT = frozenset({"grep", "log", "show", "diff", "commit", "tag", "notes"})
"""git commands that search, show or only carry a message: `git commit -m "drop the table"`."""


def _reads(command: _Command) -> bool:
    return command.name in _READERS or (
        command.name == "git" and len(command.words) > 1 and command.words[1] in _GIT_TEXT
    )


_INTERPRETER = re.compile(
    r"\|\s*(?:sudo\s+)?(?:psql|mysql|mariadb|sqlite3|mongo|mongosh|redis-cli|cqlsh|"
    r"clickhouse-client|sh|bash|zsh|python3?|node|kubectl\s+(?:apply|delete|create))\b"
)
"""A pipe into a shell, a database client or `kubectl apply`: what is printed into it is run
(`echo "DROP TABLE events;" | psql prod`)."""


def _scan(a: Analysis, pattern: re.Pattern[str]) -> str | None:
    """The first match of a command pattern, outside commands that only search or print
    (unless what they print is piped into an interpreter)."""
    piped = _INTERPRETER.search(a.raw) is not None
    for command in _commands(a.raw):
        if _reads(command) and not (piped and command.name in _PRINTERS):
            continue
        m = pattern.search(command.raw)
        if m:
            return " ".join(m.group(0).split())[:60]
    return None


def _near(a: Analysis, verbs: set[int], objects: frozenset[str], window: int = 3) -> str | None:
    """Words from a verb to one of `objects` within `window` words after it, unless a code or
    document noun comes first or right after ("the database module", "table of contents").
    English only: a shell line's arguments are names (`git rm --cached .env`), not objects."""
    if _is_shell(a.raw):
        return None
    passive = _PASSIVE.search(a.raw) is not None
    for pos in sorted(verbs):
        if passive:
            before = a.words[max(0, pos - window) : pos]
            hit = next((w for w in reversed(before) if w in objects), None)
            if hit is not None and not set(before[before.index(hit) + 1 :]) & _CODE_NOUNS:
                return " ".join(a.words[pos - len(before) + before.index(hit) : pos + 1])
        after = a.words[pos + 1 : pos + 1 + window]
        if after[:1] in (("me",), ("us",)):
            continue  # "drop me a line", "remove us from the thread"
        for i, w in enumerate(after):
            if w in _CODE_NOUNS and not set(after[i + 1 : i + 3]) & objects:
                break  # "the test file"; but "the test database", "test and prod stacks"
            if w in _CODE_NOUNS:
                continue
            if w in objects:
                if a.words[pos + 2 + i : pos + 3 + i] and a.words[pos + 2 + i] in _CODE_NOUNS:
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


def _verbs(a: Analysis, *extra: str) -> set[int]:
    found = set(a.concepts.get("delete", ()))
    return found | {i for i, w in enumerate(a.words) if w in extra}


_CODE_NOUNS = frozenset(
    tokens(
        "module file files code test tests class function method doc docs comment import "
        "config fixture mock helper contents dropdown script pr ticket diagram docstring "
        "typo link section paragraph readme page variable field flag option line lines "
        "button feature example sample screenshot"
    )
)


def _disposable(path: str) -> bool:
    """Whether a path is a temp folder, or a build/cache folder inside the project."""
    p = path.strip("'\"").lower()
    if p.startswith(_TEMP_PREFIXES) or p in ("/tmp", "$tmpdir", "${tmpdir}"):
        return ".." not in p.split("/")
    if p.startswith(("/", "~", "$home", "${home", "..")) or "/../" in p:
        return False
    parts = [x for x in p.rstrip("/*").split("/") if x not in ("", ".")]
    if not parts:
        return False  # `.`, `*`, `./*`: the whole working folder
    last = parts[-1]
    if last in DISPOSABLE or last.endswith((".egg-info", ".log", ".tmp", ".pyc", ".o")):
        return True
    return any(x in DISPOSABLE for x in parts[:-1])


_SYSTEM = re.compile(
    r"(?:^|\s)(?:/(?:etc|var|usr|home|opt|srv|data|mnt|root|boot|lib)\b|~/|~\s|/\s|/\*)"
)
_EVERYTHING = frozenset(
    tokens(
        "everything all entire whole home root disk drive filesystem repo repository recursively"
    )
)


_ALL_OF = re.compile(
    r"\b(?:delete|remove|wipe|erase|purge|nuke|destroy|clear)\s+(?:all|every)\b"
    r"(?:\s+(?:the|of|my|our|their))*(?:\s+[\w-]+)?\s+(?:files|data|backups?|records|rows|"
    r"tables|databases|users|branches|buckets|volumes|objects|snapshots)\b"
)
"""A delete of all of something that holds data: "delete all the files in the backups folder"."""


def _rm(a: Analysis) -> str | None:
    for command in _commands(a.raw):
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
            paths = [t.replace("\\", "/") for t in targets]
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
    if a.has("delete") and not any(c.name == "rm" for c in _commands(a.raw)):
        m = None if _is_shell(a.raw) else _ALL_OF.search(a.raw)
        if m:
            return " ".join(m.group(0).split())[:60]
        seen = _near(a, _verbs(a), _EVERYTHING, 4)
        if seen:
            return seen
        if _SYSTEM.search(a.raw) and not re.search(r"(?:^|\s)/(?:tmp|var/tmp)\b", a.raw):
            return "delete " + " ".join(a.raw.split())[:40]
    return None


_SQL = re.compile(
    r"\bdrop\s+(?:table|database|schema|keyspace|collection)\b"
    r"|\btruncate\s+table\b|^\s*truncate\s+[\w\"`.]+\s*;?\s*$"
    r"|\btruncate\s+(?:only\s+)?[\w\"`.]+(?:\s*,\s*[\w\"`.]+)*\s+"
    r"(?:cascade|restrict|restart\s+identity|continue\s+identity)\b"
    r"|\btruncate\s+(?:only\s+)?[\w\"`.]+\s*;?\s*['\"]"
    r"|\bdelete\s+from\s+[\w\"`.]+\s*(?:;|$|[\"')])"
    r"|\b(?:delete\s+from|update)\s+[\w\"`.]+\s+(?:set\s+[^;]*?)?where\s+(?:1\s*=\s*1|true)\b"
    r"|\balter\s+table\b[^;]*\bdrop\b"
    r"|\bdropdb\b|\bflush(?:all|db)\b|\bdropdatabase\s*\(|\.drop\s*\(\s*\)"
    r"|\bdb:(?:drop|reset|purge|schema:load|truncate_all)\b|\bpg:reset\b"
    r"|\bupdate\s+[\w\"`.]+\s+set\b(?![^;]*\bwhere\b)"
)
_DATA = frozenset(
    tokens(
        "table tables database databases db schema keyspace collection postgres postgresql "
        "mysql redis mongo mongodb dynamodb bigquery dataset datasets warehouse indices "
        "elasticsearch opensearch solr kafka topic topics cassandra record records"
    )
)


_RETIRE = tuple(tokens("decommission retire sunset terminate overwrite clobber"))
"""Verbs that end a database or a piece of infrastructure without being delete words
elsewhere ("retire the old endpoint" deletes nothing)."""
_BLANK_OUT = re.compile(
    r"\b(?:zero|null|blank)\s+out\s+(?:the\s+|all\s+|every\s+)?(?:[\w-]+\s+){0,2}?"
    r"(?:columns?|fields?|tables?)\b"
)
"""Overwriting a column's values ("zero out the balances column in accounts")."""


def _sql(a: Analysis) -> str | None:
    seen = _scan(a, _SQL)
    if seen:
        return seen
    m = _BLANK_OUT.search(a.raw)
    if m and not _is_shell(a.raw):
        return " ".join(m.group(0).split())
    return _near(
        a,
        _verbs(a, *_RETIRE, "empti", "clear", "reset", "kill", "recreat", "reiniti", "reinit"),
        _DATA,
        4,
    )


_OVERWRITE = re.compile(
    r"\b(?:overwrite|clobber|replace|reset)\s+(?:the\s+)?(?:origin|upstream|remote)\b(?:/[\w./-]+)?"
)
"""Replacing what a remote holds is a force push, whatever the words for it."""
_OVERWRITE_SHARED = re.compile(
    r"\b(?:overwrite|clobber|replace|reset)\s+(?:the\s+)?(?:main|master|trunk|develop|release|"
    r"production|prod|staging)\b(?:\s+branch)?\s+(?:with|to)\b"
)
"""Overwriting a shared branch with another ("overwrite main with my branch") rewrites it."""
_PUSH_SHARED = frozenset(tokens("main master trunk develop release production prod staging"))


def _force_push(a: Analysis) -> str | None:
    for command in _commands(a.raw):
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
        shared = not refs or any(SHARED_BRANCHES.match(r) for r in refs)
        # `--force` to a branch of one's own (`feature/x`) rewrites only that branch.
        if "--mirror" in flags or ((force or deleting or lease) and shared):
            return " ".join(words[:6])
    if _is_shell(a.raw) and any(
        c.name == "git" and "push" in c.words[1:3] for c in _commands(a.raw)
    ):
        return None  # the push's own flags and branches said it above
    m = _OVERWRITE.search(a.raw) or _OVERWRITE_SHARED.search(a.raw)
    if m:
        return " ".join(m.group(0).split())
    if a.has("force-push"):
        if "leas" in a.words and not set(a.words) & _PUSH_SHARED:
            return None  # with lease, to a branch of one's own
        return "force push"
    verbs = _verbs(a)
    named = {w for w in re.findall(r"[\w./-]+", a.raw) if SHARED_BRANCHES.match(w)}
    for pos in sorted(verbs):
        near = set(a.words[pos + 1 : pos + 4])
        if "branch" in near and (near & _PUSH_SHARED or (named and set(a.words) & _REMOTE)):
            return " ".join(a.words[pos : pos + 4])
    return None


_REMOTE = frozenset(tokens("origin upstream remote"))


_INFRA = re.compile(
    r"\b(?:terraform|tofu|terragrunt|pulumi|cdk|cdktf)\b(?![^;&|\n]*\b(?:plan|preview)\b)"
    r"[^;&|\n]*\bdestroy\b"
    r"|\bterraform\b[^;&|\n]*\bapply\b[^;&|\n]*-destroy\b"
    r"|\b(?:sls|serverless)\s+remove\b|\bdelete-stack\b|\beksctl\s+delete\b"
    r"|\bgcloud\b[^;&|\n]*\bdelete\b|\baz\b[^;&|\n]*\bdelete\b|\bdoctl\b[^;&|\n]*\bdelete\b"
    r"|\baws\b[^;&|\n]*\b(?:delete-[\w-]+|terminate-instances|rb)\b"
    r"|\baws\s+s3\s+rm\b[^;&|\n]*--recursive|\bgsutil\b[^;&|\n]*\b(?:rb|rm\s+-r)\b"
    r"|\bhelm\s+(?:uninstall|delete|del)\b"
    r"|\bdocker\b[^;&|\n]*\b(?:volume\s+(?:rm|prune)|system\s+prune)\b"
    r"|\bdocker[- ]compose\b[^;&|\n]*\bdown\b[^;&|\n]*(?:\s-v\b|--volumes)"
    r"|\bmkfs\b|\bwipefs\b|\bdd\b[^;&|\n]*\bof=/dev/|>\s*/dev/(?:sd|nvme|disk|hd|xvd)"
    r"|\b(?:heroku|fly|flyctl)\b[^;&|\n]*\bdestroy\b|\bvercel\s+(?:remove|rm)\b"
    r"|\bgh\s+(?:repo|release)\s+delete\b|\bnpm\s+unpublish\b"
    r"|\b(?:curl|gh\s+api|http|https|xh|wget)\b[^;&|\n]*(?:-x\s*|--request[\s=]+|--method[\s=]+)"
    r"delete\b"
)
_INFRA_OBJECTS = frozenset(
    tokens(
        "infra infrastructure stack stacks environment env cluster clusters bucket buckets vpc "
        "volume volumes backup backups snapshot snapshots instance instances server servers "
        "resource resources account disk drive region terraform s3 vm vms droplet workspace "
        "workspaces"
    )
)


def _infra(a: Analysis) -> str | None:
    seen = _scan(a, _INFRA)
    if seen:
        return seen
    return _near(a, _verbs(a, *_RETIRE, "format", "destroy", "empti"), _INFRA_OBJECTS, 4)


_KUBE = re.compile(
    r"\b(?:kubectl|oc)\s+(?:[^;&|\n]*\s)?delete\s+(?!pods?\b|po\b|jobs?\b|events?\b)[\w./-]+"
    r"|\bkubectl\b[^;&|\n]*\bdelete\b[^;&|\n]*(?:--all\b|\s-a\b|--all-namespaces)"
    r"|\bkubectl\s+drain\b"
)
_KUBE_OBJECTS = frozenset(
    tokens(
        "namespace namespaces ns pvc pvcs pv persistent statefulset crd cluster kubernetes k8s "
        "kube deployment"
    )
)


def _kube(a: Analysis) -> str | None:
    return _scan(a, _KUBE) or _near(a, _verbs(a), _KUBE_OBJECTS, 4)


_GIT_DISCARD = re.compile(
    r"\bgit\s+reset\b[^;&|\n]*--hard\b|\bgit\s+clean\b[^;&|\n]*\s-[a-z]*f|\bgit\s+stash\s+clear\b"
    r"|\bgit\s+checkout\s+(?:--\s+)?\.\s*$|\bgit\s+restore\s+(?:--\S+\s+)*\.\s*$"
)
_DISCARD = frozenset(tokens("discard throw lose nuke wipe blow reset"))
_UNSAVED = frozenset(tokens("uncommitted unstaged untracked local"))
_WORK = frozenset(tokens("changes work files edits modifications commits"))


def _git_discard(a: Analysis) -> str | None:
    seen = _scan(a, _GIT_DISCARD)
    if seen:
        return seen
    for pos, word in enumerate(a.words):
        if word not in _DISCARD:
            continue
        after = a.words[pos + 1 : pos + 5]
        for i, w in enumerate(after):
            if w in _UNSAVED and set(after[i + 1 : i + 3]) & _WORK:
                return "discard uncommitted work"
    return None


_REVOKE = re.compile(
    r"\baws\s+iam\s+delete-(?:access-key|login-profile|ssh-public-key|signing-certificate)\b"
    r"|\brevoke\b[^;&|\n]*\b(?:token|key|cert)"
)
_SECRETS = frozenset(
    tokens(
        "credential credentials creds secret secrets password token tokens key keys "
        "certificate cert certs keypair"
    )
)


def _revoke(a: Analysis) -> str | None:
    seen = _scan(a, _REVOKE)
    if seen:
        return seen
    return _near(a, _verbs(a, "revok", "invalid", "deactiv", "expir"), _SECRETS, 4)


GUARDS: tuple[Guard, ...] = (
    Guard(
        "rm-rf", "a recursive delete outside temp and build folders: nothing brings it back", _rm
    ),
    Guard("drop-data", "drops, truncates or wipes database tables or data", _sql),
    Guard(
        "force-push", "a force push or history rewrite: it discards others' commits", _force_push
    ),
    Guard(
        "destroy-infra",
        "destroys infrastructure, cloud resources, volumes, disks or published packages",
        _infra,
    ),
    Guard("kubectl-delete", "deletes Kubernetes namespaces, volumes or workloads", _kube),
    Guard(
        "discard-work", "discards uncommitted work (git reset --hard, git clean -f)", _git_discard
    ),
    Guard("revoke-credentials", "revokes or deletes credentials that services may use", _revoke),
)
"""The built-in guards, in the order their reasons are listed."""

GUARD_NAMES = tuple(g.name for g in GUARDS)


def guard_hits(text: str, disabled: frozenset[str] = frozenset()) -> list[tuple[Guard, str]]:
    """The enabled guards that apply to `text`, each with what it saw."""
    a = analyse(text)
    out: list[tuple[Guard, str]] = []
    commands = _commands(a.raw)
    if commands and all(_reads(c) for c in commands):
        return out  # `grep "DROP TABLE"`, `echo "rm -rf /"`: a search or a print
    for guard in GUARDS:
        if guard.name in disabled:
            continue
        seen = guard.test(a)
        if seen is not None:
            out.append((guard, seen))
    return out


# -- what the text asks to do -----------------------------------------------------------------
#
# A check is asked about an action about to be taken. Text that only talks about an action
# (a report of one that happened, a question about one, a document being written about one, a
# command that only reads) asks for nothing to be done: matching its words against rules and
# guards raised false alarms on "we deleted the old branch yesterday", `man rm` or
# `git log --grep "force push"` (docs/workflow.md, the second bank's first run).

_PROGRAMS = frozenset(
    """
    git rm rmdir find mv cp ln chmod chown dd mkfs kubectl oc helm terraform tofu terragrunt
    pulumi aws gcloud gsutil az doctl docker podman npm pnpm yarn npx pip pipx twine uv poetry
    cargo gem go make python python3 node ruby perl bash sh zsh ssh scp rsync psql mysql
    sqlite3 mongo mongosh redis-cli dropdb createdb pg_dump alembic flyway liquibase rails rake
    heroku fly flyctl vercel gh curl wget sudo xargs grep rg ag ack echo printf man sed awk ls
    tar unzip srm rd del lerna changeset vault cd pushd popd vim vi nvim nano emacs twine dotnet
    gradle gradlew mvn php composer bundle knex sequelize prisma goose dbmate ansible-playbook
    cdk railway netlify firebase eb sam
    """.split()
)
"""Programs a shell line starts with: such a text is a command, taken as it is written."""
_WORDS_TOO = frozenset("find make go env cat less more head tail shred truncate".split())
"""Programs that are English words too: a shell line only with an option or a path next
(or, for `make`, a target)."""
_MAKE_ENGLISH = frozenset(
    "sure certain it its the a an this that these those them sense space room way use time "
    "one some me us everything all any no do it's".split()
)

_READ_SUBCOMMANDS = {
    "git": frozenset(
        "grep log show diff status blame shortlog reflog describe ls-files ls-remote".split()
    ),
    "kubectl": frozenset("get describe logs explain top diff version api-resources".split()),
    "oc": frozenset("get describe logs explain".split()),
    "terraform": frozenset("plan show output validate fmt graph providers version".split()),
    "tofu": frozenset("plan show output validate fmt graph providers version".split()),
    "helm": frozenset("list ls status get template history show search lint diff".split()),
    "npm": frozenset("view info show ls list outdated search whoami pack".split()),
    "pnpm": frozenset("view info ls list outdated".split()),
    "yarn": frozenset("info list outdated why".split()),
    "alembic": frozenset("history current show heads branches".split()),
    "flyway": frozenset("info validate".split()),
    "liquibase": frozenset("status history diff validate".split()),
}
"""Subcommands that only show or compare: `kubectl get namespace`, `terraform plan -destroy`."""
_HELP = frozenset({"--help", "-h", "--dry-run", "--dryrun", "--what-if", "--whatif", "--version"})


def _asks_help(words: tuple[str, ...]) -> bool:
    """Whether a command only asks for help or rehearses. `-h` followed by a value is a host
    (`redis-cli -h prod-cache FLUSHALL`, `psql -h db …`), not help."""
    for i, w in enumerate(words):
        if w == "-h" and i + 1 < len(words) and not words[i + 1].startswith("-"):
            continue
        if w in _HELP or w.startswith("--dry-run=") and w != "--dry-run=none":
            return True
    return False


_SHOW_WORDS = frozenset({"showmigrations", "sqlmigrate", "help", "whatis", "apropos", "tldr"})


def _only_reads(command: _Command) -> bool:
    """Whether a simple command only searches, shows, plans or prints."""
    words = command.words
    if _reads(command) or command.name in _SHOW_WORDS:
        return True
    if _asks_help(words):
        return True
    if any(w in _SHOW_WORDS for w in words[1:3]):
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
    subcommands = _READ_SUBCOMMANDS.get(command.name)
    if subcommands is not None:
        verbs = [w for w in words[1:] if not w.startswith("-")][:1]
        return bool(verbs) and verbs[0] in subcommands
    return command.name == "aws" and any(
        w == "ls" or w.startswith(("describe-", "get-", "list-")) for w in words[1:4]
    )


def _inert(command: _Command) -> bool:
    """Whether a command only prints help or rehearses (`man rm`, `--help`, `--dry-run`)."""
    words = command.words
    return command.name in _SHOW_WORDS or command.name == "man" or _asks_help(words)


def readers(text: str) -> frozenset[str]:
    """The programs of a shell line that only reads, for rules that name them: `cat .env`
    reads, yet a rule "never cat .env" is about exactly that. Help and dry runs name none."""
    raw = text.strip().lower()
    if not _is_shell(raw):
        return frozenset()
    commands = _commands(raw)
    if not commands or not all(_only_reads(c) for c in commands):
        return frozenset()
    return frozenset(c.name for c in commands if not _inert(c))


def _is_shell(raw: str) -> bool:
    """Whether a text is a shell line (it starts with a program), not English that names one
    ("terraform destroyed the stack")."""
    words = raw.split()
    first = words[0] if words else ""
    second = words[1] if len(words) > 1 else ""
    if first in _WORDS_TOO:
        if second.startswith("-") or "/" in second or "." in second:
            return True
        if first != "make" or not second or second in _MAKE_ENGLISH:
            return False  # "find the logs", "make sure …"; `make deploy` is a target
    if "/" in first and first.rsplit("/", 1)[-1] in _PROGRAMS:
        return True  # `bin/rails …`, `vendor/bin/…`, `node_modules/.bin/…`
    if not (first in _PROGRAMS or first.startswith(("./", "/", "~/")) or "=" in first):
        return False
    return not _past([first.title(), *words[1:3]])


_CLAUSE = re.compile(r"\s*(?:[;,.!?:]\s+|[;!?]$|\s(?:and then|then|and|but|so)\s)\s*")
_SUBJECTS = frozenset(
    "i we they he she you it someone somebody nobody everyone everybody anyone people "
    "the this that our their my his her ci".split()
)
_TIME_FIRST = frozenset("yesterday earlier previously already today recently then".split())
_IRREGULAR_PAST = frozenset(
    """
    ran did made went took wrote rewrote broke got forgot lost saw told said left began
    brought sent threw tore led kept built gave had was were fue fueron war waren wurde wurden
    """.split()
)
_NOT_PAST = frozenset("need feed seed embed shred shed bed red speed proceed exceed".split())
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
    known = _LOOK_VERBS | _EDIT_VERBS | _TALK_ONLY | _BEFORE_VERBS
    for base in (stem, stem + "e", stem[:-1]):
        if base in known:
            return base
    return word


_BEFORE_VERBS = frozenset(
    "ask wait notify announce remind ping email message inform warn backup back snapshot dump "
    "export".split()
)
"""Work done ahead of an action, that names the action only as when it is done: "waiting for
CI before the npm publish", "asking the release manager before deploying to production",
"backing up the prod database before tomorrow's migration"."""
_REFERENCE = re.compile(
    r"\b(?:before|until|till|ahead of|prior to|about|whether|if|"
    r"for (?:approval|the go-ahead|a go))\b"
)
_LOOK_VERBS = frozenset(
    "see look read skim browse compare cf glance peek check verify monitor inspect watch "
    "examine audit investigate diagnose show display".split()
)
"""A clause opening on one of these points at something to look at ("see the DROP TABLE
statements in old migrations", "check that the prod deploy is healthy", "show me the diff of
the migration")."""
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
_EDIT_VERBS = frozenset(
    "write document update edit fix add draft review read explain describe proofread reword "
    "migrate move port convert "
    "rephrase mention note comment amend correct translate summarise summarize".split()
)
_WRITTEN = frozenset(
    """
    doc docs documentation note notes readme changelog runbook runbooks wiki page section
    paragraph guide comment comments typo typos warning message sentence faq adr postmortem
    lint rule checklist ticket issue description text wording migration migrations script
    scripts test tests function query code patch snippet helper pr prs mr diff commit
    """.split()
)
_TALK_ONLY = frozenset(
    "explain describe document summarise summarize outline clarify discuss".split()
)
"""A clause opening on one of these talks about what follows ("explain how to deploy to
production"), asked politely or not."""
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
_RUNS = frozenset("run execute exec invoke type enter paste try".split())
_CODE_TALK_BEFORE = frozenset(
    """
    the a an that this these those our your my their its about of in like from whether than
    for with without around into on at by over under against via what which how why if when
    whenever where as say said explain mention wrap guard block forbid ban flag catch detect
    grep search find quote mock alias replace document describe warn prevent disallow allow
    """.split()
)
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
        if said is None and _is_shell(command.lower()):
            said = command
        if said is None:
            return raw
        out.append(said)
    return "\n".join(out) if out else raw


_RMTREE = re.compile(
    r"(?i)^(?:rmtree|rm_rf|rm_r|removeall|rimraf|rmsync|rm|deletedirectory|delete)$"
)
_SQL_CALLS = frozenset(
    "execute exec statement raw query run_sql executescript sql text unprepared "
    "exec_driver_sql executeupdate execsql executesql".split()
)
_API_ACTIONS = frozenset(
    "delete drop remove destroy terminate truncate purge rotate revoke publish deploy migrate "
    "flush wipe".split()
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
    if name.lower() in _SQL_CALLS and literals:
        return "; ".join(literals)
    if set(words.split()) & _API_ACTIONS and literals:
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


def _past(words: list[str]) -> bool:
    """Whether a clause's words report something done: a subject (or a time) then a verb in
    the past, a passive in the past, or a clause opening on a verb in the past."""

    def past(word: str) -> bool:
        if word in _IRREGULAR_PAST:
            return True
        w = word.rsplit("-", 1)[-1]
        return len(w) > 3 and w.endswith("ed") and w not in _NOT_PAST and not w.endswith("eed")

    if not words:
        return False
    start = 1 if words[0] in _TIME_FIRST else 0
    rest = words[start:]
    if rest and past(rest[0]):
        return True  # "pushed the tag", "yesterday rotated the keys"
    first = rest[0].lower() if rest else ""
    if rest and (first in _SUBJECTS or first in _PROGRAMS or rest[0].istitle()):
        for w in rest[1:6]:
            if w in ("will", "should", "must", "can", "could", "would", "to"):
                return False
            if past(w.lower()):
                return True
    return False


_PRONOUNS = frozenset("i we you they he she someone somebody".split())


def _reports(lower: list[str]) -> bool:
    """Whether a clause that names a past time has its main verb in the past: a verb in the
    past after the first word and not right after a pronoun ("the deploy to prod went fine
    yesterday"). An order keeps its verb first and may say what someone did in a relative
    clause: "delete the branch I pushed yesterday", "push the release we built last week"."""
    if not lower or analyse(lower[0]).concepts:
        return False
    return any(
        _past([w]) and lower[i] not in _PRONOUNS for i, w in enumerate(lower[1:]) if w != "ago"
    )


def _talks(clause: str) -> bool:
    """Whether an English clause only talks about an action: reports it, asks about it, or
    edits a document about it."""
    lowered = _TOPIC.sub("", clause.lower().strip())
    if _NEGATED.match(lowered) or _HYPOTHETICAL.match(lowered):
        return True
    core = re.findall(r"[\w'-]+", _POLITE.sub("", lowered))
    core[:1] = [_base(w) for w in core[:1]]  # "checking whether …" looks as "check" does
    if core and core[0] in _LOOK_VERBS and core[1:2] not in (["you"], ["u"], ["ya"]):
        return True
    if core and core[0] in _BEFORE_VERBS and _REFERENCE.search(lowered):
        return True
    if core and (
        core[0] in _TALK_ONLY or (core[0] in _EDIT_VERBS and any(w in _WRITTEN for w in core[1:7]))
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
            not set(analyse(lower[0]).concepts) - _NOUNS
            or (lower[0].endswith("s") and lower[1:2] in (["are"], ["were"]))
        )
    ):
        return True  # "credential rotation is handled by …", "deploys are frozen"
    if _DESCRIBES.match(lowered) or _DOING.match(clause.strip()):
        return True
    if _ASKING.match(lowered) or _past([w if w[:1].isupper() else w.lower() for w in words]):
        return True
    if _JUDGES.match(lowered) or (
        lower[:1] and lower[0] in _LOOK_VERBS and lower[1:2] not in (["you"], ["u"], ["ya"])
    ):
        return True
    if _PAST_TIME.search(lowered) and _reports(lower):
        return True
    if lower and lower[0] in _EDIT_VERBS:
        return any(w in _WRITTEN for w in lower[1:7])
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
    if _is_shell(raw.lower()):
        commands = _commands(raw.lower())
        if commands and all(_only_reads(c) for c in commands):
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
        if last in _RUNS or last.startswith("-") or "/" in last or "." in last:
            return m.group("body")
        said = last in _CODE_TALK_BEFORE or (
            last.endswith("s") and last not in ("pls", "plz", "us", "yes")
        )  # "when someone types `…`", "it runs `…`": a report of it
        if m.group("q") == "`" and not said:
            if not (_CODE_TALK_AFTER.match(out[m.end() :]) and (not before or last in _SUBJECTS)):
                return m.group("body")
        return " "

    return _QUOTED.sub(quoted, out).strip()
