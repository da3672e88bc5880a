"""What every database engine sqlweave reads must say about itself: one subclass of :class:`Backend` per engine.

A backend owns what differs between engines once a connection is made: the driver settings and the session setup
that keep it read-only, how a statement's time limit is armed and how its interruption is recognised, and how a
driver's exception is read (a SQLSTATE, an error number, an exception class or a result code, never the text but
where a driver gives nothing else: each such place is one named function of its backend, tested by itself).

>>> from sqlweave.db.backends import backend_named
>>> backend_named("postgresql").dialect, backend_named("mariadb").dialect
('postgres', 'mysql')
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterator

from ...errors import ExecutionError, NamedObjectError
from ..diagnose import FAILED, first_line

if TYPE_CHECKING:
    import sqlalchemy as sa

class Backend:
    """The engine-specific part of a read-only connection (stateless: one instance serves every connection).

    Subclasses set the class attributes and override the methods whose default does not hold for their engine.
    """

    #: SQLAlchemy's backend names this class serves (``engine.dialect.name``)
    names: ClassVar[tuple[str, ...]] = ()
    #: the sqlglot dialect name of the SQL the engine reads
    dialect: ClassVar[str] = ""
    #: the engine has named schemas that a session looks tables up in (PostgreSQL, DuckDB)
    has_search_path: ClassVar[bool] = False
    #: each query runs in a transaction of its own, rolled back afterwards (the servers)
    rolls_back: ClassVar[bool] = False
    #: the SQL a model writes is brought to the engine's reading with the schema before it runs: ``"never"``
    #: (SQLite, where models learnt SQL), ``"when-needed"`` (once the schema was read, or when the SQL has a
    #: form that may need it) or ``"always"`` (MySQL, where a table is found only as spelt)
    schema_forms: ClassVar[str] = "never"
    #: ``x = (SELECT ...)`` whose subquery returns several rows is an error (SQLite answers from the first row)
    refuses_many_rows: ClassVar[bool] = True
    #: the pool keeps one connection per thread and closes another thread's when it is full (SQLite's): queries
    #: on one database run one at a time, and a replaced file's connections are dropped, not closed
    pool_per_thread: ClassVar[bool] = False
    #: a file, opened by path (SQLite: a ``sqlite://`` URL is opened as its file)
    opens_files: ClassVar[bool] = False
    #: the URL's database is a file, whose stem names it and whose replacement is noticed (DuckDB)
    url_names_file: ClassVar[bool] = False
    #: a URL must name the one database read (MySQL, MariaDB)
    url_needs_database: ClassVar[bool] = False
    #: a pooled connection is checked alive before use (not a DuckDB file's: nothing to ping)
    pings: ClassVar[bool] = True

    #: what the engine is called, and why it has one namespace, when it has no search path
    one_namespace: ClassVar[tuple[str, str]] = ("this engine", "it has one namespace")
    #: SQL counting the tables and views of each schema the user can read (``None``: one namespace)
    tables_by_schema_sql: ClassVar[str | None] = None
    #: the package that installs each of its SQLAlchemy drivers (``""``: the URL names none)
    packages: ClassVar[Mapping[str, str]] = MappingProxyType({})

    # --- connecting ------------------------------------------------------------------------------

    def installed_driver(self) -> str | None:
        """The driver to name in a URL that names none, when SQLAlchemy's default is not installed but the one
        sqlweave's extra installs is (``None``: leave the URL as it is)."""
        return None

    def driver_hint(self, driver: str) -> str:
        """How to install the missing ``driver`` (``""``: the URL named none)."""
        package = self.packages.get(driver) or self.packages.get("")
        if package is None:
            return f"Install the SQLAlchemy driver for {self.names[0]!r} databases."
        return f"Install it with: pip install '{package}'"

    def connect_args(self, url: "sa.URL", timeout_s: float) -> dict[str, Any]:
        """The driver's settings for a read-only connection to ``url`` within ``timeout_s``."""
        return {}

    def prepare(self, engine: "sa.Engine", schemas: tuple[str, ...] | None) -> None:
        """Register the session setup every new connection of ``engine`` gets (read-only, search path, ...)."""

    def search_path(self, con: "sa.Connection") -> tuple[str, ...]:
        """The existing schemas a session looks names up in, in order (``()``: the engine has one namespace)."""
        return ()

    def server_databases_sql(self) -> str | None:
        """SQL listing the databases of a server that its user may connect to, or ``None``."""
        return None

    def catalog_databases(self) -> tuple[str, ...]:
        """The databases to connect to for :meth:`server_databases_sql` (``""``: none named)."""
        return ("",)

    # --- running ---------------------------------------------------------------------------------

    def arm_timeout(self, conn: "sa.Connection", raw: Any, timeout_s: float) -> Callable[[], None]:
        """Make the statement about to run on ``conn`` stop after ``timeout_s``; return what disarms it."""
        return lambda: None

    def driver_text(self, sql: str, paramstyle: str) -> str:
        """``sql`` as the driver must receive it: drivers with ``%s``-style placeholders (psycopg, pymysql) read
        every ``%`` as one, even with no parameters (``LIKE '%x%'`` would fail), so it is doubled for them."""
        if "%" in sql and paramstyle in ("format", "pyformat"):
            return sql.replace("%", "%%")
        return sql

    # --- reading a driver's exception ------------------------------------------------------------

    def timed_out(self, raw: BaseException) -> bool:
        """Did the engine stop the statement because its time limit passed (by the driver's code or class)?"""
        return False

    def too_many_rows(self, raw: BaseException) -> bool:
        """Did a scalar subquery (``x = (SELECT ...)``) return several rows?"""
        return False

    def locked(self, raw: BaseException) -> bool:
        """Does another program's lock keep the database from being read now (not the SQL's fault)?"""
        return False

    def unreachable_reason(self, raw: BaseException | None) -> str:
        """Why a connection could not be made or was lost, in words that name no host, port or user (the
        constants of :mod:`sqlweave.db.diagnose`)."""
        return FAILED

    def error_kind(self, raw: BaseException, text: str) -> "tuple[type[ExecutionError], str | None] | None":
        """Which typed error ``raw`` is, and the name it carries (``text`` is its message), or ``None``."""
        return None

    def message(self, raw: BaseException) -> str:
        """The text the typed error shows: the driver's first line."""
        return first_line(raw)

    def diagnose(self, raw: BaseException, *, sql: str, message: str | None = None) -> ExecutionError:
        """The typed :class:`~sqlweave.errors.ExecutionError` for ``raw``, the driver's exception for ``sql``."""
        text = message if message is not None else self.message(raw)
        found = self.error_kind(raw, text)
        if found is None:
            return ExecutionError(text, sql=sql)
        cls, name = found
        if issubclass(cls, NamedObjectError):
            return cls(text, name=name, sql=sql)
        return cls(text, sql=sql)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def causes(err: BaseException | None) -> Iterator[BaseException]:
    """``err``, then the driver's exception SQLAlchemy wraps in it (``orig``) and the causes of each, in order."""
    seen = 0
    while err is not None and seen < 8:
        yield err
        err = getattr(err, "orig", None) or err.__cause__ or err.__context__
        seen += 1


def cause_of(err: BaseException | None, kind: type[BaseException] | tuple[type[BaseException], ...]
             ) -> BaseException | None:
    """The first exception of type ``kind`` among ``err``, what SQLAlchemy wraps (``orig``) and its causes."""
    return next((e for e in causes(err) if isinstance(e, kind)), None)


def importable(module: str) -> bool:
    """Is ``module`` installed (found without importing it)?"""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
