"""Fitting a schema too large for the model's context to a token budget, without a model call.

BM25 over the tables and columns, the tables and columns the question names and, when installed, RB-SQL's dense
retrievers rank every table (:func:`rank_schema`, reciprocal rank fusion, a table lifted by its best foreign-key
neighbour); then the tables the question names and those of its values go in first, the tables that join them
next, and the rest best first, each with what joins it, until the budget is spent (:func:`fit_to_budget`, used
by :mod:`sqlweave.stages.render_schema`).

The table index and the foreign-key graph are built once per schema and kept by the
:class:`~sqlweave.resources.Resources` passed (default: :func:`~sqlweave.resources.shared_resources`), among the
last :data:`~sqlweave.retrieval.schema_retriever.SCHEMA_INDEXES` schemas, keyed by the schema itself.

>>> from sqlweave.schema import Schema, Table, Column
>>> s = Schema("x", (Table("singer", (Column("id"), Column("name"))), Table("stadium", (Column("capacity"),))))
>>> fit = fit_to_budget(s, "Name every singer", 12, lambda sub: 10 * len(sub.tables), dense=False)
>>> fit.schema.table_names, fit.tables_left_out
(('singer',), ('stadium',))
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

from ..errors import SqlweaveError
from ..resources import HashedKey, Resources, shared_resources
from ..schema import Schema
from .lexical import BM25Index
from .schema_retriever import (SCHEMA_INDEXES, _named_in_question, _split, _stem, column_index, dense_scores,
                               table_text)

#: Rank-fusion constant (reciprocal rank fusion, ``1 / (RRF_K + rank)``) for the table and column rankings.
RRF_K = 60

#: The kinds of :func:`table_index`'s and :func:`graph_and_keys`' entries in the resources.
TABLE_INDEX = "schema_table_index"
KEY_GRAPH = "schema_key_graph"


def table_index(schema: Schema, resources: Resources | None = None) -> tuple[tuple[str, ...], BM25Index]:
    """BM25 over RB-SQL's table texts (:func:`~sqlweave.retrieval.schema_retriever.table_text`), built once per
    schema and kept by ``resources`` (default: :func:`~sqlweave.resources.shared_resources`)."""
    def build() -> tuple[tuple[str, ...], BM25Index]:
        names = tuple(t.name for t in schema.tables)
        return names, BM25Index([table_text(schema, t) for t in names])

    res = resources if resources is not None else shared_resources()
    return res.get(TABLE_INDEX, HashedKey(schema), build, keep=SCHEMA_INDEXES)


def graph_and_keys(schema: Schema, resources: Resources | None = None) -> tuple[Any, dict[str, set[str]]]:
    """The foreign-key graph of the schema's tables (as :meth:`Schema.table_graph`, keys to missing tables left
    out) and each table's key columns (primary key and both ends of its foreign keys), built once per schema and
    kept by ``resources`` (default: :func:`~sqlweave.resources.shared_resources`). Read them, never change them."""
    res = resources if resources is not None else shared_resources()
    return res.get(KEY_GRAPH, HashedKey(schema), lambda: _build_graph_and_keys(schema), keep=SCHEMA_INDEXES)


def _build_graph_and_keys(schema: Schema) -> tuple[Any, dict[str, set[str]]]:
    import networkx as nx

    tables = {t.name.lower(): t for t in schema.tables}
    graph = nx.Graph()
    graph.add_nodes_from(t.name for t in schema.tables)
    keys = {t.name: set(t.primary_key) for t in schema.tables}
    for fk in schema.foreign_keys:
        a, b = tables.get(fk.table.lower()), tables.get(fk.ref_table.lower())
        if a is None or b is None:
            continue
        graph.add_edge(a.name, b.name, fk=fk)
        for t, col in ((a, fk.column), (b, fk.ref_column)):
            if t.has_column(col):
                keys[t.name].add(t.column(col).name)
    return graph, keys


def _stemmer():
    from .lexical import _stemmer as english

    stemmer = english()
    return (lambda w: stemmer.stemWord(w.lower())) if stemmer is not None else _stem


def _name_words(name: str, stem) -> list[str]:
    return [stem(w) for w in _split(name)]


def named_tables(schema: Schema, question: str, *, last_segment: bool = False) -> list[str]:
    """Tables the question names: every word of the table's name is in it (``last_segment``: every word of
    the last part of a namespaced name, ``sales.orders`` or ``shop__orders``, is).

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("concert_singer__singer", (Column("id"),)), Table("stadium", (Column("id"),))))
    >>> named_tables(s, "How many singers are there?"), named_tables(s, "How many singers?", last_segment=True)
    ([], ['concert_singer__singer'])
    """
    stem = _stemmer()
    q = {stem(w) for w in re.split(r"[_\W]+", question) if w}
    out = []
    for t in schema.tables:
        name = re.split(r"\.|__", t.name)[-1] if last_segment else t.name
        words = _name_words(name, stem)
        if words and all(w in q for w in words):
            out.append(t.name)
    return out


def _query_text(question: str) -> str:
    """The question, plus each pair of neighbouring words written as one (``high schoolers`` also as
    ``highschoolers``), so BM25 matches the compound names schemas use (``Highschooler``, ``username``)."""
    words = [w for w in re.split(r"[\W_]+", question) if w]
    pairs = [a + b for a, b in zip(words, words[1:]) if a.isalpha() and b.isalpha() and len(a) > 1 and len(b) > 2]
    return " ".join([question, *pairs])


def _ranks(scores: dict, positive_only: bool = True) -> dict:
    """Rank (0 = best) of each key by descending score; keys scoring <= 0 are left out when ``positive_only``."""
    items = sorted(((s, k) for k, s in scores.items() if s > 0 or not positive_only), key=lambda x: -x[0])
    return {k: i for i, (_, k) in enumerate(items)}


def _fuse(rankings: Iterable[dict]) -> dict:
    fused: dict = {}
    for ranking in rankings:
        for k, r in ranking.items():
            fused[k] = fused.get(k, 0.0) + 1.0 / (RRF_K + r + 1)
    return fused


#: Share of a table's best foreign-key neighbour's fused score added to its own: tables joined to the
#: question's best tables come before lone tables that merely share a word with it.
NEIGHBOUR_WEIGHT = 0.5


@dataclass(frozen=True)
class SchemaRanking:
    """Tables best first and a fused score per ``(table, column)``, from the retrievers in ``retrievers``."""

    tables: tuple[str, ...]
    column_scores: dict[tuple[str, str], float]
    retrievers: tuple[str, ...]


def rank_schema(schema: Schema, question: str, *, dense: bool | None = None,
                neighbour_weight: float = NEIGHBOUR_WEIGHT, resources: Resources | None = None) -> SchemaRanking:
    """Rank every table and column for ``question`` without a model call.

    Rankings: BM25 over tables (RB-SQL's table text) and over columns (ASTReS's column text; a table counts
    with its best column), the tables whose name (or last namespace segment) the question names and those with
    columns it names, and, when ``dense`` (``None``: when the embedding extra is installed), RB-SQL's dense
    Table- and Column-Retrievers. They are merged by reciprocal rank fusion; then each table gains
    ``neighbour_weight`` times the score of its best foreign-key neighbour, so the tables that join the
    question's tables rank near them. Should the dense retrievers fail to load, the others rank alone
    (``retrievers`` says which ran). ``resources`` keep the indexes built and the embedding model."""
    names, tindex = table_index(schema, resources)
    cindex = column_index(schema, resources)
    query = _query_text(question)
    t_bm25 = {names[i]: s for i, s in tindex.search(query, k=len(names))}
    c_bm25 = {cindex.columns[i]: s for i, s in cindex.index.search(query, k=len(cindex.columns))}
    table_rankings = [_ranks(t_bm25), _ranks(_best_per_table(c_bm25))]
    column_rankings = [_ranks(c_bm25)]
    retrievers = ["bm25"]
    if dense is None:
        from .dense import embeddings_available

        dense = embeddings_available()
    if dense:
        try:
            t_dense, c_dense = dense_scores(schema, question, resources=resources)
        except SqlweaveError:
            pass  # the embedding model is missing or broken: the others rank alone
        else:
            table_rankings += [_ranks(t_dense, False), _ranks(_best_per_table(c_dense), False)]
            column_rankings.append(_ranks(c_dense, False))
            retrievers.append("dense")
    named: dict[str, int] = {t: 1 for t in named_tables(schema, question, last_segment=True)}
    table_rankings.append(_ranks(named))
    named_cols: dict[str, int] = {}
    for t, _ in _named_in_question(schema, question):
        named_cols[t] = named_cols.get(t, 0) + 1
    table_rankings.append(_ranks(named_cols))
    fused = _fuse(table_rankings)
    if neighbour_weight:
        graph, _ = graph_and_keys(schema, resources)
        fused = {t: fused.get(t, 0.0) + neighbour_weight * max((fused.get(n, 0.0) for n in graph[t]), default=0.0)
                 for t in names}
    position = {t: i for i, t in enumerate(names)}
    order = sorted(names, key=lambda t: (-fused.get(t, 0.0), position[t]))
    return SchemaRanking(tuple(order), _fuse(column_rankings), tuple(retrievers))


def _best_per_table(scores: dict[tuple[str, str], float]) -> dict[str, float]:
    best: dict[str, float] = {}
    for (t, _), s in scores.items():
        if t not in best or s > best[t]:
            best[t] = s
    return best


@dataclass(frozen=True)
class BudgetFit:
    """What :func:`fit_to_budget` kept of a schema, and what it left out."""

    schema: Schema
    budget: int
    tokens_before: int
    tokens_after: int
    tables_left_out: tuple[str, ...]
    #: ``table.column`` names left out of tables that were kept.
    columns_left_out: tuple[str, ...]
    #: Tables that went in first: the ones the question names and those holding the values it names.
    kept_first: tuple[str, ...]
    retrievers: tuple[str, ...]

    def notes(self) -> dict[str, object]:
        """The trace's account of the fit."""
        return {"schema_budget": self.budget, "schema_tokens_full": self.tokens_before,
                "schema_tokens": self.tokens_after, "tables_total": len(self.schema.tables) + len(self.tables_left_out),
                "tables_kept": len(self.schema.tables), "tables_left_out": list(self.tables_left_out),
                "columns_left_out": list(self.columns_left_out), "kept_first": list(self.kept_first),
                "retrievers": "+".join(self.retrievers)}


def fit_to_budget(schema: Schema, question: str, budget: int, measure: Callable[[Schema], int], *,
                  tokens_before: int | None = None, dense: bool | None = None,
                  also_keep: Iterable[tuple[str, str]] = (), max_bridge: int = 2,
                  table_costs: dict[str, int] | None = None, resources: Resources | None = None) -> BudgetFit:
    """The part of ``schema`` whose rendering (``measure`` returns its tokens) fits ``budget`` tokens.

    First the tables the question names (:func:`named_tables`) and those holding the columns in ``also_keep``
    (the values it names) go in, whole or, when one alone is larger than the room left, with its keys, those
    columns and its best columns; then the tables on the shortest foreign-key paths (at most ``max_bridge`` in
    between) that join them; then the rest best first (:func:`rank_schema`), each with the tables that join it
    to those already in, so joins stay possible. The result is measured, and the last tables taken out again
    while it is over the budget. ``table_costs`` (tokens of each table rendered alone) may be given to save
    measuring them. ``resources`` keep the indexes built and the embedding model (see :func:`rank_schema`).
    Never fails: with no room at all, the schema is empty.
    """
    import networkx as nx

    before = measure(schema) if tokens_before is None else tokens_before
    if before <= budget:
        return BudgetFit(schema, budget, before, before, (), (), (), ())
    ranking = rank_schema(schema, question, dense=dense, resources=resources)
    extra: dict[str, set[str]] = {}
    for t, c in also_keep:
        if schema.has_table(t) and schema.table(t).has_column(c):
            extra.setdefault(schema.table(t).name, set()).add(schema.table(t).column(c).name)
    rank = {t: i for i, t in enumerate(ranking.tables)}
    first = sorted(dict.fromkeys([*named_tables(schema, question), *extra]), key=rank.__getitem__)
    order = first + [t for t in ranking.tables if t not in first]
    costs = table_costs if table_costs is not None else {t.name: measure(schema.subset({t.name: None}))
                                                        for t in schema.tables}
    tables = {t.name.lower(): t.name for t in schema.tables}
    fk_cost = dict.fromkeys(tables.values(), 0)
    for fk in schema.foreign_keys:  # a FOREIGN KEY line or a join line per key, not in the table's cost alone
        if fk.table.lower() in tables:
            fk_cost[tables[fk.table.lower()]] += 16
    graph, keys = graph_and_keys(schema, resources)
    component = {n: i for i, c in enumerate(nx.connected_components(graph)) for n in c}

    def cost(t: str) -> int:
        return costs[t] + fk_cost[t] + 2

    chosen: dict[str, set[str] | None] = {}  # table -> None (every column) or the columns kept
    used = 0

    def bridges(t: str) -> list[str]:
        """Tables on the shortest foreign-key paths from ``t`` to the chosen tables, not chosen yet."""
        out: list[str] = []
        for other in chosen:
            if other == t or component.get(other) != component.get(t):
                continue
            path = nx.shortest_path(graph, t, other)
            if len(path) - 2 <= max_bridge:
                out += [b for b in path[1:-1] if b not in chosen and b not in out and b in costs]
        return out

    def take(group: list[str]) -> bool:
        nonlocal used
        group_cost = sum(cost(x) for x in group)
        if used + group_cost > budget:
            return False
        for x in group:
            chosen[x] = None
        used += group_cost
        return True

    for t in first:  # the tables the question names and those of its values, whole or trimmed
        if not take([t]):
            cols = _trimmed(schema, t, budget - used, measure, ranking, keys, extra.get(t, set()))
            if cols:
                chosen[t] = cols
                used += measure(schema.subset({t: cols})) + fk_cost[t] + 2
    for t in first:  # then what joins them
        if t in chosen:
            take(bridges(t))
    smallest = min(cost(t) for t in order) if order else 0
    for t in order:  # then the best of the rest, each with what joins it to the tables already in
        if budget - used < smallest:
            break
        if t in chosen:
            continue
        if not take([t, *bridges(t)]) and not take([t]) and not chosen:
            cols = _trimmed(schema, t, budget - used, measure, ranking, keys, set())
            if cols:
                chosen[t] = cols
                used += measure(schema.subset({t: cols})) + fk_cost[t] + 2
    added = list(chosen)
    kept = schema.subset(dict(chosen)) if chosen else replace(schema, tables=(), foreign_keys=())
    after = measure(kept) if kept.tables else 0
    while after > budget and added:
        drop = added.pop()
        chosen.pop(drop)
        kept = schema.subset(dict(chosen)) if chosen else replace(schema, tables=(), foreign_keys=())
        after = measure(kept) if kept.tables else 0
    left_out = tuple(t.name for t in schema.tables if t.name not in chosen)
    cols_out = tuple(f"{t}.{c.name}" for t, cols in chosen.items() if cols is not None
                     for c in schema.table(t).columns if c.name not in cols)
    return BudgetFit(kept, budget, before, after, left_out, cols_out, tuple(t for t in first if t in chosen),
                     ranking.retrievers)


def _trimmed(schema: Schema, table: str, room: int, measure: Callable[[Schema], int], ranking: SchemaRanking,
             keys: dict[str, set[str]], must: set[str]) -> set[str]:
    """The most columns of ``table`` (keys and ``must`` first, then best scoring) whose rendering fits ``room``."""
    t = schema.table(table)
    ordered = sorted(t.columns, key=lambda c: (c.name not in must, c.name not in keys.get(table, set()),
                                               -ranking.column_scores.get((table, c.name), 0.0),
                                               t.columns.index(c)))
    names = [c.name for c in ordered]
    lo, hi = 0, len(names)  # the largest n whose first n columns fit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure(schema.subset({table: names[:mid]})) + 2 <= room:
            lo = mid
        else:
            hi = mid - 1
    return set(names[:lo])
