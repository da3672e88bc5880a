"""An immutable model of a database schema.

>>> s = Schema(name="shop", dialect="sqlite", tables=(
...     Table("customer", columns=(Column("id", "INTEGER", primary_key=True), Column("name", "TEXT"))),
... ))
>>> s.table("CUSTOMER").column("Name").type
'TEXT'
>>> s.table_names
('customer',)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from .errors import SchemaError

_NUMBER_WORD = re.compile(r"int|real|float|double|numeric|decimal|number", re.IGNORECASE)
#: Types of several values: arrays (``INTEGER[]``, PostgreSQL's ``_int4``) and DuckDB's ``STRUCT``, ``MAP`` and
#: ``UNION`` (whose names hold their members' types).
_COMPOSITE = re.compile(r"\[|array|^_|struct|map\b|union", re.IGNORECASE)
#: Types whose names hold a number word but whose values are not one number: PostgreSQL's ``interval``,
#: ``point``, ``int4range``, and the composite ones.
_NOT_A_NUMBER = re.compile(r"interval|point|range|" + _COMPOSITE.pattern, re.IGNORECASE)


def is_number_type(type_name: str) -> bool:
    """Does a column of this declared type hold one plain number?

    >>> [is_number_type(t) for t in ("BIGINT", "numeric(10,2)", "DOUBLE PRECISION", "NUMBER")]
    [True, True, True, True]
    >>> [is_number_type(t) for t in ("INTERVAL", "point", "int4range", "INTEGER[]", "TEXT", "BOOLEAN")]
    [False, False, False, False, False, False]
    """
    return bool(_NUMBER_WORD.search(type_name)) and not _NOT_A_NUMBER.search(type_name)


def is_composite_type(type_name: str) -> bool:
    """Does a column of this declared type hold several values (an array, a struct, a map)?

    >>> [is_composite_type(t) for t in ("TEXT[]", "_int4", "STRUCT(a INTEGER)", "MAP(VARCHAR, INTEGER)", "TEXT")]
    [True, True, True, True, False]
    """
    return bool(_COMPOSITE.search(type_name))


@dataclass(frozen=True)
class ColumnStats:
    """Simple statistics of a column's values (computed on a bounded sample)."""

    distinct: int | None = None
    nulls: int | None = None
    minimum: Any = None
    maximum: Any = None


@dataclass(frozen=True)
class Column:
    """A column: its name, declared type and what sqlweave knows about its values."""

    name: str
    type: str = ""
    primary_key: bool = False
    nullable: bool = True
    description: str = ""
    samples: tuple[Any, ...] = ()
    stats: ColumnStats = field(default_factory=ColumnStats)

    @property
    def is_text(self) -> bool:
        """Text (``TEXT``, ``VARCHAR(20)``, an ``ENUM`` of labels, SQLite's column without a type); not an array or
        a struct of it (``TEXT[]``, ``STRUCT(name VARCHAR)``)."""
        t = self.type.upper()
        return (any(k in t for k in ("CHAR", "TEXT", "CLOB", "STRING", "ENUM")) or t == "") \
            and not _COMPOSITE.search(t)

    @property
    def is_numeric(self) -> bool:
        """A number or a boolean (``INTEGER``, ``DECIMAL(8,2)``, ``BOOLEAN``); not ``INTERVAL`` or ``INTEGER[]``."""
        return is_number_type(self.type) or "BOOL" in self.type.upper()


@dataclass(frozen=True)
class ForeignKey:
    """``table.column`` references ``ref_table.ref_column``."""

    table: str
    column: str
    ref_table: str
    ref_column: str

    def __str__(self) -> str:
        return f"{self.table}.{self.column} -> {self.ref_table}.{self.ref_column}"


@dataclass(frozen=True)
class Table:
    """A table with its columns, primary key and a few sample rows."""

    name: str
    columns: tuple[Column, ...] = ()
    description: str = ""
    row_count: int | None = None
    sample_rows: tuple[tuple[Any, ...], ...] = ()

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def primary_key(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.primary_key)

    def column(self, name: str) -> Column:
        """Return the column called ``name`` (case-insensitive)."""
        low = name.lower()
        for c in self.columns:
            if c.name.lower() == low:
                return c
        raise SchemaError(
            f"table {self.name!r} has no column {name!r}",
            hint=f"Its columns are: {', '.join(self.column_names)}.",
        )

    def has_column(self, name: str) -> bool:
        low = name.lower()
        return any(c.name.lower() == low for c in self.columns)


@dataclass(frozen=True)
class Schema:
    """Tables and foreign keys of one database, as sqlweave sees it."""

    name: str
    tables: tuple[Table, ...]
    foreign_keys: tuple[ForeignKey, ...] = ()
    dialect: str = "sqlite"
    #: the foreign keys (and the primary keys of tables that declare none) were read from the data: the database
    #: declares no foreign key (:func:`sqlweave.db.infer_keys.infer_database_keys`)
    keys_from_data: bool = False
    #: the schemas (namespaces) its tables were read from, in the order a name is looked up, when more than one
    #: (a PostgreSQL search path such as ``("sales", "public")``, a DuckDB file's ``("main", "staging")``)
    schemas: tuple[str, ...] = ()
    #: tables not read because a schema earlier in :attr:`schemas` holds a table of the same name, as
    #: ``schema.table`` (``("archive.orders",)``): a query naming ``orders`` reads the earlier one, as the
    #: database itself looks the name up
    shadowed: tuple[str, ...] = ()

    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables)

    def table(self, name: str) -> Table:
        """Return the table called ``name`` (case-insensitive)."""
        low = name.lower()
        for t in self.tables:
            if t.name.lower() == low:
                return t
        raise SchemaError(
            f"no table {name!r} in database {self.name!r}",
            hint=f"Its tables are: {', '.join(self.table_names)}.",
        )

    def has_table(self, name: str) -> bool:
        low = name.lower()
        return any(t.name.lower() == low for t in self.tables)

    def foreign_keys_of(self, table: str) -> tuple[ForeignKey, ...]:
        low = table.lower()
        return tuple(fk for fk in self.foreign_keys if fk.table.lower() == low)

    def find(self, text: str) -> tuple[Table, ...]:
        """The tables whose name or description, or a column's name or description, holds ``text`` (any case;
        every table for an empty text), for finding one's way in a schema of many tables.

        >>> s = Schema("x", (Table("orders", (Column("id"), Column("zip_code"))), Table("staff", (Column("id"),))))
        >>> [t.name for t in s.find("ZIP")]
        ['orders']
        """
        term = text.strip().lower()
        return tuple(t for t in self.tables
                     if any(term in part.lower() for part in (t.name, t.description,
                                                             *(f"{c.name} {c.description}" for c in t.columns))))

    def only(self, names: Iterable[str]) -> "Schema":
        """The schema with only the tables ``names`` spells as they are spelled here (whole), and the foreign keys
        from or to them: what a door shows of a search (:meth:`find`).

        >>> s = Schema("x", (Table("a", (Column("id"),)), Table("b", (Column("a_id"),))),
        ...            (ForeignKey("b", "a_id", "a", "id"),))
        >>> [t.name for t in s.only(["b"]).tables], len(s.only(["b"]).foreign_keys)
        (['b'], 1)
        """
        keep = set(names)
        return replace(self, tables=tuple(t for t in self.tables if t.name in keep),
                       foreign_keys=tuple(fk for fk in self.foreign_keys if fk.table in keep or fk.ref_table in keep))

    def subset(self, keep: dict[str, Iterable[str] | None]) -> "Schema":
        """A schema with only the given tables (and columns; ``None`` keeps all of a table's columns).

        Foreign keys between kept columns are kept.

        >>> s = Schema("x", (Table("a", (Column("id"), Column("v"))), Table("b", (Column("id"),))))
        >>> s.subset({"a": ["v"]}).table("a").column_names
        ('v',)
        """
        lowered = {k.lower(): (None if v is None else {c.lower() for c in v}) for k, v in keep.items()}
        tables = []
        for t in self.tables:
            if t.name.lower() not in lowered:
                continue
            cols = lowered[t.name.lower()]
            kept = tuple(c for c in t.columns if cols is None or c.name.lower() in cols)
            idx = [i for i, c in enumerate(t.columns) if c in kept]
            rows = tuple(tuple(r[i] for i in idx) for r in t.sample_rows)
            tables.append(replace(t, columns=kept, sample_rows=rows))
        names = {(t.name.lower(), c.name.lower()) for t in tables for c in t.columns}
        fks = tuple(
            fk
            for fk in self.foreign_keys
            if (fk.table.lower(), fk.column.lower()) in names and (fk.ref_table.lower(), fk.ref_column.lower()) in names
        )
        return replace(self, tables=tuple(tables), foreign_keys=fks)

    def table_graph(self) -> Any:
        """A networkx graph with a node per table (its name as the schema spells it) and an edge per foreign
        key (the :class:`ForeignKey` on the edge's ``fk``), for join paths between tables.

        >>> s = Schema("x", (Table("a", (Column("id"),)), Table("b", (Column("a_id"),))),
        ...            (ForeignKey("b", "a_id", "A", "id"),))
        >>> sorted(s.table_graph().edges)
        [('a', 'b')]
        """
        import networkx as nx

        def name(t: str) -> str:
            return self.table(t).name if self.has_table(t) else t

        g = nx.Graph()
        g.add_nodes_from(t.name for t in self.tables)
        for fk in self.foreign_keys:
            g.add_edge(name(fk.table), name(fk.ref_table), fk=fk)
        return g

    def to_sqlglot_mapping(self) -> dict[str, dict[str, str]]:
        """``{table: {column: type}}`` for sqlglot's optimizer (qualify, annotate)."""
        return {t.name: {c.name: (c.type or "TEXT") for c in t.columns} for t in self.tables}
