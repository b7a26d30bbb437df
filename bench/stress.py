"""Many writers on one store at once, and writers killed at random: count what was asked and
what is there afterwards.

    python bench/stress.py run --procs 8 --ops 25          # concurrent agents and a human
    python bench/stress.py crash --iterations 50           # kill -9 a writer, again and again

Each agent is its own process (as each `memstore serve` is), doing a random mix of add, edit
(appending a unique token to the body, with the version it read), confirm (someone else's
draft, with the version it read) and deprecate (one of its own). A "human" process commits
hand-written files with plain git and runs `git status` meanwhile. Every operation that
reports success must be in the store afterwards: its commit by its author, its file, its token.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memstore.errors import (
    AlreadyExecuted,
    ClaimHeld,
    Conflict,
    EditDeprecated,
    InvalidTransition,
    MemoryNotFound,
)
from memstore.model.memory import Memory, parse
from memstore.search import upkeep as search
from memstore.search.upkeep import Query
from memstore.storage import transaction
from memstore.storage.store import Store
from memstore.storage.transaction import JOURNAL
from memstore.workflow.care import lint
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.ledger import lines as ledger

HERE = Path(__file__).resolve()
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "human",
    "GIT_AUTHOR_EMAIL": "human@example.com",
    "GIT_COMMITTER_NAME": "human",
    "GIT_COMMITTER_EMAIL": "human@example.com",
}
SUBJECT = re.compile(r"^memory: (add|edit|confirm|deprecate|restore) (\w+)/([a-z0-9-]+)")
LEDGER_SUBJECT = re.compile(r"^ledger: (claimed|done) publish (\S+)")
JOBS = 30
"""Ledger targets the agents race for: each is claimed, published and recorded done once."""


def _emit(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


def _one_op(store: Store, agent: str, prefix: str, rng: random.Random, i: int) -> dict[str, Any]:
    """One random operation; returns what was asked and whether it succeeded."""
    memories = store.list()
    kind = rng.choices(["add", "edit", "confirm", "deprecate", "ledger"], weights=[3, 4, 2, 1, 2])[
        0
    ]
    if kind == "ledger":
        # check → claim → act → record: of agents racing for a job, exactly one may win.
        target = f"job-{rng.randrange(JOBS)}"
        try:
            ledger_io.claim(store, "publish", target, ttl=600)
        except (ClaimHeld, AlreadyExecuted) as e:
            return {"op": "ledger", "name": target, "ok": False, "why": type(e).__name__}
        ledger_io.record(store, "publish", target, evidence=f"https://example.com/{target}")
        return {"op": "ledger", "name": target, "ok": True, "lines": 2}
    # The listing reads the working tree without the lock: a memory a killed writer left
    # uncommitted is listed, then gone once the next write's recovery undoes it. Acting on it
    # is refused (MemoryNotFound), as for any memory removed since it was listed.
    try:
        return _act(store, agent, prefix, rng, i, kind, memories)
    except MemoryNotFound:
        return {"op": kind, "ok": False, "why": "MemoryNotFound"}


def _act(
    store: Store,
    agent: str,
    prefix: str,
    rng: random.Random,
    i: int,
    kind: str,
    memories: list[Memory],
) -> dict[str, Any]:
    """`_one_op`'s memory operations, on the memories it listed."""
    drafts = [m for m in memories if m.status == "draft" and m.owner != agent]
    mine = [m for m in memories if m.owner == agent and m.status != "deprecated"]
    live = [m for m in memories if m.status != "deprecated"]
    if kind == "edit" and live:
        target = rng.choice(live).name
        token = f"tok{prefix}n{i}"
        for attempt in range(20):
            current = store.read(target)
            body = (current.memory.body + "\n" + token).strip("\n")
            try:
                store.edit(target, body=body, expected_version=current.version)
            except Conflict:
                continue
            except EditDeprecated:  # deprecated by another agent since the listing
                return {"op": "edit", "name": target, "ok": False, "why": "EditDeprecated"}
            return {"op": "edit", "name": target, "token": token, "ok": True, "retries": attempt}
        return {"op": "edit", "name": target, "ok": False, "why": "conflict"}
    if kind == "confirm" and drafts:
        target = rng.choice(drafts).name
        current = store.read(target)
        try:
            store.confirm(target, f"checked by {agent}", expected_version=current.version)
        except (Conflict, InvalidTransition) as e:
            return {"op": "confirm", "name": target, "ok": False, "why": type(e).__name__}
        return {"op": "confirm", "name": target, "ok": True}
    if kind == "deprecate" and mine:
        target = rng.choice(mine).name
        others = [m.name for m in memories if m.name != target and m.status != "deprecated"]
        successor = rng.choice(others) if others and rng.random() < 0.5 else None
        current = store.read(target)
        try:
            # With a successor it is a two-file change: both land in one commit, or neither.
            store.deprecate(target, f"stale ({agent})", successor, expected_version=current.version)
        except (Conflict, InvalidTransition) as e:
            return {"op": "deprecate", "name": target, "ok": False, "why": type(e).__name__}
        return {"op": "deprecate", "name": target, "ok": True}
    name = f"{prefix}-{i}"
    token = f"tok{prefix}n{i}add"
    store.add(name, type="fact", description=f"fact {i} by {agent}", body=token)
    return {"op": "add", "name": name, "ok": True, "token": token}


def worker(root: Path, agent: str, prefix: str, ops: int, seed: int) -> None:
    """Run `ops` random operations as `agent` (new names start with `prefix`), printing one
    JSON line per operation."""
    store = Store(root, agent=agent, lock_timeout=120)
    rng = random.Random(seed)
    _emit({"op": "ready", "agent": agent})
    for i in range(ops):
        if rng.random() < 0.3:  # readers search (and catch the index up) while others write
            wanted = Query(f"fact tok{prefix}n{rng.randrange(i + 1)}", limit=5)
            search.search(store, wanted)
        record = _one_op(store, agent, prefix, rng, i)
        _emit({"agent": agent, **record})


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=root,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=check,
    )


def human(root: Path, ops: int, seed: int) -> None:
    """Hand-write memories and commit them with git, running `git status` in between."""
    rng = random.Random(seed)
    _emit({"op": "ready", "agent": "human"})
    for i in range(ops):
        name = f"human-{i}"
        text = (
            f"---\nname: {name}\ndescription: written by hand {i}\ntype: fact\nstatus: draft\n"
            f"owner: human\ncreated: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n"
            f"tags: []\n---\n\ntokhumann{i}\n"
        )
        (root / "fact").mkdir(exist_ok=True)
        tmp = root / "fact" / f".{name}.md.swp"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(root / "fact" / f"{name}.md")  # as an editor saves
        _git(root, "status", "--porcelain")  # takes git's index lock for a moment
        for _ in range(200):  # a person retries when git says another git process runs
            added = _git(root, "add", "--", f"fact/{name}.md", check=False)
            done = added.returncode == 0 and (
                _git(
                    root,
                    "commit",
                    "-q",
                    "-m",
                    f"hand edit {name}",
                    "--",
                    f"fact/{name}.md",
                    check=False,
                ).returncode
                == 0
            )
            if done:
                break
            time.sleep(rng.uniform(0.005, 0.03))
        else:
            _emit({"agent": "human", "op": "add", "name": name, "ok": False, "why": "git busy"})
            continue
        _emit({"agent": "human", "op": "add", "name": name, "ok": True, "token": f"tokhumann{i}"})


def new_store(root: Path) -> Store:
    """A fresh store in its own repository (one init commit)."""
    return Store.init(root, agent="setup")


def spawn(args: list[str]) -> subprocess.Popen[str]:
    """Run this script with `args` in its own process group (so a kill can take git along)."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.Popen(
        [sys.executable, str(HERE), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def run(root: Path, procs: int, ops: int, human_ops: int, seed: int) -> list[dict[str, Any]]:
    """Start `procs` agents (and a human when `human_ops`) at once; return every op record."""
    children = [
        spawn(["worker", str(root), f"agent-{n}", f"a{n}", str(ops), str(seed * 1000 + n)])
        for n in range(procs)
    ]
    if human_ops:
        children.append(spawn(["human", str(root), str(human_ops), str(seed)]))
    records: list[dict[str, Any]] = []
    for child in children:
        out, err = child.communicate(timeout=600)
        if child.returncode != 0:
            raise RuntimeError(f"a writer failed ({child.returncode}):\n{err}")
        records += [json.loads(line) for line in out.splitlines()]
    return [r for r in records if r["op"] != "ready"]


@dataclass
class Counts:
    """What was asked and what is in the store afterwards."""

    attempted: int = 0
    succeeded: int = 0
    refused: int = 0
    """Refused on purpose (a conflict or a status move someone else made first), not lost."""
    lost: int = 0
    commits_expected: int = 0
    commits_present: int = 0
    files_expected: int = 0
    files_present: int = 0
    tokens_expected: int = 0
    tokens_present: int = 0
    ledger_lines_expected: int = 0
    ledger_lines_present: int = 0
    ledger_done_twice: int = 0
    """Jobs recorded done more than once: a repeated side effect (must be 0)."""
    index_expected: int = 0
    index_present: int = 0
    """Memories a fresh process's search index lists after its catch-up."""
    index_tokens_checked: int = 0
    index_tokens_found: int = 0
    """Edit tokens that a search finds in the right memory (the index has the latest text)."""
    by_kind: dict[str, int] = field(default_factory=dict[str, int])
    refused_why: dict[str, int] = field(default_factory=dict[str, int])
    problems: list[str] = field(default_factory=list[str])


def memory_files(root: Path) -> list[Path]:
    """Every `*.md` file in the store's type folders."""
    return sorted(p for p in root.glob("*/*.md") if not p.parent.name.startswith("."))


def verify(root: Path, records: list[dict[str, Any]], base_commits: int = 1) -> Counts:
    """Count each successful op in the store: its commit, its file, its token; list problems."""
    counts = Counts(attempted=len(records))
    ok = [r for r in records if r["ok"]]
    counts.succeeded = len(ok)
    counts.refused = len(records) - len(ok)
    counts.by_kind = dict(Counter(r["op"] for r in ok))
    counts.refused_why = dict(Counter(f"{r['op']}: {r['why']}" for r in records if not r["ok"]))
    problems = counts.problems

    log = _git(root, "log", "--format=%an%x1f%s").stdout.splitlines()
    counts.commits_present = len(log)
    counts.commits_expected = base_commits + sum(r.get("lines", 1) for r in ok)
    committed: Counter[tuple[str, str, str]] = Counter()
    for line in log:
        author, _, subject = line.partition("\x1f")
        match = SUBJECT.match(subject)
        if match:
            committed[(author, match.group(1), match.group(3))] += 1
        elif match := LEDGER_SUBJECT.match(subject):
            if match.group(1) == "done":  # one op is a claim and a done record
                committed[(author, "ledger", match.group(2))] += 1
        elif subject.startswith("hand edit "):
            committed[(author, "add", subject.removeprefix("hand edit "))] += 1
    asked = Counter((r["agent"], r["op"], r["name"]) for r in ok)
    missing = asked - committed
    counts.lost += sum(missing.values())
    for key, n in missing.items():
        problems.append(f"no commit for {key} (x{n})")

    files = memory_files(root)
    counts.files_present = len(files)
    counts.files_expected = sum(1 for r in ok if r["op"] == "add")
    bodies: dict[str, str] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            bodies[path.stem] = parse(text).body
        except ValueError as e:
            problems.append(f"{path.name} does not parse: {e}")
    for r in ok:
        if "token" not in r:
            continue
        counts.tokens_expected += 1
        if r["token"] in bodies.get(r["name"], "").split("\n"):
            counts.tokens_present += 1
        else:
            counts.lost += 1
            problems.append(f"token {r['token']} missing from {r['name']}")

    counts.ledger_lines_expected = sum(r.get("lines", 0) for r in ok)
    ledger_path = root / ledger.LEDGER_FILE
    lines = ledger.read_lines(ledger_path.read_bytes() if ledger_path.exists() else b"")
    counts.ledger_lines_present = len(lines)
    problems.extend(f"ledger line {x.number}: {x.error}" for x in lines if x.error)
    done = Counter(x.event.target for x in lines if x.event and x.event.status == ledger.DONE)
    counts.ledger_done_twice = sum(1 for n in done.values() if n > 1)
    verification = ledger_io.verify(Store(root, agent="checker"))
    problems.extend(f"ledger verify: {x}" for x in verification.problems)

    searcher = Store(root, agent="checker")
    search.catch_up(searcher)
    everything = Query("", include_deprecated=True, limit=100_000)
    listed = {h.name for h in search.search(searcher, everything)}
    counts.index_expected, counts.index_present = len(bodies), len(listed)
    if listed != set(bodies):
        problems.append(f"index lists {sorted(listed ^ set(bodies))[:5]} wrongly")
    for r in [r for r in ok if "token" in r][:: max(1, len(ok) // 60)]:
        counts.index_tokens_checked += 1
        hits = search.search(searcher, Query(r["token"], include_deprecated=True, limit=5))
        if r["name"] in [h.name for h in hits]:
            counts.index_tokens_found += 1
        else:
            problems.append(f"search for {r['token']} does not find {r['name']}")

    status = _git(root, "status", "--porcelain", "--untracked-files=all").stdout
    if status.strip():
        problems.append(f"uncommitted changes:\n{status}")
    fsck = _git(root, "fsck", "--strict", check=False)
    if fsck.returncode != 0 or "error" in fsck.stderr.lower():
        problems.append(f"git fsck: {fsck.stdout}{fsck.stderr}")
    leftovers = [p.name for p in root.rglob(".*.tmp")] + [
        p.name
        for p in [*(root / ".git").glob("*.lock"), *(root / ".git").glob("refs/heads/*.lock")]
    ]
    if (root / ".memstore" / JOURNAL).exists():
        leftovers.append(JOURNAL)
    if leftovers:
        problems.append(f"left behind: {leftovers}")
    found = lint.lint_store(Store(root, agent="checker"))
    problems.extend(f"lint: {p}" for p in found)
    return counts


def check_files_whole(root: Path) -> list[str]:
    """Problems with any memory file or ledger line right after a kill: empty, not UTF-8, not
    parsing, or a torn line."""
    problems: list[str] = []
    ledger_path = root / ledger.LEDGER_FILE
    if ledger_path.exists():
        data = ledger_path.read_bytes()
        if data and not data.endswith(b"\n"):
            problems.append("ledger.jsonl ends in a torn line")
        problems += [
            f"ledger line {x.number}: {x.error}" for x in ledger.read_lines(data) if x.error
        ]
    for path in memory_files(root):
        data = path.read_bytes()
        try:
            parse(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            problems.append(f"{path.name} ({len(data)} bytes): {e}")
    return problems


RECOVERIES = {
    "rolled_back": "undoing a change its writer did not commit",
}


def crash(
    root: Path, iterations: int, seed: int
) -> tuple[list[dict[str, Any]], list[str], Counter[str]]:
    """Kill -9 a writer at a random moment `iterations` times; after each kill, every file must
    be whole. Returns the ops the writers reported done, the problems seen after kills, and
    how often a writer finished, undid, or unblocked what a killed one left."""
    rng = random.Random(seed)
    reported: list[dict[str, Any]] = []
    problems: list[str] = []
    recoveries: Counter[str] = Counter()
    for n in range(iterations):
        agent, prefix = f"agent-{n % 3}", f"k{n}"
        child = spawn(["worker", str(root), agent, prefix, "1000000", str(seed * 7919 + n)])
        assert child.stdout is not None
        # Let it report 0-2 ops (its first op also finishes what the last one left), then kill
        # it at a random point of the write path (lock, journal, file, objects, index, ref update,
        # lock release): an op takes tens of milliseconds.
        lines: list[str] = []
        for _ in range(1 + rng.randint(0, 2)):
            lines.append(child.stdout.readline())
            if not lines[-1]:
                raise RuntimeError(f"writer stopped: {child.stderr and child.stderr.read()}")
        time.sleep(rng.uniform(0.0, 0.08))
        if rng.random() < 0.5:
            os.killpg(child.pid, signal.SIGKILL)  # the writer and the git it runs
        else:
            os.kill(child.pid, signal.SIGKILL)  # the writer only; its git finishes alone
        out, err = child.communicate()
        if child.returncode != -signal.SIGKILL:
            problems.append(f"writer {n} ended on its own ({child.returncode}): {err[-2000:]}")
        for key, text in RECOVERIES.items():
            recoveries[key] += err.count(text)
        lines += out.splitlines()
        reported += [json.loads(line) for line in lines if line.strip().endswith("}")]
        problems += [f"after kill {n}: {p}" for p in check_files_whole(root)]
    return [r for r in reported if r.get("op") != "ready"], problems, recoveries


def finish(root: Path) -> None:
    """Open the write path once, as the next writer would: it undoes what a killed
    writer left (the journal), and waits for a surviving git to end."""
    store = Store(root, agent="checker", lock_timeout=60)
    deadline = time.monotonic() + 30
    with transaction.locked(store):
        pass
    # A git that memstore started runs in a session of its own: a kill of its writer lets it
    # finish and release its lock.
    git_dir = root / ".git"
    while time.monotonic() < deadline:
        if not [*git_dir.glob("*.lock"), *git_dir.glob("refs/heads/*.lock")]:
            break
        time.sleep(0.02)
    with transaction.locked(store):
        pass


def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker")
    w.add_argument("root", type=Path)
    w.add_argument("agent")
    w.add_argument("prefix")
    w.add_argument("ops", type=int)
    w.add_argument("seed", type=int)
    h = sub.add_parser("human")
    h.add_argument("root", type=Path)
    h.add_argument("ops", type=int)
    h.add_argument("seed", type=int)
    r = sub.add_parser("run", help="concurrent writers")
    r.add_argument("--procs", type=int, default=8)
    r.add_argument("--ops", type=int, default=25)
    r.add_argument("--human-ops", type=int, default=10)
    r.add_argument("--seed", type=int, default=1)
    c = sub.add_parser("crash", help="kill -9 writers at random")
    c.add_argument("--iterations", type=int, default=50)
    c.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.command == "worker":
        worker(args.root, args.agent, args.prefix, args.ops, args.seed)
        return
    if args.command == "human":
        human(args.root, args.ops, args.seed)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        new_store(root)
        started = time.perf_counter()
        if args.command == "run":
            records = run(root, args.procs, args.ops, args.human_ops, args.seed)
            kills = 0
            after_kills: list[str] = []
            recoveries: Counter[str] = Counter()
        else:
            records, after_kills, recoveries = crash(root, args.iterations, args.seed)
            kills = args.iterations
            finish(root)
        elapsed = time.perf_counter() - started
        counts = verify(root, records)
        counts.problems += after_kills
    report: dict[str, Any] = {"command": " ".join(sys.argv), "seconds": round(elapsed, 1)}
    report["kills"] = kills
    report |= dict(recoveries)
    report |= asdict(counts)
    if kills:
        # An op in flight when its writer was killed never reported success, yet may have
        # landed whole (finished by git alone or by the next writer); it never lands in part.
        report["in_flight_commits_landed"] = counts.commits_present - counts.commits_expected
        report["in_flight_files_landed"] = counts.files_present - counts.files_expected
    print(json.dumps(report, indent=2))
    short = (
        counts.commits_present < counts.commits_expected
        or counts.files_present < counts.files_expected
    )
    sys.exit(1 if counts.problems or counts.lost or short else 0)


if __name__ == "__main__":
    _main()
