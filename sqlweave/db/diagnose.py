"""Turn a driver's error into sqlweave's typed execution errors, per dialect.

Each database says "no such column" its own way: SQLite in its message, PostgreSQL with a SQLSTATE code,
DuckDB with an exception class and a message. This module is the one place that reads them; everything
above the database layer reads the type (:class:`~sqlweave.errors.UnknownColumnError`,
:class:`~sqlweave.errors.UnknownTableError`, :class:`~sqlweave.errors.AmbiguousColumnError`,
:class:`~sqlweave.errors.UnknownFunctionError`, :class:`~sqlweave.errors.DatabaseSyntaxError`, or the plain
:class:`~sqlweave.errors.ExecutionError` for the rest) and the ``name`` it carries.

>>> import sqlite3
>>> try:
...     sqlite3.connect(":memory:").execute("SELECT nope")
... except sqlite3.Error as raw:
...     err = diagnose("sqlite", raw, sql="SELECT nope")
>>> type(err).__name__, err.name
('UnknownColumnError', 'nope')
"""

from __future__ import annotations

import re
from typing import Callable

from ..errors import (
    AmbiguousColumnError,
    DatabaseSyntaxError,
    ExecutionError,
    NamedObjectError,
    UnknownColumnError,
    UnknownFunctionError,
    UnknownTableError,
)
from .sqlite_functions import AGGREGATE_MISUSE

_Rule = tuple[type[ExecutionError], "re.Pattern[str]"]

#: SQLite puts everything in the message.
_SQLITE: tuple[_Rule, ...] = (
    (UnknownColumnError, re.compile(r"^no such column: (?P<name>.+)$")),
    (UnknownTableError, re.compile(r"^no such table: (?P<name>.+)$")),
    (AmbiguousColumnError, re.compile(r"^ambiguous column name: (?P<name>.+)$")),
    (UnknownFunctionError, re.compile(r"^no such function: (?P<name>.+)$")),
    (DatabaseSyntaxError, re.compile(r"syntax error|^incomplete input$")),
)

#: DuckDB: the exception class says Binder/Catalog/Parser, the message says which.
_DUCKDB: tuple[_Rule, ...] = (
    (UnknownColumnError, re.compile(r'^Binder Error: Referenced column "(?P<name>[^"]+)" not found')),
    (UnknownColumnError, re.compile(r'^Binder Error: (?:Table|Values list) "[^"]+" does not have a column named '
                                    r'"(?P<name>[^"]+)"')),
    (UnknownTableError, re.compile(r"^Catalog Error: (?:Table|View|Table Function) with name (?P<name>\S+) does "
                                   r"not exist")),
    (UnknownTableError, re.compile(r'^Binder Error: Referenced table "(?P<name>[^"]+)" not found')),
    (AmbiguousColumnError, re.compile(r'^Binder Error: Ambiguous reference to column name "(?P<name>[^"]+)"')),
    (UnknownFunctionError, re.compile(r"^Catalog Error: (?:Scalar |Aggregate )?Function with name (?P<name>\S+) "
                                      r"does not exist")),
    (UnknownFunctionError, re.compile(r"^Binder Error: No function matches the given name and argument types "
                                      r"'(?P<name>[^(']+)")),
    (DatabaseSyntaxError, re.compile(r"^Parser Error: ")),
)

#: PostgreSQL: the SQLSTATE code says what, the message's first quoted (or dotted) name says which.
_POSTGRES_CODES: dict[str, type[ExecutionError]] = {
    "42703": UnknownColumnError,  # undefined_column
    "42P01": UnknownTableError,  # undefined_table
    "42702": AmbiguousColumnError,  # ambiguous_column
    "42883": UnknownFunctionError,  # undefined_function
    "42601": DatabaseSyntaxError,  # syntax_error
}
#: MySQL and MariaDB: the error number says what, the message's quoted name says which.
_MYSQL_CODES: dict[int, tuple[type[ExecutionError], "re.Pattern[str]"]] = {
    1054: (UnknownColumnError, re.compile(r"Unknown column '(?:[^']*\.)?(?P<name>[^'.]+)'")),
    1146: (UnknownTableError, re.compile(r"Table '(?:[^']*\.)?(?P<name>[^'.]+)' doesn't exist")),
    1109: (UnknownTableError, re.compile(r"Unknown table '(?:[^']*\.)?(?P<name>[^'.]+)'")),
    1052: (AmbiguousColumnError, re.compile(r"Column '(?P<name>[^']+)' in .* is ambiguous")),
    1305: (UnknownFunctionError, re.compile(r"FUNCTION (?:\S+\.)?(?P<name>[^\s.]+) does not exist")),
    1630: (UnknownFunctionError, re.compile(r"FUNCTION (?:\S+\.)?(?P<name>[^\s.]+) does not exist")),
    1064: (DatabaseSyntaxError, re.compile(r"")),
}
_POSTGRES_NAME = re.compile(r'^(?:column reference|column|relation|function) (?:"(?P<quoted>[^"]+)"|(?P<bare>[^\s(]+))')


def diagnose(backend: str, raw: BaseException, *, sql: str, message: str | None = None) -> ExecutionError:
    """The typed :class:`~sqlweave.errors.ExecutionError` for ``raw``, the driver's exception for ``sql`` on a
    ``backend`` database (SQLAlchemy's backend name: ``sqlite``, ``postgresql``, ``duckdb``, ...).

    ``message`` is the text the error shows (default: the first line of ``raw``)."""
    if message is None and backend in ("mysql", "mariadb") and len(getattr(raw, "args", ())) == 2:
        message = str(raw.args[1])  # PyMySQL's text is "(1146, \"Table ... doesn't exist\")": the message alone
    text = message if message is not None else first_line(raw)
    if backend == "sqlite" and text.startswith("user-defined aggregate's"):  # Python's sqlite3 hides the reason
        text = AGGREGATE_MISUSE
    reader = _READERS.get(backend)
    if reader is not None:
        found = reader(raw, text)
        if found is not None:
            cls, name = found
            if issubclass(cls, NamedObjectError):
                return cls(text, name=name, sql=sql)
            return cls(text, sql=sql)
    return ExecutionError(text, sql=sql)


def _by_message(rules: tuple[_Rule, ...]) -> Callable[[BaseException, str], tuple[type[ExecutionError], str | None]
                                                                                 | None]:
    def read(_raw: BaseException, text: str) -> tuple[type[ExecutionError], str | None] | None:
        for cls, pattern in rules:
            m = pattern.search(text)
            if m:
                return cls, m.groupdict().get("name")
        return None

    return read


def _postgres(raw: BaseException, text: str) -> tuple[type[ExecutionError], str | None] | None:
    code = getattr(raw, "sqlstate", None) or getattr(raw, "pgcode", None)  # psycopg 3, psycopg2
    cls = _POSTGRES_CODES.get(code or "")
    if cls is None:
        return None
    m = _POSTGRES_NAME.search(text)
    return cls, (m.group("quoted") or m.group("bare")) if m else None


def _mysql(raw: BaseException, text: str) -> tuple[type[ExecutionError], str | None] | None:
    code = raw.args[0] if getattr(raw, "args", None) and isinstance(raw.args[0], int) else None
    rule = _MYSQL_CODES.get(code or 0)
    if rule is None:
        return None
    cls, pattern = rule
    m = pattern.search(text)
    return cls, (m.groupdict().get("name") if m else None)


_READERS: dict[str, Callable[[BaseException, str], tuple[type[ExecutionError], str | None] | None]] = {
    "sqlite": _by_message(_SQLITE),
    "duckdb": _by_message(_DUCKDB),
    "postgresql": _postgres,
    "mysql": _mysql,
    "mariadb": _mysql,
}


#: Reasons :func:`unreachable_reason` gives that callers act on: a database or host that is not there, or a file
#: that is not a database (not found, rather than away); a file another program is writing (not a server to
#: check); a login the server refused (not by waiting).
ABSENT = ("the database does not exist", "the host name is not known", "the file is not a database of its kind")
LOCKED = "another program holds a lock on the database"
LOGIN = "the login was refused"

#: What a driver says when a connection cannot be made or was lost, and how sqlweave says it (no host, port or
#: user: a server's clients see it).
_UNREACHABLE = (
    (re.compile(r"refused", re.I), "the connection was refused"),
    (re.compile(r"timeout|timed out", re.I), "the connection timed out"),
    (re.compile(r"password|authenticat|access denied|no pg_hba|role \S+ does not exist|not permitted to log in",
                re.I), LOGIN),
    (re.compile(r"translate host|name or service|nodename|unknown host|name resolution", re.I),
     ABSENT[1]),
    (re.compile(r"database \S+ does not exist|unknown database", re.I), ABSENT[0]),
    (re.compile(r"not a valid DuckDB database|file is not a database", re.I), ABSENT[2]),
    (re.compile(r"too many (connections|clients)", re.I), "the server has too many connections"),
    (re.compile(r"starting up|shutting down|recovery mode", re.I), "the server is starting up or shutting down"),
    (re.compile(r"closed the connection|terminating connection|lost connection|gone away|connection is closed|"
                r"broken pipe|reset by peer|server closed", re.I), "the server closed the connection"),
    (re.compile(r"unable to open database file", re.I), "the database file cannot be opened"),
    (re.compile(r"database is locked", re.I), LOCKED),
)


def unreachable_reason(err: object) -> str:
    """Why a connection failed, in a few words that name no host, port or user.

    >>> unreachable_reason('connection to server at "10.0.0.5", port 5432 failed: Connection refused')
    'the connection was refused'
    >>> unreachable_reason("something else")
    'the connection failed'
    """
    text = str(err)
    for pattern, reason in _UNREACHABLE:
        if pattern.search(text):
            return reason
    return "the connection failed"


#: What to do about each reason a connection could not be made (the typed error's own hint serves the others).
_CONNECT_HINTS = {
    ABSENT[0]: "Check the database's name at the end of the URL.",
    ABSENT[1]: "Check the host name in the URL: it is not known from this machine.",
    ABSENT[2]: ("Check that the file is the database it is named as: a DuckDB file is written by DuckDB, and "
                "sqlweave reads a SQLite, CSV, Parquet, JSON or Excel file by its own kind."),
    "the connection timed out": ("Check the host and port in the URL, and that no firewall stops the connection "
                                 "on the way."),
    "the server has too many connections": ("The server has no connection free: try again shortly, or raise its "
                                            "connection limit."),
}


def connect_hint(reason: str) -> str | None:
    """What the user can do when a connection failed for ``reason`` (:func:`unreachable_reason`), or ``None``
    where the error's default hint says it.

    >>> connect_hint("the host name is not known")
    'Check the host name in the URL: it is not known from this machine.'
    """
    return _CONNECT_HINTS.get(reason)


def first_line(err: object) -> str:
    """The first line of an error's text (drivers append context lines, carets and hints)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
