"""Example-pool build time and the latency of every example selector over Spider's 7,000 training pairs.

    .venv/bin/python benchmarks/speed/bench_retrieval.py

Build: deriving question skeletons, SQL skeletons and normalised SQL for every pair (cold cache), then a warm
reload; index: the BM25 index per field; dense: the all-MiniLM-L6-v2 index over the pool's question skeletons,
cold (every skeleton embedded; the model already loaded, its load time given apart) and warm (a new pool object,
vectors read back from the embedder's disk cache). Selectors: the ``select_examples`` stage itself, k = 4, one
call per Spider dev question, median and p95 milliseconds (query-side embedding included; the dev question's own
database excluded, as in a pipeline). ``sql_skeleton`` and ``ast_rerank`` use the gold dev SQL as the
approximation (an upper bound on what a real first pass gives them, and the same cost); ``dense_skeleton`` runs
without a simplified question (k1 only), ``dense_skeleton+simplified`` passes the question itself as the
simplified one, to time the second (k2) retrieval. Writes benchmarks/results/retrieval.json.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import SPIDER, RESULTS, parser, machine

# (label, select_examples method, what goes into the state besides the question)
SELECTORS = (
    ("bm25", "bm25", None),
    ("question_skeleton", "question_skeleton", None),
    ("sql_skeleton", "sql_skeleton", "gold_as_sql"),
    ("ast_rerank", "ast_rerank", "gold_as_approx"),
    ("dense_skeleton", "dense_skeleton", None),
    ("dense_skeleton+simplified", "dense_skeleton", "question_as_simplified"),
)


def _ms(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return round(statistics.median(ordered), 2), round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2)


def main() -> None:
    parser(__doc__).parse_args()  # no options: --help only
    os.environ["SQLWEAVE_CACHE_DIR"] = tempfile.mkdtemp()
    from sqlweave.database import Database
    from sqlweave.eval.datasets import load_spider
    from sqlweave.llm import FakeLLM
    from sqlweave.pipeline import State
    from sqlweave.retrieval.dense import get_embedder
    from sqlweave.retrieval.pool import ExamplePool, load_pool
    from sqlweave.stages.select_examples import SelectExamples

    train = SPIDER / "train.json"
    t = time.perf_counter()
    cold_pool = ExamplePool.from_spider(train)
    cold = time.perf_counter() - t
    t = time.perf_counter()
    pool = load_pool(train)  # the process-wide pool the stage uses
    warm = time.perf_counter() - t
    index_s = {}
    for field in ("question", "question_skeleton", "sql_skeleton"):
        t = time.perf_counter()
        pool.index(field)
        index_s[field] = round(time.perf_counter() - t, 3)

    emb = get_embedder()
    t = time.perf_counter()
    emb.model  # noqa: B018 - load the model once, timed apart
    model_load = time.perf_counter() - t
    t = time.perf_counter()
    cold_pool.dense_index("question_skeleton", emb)
    dense_cold = time.perf_counter() - t
    t = time.perf_counter()
    pool.dense_index("question_skeleton", emb)
    dense_warm = time.perf_counter() - t
    del cold_pool

    dev = load_spider(SPIDER, "dev")
    dbs = {db_id: Database.open(dev.db_path(db_id)) for db_id in sorted({ex.db_id for ex in dev.examples})}
    schemas = {db_id: db.schema() for db_id, db in dbs.items()}
    llm = FakeLLM([])
    lat: dict[str, list[float]] = {label: [] for label, _, _ in SELECTORS}
    for label, method, feed in SELECTORS:
        stage = SelectExamples(pool=str(train), method=method, k=4)
        for ex in dev.examples:
            state = State(question=ex.question, db=dbs[ex.db_id], llm=llm, schema=schemas[ex.db_id],
                          prompt_schema=schemas[ex.db_id])
            if feed == "gold_as_sql":
                state.sql = ex.gold_sql
            elif feed == "gold_as_approx":
                state.approx_sql = ex.gold_sql
            elif feed == "question_as_simplified":
                state.simplified_question = ex.question
            t = time.perf_counter()
            stage(state)
            lat[label].append((time.perf_counter() - t) * 1000)
            assert len(state.examples) >= 4

    per = {label: _ms(v) for label, v in lat.items()}
    row = {
        "pool": len(pool), "queries": len(dev.examples), "k": 4,
        "build_cold_s": round(cold, 2), "build_warm_s": round(warm, 2), "index_s": index_s,
        "dense_model_load_s": round(model_load, 2), "dense_index_cold_s": round(dense_cold, 2),
        "dense_index_warm_s": round(dense_warm, 2),
        "median_ms": {label: m for label, (m, _) in per.items()},
        "p95_ms": {label: p for label, (_, p) in per.items()},
        "notes": ("stage call per Spider dev question; sql_skeleton and ast_rerank get the gold dev SQL as the "
                  "approximation; ast_rerank re-ranks the top 20 BM25 candidates; dense_skeleton+simplified passes "
                  "the question itself as the simplified question"),
    }
    print(f"pool {row['pool']} pairs | build cold {row['build_cold_s']} s, warm {row['build_warm_s']} s | BM25 index s "
          f"(q / qskel / sqlskel) {index_s['question']} / {index_s['question_skeleton']} / {index_s['sql_skeleton']}")
    print(f"dense question-skeleton index: model load {row['dense_model_load_s']} s, cold {row['dense_index_cold_s']} s, "
          f"warm {row['dense_index_warm_s']} s")
    print(f"\nselector (k = 4, {row['queries']} dev questions) | median ms | p95 ms")
    print("--- | --- | ---")
    notes = {"sql_skeleton": " (gold SQL as approximation)", "ast_rerank": " (gold SQL as approximation, top 20 BM25)",
             "dense_skeleton+simplified": " (question as its own simplification)"}
    for label, (m, p) in per.items():
        print(f"{label}{notes.get(label, '')} | {m} | {p}")
    out = RESULTS / "retrieval.json"
    out.write_text(json.dumps({"date": date.today().isoformat(), "machine": machine(),
                               "command": " ".join(sys.argv), **row}, indent=2) + "\n")


if __name__ == "__main__":
    main()
