"""`memstore sync` and remote claims against a real git server on loopback: figures, not tests.

    python bench/sync.py [--repeat 9] [--memories 100] [--claim-rounds 50]

Starts `git daemon --enable=receive-pack` over a bare repository in a temp folder on a free
port, makes the first clone's store, and clones it twice more ("machines"). Prints JSON:

- `noop_sync_s`: a sync with nothing to do (one fetch, no push), median of --repeat;
- `receive_s`: a sync on clone A after clone B added and pushed --memories new memories (a
  fast-forward: fetch, 100 files written, HEAD moved), median of --repeat;
- `merge_s`: the same, while A has one new memory of its own (a merge, then a push);
- `claims`: 8 claimers (processes) on 3 clones claim one action through the remote, for
  --claim-rounds rounds: rounds with exactly one winner, and the slowest round.

Exits 1 if a claim round had other than one winner.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memstore.storage.store import Store  # noqa: E402
from memstore.workflow.ledger import sync  # noqa: E402
from tests.gitserver import GIT_ENV, GitServer, git, run_helper  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--memories", type=int, default=100)
    parser.add_argument("--claim-rounds", type=int, default=50)
    args = parser.parse_args()
    os.environ.update({k: v for k, v in GIT_ENV.items() if k.startswith("GIT_CONFIG")})
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "srv").mkdir()
        server = GitServer(base / "srv").start()
        try:
            figures = run(base, server, args)
        finally:
            server.kill()
    print(json.dumps(figures, indent=2))
    return 0 if figures["claims"]["rounds_with_one_winner"] == args.claim_rounds else 1


def run(base: Path, server: GitServer, args: argparse.Namespace) -> dict[str, Any]:
    a = Store.init(base / "a", agent="alice")
    git(a.root, "remote", "add", "origin", server.url)
    sync.sync(a)
    b = Store(server.clone(base / "b"), agent="bob")
    c = Store(server.clone(base / "c"), agent="carol")

    noop: list[float] = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        sync.sync(a)
        noop.append(time.perf_counter() - start)

    def receive(own: bool, rep: int) -> float:
        for i in range(args.memories):
            b.add(f"m{rep}-{int(own)}-{i}", type="decision", description=f"note {i} of {rep}")
        sync.sync(b)
        if own:
            a.add(f"own-{rep}", type="decision", description="a's own")
        start = time.perf_counter()
        result = sync.sync(a)
        took = time.perf_counter() - start
        assert len(result.received) >= args.memories, result
        return took

    received = [receive(False, r) for r in range(args.repeat)]
    merged = [receive(True, r) for r in range(args.repeat)]
    for store in (b, c):
        sync.sync(store)

    clones = [a, b, c]
    procs = [
        (f"claimer-{i}", run_helper("claimer", str(clones[i % 3].root), f"claimer-{i}"))
        for i in range(8)
    ]
    one_winner, slowest = 0, 0.0
    try:
        for r in range(args.claim_rounds):
            start = time.perf_counter()
            for _, proc in procs:
                assert proc.stdin is not None
                proc.stdin.write(f"bench-{r}\n")
                proc.stdin.flush()
            answers = [p.stdout.readline().strip() for _, p in procs if p.stdout is not None]
            slowest = max(slowest, time.perf_counter() - start)
            one_winner += sum(a == "won" for a in answers) == 1
    finally:
        for _, proc in procs:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait()
    return {
        "noop_sync_s": round(statistics.median(noop), 3),
        "receive_s": round(statistics.median(received), 3),
        "merge_s": round(statistics.median(merged), 3),
        "memories_per_sync": args.memories,
        "repeat": args.repeat,
        "claims": {
            "claimers": 8,
            "clones": 3,
            "rounds": args.claim_rounds,
            "rounds_with_one_winner": one_winner,
            "slowest_round_s": round(slowest, 2),
        },
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


if __name__ == "__main__":
    sys.exit(main())
