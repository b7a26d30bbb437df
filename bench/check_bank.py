"""The paraphrase bank's confusion matrix: how `check` judges risky actions and benign
look-alikes (tests/data/check_bank.yaml), with every miss listed.

    .venv/bin/python bench/check_bank.py [BANK.yaml] [-v]
    .venv/bin/python bench/check_bank.py --embedding-model bench/.models/minilm-static

BANK defaults to tests/data/check_bank.yaml; tests/data/check_bank_fresh*.yaml are banks written
later, each measured once before any change made for it (docs/workflow.md). With
`--embedding-model`, also the similarity warnings semantic recall adds
(`workflow.similar_reasons`), at `workflow.SIMILAR_MIN` and, to choose it, at other thresholds.

Runs the same verdict `memstore check` gives (`workflow.decide`: the bank's rules, matched
with the action synonyms, plus the built-in guards) without a store: pure and deterministic.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore.workflow.rules import rules as workflow  # noqa: E402

BANK = Path(__file__).resolve().parent.parent / "tests" / "data" / "check_bank.yaml"


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


def similarity(folder: str) -> Any:
    """`cosines(action, patterns)` with the model2vec model in `folder`."""
    from memstore.search import embedding

    model = embedding.load(folder, Path.cwd())

    def cosines(action: str, patterns: list[str]) -> list[float]:
        rows = model.vectors([action, *patterns])
        return [float(x) for x in rows[1:] @ rows[0]]

    return cosines


def main() -> None:
    args = sys.argv[1:]
    if "--embedding-model" in args[:-1]:  # its value is a model folder, not a bank
        del args[args.index("--embedding-model") + 1]
    paths = [Path(a) for a in args if not a.startswith("-")]
    bank = load(paths[0] if paths else BANK)
    pool = rules(bank)
    cosines = None
    if "--embedding-model" in sys.argv:
        cosines = similarity(sys.argv[sys.argv.index("--embedding-model") + 1])
        print("threshold  risky caught  benign flagged  (words and similarity)")
        for threshold in (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8):
            got = {
                kind: sum(
                    workflow.decide(
                        t, pool, extra=workflow.similar_reasons(pool, t, (), cosines, threshold)
                    ).verdict
                    is not workflow.Verdict.ALLOW
                    for t in bank[kind]
                )
                for kind in ("risky", "benign")
            }
            print(f"{threshold:>9}  {got['risky']:>12}  {got['benign']:>14}")
        print(f"at workflow.SIMILAR_MIN = {workflow.SIMILAR_MIN}:")
    rows: dict[str, list[tuple[str, workflow.CheckResult]]] = {}
    for kind in ("risky", "benign"):
        rows[kind] = [
            (
                text,
                workflow.decide(
                    text,
                    pool,
                    extra=workflow.similar_reasons(pool, text, (), cosines) if cosines else None,
                ),
            )
            for text in bank[kind]
        ]
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
