"""The agent's four tools, usable on their own: SearchColumn, SearchValue, FindShortestPath, ExecuteSQL.

Each tool returns a result object with ``as_dict()`` (for the API and ``--json``) and ``observation()``
(the short text the agent reads). A :class:`Toolkit` holds one database and builds each index once,
on first use: column embeddings (cached on disk by the embedder), the cell-value index (persisted, see
:mod:`sqlweave.retrieval.values`) and the join graph.

>>> from sqlweave.db.demo import demo_database_path
>>> from sqlweave.database import Database
>>> kit = Toolkit(Database.open(demo_database_path()))
>>> kit.find_shortest_path("customers.city", "products.name").joins[0]
'customers.customer_id = orders.customer_id'
>>> kit.search_value("Frence")[0].value
'France'
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..cells import text_cell
from ..errors import ConfigurationError, DatabaseUnavailableError, SchemaError, SchemaLinkError, SqlweaveError

if TYPE_CHECKING:
    from ..db.connection import QueryResult
    from ..db.protocol import Database
    from ..schema import Column, Schema, Table
    from ..resources import Resources
    from ..retrieval.dense import DenseIndex, Embedder
    from ..retrieval.values import ValueHit, ValueIndex

MAX_CELL_CHARS = 100
MAX_OBSERVATION_ROWS = 10


def _cell(v: Any) -> str:
    s = text_cell(v)
    return s if len(s) <= MAX_CELL_CHARS else s[: MAX_CELL_CHARS - 3] + "..."


# --- SearchColumn ---------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnInfo:
    """A column as SearchColumn reports it: name, table, type, description and value statistics."""

    table: str
    column: str
    type: str
    description: str
    statistics: str
    score: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"table": self.table, "column": self.column, "type": self.type, "description": self.description,
                "statistics": self.statistics, "score": round(self.score, 3)}

    def observation(self) -> str:
        desc = f"; description: {self.description}" if self.description else ""
        return f"{self.table}.{self.column} ({self.type or 'untyped'}{desc}); {self.statistics}"


def column_statistics(col: "Column") -> str:
    """Sampled values for text columns, min and max for numbers and dates (what the agent needs to filter)."""
    st = col.stats
    if col.is_text and not _looks_temporal(col):
        vals = ", ".join(repr(_cell(v)) for v in col.samples[:5])
        distinct = f"{st.distinct} distinct" if st.distinct is not None else ""
        return f"values e.g. {vals}" + (f" ({distinct})" if distinct else "") if vals else "no values"
    if st.minimum is None and st.maximum is None:
        return "no values"
    return f"min {_cell(st.minimum)}, max {_cell(st.maximum)}"


def _looks_temporal(col: "Column") -> bool:
    t = col.type.upper()
    return any(k in t for k in ("DATE", "TIME", "YEAR"))


def column_sentence(table: "Table", col: "Column") -> str:
    """The text embedded for a column (paper 002's template, with words split out of identifiers)."""
    from ..retrieval.schema_retriever import _words

    text = f"a column named {_words(col.name)} in table {_words(table.name)}"
    return f"{text} about {col.description}" if col.description else text


# --- FindShortestPath -------------------------------------------------------------------------


@dataclass(frozen=True)
class JoinPath:
    """The tables on the shortest join path between two columns and the JOIN conditions that link them."""

    start: str
    end: str
    tables: tuple[str, ...]
    joins: tuple[str, ...]
    inferred: tuple[str, ...] = ()

    @property
    def from_clause(self) -> str:
        """``FROM a JOIN b ON ... JOIN c ON ...`` for the path."""
        if not self.tables:
            return ""
        parts = [f"FROM {self.tables[0]}"]
        for table, cond in zip(self.tables[1:], self.joins):
            parts.append(f"JOIN {table} ON {cond}")
        return " ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "tables": list(self.tables), "joins": list(self.joins),
                "inferred": list(self.inferred), "from_clause": self.from_clause}

    def observation(self) -> str:
        if len(self.tables) == 1:
            return f"{self.start} and {self.end} are in the same table {self.tables[0]}: no join needed."
        note = f" (inferred from matching column names, not declared: {'; '.join(self.inferred)})" if self.inferred else ""
        return f"{self.from_clause}{note}"


def join_graph(schema: "Schema") -> Any:
    """A networkx graph: a node per ``table.column``, a hub node per table, edges for same-table and keys.

    Declared foreign keys cost 1; where a schema declares none between two tables, a column that has the same
    name as another table's primary key is linked at cost 1.5 (marked ``inferred``).
    """
    import networkx as nx

    g = nx.Graph()
    for t in schema.tables:
        hub = ("table", t.name)
        for c in t.columns:
            g.add_edge(hub, (t.name, c.name), weight=0.5, kind="same_table")
    linked: set[frozenset[str]] = set()
    for fk in schema.foreign_keys:
        g.add_edge((fk.table, fk.column), (fk.ref_table, fk.ref_column), weight=1.0, kind="foreign_key")
        linked.add(frozenset((fk.table.lower(), fk.ref_table.lower())))
    for t in schema.tables:
        for pk in t.primary_key:
            for other in schema.tables:
                if other is t or frozenset((t.name.lower(), other.name.lower())) in linked:
                    continue
                for c in other.columns:
                    if c.name.lower() == pk.lower() and not (len(other.primary_key) == 1 and c.primary_key):
                        g.add_edge((other.name, c.name), (t.name, pk), weight=1.5, kind="inferred")
    return g


# --- the toolkit --------------------------------------------------------------------------------


@dataclass
class Toolkit:
    """The four tools over one database; indexes are built lazily and kept for the toolkit's life. The embedder
    and the value index come from ``resources`` (default: :func:`~sqlweave.resources.shared_resources`)."""

    db: "Database"
    embedder: "Embedder | None" = None
    max_rows: int = MAX_OBSERVATION_ROWS
    resources: "Resources | None" = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _columns: "DenseIndex | None" = field(default=None, repr=False)
    _column_keys: list[tuple[str, str]] = field(default_factory=list, repr=False)
    _values: "ValueIndex | None" = field(default=None, repr=False)
    _graph: Any = field(default=None, repr=False)

    @property
    def schema(self) -> "Schema":
        return self.db.schema()

    # SearchColumn -------------------------------------------------------------------------------

    def search_column(self, semantic: str, k: int = 5) -> list[ColumnInfo]:
        """Columns ranked by embedding similarity to ``semantic`` (e.g. ``"age of a singer"``)."""
        if not semantic or not semantic.strip():
            raise ConfigurationError("SearchColumn needs a description of the column to look for",
                                     hint='Call it like SearchColumn("age of a singer").')
        with self._lock:
            if self._columns is None:
                from ..retrieval.dense import DenseIndex, get_embedder

                keys, texts = [], []
                for t in self.schema.tables:
                    for c in t.columns:
                        keys.append((t.name, c.name))
                        texts.append(column_sentence(t, c))
                self._columns = DenseIndex(texts, self.embedder or get_embedder(resources=self.resources))
                self._column_keys = keys
        out = []
        for i, score in self._columns.search(semantic, k=k):
            tname, cname = self._column_keys[i]
            t = self.schema.table(tname)
            c = t.column(cname)
            out.append(ColumnInfo(t.name, c.name, c.type, c.description, column_statistics(c), score))
        return out

    # SearchValue --------------------------------------------------------------------------------

    def value_index(self) -> "ValueIndex":
        with self._lock:
            if self._values is None:
                from ..stages.select_values import value_index

                self._values = value_index(self.db, self.resources)
            return self._values

    def search_value(self, value: str, table: str | None = None, column: str | None = None,
                     k: int = 5) -> list["ValueHit"]:
        """Stored text values like ``value`` (BM25 + string similarity), optionally within a table/column."""
        if not str(value).strip():
            raise ConfigurationError("SearchValue needs a value to look for", hint='Call it like SearchValue("Paris").')
        if table is not None:
            table = self.schema.table(table).name
            if column is not None:
                column = self.schema.table(table).column(column).name
        return self.value_index().search(str(value), table=table, column=column, k=k)

    # FindShortestPath ---------------------------------------------------------------------------

    def _node(self, ref: str) -> tuple[str, str | None]:
        """``table.column`` (or ``column.table``, the paper's order, or a bare table) to a graph node."""
        parts = [p.strip().strip('"`[]') for p in str(ref).split(".")]
        s = self.schema
        if len(parts) == 2:
            a, b = parts
            if s.has_table(a) and s.table(a).has_column(b):
                t = s.table(a)
                return t.name, t.column(b).name
            if s.has_table(b) and s.table(b).has_column(a):
                t = s.table(b)
                return t.name, t.column(a).name
            if s.has_table(a):
                raise SchemaError(f"table {s.table(a).name!r} has no column {b!r}",
                                  hint=f"Its columns are: {', '.join(s.table(a).column_names)}.")
        elif len(parts) == 1 and s.has_table(parts[0]):
            return s.table(parts[0]).name, None
        elif len(parts) == 1:
            owners = [t for t in s.tables if t.has_column(parts[0])]
            if len(owners) == 1:
                return owners[0].name, owners[0].column(parts[0]).name
            if owners:
                raise SchemaError(f"column {parts[0]!r} is in several tables",
                                  hint="Name it as table.column: " + ", ".join(f"{t.name}.{parts[0]}" for t in owners))
        raise SchemaError(f"no column {ref!r} in database {s.name!r}", hint="Name a column as table.column.")

    def find_shortest_path(self, start: str, end: str) -> JoinPath:
        """The shortest join path between two columns (``table.column``), as JOIN conditions."""
        import networkx as nx

        a, b = self._node(start), self._node(end)
        with self._lock:
            if self._graph is None:
                self._graph = join_graph(self.schema)
            g = self._graph
        src = ("table", a[0]) if a[1] is None else a
        dst = ("table", b[0]) if b[1] is None else b
        label_a, label_b = ".".join(x for x in a if x), ".".join(x for x in b if x)
        if a[0] == b[0]:
            return JoinPath(label_a, label_b, (a[0],), ())
        try:
            path = nx.shortest_path(g, src, dst, weight="weight")
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            raise SchemaError(f"no join path between {label_a} and {label_b}",
                              hint="The tables are not linked by keys; join them on matching values yourself.") from None
        tables: list[str] = []
        joins, inferred = [], []
        for u, v in zip(path, path[1:]):
            edge = g.edges[u, v]
            for node in (u, v):
                if node[0] != "table" and node[0] not in tables:
                    tables.append(node[0])
            if edge["kind"] in ("foreign_key", "inferred"):
                cond = f"{u[0]}.{u[1]} = {v[0]}.{v[1]}"
                joins.append(cond)
                if edge["kind"] == "inferred":
                    inferred.append(cond)
        return JoinPath(label_a, label_b, tuple(tables), tuple(joins), tuple(inferred))

    # ExecuteSQL ---------------------------------------------------------------------------------

    def execute_sql(self, sql: str) -> "QueryResult":
        """Run ``sql`` with the engine's safety checks (read-only, time limit, row cap).

        When it fails on a wrong table or column name that has one reading in the schema (see
        :mod:`sqlweave.sql.repair`), the repaired query runs instead; ``result.sql`` is what ran.
        """
        from ..sql.repair import repair_schema_links

        try:
            return self.db.execute(sql)
        except SchemaLinkError as err:
            fixed = repair_schema_links(sql, self.schema, self.db.dialect)
            if not fixed.changed:
                raise
            try:
                return self.db.execute(fixed.sql)
            except SqlweaveError:
                raise err from None

    def observe_result(self, result: "QueryResult") -> str:
        """A result as a short table: header, at most ``max_rows`` rows, long cells cut."""
        if not result.rows:
            return f"The query ran and returned no rows (columns: {', '.join(result.columns)})."
        lines = [" | ".join(result.columns)]
        lines += [" | ".join(_cell(v) for v in row) for row in result.rows[: self.max_rows]]
        more = result.row_count - self.max_rows
        if more > 0 or result.truncated:
            lines.append(f"... {'more than ' if result.truncated else ''}{result.row_count} rows in all")
        return "\n".join(lines)

    # one entry point for the agent --------------------------------------------------------------

    def call(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> tuple[str, Any]:
        """Run tool ``name``; return ``(observation text, result object)``. Tool errors become observations."""
        try:
            if name == "SearchColumn":
                cols = self.search_column(*args, **kwargs)
                return "\n".join(c.observation() for c in cols) or "No columns found.", cols
            if name == "SearchValue":
                hits = self.search_value(*args, **kwargs)
                # Weak matches only cost the reader's attention: keep the best one and the close ones.
                hits = [h for i, h in enumerate(hits) if i == 0 or h.score >= 0.6]
                if not hits:
                    return "No stored value is like that.", hits
                return "\n".join(f"{h.table}.{h.column} = {h.value!r}" for h in hits), hits
            if name == "FindShortestPath":
                path = self.find_shortest_path(*args, **kwargs)
                return path.observation(), path
            if name == "ExecuteSQL":
                result = self.execute_sql(*args, **kwargs)
                text = self.observe_result(result)
                if args and result.sql != args[0]:
                    text = f"(names corrected; ran: {result.sql})\n{text}"
                return text, result
        except TypeError as err:
            return f"Error: wrong arguments for {name}: {err}", None
        except DatabaseUnavailableError:
            raise  # no next step of the model's can reach a database that is away: the answer says so now
        except SqlweaveError as err:
            return f"Error: {err.message}" + (f" ({err.hint})" if err.hint else ""), err
        return (f"Error: unknown tool {name!r}. Use one of: SearchColumn, SearchValue, FindShortestPath, "
                "ExecuteSQL, Done."), None


TOOL_NAMES = ("SearchColumn", "SearchValue", "FindShortestPath", "ExecuteSQL", "Done")
