"""Keys read from the data of a warehouse whose fact table is too large to read whole: found on a sample (no model).

    .venv/bin/python benchmarks/schema/bench_large_keys.py [--rows 10000000] [--engines duckdb,sqlite,postgres]
        [--repeat 3] [--out benchmarks/results/large-keys.json]

Builds (once, in the cache directory; PostgreSQL in a throwaway server, ``--pg-dir``) the same warehouse on each
engine, declaring no key: ``stores`` (50 rows), ``products`` (2,000), ``customers`` (100,000) and a fact table
``sales(id, store_id, product_id, customer_id, amount)`` of ``--rows`` rows whose three ``*_id`` columns hold only
keys of those tables. Then, ``--repeat`` times, a fresh :class:`sqlweave.db.Database` reads the schema
(introspection: columns, samples, statistics and the keys from the data) and the time and the keys found are
reported, median seconds first. Before the keys from the data read a sample of a large table, a table of more than
a million rows was left out: run the same command from a checkout of ``afee4ed`` for that column.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, RESULTS, write_json

#: The warehouse, in SQL every engine here runs: (table, rows, SELECT over ``n``, the row numbers 0..rows-1). The
#: casts give SQLite's columns a declared type (its CREATE TABLE ... AS SELECT declares none for an expression).
DIMENSIONS = [
    ("stores", 50, "CAST(n + 1 AS INTEGER) AS store_id, CAST('store ' || n AS TEXT) AS name"),
    ("products", 2_000, "CAST(n + 1 AS INTEGER) AS product_id, CAST('product ' || n AS TEXT) AS name, "
                        "CAST(n % 17 AS INTEGER) AS category"),
    ("customers", 100_000, "CAST(n + 1 AS INTEGER) AS customer_id, CAST('customer ' || n AS TEXT) AS name"),
]
FACT = ("sales", "CAST(n AS INTEGER) AS id, CAST(1 + n % 50 AS INTEGER) AS store_id, "
                 "CAST(1 + (n * 7) % 2000 AS INTEGER) AS product_id, "
                 "CAST(1 + (n * 13) % 100000 AS INTEGER) AS customer_id, (n % 97) * 1.5 AS amount")
EXPECTED = {("sales", "store_id", "stores", "store_id"), ("sales", "product_id", "products", "product_id"),
            ("sales", "customer_id", "customers", "customer_id")}


def numbers(engine: str, rows: int) -> str:
    """A FROM clause of the row numbers 0..rows-1 as ``n``."""
    if engine == "duckdb":
        return f"range({rows}) t(n)"
    if engine == "postgres":
        return f"generate_series(0, {rows - 1}) n"
    return f"(WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < {rows - 1}) SELECT n FROM s)"


def statements(engine: str, rows: int) -> list[str]:
    tables = DIMENSIONS + [(FACT[0], rows, FACT[1])]
    return [f"CREATE TABLE {name} AS SELECT {select} FROM {numbers(engine, count)}" for name, count, select in tables]


def build_file(engine: str, path: Path, rows: int) -> str:
    done = path.with_suffix(".done")
    if not (path.exists() and done.exists() and done.read_text() == str(rows)):
        path.unlink(missing_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        if engine == "duckdb":
            import duckdb

            con = duckdb.connect(str(path))
            for sql in statements(engine, rows):
                con.execute(sql)
            con.close()
        else:
            con = sqlite3.connect(path)
            for sql in statements(engine, rows):
                con.execute(sql)
            con.commit()
            con.close()
        done.write_text(str(rows))
    return str(path)


def build_postgres(server, rows: int) -> str:
    name = f"warehouse_{rows}"
    exists = server.admin(f"SELECT count(*) FROM pg_database WHERE datname = '{name}'")[0][0]
    if exists and server.admin("SELECT count(*) FROM pg_tables WHERE tablename = 'sales'", name)[0][0]:
        return server.url(name)
    server.admin(f"DROP DATABASE IF EXISTS {name}")
    server.admin(f"CREATE DATABASE {name}")
    for sql in statements("postgres", rows):
        server.admin(sql, name)
    server.admin("ANALYZE", name)
    return server.url(name)


def measure(target: str, repeat: int) -> dict:
    from sqlweave.database import Database

    seconds, found = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        db = Database.open(target)
        schema = db.schema()
        seconds.append(time.perf_counter() - start)
        keys = {(fk.table, fk.column, fk.ref_table, fk.ref_column) for fk in schema.foreign_keys}
        assert found is None or keys == found, "the keys differ from one run to the next"
        found = keys
        rows = schema.table("sales").row_count
        db.close()
    assert found is not None
    return {"median_s": round(statistics.median(seconds), 2), "seconds": [round(s, 2) for s in seconds],
            "fact_rows": rows, "foreign_keys": sorted("%s.%s -> %s.%s" % k for k in found),
            "expected_found": len(found & EXPECTED), "unexpected": sorted("%s.%s -> %s.%s" % k for k in found - EXPECTED)}


def main() -> None:
    from rich.console import Console
    from rich.table import Table

    from sqlweave.config import cache_dir

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--engines", default="duckdb,sqlite,postgres")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pg-dir", type=Path, default=Path(tempfile.gettempdir()) / "sqlweave-pg-large-keys")
    ap.add_argument("--out", type=Path, default=RESULTS / "large-keys.json")
    args = ap.parse_args()
    os.environ["SQLWEAVE_SCHEMA_CACHE"] = "0"  # every read reads the database (none from the schemas kept on disk)

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    report: dict = {"command": " ".join(sys.argv), "date": date.today().isoformat(), "machine": platform.platform(),
                    "commit": commit, "rows": args.rows, "engines": {}}
    table = Table(title=f"keys from the data, fact table of {args.rows:,} rows ({commit})")
    for col in ("engine", "fact rows", "foreign keys found (of 3)", "other keys", "median s", "seconds"):
        table.add_column(col)
    server = None
    try:
        for engine in [e for e in args.engines.split(",") if e]:
            if engine == "postgres":
                from tests.db.conftest import PostgresServer

                server = PostgresServer(str(args.pg_dir))
                server.base_url = server.script("start")
                target = build_postgres(server, args.rows)
            else:
                suffix = ".duckdb" if engine == "duckdb" else ".sqlite"
                target = build_file(engine, cache_dir() / "large-keys" / f"warehouse-{args.rows}{suffix}", args.rows)
            result = measure(target, args.repeat)
            report["engines"][engine] = result
            table.add_row(engine, f"{result['fact_rows']:,}", str(result["expected_found"]),
                          ", ".join(result["unexpected"]) or "-", f"{result['median_s']:.2f}",
                          " ".join(f"{s:.2f}" for s in result["seconds"]))
    finally:
        if server is not None:
            server.script("stop")
    Console().print(table)
    write_json(args.out, report)
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
