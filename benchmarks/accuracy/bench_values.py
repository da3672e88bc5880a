"""Value selection precision and coverage on Spider dev (no model involved).

    .venv/bin/python benchmarks/accuracy/bench_values.py [--data-dir ../shared/data/spider] [--out benchmarks/results/values.json]

For every dev question whose database is present: the values `select_values` picks, how many of them appear in the
gold SQL (precision; stored values are compared with surrounding spaces stripped, as some Spider databases keep
trailing spaces the gold SQL omits), and for questions whose gold SQL compares with a string literal, whether a selected value
equals one of those literals (coverage). Also the median milliseconds per question (value indexes built first).
"""

from __future__ import annotations

import json
import platform
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
from sqlweave.eval.datasets import load_spider
from sqlweave.stages.select_values import select_values, value_index


def gold_literals(sql: str) -> set[str]:
    """String literals of the gold SQL (Spider writes many in double quotes, which sqlglot reads as identifiers)."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except (sqlglot.errors.SqlglotError, ValueError):
        return set()
    out = {lit.this.strip("%").lower() for lit in tree.find_all(exp.Literal) if lit.is_string}
    for cmp in tree.find_all(exp.EQ, exp.NEQ, exp.Like):
        rhs = cmp.expression
        if isinstance(rhs, exp.Column) and rhs.this.args.get("quoted") and not rhs.table:
            out.add(rhs.name.strip("%").lower())
    return {o for o in out if o}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data/spider"))
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/values.json"))
    args = ap.parse_args()
    ds = load_spider(args.data_dir)
    dbs: dict[str, Database] = {}
    for ex in ds.examples:
        if ex.db_id not in dbs:
            dbs[ex.db_id] = Database.open(ds.db_dir / ex.db_id / f"{ex.db_id}.sqlite")
            value_index(dbs[ex.db_id])
    with_values = picked = in_gold = has_literal = covered = 0
    ms = []
    for ex in ds.examples:
        db = dbs[ex.db_id]
        start = time.perf_counter()
        found = select_values(ex.question, value_index(db), db.schema())
        ms.append(1000 * (time.perf_counter() - start))
        gold_sql = ex.gold_sql.lower()
        lits = gold_literals(ex.gold_sql)
        with_values += bool(found)
        picked += len(found)
        in_gold += sum(m.value.strip().lower() in gold_sql for m in found)
        if lits:
            has_literal += 1
            covered += any(m.value.strip().lower() in lits for m in found)
    row = {
        "questions": len(ds.examples), "questions_with_values": with_values, "values": picked,
        "precision_pct": round(100.0 * in_gold / picked, 1) if picked else None,
        "questions_with_gold_literal": has_literal, "covered": covered,
        "coverage_pct": round(100.0 * covered / has_literal, 1) if has_literal else None,
        "median_ms": round(statistics.median(ms), 2),
    }
    print("| questions | with values | values | in gold SQL % | gold has a string literal | a selected value is one | median ms |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {row['questions']} | {with_values} | {picked} | {row['precision_pct']} | {has_literal} | "
          f"{covered} ({row['coverage_pct']}%) | {row['median_ms']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"date": date.today().isoformat(), "machine": platform.processor() or platform.machine(),
                                    "command": "benchmarks/accuracy/bench_values.py", **row}, indent=2) + "\n")


if __name__ == "__main__":
    main()
