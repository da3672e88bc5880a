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

A sixth rule reads the answer as a reader will, and is called on its own (:func:`name_keys`) by a stage that
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
from functools import cache
from typing import Callable

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.dialects.dialect import Dialect
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
#: A column named as a key of another table (``manager_id``, ``CustomerID``, ``MakeId``; not ``paid``): the part
#: after the stem.
_KEY_NAME = re.compile(r"(?:[_ ][iI][dD]|I[dD])$")
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A question that asks for ids, in any of the languages it may be asked in.
_ASKS_FOR_IDS = re.compile(r"\bids?\b|identif|kennung|编号|編號|番号|\bnum(?:ber|éro|ero)s?\b|\bcodes?\b|\bkeys?\b",
                           re.IGNORECASE)
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


def _ident(name: str) -> exp.Identifier:
    """``name`` as an identifier, quoted when some dialect would read it otherwise (a keyword, a space)."""
    return exp.Identifier(this=name, quoted=not _PLAIN.fullmatch(name) or name.lower() in _reserved())


@cache
def _reserved() -> frozenset[str]:
    """Words some engine reserves (``order``, ``user``): quoted wherever a rule writes them as names."""
    return frozenset(w.lower() for d in ("sqlite", "postgres", "mysql", "duckdb")
                     for w in Dialect.get_or_raise(d).generator_class.RESERVED_KEYWORDS)


def _readable_columns(table: Table) -> list[str]:
    """The columns that name a row of ``table`` to a reader: ``name``, else its text columns ending in "name"
    (``first_name``, ``last_name``; three at most), else ``title``; none when it has neither."""
    texts = [c for c in table.columns if c.is_text and not c.primary_key and not _KEY_NAME.search(c.name)]
    exact = [c.name for c in texts if c.name.lower() == "name"]
    if exact:
        return exact
    named = [c.name for c in texts if c.name.lower().endswith("name")]
    return named[:3] or [c.name for c in texts if c.name.lower() == "title"][:1]


def _label(name: str, stem: str, outputs: set[str]) -> str | None:
    """The output name of ``name`` shown for a key named after ``stem`` (``manager_first_name``; ``concert_Name``
    as it is), one no output of the query has (None when four tries all are)."""
    base = name if name.lower().startswith(stem.lower()) else f"{stem}_{name}"
    return next((a for a in (base, f"{base}_2", f"{base}_3", f"{base}_4") if a.lower() not in outputs), None)


def _qualifier(table: exp.Table) -> exp.Identifier:
    """How columns of ``table`` are qualified: its alias, else its name, quoted as written or where needed."""
    written = table.args["alias"].this if table.args.get("alias") else table.this
    name = written.name
    return exp.Identifier(this=name, quoted=bool(written.args.get("quoted")) or _ident(name).args["quoted"])


def _name_keys(tree: exp.Expression, schema: Schema, question: str) -> str | None:
    """The key columns a query shows where the question asks for no ids, each followed by the name of the row
    it refers to (see the module docstring), or None. Changes ``tree`` in place."""
    if not isinstance(tree, exp.Select) or _ASKS_FOR_IDS.search(question) or tree.args.get("with_"):
        return None
    sel = next((s for s in readable_selects(tree, schema) if s.node is tree), None)
    if sel is None or any(isinstance(e.unalias(), exp.Star) for e in tree.expressions):
        return None
    if any(s is not tree for s in tree.find_all(exp.Select)):
        return None  # a subquery's unqualified names could come to mean the joined table's
    if tree.args.get("group") or tree.find(exp.AggFunc, exp.Window):
        return None  # a key that labels groups ("how many friends each student has") is not what is asked
    order = tree.args.get("order")
    if order is not None and any(not k.is_string for k in order.find_all(exp.Literal)):
        return None  # ORDER BY 2 would point at another column once names are added
    taken = {a.lower() for a in sel.tables} | {t.name.lower() for t in sel.tables.values()}
    outputs = {e.alias_or_name.lower() for e in tree.expressions}
    shown_columns = list(tree.expressions)  # with the names inserted after their keys; set on the tree at the end
    named: list[str] = []
    for position in range(len(shown_columns) - 1, -1, -1):
        col = shown_columns[position]
        alias = sel.owner.get(id(col)) if isinstance(col, exp.Column) else None
        if alias is None or not _KEY_NAME.search(col.name) or _KEY_NAME.fullmatch(col.name):
            continue  # a key of its own table ("id") names the row selected, not another one
        table = sel.tables[alias]
        key = next((f for f in schema.foreign_keys_of(table.name) if f.column.lower() == col.name.lower()), None)
        if key is None or not schema.has_table(key.ref_table):
            continue
        target = schema.table(key.ref_table)
        shown = _readable_columns(target)
        if target.primary_key != (target.column(key.ref_column).name,) or not shown:
            continue
        stem = _KEY_NAME.sub("", col.name).rstrip("_ ") or key.ref_table
        join_alias = next(a for a in (stem, f"{stem}_row", f"{stem}_row2", f"{stem}_row3", f"ref_{len(taken)}")
                          if a.lower() not in taken)
        labels = [_label(name, stem, outputs) for name in shown]
        if None in labels:
            continue
        taken.add(join_alias.lower())
        outputs.update(label.lower() for label in labels if label)
        for offset, (name, label) in enumerate(zip(shown, labels), start=1):
            column = exp.column(_ident(name), table=_ident(join_alias))
            shown_columns.insert(position + offset, exp.alias_(column, _ident(str(label))))
        on = exp.EQ(this=exp.column(_ident(key.ref_column), table=_ident(join_alias)),
                    expression=exp.column(col.this.copy(), table=_qualifier(sel.written[alias])))
        source: exp.Expr = exp.Table(this=_ident(target.name))
        if join_alias != target.name:
            source = exp.alias_(source, _ident(join_alias), table=True)
        tree.join(source, on=on, join_type="left", copy=False)
        named.append(f"{sel.written[alias].alias_or_name}.{col.name} ({', '.join(shown)} of {target.name})")
    if not named:
        return None
    for c in sel.scope.columns:  # the joined table may share a name the query leaves unqualified
        owner = sel.owner.get(id(c))
        if owner is not None and not c.table:
            c.set("table", _qualifier(sel.written[owner]))
    tree.set("expressions", shown_columns)
    return "named the rows the keys " + ", ".join(reversed(named)) + " refer to (the question asks for no ids)"


def name_keys(sql: str, schema: Schema, question: str, dialect: str = "sqlite") -> Rewrite:
    """``sql`` with each key it shows followed by the name of the row it refers to, where the question asks for
    no ids (see the module docstring); ``changes`` is empty (and ``sql`` unchanged) when no key is named.

    >>> from sqlweave.schema import Schema, Table, Column, ForeignKey
    >>> s = Schema("x", (Table("singer", (Column("singer_id", primary_key=True), Column("name"))),
    ...                  Table("song", (Column("song_id", primary_key=True), Column("singer_id"), Column("title")))),
    ...            (ForeignKey("song", "singer_id", "singer", "singer_id"),))
    >>> name_keys("SELECT title, singer_id FROM song", s, "Which songs, and by whom?").sql
    'SELECT song.title, song.singer_id, singer.name AS singer_name FROM song LEFT JOIN singer ON singer.singer_id = song.singer_id'
    >>> name_keys("SELECT title, singer_id FROM song", s, "Song titles and singer ids").changed
    False
    """
    try:
        tree = parse_one(sql, dialect)
        named = _name_keys(tree, schema, question)
        return Rewrite(tree.sql(dialect=dialect), [named]) if named else Rewrite(sql)
    except (SqlglotError, SqlweaveError, RecursionError):  # as in rewrite_query: no rewrite for sure
        return Rewrite(sql)


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
        changes: list[str] = []
        read = (_intersect_both(tree, schema, question) if drop_joins else None) or _except_but_not(tree, question)
        if read is not None:
            tree = read[0]
            changes.append(read[1])
        if drop_joins and not only_set_operations:
            for _ in range(_MAX_DROPS):  # one join at a time: each drop is read on what the last one left
                dropped = next((c for sel in readable_selects(tree, schema) if (c := _drop_join(sel, question))),
                               None)
                if dropped is None:
                    break
                changes.append(dropped)
        for sel in readable_selects(tree, schema) if not only_set_operations else []:
            keyed = _group_by_key(sel)
            if keyed:
                changes.append(keyed)
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
