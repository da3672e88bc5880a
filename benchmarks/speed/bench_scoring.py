"""How long scoring a full Spider dev prediction file takes (EX in both DISTINCT modes + exact match).

    .venv/bin/python benchmarks/speed/bench_scoring.py

Scores the 1,034 gold queries as predictions (972 with a database here), 3 times; prints the
median and writes benchmarks/results/scoring.json. Every score must be 100%.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from sqlweave.eval.datasets import load_spider
from sqlweave.eval.runner import summarize
from sqlweave.eval.score import score_predictions

from benchmarks.common import SPIDER, RESULTS, parser, machine


def main() -> None:
    parser(__doc__).parse_args()  # no options: --help only
    ds = load_spider(SPIDER, "dev")
    preds = [line.split("\t")[0] for line in (SPIDER / "dev_gold.sql").read_text().splitlines()]
    times = []
    for _ in range(3):
        start = time.perf_counter()
        results = score_predictions(ds, preds)
        times.append(time.perf_counter() - start)
    s = summarize(results)
    assert s.ex == 100.0 and s.exact_match == 100.0, (s.ex, s.exact_match)
    row = {"predictions": len(preds), "scored": s.n, "median_s": round(statistics.median(times), 2),
           "runs_s": [round(t, 2) for t in times], "ex": s.ex, "exact_match": s.exact_match}
    print("predictions | scored | median s | EX | EM")
    print(f"{row['predictions']} | {row['scored']} | {row['median_s']} | {s.ex:.1f} | {s.exact_match:.1f}")
    out = RESULTS / "scoring.json"
    out.write_text(json.dumps({"date": date.today().isoformat(), "machine": machine(),
                               "command": " ".join(sys.argv), **row}, indent=2) + "\n")


if __name__ == "__main__":
    main()
