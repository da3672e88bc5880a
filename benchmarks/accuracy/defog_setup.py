"""defog's 11 databases for sqlweave: loaded into the project's throwaway PostgreSQL with their column descriptions,
and converted to SQLite by sqlweave's own loader.

    .venv/bin/python benchmarks/accuracy/defog_setup.py [--pg-dir DIR] [--cache DIR] [--check]

- **PostgreSQL.** ``scripts/postgres.sh start`` (in ``--pg-dir``, i.e. ``SQLWEAVE_PG_DIR``), then
  ``scripts/postgres.sh load NAME databases/NAME/NAME.sql`` for each database. A dump that creates its tables in
  another schema than ``public`` (ewallet: ``consumer_div``) gets ``ALTER DATABASE NAME SET search_path TO
  consumer_div, public``, so a plain URL sees its tables, unqualified names resolve as the gold queries' qualified
  ones do, and the SQLite copy gets them too. Each loaded database is stamped with its dump's checksum
  (``COMMENT ON DATABASE``): a rerun leaves a database that is already loaded alone (a benchmark still running on
  the server keeps its connections).
- **Descriptions.** Each ``NAME.json`` (defog's ``table_metadata`` and ``glossary``) becomes a sqlweave knowledge
  file, ``CACHE/knowledge/NAME.yaml`` (:meth:`sqlweave.knowledge.Knowledge.from_defog_json`: column descriptions,
  glossary terms and notes; schema prefixes such as ``consumer_div.`` dropped from table names), read back by
  :func:`sqlweave.knowledge.load_knowledge` before it is used. Pass it as ``descriptions=``: the descriptions reach
  the schema and the terms and notes the prompts.
- **SQLite.** ``CACHE/sqlite/NAME.sqlite`` is made from the loaded PostgreSQL database by
  :func:`sqlweave.loading.load_database` (the same as ``python -m sqlweave.loading postgresql+psycopg://.../NAME
  NAME.sqlite``), again only when missing or made from another dump.

``--check`` runs every gold query (each alternative) of both question files on its engine and scores the first
alternative as a prediction with defog's rule, which must be right. ``CACHE`` defaults to
``$SQLWEAVE_CACHE_DIR/defog`` (``~/.cache/sqlweave/defog``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, DEFOG

SCRIPT = ROOT / "scripts" / "postgres.sh"
DEFAULT_PG_DIR = Path(os.environ.get("SQLWEAVE_PG_DIR") or "/tmp/sqlweave-pg-defog")

_SCHEMA = re.compile(r'CREATE\s+SCHEMA\s+(?:IF\s+NOT\s+EXISTS\s+)?"?(\w+)"?', re.IGNORECASE)
_QUALIFIED_TABLE = re.compile(r'CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"?(\w+)"?\s*\.', re.IGNORECASE)


def default_cache() -> Path:
    from sqlweave.config import cache_dir

    return cache_dir() / "defog"


def database_names(data_dir: Path = DEFOG) -> list[str]:
    """The databases of defog's data folder (``databases/NAME/NAME.sql``), smallest dump first."""
    names = [p.name for p in (data_dir / "databases").iterdir() if (p / f"{p.name}.sql").is_file()]
    return sorted(names, key=lambda n: ((data_dir / "databases" / n / f"{n}.sql").stat().st_size, n))


def dump_schemas(dump: str) -> list[str]:
    """Schemas other than ``public`` that a dump creates or creates tables in, in order of appearance."""
    found = [m.group(1) for m in _SCHEMA.finditer(dump)] + [m.group(1) for m in _QUALIFIED_TABLE.finditer(dump)]
    out: list[str] = []
    for s in found:
        if s.lower() != "public" and s.lower() not in out:
            out.append(s.lower())
    return out


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def knowledge_document(json_path: Path, name: str) -> dict[str, Any]:
    """defog's ``NAME.json`` as a sqlweave knowledge file's content (tables without schema prefixes)."""
    from sqlweave.knowledge import Knowledge

    k = Knowledge.from_defog_json(json_path)
    tables: dict[str, Any] = {}
    for t in k.tables:
        table = t.name.rsplit(".", 1)[-1]
        entry: dict[str, Any] = {"columns": {c: d for c, d in t.columns.items() if d.strip()}}
        if t.description:
            entry["description"] = t.description
        tables[table] = entry
    doc: dict[str, Any] = {"database": name, "tables": tables}
    if k.terms:
        doc["terms"] = [{"name": t.name, "definition": t.definition, **({"sql": t.sql} if t.sql else {})}
                        for t in k.terms]
    if k.notes:
        doc["notes"] = list(k.notes)
    return doc


@dataclass
class DefogDatabases:
    """The defog databases on one PostgreSQL server (``pg_dir``) and in one cache folder."""

    data_dir: Path = DEFOG
    pg_dir: Path = DEFAULT_PG_DIR
    cache: Path = field(default_factory=default_cache)
    base_url: str = ""
    urls: dict[str, str] = field(default_factory=dict)
    schemas: dict[str, list[str]] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    # --- the server ------------------------------------------------------------------------------

    def script(self, *args: str, timeout: float = 900) -> str:
        env = {**os.environ, "SQLWEAVE_PG_DIR": str(self.pg_dir), "SQLWEAVE_PYTHON": sys.executable}
        proc = subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT)
        if proc.returncode != 0:
            raise SystemExit(f"scripts/postgres.sh {' '.join(args)} failed (exit {proc.returncode}):\n"
                             f"{proc.stderr.strip()}\n{proc.stdout.strip()}")
        lines = proc.stdout.strip().splitlines()
        return lines[-1] if lines else ""

    def start(self) -> str:
        self.base_url = self.script("start")
        return self.base_url

    def stop(self) -> None:
        self.script("stop")

    def url(self, name: str) -> str:
        return self.base_url.rsplit("/", 1)[0] + "/" + name

    def admin(self, sql: str, db: str = "postgres") -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.url(db).replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as c:
            cur = c.execute(sql)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []

    # --- loading ---------------------------------------------------------------------------------

    def dump(self, name: str) -> Path:
        return self.data_dir / "databases" / name / f"{name}.sql"

    def load_postgres(self, name: str, *, force: bool = False) -> str:
        """Load ``NAME.sql`` (unless this very dump is loaded already) and point the database's search_path at
        the schemas the dump uses. Returns the database's URL."""
        if not self.base_url:
            self.start()
        dump = self.dump(name)
        stamp = f"defog dump {_sha(dump)}"
        self.schemas[name] = dump_schemas(dump.read_text(encoding="utf-8"))
        current = self.admin(f"SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = '{name}'")
        if force or not current or current[0][0] != stamp:
            t0 = time.perf_counter()
            self.script("load", name, str(dump))
            if self.schemas[name]:
                path = ", ".join(f'"{s}"' for s in self.schemas[name] + ["public"])
                self.admin(f'ALTER DATABASE "{name}" SET search_path TO {path}')
            self.admin(f"COMMENT ON DATABASE \"{name}\" IS '{stamp}'")
            self.log.append(f"loaded {name} into PostgreSQL in {time.perf_counter() - t0:.1f} s"
                            + (f" (search_path: {', '.join(self.schemas[name])}, public)" if self.schemas[name] else ""))
        self.urls[name] = self.url(name)
        return self.urls[name]

    def knowledge_file(self, name: str) -> Path:
        """``CACHE/knowledge/NAME.yaml`` from ``NAME.json``, checked by loading it back."""
        import yaml

        from sqlweave.knowledge import load_knowledge

        src = self.data_dir / "databases" / name / f"{name}.json"
        out = self.cache / "knowledge" / f"{name}.yaml"
        stamp = f"# made by benchmarks/accuracy/defog_setup.py from {name}.json {_sha(src)}\n"
        if not out.exists() or not out.read_text(encoding="utf-8").startswith(stamp):
            out.parent.mkdir(parents=True, exist_ok=True)
            text = stamp + yaml.safe_dump(knowledge_document(src, name), sort_keys=False, allow_unicode=True, width=120)
            tmp = out.with_name(f".{name}.tmp.yaml")
            tmp.write_text(text, encoding="utf-8")
            load_knowledge(tmp)  # raises ConfigurationError if sqlweave cannot read it back
            os.replace(tmp, out)
        return out

    def sqlite(self, name: str, *, force: bool = False) -> Path:
        """``CACHE/sqlite/NAME.sqlite``, made from the PostgreSQL database by sqlweave's loader."""
        from sqlweave.loading import load_database

        out = self.cache / "sqlite" / f"{name}.sqlite"
        stamp_path = out.with_suffix(".source")
        stamp = f"defog dump {_sha(self.dump(name))}"
        if force or not out.exists() or not stamp_path.exists() or stamp_path.read_text().strip() != stamp:
            url = self.urls.get(name) or self.load_postgres(name)
            out.parent.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            report = load_database(url, out)
            stamp_path.write_text(stamp + "\n")
            self.log.append(f"converted {name} to SQLite in {time.perf_counter() - t0:.1f} s: "
                            + report.summary().replace("\n", "; "))
        return out

    def prepare(self, names: list[str] | None = None, *, sqlite: bool = True) -> None:
        for name in names or database_names(self.data_dir):
            self.load_postgres(name)
            self.knowledge_file(name)
            if sqlite:
                self.sqlite(name)

    def target(self, name: str, engine: str) -> str:
        """What :meth:`sqlweave.db.Database.open` takes for ``name`` on ``engine`` (``postgres`` or ``sqlite``)."""
        if engine == "postgres":
            return self.urls.get(name) or self.load_postgres(name)
        return str(self.sqlite(name))


def check_gold(dbs: DefogDatabases, engines: tuple[str, ...] = ("postgres", "sqlite")) -> dict[str, Any]:
    """Run every gold alternative on its engine; score each question's first alternative against its gold."""
    from sqlweave.database import Database
    from sqlweave.eval.defog import GoldResults, load_questions, minimal_queries, questions_path, score_on_database

    out: dict[str, Any] = {}
    for engine in engines:
        questions = load_questions(questions_path(dbs.data_dir, engine))
        opened: dict[str, Database] = {}
        failures, scored = [], Counter()
        gold = GoldResults()
        try:
            for q in questions:
                if q.db_name not in opened:
                    opened[q.db_name] = Database.open(dbs.target(q.db_name, engine), timeout_s=10,
                                                      descriptions=dbs.knowledge_file(q.db_name))
                db = opened[q.db_name]
                alternatives = minimal_queries(q.query)
                for alt in alternatives:
                    try:
                        db.execute(alt, timeout_s=10, max_rows=1_000_000)
                    except Exception as err:  # noqa: BLE001 - reported, not raised
                        failures.append({"id": q.id, "db": q.db_name, "sql": alt, "error": str(err)[:200]})
                score = score_on_database(db, q, alternatives[0], gold=gold)
                scored["right" if score.correct else "wrong"] += 1
                if not score.correct:
                    failures.append({"id": q.id, "db": q.db_name, "self_score": score.error or "no match"})
        finally:
            for db in opened.values():
                db.close()
        out[engine] = {"questions": len(questions), "alternatives": sum(len(minimal_queries(q.query)) for q in questions),
                       "gold_as_prediction": dict(scored), "failures": failures}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DEFOG)
    ap.add_argument("--pg-dir", type=Path, default=DEFAULT_PG_DIR, help="the server's folder (SQLWEAVE_PG_DIR)")
    ap.add_argument("--cache", type=Path, default=None, help="knowledge files and SQLite copies (default: CACHE/defog)")
    ap.add_argument("--databases", help="comma-separated names (default: all 11)")
    ap.add_argument("--no-sqlite", action="store_true")
    ap.add_argument("--check", action="store_true", help="run every gold query and self-score them")
    ap.add_argument("--stop", action="store_true", help="stop the server at the end")
    args = ap.parse_args(argv)
    dbs = DefogDatabases(args.data_dir, args.pg_dir, args.cache or default_cache())
    dbs.start()
    names = args.databases.split(",") if args.databases else None
    dbs.prepare(names, sqlite=not args.no_sqlite)
    for line in dbs.log:
        print(line)
    print(f"PostgreSQL: {dbs.base_url} (SQLWEAVE_PG_DIR={dbs.pg_dir}); cache: {dbs.cache}")
    if args.check:
        report = check_gold(dbs, ("postgres",) if args.no_sqlite else ("postgres", "sqlite"))
        for engine, r in report.items():
            print(f"{engine}: {r['questions']} questions, {r['alternatives']} gold alternatives, "
                  f"gold as prediction {r['gold_as_prediction']}, {len(r['failures'])} problems")
            for f in r["failures"]:
                print("  ", json.dumps(f)[:300])
    if args.stop:
        dbs.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
