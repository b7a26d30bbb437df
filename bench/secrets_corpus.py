"""Recall and false-positive rate of the credential detector over its corpus, and what a
scan costs.

The corpus is `tests/secrets_corpus.py`: credential shapes (fake, generated in the real
shapes) that must be refused, and benign technical texts that must pass. The cost is that of
scanning the fields of a typical memory (description, a ~700-character body, two tags), the
median of repeated runs, then the one-off import of detect-secrets on a process's first scan.

    .venv/bin/python bench/secrets_corpus.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore.storage import secrets  # noqa: E402
from tests.secrets_corpus import BENIGN, CREDENTIALS  # noqa: E402

REPEAT = 2000


def main() -> None:
    patterns = secrets.compile_patterns()
    missed = [label for label, text in CREDENTIALS if not secrets.scan({"t": text}, patterns)]
    refused = [label for label, text in BENIGN if secrets.scan({"t": text}, patterns)]
    caught = len(CREDENTIALS) - len(missed)
    print(f"credentials refused: {caught}/{len(CREDENTIALS)} = {caught / len(CREDENTIALS):.1%}")
    for label in missed:
        print(f"  missed: {label}")
    print(f"benign refused:      {len(refused)}/{len(BENIGN)} = {len(refused) / len(BENIGN):.1%}")
    for label in refused:
        print(f"  refused: {label}")

    body = dict(BENIGN)["memory body x3"]
    fields = {
        "description": "Validate API input with zod schemas",
        "body": body,
        "tags": ["api", "validation"],
    }
    times: list[float] = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        secrets.scan(fields, patterns)
        times.append(time.perf_counter() - start)
    print(
        f"scan of a typical memory ({len(body)}-character body): "
        f"median {statistics.median(times) * 1e6:.0f} µs, "
        f"p90 {statistics.quantiles(times, n=10)[-1] * 1e6:.0f} µs, "
        f"fastest {min(times) * 1e6:.0f} µs (the cost on an idle core)"
    )
    code = (
        "import time; t = time.perf_counter()\n"
        "from memstore.storage import secrets; secrets.scan({'t': 'x'})\n"
        "print((time.perf_counter() - t) * 1000)"
    )
    firsts = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(5)
    ]
    print(
        "first scan in a process (imports detect-secrets): "
        f"median {statistics.median(firsts):.0f} ms"
    )


if __name__ == "__main__":
    main()
