"""Reading a schema: queries and seconds of introspection (columns, samples, statistics, keys), no model.

    .venv/bin/python benchmarks/schema/bench_introspect.py [--pg-url postgresql://.../large301] [--repeat 3]
        [--delay-ms 2.5 --far-repeat 1] [--out benchmarks/results/introspect.json]

Targets: the 301-table SQLite database of the large-schema benchmark (``benchmarks/schema/build_large_schema.py``, built
if missing), Spider's dev databases together, and with ``--pg-url`` the same 301 tables loaded into PostgreSQL
(``python -m sqlweave.loading <cache>/benchmarks/large-schema/large.sqlite postgresql://.../large301``). For each,
``--repeat`` fresh :class:`sqlweave.db.Database` handles read the schema; reported: the queries sqlweave sent
(:meth:`~sqlweave.db.Database.trusted_read` calls; a server round trip or more each), the median seconds, and a
digest of the schemas read, which must not change when only the way they are read changes. With ``--delay-ms``, the
PostgreSQL tables are read once more through a proxy on this machine that holds every packet that long each way (a
server that far away), which counts the messages sent to it: the round trips of a read. No read comes from the
schemas kept on disk (``SQLWEAVE_SCHEMA_CACHE=0``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, SPIDER, RESULTS, write_json


def read(targets: list[str], repeat: int) -> dict:
    import sqlweave.db.connection as connection
    from sqlweave.database import Database

    calls = [0]
    original = connection.Database.trusted_read

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return original(self, *args, **kwargs)

    connection.Database.trusted_read = counted  # type: ignore[method-assign]
    seconds, reads, digest = [], 0, ""
    try:
        for _ in range(repeat):
            start, before = time.perf_counter(), calls[0]
            schemas = []
            for target in targets:
                db = Database.open(target)
                schemas.append(asdict(db.schema()))
                db.close()
            seconds.append(time.perf_counter() - start)
            reads = calls[0] - before
            digest = hashlib.sha256(json.dumps(schemas, default=str, sort_keys=True).encode()).hexdigest()[:16]
    finally:
        connection.Database.trusted_read = original  # type: ignore[method-assign]
    return {"databases": len(targets), "reads": reads, "median_s": round(statistics.median(seconds), 2),
            "seconds": [round(s, 2) for s in seconds], "digest": digest}


def main() -> None:
    from rich.console import Console
    from rich.table import Table

    from sqlweave.config import cache_dir

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg-url", default=None, help="the 301 tables loaded into PostgreSQL")
    ap.add_argument("--delay-ms", type=float, default=0.0,
                    help="also read --pg-url through a proxy holding each packet this long each way")
    ap.add_argument("--far-repeat", type=int, default=1, help="reads through the proxy (minutes each)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "introspect.json")
    args = ap.parse_args()
    os.environ["SQLWEAVE_SCHEMA_CACHE"] = "0"  # every read reads the database (none from the schemas kept on disk)

    large = cache_dir() / "benchmarks" / "large-schema" / "large.sqlite"
    if not large.exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "build_large_schema.py")], check=True)
    dev = sorted({q["db_id"] for q in json.loads((SPIDER / "dev.json").read_text())})
    spider = [str(p) for p in (SPIDER / "database" / d / f"{d}.sqlite" for d in dev) if p.exists()]
    targets = {"301 tables, SQLite": [str(large)], f"Spider dev, {len(spider)} SQLite files": spider}
    repeats = {name: args.repeat for name in targets}
    proxy = None
    if args.pg_url:
        targets["301 tables, PostgreSQL"] = [args.pg_url]
        repeats["301 tables, PostgreSQL"] = args.repeat
        if args.delay_ms > 0:
            from sqlalchemy.engine import make_url

            from bench_cold_schema import DelayProxy  # type: ignore[import-not-found]

            url = make_url(args.pg_url)
            proxy = DelayProxy(url.host or "127.0.0.1", url.port or 5432, args.delay_ms / 1000)
            far = f"301 tables, PostgreSQL {2 * args.delay_ms:g} ms away"
            targets[far] = [url.set(host="127.0.0.1", port=proxy.listen_port).render_as_string(hide_password=False)]
            repeats[far] = args.far_repeat
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    report: dict = {"command": " ".join(sys.argv), "date": date.today().isoformat(), "machine": platform.platform(),
                    "commit": commit, "targets": {}}
    table = Table(title=f"reading a schema ({commit})")
    for col in ("target", "databases", "queries", "round trips", "median s", "seconds", "schemas digest"):
        table.add_column(col)
    for name, group in targets.items():
        sent = proxy.sent if proxy is not None else 0
        result = read(group, repeats[name])
        if proxy is not None and proxy.sent > sent:  # the messages sent to the far server, per read
            result["round_trips"] = (proxy.sent - sent) // repeats[name]
        report["targets"][name] = result
        table.add_row(name, str(result["databases"]), f"{result['reads']:,}",
                      f"{result['round_trips']:,}" if "round_trips" in result else "-", f"{result['median_s']:.2f}",
                      " ".join(f"{s:.2f}" for s in result["seconds"]), result["digest"])
    Console().print(table)
    write_json(args.out, report)
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
