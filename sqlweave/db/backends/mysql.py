"""MySQL and MariaDB: each query in ``START TRANSACTION READ ONLY`` under the server's statement time limit.

PyMySQL and mysqlclient give every error the server's (or the client library's) error number as ``e.args[0]``:
a stopped statement is 3024 (MySQL) or 1969 (MariaDB), an unknown column 1054, a refused login 1045, a host that
cannot be reached 2003 (whose cause, PyMySQL's ``original_exception``, says refused or timed out). Only the name
an error is about comes from its message, once the number has said what kind it is.

>>> MySQL().diagnose(RuntimeError(1054, "Unknown column 'agee' in 'field list'"), sql="SELECT agee").name
'agee'
"""

from __future__ import annotations

import re
import socket
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
from ..diagnose import ABSENT, CLOSED, FAILED, LOGIN, REFUSED, STARTING, TIMED_OUT, TOO_MANY, first_line
from .base import Backend, causes, importable

_FUNCTION = re.compile(r"FUNCTION (?:\S+\.)?(?P<name>[^\s.]+) does not exist")

#: Error numbers of what a query got wrong, and where the message names the object.
_KINDS: dict[int, tuple[type[ExecutionError], "re.Pattern[str]"]] = {
    1054: (UnknownColumnError, re.compile(r"Unknown column '(?:[^']*\.)?(?P<name>[^'.]+)'")),
    1146: (UnknownTableError, re.compile(r"Table '(?:[^']*\.)?(?P<name>[^'.]+)' doesn't exist")),
    1109: (UnknownTableError, re.compile(r"Unknown table '(?:[^']*\.)?(?P<name>[^'.]+)'")),
    1052: (AmbiguousColumnError, re.compile(r"Column '(?P<name>[^']+)' in .* is ambiguous")),
    1305: (UnknownFunctionError, _FUNCTION),
    1630: (UnknownFunctionError, _FUNCTION),
    1064: (DatabaseSyntaxError, re.compile(r"")),
}

#: Error numbers of a connection refused or lost, and how sqlweave says why.
_UNREACHABLE: dict[int, str] = {
    1044: LOGIN,  # ER_DBACCESS_DENIED_ERROR
    1045: LOGIN,  # ER_ACCESS_DENIED_ERROR
    1049: ABSENT[0],  # ER_BAD_DB_ERROR
    1040: TOO_MANY,  # ER_CON_COUNT_ERROR
    1203: TOO_MANY,  # ER_TOO_MANY_USER_CONNECTIONS
    1053: STARTING,  # ER_SERVER_SHUTDOWN
    2005: ABSENT[1],  # CR_UNKNOWN_HOST
    2006: CLOSED,  # CR_SERVER_GONE_ERROR
    2013: CLOSED,  # CR_SERVER_LOST
    2002: REFUSED,  # CR_CONNECTION_ERROR (a local socket)
}
CR_CONN_HOST_ERROR = 2003
#: The statement's time limit passed: MySQL's max_execution_time, MariaDB's max_statement_time.
_TIMED_OUT = (3024, 1969)
ER_SUBQUERY_NO_1_ROW = 1242


def errno(raw: BaseException | None) -> int | None:
    """The MySQL error number of ``raw`` (or of the driver's exception SQLAlchemy wraps in it), or ``None``.

    >>> errno(RuntimeError(1045, "Access denied"))
    1045
    """
    found = _driver_error(raw)
    return found.args[0] if found is not None else None


def _driver_error(raw: BaseException | None) -> BaseException | None:
    """The exception among ``raw`` and its causes that carries an error number (``args[0]``)."""
    return next((e for e in causes(raw) if e.args and isinstance(e.args[0], int)), None)


class MySQL(Backend):
    """A MySQL or MariaDB database (the URL names the one database read)."""

    names = ("mysql", "mariadb")
    dialect = "mysql"
    rolls_back = True
    url_needs_database = True
    one_namespace = ("MySQL and MariaDB", "the URL names the one database read: mysql://user@host/shop")
    schema_forms = "always"
    packages = {"": "sqlweave[mysql]", "pymysql": "sqlweave[mysql]", "mysqldb": "mysqlclient"}

    def installed_driver(self) -> str | None:
        return "pymysql" if not importable("MySQLdb") and importable("pymysql") else None

    def prepare(self, engine: sa.Engine, schemas: tuple[str, ...] | None) -> None:
        sa.event.listen(engine, "connect", _session_read_only)

    def server_databases_sql(self) -> str:
        return ("SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT IN "
                "('information_schema', 'performance_schema', 'mysql', 'sys') ORDER BY 1")

    def arm_timeout(self, conn: sa.Connection, raw: Any, timeout_s: float) -> Callable[[], None]:
        # The server stops the statement (MariaDB: max_statement_time in seconds; MySQL: max_execution_time in
        # milliseconds, for SELECT), inside a transaction that cannot write.
        if getattr(conn.dialect, "is_mariadb", False):
            conn.exec_driver_sql(f"SET SESSION max_statement_time = {max(timeout_s, 0.001):.3f}")
        else:
            conn.exec_driver_sql(f"SET SESSION max_execution_time = {max(int(timeout_s * 1000), 1)}")
        conn.exec_driver_sql("START TRANSACTION READ ONLY")
        return lambda: None

    def timed_out(self, raw: BaseException) -> bool:
        return errno(raw) in _TIMED_OUT

    def too_many_rows(self, raw: BaseException) -> bool:
        return errno(raw) == ER_SUBQUERY_NO_1_ROW

    def unreachable_reason(self, raw: BaseException | None) -> str:
        code = errno(raw)
        if code == CR_CONN_HOST_ERROR:  # the socket's own error says why
            cause = getattr(_driver_error(raw), "original_exception", None)
            if isinstance(cause, ConnectionRefusedError):
                return REFUSED
            if isinstance(cause, socket.gaierror):
                return ABSENT[1]
            if isinstance(cause, (TimeoutError, socket.timeout)):
                return TIMED_OUT
            return FAILED
        return _UNREACHABLE.get(code or 0, FAILED)

    def message(self, raw: BaseException) -> str:
        found = _driver_error(raw)
        if found is not None and len(found.args) == 2:
            return str(found.args[1])  # PyMySQL's text is "(1146, \"Table ... doesn't exist\")": the message alone
        return first_line(raw)

    def error_kind(self, raw: BaseException, text: str) -> tuple[type[ExecutionError], str | None] | None:
        rule = _KINDS.get(errno(raw) or 0)
        if rule is None:
            return None
        cls, pattern = rule
        m = pattern.search(text)
        return cls, (m.groupdict().get("name") if m else None)


def _session_read_only(dbapi_connection: Any, _record: Any) -> None:
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
