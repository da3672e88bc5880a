"""A database as sqlweave serves it: a read-only connection, the schema it holds, its domain knowledge and its
access policy, composed behind the small surface pipelines, tools and doors call (:mod:`sqlweave.db.protocol`).

The connection (:class:`~sqlweave.db.connection.Connection`) connects and reads; this class shows only what the
policy shows, enforces it on every query, brings SQL a model wrote to the engine's reading of it, and gives each
request a handle bound to its parameters (:meth:`Database.bind`) over the same connection pool, schema and
knowledge.

>>> from sqlweave.db.demo import demo_database_path
>>> db = Database.open(demo_database_path())
>>> db.dialect, db.execute("SELECT COUNT(*) FROM products").rows
('sqlite', ((40,),))
"""

from __future__ import annotations

import re
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from .db.connection import Connection, QueryResult
from .db.held_schema import HeldSchema
from .db.opening import schema_names
from .errors import DatabaseError, ExecutionError, SqlweaveError
from .sql.classify import ensure_read_only
from .sql.quiet import reading_untrusted_text

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    import sqlalchemy as sa

    from .knowledge import Knowledge
    from .policy import AccessPolicy
    from .policy.opening import PolicySpec
    from .schema import Schema


class Database:
    """A read-only database with its schema, knowledge and access policy.

    Use :meth:`open` with a file path or a SQLAlchemy URL. ``timeout_s`` bounds every query's wall-clock time and
    ``max_rows`` the rows returned. ``policy`` is the database's :class:`~sqlweave.policy.AccessPolicy`:
    :meth:`schema` shows only what it shows, :meth:`execute` enforces it, and :meth:`bind` gives a handle whose
    row filters see one request's parameters.
    """

    def __init__(self, connection: Connection, *, timeout_s: float = 10.0, max_rows: int = 1000,
                 descriptions: str | Path | None = None, policy: "AccessPolicy | None" = None,
                 knowledge: "Knowledge | None" = None, keys_from_data: bool = True,
                 held: HeldSchema | None = None, params: Mapping[str, Any] | None = None) -> None:
        self.connection = connection
        self.timeout_s = timeout_s
        self.max_rows = max_rows
        self.descriptions = Path(descriptions) if descriptions else None
        self.policy = policy
        #: read keys from the data when the database declares no foreign key (see :meth:`open`)
        self.keys_from_data = keys_from_data
        #: the row filters' parameters bound for this handle (see :meth:`bind`)
        self.params: dict[str, Any] = dict(params or {})
        self._held = held if held is not None else HeldSchema()
        self._knowledge = knowledge
        self._file_knowledge: tuple[float, "Knowledge"] | None = None
        self._knowledge_lock = threading.Lock()

    # --- opening ---------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        target: str | Path,
        *,
        timeout_s: float = 10.0,
        max_rows: int = 1000,
        descriptions: str | Path | None = None,
        policy: "PolicySpec" = None,
        keys_from_data: bool = True,
        schemas: "Sequence[str] | None" = None,
        knowledge: "str | Path | Knowledge | None" = None,
    ) -> "Database":
        """Open ``target`` (a SQLite/DuckDB file path, CSV/Parquet/JSON/Excel files or a SQLAlchemy URL) read-only.

        ``policy`` is an :class:`~sqlweave.policy.AccessPolicy`, its mapping, its YAML file or several of them;
        the ``policy:`` section of the knowledge (``knowledge``, or a YAML knowledge file given as
        ``descriptions``) applies as well: all are merged here, once (:func:`~sqlweave.policy.resolve_policy`).
        ``knowledge`` is the domain knowledge (:class:`~sqlweave.knowledge.Knowledge` or its file; give it or
        ``descriptions``, not both). With ``keys_from_data``, a database that declares no foreign key gets, in
        the schema sqlweave reads, the keys its names and values show
        (:func:`~sqlweave.db.infer_keys.infer_database_keys`; queries of at most 20 s in all, nothing written).

        ``schemas`` names the schemas of a PostgreSQL or DuckDB database whose tables are read, in the order a
        table's name is looked up (their search path): ``schemas=["sales", "hr"]`` reads both, and a query's
        ``orders`` is ``sales.orders``; a table whose name an earlier schema already has is not read. By default
        PostgreSQL reads the connection's search path (``public``, unless the server or the URL's
        ``options=-csearch_path=...`` says otherwise) and DuckDB every schema of the file, ``main`` first.
        """
        from .knowledge import Knowledge, load_knowledge
        from .policy.opening import resolve_policy

        known: Knowledge | None = None
        if knowledge is not None:
            if descriptions is not None:
                from .errors import ConfigurationError

                raise ConfigurationError("both a descriptions file and a knowledge file were given",
                                         hint="Put the descriptions in the knowledge file (its tables: section).")
            known = knowledge if isinstance(knowledge, Knowledge) else load_knowledge(knowledge)
            descriptions = known.source
        # a malformed policy fails before the database opens
        merged = resolve_policy(policy, descriptions=descriptions, knowledge=known)
        connection = Connection.open(target, timeout_s=timeout_s,
                                     schemas=schema_names(schemas) if schemas is not None else None)
        return cls(connection, timeout_s=timeout_s, max_rows=max_rows, descriptions=descriptions, policy=merged,
                   knowledge=known, keys_from_data=keys_from_data)

    # --- facts -------------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.connection.name

    @property
    def target(self) -> str:
        return self.connection.target

    @property
    def engine(self) -> "sa.Engine":
        return self.connection.engine

    @property
    def backend(self) -> str:
        """SQLAlchemy's name of the engine: ``sqlite``, ``duckdb``, ``postgresql``, ``mysql`` or ``mariadb``."""
        return self.connection.backend

    @property
    def dialect(self) -> str:
        """The sqlglot dialect name for this database."""
        return self.connection.dialect

    @property
    def schemas(self) -> tuple[str, ...]:
        """The schemas whose tables are read, in lookup order (``()``: the database's one namespace)."""
        return self.connection.schemas

    @property
    def file(self) -> "tuple[Path, tuple[int, int] | None] | None":
        return self.connection.file

    @property
    def reads_cut_short(self) -> int:
        """Queries of sqlweave's own that ran out of time (on this database's connection)."""
        return self.connection.reads_cut_short

    @property
    def recheck_s(self) -> float | None:
        """Seconds after which a long-lived handle (a server's) checks, by one query, that the database's tables
        and columns are still those of the schema it holds, and reads it again if not; ``None``: never."""
        return self._held.recheck_s

    @recheck_s.setter
    def recheck_s(self, value: float | None) -> None:
        self._held.recheck_s = value

    @property
    def schema_kept_since(self) -> float | None:
        """When the schema this handle uses was read, if it came from disk (None: read by this handle)."""
        return self._held.kept_since

    @schema_kept_since.setter
    def schema_kept_since(self, value: float | None) -> None:
        self._held.kept_since = value

    @property
    def schema_structure(self) -> str | None:
        """The database's structure (:func:`~sqlweave.db.schema_cache.structure`) when its schema was read."""
        return self._held.structure

    @schema_structure.setter
    def schema_structure(self, value: str | None) -> None:
        self._held.structure = value

    @property
    def knowledge(self) -> "Knowledge | None":
        """The domain knowledge of this database, unfiltered: what was given (or attached by setting it), else its
        descriptions file when that is a YAML knowledge file (read once, again when it changes), else ``None``.
        Pipelines read it through :func:`~sqlweave.knowledge.knowledge_for`, which the policy filters."""
        if self._knowledge is not None or self.descriptions is None:
            return self._knowledge
        from .knowledge import YAML_SUFFIXES, load_knowledge

        path = self.descriptions
        if path.suffix.lower() not in YAML_SUFFIXES:
            return None
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return None
        with self._knowledge_lock:
            if self._file_knowledge is None or self._file_knowledge[0] != mtime:
                self._file_knowledge = (mtime, load_knowledge(path))
            return self._file_knowledge[1]

    @knowledge.setter
    def knowledge(self, value: "Knowledge | None") -> None:
        self._knowledge = value

    def quote(self, identifier: str) -> str:
        return self.connection.quote(identifier)

    def schema(self, *, refresh: bool = False, progress: "Callable[[int, int], None] | None" = None) -> "Schema":
        """The introspected schema (read once, then held by this handle, and kept on disk for the next process
        while the database does not change: :mod:`sqlweave.db.schema_cache`): under an access policy, only what
        the policy shows (every prompt, index, tool and door reads the schema from here). ``refresh`` reads it
        from the database again, whatever is kept; ``progress(done, total)`` is called as each table is read from
        the database (not from disk). A handle that lives on (a server's) checks at most every
        ``recheck_s`` seconds that the database's tables, columns, keys and grants have not changed, and reads the
        schema again when they have (new rows alone do not make it read again)."""
        return self._held.get(self, refresh=refresh, progress=progress,
                              shown=self.policy.filter_schema if self.policy is not None else None)

    # --- one request's handle ----------------------------------------------------------------------

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
        checked = self.policy.check_params(params) if self.policy is not None else dict(params or {})
        if self.policy is not None or self._held.value is not None:
            self.schema()  # read once, shared by every bound handle (and checked here for changes, not by them)
        # one request's handle: this handle checks the structure, its bound handles take its schema
        return Database(self.connection, timeout_s=self.timeout_s, max_rows=self.max_rows,
                        descriptions=self.descriptions, policy=self.policy, knowledge=self.knowledge,
                        keys_from_data=self.keys_from_data, held=self._held.snapshot(), params=checked)

    def check_bound(self) -> None:
        """Raise :class:`~sqlweave.errors.PolicyError` if a row filter's parameter is not bound on this handle
        (a door calls it before spending model time on a question)."""
        if self.policy is None:
            return
        missing = self.policy.missing_parameters(self.params)
        if missing:
            from .errors import PolicyError

            raise PolicyError(f"the access policy's row filters need the parameters {', '.join(sorted(missing))}, "
                              f"which are not bound", hint="Bind them: engine.bind({...}), "
                              "engine.ask(question, params={...}) or --param NAME=VALUE.")

    # --- execution ---------------------------------------------------------------------------------

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
                from .sql.transpile import from_dialect

                sql = from_dialect(sql, read, self.dialect, schema=self.schema())
            return self._execute(sql, timeout_s=timeout_s, max_rows=max_rows)

    def _execute(self, sql: str, *, timeout_s: float | None, max_rows: int | None) -> QueryResult:
        original = sql
        ensure_read_only(sql, self.dialect)
        sql = self._in_engine_reading(sql)
        limit = self.timeout_s if timeout_s is None else timeout_s
        rows = self.max_rows if max_rows is None else max_rows
        try:
            return self._run(sql, original, timeout_s=limit, max_rows=rows)
        except ExecutionError as err:
            # ``x = (SELECT ...)`` whose subquery returned several rows: SQLite answers from the first row, the
            # others refuse; what the query means is ``x IN (SELECT ...)`` (run after that error only).
            kind = self.connection.kind
            if not kind.refuses_many_rows or err.__cause__ is None or not kind.too_many_rows(err.__cause__):
                raise
            from .sql.transpile import subqueries_as_sets

            as_sets = subqueries_as_sets(sql, self.dialect)
            if as_sets == sql:
                raise
            ensure_read_only(as_sets, self.dialect)
            return self._run(as_sets, as_sets, timeout_s=limit, max_rows=rows)

    def _in_engine_reading(self, sql: str) -> str:
        """What SQLite, where models learnt SQL, means by ``sql``, for the other engines: names with capitals are
        only found quoted on PostgreSQL, so those the SQL left bare are quoted (on MySQL, a table is found only as
        spelt); a double-quoted name that names nothing is a string; a LIKE over a date or a number reads its
        text; text compared with a date reads as one, text summed or compared with a number as a number. None of
        them changes SQL that would run, but a JSON value ordered against a number written as text, which would
        compare text ('9' > '100')."""
        forms = self.connection.kind.schema_forms
        if forms == "never" or (forms == "when-needed" and self._held.value is None
                                and not _MAY_NEED_SCHEMA.search(sql)):
            return sql
        from .sql.transpile import for_schema

        try:
            schema = self.schema()
        except SqlweaveError:  # the query runs as written; its own error, if any, says more
            return sql
        # Under an access policy the schema lacks the hidden names: one of them must be refused as a name, not
        # read as a string.
        fixed = for_schema(sql, schema, self.dialect, strings=self.policy is None)
        if fixed != sql:
            ensure_read_only(fixed, self.dialect)
        return fixed

    def _run(self, sql: str, original: str, *, timeout_s: float, max_rows: int) -> QueryResult:
        """Run ``sql`` (under the access policy, if any); ``original`` is the caller's SQL, which errors and the
        result show when the policy rewrote it."""
        if self.policy is None:
            return self.connection.run(sql, timeout_s=timeout_s, max_rows=max_rows)
        # The access policy: refuse what reads a hidden part, read protected tables through filtered subqueries.
        sql = self.policy.enforce(sql, self.schema(), self.dialect, self.params)
        try:
            result = self.connection.run(sql, timeout_s=timeout_s, max_rows=max_rows)
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
        return self.connection.run(sql, timeout_s=self.timeout_s if timeout_s is None else timeout_s,
                                   max_rows=self.max_rows if max_rows is None else max_rows)

    def one_connection(self) -> "AbstractContextManager[sa.Connection]":
        """Run this thread's queries inside on one connection (:meth:`~sqlweave.db.connection.Connection.
        one_connection`), given to the caller too."""
        return self.connection.one_connection()

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Database({self.connection.safe_target()!r}, dialect={self.dialect!r})"


#: SQL that a schema-aware form may change (LIKE, a double-quoted name, a date, a sum or a number a text column
#: may be compared with): only then is a schema that was not read yet introspected before the query runs.
_MAY_NEED_SCHEMA = re.compile(r'like|"|date|time|now\(|interval|avg|sum|\d', re.IGNORECASE)

__all__ = ["Database", "QueryResult"]
