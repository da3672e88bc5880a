"""PostgreSQL: sessions whose transactions are read-only, each query in its own with a ``statement_timeout``.

psycopg (3) and psycopg2 give every server error its SQLSTATE (``e.sqlstate``, ``e.pgcode``): a stopped statement
is ``57014``, an unknown column ``42703``, a login refused ``28P01``. What libpq finds before the server answers (a
host it cannot resolve, a refused or timed-out connection) has no SQLSTATE and only text: :func:`libpq_reason`
reads it, the one place that does.

>>> PostgreSQL().dialect
'postgres'
"""

from __future__ import annotations

import re
from typing import Any, Callable

import sqlalchemy as sa

from ...errors import (
    AmbiguousColumnError,
    DatabaseSyntaxError,
    ExecutionError,
    UnknownColumnError,
    UnknownFunctionError,
    UnknownTableError,
)
from ..diagnose import ABSENT, CLOSED, FAILED, LOGIN, REFUSED, STARTING, TIMED_OUT, TOO_MANY
from .base import Backend, causes, importable

#: SQLSTATE codes of what a query got wrong; the message's first quoted (or dotted) name says which object.
_KINDS: dict[str, type[ExecutionError]] = {
    "42703": UnknownColumnError,  # undefined_column
    "42P01": UnknownTableError,  # undefined_table
    "42702": AmbiguousColumnError,  # ambiguous_column
    "42883": UnknownFunctionError,  # undefined_function
    "42601": DatabaseSyntaxError,  # syntax_error
}
_NAME = re.compile(r'^(?:column reference|column|relation|function) (?:"(?P<quoted>[^"]+)"|(?P<bare>[^\s(]+))')

#: SQLSTATE codes of a connection refused or lost, and how sqlweave says why.
_UNREACHABLE: dict[str, str] = {
    "3D000": ABSENT[0],  # invalid_catalog_name: no such database
    "28000": LOGIN,  # invalid_authorization_specification: no such role, no pg_hba.conf entry, no login
    "28P01": LOGIN,  # invalid_password
    "53300": TOO_MANY,  # too_many_connections
    "57P03": STARTING,  # cannot_connect_now: starting up, in recovery
    "57P01": CLOSED, "57P02": CLOSED,  # admin_shutdown, crash_shutdown
    "08006": CLOSED, "08003": CLOSED,  # connection_failure, connection_does_not_exist
}
QUERY_CANCELED = "57014"
CARDINALITY_VIOLATION = "21000"  # more than one row returned by a subquery used as an expression

#: What libpq says, in words only, about a connection it could not make before any server answered.
_LIBPQ = (
    (re.compile(r"refused", re.I), REFUSED),
    (re.compile(r"timeout expired|timed out", re.I), TIMED_OUT),
    (re.compile(r"translate host|name or service|nodename|unknown host|name resolution|resolve host", re.I),
     ABSENT[1]),
    (re.compile(r"server closed the connection|terminating connection|connection is closed|broken pipe|"
                r"reset by peer|lost connection", re.I), CLOSED),
    (re.compile(r"password|authenticat|no pg_hba|role \S+ does not exist|not permitted to log in", re.I), LOGIN),
    (re.compile(r'database "[^"]+" does not exist', re.I), ABSENT[0]),
    (re.compile(r"too many (connections|clients)", re.I), TOO_MANY),
    (re.compile(r"starting up|shutting down|recovery mode", re.I), STARTING),
)


def sqlstate(raw: BaseException | None) -> str | None:
    """The SQLSTATE of ``raw`` (or of the driver's exception SQLAlchemy wraps in it), or ``None``.

    >>> import psycopg.errors
    >>> sqlstate(psycopg.errors.lookup("42703")("column x does not exist"))
    '42703'
    """
    for err in causes(raw):
        code = getattr(err, "sqlstate", None) or getattr(err, "pgcode", None)  # psycopg 3, psycopg2
        if isinstance(code, str):
            return code
    return None


def libpq_reason(text: str) -> str:
    """Why libpq could not make a connection, from its message: failures before a server answers have no SQLSTATE
    (and a server's refusal at start-up reaches psycopg as text too).

    >>> libpq_reason('connection to server at "10.0.0.5", port 5432 failed: Connection refused')
    'the connection was refused'
    >>> libpq_reason("something else")
    'the connection failed'
    """
    for pattern, reason in _LIBPQ:
        if pattern.search(text):
            return reason
    return FAILED


def libpq_limits(url: sa.URL, timeout_s: float) -> dict[str, int]:
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


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class PostgreSQL(Backend):
    """A PostgreSQL database: read-only sessions, a time limit per statement, one statement per call."""

    names = ("postgresql",)
    dialect = "postgres"
    has_search_path = True
    rolls_back = True
    schema_forms = "when-needed"
    tables_by_schema_sql = ("SELECT table_schema, count(*) FROM information_schema.tables WHERE table_schema NOT IN "
                            "('pg_catalog', 'information_schema') AND substr(table_schema, 1, 3) <> 'pg_' "
                            "GROUP BY 1 ORDER BY 1")
    packages = {"": "sqlweave[postgres]", "psycopg": "sqlweave[postgres]", "psycopg2": "psycopg2-binary",
                "pg8000": "pg8000", "asyncpg": "asyncpg"}

    def installed_driver(self) -> str | None:
        # the postgres extra installs psycopg 3; SQLAlchemy defaults to psycopg2
        return "psycopg" if not importable("psycopg2") and importable("psycopg") else None

    def driver_hint(self, driver: str) -> str:
        hint = super().driver_hint(driver)
        if self.packages.get(driver, self.packages[""]) != "sqlweave[postgres]":
            hint += " (or use a postgresql+psycopg:// URL with: pip install 'sqlweave[postgres]')"
        return hint

    def connect_args(self, url: sa.URL, timeout_s: float) -> dict[str, Any]:
        args: dict[str, Any] = dict(libpq_limits(url, timeout_s))
        driver = url.get_driver_name() if "+" in url.drivername else ""
        if driver == "psycopg":
            # Every statement goes through the extended protocol, which runs exactly one statement: text such
            # as "COMMIT; DELETE ..." cannot end the read-only transaction and write after it.
            args["prepare_threshold"] = 0
        return args

    def prepare(self, engine: sa.Engine, schemas: tuple[str, ...] | None) -> None:
        sa.event.listen(engine, "connect", _session_read_only)
        if schemas:
            sa.event.listen(engine, "connect", lambda con, _record: _search_path(con, schemas))

    def search_path(self, con: sa.Connection) -> tuple[str, ...]:
        return tuple(con.exec_driver_sql("SELECT current_schemas(false)").scalar() or ())

    def server_databases_sql(self) -> str:
        return ("SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate "
                "AND has_database_privilege(datname, 'CONNECT') ORDER BY 1")

    def catalog_databases(self) -> tuple[str, ...]:
        return ("postgres", "template1")

    def arm_timeout(self, conn: sa.Connection, raw: Any, timeout_s: float) -> Callable[[], None]:
        # SET TRANSACTION READ ONLY and SET LOCAL statement_timeout, in one statement (one round trip)
        conn.exec_driver_sql(f"SELECT set_config('transaction_read_only', 'on', true), "
                             f"set_config('statement_timeout', '{int(timeout_s * 1000)}', true)")
        return lambda: None

    def timed_out(self, raw: BaseException) -> bool:
        return sqlstate(raw) == QUERY_CANCELED

    def too_many_rows(self, raw: BaseException) -> bool:
        return sqlstate(raw) == CARDINALITY_VIOLATION

    def unreachable_reason(self, raw: BaseException | None) -> str:
        code = sqlstate(raw)
        if code in _UNREACHABLE:
            return _UNREACHABLE[code]
        return libpq_reason(str(getattr(raw, "orig", None) or raw or ""))

    def error_kind(self, raw: BaseException, text: str) -> tuple[type[ExecutionError], str | None] | None:
        cls = _KINDS.get(sqlstate(raw) or "")
        if cls is None:
            return None
        m = _NAME.search(text)
        return cls, (m.group("quoted") or m.group("bare")) if m else None


def _session_read_only(dbapi_connection: Any, _record: Any) -> None:
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


def _search_path(dbapi_connection: Any, schemas: tuple[str, ...]) -> None:
    """The schemas a PostgreSQL session looks a table's name up in, in order (``pg_catalog`` stays first)."""
    cur = dbapi_connection.cursor()
    try:
        cur.execute("SET search_path TO " + ", ".join(_quoted(s) for s in schemas))
    finally:
        cur.close()
    dbapi_connection.commit()
