"""Rewrite a query that runs but reads more than the question asks, by rule and without a model call.

Once the rule-based repair has made nearly every answer run, what the embedded model still gets wrong is
meaning, and the largest part of it is a table joined that the question never needs (BENCHMARKS.md, "Why
answers are wrong": 92 of the 284 wrong `default` answers on Spider dev). Four rewrites, each chosen on the
200-question tuning sample ("but not" on Spider's training questions) and confirmed on the other 772 dev
questions, fix part of it:

- **A needless join is dropped**: a table joined only to be joined (its columns appear in no clause but its
  own join condition) whose name the question never mentions (every word of it, plurals read as singular),
  in a query that counts nothing (a join changes what ``COUNT`` counts, and what an aggregate groups);
  ``SELECT T1.name FROM singer AS T1 JOIN song AS T2 ON ...`` asked as "the singer with the largest net
  worth" reads ``singer`` alone.
- **Grouping by an entity's name groups by the entity**: ``GROUP BY T1.name`` over a table joined on its
  one-column primary key gains ``T1.<key>``, so two students who share a name are counted apart. Only name
  and title columns count (``GROUP BY pettype`` is a real category).
- **"Both" asks for an intersection**: a question that says "both 2014 and 2015" over a query that keeps rows
  matching either value (``WHERE T2.year IN (2014, 2015)``, ``... = 2014 OR ... = 2015``)
  becomes the INTERSECT of the two filters: what has a row for each. Both values must be words of the
  question, the filtered column must be on another table than every selected column (``the populations of
  both Aruba and Angola`` filters the table it selects from: either is meant), and only a plain SELECT (no
  aggregate, grouping, ordering or limit) is rewritten. ``c = 2014 AND c = 2015``, which keeps no row at
  all, is the same "both" written literally and is read the same way.
- **"A but not b" asks for a difference**: ``WHERE dept = 'Statistics' AND dept <> 'Psychology'`` (or ``NOT
  dept = ...``, ``dept NOT IN ('Psychology')``) excludes nothing the first condition has not excluded already;
  the one reading that makes the second condition say something is what has the first value EXCEPT what has
  the second. Both values must be words of the question; only a plain SELECT is rewritten.

A fifth rule reads the database and is called on its own (:func:`relink_values`), since it needs to know what
the tables hold:

- **A text compared with a column that never holds it is compared with the column that does**: in
  ``WHERE region = 'Africa'`` over a table where no row's ``region`` is ``'Africa'`` but exactly one other text
  column of the same table holds that value (``continent``), the comparison reads ``continent``. The model
  knows the value from the question and picks a plausible column of the right table; the data says which one.

A sixth rule reads the answer as a reader will, and is called on its own (:func:`sqlweave.sql.name_keys.name_keys`,
in a module of its own) by a stage that
runs after any vote (:mod:`sqlweave.stages.name_keys`), since it changes the result's columns:

- **A key shown where the question asks for no ids is followed by the name of the row it refers to**: in
  ``SELECT e.manager_id, e.first_name FROM employees e`` asked as "Who is the manager of each employee?", the
  manager is a number; the query gains ``manager.first_name AS manager_first_name`` (and ``last_name``) through
  a ``LEFT JOIN`` on the referred table's one-column primary key, so no row is lost or repeated. Only a plain
  SELECT (no aggregate, grouping, subquery or positional ``ORDER BY``), only a column named as a key (``..._id``,
  ``...ID``) that the schema declares a foreign key, and only when the referred table has a ``name``, ``...name``
  or ``title`` column. A question that says "id", "number", "code", "key" (or "identifiant", "编号") keeps
  the ids alone. No Spider dev answer of `default` or `best` is changed by it (BENCHMARKS.md).

Each rewrite is conservative: it gives up on anything it cannot read for sure (an unqualified column two
tables share, outer joins, ``SELECT *``, an alias also used in a subquery), drops joins one at a time (each
drop read again on the query the previous one left), and the stage that calls it keeps the original answer
unless the rewritten query runs and returns rows.

>>> from sqlweave.schema import Schema, Table, Column, ForeignKey
>>> s = Schema("x", (Table("singer", (Column("singer_id", primary_key=True), Column("name"),
...                                   Column("net_worth"))),
...                  Table("song", (Column("song_id", primary_key=True), Column("singer_id"), Column("title")))),
...            (ForeignKey("song", "singer_id", "singer", "singer_id"),))
>>> rewrite_query("SELECT T1.name FROM singer AS T1 JOIN song AS T2 ON T1.singer_id = T2.singer_id "
...               "ORDER BY T1.net_worth DESC LIMIT 1", s, "Who is the richest singer?").sql
'SELECT T1.name FROM singer AS T1 ORDER BY T1.net_worth DESC LIMIT 1'
>>> rewrite_query("SELECT T1.name FROM singer AS T1 JOIN song AS T2 ON T1.singer_id = T2.singer_id",
...               s, "Which singers have a song?").changed
False
>>> rewrite_query("SELECT T1.name, count(*) FROM singer AS T1 JOIN song AS T2 ON T1.singer_id = T2.singer_id "
...               "GROUP BY T1.name", s, "How many songs has each singer?").sql
'SELECT T1.name, COUNT(*) FROM singer AS T1 JOIN song AS T2 ON T1.singer_id = T2.singer_id GROUP BY T1.name, T1.singer_id'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope

from ..schema import Schema, Table
from ..errors import SqlweaveError
from .repair import Repair
from .scopes import SelectScope, readable_selects
from .validate import parse_one

#: Columns whose grouping stands for their row's entity (a person's name, a film's title).
_NAME_COLUMN = re.compile(r"name|title", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z]+")
_BOTH = re.compile(r"\bboth\b", re.IGNORECASE)
#: Needless joins dropped from one query at most (each is read again on the query the last drop left).
_MAX_DROPS = 4


#: ``holds(table, column, value)``: whether some row of ``table`` has ``column = value`` (None: cannot tell).
Holds = Callable[[str, str, str], "bool | None"]

#: The rewritten SQL (the input unchanged when no rule applied) and what changed: the shape repairs have.
Rewrite = Repair


def _singular(word: str) -> str:
    w = word.lower()
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    for suffix in ("es", "s"):
        if w.endswith(suffix) and len(w) > len(suffix) + 2:
            return w[: -len(suffix)]
    return w


def _mentioned(table: str, question: str) -> bool:
    """Every word of ``table``'s name (snake or camel case) is a word of ``question``, plurals read as singular."""
    words = {_singular(w) for w in _WORD.findall(question)}
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", table)
    parts = [_singular(p) for p in _WORD.findall(spaced)]
    return bool(parts) and all(p in words for p in parts)


def _plain_joins(select: exp.Select) -> list[exp.Join] | None:
    """The SELECT's joins when all are inner joins of tables from a table; else None."""
    joins = select.args.get("joins") or []
    source = select.args.get("from_")
    if not joins or source is None or not isinstance(source.this, exp.Table):
        return None
    for join in joins:
        if not isinstance(join.this, exp.Table) or join.side or (join.kind or "INNER").upper() != "INNER":
            return None
        if join.args.get("on") is None:
            return None
    return joins


def _join_of(col: exp.Column) -> exp.Join | None:
    join = col.find_ancestor(exp.Join, exp.Select)
    return join if isinstance(join, exp.Join) else None


def _outside_aliases(node: exp.Expression, scope: Scope) -> set[str]:
    """Qualifiers written in the scopes nested in ``node``: an alias a subquery also names is never dropped. (The
    other side of a set operation is not nested: its ``T2`` is a table of its own.)"""
    own = {id(c) for c in scope.columns}
    return {c.table.lower() for c in node.find_all(exp.Column) if c.table and id(c) not in own}


def _drop_join(sel: SelectScope, question: str) -> str | None:
    node = sel.node
    joins = _plain_joins(node)
    if joins is None or node.find(exp.Count) or (node.find(exp.AggFunc) and node.args.get("group")):
        return None
    if any(isinstance(e, exp.Star) for e in node.expressions):
        return None
    source = node.args["from_"]
    order = [source.this] + [j.this for j in joins]
    elsewhere = _outside_aliases(sel.node, sel.scope)
    for index in range(len(order) - 1, -1, -1):
        table = order[index]
        alias = table.alias_or_name.lower()
        if alias not in sel.tables or alias in elsewhere or _mentioned(table.name, question):
            continue
        columns = sel.columns_of(alias)
        own = joins[index - 1] if index else None
        if any(_join_of(c) is None for c in columns):
            continue  # selected, filtered, grouped or ordered on
        others = [j for j in joins if j is not own and any(_join_of(c) is j for c in columns)]
        if index == 0:
            if others != [joins[0]]:
                continue  # the FROM table links two joins, or none
            source.set("this", joins[0].this.copy())
            joins[0].pop()
        else:
            if others or own is None:
                continue  # a bridge to another table
            own.pop()
        return f"dropped the join of {table.name} (the question needs none of its columns)"
    return None


def _group_by_key(sel: SelectScope) -> str | None:
    node = sel.node
    group = node.args.get("group")
    joins = node.args.get("joins")
    if group is None or not joins:
        return None
    keys = group.expressions
    if not keys or not all(isinstance(k, exp.Column) and _NAME_COLUMN.search(k.name) for k in keys):
        return None
    owners = {sel.owner.get(id(k)) for k in keys}
    if len(owners) != 1 or None in owners:
        return None
    alias = owners.pop()
    assert alias is not None
    table = sel.tables[alias]
    primary = table.primary_key
    if len(primary) != 1 or any(k.name.lower() == primary[0].lower() for k in keys):
        return None
    joined_on_key = any(_join_of(c) is not None and c.name.lower() == primary[0].lower()
                        for c in sel.columns_of(alias))
    if not joined_on_key:
        return None
    qualifier = sel.written[alias].alias_or_name
    written = ", ".join(k.sql() for k in keys)
    group.append("expressions", exp.column(primary[0], table=qualifier))
    return f"grouped by {qualifier}.{primary[0]} as well as by {written} (one group per row of {table.name})"


def _compared(node: exp.Expr) -> tuple[exp.Column, exp.Literal] | None:
    """The column and the value of ``column = value`` (either way round), else None."""
    if isinstance(node, exp.EQ):
        for col, lit in ((node.this, node.expression), (node.expression, node.this)):
            if isinstance(col, exp.Column) and isinstance(lit, exp.Literal):
                return col, lit
    return None


def _either_of_two(written: exp.Expr) -> tuple[exp.Column, list[exp.Literal]] | None:
    """The column and the two values of ``c IN (a, b)`` or ``c = a OR c = b`` (parenthesised or not), else None."""
    cond = written.unnest()
    if isinstance(cond, exp.In) and isinstance(cond.this, exp.Column) and not cond.args.get("query"):
        values = cond.expressions
        if len(values) == 2 and all(isinstance(v, exp.Literal) for v in values):
            return cond.this, [v for v in values if isinstance(v, exp.Literal)]
    if isinstance(cond, exp.Or):
        left, right = _compared(cond.this.unnest()), _compared(cond.expression.unnest())
        if left and right and left[0] == right[0]:
            return left[0], [left[1], right[1]]
    return None


def _conjuncts(tree: exp.Select) -> list[exp.Expr] | None:
    """The conditions ANDed in a plain SELECT's WHERE (no aggregate, grouping, ordering or limit), else None."""
    if tree.args.get("with_") or any(tree.args.get(k) for k in ("group", "having", "order", "limit", "offset")):
        return None
    if any(e.find(exp.AggFunc, exp.Window) or isinstance(e.unalias(), exp.Star) for e in tree.expressions):
        return None
    where = tree.args.get("where")
    if where is None:
        return None
    return [c.unnest() for c in where.this.flatten()] if isinstance(where.this, exp.And) else [where.this.unnest()]


def _said(values: list[exp.Literal], question: str) -> bool:
    """Every value is written in the question as a word or words of its own, or their plural (it came from
    there, not from the model): ``'Master'`` is said by "Masters students", ``'T'`` is not said by "What are
    the official languages?"."""
    return all(v.this.strip() and re.search(rf"(?<!\w){re.escape(v.this.strip())}(?:e?s)?(?!\w)", question,
                                            re.IGNORECASE) for v in values)


def _both_filters(conds: list[exp.Expr]) -> tuple[set[int], exp.Column, list[exp.Literal]] | None:
    """Which conditions read "either of two values of one column": ``c IN (a, b)``, ``c = a OR c = b``, or the
    two conditions ``c = a AND c = b``, which no row meets (the model's "both", written literally)."""
    for i, cond in enumerate(conds):
        pair = _either_of_two(cond)
        if pair:
            return {i}, pair[0], pair[1]
    equal = [(i, found) for i, c in enumerate(conds) if (found := _compared(c))]
    for (i, (col, a)), (j, (other, b)) in ((x, y) for x in equal for y in equal if x[0] < y[0]):
        if col == other and a.this != b.this:
            return {i, j}, col, [a, b]
    return None


def _split(tree: exp.Select, conds: list[exp.Expr], skip: set[int], col: exp.Column,
           values: list[exp.Literal]) -> list[exp.Select]:
    """``tree`` once per value: its other conditions, and ``col`` equal to that value."""
    rest = [c for k, c in enumerate(conds) if k not in skip]
    sides = []
    for value in values:
        side = tree.copy()
        kept = [c.copy() for c in rest] + [exp.EQ(this=col.copy(), expression=value.copy())]
        side.set("where", exp.Where(this=exp.and_(*kept)))
        sides.append(side)
    return sides


def _intersect_both(tree: exp.Expression, schema: Schema, question: str) -> tuple[exp.Expression, str] | None:
    """``tree`` read as an intersection where the question says "both" (see the module docstring)."""
    if not _BOTH.search(question) or not isinstance(tree, exp.Select):
        return None
    conds = _conjuncts(tree)
    found = _both_filters(conds) if conds else None
    if conds is None or found is None:
        return None
    skip, col, values = found
    if not _said(values, question):
        return None  # both values must come from the question
    sel = next((s for s in readable_selects(tree, schema) if s.node is tree), None)
    if sel is None or id(col) not in sel.owner:
        return None
    shown = [sel.owner.get(id(c)) for e in tree.expressions for c in e.find_all(exp.Column)]
    if not shown or None in shown or sel.owner[id(col)] in shown:
        return None  # a filter on the table it selects from means either ("the populations of both A and B")
    said_values = " and ".join(v.sql() for v in values)
    return (exp.intersect(*_split(tree, conds, skip, col, values), distinct=True),
            f"kept what has both {said_values} (INTERSECT), not either")


def _excluded(cond: exp.Expr) -> tuple[exp.Column, exp.Literal] | None:
    """The column and the value of ``c <> v``, ``NOT c = v`` or ``c NOT IN (v)``, else None."""
    if isinstance(cond, exp.NEQ):
        return _compared(exp.EQ(this=cond.this, expression=cond.expression))
    if isinstance(cond, exp.Not):
        inner = cond.this.unnest()
        if isinstance(inner, exp.EQ):
            return _compared(inner)
        if (isinstance(inner, exp.In) and isinstance(inner.this, exp.Column) and len(inner.expressions) == 1
                and isinstance(inner.expressions[0], exp.Literal)):
            return inner.this, inner.expressions[0]
    return None


def _except_but_not(tree: exp.Expression, question: str) -> tuple[exp.Expression, str] | None:
    """``c = a AND c <> b`` read as "a but not b": what has ``a``, EXCEPT what has ``b`` (module docstring)."""
    if not isinstance(tree, exp.Select):
        return None
    conds = _conjuncts(tree)
    if conds is None:
        return None
    kept = [(i, found) for i, c in enumerate(conds) if (found := _compared(c))]
    dropped = [(i, found) for i, c in enumerate(conds) if (found := _excluded(c))]
    for (i, (col, a)), (j, (other, b)) in ((x, y) for x in kept for y in dropped):
        if col == other and a.this != b.this and _said([a, b], question):
            left, right = _split(tree, conds, {i, j}, col, [a, b])
            return exp.except_(left, right, distinct=True), f"kept what has {a.sql()} EXCEPT what has {b.sql()}"
    return None


# --- the rules of rewrite_query, as a registry --------------------------------------------------------------

#: A rewrite rule's function: the tree (changed, or a new root) and what changed, or None when it did not apply.
RewriteFn = Callable[[exp.Expression, Schema, str], "tuple[exp.Expression, list[str]] | None"]


@dataclass(frozen=True)
class RewriteRule:
    """One rule of :func:`rewrite_query`: its name, its phase (in ``set_operation`` the first rule that applies is
    the only one), whether it reads the question's words against the schema's names (``reads_words``: off with
    ``drop_joins=False``) and its function."""

    name: str
    phase: str
    fn: RewriteFn = field(repr=False)
    reads_words: bool = False


def _both_rule(tree: exp.Expression, schema: Schema, question: str) -> tuple[exp.Expression, list[str]] | None:
    read = _intersect_both(tree, schema, question)
    return (read[0], [read[1]]) if read else None


def _but_not_rule(tree: exp.Expression, schema: Schema, question: str) -> tuple[exp.Expression, list[str]] | None:
    read = _except_but_not(tree, question)
    return (read[0], [read[1]]) if read else None


def _drop_joins_rule(tree: exp.Expression, schema: Schema, question: str) -> tuple[exp.Expression, list[str]] | None:
    changes: list[str] = []
    for _ in range(_MAX_DROPS):  # one join at a time: each drop is read on what the last one left
        dropped = next((c for sel in readable_selects(tree, schema) if (c := _drop_join(sel, question))), None)
        if dropped is None:
            break
        changes.append(dropped)
    return (tree, changes) if changes else None


def _group_by_key_rule(tree: exp.Expression, schema: Schema, question: str) -> tuple[exp.Expression, list[str]] | None:
    changes = [keyed for sel in readable_selects(tree, schema) if (keyed := _group_by_key(sel))]
    return (tree, changes) if changes else None


#: The rules of :func:`rewrite_query`, in the order they run.
REWRITES: tuple[RewriteRule, ...] = (
    RewriteRule("intersect_both", "set_operation", _both_rule, reads_words=True),
    RewriteRule("except_but_not", "set_operation", _but_not_rule),
    RewriteRule("drop_join", "join", _drop_joins_rule, reads_words=True),
    RewriteRule("group_by_key", "grouping", _group_by_key_rule),
)


def _chosen(drop_joins: bool, only_set_operations: bool) -> tuple[RewriteRule, ...]:
    """The rules :func:`rewrite_query`'s options keep (see its docstring)."""
    return tuple(r for r in REWRITES if (drop_joins or not r.reads_words)
                 and (not only_set_operations or r.phase == "set_operation"))


def apply_rewrites(tree: exp.Expression, schema: Schema, question: str,
                   rules: tuple[RewriteRule, ...] = REWRITES) -> tuple[exp.Expression, list[str], list[str]]:
    """``tree`` with ``rules`` applied in turn: the tree, what changed, and the names of the rules that fired.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("t", (Column("dept"), Column("name"))),))
    >>> tree, changes, fired = apply_rewrites(parse_one("SELECT name FROM t WHERE dept = 'A' AND dept <> 'B'",
    ...                                                 "sqlite"), s, "in A but not B")
    >>> fired
    ['except_but_not']
    """
    changes: list[str] = []
    fired: list[str] = []
    for rule in rules:
        if rule.phase == "set_operation" and any(r.phase == "set_operation" for r in rules if r.name in fired):
            continue
        out = rule.fn(tree, schema, question)
        if out is not None:
            tree = out[0]
            changes += out[1]
            fired.append(rule.name)
    return tree, changes, fired


def rewrite_query(sql: str, schema: Schema, question: str, dialect: str = "sqlite", *,
                  drop_joins: bool = True, only_set_operations: bool = False) -> Rewrite:
    """``sql`` with "both" read as an intersection, "a but not b" as a difference, needless joins dropped and
    name groupings keyed (see the module docstring).

    ``drop_joins=False`` keeps every join and reads no "both" (the checks need the question's words in the
    schema's language). ``only_set_operations=True`` reads "both" and "but not" and nothing else: the rules
    for an answer with no rows (``c = 'a' AND c = 'b'`` never has any). Returns a :class:`Rewrite`; ``changes``
    is empty (and ``sql`` unchanged) when no rule applied for sure.
    """
    try:
        tree = parse_one(sql, dialect)
        tree, changes, _ = apply_rewrites(tree, schema, question, _chosen(drop_joins, only_set_operations))
        if not changes:
            return Rewrite(sql)
        return Rewrite(tree.sql(dialect=dialect), changes)
    except (SqlglotError, SqlweaveError, RecursionError):
        # sqlglot's scope analysis rejects some valid trees, and a deeply nested query can exhaust the stack:
        # either means "no rewrite for sure". Anything else is a bug and is raised.
        return Rewrite(sql)


def _compared_text(eq: exp.EQ) -> tuple[exp.Column, str] | None:
    """The column and the text of ``column = 'text'`` (either way round), else None."""
    found = _compared(eq)
    return (found[0], found[1].this) if found is not None and found[1].is_string else None


def _only_holder(table: Table, column: str, text: str, holds: Holds) -> str | None:
    """The one text column of ``table`` other than ``column`` that holds ``text``; None when none does, when two
    do, or when ``holds`` cannot tell for one of them (the column found might not be the only one)."""
    found: list[str] = []
    for other in table.columns:
        if other.is_text and other.name.lower() != column.lower():
            held = holds(table.name, other.name, text)
            if held is None:
                return None
            if held:
                found.append(other.name)
                if len(found) > 1:
                    return None
    return found[0] if found else None


def relink_values(sql: str, schema: Schema, holds: Holds, dialect: str = "sqlite") -> Rewrite:
    """``sql`` with each ``column = 'text'`` whose column holds no such text compared with the one other text
    column of the same table that does (see the module docstring). ``holds`` answers from the database.

    Nothing changes when ``holds`` cannot tell, when the column does hold the text, or when no other column or
    more than one other column holds it.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("country", (Column("name", "TEXT"), Column("region", "TEXT"),
    ...                                    Column("continent", "TEXT"))),))
    >>> stored = {("country", "continent", "Africa"), ("country", "region", "Eastern Africa")}
    >>> r = relink_values("SELECT count(*) FROM country WHERE region = 'Africa'", s,
    ...                   lambda t, c, v: (t, c, v) in stored)
    >>> r.sql, r.changes
    ("SELECT COUNT(*) FROM country WHERE continent = 'Africa'", ["compared 'Africa' with country.continent, \
which holds it, instead of region, which does not"])
    """
    try:
        tree = parse_one(sql, dialect)
        changes: list[str] = []
        for sel in readable_selects(tree, schema):
            own = {id(c) for c in sel.scope.columns}
            for eq in list(sel.node.find_all(exp.EQ)):
                found = _compared_text(eq)
                if found is None or id(found[0]) not in own:
                    continue
                col, text = found
                alias = sel.owner.get(id(col))
                if alias is None or not sel.tables[alias].has_column(col.name):
                    continue
                table = sel.tables[alias]
                if holds(table.name, col.name, text) is not False:
                    continue
                holder = _only_holder(table, col.name, text, holds)
                if holder is not None:
                    was = col.name
                    col.set("this", exp.to_identifier(holder, quoted=col.this.quoted))
                    changes.append(f"compared {text!r} with {table.name}.{holder}, which holds it, instead of "
                                   f"{was}, which does not")
        if not changes:
            return Rewrite(sql)
        return Rewrite(tree.sql(dialect=dialect), changes)
    except (SqlglotError, SqlweaveError, RecursionError):  # as in rewrite_query: no rewrite for sure
        return Rewrite(sql)
