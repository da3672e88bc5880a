"""The words sqlweave uses for a database's failures, shared by every backend.

Each engine says "no such column" or "connection refused" its own way: SQLite with a result code, PostgreSQL with
a SQLSTATE, MySQL and MariaDB with an error number, DuckDB with an exception class. Each backend class
(:mod:`sqlweave.db.backends`) reads its own driver's; everything above the database layer reads the typed error
(:class:`~sqlweave.errors.UnknownColumnError`, :class:`~sqlweave.errors.UnknownTableError`,
:class:`~sqlweave.errors.AmbiguousColumnError`, :class:`~sqlweave.errors.UnknownFunctionError`,
:class:`~sqlweave.errors.DatabaseSyntaxError`, or the plain :class:`~sqlweave.errors.ExecutionError`) and the
``name`` it carries. This module holds what they share: the reasons a connection fails, the advice for each, and
the first line of a driver's text.

>>> import sqlite3
>>> from sqlweave.db.backends import diagnose
>>> try:
...     sqlite3.connect(":memory:").execute("SELECT nope")
... except sqlite3.Error as raw:
...     err = diagnose("sqlite", raw, sql="SELECT nope")
>>> type(err).__name__, err.name
('UnknownColumnError', 'nope')
"""

from __future__ import annotations


#: Reasons a backend's ``unreachable_reason`` gives that callers act on: a database or host that is not there, or a file
#: that is not a database (not found, rather than away); a file another program is writing (not a server to
#: check); a login the server refused (not by waiting).
ABSENT = ("the database does not exist", "the host name is not known", "the file is not a database of its kind")
LOCKED = "another program holds a lock on the database"
LOGIN = "the login was refused"

#: The other reasons a connection could not be made or was lost (no host, port or user: a server's clients see it).
REFUSED = "the connection was refused"
TIMED_OUT = "the connection timed out"
TOO_MANY = "the server has too many connections"
STARTING = "the server is starting up or shutting down"
CLOSED = "the server closed the connection"
CANNOT_OPEN = "the database file cannot be opened"
FAILED = "the connection failed"


#: What to do about each reason a connection could not be made (the typed error's own hint serves the others).
_CONNECT_HINTS = {
    ABSENT[0]: "Check the database's name at the end of the URL.",
    ABSENT[1]: "Check the host name in the URL: it is not known from this machine.",
    ABSENT[2]: ("Check that the file is the database it is named as: a DuckDB file is written by DuckDB, and "
                "sqlweave reads a SQLite, CSV, Parquet, JSON or Excel file by its own kind."),
    TIMED_OUT: "Check the host and port in the URL, and that no firewall stops the connection on the way.",
    TOO_MANY: "The server has no connection free: try again shortly, or raise its connection limit.",
}


def connect_hint(reason: str) -> str | None:
    """What the user can do when a connection failed for ``reason`` (a backend's ``unreachable_reason``), or ``None``
    where the error's default hint says it.

    >>> connect_hint("the host name is not known")
    'Check the host name in the URL: it is not known from this machine.'
    """
    return _CONNECT_HINTS.get(reason)


def first_line(err: object) -> str:
    """The first line of an error's text (drivers append context lines, carets and hints)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
