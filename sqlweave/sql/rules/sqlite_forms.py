"""What SQLite means by a query, in forms PostgreSQL, DuckDB and MySQL read the same way (phase ``sqlite_forms``).

Each rule is one function; :data:`SQLITE_FORMS` lists them in the order they run, each with the dialects it
applies to. They run on every query written for those engines (:func:`sqlweave.sql.transpile.to_dialect`).

>>> from .base import apply, parse
>>> sql = "SELECT name FROM t WHERE a LIKE 'x%' ORDER BY b"
>>> tree, fired = apply(parse(sql, "postgres"), SQLITE_FORMS, Context("postgres", sql=sql))
>>> tree.sql("postgres"), fired
("SELECT name FROM t WHERE a ILIKE 'x%' ORDER BY b NULLS FIRST", ['like_without_case', 'nulls_as_sqlite_sorts_them'])
"""

from __future__ import annotations

from typing import cast

import sqlglot
from sqlglot import exp

from .base import Context, Rule, own
from .detect import says_where_nulls_sort

#: The value SQLite gives a bare column from the row holding the query's one ``min()`` or ``max()``, per engine.
_EXTREME_ROW = {
    "postgres": "(ARRAY_AGG({col} ORDER BY {by} {order} NULLS LAST))[1]",
    "duckdb": "{arg}({col}, {by})",
    "mysql": "SUBSTRING_INDEX(GROUP_CONCAT({col} ORDER BY {by} {order} SEPARATOR '␟'), '␟', 1)",
}


def like_without_case(tree: exp.Expression, ctx: Context) -> exp.Expression | None:
    """``LIKE`` as SQLite reads it (without regard to case): ``ILIKE`` on PostgreSQL and DuckDB."""
    if tree.find(exp.Like) is None:
        return None
    return tree.transform(lambda node: exp.ILike(**node.args) if isinstance(node, exp.Like) else node)


def bare_columns(tree: exp.Expression, ctx: Context) -> exp.Expression | None:
    """SQLite's bare columns in an aggregate query, in a form PostgreSQL and DuckDB accept.

    SQLite lets a query select a column that is neither grouped nor aggregated (``SELECT T1.name, count(*) ...
    GROUP BY T1.id``); both other engines refuse it. When the query has exactly one ``min()`` or ``max()``, SQLite
    takes the bare column from the row holding that minimum or maximum: that becomes ``ARG_MAX(col, x)`` on DuckDB
    and ``(ARRAY_AGG(col ORDER BY x DESC NULLS LAST))[1]`` on PostgreSQL. Otherwise SQLite takes it from any row
    of the group, which only makes sense for a column that has one value per group (the name of a grouped id):
    ``MIN(col)`` gives that value. A column that a group key, an alias or an outer query supplies is left alone.
    MySQL and MariaDB take a bare column from any row of the group (MySQL 8 refuses it by default): there the
    value of the row with the minimum or maximum is the first of the group's values ordered by it
    (``GROUP_CONCAT``, as text).
    """
    target, changed = ctx.dialect, False
    for select in list(tree.find_all(exp.Select)):
        group = select.args.get("group")
        keys = list(group.expressions) if group else []
        parts = [*select.expressions, *([select.args["having"]] if select.args.get("having") else []),
                 *(select.args["order"].expressions if select.args.get("order") else [])]
        aggregates = [n for e in parts for n in own(e) if isinstance(n, exp.AggFunc)]
        if (not keys and not aggregates) or any(
                isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
                for e in select.expressions):
            continue  # SELECT *, count(*) ... has no single form elsewhere
        aliases = {e.alias.lower(): e.this for e in select.expressions if isinstance(e, exp.Alias)}
        resolved = []
        for k in keys:
            if isinstance(k, exp.Literal) and k.is_int and 0 < int(k.name) <= len(select.expressions):
                k = select.expressions[int(k.name) - 1].unalias()
            elif isinstance(k, exp.Column) and not k.table and k.name.lower() in aliases:
                k = aliases[k.name.lower()]
            resolved.append(k)
        key_sql = {k.sql(dialect=target).lower() for k in resolved}
        key_cols = {(c.table.lower(), c.name.lower()) for k in resolved for c in own(k) if isinstance(c, exp.Column)}
        sources = {t.alias_or_name.lower() for t in select.find_all(exp.Table) if t.find_ancestor(exp.Select) is select}
        sources |= {q.alias.lower() for q in select.find_all(exp.Subquery) if q.alias and q.parent_select is select}

        def grouped(col: exp.Column) -> bool:
            name, table = col.name.lower(), col.table.lower()
            if any(n == name and (t == table or not t or not table) for t, n in key_cols):
                return True
            node: exp.Expression | None = col
            while node is not None and node is not select:  # inside a grouped expression: strftime('%Y', d)
                if node.sql(dialect=target).lower() in key_sql:
                    return True
                node = cast("exp.Expression | None", node.parent)
            return False

        bare: list[exp.Column] = []
        for part in parts:
            for col in own(part):
                if (not isinstance(col, exp.Column) or any(col is b for b in bare)
                        or isinstance(col.find_ancestor(exp.AggFunc, exp.Select), exp.AggFunc)
                        or (not col.table and col.name.lower() in aliases)  # ORDER BY an alias of the query
                        or (col.table and col.table.lower() not in sources)  # a column of an outer query
                        or grouped(col)):
                    continue
                bare.append(col)
        extreme = [a for a in aggregates if isinstance(a, (exp.Min, exp.Max)) and not a.expressions]
        by = extreme[0] if len(extreme) == 1 else None
        for col in bare:
            text = col.sql(dialect=target)
            if by is None:
                new = f"MIN({text})"
            else:
                top = isinstance(by, exp.Max)
                new = _EXTREME_ROW[target].format(col=text, by=by.this.sql(dialect=target),
                                                  order="DESC" if top else "ASC", arg="ARG_MAX" if top else "ARG_MIN")
            value = sqlglot.parse_one(new, read=target)
            changed = True
            # A selected column keeps its name as the result's column name.
            quoted = isinstance(col.this, exp.Identifier) and bool(col.this.quoted)
            col.replace(exp.alias_(value, col.name, quoted=quoted) if col.parent is select else value)
    return tree if changed else None


def aliases_in_conditions(tree: exp.Expression, ctx: Context) -> exp.Expression | None:
    """A result column's alias in ``WHERE`` or ``HAVING`` (``HAVING n_languages > 2``), or inside an expression of
    ``ORDER BY`` (``ORDER BY CASE WHEN days IS NULL THEN 1 ELSE 0 END``), which SQLite and DuckDB read and
    PostgreSQL does not (nor MySQL, in ``WHERE`` and around an aggregate's alias): there it becomes the aliased
    expression itself. ``ORDER BY days`` alone stays: both read a bare alias there."""
    changed = False
    for select in list(tree.find_all(exp.Select)):
        aliases = {e.alias.lower(): e.this for e in select.expressions if isinstance(e, exp.Alias)}
        if not aliases:
            continue
        names = {c.name.lower() for e in select.expressions for c in own(e) if isinstance(c, exp.Column)}
        for clause in (select.args.get("where"), select.args.get("having"), select.args.get("order")):
            for col in own(clause) if clause is not None else []:
                if (isinstance(col, exp.Column) and not col.table and col.name.lower() in aliases
                        and col.name.lower() not in names  # a name the select list reads as a column stays one
                        and not isinstance(col.parent, exp.Ordered)):
                    col.replace(aliases[col.name.lower()].copy())
                    changed = True
    return tree if changed else None


def named_derived_tables(tree: exp.Expression, ctx: Context) -> exp.Expression | None:
    """A subquery in ``FROM`` or ``JOIN`` with no name, which SQLite reads and PostgreSQL before 16 and MySQL do
    not: it gets one (``sub1``, ``sub2``, ...)."""
    taken = {a.name.lower() for a in tree.find_all(exp.TableAlias)} | {t.name.lower() for t in tree.find_all(exp.Table)}
    n = 0
    for sub in list(tree.find_all(exp.Subquery)):
        if not sub.alias and isinstance(sub.parent, (exp.From, exp.Join)):
            n += 1
            while f"sub{n}" in taken:
                n += 1
            sub.set("alias", exp.TableAlias(this=exp.to_identifier(f"sub{n}")))
    return tree if n else None


def nulls_as_sqlite_sorts_them(tree: exp.Expression, ctx: Context) -> exp.Expression | None:
    """NULLs sort first in ascending and last in descending order on SQLite, and last in ascending order on
    PostgreSQL and DuckDB (first in descending order on PostgreSQL): ``ORDER BY price DESC LIMIT 1`` would answer
    a row with no price there. The query's own ``ORDER BY`` says SQLite's order (``NULLS FIRST`` / ``NULLS LAST``);
    orderings inside aggregates and windows are left alone; nor when the query says where NULLs sort itself."""
    if says_where_nulls_sort(ctx.sql):
        return None
    changed = False
    for node in tree.find_all(exp.Select, exp.SetOperation):
        order = node.args.get("order")
        for term in order.expressions if order is not None else []:
            if isinstance(term, exp.Ordered):
                changed = changed or term.args.get("nulls_first") != (not term.args.get("desc"))
                term.set("nulls_first", not term.args.get("desc"))
    return tree if changed else None


def limited_in_subqueries(tree: exp.Expression, ctx: Context) -> exp.Expression | None:
    """``x IN (SELECT ... LIMIT n)``, which SQLite reads and MySQL and MariaDB refuse ("doesn't yet support 'LIMIT &
    IN/ALL/ANY/SOME subquery'"): the subquery is read through a derived table, which they accept."""
    changed = False
    for node in list(tree.find_all(exp.In)):
        query = node.args.get("query")
        inner = query.this if isinstance(query, exp.Subquery) else query
        if isinstance(inner, exp.Query) and inner.args.get("limit") is not None:
            wrapped = exp.select("*").from_(exp.Subquery(this=inner.copy(), alias=exp.TableAlias(
                this=exp.to_identifier("limited"))))
            node.set("query", exp.Subquery(this=wrapped))
            changed = True
    return tree if changed else None


def rounded_half_up(tree: exp.Expression, ctx: Context) -> exp.Expression | None:
    """``round(x, n)`` rounds halves away from zero on SQLite; MySQL rounds a float's halves to even (11.625 ->
    11.62): it rounds the exact decimal there."""
    changed = False
    for node in list(tree.find_all(exp.Round)):
        if not isinstance(node.this, exp.Cast):
            node.set("this", exp.cast(node.this.copy(), exp.DataType.build("DECIMAL(65, 30)")))
            changed = True
    return tree if changed else None


_PG_DUCK, _PG_MY, _ALL = frozenset({"postgres", "duckdb"}), frozenset({"postgres", "mysql"}), frozenset(_EXTREME_ROW)

#: The phase's rules, in the order they run.
SQLITE_FORMS: tuple[Rule, ...] = (
    Rule("like_without_case", "sqlite_forms", _PG_DUCK, like_without_case),
    Rule("bare_columns", "sqlite_forms", _ALL, bare_columns),
    Rule("aliases_in_conditions", "sqlite_forms", _PG_MY, aliases_in_conditions),
    Rule("named_derived_tables", "sqlite_forms", _PG_MY, named_derived_tables),
    Rule("rounded_half_up", "sqlite_forms", frozenset({"mysql"}), rounded_half_up),
    Rule("limited_in_subqueries", "sqlite_forms", frozenset({"mysql"}), limited_in_subqueries),
    Rule("nulls_as_sqlite_sorts_them", "sqlite_forms", _PG_DUCK, nulls_as_sqlite_sorts_them, needs=("sql",)),
)
