"""Schemas read before, kept on disk: a new process asking a database it has read before does not read it again.

Reading a schema sends a query or more per table (row counts, samples, statistics, keys read from the data):
thousands of round trips for a server database of hundreds of tables, before the first question. The schema
read is kept as JSON in ``<cache dir>/schemas/``, under a key naming what was read and how (the database and
its user, the schemas named, the access policy, the knowledge file, whether keys are read from the data, and
sqlweave's own code), beside a fingerprint of the database that changes when its tables, columns, keys, grants,
comments or rows do:

- a SQLite or DuckDB file (and data files, read through their DuckDB copy): the file's and its journal's size,
  time and header (SQLite counts each change there; DuckDB each checkpoint);
- PostgreSQL: one catalog query over every table, view, column, constraint, comment, enum, grant and role
  membership of the database, with each table's counts of rows inserted, updated and deleted.

A schema is used only while the database's fingerprint is the one it was read with, and for at most a day. MySQL
and MariaDB, whose catalog does not tell when rows change, are read every time, as are in-memory databases; so is
any database when ``$SQLWEAVE_SCHEMA_CACHE=0``. A read during which a query ran out of time is not kept (its gaps
would outlive the slow moment), nor is one that JSON cannot carry exactly. Files are written atomically; the
least recently used are removed past ``MAX_FILES``.

:func:`structure` is the part of the fingerprint that leaves rows out (for a file, SQLite's ``schema_version`` or
DuckDB's catalog; MySQL's and MariaDB's catalogs too): a handle that lives on, a server's, compares it now and then
with the one its schema was read with (:meth:`sqlweave.db.Database.schema`), and reads the schema again when a
table, a column, a key or a grant changed.

>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> db = Database.open(demo_database_path())
>>> fingerprint(db) is not None and structure(db) is not None
True
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from ..config import Settings
from ..files import write_atomically
from .introspect import catalog_rows
from ..schema import Column, ColumnStats, ForeignKey, Schema, Table

if TYPE_CHECKING:
    from .protocol import Reader

#: Bumped when the file's layout changes (the code digest already covers what the schema holds).
FORMAT = 1
#: A schema older than this is read again, whatever its fingerprint says.
MAX_AGE_S = 24 * 3600
#: Schemas kept at most (the least recently used go first).
MAX_FILES = 500

#: Everything of a PostgreSQL database a schema read depends on, as two digests (see the module's docstring): its
#: structure (tables, columns, constraints, comments, enums, grants, role memberships, the session's search path),
#: then the same with each table's counts of rows written, for all but other sessions' temporary tables
#: (``pg_temp_N``, ``pg_toast_temp_N``). The counts come from the server's statistics, which a session still open
#: reports within seconds of its commit (ten at most on PostgreSQL 15): rows written that recently may be missing
#: from the samples and statistics of a schema kept.
_POSTGRES_MARKS = r"""
SELECT md5(string_agg(r, chr(10) ORDER BY r)), md5(string_agg(r || coalesce(w, ''), chr(10) ORDER BY r)) FROM (
  SELECT concat_ws(':', 'rel', c.oid, n.nspname, c.relname, c.relkind, c.relacl::text,
                   obj_description(c.oid, 'pg_class'),
                   CASE WHEN c.relkind IN ('v', 'm') THEN md5(pg_get_viewdef(c.oid)) END) AS r,
         concat_ws(':', c.relfilenode, s.n_tup_ins, s.n_tup_upd, s.n_tup_del) AS w
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_catalog.pg_stat_all_tables s ON s.relid = c.oid
  WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
    AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_t%'
  UNION ALL
  SELECT concat_ws(':', 'att', a.attrelid, a.attnum, a.attname, a.atttypid, a.atttypmod, a.attnotnull,
                   a.attisdropped, a.attacl::text, col_description(a.attrelid, a.attnum)), NULL
  FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE a.attnum > 0 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
    AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_t%'
  UNION ALL
  SELECT concat_ws(':', 'con', co.oid, co.conname, co.contype, co.conrelid, co.confrelid, co.conkey::text,
                   co.confkey::text, co.convalidated), NULL
  FROM pg_catalog.pg_constraint co JOIN pg_catalog.pg_namespace n ON n.oid = co.connamespace
  WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_t%'
  UNION ALL
  SELECT concat_ws(':', 'enum', e.enumtypid, e.enumsortorder, e.enumlabel), NULL FROM pg_catalog.pg_enum e
  UNION ALL
  SELECT concat_ws(':', 'member', m.roleid, m.member), NULL FROM pg_catalog.pg_auth_members m
  UNION ALL
  SELECT concat_ws(':', 'session', current_user, current_database(), current_schemas(false)::text), NULL
) AS parts
"""

#: A DuckDB file's structure: its tables' and views' columns, constraints, comments and definitions.
_DUCKDB_STRUCTURE = """
SELECT md5(string_agg(x, chr(10) ORDER BY x)) FROM (
  SELECT concat_ws(':', 'col', schema_name, table_name, column_name, data_type, is_nullable, comment) AS x
  FROM duckdb_columns() WHERE database_name = current_database()
  UNION ALL SELECT concat_ws(':', 'con', schema_name, table_name, constraint_type, constraint_text)
  FROM duckdb_constraints() WHERE database_name = current_database()
  UNION ALL SELECT concat_ws(':', 'view', schema_name, view_name, sql)
  FROM duckdb_views() WHERE database_name = current_database() AND NOT internal
  UNION ALL SELECT concat_ws(':', 'table', schema_name, table_name, comment)
  FROM duckdb_tables() WHERE database_name = current_database()
) AS parts
"""

#: A MySQL or MariaDB database's structure, as rows to digest: its columns, keys and table comments.
_MYSQL_STRUCTURE = """
SELECT 'col', TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, COLUMN_KEY, IS_NULLABLE, COLUMN_COMMENT, ORDINAL_POSITION
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
UNION ALL SELECT 'key', TABLE_NAME, COLUMN_NAME, CONSTRAINT_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME, '',
ORDINAL_POSITION FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE()
UNION ALL SELECT 'table', TABLE_NAME, TABLE_TYPE, TABLE_COMMENT, '', '', '', 0
FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()
"""


def read_schema(db: "Reader", settings: Settings | None = None, *, refresh: bool = False,
                progress: Callable[[int, int], None] | None = None) -> Schema:
    """The schema of ``db``: the one kept on disk when it was read with the database's fingerprint of now (its
    time of reading then in ``db.schema_kept_since``), else read (:func:`~sqlweave.db.introspect.introspect`)
    and kept (``progress(done, total)`` as each table is read). ``refresh`` reads it whatever is kept.
    ``db.schema_structure`` is set to the database's
    :func:`structure` of now (how a long-lived handle tells, later, that a table or a column changed).

    >>> from sqlweave.database import Database
    >>> from sqlweave.db.demo import demo_database_path
    >>> "customers" in read_schema(Database.open(demo_database_path())).table_names
    True
    """
    from .introspect import introspect

    settings = settings if settings is not None else Settings.from_env()
    structure_now, mark = marks(db)
    db.schema_structure = structure_now
    if not settings.schema_cache or mark is None:
        return introspect(db, progress)
    path = settings.cache_dir / "schemas" / f"{_key(db)}.json"
    kept = None if refresh else _load(path, mark)
    if kept is not None:
        db.schema_kept_since = kept[1]
        return kept[0]
    cut_short = db.connection.reads_cut_short
    schema = introspect(db, progress)
    if db.connection.reads_cut_short == cut_short and marks(db) == (structure_now, mark):  # complete, nothing changed meanwhile
        _store(path, mark, schema)
    return schema


def fingerprint(db: "Reader") -> str | None:
    """A digest that changes when what a schema read of ``db`` shows may have changed (its structure or its rows),
    or ``None`` where there is none to trust (MySQL, MariaDB, an in-memory database, a catalog that cannot be
    read)."""
    return marks(db)[1]


def structure(db: "Reader") -> str | None:
    """A digest of the database's tables, columns, keys, comments and grants (not of its rows), by one query, or
    ``None`` when it cannot be read: SQLite's ``schema_version``, DuckDB's, PostgreSQL's and MySQL's catalogs."""
    return marks(db)[0]


def marks(db: "Reader") -> tuple[str | None, str | None]:
    """:func:`structure` and :func:`fingerprint` of ``db``, read together (one query to a server)."""
    backend = db.backend
    if backend == "postgresql":
        rows = catalog_rows(db, _POSTGRES_MARKS)
        return (str(rows[0][0]), str(rows[0][1])) if rows and rows[0][0] else (None, None)
    if backend == "sqlite":
        rows = catalog_rows(db, "PRAGMA schema_version")
        return (f"sqlite:{rows[0][0]}:{_identity(db)}" if rows else None), \
            _files_mark(Path(db.target), ("-wal", "-journal"), header=100)
    if backend == "duckdb":
        rows = catalog_rows(db, _DUCKDB_STRUCTURE)
        shape = f"{rows[0][0]}:{_identity(db)}" if rows and rows[0][0] else None
        try:
            database = make_url(db.target).database
        except ArgumentError:
            return shape, None
        if not database or database == ":memory:":
            return shape, None
        return shape, _files_mark(Path(database), (".wal",), header=12288)
    if backend in ("mysql", "mariadb"):
        rows = catalog_rows(db, _MYSQL_STRUCTURE)
        return (hashlib.sha256(repr(sorted(map(tuple, rows))).encode()).hexdigest() if rows else None), None
    return None, None


def _identity(db: "Reader") -> str:
    """The identity of the file a handle reads (a file renamed over it is another structure, even with the same
    tables: a value index built on the old one is not used)."""
    return "" if db.file is None else f"{db.file[1]}"


def _files_mark(path: Path, journals: tuple[str, ...], header: int) -> str | None:
    """The size, time, inode and first ``header`` bytes of a database file and of its journal files that exist."""
    digest = hashlib.sha256()
    for i, file in enumerate((path, *(path.with_name(path.name + s) for s in journals))):
        try:
            st = file.stat()
            with file.open("rb") as fh:
                head = fh.read(header)
        except FileNotFoundError:
            if i == 0:
                return None
            continue
        except OSError:
            return None
        digest.update(f"{file.name}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:".encode() + head)
    return digest.hexdigest()


def _key(db: "Reader") -> str:
    """What the read depends on besides the database's own state."""
    from ..knowledge import knowledge_for

    target = db.target
    if "://" in target:
        try:  # the user matters (what its role may read), the password does not
            target = make_url(target).render_as_string(hide_password=True)
        except ArgumentError:
            pass
    known = knowledge_for(db)
    parts = {
        "format": FORMAT, "code": _code_digest(), "target": target, "schemas": list(db.schemas),
        "keys_from_data": db.keys_from_data, "policy": _plain(db.policy),
        "descriptions": _file_digest(db.descriptions) if db.descriptions else None,
        "joins": sorted(str(j) for j in known.joins) if known is not None else [],
    }
    text = json.dumps(parts, sort_keys=True, default=str)
    return f"{db.name[:40]}-{hashlib.sha256(text.encode()).hexdigest()[:24]}".translate(_SAFE)


_SAFE = str.maketrans({c: "_" for c in '/\\:*?"<>| \t\n\r\x00'})


def _plain(value: Any) -> Any:
    """``value`` as JSON-able data whose text does not depend on the process (sets sorted)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.compare}
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value if value is None or isinstance(value, (int, float, str, bool)) else str(value)


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return f"unreadable:{path}"


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """The code that reads a schema: a schema kept by another version of it is not used."""
    from .._version import __version__

    here = Path(__file__).resolve().parent
    digest = hashlib.sha256(__version__.encode())
    for file in sorted([*here.rglob("*.py"), *(here.parent / "knowledge").glob("*.py"),
                        *(here.parent / "policy").glob("*.py")]):
        digest.update(file.relative_to(here.parent).as_posix().encode() + file.read_bytes())
    return digest.hexdigest()[:16]


# --- the file ----------------------------------------------------------------------------------------------


def _load(path: Path, mark: str) -> tuple[Schema, float] | None:
    """The schema kept in ``path`` and when it was read, if read with fingerprint ``mark`` at most a day ago."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        read_at = float(data.get("read_at", 0))
        if data.get("fingerprint") != mark or time.time() - read_at > MAX_AGE_S:
            return None
        schema = _decode(data["schema"])
        os.utime(path)  # recently used
        return schema, read_at
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _store(path: Path, mark: str, schema: Schema) -> None:
    try:
        text = json.dumps({"fingerprint": mark, "read_at": time.time(), "schema": dataclasses.asdict(schema)},
                          allow_nan=False)
    except (TypeError, ValueError):  # a value JSON cannot carry: the schema is not kept
        return
    if _decode(json.loads(text)["schema"]) != schema:  # kept only when read back exactly as read
        return
    if write_atomically(path, lambda fh: fh.write(text.encode("utf-8"))):
        try:
            _prune(path.parent)
        except OSError:
            pass


def _prune(folder: Path) -> None:
    files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime if p.exists() else 0.0)
    for old in files[:max(0, len(files) - MAX_FILES)]:
        old.unlink(missing_ok=True)


def _decode(d: dict[str, Any]) -> Schema:
    tables = tuple(
        Table(name=t["name"], description=t["description"], row_count=t["row_count"],
              sample_rows=tuple(tuple(r) for r in t["sample_rows"]),
              columns=tuple(Column(name=c["name"], type=c["type"], primary_key=c["primary_key"],
                                   nullable=c["nullable"], description=c["description"],
                                   samples=tuple(c["samples"]), stats=ColumnStats(**c["stats"]))
                            for c in t["columns"]))
        for t in d["tables"])
    return Schema(name=d["name"], tables=tables, foreign_keys=tuple(ForeignKey(**f) for f in d["foreign_keys"]),
                  dialect=d["dialect"], keys_from_data=d["keys_from_data"], schemas=tuple(d["schemas"]),
                  shadowed=tuple(d.get("shadowed", ())))
