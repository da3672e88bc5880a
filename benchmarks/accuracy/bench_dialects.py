"""Same question, same answer on every engine? The model's SQLite-flavoured answers run on PostgreSQL, DuckDB and
MariaDB.

    .venv/bin/python benchmarks/accuracy/bench_dialects.py [RUN] [--engines postgres,duckdb,mysql] [--limit N]
        [--results benchmarks/results/dialects.json] [--keep-server]

``RUN`` is a ``sqlweave eval`` folder over Spider dev (default ``.eval-runs/default-972``; restore it from
``benchmarks/checkpoints/default-972``). Each of its predictions, and each gold query, was written for SQLite.
The Spider databases they read are copied by sqlweave's loader into a throwaway PostgreSQL server
(``scripts/postgres.sh``, in ``--pg-dir``), a throwaway MariaDB server (``scripts/mariadb.sh``, in ``--my-dir``;
engine ``mysql``) and into DuckDB files; each query then goes the way a model's answer
goes there (:func:`sqlweave.sql.extract.extract_sql` to the engine's dialect, then
:meth:`sqlweave.db.Database.execute`), and its rows are compared with the rows SQLite gives: same rows (in order
when the query orders them; numbers, and text that reads as a number, to 4 decimals; dates as ISO text), the same
rows in another order (rows that tie on the ORDER BY key), different rows, or an error on the engine that SQLite
did not have. No model is called.

First it counts the queries that the transpiler changes on SQLite itself (it must change none: they are SQLite's
own). Prints one table per engine (outcome counts for predictions and gold queries, and the most frequent error kinds)
and writes ``--results``; ``--show N`` prints N differing queries of each kind.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, SPIDER, RESULTS, machine, parser
ENGINES = ("postgres", "duckdb", "mysql")


def normal(value: Any) -> Any:
    """One spelling per value across engines (the loader stores whole numbers kept as text as numbers there)."""
    if isinstance(value, str):
        try:
            value = float(value) if value.strip() else value
        except ValueError:
            return value
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (Decimal, float, int)):
        f = round(float(value), 4)
        return int(f) if f == int(f) else f
    return value


def rows_of(result: Any, ordered: bool) -> list[tuple[Any, ...]]:
    rows = [tuple(normal(v) for v in r) for r in result.rows]
    return rows if ordered else sorted(rows, key=repr)


def target(engine: str, db_id: str, server: Any, duck_dir: Path) -> str:
    source = SPIDER / "database" / db_id / f"{db_id}.sqlite"
    if engine in ("postgres", "mysql"):
        server.load(db_id.lower(), source)  # the servers' database names are lower-case
        return server.url(db_id.lower())
    from sqlweave.loading import load_database

    path = duck_dir / f"{db_id}.duckdb"
    if not path.exists():
        load_database(source, path)
    return str(path)


def outcome(engine_db: Any, lite_db: Any, sql: str) -> tuple[str, str | None, str | None]:
    """(``same`` | ``order`` | ``different`` | ``fails`` | ``sqlite fails``, the SQL that ran on the engine, the
    error); ``order``: the same rows in another order (rows tying on the ORDER BY key)."""
    from sqlglot import exp

    from sqlweave.errors import SqlweaveError
    from sqlweave.sql.extract import extract_sql
    from sqlweave.sql.validate import parse_one

    try:
        reference = lite_db.execute(sql)
    except SqlweaveError:
        return "sqlite fails", None, None
    try:
        ordered = parse_one(sql, "sqlite").find(exp.Order) is not None
    except SqlweaveError:
        ordered = False
    ran = None
    try:
        ran = extract_sql(f"```sql\n{sql}\n```", engine_db.dialect)
        got = engine_db.execute(ran)
    except SqlweaveError as err:
        return "fails", ran, f"{err.code}: {err.message}"
    if rows_of(got, ordered) == rows_of(reference, ordered):
        return "same", ran, None
    if ordered and rows_of(got, False) == rows_of(reference, False):
        return "order", ran, None  # rows that tie on the ORDER BY key come in another order
    return "different", ran, None


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("run", nargs="?", type=Path, default=ROOT / ".eval-runs" / "default-972")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions of the run")
    ap.add_argument("--pg-dir", type=Path, default=Path(tempfile.gettempdir()) / "sqlweave-pg-dialects")
    ap.add_argument("--duck-dir", type=Path, default=None, help="DuckDB copies (default: CACHE/spider-duckdb)")
    ap.add_argument("--my-dir", type=Path, default=Path("/tmp/sqlweave-my-dialects"))
    ap.add_argument("--keep-server", action="store_true", help="leave the servers running")
    ap.add_argument("--show", type=int, default=0, help="print N differing or failing queries per engine")
    ap.add_argument("--results", type=Path, default=RESULTS / "dialects.json")
    args = ap.parse_args()

    from sqlweave.config import cache_dir
    from sqlweave.database import Database
    from tests.db.conftest import MariaDBServer, PostgresServer

    records = [json.loads(line) for line in (args.run / "results.jsonl").read_text().splitlines() if line.strip()]
    records = records[: args.limit] if args.limit else records
    engines = [e for e in args.engines.split(",") if e]
    duck_dir = args.duck_dir or cache_dir() / "spider-duckdb"
    duck_dir.mkdir(parents=True, exist_ok=True)
    servers: dict[str, Any] = {}
    if "postgres" in engines:
        servers["postgres"] = PostgresServer(str(args.pg_dir))
    if "mysql" in engines:
        servers["mysql"] = MariaDBServer(str(args.my_dir))
    for server in servers.values():
        server.base_url = server.script("start")
    report: dict[str, Any] = {}
    examples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    try:
        for engine in engines:
            start = time.perf_counter()
            counts: dict[str, Counter[str]] = {"prediction": Counter(), "gold": Counter()}
            errors: Counter[str] = Counter()
            by_db: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for r in records:
                by_db[r["db_id"]].append(r)
            for db_id, rs in by_db.items():
                with Database.open(SPIDER / "database" / db_id / f"{db_id}.sqlite", timeout_s=10) as lite, \
                        Database.open(target(engine, db_id, servers.get(engine), duck_dir), timeout_s=10) as db:
                    for r in rs:
                        for kind, sql in (("prediction", r.get("prediction")), ("gold", r["gold"])):
                            if not sql:
                                continue
                            what, ran, error = outcome(db, lite, sql)
                            counts[kind][what] += 1
                            if what == "fails" and error:
                                code, _, message = error.partition(":")
                                errors[f"{code}: {message.strip()[:60]}"] += 1
                            if what in ("fails", "different"):
                                examples[engine].append({"id": r["id"], "kind": kind, "outcome": what, "sqlite": sql,
                                                         "ran": ran, "error": error})
            report[engine] = {"questions": len(records), "seconds": round(time.perf_counter() - start, 1),
                              **{k: dict(v) for k, v in counts.items()},
                              "top_errors": errors.most_common(12)}
    finally:
        for server in servers.values():
            if not args.keep_server:
                server.script("stop")

    from rich.console import Console
    from rich.table import Table

    from sqlweave.sql.transpile import to_dialect

    # On SQLite itself, SQLite's own SQL must come out of the transpiler exactly as it went in.
    sqlite_queries = [sql for r in records for sql in (r.get("prediction"), r["gold"]) if sql]
    sqlite_changed = [sql for sql in sqlite_queries if to_dialect(sql, "sqlite") != sql]
    console = Console(markup=False, highlight=False, width=160)
    console.print(f"sqlite: {len(sqlite_changed)} of {len(sqlite_queries)} queries changed by to_dialect(sql, 'sqlite')")
    for sql in sqlite_changed[: args.show]:
        console.print(f"  changed: {sql}\n      to: {to_dialect(sql, 'sqlite')}")
    for engine, rep in report.items():
        t = Table(title=f"{engine}: SQLite-dialect queries of {args.run.name} ({rep['questions']} questions)")
        for col in ("queries", "same rows as SQLite", "same rows, ties in another order", "different rows",
                    "fail on the engine", "fail on SQLite too"):
            t.add_column(col)
        for kind in ("prediction", "gold"):
            c = rep[kind]
            t.add_row(kind, str(c.get("same", 0)), str(c.get("order", 0)), str(c.get("different", 0)),
                      str(c.get("fails", 0)), str(c.get("sqlite fails", 0)))
        console.print(t)
        for err, n in rep["top_errors"]:
            console.print(f"  {n:4d}  {err}")
        for ex in examples[engine][: args.show]:
            console.print(f"  [{ex['outcome']}] {ex['id']} {ex['kind']}: {ex['sqlite']}\n      ran: {ex['ran']}"
                          + (f"\n      error: {ex['error']}" if ex["error"] else ""))
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps({
        "date": date.today().isoformat(), "machine": machine(),
        "command": "python benchmarks/accuracy/bench_dialects.py " + " ".join(sys.argv[1:]), "run": str(args.run),
        "engines": report, "examples": examples,
        "sqlite_unchanged": {"queries": len(sqlite_queries), "changed": len(sqlite_changed)},
    }, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
