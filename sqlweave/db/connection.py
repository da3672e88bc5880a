"""Open a database read-only, by file path or SQLAlchemy URL.

SQLite files open with the ``mode=ro`` URI and ``PRAGMA query_only``; PostgreSQL
sessions are read-only transactions with a ``statement_timeout``; MySQL and MariaDB
queries run in ``START TRANSACTION READ ONLY`` with the server's statement time
limit; DuckDB files open with ``read_only``. Nothing sqlweave runs can write to the
user's database.

>>> from sqlweave.db.demo import demo_database_path
>>> db = Database.open(demo_database_path())
>>> db.dialect
'sqlite'
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from ..errors import (
    ConfigurationError,
    DatabaseError,
    DatabaseLoginError,
    DatabaseNotFoundError,
    DatabaseUnavailableError,
    ExecutionError,
    MissingDependencyError,
    QueryTimeoutError,
    SchemaError,
    SqlweaveError,
    UnsupportedDatabaseError,
)
from ..sql.classify import ensure_read_only
from ..sql.quiet import reading_untrusted_text
from .datafiles import data_database, data_name, reads_as_data, source_state
from .diagnose import ABSENT, LOCKED, LOGIN, connect_hint, diagnose, first_line, unreachable_reason
from .sqlite_functions import add_percentiles

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..policy import AccessPolicy
    from ..schema import Schema

#: sqlglot dialect names for SQLAlchemy backends.
_DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "duckdb": "duckdb", "mysql": "mysql", "mariadb": "mysql"}
_DUCKDB_SUFFIXES = (".duckdb", ".ddb")


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


def _sqlite_text(b: bytes) -> str:
    # Real-world SQLite files (Spider's among them) hold invalid UTF-8; never fail on it, and lose nothing:
    # undecodable bytes become lone surrogates, which JSON output keeps exactly, displays show as escapes
    # (sqlweave.text.visible) and model prompts receive as U+FFFD (sqlweave.text.well_formed).
    return b.decode("utf-8", errors="surrogateescape")


class Database:
    """A read-only handle on one database.

    Use :meth:`open` with a file path or a SQLAlchemy URL. ``timeout_s`` bounds
    every query's wall-clock time and ``max_rows`` the rows returned. ``policy`` is the database's
    :class:`~sqlweave.policy.AccessPolicy`: :meth:`schema` shows only what it shows, :meth:`execute` enforces
    it, and :meth:`bind` gives a handle whose row filters see one request's parameters.
    """

    def __init__(
        self,
        engine: sa.Engine,
        *,
        name: str,
        target: str,
        timeout_s: float = 10.0,
        max_rows: int = 1000,
        descriptions: str | Path | None = None,
        policy: "AccessPolicy | None" = None,
    ) -> None:
        self.engine = engine
        self.name = name
        self.target = target
        self.timeout_s = timeout_s
        self.max_rows = max_rows
        self.descriptions = Path(descriptions) if descriptions else None
        self._schema: Schema | None = None
        self._lock = threading.Lock()
        self._held = threading.local()  # the connection one_connection() holds in this thread, if any
        self.policy = policy
        #: read keys from the data when the database declares no foreign key (see :meth:`open`)
        self.keys_from_data = True
        #: the schemas (namespaces) whose tables are read, in the order a name is looked up; () for one
        #: database's only namespace (SQLite, MySQL, MariaDB). See :meth:`open`.
        self.schemas: tuple[str, ...] = ()
        #: the row filters' parameters bound for this handle (see :meth:`bind`)
        self.params: dict[str, Any] = {}
        #: queries of sqlweave's own that ran out of time or were not run for want of it (a schema read with
        #: any is not kept on disk: :mod:`sqlweave.db.schema_cache`)
        self.reads_cut_short = 0
        #: when the schema this handle uses was read, if it came from disk (None: read by this handle)
        self.schema_kept_since: float | None = None
        #: the database's structure (:func:`~sqlweave.db.schema_cache.structure`) when its schema was read
        self.schema_structure: str | None = None
        #: seconds after which a long-lived handle (a server's) checks, by one query, that the database's tables
        #: and columns are still those of the schema it holds, and reads it again if not; None: never
        self.recheck_s: float | None = 60.0
        self._checked_at = time.monotonic()
        #: a SQLite or DuckDB file's path and identity (device, inode) when opened: a file replaced by another
        #: (a nightly rebuild renamed over it) is opened again at the next check
        self.file: tuple[Path, tuple[int, int] | None] | None = None
        #: the data files (CSV, Parquet, ...) this handle's DuckDB copy was built from, and their state then
        self.source: Path | None = None
        self._source_built: tuple[tuple[str, int, int], ...] = ()
        self._source_seen: tuple[tuple[str, int, int], ...] | None = None
        self._recheck_lock = threading.Lock()

    # --- opening ---------------------------------------------------------------

    @classmethod
    def open(
        cls,
        target: str | Path,
        *,
        timeout_s: float = 10.0,
        max_rows: int = 1000,
        descriptions: str | Path | None = None,
        policy: "AccessPolicy | str | Path | None" = None,
        keys_from_data: bool = True,
        schemas: "Sequence[str] | None" = None,
    ) -> "Database":
        """Open ``target`` (a SQLite/DuckDB file path or a SQLAlchemy URL) read-only.

        ``policy`` is an :class:`~sqlweave.policy.AccessPolicy` or its YAML file; the ``policy:`` section of a
        YAML knowledge file given as ``descriptions`` applies as well (both merged). With ``keys_from_data``, a
        database that declares no foreign key gets, in the schema sqlweave reads, the keys its names and values
        show (:func:`~sqlweave.db.infer_keys.infer_database_keys`; queries of at most 20 s in all, nothing
        written).

        ``schemas`` names the schemas of a PostgreSQL or DuckDB database whose tables are read, in the order a
        table's name is looked up (their search path): ``schemas=["sales", "hr"]`` reads both, and a query's
        ``orders`` is ``sales.orders``; a table whose name an earlier schema already has is not read. By default
        PostgreSQL reads the connection's search path (``public``, unless the server or the URL's
        ``options=-csearch_path=...`` says otherwise) and DuckDB every schema of the file, ``main`` first.
        """
        from ..policy import resolve_policy

        if schemas is not None:
            schemas = _schema_names(schemas)
        db = cls._open(target, timeout_s=timeout_s, max_rows=max_rows, descriptions=descriptions,
                       schemas=schemas)
        db.policy = resolve_policy(policy, descriptions)
        db.keys_from_data = keys_from_data
        return db

    @classmethod
    def _open(cls, target: str | Path, *, timeout_s: float, max_rows: int,
              descriptions: str | Path | None, schemas: tuple[str, ...] | None = None) -> "Database":
        text = str(target)
        if "://" not in text:
            path = Path(text).expanduser()
            if reads_as_data(path):
                # CSV, TSV, Parquet, JSON or Excel files (or a folder of them): a DuckDB copy of them, built once
                _no_schemas(schemas, "data files", "each file is a table of its own")
                built = data_database(path)
                db = cls._open_url(f"duckdb:///{built}", timeout_s, max_rows, descriptions, data_name(path))
                db.source, db._source_built = path, source_state(path)
                return db
            if not path.is_file():
                raise DatabaseNotFoundError(f"no database file at {text!r}")
            if path.suffix.lower() in _DUCKDB_SUFFIXES:
                return cls._open_url(f"duckdb:///{path.resolve()}", timeout_s, max_rows, descriptions, path.stem,
                                     schemas)
            _no_schemas(schemas, "SQLite", "a SQLite file has one schema")
            return cls._open_sqlite(path.resolve(), timeout_s, max_rows, descriptions)
        try:
            url = make_url(text)
        except (ArgumentError, ValueError) as err:  # ValueError: a port that is not a number
            raise DatabaseNotFoundError(f"not a database URL: {text!r}") from err
        if url.get_backend_name() in ("sqlite", *_MYSQL):
            _no_schemas(schemas, "SQLite" if url.get_backend_name() == "sqlite" else "MySQL and MariaDB",
                        "a SQLite file has one schema" if url.get_backend_name() == "sqlite" else
                        "the URL names the one database read: mysql://user@host/shop")
        if url.get_backend_name() == "sqlite":
            if not url.database or url.database == ":memory:":
                raise DatabaseNotFoundError("an in-memory SQLite database has no tables to ask about")
            path = Path(url.database).expanduser()
            if not path.is_file():
                raise DatabaseNotFoundError(f"no database file at {url.database!r}")
            return cls._open_sqlite(path.resolve(), timeout_s, max_rows, descriptions)
        name = url.database or url.get_backend_name()
        if url.get_backend_name() == "duckdb" and url.database:
            name = Path(url.database).stem  # duckdb:///path/to/shop.duckdb is "shop"
        return cls._open_url(text, timeout_s, max_rows, descriptions, name, schemas)

    @classmethod
    def _open_sqlite(
        cls, path: Path, timeout_s: float, max_rows: int, descriptions: str | Path | None
    ) -> "Database":
        with path.open("rb") as fh:
            header = fh.read(16)
        if header and not header.startswith(b"SQLite format 3"):
            raise DatabaseError(
                f"{str(path)!r} is not a SQLite database",
                hint="Pass a SQLite file, a DuckDB file (.duckdb), CSV, TSV, Parquet, JSON or Excel files (a file "
                     "or a folder) or a SQLAlchemy URL.",
            )
        uri = f"file:{quote(str(path))}?mode=ro"

        def creator() -> sqlite3.Connection:
            # a writer's lock is waited for 5 s at most, and never longer than a query may run
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=min(5.0, timeout_s))
            conn.text_factory = _sqlite_text
            conn.execute("PRAGMA query_only = ON")
            add_percentiles(conn)
            return conn

        engine = sa.create_engine("sqlite://", creator=creator, poolclass=sa.pool.SingletonThreadPool)
        db = cls(engine, name=path.stem, target=str(path), timeout_s=timeout_s, max_rows=max_rows,
                 descriptions=descriptions)
        db.file = (path, file_identity(path))
        return db

    @classmethod
    def _open_url(
        cls, url: str, timeout_s: float, max_rows: int, descriptions: str | Path | None, name: str,
        schemas: tuple[str, ...] | None = None,
    ) -> "Database":
        url = with_installed_driver(url)
        parsed = make_url(url)
        backend = parsed.get_backend_name()
        connect_args: dict[str, Any] = {}
        driver = parsed.get_driver_name() if "+" in parsed.drivername else ""
        if backend in _MYSQL and not parsed.database:
            raise DatabaseNotFoundError(
                f"{parsed.render_as_string(hide_password=True)} names no database",
                hint="Add the database's name to the URL: mysql://user@host/shop")
        if backend not in _GUARDED:
            raise UnsupportedDatabaseError(
                f"sqlweave does not run queries on {backend} databases: it can hold only SQLite, DuckDB, "
                "PostgreSQL, MySQL and MariaDB read-only and to a time limit, and runs no query where it cannot")
        if backend == "duckdb":
            # Read-only file, and no access outside it: no file readers, COPY, ATTACH or extension installs. The
            # configuration is locked once each connection has its search path (_duckdb_session).
            connect_args["read_only"] = True
            connect_args["config"] = dict(_DUCKDB_CONFIG)
        connect_args.update(libpq_limits(parsed, timeout_s))
        if backend == "postgresql" and (driver == "psycopg" or (not driver and not _importable("psycopg2"))):
            # Every statement goes through the extended protocol, which runs exactly one statement: text such
            # as "COMMIT; DELETE ..." cannot end the read-only transaction and write after it.
            connect_args["prepare_threshold"] = 0
        try:
            engine = sa.create_engine(url, connect_args=connect_args, pool_pre_ping=backend != "duckdb")
        except (NoSuchModuleError, ModuleNotFoundError, ImportError) as err:
            raise MissingDependencyError(
                f"no driver installed for {backend!r} databases" + (f" ({driver})" if driver else ""),
                hint=_driver_hint(backend, driver),
            ) from err
        if backend == "postgresql":
            sa.event.listen(engine, "connect", _postgres_session_read_only)
            if schemas:
                sa.event.listen(engine, "connect", lambda con, _record: _postgres_search_path(con, schemas))
        if backend == "duckdb":
            sa.event.listen(engine, "connect", lambda con, _record: _duckdb_session(con, schemas))
        if backend in _MYSQL:
            sa.event.listen(engine, "connect", _mysql_session_read_only)
        db = cls(engine, name=name, target=url,
                 timeout_s=timeout_s, max_rows=max_rows, descriptions=descriptions)
        if backend == "duckdb" and parsed.database and parsed.database != ":memory:":
            db.file = (Path(parsed.database), file_identity(Path(parsed.database)))
        try:
            with engine.connect() as con:
                if backend in ("postgresql", "duckdb"):
                    db.schemas = _search_path(con)
        except SQLAlchemyError as err:
            # no such database or host: not found; a login refused: refused until the credentials change; a server
            # that refuses, is down or is full now: unavailable
            reason = unreachable_reason(err)
            kind = (DatabaseNotFoundError if reason in ABSENT else DatabaseLoginError if reason == LOGIN
                    else DatabaseUnavailableError)
            hint = connect_hint(reason)
            if backend == "duckdb" and "lock" in str(err).lower():
                hint = ("Another program has the file open for writing, and DuckDB then lets no other process "
                        "read it: close that program (or give sqlweave a copy of the file), then try again.")
            elif reason == ABSENT[0]:
                names = _server_databases(parsed, backend, connect_args)
                if names:
                    more = " and more" if len(names) > SHOWN_DATABASES else ""
                    hint = (f"{hint} The databases this user may connect to there: "
                            f"{', '.join(names[:SHOWN_DATABASES])}{more}.")
            engine.dispose()
            said = first_line(getattr(err, "orig", None) or err)  # the driver's words, not SQLAlchemy's wrapping
            raise kind(f"cannot connect to {db._safe_target()}: {said}", hint=hint) from err
        if schemas:
            missing = [s for s in schemas if s not in db.schemas]
            if missing:
                db.close()
                from .introspect import schemas_note, schemas_with_tables

                found = schemas_with_tables(engine)
                raise SchemaError(f"database {name!r} has no schema {', '.join(map(repr, missing))}",
                                  hint=f"Its schemas with tables: {schemas_note(found) or 'none'}.")
        return db

    # --- facts -------------------------------------------------------------------

    @property
    def backend(self) -> str:
        return self.engine.dialect.name

    @property
    def dialect(self) -> str:
        """The sqlglot dialect name for this database."""
        return _DIALECTS.get(self.backend, self.backend)

    def _safe_target(self) -> str:
        try:
            return make_url(self.target).render_as_string(hide_password=True)
        except ArgumentError:
            return self.target

    def schema(self, *, refresh: bool = False, progress: "Callable[[int, int], None] | None" = None) -> "Schema":
        """The introspected schema (read once, then cached on this handle, and kept on disk for the next process
        while the database does not change: :mod:`sqlweave.db.schema_cache`): under an access policy, only what
        the policy shows (every prompt, index, tool and door reads the schema from here). ``refresh`` reads it
        from the database again, whatever is kept; ``progress(done, total)`` is called as each table is read from
        the database (not from disk). A handle that lives on (a server's) checks at most every
        ``recheck_s`` seconds that the database's tables, columns, keys and grants have not changed, and reads the
        schema again when they have (new rows alone do not make it read again)."""
        if self._schema is not None and not refresh and self._structure_changed():
            self._schema = None
        if self._schema is None or refresh:
            from .schema_cache import read_schema

            self.schema_kept_since = None
            self._checked_at = time.monotonic()
            with self.one_connection():
                schema = read_schema(self, refresh=refresh, progress=progress)
            self._schema = self.policy.filter_schema(schema) if self.policy is not None else schema
        return self._schema

    def _structure_changed(self) -> bool:
        """Is it time to check the database's structure, and has it changed since the schema was read?"""
        if self.recheck_s is None or self.schema_structure is None \
                or time.monotonic() - self._checked_at < self.recheck_s:
            return False
        from .schema_cache import structure

        if not self._recheck_lock.acquire(blocking=False):
            return False  # another request is checking (or rebuilding) now
        try:
            self._checked_at = time.monotonic()
            if self._source_rebuilt() or self._file_replaced():
                return True
            now = structure(self)
            return now is not None and now != self.schema_structure
        finally:
            self._recheck_lock.release()

    def _source_rebuilt(self) -> bool:
        """Were this handle's data files changed, and have they held still since the last check? Then its DuckDB
        copy is built again and the handle reads the new one (files still being written wait for the next check;
        a copy that cannot be built leaves the old one in use, and is tried again at the next check)."""
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
            fresh = Database._open_url(f"duckdb:///{data_database(self.source)}", self.timeout_s, self.max_rows,
                                       None, self.name)
        except SqlweaveError:
            return False
        old = self.engine
        self.engine, self.target, self.file = fresh.engine, fresh.target, fresh.file
        self._source_built, self._source_seen = now, None
        old.dispose()
        return True

    def _file_replaced(self) -> bool:
        """Was this handle's SQLite or DuckDB file replaced by another since it was opened (written elsewhere
        and renamed over it)? Then the connections, which still read the old file, are let go: the next query
        opens the new one. A file that is gone changes nothing (what is open still answers)."""
        if self.file is None:
            return False
        path, opened = self.file
        now = file_identity(path)
        if now is None or now == opened:
            return False
        self.file = (path, now)
        # SQLite's pool keeps one connection per thread, which another request may be using: it is dropped, not
        # closed, and goes when unused; DuckDB's pool closes the connections no query holds
        self.engine.dispose(close=self.backend != "sqlite")
        return True

    def bind(self, params: Mapping[str, Any] | None) -> "Database":
        """A handle on the same connection pool, schema and knowledge whose row filters use ``params`` (one
        request's values, e.g. ``{"tenant": "acme"}``); this handle is unchanged.

        >>> from sqlweave.db.demo import demo_database_path
        >>> from sqlweave.policy import AccessPolicy
        >>> db = Database.open(demo_database_path(), policy=AccessPolicy.from_yaml(
        ...     "row_filters: {customers: 'country = :country'}"))
        >>> france = db.bind({"country": "France"}).execute("SELECT COUNT(*) FROM customers").rows
        >>> everyone = Database.open(demo_database_path()).execute("SELECT COUNT(*) FROM customers").rows
        >>> france < everyone
        True
        """
        import copy

        from ..knowledge import _knowledge_for, attach_knowledge

        checked = self.policy.check_params(params) if self.policy is not None else dict(params or {})
        if self.policy is not None or self._schema is not None:
            self.schema()  # read once, shared by every bound handle (and checked here for changes, not by them)
        clone = copy.copy(self)
        clone.params = checked
        clone.recheck_s = None  # one request's handle: this handle checks the structure, its clones take its schema
        known = _knowledge_for(self)  # what was attached or given as a YAML file (filtered when read)
        if known is not None:
            attach_knowledge(clone, known)
        return clone

    def check_bound(self) -> None:
        """Raise :class:`~sqlweave.errors.PolicyError` if a row filter's parameter is not bound on this handle
        (a door calls it before spending model time on a question)."""
        if self.policy is None:
            return
        missing = self.policy.missing_parameters(self.params)
        if missing:
            from ..errors import PolicyError

            raise PolicyError(f"the access policy's row filters need the parameters {', '.join(sorted(missing))}, "
                              f"which are not bound", hint="Bind them: engine.bind({...}), "
                              "engine.ask(question, params={...}) or --param NAME=VALUE.")

    def quote(self, identifier: str) -> str:
        return self.engine.dialect.identifier_preparer.quote_identifier(identifier)

    # --- execution -----------------------------------------------------------------

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None,
                read: str | None = None) -> QueryResult:
        """Run one read-only statement and return at most ``max_rows`` rows.

        ``read`` names the dialect the SQL is written in when it is not the database's (``"postgres"`` for a query
        brought from PostgreSQL to a SQLite file): it is translated first (:func:`~sqlweave.sql.transpile.
        from_dialect`), and the result's ``sql`` is what ran. So it is when an engine other than SQLite refuses
        ``x = (SELECT ...)`` because the subquery returned several rows: the query runs once more as
        ``x IN (SELECT ...)`` (:func:`~sqlweave.sql.transpile.subqueries_as_sets`); SQLite answers it from the
        subquery's first row, and its SQL is not changed.

        Raises:
            ConfigurationError: ``read`` names no dialect sqlglot knows (nothing runs).
            RefusedStatementError: the SQL is not a single read statement (nothing runs).
            QueryTimeoutError: the query ran past ``timeout_s`` and was interrupted.
            ExecutionError: the database rejected the query.
        """
        with reading_untrusted_text():  # the SQL's own text is not echoed by sqlglot on stderr
            if read and read != self.dialect:
                from ..sql.transpile import from_dialect

                sql = from_dialect(sql, read, self.dialect, schema=self.schema())
            return self._execute(sql, timeout_s=timeout_s, max_rows=max_rows)

    def _execute(self, sql: str, *, timeout_s: float | None, max_rows: int | None) -> QueryResult:
        original = sql
        ensure_read_only(sql, self.dialect)
        if self.dialect in ("postgres", "duckdb", "mysql") and (
                self._schema is not None or self.dialect == "mysql" or _MAY_NEED_SCHEMA.search(sql)):
            # What SQLite, where models learnt SQL, means by it: names with capitals are only found quoted on
            # PostgreSQL, so those the SQL left bare are quoted (on MySQL, a table is found only as spelt); a
            # double-quoted name that names nothing is a string; a LIKE over a date or a number reads its text;
            # text compared with a date reads as one, text summed or compared with a number as a number. None of
            # them changes SQL that would run, but a JSON value ordered against a number written as text, which
            # would compare text ('9' > '100').
            from ..sql.transpile import for_schema

            try:
                schema = self.schema()
            except SqlweaveError:  # the query runs as written; its own error, if any, says more
                schema = None
            if schema is not None:
                # Under an access policy the schema lacks the hidden names: one of them must be refused as a
                # name, not read as a string.
                fixed = for_schema(sql, schema, self.dialect, strings=self.policy is None)
                if fixed != sql:
                    ensure_read_only(fixed, self.dialect)
                    sql = fixed
        limit = self.timeout_s if timeout_s is None else timeout_s
        rows = self.max_rows if max_rows is None else max_rows
        try:
            return self._run(sql, original, timeout_s=limit, max_rows=rows)
        except ExecutionError as err:
            # ``x = (SELECT ...)`` whose subquery returned several rows: SQLite answers from the first row, the
            # others refuse; what the query means is ``x IN (SELECT ...)`` (run after that error only).
            from ..sql.transpile import MANY_ROWS, subqueries_as_sets

            if self.dialect == "sqlite" or not MANY_ROWS.search(err.message):
                raise
            as_sets = subqueries_as_sets(sql, self.dialect)
            if as_sets == sql:
                raise
            ensure_read_only(as_sets, self.dialect)
            return self._run(as_sets, as_sets, timeout_s=limit, max_rows=rows)

    def _run(self, sql: str, original: str, *, timeout_s: float, max_rows: int) -> QueryResult:
        """Run ``sql`` (under the access policy, if any); ``original`` is the caller's SQL, which errors and the
        result show when the policy rewrote it."""
        if self.policy is None:
            return self._exec(sql, timeout_s=timeout_s, max_rows=max_rows)
        # The access policy: refuse what reads a hidden part, read protected tables through filtered subqueries.
        sql = self.policy.enforce(sql, self.schema(), self.dialect, self.params)
        try:
            result = self._exec(sql, timeout_s=timeout_s, max_rows=max_rows)
        except DatabaseError as err:
            # The SQL that ran holds the filters and their values: errors keep the caller's SQL, and a message
            # that names a hidden part is withheld.
            err.details["sql"] = original
            if self.policy.mentions_hidden(err.message):
                raise type(err)("the database rejected the query (its message is withheld by the access policy)",
                                sql=original) from None
            raise
        return replace(result, sql=original)

    def trusted_read(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> QueryResult:
        """Run SQL that sqlweave wrote itself (introspection, value sampling, a benchmark's gold query): the
        read-only classifier is skipped, nothing else is. The connection stays read-only (a write fails in the
        database), the time limit and row cap hold, and under an access policy SQL that would read a hidden
        table or column or a row-filtered table is refused (:class:`~sqlweave.errors.AccessDeniedError`).
        Never pass it text from a user or a model: that goes through :meth:`execute`.

        >>> from sqlweave.db.demo import demo_database_path
        >>> Database.open(demo_database_path()).trusted_read("SELECT COUNT(*) FROM customers").rows[0][0] > 0
        True
        """
        if self.policy is not None:
            self.policy.guard_internal(sql, self.dialect)
        return self._exec(sql, timeout_s=self.timeout_s if timeout_s is None else timeout_s,
                          max_rows=self.max_rows if max_rows is None else max_rows)

    @contextmanager
    def one_connection(self) -> Iterator[sa.Connection]:
        """Run this thread's queries inside on one connection, given to the caller too (for SQLAlchemy's
        inspector): reading a schema sends hundreds of queries, and taking a connection from the pool costs a
        server a round trip each time (the check that it is still alive). Each query keeps its own read-only
        transaction and time limit.

        >>> from sqlweave.db.demo import demo_database_path
        >>> db = Database.open(demo_database_path())
        >>> with db.one_connection():
        ...     db.trusted_read("SELECT 1").rows == db.trusted_read("SELECT 2").rows
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
            raise self._unavailable(err) from err
        with conn:
            yield conn

    def _unavailable(self, err: SQLAlchemyError) -> DatabaseUnavailableError:
        """The typed error for a connection that failed or was lost: why, in words that name no host or user
        (a server's clients see it); the driver's own first line is kept in ``details["driver"]``."""
        reason = unreachable_reason(err)
        if reason == LOCKED:
            return DatabaseUnavailableError(f"cannot read the database: {reason}", driver=first_line(err),
                                            hint="Another program is writing to the file; try again when it has "
                                                 "finished.")
        if reason == LOGIN:  # a password changed or a user dropped since the database was opened
            return DatabaseLoginError(f"cannot reach the database: {reason}", driver=first_line(err))
        return DatabaseUnavailableError(f"cannot reach the database: {reason}", driver=first_line(err))

    def _exec(self, sql: str, *, timeout_s: float, max_rows: int) -> QueryResult:
        start = time.perf_counter()
        held = getattr(self._held, "conn", None)
        with self._lock, (nullcontext(held) if held is not None else self._connect()) as conn:
            raw = conn.connection.dbapi_connection
            cancel = self._arm_timeout(conn, raw, timeout_s)
            try:
                result = conn.exec_driver_sql(self._driver_text(sql))
                columns = tuple(result.keys()) if result.returns_rows else ()
                rows = result.fetchmany(max_rows + 1) if result.returns_rows else []
                result.close()
            except DBAPIError as err:
                if err.connection_invalidated:  # the server went away while the query ran
                    raise self._unavailable(err) from err
                if self.backend == "sqlite" and unreachable_reason(err.orig) == LOCKED:  # not the SQL's fault either
                    raise self._unavailable(err) from err
                if self._timed_out(err, start, timeout_s):
                    self.reads_cut_short += 1
                    raise QueryTimeoutError(f"query interrupted after {timeout_s:g} s", sql=sql) from err
                raise diagnose(self.backend, err.orig or err, sql=sql) from err
            except SQLAlchemyError as err:
                raise ExecutionError(first_line(err), sql=sql) from err
            finally:
                cancel()
                if self.backend == "postgresql" or self.backend in _MYSQL:
                    conn.rollback()
        truncated = len(rows) > max_rows
        rows = rows[:max_rows]
        return QueryResult(
            sql=sql,
            columns=columns,
            rows=tuple(tuple(r) for r in rows),
            truncated=truncated,
            elapsed_s=time.perf_counter() - start,
        )

    def _driver_text(self, sql: str) -> str:
        """``sql`` as the driver must receive it: drivers with ``%s``-style placeholders (psycopg, pymysql) read
        every ``%`` as one, even with no parameters (``LIKE '%x%'`` would fail), so it is doubled for them."""
        if "%" in sql and self.engine.dialect.paramstyle in ("format", "pyformat"):
            return sql.replace("%", "%%")
        return sql

    def _arm_timeout(self, conn: sa.Connection, raw: Any, timeout_s: float):
        """Make the running statement stop after ``timeout_s``; return a function that disarms it."""
        if self.backend == "sqlite":
            deadline = time.perf_counter() + timeout_s
            raw.set_progress_handler(lambda: 1 if time.perf_counter() > deadline else 0, 1000)
            return lambda: raw.set_progress_handler(None, 0)
        if self.backend == "postgresql":
            # SET TRANSACTION READ ONLY and SET LOCAL statement_timeout, in one statement (one round trip)
            conn.exec_driver_sql(f"SELECT set_config('transaction_read_only', 'on', true), "
                                 f"set_config('statement_timeout', '{int(timeout_s * 1000)}', true)")
            return lambda: None
        if self.backend in _MYSQL:
            # The server stops the statement (MariaDB: max_statement_time in seconds; MySQL: max_execution_time
            # in milliseconds, for SELECT), inside a transaction that cannot write.
            if getattr(self.engine.dialect, "is_mariadb", False):
                conn.exec_driver_sql(f"SET SESSION max_statement_time = {max(timeout_s, 0.001):.3f}")
            else:
                conn.exec_driver_sql(f"SET SESSION max_execution_time = {max(int(timeout_s * 1000), 1)}")
            conn.exec_driver_sql("START TRANSACTION READ ONLY")
            return lambda: None
        interrupt = getattr(raw, "interrupt", None)
        if interrupt is None:  # DuckDB via duckdb-engine wraps the connection
            interrupt = getattr(getattr(raw, "_ConnectionWrapper__c", None), "interrupt", None)
        if interrupt is None:
            return lambda: None
        timer = threading.Timer(timeout_s, interrupt)
        timer.daemon = True
        timer.start()
        return timer.cancel

    @staticmethod
    def _timed_out(err: Exception, start: float, timeout_s: float) -> bool:
        text = str(getattr(err, "orig", err)).lower()
        if "interrupt" in text or "statement timeout" in text or "canceling statement" in text \
                or "max_statement_time" in text or "maximum statement execution time" in text:
            return True
        return time.perf_counter() - start >= timeout_s

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Database({self._safe_target()!r}, dialect={self.dialect!r})"


#: SQLAlchemy's names for the MySQL family (a ``mariadb://`` URL, or a MySQL URL on a MariaDB server).
_MYSQL = ("mysql", "mariadb")

#: The databases of a server, by the catalog of each kind of server (templates and MySQL's own left out).
_SERVER_DATABASES = {
    "postgresql": ("SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate "
                   "AND has_database_privilege(datname, 'CONNECT') ORDER BY 1"),
    "mysql": ("SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT IN "
              "('information_schema', 'performance_schema', 'mysql', 'sys') ORDER BY 1"),
}
SHOWN_DATABASES = 12


def _server_databases(url: "sa.URL", backend: str, connect_args: dict[str, Any]) -> list[str]:
    """The names of the databases on the server of ``url`` that its user may connect to, one more than
    :data:`SHOWN_DATABASES` at most, for the hint of a database the server does not have (``[]`` when they cannot
    be listed; the query only reads the server's catalog)."""
    sql = _SERVER_DATABASES.get("mysql" if backend in _MYSQL else backend)
    if sql is None:
        return []
    for other in (("postgres", "template1") if backend == "postgresql" else ("",)):  # "": no database (None: kept)
        engine = sa.create_engine(url.set(database=other), connect_args=connect_args, poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as con:
                names = [str(r[0]) for r in con.exec_driver_sql(sql).fetchmany(SHOWN_DATABASES + 1)]
        except SQLAlchemyError:
            continue
        finally:
            engine.dispose()
        return names
    return []


#: The engines whose every query sqlweave runs read-only and stops at its time limit (SQLite URLs open as files).
_GUARDED = ("duckdb", "postgresql", *_MYSQL)

#: DuckDB settings for a read-only handle: nothing outside the database file is read, written or installed.
_DUCKDB_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}


def _schema_names(schemas: "Sequence[str]") -> tuple[str, ...]:
    """``schemas`` checked: non-empty names (a single string is a comma-separated list), each once.

    >>> _schema_names("sales, hr"), _schema_names(["sales", "sales"])
    (('sales', 'hr'), ('sales',))
    """
    if isinstance(schemas, str):
        schemas = schemas.split(",")
    names = [s.strip() if isinstance(s, str) else "" for s in schemas]
    if not names or not all(names):
        raise ConfigurationError(f"schemas must be names of schemas, e.g. ['sales', 'public'], not {list(schemas)!r}",
                                 hint="Leave schemas out to read the database's own search path.")
    return tuple(dict.fromkeys(names))


def _no_schemas(schemas: tuple[str, ...] | None, kind: str, why: str) -> None:
    if schemas:
        raise ConfigurationError(f"schemas are read on PostgreSQL and DuckDB databases, not {kind} ({why})",
                                 hint="Leave out --schemas (schemas=...).")


def libpq_limits(url: "sa.URL", timeout_s: float) -> dict[str, int]:
    """The connection settings that keep a PostgreSQL client (psycopg, psycopg2) from waiting on a server that does
    not answer: libpq waits for a host as long as TCP does (about two minutes) by default, and for the answer of a
    server the network lost as long as the system's keepalives say (two hours). With these a connection gives up
    after ``timeout_s``, and a lost one is noticed within 15 s past it. A URL's own settings win; other drivers and
    engines get none.

    >>> from sqlalchemy.engine import make_url
    >>> libpq_limits(make_url("postgresql+psycopg://h/db?connect_timeout=3"), 10)["keepalives_idle"]
    10
    >>> "connect_timeout" in libpq_limits(make_url("postgresql+psycopg://h/db?connect_timeout=3"), 10)
    False
    """
    driver = url.get_driver_name() if "+" in url.drivername else ""
    if url.get_backend_name() != "postgresql" or driver not in ("", "psycopg", "psycopg2"):
        return {}
    wanted = {"connect_timeout": max(2, round(timeout_s)), "keepalives": 1, "keepalives_idle": max(5, round(timeout_s)),
              "keepalives_interval": 5, "keepalives_count": 3}
    return {k: v for k, v in wanted.items() if k not in url.query}


def file_identity(path: Path) -> tuple[int, int] | None:
    """The device and inode of a file, which a file renamed over it does not share (None when it is gone)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _postgres_search_path(dbapi_connection: Any, schemas: tuple[str, ...]) -> None:
    """The schemas a PostgreSQL session looks a table's name up in, in order (``pg_catalog`` stays first)."""
    cur = dbapi_connection.cursor()
    try:
        cur.execute("SET search_path TO " + ", ".join(_quoted(s) for s in schemas))
    finally:
        cur.close()
    dbapi_connection.commit()


def _duckdb_session(dbapi_connection: Any, schemas: tuple[str, ...] | None) -> None:
    """A DuckDB session's search path (``schemas``, or every schema of the file with a table or view, ``main``
    first), then its configuration locked: a query cannot change a setting, such as external access."""
    if schemas is None:
        from .introspect import DUCKDB_SCHEMAS_WITH_TABLES

        found = [r[0] for r in dbapi_connection.execute(DUCKDB_SCHEMAS_WITH_TABLES).fetchall()]  # by name
        schemas = tuple(sorted(found, key=lambda s: s != "main")) if found and found != ["main"] else None
    else:  # a schema the file does not have is named by Database.open's error, not by a failed connection
        have = {r[0] for r in dbapi_connection.execute(
            "SELECT schema_name FROM duckdb_schemas() WHERE database_name = current_database()").fetchall()}
        schemas = tuple(s for s in schemas if s in have) or None
    if schemas:
        dbapi_connection.execute("SET search_path = " + _literal(",".join(_quoted(s) for s in schemas)))
    # The lock is the database instance's, which a second handle on the same file shares: locked once.
    if not dbapi_connection.execute("SELECT current_setting('lock_configuration')").fetchone()[0]:
        dbapi_connection.execute("SET lock_configuration = true")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _search_path(con: sa.Connection) -> tuple[str, ...]:
    """The existing schemas a session of PostgreSQL or DuckDB looks names up in, in order."""
    found = con.exec_driver_sql("SELECT current_schemas(false)").scalar()
    names = tuple(found or ())
    if con.dialect.name == "duckdb" and not names:
        return ("main",)  # DuckDB's own default, which current_schemas leaves out
    return names


#: Which extra (or package) provides each SQLAlchemy driver.
_DRIVER_PACKAGES = {
    ("postgresql", ""): "sqlweave[postgres]", ("postgresql", "psycopg"): "sqlweave[postgres]",
    ("postgresql", "psycopg2"): "psycopg2-binary", ("postgresql", "pg8000"): "pg8000",
    ("postgresql", "asyncpg"): "asyncpg", ("duckdb", ""): "sqlweave[duckdb]",
    ("mysql", ""): "sqlweave[mysql]", ("mysql", "pymysql"): "sqlweave[mysql]", ("mysql", "mysqldb"): "mysqlclient",
    ("mariadb", ""): "sqlweave[mysql]", ("mariadb", "pymysql"): "sqlweave[mysql]",
    ("mariadb", "mysqldb"): "mysqlclient",
}


#: SQL that a schema-aware form may change (LIKE, a double-quoted name, a date, a sum or a number a text column
#: may be compared with): only then is a schema that was not read yet introspected before the query runs.
_MAY_NEED_SCHEMA = re.compile(r'like|"|date|time|now\(|interval|avg|sum|\d', re.IGNORECASE)


def _driver_hint(backend: str, driver: str) -> str:
    package = _DRIVER_PACKAGES.get((backend, driver)) or _DRIVER_PACKAGES.get((backend, ""))
    if package is None:
        return f"Install the SQLAlchemy driver for {backend!r} databases."
    hint = f"Install it with: pip install '{package}'"
    if backend == "postgresql" and package != "sqlweave[postgres]":
        hint += " (or use a postgresql+psycopg:// URL with: pip install 'sqlweave[postgres]')"
    return hint


def with_installed_driver(url: str) -> str:
    """``url`` with the driver sqlweave's extras install when it names none and SQLAlchemy's default is missing:
    ``postgresql://`` becomes ``postgresql+psycopg://`` (the ``postgres`` extra installs psycopg 3, SQLAlchemy
    defaults to psycopg2), ``mysql://`` and ``mariadb://`` ``+pymysql`` (the ``mysql`` extra)."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "postgresql" and parsed.drivername == "postgresql" and not _importable("psycopg2") \
            and _importable("psycopg"):
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    if backend in _MYSQL and "+" not in parsed.drivername and not _importable("MySQLdb") and _importable("pymysql"):
        return parsed.set(drivername=f"{backend}+pymysql").render_as_string(hide_password=False)
    return url


def _importable(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _postgres_session_read_only(dbapi_connection: Any, _record: Any) -> None:
    """Make every transaction of a new PostgreSQL session read-only by default (a second line behind the
    per-query ``SET TRANSACTION READ ONLY``: a transaction the SQL text itself starts is read-only too)."""
    cur = dbapi_connection.cursor()
    try:
        cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        # String literals mean what they say (a backslash is a backslash): the access policy binds values as
        # literals, which must not depend on the server's configuration.
        cur.execute("SET standard_conforming_strings = on")
    finally:
        cur.close()
    dbapi_connection.commit()


def _mysql_session_read_only(dbapi_connection: Any, _record: Any) -> None:
    """Make every transaction of a new MySQL or MariaDB session read-only (a second line behind the per-query
    ``START TRANSACTION READ ONLY``)."""
    cur = dbapi_connection.cursor()
    try:
        cur.execute("SET SESSION TRANSACTION READ ONLY")
        # The server reads SQL as the classifier does (MySQL's default reading), whatever its configured
        # sql_mode: "x" is a string, not a name (no ANSI_QUOTES), || is OR (no PIPES_AS_CONCAT), a backslash
        # escapes in a string (no NO_BACKSLASH_ESCAPES), and no other dialect's syntax (no ORACLE mode).
        cur.execute("SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION'")
        # Dates and seconds since 1970 as SQLite reads them: in UTC.
        cur.execute("SET SESSION time_zone = '+00:00'")
    finally:
        cur.close()
    dbapi_connection.commit()
