"""One class per database engine sqlweave reads (:class:`~sqlweave.db.backends.base.Backend`), by SQLAlchemy's
backend name: SQLite, DuckDB, PostgreSQL, MySQL and MariaDB.

>>> backend_named("sqlite")
SQLite()
>>> sorted(BACKENDS)
['duckdb', 'mariadb', 'mysql', 'postgresql', 'sqlite']
"""

from __future__ import annotations

from ...errors import ExecutionError, UnsupportedDatabaseError
from .base import Backend
from .duckdb import DuckDB
from .mysql import MySQL
from .postgres import PostgreSQL
from .sqlite import SQLite

#: The registry: SQLAlchemy's backend name -> the backend that serves it (one instance each: they hold no state).
BACKENDS: dict[str, Backend] = {name: backend for backend in (SQLite(), DuckDB(), PostgreSQL(), MySQL())
                                for name in backend.names}


def backend_named(name: str) -> Backend:
    """The backend for SQLAlchemy's backend ``name``; :class:`~sqlweave.errors.UnsupportedDatabaseError` for an
    engine sqlweave cannot hold read-only and to a time limit."""
    found = BACKENDS.get(name)
    if found is None:
        raise UnsupportedDatabaseError(
            f"sqlweave does not run queries on {name} databases: it can hold only SQLite, DuckDB, "
            "PostgreSQL, MySQL and MariaDB read-only and to a time limit, and runs no query where it cannot")
    return found


def diagnose(backend: str, raw: BaseException, *, sql: str, message: str | None = None) -> ExecutionError:
    """The typed :class:`~sqlweave.errors.ExecutionError` for ``raw``, the driver's exception for ``sql`` on a
    ``backend`` database (SQLAlchemy's backend name: ``sqlite``, ``postgresql``, ``duckdb``, ...).

    >>> import sqlite3
    >>> try:
    ...     sqlite3.connect(":memory:").execute("SELECT nope")
    ... except sqlite3.Error as raw:
    ...     type(diagnose("sqlite", raw, sql="SELECT nope")).__name__
    'UnknownColumnError'
    """
    found = BACKENDS.get(backend)
    if found is None:
        return ExecutionError(message if message is not None else str(raw), sql=sql)
    return found.diagnose(raw, sql=sql, message=message)


__all__ = ["BACKENDS", "Backend", "DuckDB", "MySQL", "PostgreSQL", "SQLite", "backend_named", "diagnose"]
