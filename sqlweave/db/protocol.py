"""What the rest of sqlweave asks of a database handle: two small protocols, so that stages, tools and the schema
reader depend on this surface, not on the class that composes it (:class:`sqlweave.database.Database`).

:class:`Reader` is what reading a schema needs (introspection, the schema cache, key inference);
:class:`Database` adds what a pipeline, a tool or a door calls: the schema as the access policy shows it, a
checked query, a handle bound to one request's parameters.

>>> from sqlweave.database import Database as Opened
>>> from sqlweave.db.demo import demo_database_path
>>> def tables(db: Database) -> list[str]:
...     return list(db.schema().table_names)
>>> "customers" in tables(Opened.open(demo_database_path()))
True
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

if TYPE_CHECKING:
    import sqlalchemy as sa

    from ..knowledge import Knowledge
    from ..policy import AccessPolicy
    from ..schema import Schema
    from .connection import Connection, QueryResult


class Reader(Protocol):
    """A handle whose schema can be read: its connection and what the read depends on."""

    connection: "Connection"
    timeout_s: float
    max_rows: int
    descriptions: Path | None
    keys_from_data: bool
    #: when the schema held was read, if it came from disk; the structure it was read with
    schema_kept_since: float | None
    schema_structure: str | None

    @property
    def name(self) -> str: ...

    @property
    def target(self) -> str: ...

    @property
    def backend(self) -> str: ...

    @property
    def dialect(self) -> str: ...

    @property
    def engine(self) -> "sa.Engine": ...

    @property
    def schemas(self) -> tuple[str, ...]: ...

    @property
    def file(self) -> "tuple[Path, tuple[int, int] | None] | None": ...

    @property
    def knowledge(self) -> "Knowledge | None": ...

    @property
    def policy(self) -> "AccessPolicy | None": ...

    def quote(self, identifier: str) -> str: ...

    def one_connection(self) -> "AbstractContextManager[sa.Connection]": ...

    def trusted_read(self, sql: str, *, timeout_s: float | None = None,
                     max_rows: int | None = None) -> "QueryResult": ...


class Database(Reader, Protocol):
    """A handle the pipeline, the tools and the doors use: the policy's schema, checked queries, binding."""

    params: dict[str, Any]

    def schema(self, *, refresh: bool = False,
               progress: "Callable[[int, int], None] | None" = None) -> "Schema": ...

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None,
                read: str | None = None) -> "QueryResult": ...

    def bind(self, params: Mapping[str, Any] | None) -> "Database": ...

    def check_bound(self) -> None: ...

    def close(self) -> None: ...
