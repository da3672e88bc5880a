"""Schema-pruning recall and shortening on Spider dev (972 questions with a database).

    .venv/bin/python benchmarks/schema/bench_pruning.py [--approx RUN_FOLDER ...] [--no-dense] [--out FILE]

Recall: share of questions whose gold tables and columns are all kept. Shortening: mean share of
schema elements (tables + columns) removed. Methods: BM25 top-k columns (k = 5, 10, 15, 20),
RB-SQL's dense Table-Retriever (``dense-table``) and Table- then Column-Retriever (``dense``, MaxSim
late interaction over MiniLM token embeddings; ``dense cosine``: sentence embeddings), the union of
BM25 and a strict dense retriever (``hybrid-dense``), and ASTReS's hybrid (dynamic top-k + the elements of an
approximated query), alone and united with the dense retrievers. Approximated queries
come from evaluation run folders (their predictions), so the hybrid is measured on the questions
those runs cover; the gold query as approximation gives the upper bound on all 972. The dense
margins (theta, mu) were chosen on this same dev set, so the dense rows are optimistic.
Writes benchmarks/results/pruning.json (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import SPIDER, RESULTS, machine


def value_columns(ds, examples) -> dict[str, list[tuple[str, str]]]:
    """Per question, the columns of the stored values it names (the ``select_values`` matcher)."""
    from sqlweave.database import Database
    from sqlweave.stages.select_values import select_values, value_index

    indexes, out = {}, {}
    for ex in examples:
        if ex.db_id not in indexes:
            db = Database.open(ds.db_path(ex.db_id))
            indexes[ex.db_id] = (value_index(db), db.schema())
        index, schema = indexes[ex.db_id]
        out[ex.id] = [(m.table, m.column) for m in select_values(ex.question, index, schema)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--approx", nargs="*", type=Path, default=[])
    ap.add_argument("--no-dense", action="store_true", help="skip the dense methods (no embedding model)")
    ap.add_argument("--out", type=Path, default=RESULTS / "pruning.json",
                    help="where to write the JSON results")
    args = ap.parse_args()
    from sqlweave.database import Database
    from sqlweave.eval.datasets import load_spider
    from sqlweave.eval.runner import load_results
    from sqlweave.retrieval.schema_retriever import prune, prune_stats

    ds = load_spider(SPIDER, "dev")
    schemas = {}
    for ex in ds.examples:
        if ex.db_id not in schemas:
            schemas[ex.db_id] = Database.open(ds.db_path(ex.db_id)).schema()
    rows = []

    def measure(label: str, examples, approx_of=None, also_keep_of=None, **kw) -> None:
        rec, short = [], []
        for ex in examples:
            s = schemas[ex.db_id]
            kept = prune(s, ex.question, approx_sql=approx_of(ex) if approx_of else None,
                         also_keep=also_keep_of(ex) if also_keep_of else (), **kw)
            r, sh = prune_stats(s, kept, ex.gold_sql)
            rec.append(r)
            short.append(sh)
        rows.append({"method": label, "questions": len(rec), "recall": round(100 * sum(rec) / len(rec), 1),
                     "shortening": round(100 * statistics.mean(short), 1)})

    for k in (5, 10, 15, 20):
        measure(f"bm25 top-{k}", ds.examples, method="bm25", k=k)
    dense = not args.no_dense
    if dense:
        measure("dense-table (Table-Retriever, MaxSim)", ds.examples, method="dense-table")
        for k in (4, 6):
            measure(f"dense (Table+Column-Retriever, MaxSim), min {k} columns", ds.examples, method="dense", k=k)
        measure("dense (Table+Column-Retriever, cosine), min 6 columns", ds.examples, method="dense", k=6,
                scoring="cosine")
        for k in (5, 10):
            measure(f"hybrid-dense (bm25 top-{k} + strict dense)", ds.examples, method="hybrid-dense", k=k)
    by_id = {e.id: e for e in ds.examples}
    measure("hybrid, gold as approximation (upper bound)", ds.examples, method="hybrid",
            approx_of=lambda e: e.gold_sql)
    for run in args.approx:
        if not (run / "results.jsonl").exists():
            print(f"(no results.jsonl in {run}: its hybrid rows are left out)", file=sys.stderr)
            continue
        preds = {r.id: r.prediction for r in load_results(run) if r.prediction}
        covered = [by_id[i] for i in preds if i in by_id]
        measure(f"bm25 top-10 on {run.name}'s questions", covered, method="bm25", k=10)
        if dense:
            measure(f"dense, min 4 columns, on {run.name}'s questions", covered, method="dense", k=4)
        for factor in (1.5, 2.0, 2.5, 3.0):
            measure(f"hybrid x{factor}, approximated by {run.name}", covered, method="hybrid", factor=factor,
                    approx_of=lambda e: preds[e.id], loose=False)
        for factor in (1.5, 2.0):
            measure(f"hybrid x{factor} loose (wrong column names resolved), approximated by {run.name}", covered,
                    method="hybrid", factor=factor, approx_of=lambda e: preds[e.id], loose=True)
        values = value_columns(ds, covered)
        measure(f"hybrid x2.0 loose + columns of the values the question names, approximated by {run.name}",
                covered, method="hybrid", factor=2.0, approx_of=lambda e: preds[e.id], loose=True,
                also_keep_of=lambda e: values[e.id])
        if dense:
            for factor in (1.5, 2.0):
                measure(f"hybrid-dense (hybrid x{factor} loose + strict dense), approximated by {run.name}", covered,
                        method="hybrid-dense", factor=factor, approx_of=lambda e: preds[e.id])
    print("| method | questions | recall % | shortening % |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['method']} | {r['questions']} | {r['recall']} | {r['shortening']} |")
    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": date.today().isoformat(), "machine": machine(),
                               "command": " ".join(sys.argv), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
