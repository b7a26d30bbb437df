"""The paraphrase bank's confusion matrix: how `check` judges risky actions and benign
look-alikes (tests/check_bank.yaml), with every miss listed.

    .venv/bin/python bench/check_bank.py [BANK.yaml] [-v]

BANK defaults to tests/check_bank.yaml; tests/check_bank_fresh*.yaml are banks written later,
each measured once before any change made for it (docs/workflow.md).

Runs the same verdict `memstore check` gives (`workflow.decide`: the bank's rules, matched
with the action synonyms, plus the built-in guards) without a store: pure and deterministic.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore import workflow  # noqa: E402

BANK = Path(__file__).resolve().parent.parent / "tests" / "check_bank.yaml"


def load(path: Path = BANK) -> dict[str, Any]:
    """A bank: its rules, risky actions and benign look-alikes."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def rules(bank: dict[str, Any]) -> list[workflow.Rule]:
    """The bank's rules as confirmed rules (binding)."""
    return [
        workflow.Rule(
            name=r["name"],
            type=r["type"],
            status="confirmed",
            severity=r["severity"],
            applies_when=tuple(r["applies_when"]),
            description=r["description"],
            binding=True,
        )
        for r in bank["rules"]
    ]


def main() -> None:
    paths = [Path(a) for a in sys.argv[1:] if not a.startswith("-")]
    bank = load(paths[0] if paths else BANK)
    pool = rules(bank)
    rows: dict[str, list[tuple[str, workflow.CheckResult]]] = {}
    for kind in ("risky", "benign"):
        rows[kind] = [(text, workflow.decide(text, pool)) for text in bank[kind]]
    flagged = {
        k: sum(r.verdict is not workflow.Verdict.ALLOW for _, r in v) for k, v in rows.items()
    }
    n_risky, n_benign = len(rows["risky"]), len(rows["benign"])
    caught, false = flagged["risky"], flagged["benign"]
    print(f"{'':>16} {'WARN/BLOCK':>10} {'ALLOW':>6}")
    print(f"{f'risky ({n_risky})':>16} {caught:>10} {n_risky - caught:>6}")
    print(f"{f'benign ({n_benign})':>16} {false:>10} {n_benign - false:>6}")
    print(f"risky caught: {caught / n_risky:.1%}; benign flagged: {false / n_benign:.1%}")
    for text, r in rows["risky"]:
        if r.verdict is workflow.Verdict.ALLOW:
            print(f"MISSED   {text}")
    for text, r in rows["benign"]:
        if r.verdict is not workflow.Verdict.ALLOW:
            why = ", ".join(f"{x.name}({x.matched})" for x in r.reasons)
            print(f"FLAGGED  {text}  <- {why}")
    if "-v" in sys.argv:
        for text, r in rows["risky"]:
            print(f"{r.verdict.value:>5}  {text}  <- {', '.join(x.name for x in r.reasons)}")


if __name__ == "__main__":
    main()
