"""The hostile-input corpus (tests/security/corpus.py) on SQLite, DuckDB, PostgreSQL and MariaDB: per kind and engine, how
many cases were refused, answered (read-only, inside the access policy) or stopped by the time limit, whether
each left its database byte-for-byte unchanged, and whether any hidden table, column or value showed up in an
output or a prompt.

    .venv/bin/python benchmarks/safety/bench_hostile.py

Starts a throwaway PostgreSQL and MariaDB (scripts/postgres.sh, scripts/mariadb.sh) and stops them at the end. The model is a fake that obeys
every instruction it is shown: what holds, holds without the model's help. Writes benchmarks/results/hostile.json.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, RESULTS, parser

OUT = RESULTS / "hostile.json"


def main() -> None:
    parser(__doc__).parse_args()  # no options: --help only
    os.environ["SQLWEAVE_CACHE_DIR"] = tempfile.mkdtemp(prefix="sqlweave-bench-hostile-")
    logging.getLogger("sqlglot").setLevel(logging.ERROR)  # "falling back to a Command" is what the corpus is for
    from rich.console import Console
    from rich.table import Table

    from tests.db.conftest import MariaDBServer, PostgresServer
    from tests.security.corpus import ENGINES, KINDS, cases
    from tests.security.hostile_run import (
        build_file, folder_state, mysql_state, mysql_statements, open_corpus, postgres_script, postgres_state,
        run_case,
    )

    work = Path(tempfile.mkdtemp(prefix="sqlweave-hostile-"))
    pg_dir = tempfile.mkdtemp(prefix="sqlweave-pg-")
    my_dir = tempfile.mkdtemp(prefix="sqlweave-my-", dir="/tmp")
    server = PostgresServer(pg_dir)
    server.base_url = server.script("start")
    maria = MariaDBServer(my_dir)
    maria.base_url = maria.script("start")
    all_cases = cases()
    rows: list[dict] = []
    start = time.perf_counter()
    try:
        dbs = {}
        for engine in ("sqlite", "duckdb"):
            folder = work / engine / "db"
            target = str(build_file(engine, folder))
            dbs[engine] = (open_corpus(target, engine, folder), folder, target, lambda f=folder: folder_state(f))
        server.admin("CREATE DATABASE corpus")
        server.admin(postgres_script(), "corpus")
        url = server.url("corpus")
        pg_folder = work / "postgres"
        pg_folder.mkdir()
        digest = postgres_state(url)
        dbs["postgres"] = (open_corpus(url, "postgres", pg_folder), pg_folder, url,
                           lambda: (digest(), folder_state(pg_folder)))
        maria.admin("CREATE DATABASE corpus CHARACTER SET utf8mb4")
        for stmt in mysql_statements():
            maria.admin(stmt, "corpus")
        my_url = maria.url("corpus")
        my_folder = work / "mysql"
        my_folder.mkdir()
        my_digest = mysql_state(my_url)
        dbs["mysql"] = (open_corpus(my_url, "mysql", my_folder), my_folder, my_url,
                        lambda: (my_digest(), folder_state(my_folder)))
        for case in all_cases:
            db, folder, target, state = dbs[case.engine]
            result = run_case(case, db, folder, target, state=state)
            rows.append({"id": case.id, "kind": case.kind, "engine": case.engine, "door": case.door,
                         "expect": case.expect, "outcome": result.outcome, "unchanged": result.unchanged,
                         "leaks": result.leaks, "seen": result.seen, "ok": result.ok,
                         "error": result.error[:200], "sql": case.sql[:200], "question": case.question[:200]})
        for db, *_ in dbs.values():
            db.close()
    finally:
        server.script("stop")
        maria.script("stop")
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(pg_dir, ignore_errors=True)
        shutil.rmtree(my_dir, ignore_errors=True)
    seconds = time.perf_counter() - start

    groups: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for r in rows:
        for key in ((r["kind"], r["engine"]), (r["kind"], "all"), ("all", r["engine"]), ("all", "all")):
            g = groups[key]
            g["cases"] += 1
            g[r["outcome"]] += 1
            g["unchanged"] += r["unchanged"]
            g["leaks"] += bool(r["leaks"])
            g["as expected"] += r["ok"]
    table = Table(title=f"Hostile-input corpus: {len(rows)} cases", header_style="bold")
    columns = ("cases", "refused", "answered", "stopped", "failed", "unchanged", "leaks", "as expected")
    table.add_column("kind")
    table.add_column("engine")
    for c in columns:
        table.add_column(c, justify="right")
    summary = []
    for kind in (*KINDS, "all"):
        for engine in (*ENGINES, "all"):
            g = groups.get((kind, engine))
            if not g:
                continue
            table.add_row(kind, engine, *(str(g[c]) for c in columns), end_section=engine == "all")
            summary.append({"kind": kind, "engine": engine, **{c: g[c] for c in columns}})
    Console(width=120).print(table)
    wrong = [r for r in rows if not r["ok"]]
    for r in wrong:
        print(f"NOT AS EXPECTED: {r['id']}: {r['outcome']} (expected {r['expect']}) {r['error']} leaks={r['leaks']}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "machine": f"{platform.node()} ({os.cpu_count()} CPUs)", "date": str(date.today()),
        "seconds": round(seconds, 1), "cases": len(rows), "summary": summary, "results": rows,
    }, indent=1) + "\n")
    print(f"{len(rows)} cases in {seconds:.1f} s; wrote {OUT.relative_to(ROOT)}")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
