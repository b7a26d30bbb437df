"""Scale benchmark: a store with a real multi-author history, and every interactive call on it.

    .venv/bin/python bench/scale.py --size 10000 --out /tmp/scale-10k --generate-only
    .venv/bin/python bench/scale.py --sizes 1000 10000 [--skip lint,reindex] [--runs 3]
    .venv/bin/python bench/scale.py --sizes 1000 --from /work/stores/scale-{size}

The store is built the way a team's store grows: each memory's file is committed by its owner
(a person or an agent, in batches of 1-60 memories per commit, as sessions save them), 40% are
confirmed later by another identity in that identity's own commits, about 2% are deprecated by
their owner, nine types (16% rules, `correction`/`warning` with `severity` and
`applies_when`), 10% name code files, a third link to older memories, most carry tags. The
history is written with `git fast-import` (one pack, real commits by the identities the trust
replay checks), so 100,000 memories take minutes. The store is the `memory/` folder of a
repository that also holds code (`src/`), some of which changes after confirmations.

Every row is measured through the real CLI (a new process each time) and through the real
`mcp` SDK client against `memstore serve` over stdio, on a fresh clone of the generated
repository (so no cache is carried over unless the row says warm). Figures are medians;
progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency import TECH, Text  # noqa: E402  (a sibling script, not a package)

from memstore.git.commit import email_for  # noqa: E402
from memstore.model.memory import Memory, render  # noqa: E402
from memstore.model.status import Status, transition  # noqa: E402
from memstore.storage.store import STORE_GITATTRIBUTES, STORE_GITIGNORE  # noqa: E402

PEOPLE = ("alice", "bob", "carol", "dave", "erin")
AGENTS = tuple(f"agent-{k:02d}" for k in range(1, 11))
IDENTITIES = PEOPLE + AGENTS
LEAD = "lead"
PLAIN_TYPES = ("decision", "fact", "pattern", "runbook", "incident", "postmortem", "reference")
RULES = ("correction", "warning")
START = 1_735_689_600  # 2025-01-01T00:00:00Z
CODE = tuple(f"src/mod{i:03d}/file{j}.py" for i in range(200) for j in range(5))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def stamp(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def git_env(who: str = LEAD) -> dict[str, str]:
    return {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": who,
        "GIT_AUTHOR_EMAIL": email_for(who),
        "GIT_COMMITTER_NAME": who,
        "GIT_COMMITTER_EMAIL": email_for(who),
    }


# -- the generator ------------------------------------------------------------------------------


class Stream:
    """A `git fast-import` stream of commits on `refs/heads/main`."""

    def __init__(self, top: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", "fast-import", "--quiet", "--done"],
            cwd=top,
            stdin=subprocess.PIPE,
            env=git_env(),
        )
        assert self.proc.stdin is not None
        self.out = self.proc.stdin
        self.commits = 0

    def commit(self, who: str, t: int, message: str, files: dict[str, str]) -> None:
        person = f"{who} <{email_for(who)}> {t} +0000"
        msg = message.encode()
        parts = [
            b"commit refs/heads/main\n",
            f"author {person}\ncommitter {person}\n".encode(),
            b"data %d\n" % len(msg),
            msg,
            b"\n",
        ]
        for path, text in files.items():
            data = text.encode()
            parts += [f"M 100644 inline {path}\n".encode(), b"data %d\n" % len(data), data, b"\n"]
        self.out.write(b"".join(parts))
        self.commits += 1

    def close(self) -> None:
        self.out.write(b"done\n")
        self.out.close()
        if self.proc.wait() != 0:
            raise SystemExit("git fast-import failed")


@dataclass
class Made:
    memory: Memory
    path: str
    confirm: bool
    deprecate: bool


def rule_fields(rng: random.Random, text: Text) -> dict[str, object]:
    severity = rng.choices(["p0", "p1", "p2", "p3"], [1, 4, 4, 2])[0]
    patterns: list[str] = []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.25:
            patterns.append(f"src/mod{rng.randrange(200):03d}/*.py")
        else:
            patterns.append(" ".join(rng.sample(TECH, rng.randint(1, 2))))
    return {"severity": severity, "applies_when": sorted(set(patterns))}


def generate(top: Path, n: int, seed: int = 7) -> int:
    """Build a repository at `top` whose `memory/` store holds `n` memories; return its commits."""
    rng = random.Random(seed)
    text = Text(rng)
    top.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(top)], check=True, env=git_env())
    stream = Stream(top)
    t = START
    stream.commit(LEAD, t, "code", {rel: "v1\n" for rel in CODE})
    t += 60
    stream.commit(
        LEAD,
        t,
        "memory: init store",
        {"memory/.gitignore": STORE_GITIGNORE, "memory/.gitattributes": STORE_GITATTRIBUTES},
    )
    # About one working year: the gap between commits follows the store's size.
    step = max(30, int(300 * 24 * 3600 / max(1, n // 30)))
    made: list[Made] = []
    to_confirm: list[Made] = []
    to_deprecate: list[Made] = []
    created = 0
    weights = [3] * len(PEOPLE) + [5] * len(AGENTS)  # agents save more than people
    last_code_change = 0
    while created < n:
        owner = rng.choices(IDENTITIES, weights)[0]
        batch = min(n - created, rng.choice((1, 1, 2, 3, 5, 8, 13, 20, 30, 45, 60)))
        t += rng.randint(step // 2, step * 3 // 2)
        files: dict[str, str] = {}
        for _ in range(batch):
            i = created
            created += 1
            name = f"mem-{i:06d}"
            roll = rng.random()
            kind = rng.choice(RULES) if roll < 0.16 else rng.choice(PLAIN_TYPES)
            extra: dict[str, object] = rule_fields(rng, text) if kind in RULES else {}
            if rng.random() < 0.10:
                extra["files"] = [rng.choice(CODE), f"src/mod{rng.randrange(200):03d}/*.py"]
            description = text.sample(rng.randint(6, 14))[:200]
            if made and rng.random() < 0.02:  # a near-duplicate of a recent one
                description = made[-1].memory.description
            links: tuple[str, ...] = ()
            if made and rng.random() < 0.33:
                picks = {rng.choice(made).memory.name for _ in range(rng.randint(1, 2))}
                links = tuple(sorted(picks))
            memory = Memory(
                name=name,
                description=description,
                type=kind,
                status=Status.DRAFT.value,
                owner=owner,
                created=stamp(t),
                updated=stamp(t),
                tags=tuple(sorted(set(rng.sample(TECH, rng.choice((0, 1, 1, 2, 2, 3)))))),
                links=links,
                body=text.sample(rng.randint(40, 160)),
                extra=extra,
            )
            path = f"memory/{kind}/{name}.md"
            files[path] = render(memory)
            item = Made(memory, path, rng.random() < 0.40, rng.random() < 0.02)
            made.append(item)
            (to_confirm if item.confirm else to_deprecate if item.deprecate else []).append(item)
        what = f"{batch} memories" if batch > 1 else f"{kind}/{name}"
        stream.commit(owner, t, f"memory: add {what}", files)
        # Reviews come in their own commits, by someone who owns none of what they confirm.
        if len(to_confirm) >= rng.randint(20, 80) or (created == n and to_confirm):
            confirmer = rng.choice(IDENTITIES)
            mine = [m for m in to_confirm if m.memory.owner != confirmer]
            to_confirm = [m for m in to_confirm if m.memory.owner == confirmer]
            t += rng.randint(1, step)
            files = {}
            for m in mine:
                m.memory = transition(
                    m.memory, Status.CONFIRMED, actor=confirmer, reason="checked", at=stamp(t)
                )
                files[m.path] = render(m.memory)
            stream.commit(confirmer, t, f"memory: confirm {len(mine)} memories", files)
        # An owner deprecates what went out of date, in their own commit.
        if to_deprecate and (len(to_deprecate) >= 5 or created == n):
            item = to_deprecate.pop(0)
            t += 1
            item.memory = transition(
                item.memory,
                Status.DEPRECATED,
                actor=item.memory.owner,
                reason="outdated",
                at=stamp(t),
            )
            stream.commit(
                item.memory.owner,
                t,
                f"memory: deprecate {item.memory.type}/{item.memory.name}",
                {item.path: render(item.memory)},
            )
        if created - last_code_change >= max(100, n // 20):  # code moves on, some drift
            last_code_change = created
            t += 60
            stream.commit(
                LEAD,
                t,
                "code moves on",
                {rel: f"v{created}\n" for rel in rng.sample(CODE, 10)},
            )
        if stream.commits % 500 == 0:
            log(f"  generate: {created:,}/{n:,} memories, {stream.commits:,} commits")
    for item in to_deprecate:  # the rest, so about 2% end deprecated
        t += 1
        item.memory = transition(
            item.memory,
            Status.DEPRECATED,
            actor=item.memory.owner,
            reason="outdated",
            at=stamp(t),
        )
        stream.commit(
            item.memory.owner,
            t,
            f"memory: deprecate {item.memory.type}/{item.memory.name}",
            {item.path: render(item.memory)},
        )
    stream.close()
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=top, check=True, env=git_env())
    return stream.commits


# -- the command --------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--size", type=int, help="one store size (with --out: generate there)")
    ap.add_argument("--out", type=Path, help="generate the repository in this new folder")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if args.out is not None:
        if args.size is None:
            ap.error("--out needs --size")
        if args.out.exists() and any(args.out.iterdir()):
            ap.error(f"{args.out} exists and is not empty")
        t0 = time.perf_counter()
        commits = generate(args.out, args.size, args.seed)
        log(
            f"generated {args.size:,} memories in {commits:,} commits at {args.out} "
            f"in {time.perf_counter() - t0:.1f} s"
        )


if __name__ == "__main__":
    main()
