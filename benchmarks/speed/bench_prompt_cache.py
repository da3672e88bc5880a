"""The local model's prompt-state cache: seconds per call when prompt kinds alternate on one schema.

    .venv/bin/python benchmarks/speed/bench_prompt_cache.py [--questions 4] [--db concert_singer]

A revision chain or a few-shot pipeline alternates prompt kinds (generate, explain, revise, ...). llama.cpp
alone keeps only the last prompt's evaluated prefix, so each switch evaluates the schema again; with the
state cache each kind resumes from its own longest cached prefix. For each of ``--questions`` Spider dev
questions on one database, this makes a zero-shot generation call, then an explanation call on the same
schema, with the cache off and on (two model instances, the same weights, greedy decoding), and reports the
median seconds per call and the ratio. Prints a table and writes benchmarks/results/prompt_cache.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import SPIDER, RESULTS, write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=4)
    ap.add_argument("--db", default="concert_singer")
    ap.add_argument("--out", type=Path, default=RESULTS / "prompt_cache.json")
    args = ap.parse_args()

    from sqlweave.database import Database
    from sqlweave.db.render import render_schema
    from sqlweave.eval.datasets import load_spider
    from sqlweave.llm.base import Message
    from sqlweave.llm.local import LocalLLM
    from sqlweave.prompts import render

    ds = load_spider(SPIDER, "dev")
    questions = [e for e in ds.examples if e.db_id == args.db][: args.questions]
    db = Database.open(ds.db_path(args.db))
    llm_probe = LocalLLM("1.5b", state_cache_mb=0)
    schema = render_schema(db.schema(), "create_table", count=llm_probe.count_tokens).text
    rows = []
    for label, mb in (("off", 0), ("on", 1024)):
        llm = LocalLLM("1.5b", state_cache_mb=mb)
        llm.llama.reset()
        gen_s, explain_s, outputs = [], [], []
        for ex in questions:
            system, user = render("zero_shot", dialect="SQLite", schema=schema, question=ex.question, values="")
            t = time.perf_counter()
            out = llm.complete([Message("system", system), Message("user", user)], temperature=0.0, max_tokens=128)
            gen_s.append(time.perf_counter() - t)
            outputs.append(out.text)
            system, user = render("explain", schema=schema, question=ex.question, sql=ex.gold_sql)
            t = time.perf_counter()
            llm.complete([Message("system", system), Message("user", user)], temperature=0.0, max_tokens=48)
            explain_s.append(time.perf_counter() - t)
        rows.append({"cache": label, "generate_median_s": round(statistics.median(gen_s), 2),
                     "explain_median_s": round(statistics.median(explain_s), 2),
                     "total_s": round(sum(gen_s) + sum(explain_s), 1), "outputs": outputs})
    off, on = rows
    same = sum(a == b for a, b in zip(off["outputs"], on["outputs"]))
    result = {"date": date.today().isoformat(), "machine": platform.processor() or platform.machine(),
              "db": args.db, "questions": len(questions), "rows": rows,
              "speedup_total": round(off["total_s"] / on["total_s"], 2), "same_generated_sql": same}
    print("| state cache | generate median s | explain median s | total s |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['cache']} | {r['generate_median_s']} | {r['explain_median_s']} | {r['total_s']} |")
    print(f"speed-up (total): {result['speedup_total']}x; identical generated SQL: {same} of {len(questions)}")
    write_json(args.out, result)


if __name__ == "__main__":
    main()
