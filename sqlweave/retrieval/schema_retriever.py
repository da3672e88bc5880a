"""Schema pruning: keep the tables and columns a question needs, and the keys that join them.

Columns are scored with BM25 against a text made of their table, name, type, description
and sample values (snake_case split into words), as ASTReS (section 4.1) does. Methods:

- ``bm25``: the top ``k`` columns; a table is kept if any of its columns is.
- ``hybrid``: ASTReS's dynamic top-k: ``k = factor x`` the number of distinct columns of an
  approximated query (a cheap first pass), merged with the tables and columns that query uses.

Whatever the method, the primary keys of kept tables, the foreign-key columns between them,
and the tables on the shortest foreign-key path between kept tables (networkx) are added,
so the pruned schema can still express every join it needs.

>>> from sqlweave.db.schema import Schema, Table, Column, ForeignKey
>>> s = Schema("x", (Table("singer", (Column("id", primary_key=True), Column("name"), Column("age"))),
...                  Table("stadium", (Column("id", primary_key=True), Column("capacity")))))
>>> kept = prune(s, "How old is each singer?", k=1)
>>> kept.table_names, kept.table("singer").column_names
(('singer',), ('id', 'age'))
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from ..db.schema import Schema
from ..errors import ConfigurationError, SqlweaveError
from ..sql.validate import parse_one
from .lexical import BM25Index

METHODS = ("bm25", "hybrid")


_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _split(text: str) -> list[str]:
    """Words of an identifier: snake_case and CamelCase split (``IsOfficial`` -> ``Is``, ``Official``)."""
    return [w for part in re.split(r"[_\W]+", str(text)) for w in _CAMEL.split(part) if w]


def _words(text: str) -> str:
    return " ".join(_split(text))


def column_text(schema: Schema, table: str, column: str) -> str:
    t = schema.table(table)
    c = t.column(column)
    samples = " ".join(_words(v) for v in c.samples if isinstance(v, str))
    return f"{_words(t.name)} {_words(c.name)} {c.type} {c.description} {samples}"


@dataclass(frozen=True)
class _ColumnIndex:
    columns: tuple[tuple[str, str], ...]
    index: BM25Index


_INDEXES: dict[tuple[str, int], _ColumnIndex] = {}
_LOCK = threading.Lock()


def column_index(schema: Schema) -> _ColumnIndex:
    """BM25 over the schema's columns, built once per schema."""
    key = (schema.name, hash(schema))
    with _LOCK:
        if key not in _INDEXES:
            cols = tuple((t.name, c.name) for t in schema.tables for c in t.columns)
            _INDEXES[key] = _ColumnIndex(cols, BM25Index([column_text(schema, t, c) for t, c in cols]))
        return _INDEXES[key]


def query_elements(sql: str, schema: Schema, dialect: str = "sqlite") -> set[tuple[str, str | None]]:
    """``(table, column)`` pairs an (approximated) query uses, resolved against the schema;
    ``(table, None)`` for a table used without a resolvable column."""
    from sqlglot import exp

    try:
        tree = parse_one(sql, dialect)
    except SqlweaveError:
        return set()
    aliases: dict[str, str] = {}
    tables = []
    for t in tree.find_all(exp.Table):
        if schema.has_table(t.name):
            real = schema.table(t.name).name
            tables.append(real)
            aliases[(t.alias_or_name).lower()] = real
    found: set[tuple[str, str | None]] = {(t, None) for t in tables}
    for col in tree.find_all(exp.Column):
        name = col.name
        owner = aliases.get(col.table.lower()) if col.table else None
        candidates = [owner] if owner else tables
        for t in candidates:
            if t and schema.table(t).has_column(name):
                found.add((t, schema.table(t).column(name).name))
                break
    return found


def _stem(word: str) -> str:
    w = word.lower()
    return w[:-1] if len(w) > 3 and w.endswith("s") else w


def _named_in_question(schema: Schema, question: str) -> list[tuple[str, str]]:
    """Columns whose every name word appears in the question (``song_name`` for "... song name ...")."""
    q = {_stem(w) for w in re.split(r"[_\W]+", question) if w}
    found = []
    for t in schema.tables:
        for c in t.columns:
            words = [_stem(w) for w in _split(c.name)]
            if words and all(w in q for w in words) and not (len(words) == 1 and words[0] in ("id", "name")):
                found.append((t.name, c.name))
    return found


def _with_join_keys(schema: Schema, keep: dict[str, set[str]]) -> dict[str, set[str]]:
    """Add bridge tables on shortest FK paths between kept tables, then primary and foreign keys."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(t.name for t in schema.tables)
    for fk in schema.foreign_keys:
        graph.add_edge(fk.table, fk.ref_table)
    kept = [t for t in keep if t in graph]
    for i, a in enumerate(kept):
        for b in kept[i + 1:]:
            try:
                path = nx.shortest_path(graph, a, b)
            except nx.NetworkXNoPath:
                continue
            for t in path:
                keep.setdefault(t, set())
    for t in list(keep):
        keep[t].update(schema.table(t).primary_key)
    for fk in schema.foreign_keys:
        if fk.table in keep and fk.ref_table in keep:
            keep[fk.table].add(fk.column)
            keep[fk.ref_table].add(fk.ref_column)
    return keep


def prune(schema: Schema, question: str, *, method: str = "bm25", k: int = 10, approx_sql: str | None = None,
          factor: float = 2.0, min_k: int = 4, dialect: str = "sqlite") -> Schema:
    """The sub-schema for ``question`` (see the module docstring for the methods)."""
    if method not in METHODS:
        raise ConfigurationError(f"unknown pruning method {method!r}", hint=f"Use one of: {', '.join(METHODS)}.")
    approx = query_elements(approx_sql, schema, dialect) if (method == "hybrid" and approx_sql) else set()
    if method == "hybrid" and approx:
        k = max(min_k, round(factor * len({c for _, c in approx if c})))
    idx = column_index(schema)
    keep: dict[str, set[str]] = {}
    for i, score in idx.index.search(question, k=k):
        if score <= 0:
            break
        t, c = idx.columns[i]
        keep.setdefault(t, set()).add(c)
    for t, c in approx:
        keep.setdefault(t, set())
        if c:
            keep[t].add(c)
    for t, c in _named_in_question(schema, question):
        keep.setdefault(t, set()).add(c)
    if not keep:  # nothing matched: keep everything rather than guess
        return schema
    keep = _with_join_keys(schema, keep)
    # A table kept only as a bridge or through its keys still needs at least one column to be useful.
    return schema.subset({t: cols for t, cols in keep.items()})


def prune_stats(schema: Schema, kept: Schema, gold_sql: str, dialect: str = "sqlite") -> tuple[bool, float]:
    """``(recall, shortening)``: whether every gold table and column is kept, and the share of
    schema elements (tables + columns) removed."""
    gold = query_elements(gold_sql, schema, dialect)
    recall = all(kept.has_table(t) and (c is None or kept.table(t).has_column(c)) for t, c in gold)
    total = len(schema.tables) + sum(len(t.columns) for t in schema.tables)
    left = len(kept.tables) + sum(len(t.columns) for t in kept.tables)
    return recall, 1.0 - left / total
