"""A person saving a memory file by hand while an agent writes it: how often is the save lost?

    python bench/race.py [--tries 400] [--seed 1] [--style rename|inplace|both]

An agent process (a `Store`, as `memstore serve` holds one) edits one memory again and again,
with the version it read. For each try, the person's "editor" (this process) has the file
open from before the try, starts the agent's write, waits a random time spread over how long
a write takes, and saves the file with a line of its own: written to a temp file and renamed
over the file (most editors), or written in place (`open(path, "w")`). Then:

- the save is **kept** if its line is in the file, or in the commit at HEAD;
- otherwise it was **lost**: memstore replaced the file after the save, unseen.

Each try ends with the person's save committed by hand (as `git commit` would), so the next
starts clean. Prints JSON per style: tries, saves kept / lost, the loss rate, the agent's
outcomes (written, refused with Conflict), and the write's median duration; then whether the
write swaps the new file in (Linux: no window), and the window a check and a rename leave
(the fallback elsewhere) timed with the same calls on this file system. Exits 1 if a save
was lost or an agent write that reported success is not at HEAD.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stress import GIT_ENV as PERSON_ENV

from memstore.errors import Conflict, MemstoreError
from memstore.storage import files
from memstore.storage.store import Store

GIT_ENV = PERSON_ENV
"""A person's git (stress.py's): no global configuration, committing as `human`."""
NAME = "shared"
REL = f"fact/{NAME}.md"


def agent(root: Path) -> None:
    """Serve edits on stdin: `go N` → one edit appending `agent-N`; answers `ok`/`conflict`."""
    store = Store(root, agent="agent")
    for line in sys.stdin:
        n = line.split()[1]
        start = time.perf_counter()
        try:
            current = store.read(NAME)
            body = current.memory.body.rstrip("\n") + f"\nagent-{n}\n"
            store.edit(NAME, body=body, expected_version=current.version)
            answer = "ok"
        except Conflict:
            answer = "conflict"
        except MemstoreError:  # a file read half-saved in place does not parse
            answer = "refused"
        took = time.perf_counter() - start
        print(f"{answer} {took:.6f}", flush=True)


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, check=True)
    return done.stdout.decode("utf-8")


def save(path: Path, text: str, style: str) -> None:
    """Save `text` as an editor would."""
    if style == "inplace":
        with path.open("w", encoding="utf-8", newline="") as f:
            f.write(text)
        return
    tmp = path.with_name(f"{path.name}~")
    tmp.write_text(text, encoding="utf-8", newline="")
    os.replace(tmp, path)


def spin(seconds: float) -> None:
    """Wait `seconds` precisely (a sleep's wake-up is too coarse for a window of microseconds)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def race(root: Path, style: str, tries: int, rng: random.Random) -> dict[str, Any]:
    path = root / REL
    proc = subprocess.Popen(
        [sys.executable, __file__, "agent", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def write(n: int) -> tuple[str, float]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(f"go {style}{n}\n")
        proc.stdin.flush()
        answer, took = proc.stdout.readline().split()
        return answer, float(took)

    durations = [write(-i)[1] for i in range(1, 11)]  # warm-up: how long a write takes here
    spread = statistics.median(durations) * 1.5
    kept = lost = written = refused = missing = 0
    for n in range(tries):
        opened = path.read_text(encoding="utf-8")  # the editor has the file open from before
        token = f"hand-{style}{n}"
        proc.stdin.write(f"go {style}{n}\n")
        proc.stdin.flush()
        spin(rng.uniform(0, spread))
        save(path, opened.rstrip("\n") + f"\n{token}\n", style)
        answer, took = proc.stdout.readline().split()
        durations.append(float(took))
        if answer == "ok":
            written += 1
            if f"agent-{style}{n}" not in git(root, "show", f"HEAD:{REL}"):
                missing += 1
        else:
            refused += 1
        if token in path.read_text(encoding="utf-8") or token in git(root, "show", f"HEAD:{REL}"):
            kept += 1
        else:
            lost += 1
        # The person commits what the file holds now, so the next try starts clean.
        git(root, "commit", "-q", "--allow-empty", "-m", f"hand save {n}", "--", REL)
    proc.stdin.close()
    proc.wait()
    return {
        "style": style,
        "tries": tries,
        "saves kept": kept,
        "saves lost": lost,
        "loss rate": round(lost / tries, 4),
        "agent writes": written,
        "agent writes refused (Conflict, or a half-saved file)": refused,
        "agent writes reported but not at HEAD": missing,
        "agent write median ms": round(statistics.median(durations) * 1000, 2),
        "save delay spread ms": round(spread * 1000, 2),
    }


def window(root: Path, times: int = 2000) -> dict[str, Any]:
    """Whether writes swap the new file in (Linux `renameat2` RENAME_EXCHANGE: no window), and
    how long the fallback's last check before the rename leaves open: the same calls
    `atomic_write` makes there (read the file again, compare, `os.replace`), timed here."""
    path = root / "fact" / "window.md"
    text = "x" * 1500
    path.write_text(text, encoding="utf-8")
    spans: list[float] = []
    for i in range(times):
        tmp = path.with_name(f".window.{i}.tmp")
        tmp.write_text(text, encoding="utf-8")
        start = time.perf_counter()
        if files.read_regular(path) != text.encode("utf-8"):
            raise AssertionError("the file changed")
        os.replace(tmp, path)
        spans.append(time.perf_counter() - start)
    path.unlink()
    spans.sort()
    swap = files._renameat2() is not None  # pyright: ignore[reportPrivateUsage]
    return {
        "writes swap the file in (no window)": swap,
        "fallback window (check to rename) median us": round(statistics.median(spans) * 1e6, 1),
        "fallback window p99 us": round(spans[int(len(spans) * 0.99)] * 1e6, 1),
        "fallback window max us": round(spans[-1] * 1e6, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--tries", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--style", choices=["rename", "inplace", "both"], default="both")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    styles = ["rename", "inplace"] if args.style == "both" else [args.style]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memstore-race-") as tmp:
        root = Path(tmp) / "memory"
        os.environ.update(GIT_ENV)
        store = Store.init(root, agent="alice")
        store.add(NAME, type="fact", description="Edited by an agent and by hand at once")
        for style in styles:
            results.append(race(root, style, args.tries, rng))
        measured = window(root)
    print(json.dumps({"races": results, **measured}, indent=2))
    bad = any(r["saves lost"] or r["agent writes reported but not at HEAD"] for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "agent":
        agent(Path(sys.argv[2]))
    else:
        sys.exit(main())
