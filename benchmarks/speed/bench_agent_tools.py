"""The agent's tools on Spider: SearchValue index build and query latency on the largest database,
FindShortestPath on every Spider dev database, SearchColumn index build and query latency.

    .venv/bin/python benchmarks/speed/bench_agent_tools.py

- SearchValue: cold build (read every text value, persist), warm build (all tables reused from disk), median
  milliseconds per query for every string literal of the database's training/dev gold queries.
- FindShortestPath: for every dev database, every pair of tables (median ms, share connected); and against the
  gold: for each dev question whose gold query joins 2+ tables, whether the union of the paths from its first
  table to each other table is exactly the gold's tables (extra tables = a longer path than the gold uses).
- SearchColumn: embedding index build per dev database (cold cache) and median ms per query.
Writes benchmarks/results/agent_tools.json.
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import date
from pathlib import Path

import sqlglot
from sqlglot import exp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, SPIDER, RESULTS, parser, write_json


def ms(xs: list[float]) -> float:
    return round(statistics.median(xs) * 1000, 3) if xs else float("nan")


def gold_tables(sql: str) -> list[str]:
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except sqlglot.errors.SqlglotError:
        return []
    seen: list[str] = []
    for t in tree.find_all(exp.Table):
        if t.name.lower() not in seen:
            seen.append(t.name.lower())
    return seen


def main() -> None:
    parser(__doc__).parse_args()  # no options: --help only
    os.environ["SQLWEAVE_CACHE_DIR"] = tempfile.mkdtemp()
    from sqlweave.agent.tools import Toolkit
    from sqlweave.database import Database
    from sqlweave.retrieval.values import ValueIndex

    dbdir = SPIDER / "database"
    dev = json.loads((SPIDER / "dev.json").read_text())
    train = json.loads((SPIDER / "train.json").read_text())
    out: dict = {"machine": f"{platform.node()} ({os.cpu_count()} CPUs)", "date": str(date.today())}

    # SearchValue on the largest database (by file size).
    largest = max((p for p in dbdir.glob("*/*.sqlite")), key=lambda p: p.stat().st_size)
    db = Database.open(largest)
    t = time.perf_counter(); idx = ValueIndex.build(db); cold = time.perf_counter() - t
    t = time.perf_counter(); idx = ValueIndex.build(Database.open(largest)); warm = time.perf_counter() - t
    literals = sorted({lit.this for q in train + dev if q["db_id"] == largest.stem
                       for lit in sqlglot.parse_one(q["query"], read="sqlite").find_all(exp.Literal) if lit.is_string})
    times, found = [], 0
    for lit in literals:
        t = time.perf_counter(); hits = idx.search(lit, k=5); times.append(time.perf_counter() - t)
        found += any(h.value.lower() == lit.lower() for h in hits)
    out["search_value"] = {"database": largest.stem, "bytes": largest.stat().st_size, "values": len(idx),
                           "build_cold_s": round(cold, 3), "build_warm_s": round(warm, 3), "queries": len(literals),
                           "median_ms": ms(times), "exact_value_in_top5": found}

    # FindShortestPath on every dev database.
    by_db = defaultdict(list)
    for q in dev:
        by_db[q["db_id"]].append(q)
    pair_times, pairs, connected = [], 0, 0
    gold_n, gold_exact, gold_cover = 0, 0, 0
    col_build, col_times = [], []
    for db_id, qs in sorted(by_db.items()):
        path = dbdir / db_id / f"{db_id}.sqlite"
        if not path.exists():
            continue
        kit = Toolkit(Database.open(path))
        names = kit.schema.table_names
        for a, b in itertools.combinations(names, 2):
            pairs += 1
            t = time.perf_counter()
            try:
                kit.find_shortest_path(a, b)
                connected += 1
            except Exception:  # noqa: BLE001 - unconnected pairs are counted, not fatal
                pass
            pair_times.append(time.perf_counter() - t)
        for q in qs:
            tables = [t for t in gold_tables(q["query"]) if kit.schema.has_table(t)]
            if len(tables) < 2:
                continue
            gold_n += 1
            union = {tables[0]}
            try:
                for other in tables[1:]:
                    union |= {x.lower() for x in kit.find_shortest_path(tables[0], other).tables}
            except Exception:  # noqa: BLE001
                continue
            gold_cover += set(tables) <= union
            gold_exact += set(tables) == union
        t = time.perf_counter(); kit.search_column("name", k=5); col_build.append(time.perf_counter() - t)
        for q in qs[:5]:
            t = time.perf_counter(); kit.search_column(q["question"], k=5); col_times.append(time.perf_counter() - t)
    out["find_shortest_path"] = {"databases": len(by_db), "table_pairs": pairs, "connected": connected,
                                 "median_ms": ms(pair_times), "gold_join_questions": gold_n,
                                 "gold_tables_covered": gold_cover, "gold_tables_exact": gold_exact}
    out["search_column"] = {"databases": len(col_build), "index_build_median_ms": ms(col_build),
                            "query_median_ms": ms(col_times), "queries": len(col_times)}

    sv, fp, sc = out["search_value"], out["find_shortest_path"], out["search_column"]
    print(f"SearchValue on {sv['database']} ({sv['bytes'] / 1e6:.1f} MB, {sv['values']} values): build "
          f"{sv['build_cold_s']} s cold / {sv['build_warm_s']} s warm; {sv['median_ms']} ms median over "
          f"{sv['queries']} gold literals; exact value in top 5: {sv['exact_value_in_top5']}/{sv['queries']}")
    print(f"FindShortestPath on {fp['databases']} dev databases: {fp['connected']}/{fp['table_pairs']} table pairs "
          f"connected, {fp['median_ms']} ms median; gold joins ({fp['gold_join_questions']} questions): tables "
          f"covered {fp['gold_tables_covered']}, exactly the gold's {fp['gold_tables_exact']}")
    print(f"SearchColumn: index build {sc['index_build_median_ms']} ms median per database (cold), "
          f"{sc['query_median_ms']} ms median per query ({sc['queries']} queries)")
    res = RESULTS / "agent_tools.json"
    write_json(res, out)
    print(f"wrote {res.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
