"""With the schema at hand, what SQLite reads by itself, in forms PostgreSQL, DuckDB and MySQL read (phase
``schema``): names spelt as the schema does, double-quoted strings, dates and numbers kept as text, booleans.

Each rule changes the tree in place; :data:`SCHEMA_FORMS` lists them in the order they run, with the dialects
each applies to (MySQL reads text as dates and numbers, and ``"x"`` as a string, as SQLite does: only the
tables' spelling is its own). :func:`sqlweave.sql.transpile.for_schema` runs them over a query parsed once.

>>> from sqlweave.schema import Schema, Table, Column
>>> from .base import Context, apply, parse
>>> s = Schema("x", (Table("t", (Column("id", "INTEGER"), Column("ok", "BOOLEAN"))),), dialect="postgres")
>>> tree, fired = apply(parse("SELECT id FROM t WHERE ok = 1", "postgres"), SCHEMA_FORMS, Context("postgres", s))
>>> tree.sql("postgres"), fired
('SELECT id FROM t WHERE ok = TRUE', ['boolean_numbers'])
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp

from ...schema import is_composite_type, is_number_type
from .base import Context, Rule, unparen
from .foreign_dates import COMPARISONS, NUMERIC_FIELDS
from .schema_types import (BOOLEAN_TYPE, DATE_TYPE, DATE_VALUES, NUMBER_TEXT, TEXT_TYPE, column_is, is_text_type,
                           tables_read)

if TYPE_CHECKING:
    from ...schema import Schema

#: A text read as a number, NULL where it spells none, per engine (the default: PostgreSQL's).
_AS_NUMBER: dict[str, Callable[[exp.Expression], exp.Expression]] = {"duckdb": lambda node: _try_double(node)}

def _case_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    tables = {t.name.lower(): t.name for t in schema.tables}
    columns: dict[str, set[str]] = {}
    for t in schema.tables:
        for c in t.columns:
            columns.setdefault(c.name.lower(), set()).add(c.name)
    defined = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    defined |= {a.name.lower() for a in tree.find_all(exp.TableAlias) if a.name}
    defined |= {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    changed = False

    def quote(ident: exp.Identifier, spelled: str) -> None:
        nonlocal changed
        ident.set("this", spelled)
        ident.set("quoted", True)
        changed = True

    def table_name(ident: exp.Expression | None) -> None:
        if not isinstance(ident, exp.Identifier):
            return
        low, seen = ident.name.lower(), ident.name if ident.quoted else ident.name.lower()
        real = tables.get(low)
        if real and real != seen and low not in defined and seen not in tables.values():
            quote(ident, real)

    for table in tree.find_all(exp.Table):
        table_name(table.this)
    for col in tree.find_all(exp.Column):
        ident = col.this
        if isinstance(ident, exp.Identifier):
            low, seen = ident.name.lower(), ident.name if ident.quoted else ident.name.lower()
            spellings = columns.get(low, set())
            if len(spellings) == 1 and seen not in spellings and low not in defined:
                quote(ident, next(iter(spellings)))
        table_name(col.args.get("table"))
    return changed


def _table_case(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    """MySQL and MariaDB on Linux find a table, and a table's alias, only by its exact spelling (column names in
    any case): a table name that matches one table of the schema in another case is spelt as the schema spells
    it, and a column's table (``T2.id`` after ``ship AS t2``) as the query spells that table or alias."""
    names = {t.name for t in schema.tables}
    lower: dict[str, list[str]] = {}
    for name in names:
        lower.setdefault(name.lower(), []).append(name)
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    changed = False
    for table in tree.find_all(exp.Table):
        ident = table.this
        if not isinstance(ident, exp.Identifier) or ident.name in names or ident.name in ctes:
            continue
        spellings = lower.get(ident.name.lower(), [])
        if len(spellings) == 1:
            ident.set("this", spellings[0])
            changed = True
    # what a column may name as its table: the query's aliases and the tables it reads under their own name
    spelt: dict[str, set[str]] = {}
    for table in tree.find_all(exp.Table):
        spelt.setdefault(table.alias_or_name.lower(), set()).add(table.alias_or_name)
    for alias in tree.find_all(exp.TableAlias):
        if alias.name:
            spelt.setdefault(alias.name.lower(), set()).add(alias.name)
    for col in tree.find_all(exp.Column):
        ident = col.args.get("table")
        if not isinstance(ident, exp.Identifier) or ident.name in spelt.get(ident.name.lower(), {ident.name}):
            continue
        options = spelt.get(ident.name.lower(), set())
        if len(options) == 1:
            ident.set("this", next(iter(options)))
            changed = True
    return changed


def _patterns_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    likes = [like for like in tree.find_all(exp.Like, exp.ILike) if isinstance(like.this, exp.Column)]
    if not likes:
        return False
    read = tables_read(tree, schema)
    changed = False
    for like in likes:
        if column_is(like.this, schema, read, lambda ty: not is_text_type(ty)):
            like.set("this", exp.Cast(this=like.this.copy(), to=exp.DataType.build("text")))
            changed = True
    return changed


def _dates_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    comparisons = list(tree.find_all(exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between))
    if not comparisons:
        return False
    read = tables_read(tree, schema)

    def is_text(node: exp.Expression) -> bool:
        return column_is(node, schema, read, is_text_type)

    def is_date(node: exp.Expression | None) -> bool:
        node = unparen(node)
        if node is None:
            return False
        if isinstance(node, DATE_VALUES) or isinstance(node, exp.Interval):
            return True
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return node.to.is_type(*exp.DataType.TEMPORAL_TYPES)
        if isinstance(node, (exp.Add, exp.Sub)):
            return is_date(node.this) or is_date(node.expression)
        return column_is(node, schema, read, lambda ty: DATE_TYPE.search(ty) and not TEXT_TYPE.search(ty)
                          and not is_composite_type(ty))

    def as_timestamp(node: exp.Expression) -> None:
        node.replace(exp.Cast(this=node.copy(), to=exp.DataType.build("timestamp")))

    changed = False
    for cmp in comparisons:
        if isinstance(cmp, exp.Between):
            sides = [cmp.this, cmp.args.get("low"), cmp.args.get("high")]
        else:
            sides = [cmp.this, cmp.expression]
        if not any(is_date(side) for side in sides):
            continue
        for side in sides:
            inner = unparen(side)
            if inner is not None and is_text(inner):
                as_timestamp(inner)
                changed = True
    return changed


def _booleans_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    comparisons = list(tree.find_all(exp.EQ, exp.NEQ))
    sums = list(tree.find_all(exp.Sum, exp.Avg))
    if not comparisons and not sums:
        return False
    read = tables_read(tree, schema)

    def is_boolean(node: exp.Expression | None) -> bool:
        return column_is(node, schema, read, BOOLEAN_TYPE.match)

    changed = False
    for cmp in comparisons:
        for side, other in (("this", cmp.expression), ("expression", cmp.this)):
            number = cmp.args.get(side)
            if (is_boolean(other) and isinstance(number, exp.Literal) and not number.is_string
                    and number.name in ("0", "1")):
                cmp.set(side, exp.Boolean(this=number.name == "1"))
                changed = True
    for agg in sums:
        if is_boolean(agg.this):
            agg.set("this", exp.cast(agg.this.copy(), "INTEGER"))
            changed = True
    return changed


def _numeric_field(node: exp.Expression | None) -> exp.Expression | None:
    """The date field of one number that ``node`` writes as text (``TO_CHAR(d, 'YYYY')``, ``strftime(d, '%Y')``,
    and the weekday as PostgreSQL's form of ``%w`` spells it, ``CAST(EXTRACT(DOW FROM d) AS TEXT)``), or None."""
    node = unparen(node)
    if isinstance(node, exp.TimeToStr):
        fmt = node.args.get("format")
        return node if isinstance(fmt, exp.Literal) and fmt.name in NUMERIC_FIELDS else None
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEXT_TYPES) and isinstance(node.this, exp.Extract):
        return node.this
    return None


def _fields_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    comparisons = [c for c in tree.find_all(*COMPARISONS) if not isinstance(c, exp.Like)
                   and any(_numeric_field(side) is not None for side in (c.this, c.expression))]
    if not comparisons:
        return False
    read = tables_read(tree, schema)
    changed = False
    for cmp in comparisons:
        for side, other in (("this", cmp.expression), ("expression", cmp.this)):
            number = _numeric_field(cmp.args.get(side))
            if number is not None and column_is(unparen(other), schema, read, is_number_type):
                cmp.set(side, exp.cast(number.copy(), "INTEGER"))
                changed = True
    return changed


def _as_number(node: exp.Expression, dialect: str) -> exp.Expression:
    """``node`` (text) as a number, NULL where it spells none."""
    return _AS_NUMBER.get(dialect, _numeric_where_number)(node)


def _try_double(node: exp.Expression) -> exp.Expression:
    return exp.TryCast(this=node.copy(), to=exp.DataType.build("double"))


def _numeric_where_number(node: exp.Expression) -> exp.Expression:
    """NUMERIC, not a double: a long text of digits would overflow a double and fail the query."""
    return exp.Case().when(exp.RegexpLike(this=node.copy(), expression=exp.Literal.string(NUMBER_TEXT)),
                           exp.cast(node.copy(), "NUMERIC"))


#: A JSON value read as text (``doc ->> 'watts'``, ``doc #>> '{a,b}'``): a number in it is its digits.
_JSON_TEXT = (exp.JSONExtractScalar, exp.JSONBExtractScalar)
#: Comparisons that order their sides (where ``'9' > '100'`` as text is not what a number means).
_ORDERINGS = (exp.GT, exp.GTE, exp.LT, exp.LTE)


def _numbers_for_json(*literals: exp.Expression | None) -> None:
    """A text literal that spells a number, ordered against a JSON value, made that number (``'100'`` -> ``100``).

    ``doc ->> 'watts' > '100'`` runs, comparing text: ``'9' > '100'`` holds. A JSON number read with ``->>`` is
    text on both engines, and a model that quotes the bound as text means the number (a JSON text that is a
    number word, ``"100"``, reads the same). With a number on the other side, the JSON value is then read as a
    number like any text column compared with one (NULL where it spells none: never an error).
    """
    for node in literals:
        node = unparen(node)
        if isinstance(node, exp.Literal) and node.is_string and re.fullmatch(NUMBER_TEXT, node.this):
            node.replace(exp.Literal.number(node.this.strip()))


def _numbers_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    uses = list(tree.find_all(exp.Sum, exp.Avg, exp.In, exp.Between, exp.Add, exp.Sub, exp.Mul, exp.Div,
                              exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE))
    if not uses:
        return False
    read = tables_read(tree, schema)

    def is_text(node: exp.Expression | None) -> bool:
        return isinstance(node, _JSON_TEXT) or column_is(node, schema, read, is_text_type)

    def is_number(node: exp.Expression | None) -> bool:
        node = unparen(node)
        if isinstance(node, exp.Literal):
            return not node.is_string
        if isinstance(node, exp.Neg):
            return is_number(node.this)
        if isinstance(node, (exp.Count, exp.Sum, exp.Avg)):
            return True
        if isinstance(node, (exp.Max, exp.Min)):
            return is_number(node.this)
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select) and len(node.this.expressions) == 1:
            return is_number(node.this.expressions[0].unalias())  # (SELECT avg(x) FROM ...)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return node.to.is_type(*exp.DataType.NUMERIC_TYPES)
        if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div)):
            return is_number(node.this) and is_number(node.expression)
        return column_is(node, schema, read,
                          lambda ty: is_number_type(ty) and not TEXT_TYPE.search(ty) and not DATE_TYPE.search(ty))

    targets: list[exp.Expression] = []
    for use in uses:
        if isinstance(use, (exp.Sum, exp.Avg)):
            arg = use.this
            if isinstance(arg, exp.Distinct) and len(arg.expressions) == 1:
                arg = arg.expressions[0]
            sides = [unparen(arg)]
        elif isinstance(use, exp.In):
            values = use.expressions
            sides = [unparen(use.this)] if values and all(is_number(v) for v in values) else []
        elif isinstance(use, exp.Between):
            if isinstance(unparen(use.this), _JSON_TEXT):
                _numbers_for_json(use.args.get("low"), use.args.get("high"))
            ends = [use.args.get("low"), use.args.get("high")]
            sides = [unparen(use.this)] if all(is_number(e) for e in ends) else []
        else:
            left, right = unparen(use.this), unparen(use.expression)
            if isinstance(use, _ORDERINGS) and isinstance(left, _JSON_TEXT):
                _numbers_for_json(right)
            elif isinstance(use, _ORDERINGS) and isinstance(right, _JSON_TEXT):
                _numbers_for_json(left)
            left, right = unparen(use.this), unparen(use.expression)
            sides = [s for s, other in ((left, right), (right, left)) if is_number(other)]
        targets += [s for s in sides if s is not None and is_text(s)]
    for node in targets:  # each a direct operand of one use (through parentheses), so listed once
        node.replace(_as_number(node, dialect))
    return bool(targets)


def _strings_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    known = {c.name.lower() for t in schema.tables for c in t.columns} | {t.name.lower() for t in schema.tables}
    known |= {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    known |= {a.name.lower() for a in tree.find_all(exp.TableAlias) if a.name}
    known |= {c.name.lower() for a in tree.find_all(exp.TableAlias) for c in a.columns}
    known |= {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    changed = False
    for col in list(tree.find_all(exp.Column)):
        ident = col.this
        if (isinstance(ident, exp.Identifier) and ident.quoted and not col.table
                and ident.name.lower() not in known):
            col.replace(exp.Literal.string(ident.name))
            changed = True
    return changed


#: A step of the phase: changes the tree in place, says whether it changed anything.
_Step = Callable[[exp.Expression, "Schema", str], bool]


def _rule(name: str, dialects: frozenset[str], step: _Step) -> Rule:
    def run(tree: exp.Expression, ctx: Context) -> exp.Expression | None:
        assert ctx.schema is not None
        return tree if step(tree, ctx.schema, ctx.dialect) else None

    run.__name__ = run.__qualname__ = name
    return Rule(name, "schema", dialects, run, needs=("schema",))


_PG, _PG_DUCK = frozenset({"postgres"}), frozenset({"postgres", "duckdb"})

#: The phase's rules, in the order they run.
SCHEMA_FORMS: tuple[Rule, ...] = (
    _rule("sqlite_strings", _PG_DUCK, _strings_tree),
    _rule("fix_case", _PG, _case_tree),
    _rule("table_case", frozenset({"mysql"}), _table_case),
    _rule("text_patterns", _PG_DUCK, _patterns_tree),
    _rule("text_dates", _PG_DUCK, _dates_tree),
    _rule("boolean_numbers", _PG, _booleans_tree),
    _rule("numbered_fields", _PG_DUCK, _fields_tree),
    _rule("text_numbers", _PG_DUCK, _numbers_tree),
)
