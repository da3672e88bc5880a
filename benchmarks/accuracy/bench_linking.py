"""Schema links by meaning (`link_schema`) on Spider-Syn and Spider's own wording, no model involved.

    .venv/bin/python benchmarks/accuracy/bench_linking.py [--sample benchmarks/samples/spider-dev-200.json]
        [--thresholds 0.5,0.55,0.6] [--margins 0.0,0.05,0.1] [--out benchmarks/results/linking-200.json]

Spider-Syn rewords Spider dev questions with synonyms ("singers" -> "vocalists"): the words of a Spider-Syn
question that its Spider wording lacks are the reworded ones. For each threshold and margin, over the sample's
questions: how many links `link_terms` makes on each wording, how many of the Spider-Syn links are on a
reworded word, and how many links point at a table the gold query reads (a column's table for a column link).
Links on Spider's wording are what the stage adds to questions that name the schema already.
"""

from __future__ import annotations

import json
import platform
import re
import statistics
import sys
import time
from datetime import date
from pathlib import Path

import sqlglot
from sqlglot import exp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import parser  # noqa: E402
from sqlweave.database import Database
from sqlweave.eval.datasets import load_spider, load_spider_syn
from sqlweave.retrieval.dense import get_embedder
from sqlweave.stages.link_schema import link_terms

_WORD = re.compile(r"[a-z]+")


def gold_tables(sql: str) -> set[str]:
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except (sqlglot.errors.SqlglotError, ValueError):
        return set()
    return {t.name.lower() for t in tree.find_all(exp.Table)}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--spider", type=Path, default=Path("../shared/data/spider"))
    ap.add_argument("--syn", type=Path, default=Path("../shared/data/spider_syn"))
    ap.add_argument("--sample", type=Path, default=Path("benchmarks/samples/spider-dev-200.json"))
    ap.add_argument("--thresholds", default="0.5,0.55,0.6")
    ap.add_argument("--margins", default="0.0,0.05,0.1")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/linking-200.json"))
    args = ap.parse_args()
    ids = set(json.loads(args.sample.read_text())["ids"])
    dataset = load_spider(args.spider)
    spider = {e.id: e for e in dataset.examples if e.id in ids}
    syn = {e.id: e for e in load_spider_syn(args.syn).examples if e.id in spider}
    schemas = {db: Database.open(dataset.db_dir / db / f"{db}.sqlite").schema()
               for db in {e.db_id for e in syn.values()}}
    embedder = get_embedder()
    rows = []
    for threshold in (float(t) for t in args.thresholds.split(",")):
        for margin in (float(m) for m in args.margins.split(",")):
            row = {"threshold": threshold, "margin": margin, "questions": len(syn), "syn_links": 0,
                   "syn_on_reworded": 0, "syn_to_gold_table": 0, "spider_links": 0, "spider_to_gold_table": 0,
                   "syn_questions_linked": 0}
            ms = []
            for qid, ex in syn.items():
                schema, tables = schemas[ex.db_id], gold_tables(ex.gold_sql)
                reworded = set(_WORD.findall(ex.question.lower())) - set(_WORD.findall(spider[qid].question.lower()))
                start = time.perf_counter()
                links = link_terms(ex.question, schema, embedder, threshold=threshold, margin=margin)
                ms.append(1000 * (time.perf_counter() - start))
                own = link_terms(spider[qid].question, schema, embedder, threshold=threshold, margin=margin)
                row["syn_links"] += len(links)
                row["syn_questions_linked"] += bool(links)
                row["syn_on_reworded"] += sum(link.word.lower() in reworded for link in links)
                row["syn_to_gold_table"] += sum(link.table.lower() in tables for link in links)
                row["spider_links"] += len(own)
                row["spider_to_gold_table"] += sum(link.table.lower() in tables for link in own)
            row["median_ms"] = round(statistics.median(ms), 2)
            rows.append(row)
    print("| threshold | margin | Spider-Syn questions linked | links | on a reworded word | to a gold table "
          "| links on Spider's wording | to a gold table | median ms / q |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['threshold']} | {r['margin']} | {r['syn_questions_linked']} of {r['questions']} | "
              f"{r['syn_links']} | {r['syn_on_reworded']} | {r['syn_to_gold_table']} | {r['spider_links']} | "
              f"{r['spider_to_gold_table']} | {r['median_ms']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"date": date.today().isoformat(), "machine": platform.processor() or
                                    platform.machine(), "sample": str(args.sample), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
