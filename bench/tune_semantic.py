"""How semantic recall's fusion parameters were chosen: LoCoMo's tuning conversations only
(conv-26, conv-30, conv-41; bench/locomo.py's TUNE), Recall@10 and Hit@5 for each setting.

    .venv/bin/python bench/tune_semantic.py [--model bench/.models/minilm-static]

The settings are `index.py`'s DENSE_WEIGHT, DENSE_WEIGHT_WEAK, DENSE_WEAK_BM25 and
DENSE_MIN_COSINE, set on the module for each run (the stores are built once). The held-out
conversations and the reworded bank are never read here.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from locomo import DEFAULT_DATA, TUNE, build_store, load  # noqa: E402

from memstore import embedding, index, search  # noqa: E402
from memstore.search import Query  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=HERE / ".models" / "minilm-static")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args()
    conversations = [c for c in load(args.data) if c.sample_id in TUNE]
    grid = {
        "CENTER": (False, True),
        "DENSE_WEIGHT": (0.25, 0.5, 1.0),
        "DENSE_WEIGHT_WEAK": (2.0,),
        "DENSE_WEAK_BM25": (0.0, 12.0),
        "DENSE_MIN_COSINE": (0.2, 0.35),
        "DENSE_NEW_COSINE": (0.4, 1.1),
    }
    with tempfile.TemporaryDirectory() as tmp:
        stores = []
        for conv in conversations:
            root = Path(tmp) / conv.sample_id
            store = build_store(root, conv, links=False, captions=False, model=args.model.resolve())
            search.reindex(store)
            stores.append((store, conv))
        rows = []
        off = None
        for values in [None, *itertools.product(*grid.values())]:
            if values is not None:
                for name, value in zip(grid, values, strict=True):
                    setattr(embedding if name == "CENTER" else index, name, value)
            r10: list[float] = []
            hit5: list[float] = []
            for store, conv in stores:
                up = search.upkeep(store)
                for question, relevant, _ in conv.queries:
                    query = Query(question, limit=10)
                    if values is None:  # words only: the same stores, no dense list
                        hits = up.index.search(query)
                    else:
                        hits = search.search(store, query)
                    names = [h.name for h in hits]
                    r10.append(len(relevant & set(names[:10])) / len(relevant))
                    hit5.append(1.0 if relevant & set(names[:5]) else 0.0)
            n = len(r10)
            row = (sum(r10) / n, sum(hit5) / n, values)
            if values is None:
                off = row
            else:
                rows.append(row)
        assert off is not None
        print(
            f"# tune conversations {', '.join(TUNE)}: {len(r10)} queries; model {args.model.name}"
        )
        print(f"words only: R@10 {off[0]:.3f}, Hit@5 {off[1]:.3f}")
        print(f"| {' | '.join(grid)} | R@10 | Hit@5 |")
        print(f"|{'---|' * (len(grid) + 2)}")
        for r10_, hit5_, values in sorted(rows, key=lambda r: (-r[0], -r[1]))[:15]:
            print(f"| {' | '.join(f'{v:g}' for v in values or ())} | {r10_:.3f} | {hit5_:.3f} |")


if __name__ == "__main__":
    main()
