"""Concurrent queries on one PostgreSQL database through several tenants' handles: do they run side by side?

    /work/main/.venv/bin/python benchmarks/speed/bench_concurrent_queries.py                  # this tree only
    /work/main/.venv/bin/python benchmarks/speed/bench_concurrent_queries.py --before ../main  # and another tree first

Starts a throwaway PostgreSQL server (scripts/postgres.sh, in a temporary folder; stopped at the end), creates a
table with a tenant column, and opens it with an access policy whose row filter takes a ``tenant`` parameter. Then
``--threads`` threads each run ``--queries`` times ``SELECT pg_sleep(S)`` through the handle bound to tenant
``a`` or ``b`` (half the threads each), all starting together (``trusted_read``: the classifier refuses
``pg_sleep`` in SQL from a model; the policy's guard, the time limit and the connection's lock hold as for any
query). Each tree (``--before`` first, then this one) runs
in a process of its own with that tree's ``sqlweave`` imported. Reported per tree: wall time, queries per
second, and the wall time over the ideal (every query at once: ``queries * S``) — 1.0 is fully parallel, ``threads``
is one query at a time. No model is loaded. Prints a table and writes
benchmarks/results/concurrent-queries.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "concurrent-queries.json"

#: What each tree's process runs: open, bind two tenants, time the threads. Prints one JSON line.
CHILD = r'''
import json, sys, threading, time
try:
    from sqlweave.database import Database
except ImportError:  # a tree from before the database layer was split
    from sqlweave.db import Database
from sqlweave.policy import AccessPolicy

url, threads, queries, sleep_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
db = Database.open(url, policy=AccessPolicy.from_yaml("row_filters: {orders: 'tenant = :tenant'}"))
tenants = [db.bind({"tenant": "a"}), db.bind({"tenant": "b"})]
sql = f"SELECT pg_sleep({sleep_s})"  # sqlweave's own SQL (the classifier refuses pg_sleep from a model)
tenants[0].execute("SELECT count(*) FROM orders"); tenants[1].execute("SELECT count(*) FROM orders")  # warm
start = threading.Barrier(threads + 1)
errors = []

def work(i):
    handle = tenants[i % 2]
    start.wait()
    for _ in range(queries):
        try:
            handle.trusted_read(sql)
        except Exception as err:  # counted, not hidden
            errors.append(type(err).__name__)

pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
for t in pool:
    t.start()
start.wait()
t0 = time.perf_counter()
for t in pool:
    t.join()
wall = time.perf_counter() - t0
print(json.dumps({"wall_s": round(wall, 3), "errors": errors}))
'''


def pg(script_env: dict[str, str], *args: str) -> str:
    out = subprocess.run([str(ROOT / "scripts" / "postgres.sh"), *args], env=script_env, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def run_tree(label: str, tree: Path, url: str, threads: int, queries: int, sleep_s: float) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", CHILD, url, str(threads), str(queries), str(sleep_s)], cwd=tree,
                         env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"the run on {tree} failed:\n{out.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    total = threads * queries
    ideal = queries * sleep_s
    found.update(tree=label, queries=total, queries_per_s=round(total / found["wall_s"], 2),
                 over_ideal=round(found["wall_s"] / ideal, 2), serial_s=round(total * sleep_s, 2))
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="a tree to measure first (e.g. the main branch's checkout)")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--queries", type=int, default=3, help="queries per thread")
    ap.add_argument("--sleep", type=float, default=0.2, help="seconds each query sleeps on the server")
    args = ap.parse_args(argv)

    import sqlalchemy as sa

    folder = tempfile.mkdtemp(prefix="sqlweave-bench-pg-")
    env = dict(os.environ, SQLWEAVE_PG_DIR=folder, SQLWEAVE_PYTHON=sys.executable)
    base = pg(env, "start")
    try:
        admin = sa.create_engine(base.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as con:
            con.exec_driver_sql("DROP DATABASE IF EXISTS tenants")
            con.exec_driver_sql("CREATE DATABASE tenants")
        admin.dispose()
        url = base.rsplit("/", 1)[0] + "/tenants"
        data = sa.create_engine(url)
        with data.begin() as con:
            con.exec_driver_sql("CREATE TABLE orders (id int PRIMARY KEY, tenant text NOT NULL, amount int)")
            con.exec_driver_sql("INSERT INTO orders SELECT i, CASE WHEN i %% 2 = 0 THEN 'a' ELSE 'b' END, i "
                                "FROM generate_series(1, 100) AS i")
        data.dispose()
        trees = ([("before", args.before.resolve())] if args.before else []) + [("this tree", ROOT)]
        runs = [run_tree(label, t, url, args.threads, args.queries, args.sleep) for label, t in trees]
    finally:
        pg(env, "stop")

    print(f"{args.threads} threads x {args.queries} queries of pg_sleep({args.sleep}) through two tenants' handles")
    print(f"{'tree':<28} {'wall s':>8} {'queries/s':>10} {'x ideal':>8} {'errors':>7}")
    for r in runs:
        print(f"{r['tree']:<28} {r['wall_s']:>8.2f} {r['queries_per_s']:>10.2f} {r['over_ideal']:>8.2f} "
              f"{len(r['errors']):>7}")
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout if Path("/usr/bin/lscpu").exists() else ""
    model = next((line.split(":", 1)[1].strip() for line in cpu.splitlines() if line.startswith("Model name")), "")
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps({
        "date": date.today().isoformat(), "machine": f"{os.cpu_count()} cores, {model or platform.processor()}",
        "threads": args.threads, "queries_per_thread": args.queries, "sleep_s": args.sleep, "runs": runs,
    }, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
