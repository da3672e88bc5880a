"""A new process reading a database's schema: with the schema kept on disk and without (no model).

    .venv/bin/python benchmarks/schema/bench_cold_schema.py [--pg-url postgresql://.../large301] [--delay-ms 5] [--far-repeat 1]
        [--duckdb PATH] [--repeat 3] [--out benchmarks/results/cold-schema.json]

Each run is a fresh Python process that opens the database and reads its schema (:meth:`sqlweave.db.Database.schema`:
columns, keys, samples, statistics, keys from the data), timed from before the open to after the read; the
process's own start (imports) is not counted. Three ways, ``--repeat`` runs each, alternating:

- ``off``: ``SQLWEAVE_SCHEMA_CACHE=0`` (every process reads the database, as before the cache);
- ``first``: an empty cache folder (the first process to meet the database reads it and keeps it);
- ``again``: a cache folder a process filled before (a database asked before, unchanged since).

Targets: the 301-table SQLite database of the large-schema benchmark (``benchmarks/schema/build_large_schema.py``, built if
missing); with ``--pg-url``, the same tables on PostgreSQL, read directly and, with ``--delay-ms``, through a proxy on
this machine that holds every packet that long each way (a server that far away: a round trip of twice that); with
``--duckdb``, any DuckDB file (``bench_large_keys.py``'s warehouse of a 10-million-row fact table). The far server
is read ``--far-repeat`` times each way (each read takes minutes). The digest of the schemas read must be the same in
all three ways.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, RESULTS, write_json

_CHILD = r"""
import dataclasses, hashlib, json, sys, time
from sqlweave.database import Database
start = time.perf_counter()
db = Database.open(sys.argv[1])
schema = db.schema()
seconds = time.perf_counter() - start
db.close()
digest = hashlib.sha256(json.dumps(dataclasses.asdict(schema), default=str, sort_keys=True).encode()).hexdigest()
print(json.dumps({"seconds": seconds, "tables": len(schema.tables), "digest": digest[:16]}))
"""


class DelayProxy:
    """A TCP proxy on 127.0.0.1 that delivers every chunk ``delay_s`` after it arrived, in order, each way;
    ``sent`` counts the chunks sent to the server (a round trip each, for a client that waits for each answer)."""

    def __init__(self, host: str, port: int, delay_s: float) -> None:
        self.host, self.port, self.delay_s = host, port, delay_s
        self.sent = 0
        self.loop = asyncio.new_event_loop()
        self.listen_port = 0
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)

        async def start() -> None:
            server = await asyncio.start_server(self._client, "127.0.0.1", 0)
            self.listen_port = server.sockets[0].getsockname()[1]
            ready.set()

        self.loop.run_until_complete(start())
        self.loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        await asyncio.gather(self._pipe(reader, up_writer, True), self._pipe(up_reader, writer, False))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up: bool) -> None:
        queue: asyncio.Queue = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                if not data:
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        task = asyncio.ensure_future(deliver())
        try:
            while True:
                data = await reader.read(65536)
                self.sent += bool(up and data)
                await queue.put((time.monotonic() + self.delay_s, data))
                if not data:
                    break
        except ConnectionError:
            await queue.put((time.monotonic(), b""))
        await task


def run_child(target: str, cache: Path, on: bool) -> dict:
    env = {**os.environ, "SQLWEAVE_CACHE_DIR": str(cache), "SQLWEAVE_SCHEMA_CACHE": "1" if on else "0"}
    out = subprocess.run([sys.executable, "-c", _CHILD, target], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(target: str, repeat: int, work: Path) -> dict:
    """Three ways of a new process reading ``target`` (see the module's docstring), alternating."""
    warm = work / f"warm-{abs(hash(target))}"
    run_child(target, warm, on=True)  # the database asked before
    runs: dict[str, list[dict]] = {"off": [], "first": [], "again": []}
    for i in range(repeat):
        runs["off"].append(run_child(target, work / "off", on=False))
        runs["first"].append(run_child(target, work / f"first-{abs(hash(target))}-{i}", on=True))
        runs["again"].append(run_child(target, warm, on=True))
    digests = {r["digest"] for rs in runs.values() for r in rs}
    out = {mode: {"median_s": round(statistics.median(r["seconds"] for r in rs), 3),
                  "seconds": [round(r["seconds"], 3) for r in rs]} for mode, rs in runs.items()}
    out["tables"] = runs["off"][0]["tables"]
    out["same_schema"] = len(digests) == 1
    return out


def main() -> None:
    from rich.console import Console
    from rich.table import Table
    from sqlalchemy.engine import make_url

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg-url", default="")
    ap.add_argument("--delay-ms", type=float, default=5.0)
    ap.add_argument("--duckdb", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--far-repeat", type=int, default=1, help="runs of each way through the proxy (minutes each)")
    ap.add_argument("--out", type=Path, default=RESULTS / "cold-schema.json")
    args = ap.parse_args()

    from sqlweave.config import cache_dir

    large = cache_dir() / "benchmarks" / "large-schema" / "large.sqlite"
    if not large.exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "build_large_schema.py")], check=True)
    targets: list[tuple[str, str, int]] = [("301 tables, SQLite", str(large), args.repeat)]
    if args.pg_url:
        targets.append(("301 tables, PostgreSQL (this machine)", args.pg_url, args.repeat))
        if args.delay_ms > 0:
            url = make_url(args.pg_url)
            proxy = DelayProxy(url.host or "127.0.0.1", url.port or 5432, args.delay_ms / 1000)
            far = url.set(host="127.0.0.1", port=proxy.listen_port).render_as_string(hide_password=False)
            targets.append((f"301 tables, PostgreSQL {2 * args.delay_ms:g} ms away", far, args.far_repeat))
    if args.duckdb:
        targets.append((f"DuckDB {args.duckdb.name}", str(args.duckdb), args.repeat))

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    report: dict = {"command": " ".join(sys.argv), "date": date.today().isoformat(), "machine": platform.platform(),
                    "cores": os.cpu_count(), "commit": commit, "targets": {}}
    table = Table(title=f"a new process reading a schema ({commit}); median seconds")
    for col in ("database", "tables", "runs", "off (read every time)", "first (read, kept)", "again (from disk)",
                "off / again", "same schema"):
        table.add_column(col)
    with tempfile.TemporaryDirectory(prefix="sqlweave-cold-schema-") as work:
        for label, target, repeat in targets:
            r = measure(target, repeat, Path(work))
            report["targets"][label] = r
            table.add_row(label, str(r["tables"]), str(repeat), f"{r['off']['median_s']:.2f}", f"{r['first']['median_s']:.2f}",
                          f"{r['again']['median_s']:.3f}", f"{r['off']['median_s'] / max(r['again']['median_s'], 1e-3):.0f}x",
                          "yes" if r["same_schema"] else "NO")
    Console().print(table)
    write_json(args.out, report)
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
