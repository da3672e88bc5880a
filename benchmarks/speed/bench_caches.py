"""Per-schema retrieval caches: what a warm lookup costs, and that the cache stops at its bound (no model).

    .venv/bin/python benchmarks/speed/bench_caches.py [--questions N] [--repeats R] [--schemas S] [--out FILE]

1. Warm retrieval time: every Spider dev question (or the first ``--questions``) pruned with BM25 on its own
   database (``prune(method="bm25")``: the per-schema column index), and ranked against one schema made of the
   20 dev databases together (``rank_schema(dense=False)``: the table and column indexes and the foreign-key
   graph). Each question is asked once to fill the caches, then ``--repeats`` times; the median over the repeats
   of the total is reported, in milliseconds per question.
   The three warm look-ups ``rank_schema`` makes of the large schema's caches (column index, table index, graph)
   are timed alone too (best of ``--repeats`` rounds of 200).
2. The bound: ``--schemas`` (60) distinct schemas pruned in turn; the number of per-schema column indexes held
   afterwards, next to the bound the resources declare.

Works on any checkout of sqlweave (``PYTHONPATH=<checkout>``), so the same questions can be timed before and
after a change to the caches. Writes ``benchmarks/results/caches.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md

ROOT = Path(__file__).resolve().parents[2]
SPIDER = ROOT.parent / "shared" / "data" / "spider"


def combined(schemas: dict[str, Any]) -> Any:
    """One schema holding every table of ``schemas``, each named ``db__table``."""
    from sqlweave.schema import ForeignKey, Schema

    tables, fks = [], []
    for db_id, s in sorted(schemas.items()):
        tables += [replace(t, name=f"{db_id}__{t.name}") for t in s.tables]
        fks += [ForeignKey(f"{db_id}__{fk.table}", fk.column, f"{db_id}__{fk.ref_table}", fk.ref_column)
                for fk in s.foreign_keys]
    return Schema("spider_dev_all", tuple(tables), tuple(fks))


def timed(repeats: int, run: Any) -> float:
    """Median seconds of ``run()`` over ``repeats`` runs, after one run that fills the caches."""
    run()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def held_indexes() -> tuple[int, int | None]:
    """``(column indexes held, bound)``, read from wherever this checkout keeps them."""
    from sqlweave.retrieval import schema_retriever

    old = getattr(schema_retriever, "_INDEXES", None)
    if old is not None:  # a process-wide dict, without a bound
        return len(old), None
    from sqlweave.resources import shared_resources

    return len(shared_resources().items(schema_retriever.COLUMN_INDEX)), schema_retriever.SCHEMA_INDEXES


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=int, default=0, help="first N dev questions (0: all)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--schemas", type=int, default=60)
    ap.add_argument("--label", default="", help="a name for this checkout in the results")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "caches.json")
    args = ap.parse_args()
    import sqlweave
    from sqlweave.database import Database
    from sqlweave.eval.datasets import load_spider
    from sqlweave.retrieval.schema_retriever import prune

    from sqlweave.retrieval.schema_retriever import column_index

    try:
        from sqlweave.retrieval.budget_fit import graph_and_keys, rank_schema, table_index
    except ImportError:  # a checkout from before the budget fit had a module of its own
        from sqlweave.retrieval.schema_retriever import (  # type: ignore[attr-defined,no-redef]
            _graph_and_keys as graph_and_keys, rank_schema, table_index)
    from sqlweave.schema import Column, Schema, Table

    ds = load_spider(SPIDER, "dev")
    examples = ds.examples[: args.questions] if args.questions else ds.examples
    schemas = {}
    for ex in ds.examples:
        if ex.db_id not in schemas:
            schemas[ex.db_id] = Database.open(ds.db_path(ex.db_id)).schema()
    big = combined(schemas)
    ranked = examples[:100]

    prune_s = timed(args.repeats, lambda: [prune(schemas[ex.db_id], ex.question, method="bm25") for ex in examples])
    rank_s = timed(args.repeats, lambda: [rank_schema(big, ex.question, dense=False) for ex in ranked])
    lookup_s = min(timed(1, lambda: [(column_index(big), table_index(big), graph_and_keys(big)) for _ in range(200)])
                   for _ in range(args.repeats))

    for i in range(args.schemas):
        s = Schema(f"db{i}", (Table("singer", (Column("id", primary_key=True), Column(f"name{i}"))),))
        prune(s, "How many singers?", method="bm25")
    held, bound = held_indexes()

    row = {"label": args.label, "code": str(Path(sqlweave.__file__).parent),
           "prune_bm25_ms_per_question": round(1000 * prune_s / len(examples), 3), "prune_questions": len(examples),
           "rank_large_ms_per_question": round(1000 * rank_s / len(ranked), 3), "rank_questions": len(ranked),
           "warm_lookups_ms": round(1000 * lookup_s / 200, 3),
           "large_schema_tables": len(big.tables), "distinct_schemas_asked": args.schemas,
           "column_indexes_held": held, "bound": bound}
    print(json.dumps(row, indent=1))
    found = json.loads(args.out.read_text()) if args.out.exists() else {"runs": []}
    found.update({"date": str(date.today()), "machine": f"{platform.machine()} {os.cpu_count()} cores",
                  "python": platform.python_version()})
    found["runs"] = [r for r in found["runs"] if r.get("label") != args.label] + [row]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
