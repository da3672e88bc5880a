"""Bounded results: queries over a 10-million-row table return the capped rows within the time limit and bounded
memory.

    .venv/bin/python benchmarks/safety/bench_bounded.py [--rows 10000000] [--max-rows 1000] [--timeout 10]

Builds (once, in the cache directory) a SQLite table ``big(id, label, amount)`` with ``--rows`` rows, then runs, each
through :meth:`sqlweave.db.Database.execute` (read-only connection, row cap, time limit) in this fresh process:
a full scan (``SELECT *``), a scan with a filter that matches late rows, an aggregate over every row, and a full
sort that cannot finish within a short limit. Reported per query: rows returned, truncated, seconds, whether the
time limit stopped it, and the process's peak resident memory before and after (``ru_maxrss``: results are fetched
``max_rows + 1`` at a time, so memory must not grow with the table). Prints a table and writes
``benchmarks/results/bounded.json``.
"""

from __future__ import annotations

import resource
import sqlite3
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import RESULTS, machine, write_json, parser


def build(path: Path, rows: int) -> Path:
    """The table, built once (a partial build is removed and redone)."""
    done = path.with_suffix(".done")
    if path.exists() and done.exists() and done.read_text() == str(rows):
        return path
    path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, label TEXT, amount REAL)")
    conn.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
                 "INSERT INTO big SELECT i, 'row ' || i, i * 0.5 FROM n", (rows,))
    conn.commit()
    conn.close()
    done.write_text(str(rows))
    return path


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def main() -> None:
    from rich.console import Console
    from rich.table import Table

    from sqlweave.config import cache_dir
    from sqlweave.database import Database
    from sqlweave.errors import QueryTimeoutError

    ap = parser(__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--max-rows", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--sort-timeout", type=float, default=1.0)
    ap.add_argument("--results", type=Path, default=RESULTS / "bounded.json")
    args = ap.parse_args()

    started = time.perf_counter()
    path = build(cache_dir() / "benchmarks" / f"big-{args.rows}.sqlite", args.rows)
    build_s = time.perf_counter() - started
    queries = [
        ("full scan", "SELECT * FROM big", args.timeout),
        ("filter matching late rows", f"SELECT id, label FROM big WHERE id > {args.rows - 5000}", args.timeout),
        ("aggregate over every row", "SELECT count(*), sum(amount), max(label) FROM big", args.timeout),
        ("full sort (short limit)", "SELECT * FROM big ORDER BY label DESC, amount", args.sort_timeout),
    ]
    db = Database.open(path, max_rows=args.max_rows)
    db.execute("SELECT 1")
    rows_out = []
    for label, sql, limit in queries:
        before = peak_mb()
        start = time.perf_counter()
        try:
            result = db.execute(sql, timeout_s=limit)
            returned, truncated, stopped = len(result.rows), result.truncated, False
        except QueryTimeoutError:
            returned, truncated, stopped = 0, False, True
        seconds = time.perf_counter() - start
        rows_out.append({"query": label, "sql": sql, "time_limit_s": limit, "rows_returned": returned,
                         "truncated": truncated, "stopped_by_time_limit": stopped, "seconds": round(seconds, 3),
                         "within_limit": seconds <= limit + 0.5, "peak_mb_before": round(before, 1),
                         "peak_mb_after": round(peak_mb(), 1)})
    table = Table(title=f"Bounded results: {args.rows:,}-row table, row cap {args.max_rows}")
    for col in ("query", "rows", "truncated", "stopped", "seconds", "limit", "peak MB before", "peak MB after"):
        table.add_column(col, justify="left" if col == "query" else "right")
    for r in rows_out:
        table.add_row(r["query"], str(r["rows_returned"]), str(r["truncated"]), str(r["stopped_by_time_limit"]),
                      f"{r['seconds']:.2f}", f"{r['time_limit_s']:g}", f"{r['peak_mb_before']:.0f}",
                      f"{r['peak_mb_after']:.0f}")
    Console().print(table)
    out = {"date": date.today().isoformat(), "machine": machine(),
           "command": " ".join([Path(sys.argv[0]).as_posix()] + sys.argv[1:]), "rows": args.rows,
           "max_rows": args.max_rows, "build_seconds": round(build_s, 1),
           "database_mb": round(path.stat().st_size / 2**20, 1), "queries": rows_out}
    write_json(args.results, out)
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
