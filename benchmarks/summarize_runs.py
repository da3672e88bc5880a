"""Tabulate evaluation run folders side by side (EX overall and by hardness, cost per question).

    .venv/bin/python benchmarks/summarize_runs.py .eval-runs/zero-shot-1.5b .eval-runs/zero-shot-0.5b --out benchmarks/results/zero-shot.json
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from sqlweave.eval.runner import load_results, summarize


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = []
    for run in args.runs:
        meta = json.loads((run / "run.json").read_text())
        s = summarize(load_results(run))
        rows.append({"run": run.name, "pipeline": meta["pipeline"], "model": meta["model"], **asdict(s)})
    levels = ["easy", "medium", "hard", "extra"]
    head = ["run", "n", "EX", *levels, "EX keep-distinct", "exec %", "median s", "median prompt tok", "median out tok", "calls"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        lv = [f"{r['by_level'][k][1]:.1f} ({r['by_level'][k][0]})" if k in r["by_level"] else "-" for k in levels]
        print("| " + " | ".join([r["run"], str(r["n"]), f"{r['ex']:.1f}", *lv, f"{r['ex_keep_distinct']:.1f}",
                                 f"{r['executable']:.1f}", f"{r['median_seconds']:.2f}", f"{r['median_prompt_tokens']:.0f}",
                                 f"{r['median_completion_tokens']:.0f}", f"{r['mean_model_calls']:.2f}"]) + " |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
