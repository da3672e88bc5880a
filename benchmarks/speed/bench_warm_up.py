"""The first question on a database never asked before: with and without a warm-up (the embedded model).

    .venv/bin/python benchmarks/speed/bench_warm_up.py [--rounds 2] [--out benchmarks/results/warm-up.json]

Each measurement is a fresh Python process with its own empty cache folder (no prompt states on disk, no response
cache; the model weights are shared): it loads the 1.5B model, opens one database, and asks one question with
``default``. Two ways, alternating round by round:

- ``cold``: the question is the first thing the model evaluates (what a server's first user waited for);
- ``warm``: :meth:`sqlweave.engine.Engine.warm_up` runs first (what ``sqlweave serve`` and ``sqlweave mcp`` now do at
  start, behind any question), then the question.

Timed: the warm-up, and the question (``Engine.ask``, all its stages); the process's start and the model load are not
counted. The SQL of the two ways must be the same. Databases: the demo shop and three Spider dev databases, one
question each. Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, RESULTS, SPIDER

CASES = [
    ("shop (demo)", None, "How many orders were shipped to Canada?"),
    ("concert_singer", "concert_singer", "How many singers are older than 30?"),
    ("car_1", "car_1", "What is the average horsepower of cars made in 1980?"),
    ("world_1", "world_1", "Which countries in Europe have a population over 50 million?"),
]

CHILD = r"""
import json, sys, time
import sqlweave
from sqlweave.db.demo import demo_database_path
from sqlweave.llm.local import LocalLLM

target, question, warm = sys.argv[1], sys.argv[2], sys.argv[3] == "warm"
llm = LocalLLM("1.5b")
llm.llama  # the load is not timed
engine = sqlweave.connect(target or demo_database_path(), llm=llm, cache=False)
engine.db.schema()  # nor the schema read (the same in both ways)
warm_s = None
if warm:
    start = time.perf_counter()
    assert engine.warm_up()
    warm_s = time.perf_counter() - start
start = time.perf_counter()
answer = engine.ask(question)
ask_s = time.perf_counter() - start
print(json.dumps({"warm_up_s": warm_s, "ask_s": ask_s, "sql": answer.sql}))
"""


def run_one(target: str, question: str, way: str, model_dir: str) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "SQLWEAVE_CACHE_DIR": cache, "SQLWEAVE_MODEL_DIR": model_dir}
        out = subprocess.run([sys.executable, "-c", CHILD, target, question, way], env=env, capture_output=True,
                             text=True, timeout=900, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"{way} run failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "warm-up.json")
    args = parser.parse_args()
    from sqlweave.config import Settings

    model_dir = str(Settings.from_env().model_dir)
    rows = []
    for name, db_id, question in CASES:
        target = "" if db_id is None else str(SPIDER / "database" / db_id / f"{db_id}.sqlite")
        runs: dict[str, list[dict]] = {"cold": [], "warm": []}
        for r in range(args.rounds):
            for way in (("cold", "warm") if r % 2 == 0 else ("warm", "cold")):
                runs[way].append(run_one(target, question, way, model_dir))
                print(f"{name} {way}: {runs[way][-1]['ask_s']:.2f} s", file=sys.stderr)
        sqls = {run["sql"] for way in runs for run in runs[way]}
        row = {"database": name, "question": question,
               "cold_ask_s": statistics.median(run["ask_s"] for run in runs["cold"]),
               "warm_ask_s": statistics.median(run["ask_s"] for run in runs["warm"]),
               "warm_up_s": statistics.median(run["warm_up_s"] for run in runs["warm"]),
               "same_sql": len(sqls) == 1, "runs": runs}
        row["ratio"] = row["cold_ask_s"] / row["warm_ask_s"]
        rows.append(row)
    print("| database | first question, cold (s) | first question after a warm-up (s) | ratio | warm-up (s) | same SQL |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['database']} | {row['cold_ask_s']:.2f} | {row['warm_ask_s']:.2f} | {row['ratio']:.1f} | "
              f"{row['warm_up_s']:.2f} | {'yes' if row['same_sql'] else 'NO'} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"date": date.today().isoformat(), "machine": platform.processor() or platform.machine(),
                                    "cores": os.cpu_count(), "rounds": args.rounds, "rows": rows}, indent=2) + "\n")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
