"""Embedded-model speed: load time, prompt and generation tokens/s, and seconds per question
for the zero-shot pipeline on a fixed sample of Spider dev questions.

    .venv/bin/python benchmarks/speed/bench_models.py --models 1.5b 0.5b --questions 20

Prints a table and writes benchmarks/results/models.json. Each model loads in a fresh
subprocess so load time is a cold(-ish) in-process load, not a cached one.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import SPIDER, RESULTS, write_json


def sample_questions(n: int, seed: int = 0):
    from sqlweave.eval.datasets import load_spider

    ds = load_spider(SPIDER, "dev")
    return ds, random.Random(seed).sample(list(ds.examples), n)


def measure(model: str, n_questions: int) -> dict:
    import sqlweave
    from sqlweave.database import Database
    from sqlweave.eval.metrics import order_matters, spider_result_eq
    from sqlweave.llm.base import Message
    from sqlweave.llm.local import LocalLLM, load_llama

    t0 = time.perf_counter()
    # No state cache: prompt speed is measured from scratch, and seconds per question stay comparable
    # with earlier runs (the pipeline here makes one call per question, so the cache would not help it).
    llm = LocalLLM(model, state_cache_mb=0)
    llama = load_llama(llm.key, llm.n_ctx, llm.n_threads, state_cache_mb=0)
    load_s = time.perf_counter() - t0

    # Speeds from llama.cpp's own counters: a ~600-token prompt evaluated from scratch, then 128 tokens.
    import llama_cpp

    text = "\n".join(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, name TEXT, value REAL, created TEXT);" for i in range(30))
    prompt_rates, gen_rates = [], []
    for _ in range(3):
        llama.reset()
        llama_cpp.llama_perf_context_reset(llama._ctx.ctx)
        llm.complete([Message("user", text + "\nWrite a long SQL tutorial about these tables.")], max_tokens=128,
                     temperature=0.8, seed=len(prompt_rates))
        perf = llama_cpp.llama_perf_context(llama._ctx.ctx)
        prompt_rates.append(perf.n_p_eval / (perf.t_p_eval_ms / 1000))
        gen_rates.append(perf.n_eval / (perf.t_eval_ms / 1000))

    ds, questions = sample_questions(n_questions)
    per_q, correct, executed, prompt_tokens, completion_tokens = [], 0, 0, [], []
    # Grouped by database, as an evaluation runs them, so the schema prefix is reused.
    for ex in sorted(questions, key=lambda e: e.db_id):
        db = Database.open(ds.db_path(ex.db_id))
        engine = sqlweave.connect(db.target, llm=llm, cache=False)
        answer = engine.run(ex.question)
        per_q.append(answer.seconds)
        prompt_tokens.append(answer.usage.prompt_tokens)
        completion_tokens.append(answer.usage.completion_tokens)
        if answer.result is not None:
            executed += 1
            gold = db.execute(ex.gold_sql, max_rows=10**9).rows
            pred = db.execute(answer.sql, max_rows=10**9).rows
            correct += spider_result_eq(gold, pred, order_matters(ex.gold_sql))
    return {
        "model": model,
        "load_s": round(load_s, 2),
        "prompt_tok_per_s": round(statistics.median(prompt_rates), 1),
        "gen_tok_per_s": round(statistics.median(gen_rates), 1),
        "questions": len(questions),
        "median_s_per_question": round(statistics.median(per_q), 2),
        "mean_s_per_question": round(statistics.mean(per_q), 2),
        "median_prompt_tokens": statistics.median(prompt_tokens),
        "median_completion_tokens": statistics.median(completion_tokens),
        "executed": executed,
        "ex_correct": correct,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", nargs="+", default=["1.5b", "0.5b"])
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.questions)))
        return
    rows = []
    for m in args.models:
        out = subprocess.run([sys.executable, __file__, "--one", m, "--questions", str(args.questions)],
                             capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    cols = ["model", "load_s", "prompt_tok_per_s", "gen_tok_per_s", "median_s_per_question", "mean_s_per_question",
            "median_prompt_tokens", "executed", "ex_correct"]
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r[c]) for c in cols))
    result = {"date": date.today().isoformat(), "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, "
              f"{__import__('os').cpu_count()} cores", "command": " ".join(sys.argv), "rows": rows}
    results = RESULTS / "models.json"
    write_json(results, result)
    print(f"wrote {results}")


if __name__ == "__main__":
    main()
