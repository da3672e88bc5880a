"""Find sums and averages that a join counts more than once (fan-out), so the answer can say so.

``SELECT SUM(o.total) FROM orders AS o JOIN order_items AS i ON i.order_id = o.id`` adds each order's total once
per item: the join repeats every order row for each row of ``order_items`` that refers to it, and a ``SUM`` or
``AVG`` of the order's own columns counts those copies. Analysts ask for warnings about exactly this (joins that
double-count are among the most reported problems of text-to-SQL tools). The query runs and returns a
plausible number, so nothing else in the pipeline notices.

A caution is raised for a ``SUM`` or ``AVG`` (not ``DISTINCT``) whose columns all belong to one table ``X`` of a
SELECT that joins ``X`` to a table ``Y`` on a foreign key of ``Y`` that refers to ``X`` (so several ``Y`` rows
may share one ``X`` row), unless the SELECT groups by ``Y``'s primary key (one ``Y`` row per group). Only
declared foreign keys count, and a SELECT whose columns cannot all be placed for sure is skipped: the check never
guesses. ``MIN``, ``MAX`` and ``COUNT`` are left alone (a count of joined rows is often what was asked).

>>> from sqlweave.schema import Schema, Table, Column, ForeignKey
>>> s = Schema("shop", (Table("orders", (Column("id", primary_key=True), Column("total"))),
...                     Table("order_items", (Column("id", primary_key=True), Column("order_id"),
...                                           Column("sku")))),
...            (ForeignKey("order_items", "order_id", "orders", "id"),))
>>> fan_outs("SELECT SUM(o.total) FROM orders AS o JOIN order_items AS i ON i.order_id = o.id", s)
['SUM(o.total) counts each orders row once per order_items row joined to it (fan-out): \
aggregate orders before the join, or keep the join as a filter (o.id IN (SELECT order_id FROM order_items))']
>>> fan_outs("SELECT SUM(o.total) FROM orders AS o WHERE o.id IN (SELECT order_id FROM order_items)", s)
[]
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..schema import Schema
from ..errors import SqlweaveError
from .scopes import SelectScope, readable_selects
from .validate import parse_one


def _many_sides(sel: SelectScope, schema: Schema) -> list[tuple[str, str, exp.Column, exp.Column]]:
    """``(one, many, key, foreign_key)`` for each join condition ``many.foreign_key = one.key`` of ``sel`` that a
    declared foreign key of ``many`` to ``one`` backs (aliases, lowercase; the two columns as written)."""
    declared = {(f.table.lower(), f.column.lower(), f.ref_table.lower(), f.ref_column.lower())
                for f in schema.foreign_keys}
    found: list[tuple[str, str, exp.Column, exp.Column]] = []
    for join in sel.node.args.get("joins") or []:
        on = join.args.get("on")
        for eq in on.find_all(exp.EQ) if on is not None else []:
            left, right = eq.this, eq.expression
            if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
                continue
            for one_col, many_col in ((left, right), (right, left)):
                one, many = sel.owner.get(id(one_col)), sel.owner.get(id(many_col))
                if one is None or many is None or one == many:
                    continue
                key = (sel.tables[many].name.lower(), many_col.name.lower(), sel.tables[one].name.lower(),
                       one_col.name.lower())
                if key in declared:
                    found.append((one, many, one_col, many_col))
    return found


def _grouped_by_key(sel: SelectScope, alias: str) -> bool:
    """Does ``sel`` group by every column of ``alias``'s table's primary key (one row of it per group)?"""
    group = sel.node.args.get("group")
    primary = {k.lower() for k in sel.tables[alias].primary_key}
    if group is None or not primary:
        return False
    grouped = {c.name.lower() for c in group.find_all(exp.Column) if sel.owner.get(id(c)) == alias}
    return primary <= grouped


def fan_outs(sql: str, schema: Schema, dialect: str = "sqlite") -> list[str]:
    """A caution for each ``SUM``/``AVG`` of ``sql`` that a join may count more than once (see the module
    docstring); empty when there is none or the SQL cannot be read for sure."""
    try:
        tree = parse_one(sql, dialect)
        cautions: list[str] = []
        for sel in readable_selects(tree, schema):
            sides = _many_sides(sel, schema)
            if not sides:
                continue
            own = {id(c) for c in sel.scope.columns}
            for agg in sel.node.find_all(exp.Sum, exp.Avg):
                columns = [c for c in agg.find_all(exp.Column)]
                if isinstance(agg.this, exp.Distinct) or not columns or any(id(c) not in own for c in columns):
                    continue
                owners = {sel.owner.get(id(c)) for c in columns}
                if len(owners) != 1 or None in owners:
                    continue
                table = owners.pop()
                for one, many, key, foreign_key in sides:
                    if one != table or _grouped_by_key(sel, many):
                        continue
                    one_name, many_name = sel.tables[one].name, sel.tables[many].name
                    member = exp.column(key.this.copy(), table=key.args.get("table")).sql(dialect=dialect)
                    source = exp.select(exp.column(foreign_key.this.copy())).from_(
                        exp.table_(sel.written[many].this.copy())).sql(dialect=dialect)
                    cautions.append(
                        f"{agg.sql(dialect=dialect)} counts each {one_name} row once per {many_name} row joined to it "
                        f"(fan-out): aggregate {one_name} before the join, or keep the join as a filter "
                        f"({member} IN ({source}))")
                    break
        return list(dict.fromkeys(cautions))
    except (SqlglotError, SqlweaveError, RecursionError):  # a query the check cannot read: no caution for sure
        return []
