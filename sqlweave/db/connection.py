"""A read-only connection to one database, by file path or SQLAlchemy URL: it connects and reads, nothing else.

SQLite files open with the ``mode=ro`` URI and ``PRAGMA query_only``; PostgreSQL sessions are read-only
transactions with a ``statement_timeout``; MySQL and MariaDB queries run in ``START TRANSACTION READ ONLY`` with
the server's statement time limit; DuckDB files open with ``read_only``. Nothing sqlweave runs can write to the
user's database. What differs between engines is each one's backend class (:mod:`sqlweave.db.backends`); the
access policy, the schema and the domain knowledge are composed around a connection by
:class:`sqlweave.database.Database`.

>>> from sqlweave.db.demo import demo_database_path
>>> conn = Connection.open(demo_database_path())
>>> conn.dialect, conn.run("SELECT COUNT(*) FROM customers", timeout_s=5, max_rows=1).rows[0][0] > 0
('sqlite', True)
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

from ..errors import (
    DatabaseError,
    DatabaseLoginError,
    DatabaseNotFoundError,
    DatabaseUnavailableError,
    ExecutionError,
    MissingDependencyError,
    QueryTimeoutError,
    SchemaError,
    SqlweaveError,
)
from .backends import SQLite, backend_named
from .datafiles import data_database, data_name, reads_as_data, source_state
from .diagnose import ABSENT, LOCKED, LOGIN, connect_hint, first_line
from .opening import DUCKDB_SUFFIXES, SHOWN_DATABASES, file_identity, no_schemas, schemas_note, \
    schemas_with_tables, server_databases, with_installed_driver

if TYPE_CHECKING:
    from .backends.base import Backend


@dataclass(frozen=True)
class QueryResult:
    """Rows of a query, capped at ``max_rows`` (``truncated`` says whether more existed)."""

    sql: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool
    elapsed_s: float

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r)) for r in self.rows]


class Connection:
    """A read-only, time-limited connection (a pool of them) to one database.

    ``kind`` is the engine's backend class (:class:`~sqlweave.db.backends.base.Backend`). Each pooled connection
    runs one query at a time under a lock of its own, so queries of several threads (several tenants' handles on
    one pool) run side by side; SQLite's pool, which keeps one connection per thread and closes another thread's
    when it is full, runs one query of a file at a time.
    """

    def __init__(self, engine: sa.Engine, kind: "Backend", *, name: str, target: str) -> None:
        self.engine = engine
        self.kind = kind
        self.name = name
        self.target = target
        #: the schemas (namespaces) whose tables are read, in the order a name is looked up; () for one
        #: database's only namespace (SQLite, MySQL, MariaDB)
        self.schemas: tuple[str, ...] = ()
        #: queries of sqlweave's own that ran out of time or were not run for want of it (a schema read with
        #: any is not kept on disk: :mod:`sqlweave.db.schema_cache`)
        self.reads_cut_short = 0
        #: a SQLite or DuckDB file's path and identity (device, inode) when opened: a file replaced by another
        #: (a nightly rebuild renamed over it) is opened again at the next check
        self.file: tuple[Path, tuple[int, int] | None] | None = None
        #: the data files (CSV, Parquet, ...) this connection's DuckDB copy was built from, and their state then
        self.source: Path | None = None
        self._source_built: tuple[tuple[str, int, int], ...] = ()
        self._source_seen: tuple[tuple[str, int, int], ...] | None = None
        self._held = threading.local()  # the connection one_connection() holds in this thread, if any
        self._one_at_a_time = threading.Lock() if kind.pool_per_thread else None

    # --- opening ---------------------------------------------------------------------------------

    @classmethod
    def open(cls, target: str | Path, *, timeout_s: float = 10.0, schemas: tuple[str, ...] | None = None
             ) -> "Connection":
        """Connect read-only to ``target``: a SQLite or DuckDB file, CSV, TSV, Parquet, JSON or Excel files (a file
        or a folder: a DuckDB copy of them is built once) or a SQLAlchemy URL; ``timeout_s`` bounds the wait for a
        server. ``schemas`` (already checked: :func:`~sqlweave.db.opening.schema_names`) is a PostgreSQL or DuckDB
        database's search path."""
        text = str(target)
        if "://" not in text:
            path = Path(text).expanduser()
            if reads_as_data(path):
                no_schemas(schemas, "data files", "each file is a table of its own")
                conn = cls.open_url(f"duckdb:///{data_database(path)}", timeout_s, data_name(path))
                conn.source, conn._source_built = path, source_state(path)
                return conn
            if not path.is_file():
                raise DatabaseNotFoundError(f"no database file at {text!r}")
            if path.suffix.lower() in DUCKDB_SUFFIXES:
                return cls.open_url(f"duckdb:///{path.resolve()}", timeout_s, path.stem, schemas)
            no_schemas(schemas, backend_named("sqlite"))
            return cls.open_sqlite(path.resolve(), timeout_s)
        try:
            url = make_url(text)
        except (ArgumentError, ValueError) as err:  # ValueError: a port that is not a number
            raise DatabaseNotFoundError(f"not a database URL: {text!r}") from err
        kind = backend_named(url.get_backend_name())
        no_schemas(schemas, kind)
        if kind.opens_files:
            if not url.database or url.database == ":memory:":
                raise DatabaseNotFoundError("an in-memory SQLite database has no tables to ask about")
            path = Path(url.database).expanduser()
            if not path.is_file():
                raise DatabaseNotFoundError(f"no database file at {url.database!r}")
            return cls.open_sqlite(path.resolve(), timeout_s)
        name = url.database or url.get_backend_name()
        if kind.url_names_file and url.database:
            name = Path(url.database).stem  # duckdb:///path/to/shop.duckdb is "shop"
        return cls.open_url(text, timeout_s, name, schemas)

    @classmethod
    def open_sqlite(cls, path: Path, timeout_s: float) -> "Connection":
        """Connect read-only to the SQLite file at ``path``."""
        with path.open("rb") as fh:
            header = fh.read(16)
        if header and not header.startswith(b"SQLite format 3"):
            raise DatabaseError(
                f"{str(path)!r} is not a SQLite database",
                hint="Pass a SQLite file, a DuckDB file (.duckdb), CSV, TSV, Parquet, JSON or Excel files (a file "
                     "or a folder) or a SQLAlchemy URL.",
            )
        kind = SQLite()
        conn = cls(kind.create_engine(path, timeout_s), kind, name=path.stem, target=str(path))
        conn.file = (path, file_identity(path))
        return conn

    @classmethod
    def open_url(cls, url: str, timeout_s: float, name: str, schemas: tuple[str, ...] | None = None
                 ) -> "Connection":
        """Connect read-only to the server or DuckDB file of ``url``, and read its search path."""
        url = with_installed_driver(url)
        parsed = make_url(url)
        kind = backend_named(parsed.get_backend_name())
        driver = parsed.get_driver_name() if "+" in parsed.drivername else ""
        if kind.url_needs_database and not parsed.database:
            raise DatabaseNotFoundError(
                f"{parsed.render_as_string(hide_password=True)} names no database",
                hint="Add the database's name to the URL: mysql://user@host/shop")
        connect_args = kind.connect_args(parsed, timeout_s)
        try:
            engine = sa.create_engine(url, connect_args=connect_args, pool_pre_ping=kind.pings)
        except (NoSuchModuleError, ModuleNotFoundError, ImportError) as err:
            raise MissingDependencyError(
                f"no driver installed for {parsed.get_backend_name()!r} databases" + (f" ({driver})" if driver else ""),
                hint=kind.driver_hint(driver),
            ) from err
        kind.prepare(engine, schemas)
        conn = cls(engine, kind, name=name, target=url)
        if kind.url_names_file and parsed.database and parsed.database != ":memory:":
            conn.file = (Path(parsed.database), file_identity(Path(parsed.database)))
        try:
            with engine.connect() as con:
                conn.schemas = kind.search_path(con)
        except SQLAlchemyError as err:
            engine.dispose()
            raise conn._refused(err, parsed, connect_args) from err
        if schemas:
            missing = [s for s in schemas if s not in conn.schemas]
            if missing:
                conn.close()
                found = schemas_with_tables(engine, kind)
                raise SchemaError(f"database {name!r} has no schema {', '.join(map(repr, missing))}",
                                  hint=f"Its schemas with tables: {schemas_note(found) or 'none'}.")
        return conn

    def _refused(self, err: SQLAlchemyError, url: sa.URL, connect_args: dict[str, Any]) -> DatabaseError:
        """The typed error for a first connection that failed: no such database or host, or a file that is no
        database: not found; a login refused: refused until the credentials change; a server that refuses, is
        down or is full now, or a file another program locks: unavailable."""
        reason = self.kind.unreachable_reason(err)
        kind = (DatabaseNotFoundError if reason in ABSENT else DatabaseLoginError if reason == LOGIN
                else DatabaseUnavailableError)
        hint = connect_hint(reason)
        if reason == LOCKED:
            hint = ("Another program has the file open for writing, and DuckDB then lets no other process "
                    "read it: close that program (or give sqlweave a copy of the file), then try again.")
        elif reason == ABSENT[0]:
            names = server_databases(url, self.kind, connect_args)
            if names:
                more = " and more" if len(names) > SHOWN_DATABASES else ""
                hint = f"{hint} The databases this user may connect to there: {', '.join(names[:SHOWN_DATABASES])}{more}."
        said = first_line(getattr(err, "orig", None) or err)  # the driver's words, not SQLAlchemy's wrapping
        return kind(f"cannot connect to {self.safe_target()}: {said}", hint=hint)

    # --- facts -----------------------------------------------------------------------------------

    @property
    def backend(self) -> str:
        """SQLAlchemy's name of the engine: ``sqlite``, ``duckdb``, ``postgresql``, ``mysql`` or ``mariadb``."""
        return self.engine.dialect.name

    @property
    def dialect(self) -> str:
        """The sqlglot dialect name for this database."""
        return self.kind.dialect

    def safe_target(self) -> str:
        """The target without its password."""
        try:
            return make_url(self.target).render_as_string(hide_password=True)
        except ArgumentError:
            return self.target

    def quote(self, identifier: str) -> str:
        return self.engine.dialect.identifier_preparer.quote_identifier(identifier)

    # --- a file replaced, data files changed ------------------------------------------------------------

    def source_rebuilt(self) -> bool:
        """Were this connection's data files changed, and have they held still since the last check? Then its DuckDB
        copy is built again and the connection reads the new one (files still being written wait for the next
        check; a copy that cannot be built leaves the old one in use, and is tried again at the next check)."""
        if self.source is None:
            return False
        now = source_state(self.source)
        if now == self._source_built or not now:
            self._source_seen = None
            return False
        if now != self._source_seen:
            self._source_seen = now
            return False
        try:
            fresh = Connection.open_url(f"duckdb:///{data_database(self.source)}", 10.0, self.name)
        except SqlweaveError:
            return False
        old = self.engine
        self.engine, self.target, self.file = fresh.engine, fresh.target, fresh.file
        self._source_built, self._source_seen = now, None
        old.dispose()
        return True

    def file_replaced(self) -> bool:
        """Was this connection's SQLite or DuckDB file replaced by another since it was opened (written elsewhere
        and renamed over it)? Then the pooled connections, which still read the old file, are let go: the next
        query opens the new one. A file that is gone changes nothing (what is open still answers)."""
        if self.file is None:
            return False
        path, opened = self.file
        now = file_identity(path)
        if now is None or now == opened:
            return False
        self.file = (path, now)
        # SQLite's pool keeps one connection per thread, which another request may be using: it is dropped, not
        # closed, and goes when unused; DuckDB's pool closes the connections no query holds
        self.engine.dispose(close=not self.kind.pool_per_thread)
        return True

    # --- reading ---------------------------------------------------------------------------------

    @contextmanager
    def one_connection(self) -> Iterator[sa.Connection]:
        """Run this thread's queries inside on one connection, given to the caller too (for SQLAlchemy's
        inspector): reading a schema sends hundreds of queries, and taking a connection from the pool costs a
        server a round trip each time (the check that it is still alive). Each query keeps its own read-only
        transaction and time limit.

        >>> from sqlweave.db.demo import demo_database_path
        >>> conn = Connection.open(demo_database_path())
        >>> with conn.one_connection():
        ...     conn.run("SELECT 1", timeout_s=5, max_rows=1).rows == conn.run("SELECT 2", timeout_s=5, max_rows=1).rows
        False
        """
        held = getattr(self._held, "conn", None)
        if held is not None:
            yield held
            return
        with self._connect() as conn:
            self._held.conn = conn
            try:
                yield conn
            finally:
                self._held.conn = None
                if conn.in_transaction():
                    conn.rollback()

    @contextmanager
    def _connect(self) -> Iterator[sa.Connection]:
        """A connection from the pool; a server that cannot be reached is a
        :class:`~sqlweave.errors.DatabaseUnavailableError`, not the driver's exception."""
        try:
            conn = self.engine.connect()
        except SQLAlchemyError as err:
            raise self.unavailable(err) from err
        with conn:
            yield conn

    def unavailable(self, err: SQLAlchemyError) -> DatabaseUnavailableError:
        """The typed error for a connection that failed or was lost: why, in words that name no host or user
        (a server's clients see it); the driver's own first line is kept in ``details["driver"]``."""
        reason = self.kind.unreachable_reason(err)
        if reason == LOCKED:
            return DatabaseUnavailableError(f"cannot read the database: {reason}", driver=first_line(err),
                                            hint="Another program is writing to the file; try again when it has "
                                                 "finished.")
        if reason == LOGIN:  # a password changed or a user dropped since the database was opened
            return DatabaseLoginError(f"cannot reach the database: {reason}", driver=first_line(err))
        return DatabaseUnavailableError(f"cannot reach the database: {reason}", driver=first_line(err))

    def run(self, sql: str, *, timeout_s: float, max_rows: int) -> QueryResult:
        """Run ``sql`` as it is (no check of what it is: the caller's), read-only, stopped after ``timeout_s``, and
        return at most ``max_rows`` rows.

        Raises:
            QueryTimeoutError: the query ran past ``timeout_s`` and was interrupted.
            DatabaseUnavailableError: the connection failed or was lost, or a writer locks the file.
            ExecutionError: the database rejected the query (typed by the backend: UnknownColumnError, ...).
        """
        start = time.perf_counter()
        held = getattr(self._held, "conn", None)
        with self._one_at_a_time or nullcontext(), (nullcontext(held) if held is not None else self._connect()) as conn:
            with _lock_of(conn):
                raw = conn.connection.dbapi_connection
                cancel = self.kind.arm_timeout(conn, raw, timeout_s)
                try:
                    result = conn.exec_driver_sql(self.kind.driver_text(sql, self.engine.dialect.paramstyle))
                    columns = tuple(result.keys()) if result.returns_rows else ()
                    rows = result.fetchmany(max_rows + 1) if result.returns_rows else []
                    result.close()
                except DBAPIError as err:
                    if err.connection_invalidated:  # the server went away while the query ran
                        raise self.unavailable(err) from err
                    if self.kind.locked(err):  # not the SQL's fault either
                        raise self.unavailable(err) from err
                    if self.kind.timed_out(err) or time.perf_counter() - start >= timeout_s:
                        self.reads_cut_short += 1
                        raise QueryTimeoutError(f"query interrupted after {timeout_s:g} s", sql=sql) from err
                    raise self.kind.diagnose(err.orig or err, sql=sql) from err
                except SQLAlchemyError as err:
                    raise ExecutionError(first_line(err), sql=sql) from err
                finally:
                    cancel()
                    if self.kind.rolls_back:
                        conn.rollback()
        truncated = len(rows) > max_rows
        rows = rows[:max_rows]
        return QueryResult(sql=sql, columns=columns, rows=tuple(tuple(r) for r in rows), truncated=truncated,
                           elapsed_s=time.perf_counter() - start)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Connection({self.safe_target()!r}, dialect={self.dialect!r})"


def _lock_of(conn: sa.Connection) -> threading.Lock:
    """The lock of the pooled DBAPI connection ``conn`` uses (made with it, kept in its record's ``info``): one
    query at a time on one connection, whoever holds it."""
    info = conn.connection.info
    lock = info.get("sqlweave.lock")
    if lock is None:
        lock = info.setdefault("sqlweave.lock", threading.Lock())
    return lock
