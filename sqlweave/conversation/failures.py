"""What a failure of the conversation store's database means, read from the driver's code, never its message:
SQLite's result code (``sqlite3.Error.sqlite_errorcode``), PostgreSQL's SQLSTATE (psycopg 3's ``sqlstate``,
psycopg2's ``pgcode``) and MySQL's error number (the first argument of its drivers' errors).

>>> import sqlite3
>>> busy = sqlite3.OperationalError("database is locked")
>>> busy.sqlite_errorcode, busy.sqlite_errorname = SQLITE_BUSY, "SQLITE_BUSY"
>>> is_transient(busy), not_a_database(busy)
(True, False)
>>> is_transient(sqlite3.OperationalError("database is locked"))   # no code: the words alone decide nothing
False
"""

from __future__ import annotations

import sqlite3

#: SQLite's primary result codes (the low byte of an extended code such as SQLITE_BUSY_SNAPSHOT).
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_CORRUPT = 11
SQLITE_NOTADB = 26

#: Another writer holds the lock, or the transaction lost a race with one: the same work may succeed next time.
#: PostgreSQL: serialization_failure, deadlock_detected, lock_not_available; MySQL: lock wait timeout, deadlock.
_TRANSIENT_SQLITE = frozenset({SQLITE_BUSY, SQLITE_LOCKED})
_TRANSIENT_SQLSTATE = frozenset({"40001", "40P01", "55P03"})
_TRANSIENT_MYSQL = frozenset({1205, 1213})

#: Another process created the same table, type, index or column at the same moment (PostgreSQL:
#: unique_violation on its catalogue, duplicate_table, duplicate_object, duplicate_column; MySQL: table exists,
#: duplicate column): the tables are there when one looks again.
_CLASH_SQLSTATE = frozenset({"23505", "42P07", "42710", "42701"})
_CLASH_MYSQL = frozenset({1050, 1060})


def _driver_error(err: BaseException) -> BaseException:
    """The driver's own exception inside SQLAlchemy's wrapper (``DBAPIError.orig``), or ``err`` itself."""
    orig = getattr(err, "orig", None)
    return orig if isinstance(orig, BaseException) else err


def sqlite_code(err: BaseException) -> int | None:
    """SQLite's primary result code of ``err`` (or of the driver error it wraps); ``None`` if it is not SQLite's."""
    raw = _driver_error(err)
    code = getattr(raw, "sqlite_errorcode", None) if isinstance(raw, sqlite3.Error) else None
    return code & 0xFF if isinstance(code, int) else None


def sqlstate(err: BaseException) -> str | None:
    """PostgreSQL's SQLSTATE of ``err`` (psycopg 3 or psycopg2), or ``None``."""
    raw = _driver_error(err)
    code = getattr(raw, "sqlstate", None) or getattr(raw, "pgcode", None)
    return code if isinstance(code, str) else None


def mysql_errno(err: BaseException) -> int | None:
    """MySQL's or MariaDB's error number of ``err`` (PyMySQL, mysqlclient), or ``None``."""
    raw = _driver_error(err)
    if type(raw).__module__.split(".")[0] not in {"pymysql", "MySQLdb", "mysql"}:
        return None
    args = getattr(raw, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def is_transient(err: BaseException) -> bool:
    """Is the store busy or locked by another writer, or did the transaction lose a race (a deadlock, a
    serialization failure)? Then the same work is worth another attempt."""
    return (sqlite_code(err) in _TRANSIENT_SQLITE or sqlstate(err) in _TRANSIENT_SQLSTATE
            or mysql_errno(err) in _TRANSIENT_MYSQL)


def is_clash(err: BaseException) -> bool:
    """Did another process create the same table, index or column at the same moment?"""
    return sqlstate(err) in _CLASH_SQLSTATE or mysql_errno(err) in _CLASH_MYSQL


def mended_by_retry(err: BaseException) -> bool:
    """May creating the store's tables succeed when tried again: a transient failure, or another process that
    created them at the same moment? (A login refused, a file that is no database, a server down: no.)"""
    return is_transient(err) or is_clash(err)


def not_a_database(err: BaseException) -> bool:
    """Is the store's SQLite file no database SQLite can read (overwritten, cut short, encrypted)?"""
    return sqlite_code(err) in {SQLITE_NOTADB, SQLITE_CORRUPT}


__all__ = ["is_clash", "is_transient", "mended_by_retry", "mysql_errno", "not_a_database", "sqlite_code", "sqlstate"]
