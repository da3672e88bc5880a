"""Why a predicted query is wrong, read from the ASTs of the prediction and the gold query (sqlglot).

Each wrong answer gets the first kind, in this order, whose part of the query differs:

- ``no_sql``: no prediction; ``not_executable``: the prediction did not run;
- ``missing_table`` / ``extra_table`` / ``other_tables``: the set of tables read differs (gold's tables
  missing, tables gold does not need joined, or both);
- ``set_operation``: UNION / INTERSECT / EXCEPT used differently;
- ``nesting``: a subquery where gold has none, or the other way round;
- ``aggregation``: the aggregate functions or the GROUP BY columns (the grain) differ;
- ``select_columns``: the same tables, other columns selected;
- ``filter``: the columns or comparisons of WHERE / HAVING differ;
- ``value``: the same filter on other literal values;
- ``distinct_order_limit``: DISTINCT, ORDER BY or LIMIT differ;
- ``other``: none of these parts differ (join conditions, operators, conventions the metric does not forgive).

>>> classify("SELECT name FROM singer", "SELECT name FROM singer JOIN concert ON singer.id = concert.singer_id")
'missing_table'
>>> classify("SELECT count(*) FROM singer WHERE country = 'France'", "SELECT count(*) FROM singer WHERE country = 'france'")
'value'
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..errors import SqlweaveError
from ..sql.normalize import quoted_values_to_strings
from ..sql.validate import parse_one

KINDS = ("no_sql", "not_executable", "missing_table", "extra_table", "other_tables", "set_operation", "nesting",
         "aggregation", "select_columns", "filter", "value", "distinct_order_limit", "other")


def _tree(sql: str) -> exp.Expression | None:
    """The query's AST, with Spider's double-quoted values read as the strings they are."""
    try:
        return quoted_values_to_strings(parse_one(sql, "sqlite"))
    except (SqlweaveError, SqlglotError, ValueError):
        return None


def _tables(tree: exp.Expression) -> frozenset[str]:
    return frozenset(t.name.lower() for t in tree.find_all(exp.Table) if t.name)


def _columns(nodes: Iterable[exp.Expression]) -> Counter[str]:
    return Counter(c.name.lower() for n in nodes for c in n.find_all(exp.Column))


def _selects(tree: exp.Expression) -> list[exp.Select]:
    return list(tree.find_all(exp.Select))


def _set_ops(tree: exp.Expression) -> Counter[str]:
    return Counter(type(n).__name__ for n in tree.find_all(exp.Union, exp.Intersect, exp.Except))


def _aggregates(tree: exp.Expression) -> Counter[str]:
    return Counter(type(n).__name__ for n in tree.find_all(exp.AggFunc))


def _group_columns(tree: exp.Expression) -> Counter[str]:
    return _columns(g for g in tree.find_all(exp.Group))


def _projection(tree: exp.Expression) -> Counter[str]:
    return Counter(name for s in _selects(tree) for e in s.expressions
                   for name in ([c.name.lower() for c in e.find_all(exp.Column)] or ["*" if e.find(exp.Star) else
                                                                                      type(e.unalias()).__name__]))


def _conditions(tree: exp.Expression) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """Columns, comparison kinds and literal values of WHERE and HAVING."""
    parts = list(tree.find_all(exp.Where, exp.Having))
    cols = _columns(parts)
    ops = Counter(type(n).__name__ for p in parts for n in p.find_all(exp.Predicate))
    lits = Counter(str(n.this) for p in parts for n in p.find_all(exp.Literal))  # 'Haiti' is not 'haiti' to SQLite
    return cols, ops, lits


def _nesting(tree: exp.Expression) -> int:
    return sum(1 for s in _selects(tree) if s is not tree and not isinstance(s.parent, (exp.Union, exp.Intersect,
                                                                                        exp.Except)))


def _modifiers(tree: exp.Expression) -> tuple[bool, Counter[str], str | None]:
    distinct = tree.find(exp.Distinct) is not None  # SELECT DISTINCT and count(DISTINCT x) alike
    order = _columns(tree.find_all(exp.Order)) + Counter(("desc",) if any(o.args.get("desc") for o in
                                                                          tree.find_all(exp.Ordered)) else ())
    limit = tree.find(exp.Limit)
    return distinct, order, None if limit is None else limit.sql()


def classify(pred: str | None, gold: str, *, executable: bool = True) -> str:
    """The kind of mistake ``pred`` makes against ``gold`` (see the module's list)."""
    if not pred or not pred.strip():
        return "no_sql"
    if not executable:
        return "not_executable"
    p, g = _tree(pred), _tree(gold)
    if p is None:
        return "not_executable"
    if g is None:
        return "other"
    tp, tg = _tables(p), _tables(g)
    if tp != tg:
        if tp < tg:
            return "missing_table"
        if tp > tg:
            return "extra_table"
        return "other_tables"
    if _set_ops(p) != _set_ops(g):
        return "set_operation"
    if (_nesting(p) > 0) != (_nesting(g) > 0):
        return "nesting"
    if _aggregates(p) != _aggregates(g) or _group_columns(p) != _group_columns(g):
        return "aggregation"
    if _projection(p) != _projection(g):
        return "select_columns"
    pc, po, pl = _conditions(p)
    gc, go, gl = _conditions(g)
    if pc != gc or po != go:
        return "filter"
    if pl != gl:
        return "value"
    if _modifiers(p) != _modifiers(g):
        return "distinct_order_limit"
    return "other"
