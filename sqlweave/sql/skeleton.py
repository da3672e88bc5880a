"""SQL skeletons and the entities a query uses, from the sqlglot AST.

A skeleton keeps the query's structure (keywords, operators, functions) and masks every
table, column, alias and value with ``_``, as DAC and RB-SQL use it.

>>> sql_skeleton("SELECT T1.name, count(*) FROM singer AS T1 WHERE T1.age > 30 GROUP BY T1.name")
'SELECT _, COUNT(*) FROM _ WHERE _ > _ GROUP BY _'
>>> sorted(sql_entities("SELECT s.name FROM singer AS s JOIN concert AS c ON s.id = c.sid")[1])
['id', 'name', 'sid']
"""

from __future__ import annotations

from sqlglot import exp

from .validate import parse_one

_MASK = "_"


def sql_skeleton(sql: str | exp.Expression, dialect: str | None = "sqlite") -> str:
    """The query with identifiers and values replaced by ``_`` (aliases dropped)."""
    tree = parse_one(sql, dialect) if isinstance(sql, str) else sql.copy()

    def unalias(node: exp.Expression) -> exp.Expression | None:
        if isinstance(node, exp.TableAlias):
            return None
        if isinstance(node, exp.Alias):
            return node.this
        return node

    def mask(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            return exp.var(_MASK)
        if isinstance(node, exp.Table):
            return exp.Table(this=exp.var(_MASK))
        if isinstance(node, (exp.Literal, exp.Boolean, exp.Null)):
            return exp.var(_MASK)
        return node

    unaliased = tree.transform(unalias)
    assert unaliased is not None  # the root is a statement, never a TableAlias (and sqlglot asserts a root)
    return unaliased.transform(mask).sql(dialect=dialect)


def sql_entities(sql: str | exp.Expression, dialect: str | None = "sqlite") -> tuple[set[str], set[str]]:
    """``(tables, columns)`` the query names, lower-cased (columns without their table)."""
    tree = parse_one(sql, dialect) if isinstance(sql, str) else sql
    tables = {t.name.lower() for t in tree.find_all(exp.Table) if t.name}
    columns = {c.name.lower() for c in tree.find_all(exp.Column) if c.name and not isinstance(c.this, exp.Star)}
    return tables, columns
