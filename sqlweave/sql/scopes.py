"""One SELECT of a query read against the schema: its tables by alias, and the table each of its columns is from.

Shared by the rules that reason about what a query means (:mod:`sqlweave.sql.rewrite`,
:mod:`sqlweave.sql.fanout`). A SELECT whose columns cannot all be placed for sure (an unqualified name that two
of its tables have, a qualifier that names no table of the schema) is skipped: a rule never guesses.

>>> from sqlweave.schema import Schema, Table, Column
>>> s = Schema("x", (Table("singer", (Column("singer_id"), Column("name"))),
...                  Table("song", (Column("song_id"), Column("singer_id"), Column("title")))))
>>> from sqlweave.sql.validate import parse_one
>>> [sel.tables["t2"].name for sel in readable_selects(parse_one(
...     "SELECT title FROM singer AS t1 JOIN song AS t2 ON t1.singer_id = t2.singer_id"), s)]
['song']
"""

from __future__ import annotations

from typing import Iterator

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from ..schema import Schema, Table


class Unreadable(Exception):
    """A column whose table cannot be told for sure: the rule leaves the query alone."""


class SelectScope:
    """One SELECT's tables by alias, and which alias each of its own columns belongs to."""

    def __init__(self, scope: Scope, schema: Schema) -> None:
        self.scope = scope
        assert isinstance(scope.expression, exp.Select)
        self.node: exp.Select = scope.expression
        self.tables: dict[str, Table] = {}
        self.written: dict[str, exp.Table] = {}  # each alias's table as the query writes it
        for alias, source in scope.sources.items():
            if isinstance(source, exp.Table) and schema.has_table(source.name):
                self.tables[alias.lower()] = schema.table(source.name)
                self.written[alias.lower()] = source
        outputs = {e.alias_or_name.lower() for e in self.node.expressions}
        self.owner: dict[int, str | None] = {}
        for col in scope.columns:
            self.owner[id(col)] = self._owner(col, outputs)

    def _owner(self, col: exp.Column, outputs: set[str]) -> str | None:
        if col.table:
            if col.table.lower() not in self.tables:
                raise Unreadable(col.sql())
            return col.table.lower()
        having = [a for a, t in self.tables.items() if t.has_column(col.name)]
        if len(having) == 1:
            return having[0]
        if not having and col.name.lower() in outputs:
            return None  # an output alias (ORDER BY total)
        raise Unreadable(col.sql())

    def columns_of(self, alias: str) -> list[exp.Column]:
        return [c for c in self.scope.columns if self.owner.get(id(c)) == alias]


def readable_selects(tree: exp.Expression, schema: Schema) -> Iterator[SelectScope]:
    """Each SELECT of ``tree`` (subqueries included) whose every column's table can be told for sure."""
    for scope in traverse_scope(tree):
        if isinstance(scope.expression, exp.Select):
            try:
                yield SelectScope(scope, schema)
            except Unreadable:
                continue
