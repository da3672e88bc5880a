"""Each engine's SQL on the other engine: defog's PostgreSQL gold queries on SQLite, and its SQLite gold queries on
PostgreSQL, through sqlweave's transpiler and ``Database.execute``. No model is called.

    .venv/bin/python benchmarks/accuracy/bench_cross_dialect.py [--results benchmarks/results/cross-dialect.json] [--stop-server]

defog ships every one of its 210 questions twice, with a PostgreSQL gold query (``questions_gen_postgres.csv``) and
a SQLite one (``questions_gen_sqlite.csv``). A query written for one engine is what a model trained on that engine's
SQL answers on the other, so each gold query (its first alternative) runs where it was not written for, the way a
model's answer runs there (:func:`sqlweave.sql.extract.extract_sql` to the database's dialect, with its schema, then
:meth:`sqlweave.db.Database.execute`; a query that fails is then repaired by rule, as the pipeline's ``repair`` stage
does, :func:`sqlweave.sql.repair.repair_schema_links`, and kept repaired when that runs), and is scored with the benchmark's own rule against that engine's gold
(:func:`sqlweave.eval.defog.score_on_database`). The databases are those of ``benchmarks/accuracy/bench_defog.py`` (the
throwaway PostgreSQL server in ``--pg-dir``, the SQLite copies made by sqlweave's loader).

To measure a change, run the same command with the package of another commit (``git worktree add /tmp/before REV``,
then ``PYTHONPATH=/tmp/before`` with the command run from ``/tmp``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import DEFOG, machine  # noqa: E402
from benchmarks.accuracy.defog_setup import DEFAULT_PG_DIR, DefogDatabases, database_names, default_cache  # noqa: E402

DIRECTIONS = (("postgres", "sqlite"), ("sqlite", "postgres"))
LABEL = {"postgres": "PostgreSQL", "sqlite": "SQLite"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFOG)
    ap.add_argument("--pg-dir", type=Path, default=DEFAULT_PG_DIR, help="the PostgreSQL server's folder")
    ap.add_argument("--cache", type=Path, help="knowledge files and SQLite copies")
    ap.add_argument("--results", type=Path, help="write the summary and every question's outcome here")
    ap.add_argument("--show", type=int, default=0, help="print N failing queries per direction")
    ap.add_argument("--stop-server", action="store_true")
    args = ap.parse_args(argv)

    import sqlweave
    from sqlweave.database import Database
    from sqlweave.eval.defog import load_questions, minimal_queries, questions_path, score_on_database
    from sqlweave.sql.extract import extract_sql
    from sqlweave.sql.repair import repair_schema_links

    questions = {e: {q.id: q for q in load_questions(questions_path(args.data_dir, e))} for e in LABEL}
    dbs = DefogDatabases(args.data_dir, args.pg_dir, args.cache or default_cache())
    dbs.start()
    dbs.prepare(database_names(args.data_dir), sqlite=True)
    report: dict[str, Any] = {}
    outcomes: dict[str, list[dict[str, Any]]] = {}
    try:
        for source, target in DIRECTIONS:
            key = f"{source} -> {target}"
            counts: Counter[str] = Counter()
            rows: list[dict[str, Any]] = []
            handles: dict[str, Database] = {}
            try:
                for qid, q in sorted(questions[target].items()):
                    written = minimal_queries(questions[source][qid].query)[0]
                    if q.db_name not in handles:
                        handles[q.db_name] = Database.open(dbs.target(q.db_name, target))
                    db = handles[q.db_name]
                    try:
                        ran = extract_sql(f"```sql\n{written}\n```", db.dialect, schema=db.schema())
                    except sqlweave.SqlweaveError as err:
                        ran, score = written, None
                        error = f"{err.code}: {err.message}"
                    else:
                        score = score_on_database(db, q, ran)
                        error = score.error
                    repaired, transpiled = False, ran != written
                    if score is not None and score.error and not score.gold_error:
                        fixed = repair_schema_links(ran, db.schema(), db.dialect)
                        again = score_on_database(db, q, fixed.sql) if fixed.changed else None
                        if again is not None and not again.error:
                            ran, score, error, repaired = fixed.sql, again, None, True
                    if score is not None and score.gold_error:
                        what = "gold fails"
                    elif score is not None and score.correct:
                        what = "right"
                    elif error:
                        what = "fails"
                    else:
                        what = "other rows"
                    counts[what] += 1
                    rows.append({"id": qid, "db": q.db_name, "category": q.query_category, "outcome": what,
                                 "written": written, "ran": ran, "changed": transpiled, "repaired": repaired,
                                 "error": error})
            finally:
                for handle in handles.values():
                    handle.close()
            report[key] = {"questions": len(rows), **dict(counts),
                           "changed_by_transpiler": sum(r["changed"] for r in rows),
                           "repaired": sum(r["repaired"] for r in rows),
                           "errors": Counter((r["error"] or "").split(":")[0] for r in rows if r["outcome"] == "fails")
                           .most_common(8)}
            outcomes[key] = rows
    finally:
        if args.stop_server:
            dbs.stop()

    print(f"{'gold SQL of -> run on':<24} {'questions':>9} {'right':>6} {'other rows':>10} {'fails':>6} "
          f"{'gold fails':>10} {'transpiled':>10} {'repaired':>8}")
    for key, rep in report.items():
        print(f"{key:<24} {rep['questions']:>9} {rep.get('right', 0):>6} {rep.get('other rows', 0):>10} "
              f"{rep.get('fails', 0):>6} {rep.get('gold fails', 0):>10} {rep['changed_by_transpiler']:>10} "
              f"{rep['repaired']:>8}")
        for code, n in rep["errors"]:
            print(f"    {n:4d}  {code}")
        for r in [r for r in outcomes[key] if r["outcome"] == "fails"][: args.show]:
            print(f"  [{r['id']} {r['db']}] {r['ran'][:200]}\n      {(r['error'] or '')[:160]}")
    if args.results:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps({
            "date": date.today().isoformat(), "machine": machine(),
            "command": "python benchmarks/accuracy/bench_cross_dialect.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "package": str(Path(sqlweave.__file__).resolve().parent), "directions": report, "questions": outcomes,
        }, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
