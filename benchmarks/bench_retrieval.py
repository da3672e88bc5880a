"""Example-pool build time and retrieval latency over Spider's 7,000 training pairs.

    .venv/bin/python benchmarks/bench_retrieval.py

Build: deriving question and SQL skeletons for every pair (cold cache), then a warm reload;
index: the BM25 index per field; search: median milliseconds per query over the 972 Spider dev
questions (BM25 on questions and on question skeletons). Writes benchmarks/results/retrieval.json.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPIDER = ROOT.parent / "shared" / "data" / "spider"


def main() -> None:
    os.environ["SQLWEAVE_CACHE_DIR"] = tempfile.mkdtemp()
    from sqlweave.eval.datasets import load_spider
    from sqlweave.retrieval.pool import ExamplePool
    from sqlweave.retrieval.question_skeleton import question_skeleton
    from sqlweave.db import Database

    t = time.perf_counter()
    pool = ExamplePool.from_spider(SPIDER / "train.json")
    cold = time.perf_counter() - t
    t = time.perf_counter()
    pool = ExamplePool.from_spider(SPIDER / "train.json")
    warm = time.perf_counter() - t
    index_s = {}
    for field in ("question", "question_skeleton", "sql_skeleton"):
        t = time.perf_counter()
        pool.index(field)
        index_s[field] = round(time.perf_counter() - t, 3)
    dev = load_spider(SPIDER, "dev")
    names = {}
    for ex in dev.examples:
        if ex.db_id not in names:
            s = Database.open(dev.db_path(ex.db_id)).schema()
            names[ex.db_id] = list(s.table_names) + [c.name for tb in s.tables for c in tb.columns]
    lat = {"question": [], "question_skeleton": []}
    for ex in dev.examples:
        t = time.perf_counter()
        pool.search("question", ex.question, k=4)
        lat["question"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        pool.search("question_skeleton", question_skeleton(ex.question, names[ex.db_id]), k=4)
        lat["question_skeleton"].append((time.perf_counter() - t) * 1000)
    row = {
        "pool": len(pool), "build_cold_s": round(cold, 2), "build_warm_s": round(warm, 2), "index_s": index_s,
        "median_ms": {k: round(statistics.median(v), 2) for k, v in lat.items()},
        "p95_ms": {k: round(sorted(v)[int(0.95 * len(v))], 2) for k, v in lat.items()}, "queries": len(dev.examples),
    }
    print("pool | build cold s | build warm s | index s (q / qskel / sqlskel) | median ms (q / qskel) | p95 ms (q / qskel)")
    print(f"{row['pool']} | {row['build_cold_s']} | {row['build_warm_s']} | {index_s['question']} / "
          f"{index_s['question_skeleton']} / {index_s['sql_skeleton']} | {row['median_ms']['question']} / "
          f"{row['median_ms']['question_skeleton']} | {row['p95_ms']['question']} / {row['p95_ms']['question_skeleton']}")
    out = ROOT / "benchmarks" / "results" / "retrieval.json"
    out.write_text(json.dumps({"date": date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                               "command": " ".join(sys.argv), **row}, indent=2) + "\n")


if __name__ == "__main__":
    main()
