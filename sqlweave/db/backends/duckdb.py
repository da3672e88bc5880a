"""DuckDB: a file opened ``read_only`` with no access outside it, stopped by the connection's ``interrupt()``.

DuckDB raises one exception class per kind of failure (``InterruptException`` for a stopped statement,
``CatalogException``, ``BinderException``, ``ParserException`` for what a query got wrong, ``IOException`` for a
file that cannot be opened). Within a class its message alone says which object failed and, for an
``IOException``, whether the file is locked or no DuckDB file: :func:`duckdb_error_kind` and
:func:`duckdb_open_failure` read it, the only two places that do.

>>> import duckdb
>>> try:
...     duckdb.connect().execute("SELECT * FROM nowhere")
... except duckdb.Error as raw:
...     DuckDB().diagnose(raw, sql="SELECT * FROM nowhere").name
'nowhere'
"""

from __future__ import annotations

import re
import threading
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
from ..diagnose import ABSENT, FAILED, LOCKED
from .base import Backend, causes

#: DuckDB settings for a read-only handle: nothing outside the database file is read, written or installed.
DUCKDB_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}

#: The schemas of a DuckDB file that hold a table or a view, each with their number.
DUCKDB_SCHEMAS_WITH_TABLES = (
    "SELECT schema_name, count(*) FROM (SELECT schema_name FROM duckdb_tables() WHERE database_name = "
    "current_database() UNION ALL SELECT schema_name FROM duckdb_views() WHERE database_name = current_database() "
    "AND NOT internal) GROUP BY 1 ORDER BY 1")

_Kind = tuple[type[ExecutionError], "re.Pattern[str]"]

#: Within each exception class, what its message says (its class name, then the rules).
_KINDS: dict[str, tuple[_Kind, ...]] = {
    "BinderException": (
        (UnknownColumnError, re.compile(r'Referenced column "(?P<name>[^"]+)" not found')),
        (UnknownColumnError, re.compile(r'(?:Table|Values list) "[^"]+" does not have a column named '
                                        r'"(?P<name>[^"]+)"')),
        (UnknownTableError, re.compile(r'Referenced table "(?P<name>[^"]+)" not found')),
        (AmbiguousColumnError, re.compile(r'Ambiguous reference to column name "(?P<name>[^"]+)"')),
        (UnknownFunctionError, re.compile(r"No function matches the given name and argument types '(?P<name>[^(']+)")),
    ),
    "CatalogException": (
        (UnknownTableError, re.compile(r"(?:Table|View|Table Function) with name (?P<name>\S+) does not exist")),
        (UnknownFunctionError, re.compile(r"(?:Scalar |Aggregate )?Function with name (?P<name>\S+) does not exist")),
    ),
}


def _classes(raw: BaseException) -> set[str]:
    return {c.__name__ for c in type(raw).__mro__}


def duckdb_error_kind(raw: BaseException, text: str) -> tuple[type[ExecutionError], str | None] | None:
    """Which typed error DuckDB's ``raw`` is: a ``ParserException`` is a syntax error; a ``BinderException`` or
    ``CatalogException`` names a column, table or function whose kind only its message ``text`` says.

    >>> import duckdb
    >>> try:
    ...     duckdb.connect().execute("SELECT agee FROM range(1)")
    ... except duckdb.Error as raw:
    ...     duckdb_error_kind(raw, str(raw))
    (<class 'sqlweave.errors.UnknownColumnError'>, 'agee')
    """
    names = _classes(raw)
    if "ParserException" in names:
        return DatabaseSyntaxError, None
    for cls_name, rules in _KINDS.items():
        if cls_name in names:
            for cls, pattern in rules:
                m = pattern.search(text)
                if m:
                    return cls, m.group("name")
    return None


def duckdb_open_failure(raw: BaseException | None) -> str:
    """Why DuckDB could not open a file: its ``IOException`` says, in its message alone, whether another process
    holds the file's lock or the file is no DuckDB database.

    >>> import duckdb, tempfile, pathlib
    >>> bad = pathlib.Path(tempfile.mkdtemp()) / "x.duckdb"
    >>> _ = bad.write_bytes(b"no database" * 400)
    >>> try:
    ...     duckdb.connect(str(bad), read_only=True)
    ... except duckdb.Error as raw:
    ...     duckdb_open_failure(raw)
    'the file is not a database of its kind'
    """
    found = next((e for e in causes(raw) if "IOException" in _classes(e)), None)
    if found is None:
        return FAILED
    text = str(found)
    if "Could not set lock" in text:
        return LOCKED
    if "not a valid DuckDB database" in text:
        return ABSENT[2]
    return FAILED


class DuckDB(Backend):
    """A DuckDB file, read-only, with no file readers, COPY, ATTACH or extension installs."""

    names = ("duckdb",)
    dialect = "duckdb"
    has_search_path = True
    schema_forms = "when-needed"
    pings = False
    url_names_file = True
    packages = {"": "sqlweave[duckdb]"}
    tables_by_schema_sql = DUCKDB_SCHEMAS_WITH_TABLES

    def connect_args(self, url: sa.URL, timeout_s: float) -> dict[str, Any]:
        # The configuration is locked once each connection has its search path (duckdb_session).
        return {"read_only": True, "config": dict(DUCKDB_CONFIG)}

    def prepare(self, engine: sa.Engine, schemas: tuple[str, ...] | None) -> None:
        sa.event.listen(engine, "connect", lambda con, _record: duckdb_session(con, schemas))

    def search_path(self, con: sa.Connection) -> tuple[str, ...]:
        found = con.exec_driver_sql("SELECT current_schemas(false)").scalar()
        return tuple(found or ()) or ("main",)  # DuckDB's own default, which current_schemas leaves out

    def arm_timeout(self, conn: sa.Connection, raw: Any, timeout_s: float) -> Callable[[], None]:
        interrupt = getattr(raw, "interrupt", None)
        if interrupt is None:  # duckdb-engine wraps the connection
            interrupt = getattr(getattr(raw, "_ConnectionWrapper__c", None), "interrupt", None)
        if interrupt is None:
            return lambda: None
        timer = threading.Timer(timeout_s, interrupt)
        timer.daemon = True
        timer.start()
        return timer.cancel

    def timed_out(self, raw: BaseException) -> bool:
        return any("InterruptException" in _classes(e) for e in causes(raw))

    def too_many_rows(self, raw: BaseException) -> bool:
        # An InvalidInputException says so in its message alone (read here, the one place)
        return any("InvalidInputException" in _classes(e) and "More than one row returned by a subquery" in str(e)
                   for e in causes(raw))

    def unreachable_reason(self, raw: BaseException | None) -> str:
        return duckdb_open_failure(raw)

    def error_kind(self, raw: BaseException, text: str) -> tuple[type[ExecutionError], str | None] | None:
        return duckdb_error_kind(raw, text)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def duckdb_session(dbapi_connection: Any, schemas: tuple[str, ...] | None) -> None:
    """A DuckDB session's search path (``schemas``, or every schema of the file with a table or view, ``main``
    first), then its configuration locked: a query cannot change a setting, such as external access."""
    if schemas is None:
        found = [r[0] for r in dbapi_connection.execute(DUCKDB_SCHEMAS_WITH_TABLES).fetchall()]  # by name
        schemas = tuple(sorted(found, key=lambda s: s != "main")) if found and found != ["main"] else None
    else:  # a schema the file does not have is named by the opening's error, not by a failed connection
        have = {r[0] for r in dbapi_connection.execute(
            "SELECT schema_name FROM duckdb_schemas() WHERE database_name = current_database()").fetchall()}
        schemas = tuple(s for s in schemas if s in have) or None
    if schemas:
        dbapi_connection.execute("SET search_path = " + _literal(",".join(_quoted(s) for s in schemas)))
    # The lock is the database instance's, which a second handle on the same file shares: locked once.
    if not dbapi_connection.execute("SELECT current_setting('lock_configuration')").fetchone()[0]:
        dbapi_connection.execute("SET lock_configuration = true")
