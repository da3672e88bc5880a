"""Schema pruning: keep the tables and columns a question needs, and the keys that join them.

Columns are scored with BM25 against a text made of their table, name, type, description
and sample values (snake_case split into words), as ASTReS (section 4.1) does. Methods:

- ``bm25``: the top ``k`` columns; a table is kept if any of its columns is.
- ``hybrid``: ASTReS's dynamic top-k: ``k = factor x`` the number of distinct columns of an
  approximated query (a cheap first pass), merged with the tables and columns that query uses; with
  ``loose`` (the default), a column the approximation reads from a table that lacks it is resolved
  to the tables that have it and to close names in its own tables.
- ``dense``: RB-SQL's Table-Retriever then Column-Retriever (sections 4.2.1-4.2.2), scored by late
  interaction (MaxSim over token embeddings of the bundled all-MiniLM-L6-v2, see
  :mod:`sqlweave.retrieval.late_interaction`; ``scoring="cosine"`` uses sentence embeddings instead).
  A table ``"name: t || c1: type1 | c2: type2 ..."`` is kept if it scores within ``theta`` of the best
  table; in kept tables a column ``"t || c : description [sample values]"`` is kept if it scores within
  ``mu`` of the best such column or is among the ``k`` best. A table whose text is longer than the
  encoder's input (section 4.2.3) is first shortened to its columns scoring within ``mu_coarse`` of its
  best column, and then scored. RB-SQL's thresholds are absolute because its encoders are fine-tuned
  for the task; the scores of an untrained encoder are not calibrated across questions, so the
  thresholds here are margins below the best score (a dynamic top-k). Defaults
  (:data:`DENSE_DEFAULTS`) were set on Spider dev. Untrained, the dense retrievers rank columns worse
  than BM25 (see ``benchmarks/bench_pruning.py``); ``hybrid-dense`` uses them for extra recall.
- ``dense-table``: the Table-Retriever alone (every column of a kept table).
- ``hybrid-dense``: the union of ``hybrid`` (or ``bm25`` top-``k`` without an approximated query) and a
  stricter ``dense`` (:data:`HYBRID_DENSE_DEFAULTS`: tables and columns within 0.1 of the best, at
  least 2 columns), for recall.

Whatever the method, the primary keys of kept tables, the foreign-key columns between them,
and the tables on the shortest foreign-key path between kept tables (networkx) are added,
so the pruned schema can still express every join it needs.

A schema too large for the model's context is first fitted to a token budget
(:func:`sqlweave.retrieval.budget_fit.fit_to_budget`, used by :mod:`sqlweave.stages.render_schema`): the same
retrievers, which need no model call, rank its tables, and the best ones go in, with the tables that join them,
until the budget is spent.

What is built per schema (its BM25 column index here, the table index and foreign-key graph of the budget fit)
is kept by the :class:`~sqlweave.resources.Resources` passed as ``resources`` (default:
:func:`~sqlweave.resources.shared_resources`), for the :data:`SCHEMA_INDEXES` schemas used last, keyed by the
schema itself: a schema a policy narrows, or another database's schema, has entries of its own.

>>> from sqlweave.schema import Schema, Table, Column, ForeignKey
>>> s = Schema("x", (Table("singer", (Column("id", primary_key=True), Column("name"), Column("age"))),
...                  Table("stadium", (Column("id", primary_key=True), Column("capacity")))))
>>> kept = prune(s, "How old is each singer?", k=1)
>>> kept.table_names, kept.table("singer").column_names
(('singer',), ('id', 'age'))
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable

from ..errors import ConfigurationError, SqlweaveError
from ..resources import HashedKey, Resources, shared_resources
from ..schema import Schema
from ..sql.validate import parse_one
from .lexical import BM25Index

METHODS = ("bm25", "hybrid", "dense", "dense-table", "hybrid-dense")

#: ``scoring -> (theta, mu, mu_coarse)``: margins below the best table / column score of the dense retrievers.
DENSE_DEFAULTS: dict[str, tuple[float, float, float]] = {"maxsim": (0.2, 0.2, 0.3), "cosine": (0.15, 0.3, 0.3)}

#: ``(theta, mu, min columns)`` of the dense part of ``hybrid-dense``: stricter, as BM25 / the approximated query
#: already supply most elements.
HYBRID_DENSE_DEFAULTS: tuple[float, float, int] = (0.1, 0.1, 2)

#: Schemas whose indexes a :class:`~sqlweave.resources.Resources` keeps in memory, of each kind (BM25 over the
#: columns, BM25 over the tables, the foreign-key graph): the least recently used go first. The three of a Spider
#: schema take 35-45 KiB, those of the 20 dev databases as one schema (77 tables, 396 columns) 490 KiB.
SCHEMA_INDEXES = 32

#: The kind of :func:`column_index`'s entries in the resources.
COLUMN_INDEX = "schema_column_index"


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


def column_index(schema: Schema, resources: Resources | None = None) -> _ColumnIndex:
    """BM25 over the schema's columns, built once per schema and kept by ``resources`` (default:
    :func:`~sqlweave.resources.shared_resources`) among its last :data:`SCHEMA_INDEXES`."""
    def build() -> _ColumnIndex:
        cols = tuple((t.name, c.name) for t in schema.tables for c in t.columns)
        return _ColumnIndex(cols, BM25Index([column_text(schema, t, c) for t, c in cols]))

    res = resources if resources is not None else shared_resources()
    return res.get(COLUMN_INDEX, HashedKey(schema), build, keep=SCHEMA_INDEXES)


def query_elements(sql: str, schema: Schema, dialect: str = "sqlite", *,
                   loose: bool = False) -> set[tuple[str, str | None]]:
    """``(table, column)`` pairs an (approximated) query uses, resolved against the schema;
    ``(table, None)`` for a table used without a resolvable column.

    ``loose`` also resolves the columns an approximated query gets wrong: a name that is not in the
    tables it is read from is taken from any table that has it, and from the close names
    (difflib, ratio >= 0.75) in the query's own tables (``T1.Maker`` read from ``car_names``
    keeps ``car_names.Make`` and ``car_makers.Maker``).
    """
    from sqlglot import exp

    try:
        tree = parse_one(sql, dialect)
    except SqlweaveError:
        return set()
    aliases: dict[str, str] = {}
    tables = []
    for node in tree.find_all(exp.Table):
        if schema.has_table(node.name):
            real = schema.table(node.name).name
            tables.append(real)
            aliases[(node.alias_or_name).lower()] = real
    found: set[tuple[str, str | None]] = {(t, None) for t in tables}
    for col in tree.find_all(exp.Column):
        name = col.name
        owner = aliases.get(col.table.lower()) if col.table else None
        candidates = [owner] if owner else tables
        for t in candidates:
            if t and schema.table(t).has_column(name):
                found.add((t, schema.table(t).column(name).name))
                break
        else:
            if loose:
                found.update(_loose_matches(schema, name, [t for t in candidates if t] or tables))
    return found


def _loose_matches(schema: Schema, name: str, near: list[str]) -> set[tuple[str, str]]:
    """Tables that have a column called ``name``, and close names in the tables ``near``."""
    out = {(t.name, t.column(name).name) for t in schema.tables if t.has_column(name)}
    for t in near:
        cols = {c.name.lower(): c.name for c in schema.table(t).columns}
        for close in difflib.get_close_matches(name.lower(), list(cols), n=2, cutoff=0.75):
            out.add((schema.table(t).name, cols[close]))
    return out


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

    graph = schema.table_graph()
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
          factor: float = 2.0, min_k: int = 4, dialect: str = "sqlite", scoring: str = "maxsim",
          theta: float | None = None, mu: float | None = None, mu_coarse: float | None = None,
          loose: bool = True, also_keep: Iterable[tuple[str, str]] = (), resources: Resources | None = None) -> Schema:
    """The sub-schema for ``question`` (see the module docstring for the methods).

    ``scoring``, ``theta``, ``mu`` and ``mu_coarse`` only matter for the dense methods. ``loose`` resolves
    the approximated query's wrong column names to the likely intended ones (:func:`query_elements`);
    ``also_keep`` adds ``(table, column)`` pairs, e.g. the columns holding values the question names
    (:func:`sqlweave.stages.select_values.select_values`). ``resources`` keep the indexes built (see the
    module docstring) and the embedding model of the dense methods.
    """
    if method not in METHODS:
        raise ConfigurationError(f"unknown pruning method {method!r}", hint=f"Use one of: {', '.join(METHODS)}.")
    extra = [(t, c) for t, c in also_keep if schema.has_table(t) and schema.table(t).has_column(c)]
    if method in ("bm25", "hybrid"):
        return _lexical_prune(schema, question, method=method, k=k, approx_sql=approx_sql, factor=factor,
                              min_k=min_k, dialect=dialect, loose=loose, extra=extra, resources=resources)
    if method == "hybrid-dense":  # the dense part only adds its most confident tables and columns
        theta = HYBRID_DENSE_DEFAULTS[0] if theta is None else theta
        mu = HYBRID_DENSE_DEFAULTS[1] if mu is None else mu
    keep = dense_keep(schema, question, tables_only=method == "dense-table",
                      k=min(k, HYBRID_DENSE_DEFAULTS[2]) if method == "hybrid-dense" else k, scoring=scoring,
                      theta=theta, mu=mu, mu_coarse=mu_coarse, resources=resources)
    if method == "hybrid-dense":
        lexical = _lexical_keep(schema, question, method="hybrid" if approx_sql else "bm25", k=k,
                                approx_sql=approx_sql, factor=factor, min_k=min_k, dialect=dialect, loose=loose,
                                resources=resources)
        for t, cols in lexical.items():
            keep.setdefault(t, set()).update(cols)
    for t, c in [*_named_in_question(schema, question), *extra]:
        keep.setdefault(t, set()).add(c)
    if not keep:
        return schema
    return schema.subset({t: cols for t, cols in _with_join_keys(schema, keep).items()})


def _lexical_keep(schema: Schema, question: str, *, method: str, k: int, approx_sql: str | None, factor: float,
                  min_k: int, dialect: str, loose: bool, resources: Resources | None) -> dict[str, set[str]]:
    approx = (query_elements(approx_sql, schema, dialect, loose=loose) if (method == "hybrid" and approx_sql)
              else set())
    if method == "hybrid" and approx:
        k = max(min_k, round(factor * len({c for _, c in approx if c})))
    idx = column_index(schema, resources)
    keep: dict[str, set[str]] = {}
    for i, score in idx.index.search(question, k=k):
        if score <= 0:
            break
        t, c = idx.columns[i]
        keep.setdefault(t, set()).add(c)
    for t, col in approx:
        keep.setdefault(t, set())
        if col:
            keep[t].add(col)
    return keep


def _lexical_prune(schema: Schema, question: str, *, method: str, k: int, approx_sql: str | None, factor: float,
                   min_k: int, dialect: str, loose: bool, extra: Iterable[tuple[str, str]],
                   resources: Resources | None) -> Schema:
    keep = _lexical_keep(schema, question, method=method, k=k, approx_sql=approx_sql, factor=factor, min_k=min_k,
                         dialect=dialect, loose=loose, resources=resources)
    for t, c in [*_named_in_question(schema, question), *extra]:
        keep.setdefault(t, set()).add(c)
    if not keep:  # nothing matched: keep everything rather than guess
        return schema
    keep = _with_join_keys(schema, keep)
    # A table kept only as a bridge or through its keys still needs at least one column to be useful.
    for t, cols in keep.items():
        table = schema.table(t)
        if not cols and table.columns:
            cols.add(table.columns[0].name)
    return schema.subset({t: cols for t, cols in keep.items()})


# --- dense retrievers (RB-SQL) ---------------------------------------------------------------------------


def table_text(schema: Schema, table: str, columns: tuple[str, ...] | None = None) -> str:
    """RB-SQL's table serialisation ``name: n || c1: ty1 | c2: ty2 ...`` (names split into words).

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("concert_singer", (Column("Singer_ID", "INT"), Column("Name", "TEXT"))),))
    >>> table_text(s, "concert_singer")
    'name: concert singer || Singer ID: int | Name: text'
    """
    t = schema.table(table)
    cols = [t.column(c) for c in columns] if columns is not None else list(t.columns)
    return f"name: {_words(t.name)} || " + " | ".join(f"{_words(c.name)}: {c.type.lower() or 'text'}" for c in cols)


def dense_column_text(schema: Schema, table: str, column: str) -> str:
    """RB-SQL's column serialisation ``t || c : description [examples]``.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("singer", (Column("Country", "TEXT", samples=("France", "USA")),)),))
    >>> dense_column_text(s, "singer", "Country")
    'singer || Country : text [France, USA]'
    """
    t = schema.table(table)
    c = t.column(column)
    samples = [str(v) for v in c.samples if isinstance(v, str) and 0 < len(v) <= 40][:3]
    desc = f" {c.description}" if c.description else ""
    ex = f" [{', '.join(samples)}]" if samples else ""
    return f"{_words(t.name)} || {_words(c.name)} : {c.type.lower() or 'text'}{desc}{ex}"


class _Scorer:
    """Scores texts against one question with MaxSim (token embeddings) or cosine (sentence embeddings)."""

    def __init__(self, question: str, scoring: str, resources: Resources | None = None) -> None:
        if scoring not in DENSE_DEFAULTS:
            raise ConfigurationError(f"unknown dense scoring {scoring!r}", hint=f"Use one of: {', '.join(DENSE_DEFAULTS)}.")
        self.scoring = scoring
        if scoring == "maxsim":
            from .late_interaction import get_token_embedder

            self.te = get_token_embedder(resources=resources)
            self.q = self.te.question_tokens(question)
        else:
            from .dense import get_embedder

            self.emb = get_embedder(resources=resources)
            self.q = self.emb.encode([question])[0]

    def scores(self, texts: list[str]) -> list[float]:
        if not texts:
            return []
        if self.scoring == "maxsim":
            return [self.te.maxsim(self.q, d) for d in self.te.encode(texts)]
        return [float(x) for x in self.emb.encode(texts) @ self.q]

    def too_long(self, text: str) -> bool:
        if self.scoring == "maxsim":
            return self.te.count_tokens(text) > self.te.max_tokens - 2
        return self.emb.count_tokens(text) > int(getattr(self.emb.model, "max_seq_length", 256) or 256) - 2


def dense_scores(schema: Schema, question: str, *, scoring: str = "maxsim", mu_coarse: float | None = None,
                 resources: Resources | None = None) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """``(table scores, column scores)`` of RB-SQL's Table- and Column-Retriever for ``question`` (with the
    embedding model ``resources`` hold).

    A table too long for the encoder is scored on its columns scoring at least ``mu_coarse`` (RB-SQL 4.2.3).
    """
    scorer = _Scorer(question, scoring, resources)
    mu_coarse = DENSE_DEFAULTS[scoring][2] if mu_coarse is None else mu_coarse
    cols = [(t.name, c.name) for t in schema.tables for c in t.columns]
    col_scores = dict(zip(cols, scorer.scores([dense_column_text(schema, t, c) for t, c in cols])))
    texts = []
    for t in schema.tables:
        text = table_text(schema, t.name)
        if scorer.too_long(text):
            ranked = sorted(t.columns, key=lambda c: -col_scores[(t.name, c.name)])
            top = col_scores[(t.name, ranked[0].name)]
            short = tuple(c.name for c in ranked if col_scores[(t.name, c.name)] >= top - mu_coarse)
            text = table_text(schema, t.name, tuple(c.name for c in t.columns if c.name in short))
            while scorer.too_long(text) and len(short) > 1:
                short = short[: max(1, len(short) * 3 // 4)]
                text = table_text(schema, t.name, tuple(c.name for c in t.columns if c.name in short))
        texts.append(text)
    table_scores = dict(zip((t.name for t in schema.tables), scorer.scores(texts)))
    return table_scores, col_scores


def dense_keep(schema: Schema, question: str, *, tables_only: bool = False, k: int = 10, scoring: str = "maxsim",
               theta: float | None = None, mu: float | None = None,
               mu_coarse: float | None = None, resources: Resources | None = None) -> dict[str, set[str]]:
    """Tables (and columns) RB-SQL's retrievers keep for ``question``, before join keys are added."""
    d_theta, d_mu, _ = DENSE_DEFAULTS.get(scoring, (0.0, 0.0, 0.0))
    theta = d_theta if theta is None else theta
    mu = d_mu if mu is None else mu
    table_scores, col_scores = dense_scores(schema, question, scoring=scoring, mu_coarse=mu_coarse,
                                            resources=resources)
    if not table_scores:
        return {}
    best = max(table_scores.values())
    tables = [t for t, s in table_scores.items() if s >= best - theta]
    if tables_only:
        return {t: set(schema.table(t).column_names) for t in tables}
    ranked = sorted(((s, tc) for tc, s in col_scores.items() if tc[0] in tables), key=lambda x: -x[0])
    keep: dict[str, set[str]] = {t: set() for t in tables}
    top = ranked[0][0] if ranked else 0.0
    for i, (s, (t, c)) in enumerate(ranked):
        if s >= top - mu or i < k:
            keep[t].add(c)
    return keep


def prune_stats(schema: Schema, kept: Schema, gold_sql: str, dialect: str = "sqlite") -> tuple[bool, float]:
    """``(recall, shortening)``: whether every gold table and column is kept, and the share of
    schema elements (tables + columns) removed."""
    gold = query_elements(gold_sql, schema, dialect)
    recall = all(kept.has_table(t) and (c is None or kept.table(t).has_column(c)) for t, c in gold)
    total = len(schema.tables) + sum(len(t.columns) for t in schema.tables)
    left = len(kept.tables) + sum(len(t.columns) for t in kept.tables)
    return recall, 1.0 - left / total
