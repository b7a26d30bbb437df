"""`search --as-of` on a store with a long history: cold (the past tree indexed first) and
warm (its index cached under `.memstore/asof/`), beside a live search in the same run.

    .venv/bin/python bench/asof.py [--commits 1000] [--memories 300] [--runs 5]

The history is written with `git fast-import` (a commit an hour, oldest first): each memory
is created by one identity, then the commits that follow edit, confirm (by another identity,
as the history requires) or deprecate one memory each. Seeded, so runs are comparable.
Prints medians; on a loaded machine the figures read high, the ratios less so, and a cold
search's CPU time (this process's, not git's) is the closer estimate of an idle machine.
"""

from __future__ import annotations

import argparse
import calendar
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memstore.model.memory import Memory, content_hash, render
from memstore.model.status import Status
from memstore.search import asof
from memstore.search import upkeep as search
from memstore.search.upkeep import Query
from memstore.storage.store import STORE_GITATTRIBUTES, STORE_GITIGNORE, Store

WORDS = (
    "deploy cache database migration kubernetes autoscaling rollback incident latency "
    "timeout retry queue worker postgres redis cdn invalidation checkout payment billing "
    "schema validation token secret rotation certificate dns ingress canary feature flag "
    "index search replica backup restore monitoring alert pager runbook webhook api"
).split()
START = 1_767_225_600 - 3600 * 2000  # a commit an hour, ending before 2026
PEOPLE = ("alice", "bob", "carol", "dave")


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def stamp(at: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def build(root: Path, commits: int, memories: int, seed: int = 7) -> None:
    """A store at `root` whose history holds `commits` commits."""
    rng = random.Random(seed)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    current: dict[str, Memory] = {}
    stream: list[bytes] = []

    def commit(i: int, who: str, files: dict[str, str], message: str) -> None:
        at = START + 3600 * i
        lines = [
            "commit refs/heads/main",
            f"author {who} <{who}@memstore.invalid> {at} +0000",
            f"committer {who} <{who}@memstore.invalid> {at} +0000",
        ]
        head = [
            ("\n".join(lines) + "\n").encode(),
            f"data {len(message.encode())}\n{message}\n".encode(),
        ]
        for path, content in files.items():
            data = content.encode()
            head.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
        stream.extend(head)

    commit(
        0, "alice", {".gitignore": STORE_GITIGNORE, ".gitattributes": STORE_GITATTRIBUTES}, "init"
    )
    for i in range(1, commits):
        at = stamp(START + 3600 * i)
        if len(current) < memories and (i <= memories or rng.random() < 0.3):
            who = rng.choice(PEOPLE)
            name = f"note-{len(current):04d}"
            memory = Memory(
                name=name,
                description=text(rng, 8),
                type=rng.choice(("fact", "decision", "runbook")),
                status=Status.DRAFT.value,
                owner=who,
                created=at,
                updated=at,
                tags=(rng.choice(WORDS),),
                body=text(rng, 60),
            )
            verb = "add"
        else:
            name = rng.choice(sorted(current))
            old = current[name]
            roll = rng.random()
            if old.status == Status.DRAFT and roll < 0.4:
                who = rng.choice([p for p in PEOPLE if p != old.owner])
                memory = Memory(
                    **{
                        **{f: getattr(old, f) for f in old.__dataclass_fields__},
                        "status": "confirmed",
                        "updated": at,
                        "confirmed_by": who,
                        "confirmed_at": at,
                        "confirmed_reason": "checked",
                        "confirmed_hash": content_hash(old),
                    }
                )
                verb = "confirm"
            elif old.status != Status.DEPRECATED and roll < 0.5:
                who = rng.choice(PEOPLE)
                memory = Memory(
                    **{
                        **{f: getattr(old, f) for f in old.__dataclass_fields__},
                        "status": "deprecated",
                        "updated": at,
                        "deprecated_by": who,
                        "deprecated_at": at,
                        "deprecated_reason": "stale",
                    }
                )
                verb = "deprecate"
            else:
                who = old.owner
                memory = Memory(
                    **{
                        **{f: getattr(old, f) for f in old.__dataclass_fields__},
                        "status": "draft" if old.status == "confirmed" else old.status,
                        "updated": at,
                        "body": text(rng, 60),
                        "confirmed_by": None,
                        "confirmed_at": None,
                        "confirmed_reason": None,
                        "confirmed_hash": None,
                    }
                )
                verb = "edit"
        current[name] = memory
        commit(i, who, {f"{memory.type}/{name}.md": render(memory)}, f"memory: {verb} {name}")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(
        ["git", "fast-import", "--quiet"], cwd=root, input=b"".join(stream), env=env, check=True
    )
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, env=env, check=True)


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        started = time.perf_counter()
        build(root, args.commits, args.memories)
        count = subprocess.run(
            ["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
        print(
            f"store: {count} commits, {args.memories} memories (built in "
            f"{time.perf_counter() - started:.1f} s); {platform.python_version()}, "
            f"{os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}"
        )
        query = Query("autoscaling rollback")
        moments = {
            "early": stamp(START + 3600 * args.commits // 5),
            "middle": stamp(START + 3600 * args.commits // 2),
            "late": stamp(START + 3600 * (args.commits - 10)),
        }
        live: list[float] = []
        for _ in range(args.runs):
            store = Store(root, agent="bench")
            t = time.perf_counter()
            search.search(store, query)
            live.append(time.perf_counter() - t)
        print(f"live search (fresh process state)        {median_ms(live)}")
        rebuilt: list[float] = []
        for _ in range(args.runs):
            store = Store(root, agent="bench")
            t = time.perf_counter()
            search.reindex(store)
            rebuilt.append(time.perf_counter() - t)
        print(f"live reindex of today's tree (for scale) {median_ms(rebuilt)}")
        for label, at in moments.items():
            cold: list[float] = []
            cold_cpu: list[float] = []
            warm: list[float] = []
            seeded: list[float] = []
            # A moment a day (24 commits) earlier: exploring around a date.
            other = stamp(calendar.timegm(time.strptime(at, "%Y-%m-%dT%H:%M:%SZ")) - 86400)
            for _ in range(args.runs):
                shutil.rmtree(root / ".memstore" / asof.FOLDER, ignore_errors=True)
                store = Store(root, agent="bench")
                t, c = time.perf_counter(), time.process_time()
                past = asof.search(store, query, at)
                cold.append(time.perf_counter() - t)
                cold_cpu.append(time.process_time() - c)
                store = Store(root, agent="bench")
                t = time.perf_counter()
                asof.search(store, query, at)
                warm.append(time.perf_counter() - t)
                shutil.rmtree(root / ".memstore" / asof.FOLDER, ignore_errors=True)
                asof.search(Store(root, agent="bench"), query, other)  # another moment, cached
                store = Store(root, agent="bench")
                t = time.perf_counter()
                asof.search(store, query, at)
                seeded.append(time.perf_counter() - t)
            print(
                f"as-of {label:6} {at}  cold {median_ms(cold)} (CPU {median_ms(cold_cpu)})  "
                f"warm {median_ms(warm)}  after another moment {median_ms(seeded)}  "
                f"({len(past.hits)} hits)"
            )
        for label, extra in (("live", []), ("as-of", ["--as-of", moments["middle"]])):
            cli: list[float] = []
            for _ in range(args.runs):
                t = time.perf_counter()
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "memstore",
                        "--store",
                        str(root),
                        "search",
                        "autoscaling",
                        *extra,
                    ],
                    capture_output=True,
                    check=True,
                )
                cli.append(time.perf_counter() - t)
            print(f"CLI `memstore search` {label:5} (whole process)  {median_ms(cli)}")


if __name__ == "__main__":
    main()
