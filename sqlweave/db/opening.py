"""From a target (a file path or a SQLAlchemy URL) to the engine that reads it: the checks made before connecting,
the driver sqlweave's extras install, and what to say when a driver or a database is missing.

>>> schema_names("sales, hr")
('sales', 'hr')
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from ..errors import ConfigurationError
from .backends import BACKENDS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .backends.base import Backend

#: File suffixes read as DuckDB files (others as SQLite, or as data files: :mod:`sqlweave.db.datafiles`).
DUCKDB_SUFFIXES = (".duckdb", ".ddb")
#: How many of a server's databases the hint of a database it does not have names.
SHOWN_DATABASES = 12

def schema_names(schemas: "Sequence[str]") -> tuple[str, ...]:
    """``schemas`` checked: non-empty names (a single string is a comma-separated list), each once.

    >>> schema_names("sales, hr"), schema_names(["sales", "sales"])
    (('sales', 'hr'), ('sales',))
    """
    if isinstance(schemas, str):
        schemas = schemas.split(",")
    names = [s.strip() if isinstance(s, str) else "" for s in schemas]
    if not names or not all(names):
        raise ConfigurationError(f"schemas must be names of schemas, e.g. ['sales', 'public'], not {list(schemas)!r}",
                                 hint="Leave schemas out to read the database's own search path.")
    return tuple(dict.fromkeys(names))


def no_schemas(schemas: tuple[str, ...] | None, backend: "Backend | str", why: str = "") -> None:
    """Refuse ``schemas`` for a backend without a search path (``backend`` a class, or ``"data files"`` with
    ``why``)."""
    if not schemas or (not isinstance(backend, str) and backend.has_search_path):
        return
    kind, why = (backend, why) if isinstance(backend, str) else backend.one_namespace
    raise ConfigurationError(f"schemas are read on PostgreSQL and DuckDB databases, not {kind} ({why})",
                             hint="Leave out --schemas (schemas=...).")


def file_identity(path: Path) -> tuple[int, int] | None:
    """The device and inode of a file, which a file renamed over it does not share (None when it is gone)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def with_installed_driver(url: str) -> str:
    """``url`` with the driver sqlweave's extras install when it names none and SQLAlchemy's default is missing:
    ``postgresql://`` becomes ``postgresql+psycopg://`` (the ``postgres`` extra installs psycopg 3, SQLAlchemy
    defaults to psycopg2), ``mysql://`` and ``mariadb://`` ``+pymysql`` (the ``mysql`` extra)."""
    parsed = make_url(url)
    backend = BACKENDS.get(parsed.get_backend_name())
    if backend is None or "+" in parsed.drivername:
        return url
    driver = backend.installed_driver()
    if driver is None:
        return url
    return parsed.set(drivername=f"{parsed.drivername}+{driver}").render_as_string(hide_password=False)


def server_databases(url: "sa.URL", backend: "Backend", connect_args: dict[str, Any]) -> list[str]:
    """The names of the databases on the server of ``url`` that its user may connect to, one more than
    :data:`SHOWN_DATABASES` at most, for the hint of a database the server does not have (``[]`` when they cannot
    be listed; the query only reads the server's catalog)."""
    sql = backend.server_databases_sql()
    if sql is None:
        return []
    for other in backend.catalog_databases():  # "": no database
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


def schemas_with_tables(engine: sa.Engine, kind: "Backend", limit: int = 8) -> list[tuple[str, int]]:
    """Up to ``limit`` schemas of a PostgreSQL or DuckDB database that hold a table or view the user can read,
    each with its number of them (``[]`` for an engine of one namespace, or when the catalog cannot be read)."""
    if kind.tables_by_schema_sql is None:
        return []
    try:
        with engine.connect() as con:
            rows = con.exec_driver_sql(kind.tables_by_schema_sql).fetchmany(limit)
            return [(str(name), int(count)) for name, count in rows]
    except SQLAlchemyError:
        return []


def schemas_note(schemas: list[tuple[str, int]]) -> str:
    """``[("sales", 12), ("hr", 1)]`` as an error names them: ``sales (12 tables), hr (1 table)``.

    >>> schemas_note([("sales", 12), ("hr", 1)])
    'sales (12 tables), hr (1 table)'
    """
    return ", ".join(f"{name} ({count} table{'s' if count > 1 else ''})" for name, count in schemas)
