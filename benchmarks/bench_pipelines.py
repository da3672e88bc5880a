"""Seconds per question of pipelines on the same questions, measured in one process, interleaved.

Every question is first asked once untimed (so the instructions-and-schema prefix is evaluated and kept by
llama.cpp for every pipeline alike), then each pipeline answers it in turn, the order alternating from question
to question. No response cache. Prints median and mean seconds, output tokens and tokens per second per pipeline,
and the ratio of medians against the first pipeline; writes JSON.

    .venv/bin/python benchmarks/bench_pipelines.py --pipelines default default+grammar --questions 12 \
        --out benchmarks/results/grammar-speed.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "spider"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pipelines", nargs="+", default=["default", "default+grammar"])
    ap.add_argument("--questions", type=int, default=12)
    ap.add_argument("--sample", type=Path, default=ROOT / "benchmarks" / "samples" / "spider-dev-60.json")
    ap.add_argument("--model", default="1.5b")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    from sqlweave.db import Database
    from sqlweave.eval.datasets import load_spider
    from sqlweave.eval.runner import execution_match
    from sqlweave.llm.local import LocalLLM
    from sqlweave.presets import build_pipeline

    ds = load_spider(DATA, "dev")
    ids = json.loads(args.sample.read_text())["ids"]
    by_id = {ex.id: ex for ex in ds.examples}
    examples = [by_id[i] for i in ids if i in by_id][: args.questions]
    llm = LocalLLM(args.model)
    pipes = {name: build_pipeline(name) for name in args.pipelines}
    stats: dict[str, dict[str, list[float]]] = {n: {"seconds": [], "tokens": [], "right": []} for n in pipes}
    for k, ex in enumerate(examples):
        db = Database.open(ds.db_path(ex.db_id))
        try:
            build_pipeline("zero-shot").run(ex.question, db, llm)  # warm the prompt prefix, untimed
            order = list(pipes) if k % 2 == 0 else list(reversed(pipes))
            for name in order:
                answer = pipes[name].run(ex.question, db, llm)
                gen = next(e for e in answer.trace if e.stage == "generate")
                stats[name]["seconds"].append(sum(e.seconds for e in answer.trace))
                stats[name]["tokens"].append(gen.usage.completion_tokens / max(gen.seconds, 1e-6))
                ok = answer.sql is not None and execution_match(db, ex.gold_sql, answer.sql)[0]
                stats[name]["right"].append(float(ok))
            print(f"{k + 1}/{len(examples)} {ex.id}", file=sys.stderr)
        finally:
            db.close()
    first = statistics.median(stats[args.pipelines[0]]["seconds"])
    table = []
    print("| pipeline | questions | EX | median s / q | mean s / q | generation tokens / s (median) | median vs first |")
    print("|---|---|---|---|---|---|---|")
    for name, s in stats.items():
        row = {"pipeline": name, "n": len(s["seconds"]), "ex": round(100 * statistics.mean(s["right"]), 1),
               "median_s": round(statistics.median(s["seconds"]), 2), "mean_s": round(statistics.mean(s["seconds"]), 2),
               "tokens_per_s": round(statistics.median(s["tokens"]), 1),
               "ratio": round(statistics.median(s["seconds"]) / first, 2)}
        table.append(row)
        print(f"| `{name}` | {row['n']} | {row['ex']} | {row['median_s']} | {row['mean_s']} | {row['tokens_per_s']} | "
              f"{row['ratio']}x |")
    if args.out:
        args.out.write_text(json.dumps({"date": datetime.now(timezone.utc).isoformat(timespec="minutes"),
                                        "machine": platform.processor() or platform.machine(),
                                        "model": args.model, "sample": str(args.sample), "rows": table}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
