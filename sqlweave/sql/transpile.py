"""Bring SQL written in another dialect to the database's own before it runs.

Small models learnt SQL mostly from SQLite and MySQL examples: asked for PostgreSQL or DuckDB they still write
``strftime('%Y', d)``, backtick-quoted names, ``LIMIT 5, 10``, ``IFNULL``, ``date('now')`` or ``TOP 3``. The
SQL is parsed as the target dialect first; when that fails, or the tree holds a construct the target lacks
(SQLite's date functions, a DuckDB ``strftime`` with SQLite's argument order), it is read as SQLite, MySQL or
T-SQL instead and written in the target dialect with sqlglot. SQL that is already the target's own comes
back unchanged, or normalised by sqlglot where the target's parser reads a foreign form (``LIMIT 5, 10``).
On SQLite, SQLite's own SQL is never touched; PostgreSQL's and MySQL's date forms (``EXTRACT``, ``INTERVAL``
arithmetic, ``DATE_TRUNC``, ``CAST(d AS DATE)``) are written in SQLite's.

What SQLite means by a query is kept, so a question gets the same answer on every engine:

- ``LIKE`` matches without regard to case on SQLite (and MySQL), where models learnt it, and with regard to case on
  PostgreSQL and DuckDB: ``name LIKE '%paris%'`` would miss ``'Paris'`` there. It becomes ``ILIKE`` on those two.
- A bare column of an aggregate query (``SELECT T1.name, count(*) ... GROUP BY T1.id``) is refused by both; it
  becomes the value SQLite gives (see :func:`_bare_columns`).
- A result column's alias in ``WHERE``/``HAVING``, and a derived table with no name, are refused by PostgreSQL;
  the alias becomes its expression and the derived table gets a name.
- NULLs sort first in ascending order on SQLite and last on the other two: ``ORDER BY`` says SQLite's order.
- With the schema at hand (:meth:`sqlweave.db.Database.execute` does this with :func:`for_schema`), a
  double-quoted name that names nothing is a string (:func:`sqlite_strings`), a date or number under ``LIKE`` is
  read as text (:func:`text_patterns`), a date kept as text is read as a timestamp where the query compares it
  with a date (:func:`text_dates`), and a number kept as text as a number where the query sums it or compares it
  with one (:func:`text_numbers`; SQLite would read ``'n/a'`` as 0 and compare text).
- ``x = (SELECT ...)`` whose subquery returns several rows is answered by SQLite from the first row and refused by
  the others; after that error, :meth:`sqlweave.db.Database.execute` runs it as ``x IN (SELECT ...)``
  (:func:`subqueries_as_sets`).

``benchmarks/bench_dialects.py`` measures how many of a Spider run's queries give SQLite's rows on each engine.

>>> to_dialect("SELECT strftime('%Y', founded) FROM club", "postgres")
"SELECT TO_CHAR(CAST(founded AS TIMESTAMP), 'YYYY') FROM club"
>>> to_dialect("SELECT `name` FROM singer LIMIT 1, 2", "duckdb")
'SELECT "name" FROM singer LIMIT 2 OFFSET 1'
>>> to_dialect("SELECT count(*) FROM singer", "postgres")
'SELECT count(*) FROM singer'
>>> to_dialect("SELECT strftime('%Y', d) FROM t", "sqlite")
"SELECT strftime('%Y', d) FROM t"
>>> to_dialect("SELECT name FROM event WHERE city NOT LIKE '%paris%'", "postgres")
"SELECT name FROM event WHERE city NOT ILIKE '%paris%'"
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

import sqlglot
from sqlglot import exp
from sqlglot.tokens import Tokenizer, TokenType
from sqlglot.errors import ErrorLevel, SqlglotError

from ..schema import is_composite_type, is_number_type

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..schema import Schema

    #: A schema-aware form: changes the parsed query in place and says whether it changed anything.
    _Step = Callable[[exp.Expression, Schema, str], bool]

#: Dialects tried, in order, when the SQL is not the target's own. MySQL reads ``||`` as OR, so it comes after
#: SQLite and is only used for SQL SQLite's parser refuses.
SOURCES = ("sqlite", "mysql", "tsql")

#: Functions of SQLite (and MySQL) that the target does not have under that name, so a tree holding them was
#: written for another dialect.
_FOREIGN_FUNCTIONS = {
    "postgres": {"strftime", "julianday", "datetime", "unixepoch", "printf", "group_concat", "ifnull", "iif",
                 "instr", "date_format", "ucase", "lcase", "locate", "total"},
    "duckdb": {"julianday", "datetime", "unixepoch", "date_format", "ucase", "lcase", "locate", "total"},
}

_MODIFIER = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s+(day|month|year|hour|minute|second)s?\s*$", re.IGNORECASE)


def _parse(sql: str, dialect: str) -> exp.Expression | None:
    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except (SqlglotError, ValueError, RecursionError):
        return None
    # sqlglot 30 types parse() with its Expr base; every node it parses is a concrete Expression.
    return cast(exp.Expression, trees[0]) if len(trees) == 1 else None


def _sqlite_only(sql: str) -> bool:
    """Does ``sql``, read as SQLite, use SQLite's date functions? MySQL's parser reads ``date(d, '+1 day')`` as
    ``DATE(d)``, dropping the modifier, and has no ``strftime``, ``julianday`` or ``datetime``."""
    tree = _parse(sql, "sqlite")
    if tree is None:
        return False
    for node in tree.walk():
        if isinstance(node, (exp.Date, exp.Time)) and (node.args.get("zone") is not None or _is_now(node.this)):
            return True
        if isinstance(node, (exp.Datetime, exp.TimeToStr, exp.TsOrDsToTimestamp)):
            return True
        if isinstance(node, exp.Anonymous) and node.name.lower() in ("julianday", "unixepoch", "strftime",
                                                                      "datetime", "date", "time"):
            return True
    return False


def _spaced_call(sql: str) -> bool:
    """Does ``sql`` call a function with a space before its parenthesis (``COUNT (*)``)? MySQL reads a built-in
    function's name only when the parenthesis follows it at once."""
    try:
        tokens = Tokenizer().tokenize(sql)
    except SqlglotError:
        return False
    return any(a.token_type == TokenType.VAR and b.token_type == TokenType.L_PAREN and b.start > a.end + 1
               for a, b in zip(tokens, tokens[1:]))


def _pipes(sql: str) -> bool:
    """Does ``sql`` hold ``||``? MySQL reads it as OR; a model means SQLite's (and SQL's) concatenation."""
    try:
        return any(t.token_type == TokenType.DPIPE for t in Tokenizer().tokenize(sql))
    except SqlglotError:
        return False


def _foreign(tree: exp.Expression, target: str) -> bool:
    """Does the tree, parsed as ``target``, hold something written for another dialect?"""
    names = _FOREIGN_FUNCTIONS.get(target, set())
    for node in tree.walk():
        if isinstance(node, exp.Anonymous) and node.name.lower() in names:
            return True
        if isinstance(node, exp.Datetime):
            return True  # SQLite's datetime(value, modifier...): neither target has it
        if isinstance(node, (exp.Date, exp.Time)) and (node.args.get("zone") is not None or _is_now(node.this)):
            return True  # SQLite's date(value, modifier) and date('now')
        if target == "postgres" and isinstance(node, exp.Date):
            return True  # date(text) does not exist there: CAST(x AS DATE) reads text and timestamps alike
        if (target == "duckdb" and isinstance(node, exp.TimeToStr) and isinstance(node.this, exp.Literal)
                and node.this.is_string and "%" in node.this.name):
            return True  # strftime('%Y', d): SQLite's argument order, DuckDB's is strftime(d, '%Y')
        if isinstance(node, exp.Collate) and node.expression.name.lower() == "nocase":
            return True
    return False


def _like_without_case(tree: exp.Expression, target: str) -> exp.Expression:
    """``LIKE`` as SQLite reads it (without regard to case): ``ILIKE`` on PostgreSQL and DuckDB."""
    if target not in ("postgres", "duckdb"):
        return tree
    return tree.transform(lambda node: exp.ILike(**node.args) if isinstance(node, exp.Like) else node)


def _own(node: exp.Expression) -> list[exp.Expression]:
    """``node`` and what it holds, without nested queries and window functions."""
    nested = (exp.Select, exp.Subquery, exp.Window)
    return [cast(exp.Expression, n) for n in node.walk(prune=lambda n: n is not node and isinstance(n, nested))]


def _bare_columns(tree: exp.Expression, target: str) -> exp.Expression:
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
    if target not in ("postgres", "duckdb", "mysql"):
        return tree
    for select in list(tree.find_all(exp.Select)):
        group = select.args.get("group")
        keys = list(group.expressions) if group else []
        parts = [*select.expressions, *([select.args["having"]] if select.args.get("having") else []),
                 *(select.args["order"].expressions if select.args.get("order") else [])]
        aggregates = [n for e in parts for n in _own(e) if isinstance(n, exp.AggFunc)]
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
        key_cols = {(c.table.lower(), c.name.lower()) for k in resolved for c in _own(k) if isinstance(c, exp.Column)}
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
            for col in _own(part):
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
            elif target == "mysql":
                new = (f"SUBSTRING_INDEX(GROUP_CONCAT({text} ORDER BY {by.this.sql(dialect=target)} "
                       f"{'DESC' if isinstance(by, exp.Max) else 'ASC'} SEPARATOR '␟'), '␟', 1)")
            elif target == "duckdb":
                new = f"{'ARG_MAX' if isinstance(by, exp.Max) else 'ARG_MIN'}({text}, {by.this.sql(dialect=target)})"
            else:
                new = (f"(ARRAY_AGG({text} ORDER BY {by.this.sql(dialect=target)} "
                       f"{'DESC' if isinstance(by, exp.Max) else 'ASC'} NULLS LAST))[1]")
            value = sqlglot.parse_one(new, read=target)
            # A selected column keeps its name as the result's column name.
            quoted = isinstance(col.this, exp.Identifier) and bool(col.this.quoted)
            col.replace(exp.alias_(value, col.name, quoted=quoted) if col.parent is select else value)
    return tree


def _aliases_in_conditions(tree: exp.Expression, target: str) -> exp.Expression:
    """A result column's alias in ``WHERE`` or ``HAVING`` (``HAVING n_languages > 2``), or inside an expression of
    ``ORDER BY`` (``ORDER BY CASE WHEN days IS NULL THEN 1 ELSE 0 END``), which SQLite and DuckDB read and
    PostgreSQL does not (nor MySQL, in ``WHERE`` and around an aggregate's alias): there it becomes the aliased
    expression itself. ``ORDER BY days`` alone stays: both read a bare alias there."""
    if target not in ("postgres", "mysql"):
        return tree
    for select in list(tree.find_all(exp.Select)):
        aliases = {e.alias.lower(): e.this for e in select.expressions if isinstance(e, exp.Alias)}
        if not aliases:
            continue
        names = {c.name.lower() for e in select.expressions for c in _own(e) if isinstance(c, exp.Column)}
        for clause in (select.args.get("where"), select.args.get("having"), select.args.get("order")):
            for col in _own(clause) if clause is not None else []:
                if (isinstance(col, exp.Column) and not col.table and col.name.lower() in aliases
                        and col.name.lower() not in names  # a name the select list reads as a column stays one
                        and not isinstance(col.parent, exp.Ordered)):
                    col.replace(aliases[col.name.lower()].copy())
    return tree


def _is_now(arg: exp.Expression | None) -> bool:
    return isinstance(arg, exp.Literal) and arg.is_string and arg.name.strip().lower() == "now"


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like)

#: strftime formats of one number (a year, a month ...), which SQLite turns into that number in arithmetic.
_NUMERIC_FIELDS = {"%Y", "%m", "%d", "%H", "%M", "%S", "%w", "%j", "%W"}

#: Where a value is used as a number.
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Avg, exp.Sum)


def _rewritten(tree: exp.Expression, fn: "Callable[[exp.Expression], exp.Expression]",
               passes: int = 4) -> exp.Expression:
    """``tree`` with ``fn`` applied to every node, again until nothing changes (at most ``passes`` times): sqlglot's
    ``transform`` does not visit what ``fn`` put in place, so a rewritten node's own arguments wait for the next
    pass (``date(DATE_TRUNC(...), '-1 year')``, ``CAST(strftime('%Y', 'now') AS INTEGER)``)."""
    for _ in range(passes):
        done, tree = tree, tree.transform(fn)
        if tree == done:
            break
    return tree


def _sqlite_dates(tree: exp.Expression, target: str) -> exp.Expression:
    """SQLite's own forms that sqlglot leaves as they are, or writes otherwise than SQLite means them:
    ``date('now')``, ``date(d, '+1 day')``, ``datetime(...)``, ``time(...)``, ``julianday(d)``, seconds since 1970
    (``datetime(t, 'unixepoch')``, ``strftime('%Y', t, 'unixepoch')``, ``strftime('%s', d)``), a date field used as a
    number (``strftime('%Y', 'now') - strftime('%Y', born)``, which SQLite reads as numbers), and ``COLLATE NOCASE``."""

    def as_timestamp(arg: exp.Expression) -> exp.Expression:
        return exp.CurrentTimestamp() if _is_now(arg) else exp.cast(arg, "TIMESTAMP")

    def epoch(ts: exp.Expression) -> exp.Expression:
        """Seconds since 1970 (MySQL: UNIX_TIMESTAMP, in the session's time zone, UTC for sqlweave)."""
        if target == "mysql":
            return exp.Anonymous(this="UNIX_TIMESTAMP", expressions=[ts])
        return exp.Extract(this=exp.var("EPOCH"), expression=ts)

    def is_modifier(node: exp.Expression | None, text: str) -> bool:
        return isinstance(node, exp.Literal) and node.is_string and node.name.strip().lower() == text

    def shifted(value: exp.Expression, modifiers: list[exp.Expression]) -> exp.Expression | None:
        if modifiers and is_modifier(modifiers[0], "unixepoch"):  # seconds since 1970, in UTC as on SQLite
            seconds: exp.Expression = exp.Mul(
                this=exp.paren(value.copy()), expression=exp.Interval(this=exp.Literal.string("1"),
                                                                      unit=exp.var("SECOND")))
            if target == "mysql":  # an interval is not multiplied there: INTERVAL n SECOND
                seconds = exp.Interval(this=exp.paren(value.copy()), unit=exp.var("SECOND"))
            out: exp.Expression = exp.Add(this=exp.cast(exp.Literal.string("1970-01-01"), "TIMESTAMP"),
                                          expression=seconds)
            modifiers = modifiers[1:]
        else:
            out = as_timestamp(value)
        for m in modifiers:
            found = _MODIFIER.match(m.name) if isinstance(m, exp.Literal) and m.is_string else None
            if found is None:
                return None  # 'start of month', 'weekday 0', ...: left for the database to refuse
            n, unit = found.groups()
            out = exp.Add(this=out, expression=exp.Interval(this=exp.Literal.string(n), unit=exp.var(unit.upper())))
        return out

    def nocase(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Collate) and node.expression.name.lower() == "nocase":
            return exp.Lower(this=node.this)
        return node

    def rewrite(node: exp.Expression) -> exp.Expression:
        kind, args = None, []
        if isinstance(node, exp.Date):
            kind, args = "date", [node.this] + ([node.args["zone"]] if node.args.get("zone") is not None else [])
        elif isinstance(node, exp.Anonymous) and node.name.lower() in ("date", "datetime", "time"):
            kind, args = node.name.lower(), list(node.expressions)
        if kind == "date" and len(args) == 1 and not _is_now(args[0]):
            return exp.cast(args[0], "DATE")
        if kind and args:
            moved = shifted(args[0], args[1:])
            if moved is None:
                return node
            if kind == "date":
                return exp.CurrentDate() if isinstance(moved, exp.CurrentTimestamp) else exp.cast(moved, "DATE")
            return moved if kind == "datetime" else exp.cast(moved, "TIME")
        if (isinstance(node, exp.Anonymous) and node.name.lower() == "strftime" and len(node.expressions) >= 3
                and isinstance(node.expressions[0], exp.Literal)):
            moved = shifted(node.expressions[1], list(node.expressions[2:]))
            return node if moved is None else exp.TimeToStr(this=moved, format=node.expressions[0].copy())
        if isinstance(node, exp.TsOrDsToTimestamp) and _is_now(node.this):
            return exp.CurrentTimestamp()
        if isinstance(node, exp.TimeToStr) and isinstance(node.args.get("format"), exp.Literal):
            fmt = node.args["format"].name
            if fmt == "%s":  # seconds since 1970
                return exp.cast(epoch(node.this.copy()), "BIGINT")
            # Returned as it is, the node's arguments are rewritten in this pass; a new node's in the next.
            text: exp.Expression = node
            if fmt == "%w" and target == "postgres":  # the weekday, 0 for Sunday: TO_CHAR has no such field
                text = exp.cast(exp.Extract(this=exp.var("DOW"), expression=node.this.copy()), "TEXT")
            if fmt in _NUMERIC_FIELDS and isinstance(node.parent, _ARITHMETIC):
                return exp.cast(text, "INTEGER")  # SQLite reads '1987' as 1987 in arithmetic
            return text
        if isinstance(node, exp.Anonymous) and node.name.lower() == "julianday" and len(node.expressions) == 1:
            ts = as_timestamp(node.expressions[0])
            if target == "duckdb":  # DuckDB's Julian day starts at midnight, SQLite's at noon
                return exp.paren(exp.Sub(this=exp.func("julian", ts), expression=exp.Literal.number("0.5")))
            # 86400E0: a float on MySQL, whose exact division keeps 4 decimals
            day = exp.Literal.number("86400E0" if target == "mysql" else "86400.0")
            return exp.paren(exp.Add(this=exp.Div(this=epoch(ts), expression=day),
                                     expression=exp.Literal.number("2440587.5")))
        if isinstance(node, _COMPARISONS) and any(
                isinstance(x, exp.Collate) and x.expression.name.lower() == "nocase" for x in (node.this, node.expression)):
            # a = b COLLATE NOCASE compares both sides without case
            node.set("this", exp.Lower(this=nocase(node.this)) if not isinstance(node.this, exp.Collate) else nocase(node.this))
            node.set("expression", exp.Lower(this=nocase(node.expression))
                     if not isinstance(node.expression, exp.Collate) else nocase(node.expression))
            return node
        return nocase(node)

    return _rewritten(tree, rewrite)


_SIMPLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _names_as_written(tree: exp.Expression, target: str) -> exp.Expression:
    """Quoted names from SQLite and MySQL match without regard to case; quoted on PostgreSQL they would
    match only as spelt. Simple names lose their quotes there (so they fold like the schema's own names);
    keywords stay quoted, lower-cased."""
    if target != "postgres":
        return tree
    for ident in tree.find_all(exp.Identifier):
        if ident.quoted and _SIMPLE_NAME.match(ident.name):
            if _is_keyword(ident.name, target):
                ident.set("this", ident.name.lower())
            else:
                ident.set("quoted", False)
    return tree


#: PostgreSQL's reserved key words (its documentation's appendix C): never names unless quoted.
_PG_RESERVED = frozenset("""
all analyse analyze and any array as asc asymmetric authorization binary both case cast check collate collation
column concurrently constraint create cross current_catalog current_date current_role current_schema current_time
current_timestamp current_user default deferrable desc distinct do else end except false fetch for foreign freeze
from full grant group having ilike in initially inner intersect into is isnull join lateral leading left like
limit localtime localtimestamp natural not notnull null offset on only or order outer overlaps placing primary
references returning right select session_user similar some symmetric system_user table tablesample then to
trailing true union unique user using variadic verbose when where window with
""".split())


def _is_keyword(name: str, dialect: str) -> bool:
    """Would ``name`` unquoted be read as a key word rather than a name (ORDER, USER, ...)?"""
    return name.lower() in _PG_RESERVED


def _tokens(sql: str, dialect: str) -> list[tuple[str, str]] | None:
    try:
        toks = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except (SqlglotError, ValueError):
        return None
    return [(t.token_type.name, t.text.upper()) for t in toks]


def _named_derived_tables(tree: exp.Expression, target: str) -> exp.Expression:
    """A subquery in ``FROM`` or ``JOIN`` with no name, which SQLite reads and PostgreSQL before 16 and MySQL do
    not: it gets one (``sub1``, ``sub2``, ...)."""
    if target not in ("postgres", "mysql"):
        return tree
    taken = {a.name.lower() for a in tree.find_all(exp.TableAlias)} | {t.name.lower() for t in tree.find_all(exp.Table)}
    n = 0
    for sub in list(tree.find_all(exp.Subquery)):
        if not sub.alias and isinstance(sub.parent, (exp.From, exp.Join)):
            n += 1
            while f"sub{n}" in taken:
                n += 1
            sub.set("alias", exp.TableAlias(this=exp.to_identifier(f"sub{n}")))
    return tree


def _nulls_as_sqlite_sorts_them(tree: exp.Expression, target: str) -> exp.Expression:
    """NULLs sort first in ascending and last in descending order on SQLite, and last in ascending order on
    PostgreSQL and DuckDB (first in descending order on PostgreSQL): ``ORDER BY price DESC LIMIT 1`` would answer
    a row with no price there. The query's own ``ORDER BY`` says SQLite's order (``NULLS FIRST`` / ``NULLS LAST``);
    orderings inside aggregates and windows are left alone."""
    if target not in ("postgres", "duckdb"):
        return tree
    for node in tree.find_all(exp.Select, exp.SetOperation):
        order = node.args.get("order")
        for term in order.expressions if order is not None else []:
            if isinstance(term, exp.Ordered):
                term.set("nulls_first", not term.args.get("desc"))
    return tree


def _limited_in_subqueries(tree: exp.Expression, target: str) -> exp.Expression:
    """``x IN (SELECT ... LIMIT n)``, which SQLite reads and MySQL and MariaDB refuse ("doesn't yet support 'LIMIT &
    IN/ALL/ANY/SOME subquery'"): the subquery is read through a derived table, which they accept."""
    if target != "mysql":
        return tree
    for node in list(tree.find_all(exp.In)):
        query = node.args.get("query")
        inner = query.this if isinstance(query, exp.Subquery) else query
        if isinstance(inner, exp.Query) and inner.args.get("limit") is not None:
            wrapped = exp.select("*").from_(exp.Subquery(this=inner.copy(), alias=exp.TableAlias(
                this=exp.to_identifier("limited"))))
            node.set("query", exp.Subquery(this=wrapped))
    return tree


def _rounded_half_up(tree: exp.Expression, target: str) -> exp.Expression:
    """``round(x, n)`` rounds halves away from zero on SQLite; MySQL rounds a float's halves to even (11.625 ->
    11.62): it rounds the exact decimal there."""
    if target != "mysql":
        return tree
    for node in list(tree.find_all(exp.Round)):
        if not isinstance(node.this, exp.Cast):
            node.set("this", exp.cast(node.this.copy(), exp.DataType.build("DECIMAL(65, 30)")))
    return tree


def _sqlite_forms(tree: exp.Expression, target: str, sql: str) -> exp.Expression:
    """What SQLite means by ``sql`` (parsed as ``tree``), in forms ``target`` reads the same way (case-blind LIKE,
    bare columns of an aggregate query, aliases in conditions, unnamed derived tables, halves rounded up, where
    NULLs sort; the last only when the query does not say where itself)."""
    forms = [_like_without_case, _bare_columns, _aliases_in_conditions, _named_derived_tables, _rounded_half_up,
             _limited_in_subqueries]
    if not _says_where_nulls_sort(sql):
        forms.append(_nulls_as_sqlite_sorts_them)
    for form in forms:
        tree = form(tree, target)
    return tree


def _says_where_nulls_sort(sql: str) -> bool:
    """Does the query name a NULL order itself (``NULLS FIRST``/``NULLS LAST``, as words, not inside a string)?

    >>> _says_where_nulls_sort("SELECT a FROM t ORDER BY a NULLS LAST"), _says_where_nulls_sort("SELECT 'nulls last'")
    (True, False)
    """
    words = [text for _, text in _tokens(sql, "sqlite") or []]
    return any(a == "NULLS" and b in ("FIRST", "LAST") for a, b in zip(words, words[1:]))


def from_dialect(sql: str, read: str | None, target: str, *, schema: "Schema | None" = None) -> str:
    """``sql``, written for ``read`` (a sqlglot dialect name: ``postgres``, ``mysql``, ``sqlite``, ...), in the
    ``target`` dialect, for SQL a person brings from another engine. ``read`` None or the target's own: unchanged.

    Raises :class:`~sqlweave.errors.ConfigurationError` for a dialect sqlglot does not know.

    >>> from_dialect("SELECT `name` FROM singer LIMIT 2, 3", "mysql", "postgres")
    'SELECT name FROM singer LIMIT 3 OFFSET 2'
    """
    if not read or read == target:
        return sql
    try:
        sqlglot.Dialect.get_or_raise(read)
    except ValueError:
        from ..errors import ConfigurationError

        raise ConfigurationError(f"unknown SQL dialect {read!r}",
                                 hint="Name the dialect the SQL is written in as sqlglot does: sqlite, postgres, "
                                      "duckdb, mysql, tsql, bigquery, snowflake, ...") from None
    return to_dialect(sql, target, (read,), schema=schema)


def to_dialect(sql: str, target: str | None, sources: tuple[str, ...] = SOURCES, *,
               schema: "Schema | None" = None) -> str:
    """``sql`` in the ``target`` dialect (sqlglot names: ``postgres``, ``duckdb``, ...).

    Returns ``sql`` itself when the target is unknown, when it already is the target's own, and when no dialect
    reads it (the database then reports the error). SQLite's own SQL is never changed; what SQLite has no form for
    (PostgreSQL's and MySQL's date arithmetic and fields) is written in SQLite's (:func:`_to_sqlite`); with the
    ``schema``, not when the query reads a number column as a date, which SQLite would answer with nonsense
    instead of an error.
    """
    if not target or not sql.strip():
        return sql
    if target == "sqlite":
        return _to_sqlite(sql, schema)
    tree = _parse(sql, target)
    if tree is not None and not _foreign(tree, target) and not (
            target == "mysql" and (_pipes(sql) or _sqlite_only(sql))):
        try:
            out = _sqlite_forms(tree, target, sql).sql(dialect=target)
        except (SqlglotError, ValueError):
            return sql
        # Keep the model's own text unless the target's parser read a foreign form it rewrites (LIMIT a, b,
        # IFNULL, LIKE), or MySQL would not read it (COUNT (*): no space before a call's parenthesis there):
        # then sqlglot's rendering is what runs.
        if target == "mysql" and _spaced_call(sql):
            return out
        return sql if _tokens(out, target) == _tokens(sql, target) else out
    for source in sources:
        if source == target:
            continue
        tree = _parse(sql, source)
        if tree is None:
            continue
        try:
            written = _names_as_written(_sqlite_dates(tree, target), target)
            out = _sqlite_forms(written, target, sql).sql(dialect=target)
        except (SqlglotError, ValueError):
            continue
        if _parse(out, target) is not None:
            return out
    return sql


# --- into SQLite ------------------------------------------------------------------------------------------

#: Date fields as SQLite's ``strftime`` spells them (not the week: SQLite's ``%W`` is not the ISO week that
#: PostgreSQL and MySQL count).
_STRFTIME_FIELDS = {"year": "%Y", "month": "%m", "day": "%d", "hour": "%H", "minute": "%M", "second": "%S",
                    "dow": "%w", "dayofweek": "%w", "doy": "%j", "dayofyear": "%j", "epoch": "%s"}

#: Functions SQLite has no such name for, which sqlglot's SQLite parser leaves unknown.
_NOT_SQLITE = {"now", "curdate", "date_part", "to_char", "date_format", "datediff", "date_trunc", "age", "to_date",
               "year", "month", "day", "extract", "date_add", "date_sub", "dateadd", "getdate", "sysdate"}

#: Formats of TO_DATE / TO_TIMESTAMP (as sqlglot writes them) that SQLite's date() and datetime() read as they are.
_ISO_FORMATS = {"%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"}

#: Interval units as SQLite's date modifiers name them (a week is seven days, a quarter three months).
_MODIFIER_UNITS = {"second": ("second", 1), "minute": ("minute", 1), "hour": ("hour", 1), "day": ("day", 1),
                   "week": ("day", 7), "month": ("month", 1), "quarter": ("month", 3), "year": ("year", 1)}


def _call(name: str, *args: exp.Expression) -> exp.Expression:
    return cast(exp.Expression, exp.func(name, *args))


def _has_double_colon(sql: str) -> bool:
    """Does the SQL cast with PostgreSQL's ``x::type`` (as a token, not inside a string)?"""
    return any(kind == "DCOLON" for kind, _ in _tokens(sql, "postgres") or [])


def _not_sqlite(tree: exp.Expression, *, unless: tuple[type[exp.Expression], ...] = ()) -> bool:
    """Does the tree hold a form SQLite lacks, or reads otherwise than its writer meant (other than ``unless``)?"""
    for node in tree.walk():
        if isinstance(node, unless):
            continue
        if isinstance(node, (exp.ILike, exp.Extract, exp.Interval, exp.DateAdd, exp.DateSub, exp.DateTrunc,
                             exp.TimestampTrunc, exp.Year, exp.Month, exp.Day, exp.ToChar, exp.DateDiff,
                             exp.UnixToTime, exp.StrToDate, exp.StrToTime, exp.WithinGroup)):
            return True
        if isinstance(node, exp.Anonymous) and node.name.lower() in _NOT_SQLITE:
            return True
        # CAST(x AS DATE) runs on SQLite, but as a number: '2020-07-01' becomes 2020; so does CURRENT_DATE - 7.
        if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEMPORAL_TYPES):
            return True
        if isinstance(node, (exp.Add, exp.Sub)) and _is_date_value(node.this) and (
                _is_date_value(node.expression) or isinstance(node.expression, exp.Literal)):
            return True
    return False




def _numbers_as_dates(tree: exp.Expression, schema: "Schema") -> bool:
    """Does the query take a number column for a date (``EXTRACT(YEAR FROM year)`` where ``year`` holds 2020)?
    PostgreSQL refuses that; SQLite's ``strftime('%Y', 2020)`` would read 2020 as a Julian day number."""
    read = _tables_read(tree, schema)
    for node in tree.walk():
        arg = None
        if isinstance(node, exp.Extract):
            arg = node.expression
        elif isinstance(node, (exp.Year, exp.Month, exp.Day, exp.DateAdd, exp.DateSub, exp.DateTrunc,
                               exp.TimestampTrunc)):
            arg = node.this
        elif isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval):
            arg = node.this
        if arg is not None and _column_is(_unparen(arg), schema, read, is_number_type):
            return True
    return False


def _to_sqlite(sql: str, schema: "Schema | None" = None) -> str:
    """``sql`` unchanged when SQLite reads it as its writer meant; else, read as PostgreSQL, MySQL or SQLite, in
    SQLite's forms: ``EXTRACT(YEAR FROM d)``, ``YEAR(d)`` and ``DATE_PART('year', d)`` become
    ``CAST(strftime('%Y', d) AS INTEGER)``; ``d - INTERVAL '14 days'``, ``DATE_SUB(d, INTERVAL 14 DAY)`` become
    ``date(d, '-14 day')`` (``datetime`` for hours, minutes, seconds and ``NOW()``); ``DATE_TRUNC('month', d)``
    becomes ``date(d, 'start of month')``; ``CAST(d AS DATE)``, a number on SQLite, becomes ``date(d)``;
    ``date - date`` becomes the days between them (``julianday``) and ``CURRENT_DATE - 7`` a week ago;
    ``ILIKE`` becomes ``LIKE``, which ignores case on SQLite, ``x::float`` ``CAST(x AS REAL)``,
    ``TO_TIMESTAMP(seconds)`` ``datetime(seconds, 'unixepoch')``, ``TO_DATE(text, 'YYYY-MM-DD')`` ``date(text)``,
    ``TO_DATE(month, 'Month')`` the first day of that month and ``PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY x)``
    ``percentile_cont(x, 0.5)``;
    ``TO_CHAR``, ``DATE_FORMAT``, ``NOW()`` and ``DATEDIFF`` go through sqlglot. SQL with a form none of those
    covers comes back unchanged, for SQLite to report.

    >>> _to_sqlite("SELECT EXTRACT(YEAR FROM d), count(*) FROM t WHERE d >= CURRENT_DATE - INTERVAL '30 days' GROUP BY 1")
    "SELECT CAST(STRFTIME('%Y', d) AS INTEGER), COUNT(*) FROM t WHERE d >= DATE('now', '-30 day') GROUP BY 1"
    >>> _to_sqlite("SELECT strftime('%Y', d) FROM t WHERE d > date('now', '-1 month')")  # SQLite's own
    "SELECT strftime('%Y', d) FROM t WHERE d > date('now', '-1 month')"
    """
    tree = _parse(sql, "sqlite")
    if tree is not None and not _not_sqlite(tree) and ("::" not in sql or not _has_double_colon(sql)):
        return sql
    for source in ("postgres", "mysql", "sqlite"):
        tree = _parse(sql, source)
        if tree is None:
            continue
        if schema is not None and _numbers_as_dates(tree, schema):
            return sql  # SQLite's error then says more than a wrong answer
        try:
            out = _rewritten(tree, _sqlite_form).sql(dialect="sqlite", unsupported_level=ErrorLevel.RAISE)
        except (SqlglotError, ValueError):
            continue
        back = _parse(out, "sqlite")
        # A TO_DATE whose format SQLite cannot read stays, for SQLite's error to name (STR_TO_DATE).
        if back is not None and not _not_sqlite(back, unless=(exp.StrToDate, exp.StrToTime)):
            return out
    return sql


def _field(unit: str, value: exp.Expression) -> exp.Expression | None:
    """``EXTRACT(unit FROM value)`` in SQLite's terms, or ``None`` for a field it has no format for."""
    unit = unit.lower()
    if unit == "quarter":
        month = exp.cast(_call("strftime", exp.Literal.string("%m"), value.copy()), "INTEGER")
        return exp.paren(exp.Div(this=exp.paren(exp.Add(this=month, expression=exp.Literal.number(2))),
                                 expression=exp.Literal.number(3), typed=True))
    fmt = _STRFTIME_FIELDS.get(unit) or _STRFTIME_FIELDS.get(unit.removesuffix("s"))
    if fmt is None:
        return None
    return exp.cast(_call("strftime", exp.Literal.string(fmt), value.copy()), "INTEGER")


def _whole_years(node: exp.Extract) -> exp.Expression | None:
    """PostgreSQL's ``EXTRACT(YEAR FROM AGE(later, earlier))`` (or ``AGE(earlier)``, from today): the whole years
    between two dates, as SQLite computes them (the difference of the years, less one before the anniversary)."""
    age = node.expression
    if node.name.lower() != "year" or not (isinstance(age, exp.Anonymous) and age.name.lower() == "age"):
        return None
    if len(age.expressions) == 1:
        later, earlier = exp.Literal.string("now"), age.expressions[0]
    elif len(age.expressions) == 2:
        later, earlier = age.expressions
    else:
        return None
    later = exp.Literal.string("now") if isinstance(later, (exp.CurrentDate, exp.CurrentTimestamp)) else later

    def part(fmt: str, value: exp.Expression) -> exp.Expression:
        return _call("strftime", exp.Literal.string(fmt), value.copy())

    years = exp.Sub(this=exp.cast(part("%Y", later), "INTEGER"), expression=exp.cast(part("%Y", earlier), "INTEGER"))
    before_anniversary = exp.paren(exp.LT(this=part("%m-%d", later), expression=part("%m-%d", earlier)))
    return exp.paren(exp.Sub(this=years, expression=before_anniversary))


def _shift(value: exp.Expression, amount: exp.Expression | None, unit: str, sign: int) -> exp.Expression | None:
    """``value`` moved by ``sign * amount unit`` with SQLite's ``date``/``datetime`` modifiers, or ``None``."""
    if not isinstance(amount, exp.Literal):
        return None
    words = amount.name.strip().split()
    if len(words) == 2 and not unit:  # PostgreSQL's INTERVAL '14 days'
        words, unit = words[:1], words[1]
    try:
        n = float(words[0]) if len(words) == 1 else None
    except ValueError:
        n = None
    name, factor = _MODIFIER_UNITS.get(unit.lower().rstrip("s"), (None, 0))
    if n is None or name is None:
        return None
    n *= factor * sign
    text = f"{int(n):+d}" if n == int(n) else f"{n:+g}"
    now = isinstance(value, (exp.CurrentDate, exp.CurrentTimestamp))
    base: exp.Expression = exp.Literal.string("now") if now else value.copy()
    timed = name in ("hour", "minute", "second") or isinstance(value, exp.CurrentTimestamp)
    return _call("datetime" if timed else "date", base, exp.Literal.string(f"{text} {name}"))


#: PostgreSQL's month-name formats as sqlglot hands them on (it reads the ``MM`` of ``FMMonth`` as a month number).
_MONTH_FORMATS = {"month", "mon", "f%month", "f%mon"}

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _month_named(text: exp.Expression) -> exp.Expression:
    """``TO_DATE(text, 'Month')``: the first day of the month ``text`` names (``'March'``, ``'mar'``), in year 1
    as PostgreSQL reads it; NULL for text that names no month."""
    # substr, not sqlglot's SUBSTRING, which SQLite reads only from 3.34 on
    first3 = exp.Anonymous(this="substr", expressions=[_call("trim", text.copy()), exp.Literal.number(1),
                                                        exp.Literal.number(3)])
    key = _call("lower", first3)
    month = exp.Case(this=key, ifs=[exp.If(this=exp.Literal.string(name), true=exp.Literal.string(f"{i:02d}"))
                                    for i, name in enumerate(_MONTHS, 1)])
    return _call("date", exp.DPipe(this=exp.DPipe(this=exp.Literal.string("0001-"), expression=month),
                                   expression=exp.Literal.string("-01")))


def _percentile(node: exp.WithinGroup) -> exp.Expression | None:
    """``PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY x)``: SQLite's ``percentile_cont(x, 0.5)`` (which sqlweave
    adds to SQLite builds without it, :mod:`sqlweave.db.sqlite_functions`); ``ORDER BY x DESC`` takes the
    fraction from the other end. ``None`` for another ordered-set aggregate (``mode()``)."""
    kind, order = node.this, node.expression
    if not isinstance(kind, (exp.PercentileCont, exp.PercentileDisc)) or not isinstance(order, exp.Order) \
            or len(order.expressions) != 1:
        return None
    fraction = kind.this
    if not (isinstance(fraction, exp.Literal) and not fraction.is_string):
        return None
    ordered = order.expressions[0]
    p = float(fraction.name)
    if ordered.args.get("desc"):
        if isinstance(kind, exp.PercentileDisc):
            return None  # the first value past a fraction from the top is not one from the bottom
        p = round(1 - p, 12)
    return type(kind)(this=ordered.this.copy(), expression=exp.Literal.number(f"{p:g}"))


def _is_date_value(node: exp.Expression) -> bool:
    """A date or timestamp by its form: ``CAST(x AS DATE)``, ``x::timestamp``, ``CURRENT_DATE``, ``NOW()``."""
    node = _unparen(node) or node
    return isinstance(node, (exp.CurrentDate, exp.CurrentTimestamp)) or (
        isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEMPORAL_TYPES))


def _day_number(node: exp.Expression) -> exp.Expression:
    node = _unparen(node) or node
    if isinstance(node, (exp.CurrentDate, exp.CurrentTimestamp)):
        return _call("julianday", exp.Literal.string("now"))
    return _call("julianday", node.this.copy() if isinstance(node, exp.Cast) else node.copy())


def _sqlite_form(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.ILike):  # SQLite's LIKE already ignores case
        return exp.Like(**node.args)
    if isinstance(node, (exp.StrToDate, exp.StrToTime)) and not node.args.get("safe"):
        # TO_DATE(text, 'YYYY-MM-DD'): SQLite's date() reads ISO text; other formats have no SQLite reading
        fmt = node.args.get("format")
        if isinstance(fmt, exp.Literal) and fmt.this in _ISO_FORMATS:
            timed = isinstance(node, exp.StrToTime) or "%H" in fmt.this
            return _call("datetime" if timed else "date", node.this.copy())
        if isinstance(fmt, exp.Literal) and fmt.this.strip().lower() in _MONTH_FORMATS:
            return _month_named(node.this)
        return node
    if isinstance(node, exp.WithinGroup):
        return _percentile(node) or node
    if isinstance(node, exp.UnixToTime) and not node.args.get("scale") and not node.args.get("format"):
        return _call("datetime", node.this.copy(), exp.Literal.string("unixepoch"))  # TO_TIMESTAMP(seconds)
    if isinstance(node, exp.Sub) and _is_date_value(node.this) and _is_date_value(node.expression):
        # date - date: days between them (SQLite would subtract the years its texts start with)
        days = exp.paren(exp.Sub(this=_day_number(node.this), expression=_day_number(node.expression)))
        whole = all(isinstance(side, exp.CurrentDate) or (isinstance(side, exp.Cast) and side.to.is_type(
            exp.DataType.Type.DATE)) for side in (_unparen(node.this), _unparen(node.expression)))
        return exp.cast(days, "INTEGER") if whole else days
    if (isinstance(node, (exp.Add, exp.Sub)) and _is_date_value(node.this) and isinstance(node.expression, exp.Literal)
            and not node.expression.is_string):
        # date + n: n days later (SQLite would add n to the year its text starts with)
        return _shift(_unparen(node.this) or node.this, node.expression, "day",
                      -1 if isinstance(node, exp.Sub) else 1) or node
    if isinstance(node, exp.Extract):
        return _whole_years(node) or _field(node.name, node.expression) or node
    if isinstance(node, (exp.Year, exp.Month, exp.Day)):
        return _field(type(node).__name__, node.this) or node
    if isinstance(node, exp.Anonymous) and node.name.lower() == "date_part" and len(node.expressions) == 2:
        unit = node.expressions[0]
        return (_field(unit.name, node.expressions[1]) or node) if isinstance(unit, exp.Literal) else node
    if isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval):
        interval = node.expression
        unit = interval.args.get("unit")
        sign = -1 if isinstance(node, exp.Sub) else 1
        return _shift(node.this, interval.this, unit.name if unit else "", sign) or node
    if isinstance(node, (exp.DateAdd, exp.DateSub)):
        amount, unit = node.expression, node.args.get("unit")
        if isinstance(amount, exp.Interval):
            amount, unit = amount.this, amount.args.get("unit")
        sign = -1 if isinstance(node, exp.DateSub) else 1
        return _shift(node.this, amount, unit.name if unit else "day", sign) or node
    if isinstance(node, (exp.DateTrunc, exp.TimestampTrunc)):
        unit = node.args.get("unit")
        start = {"year": ["start of year"], "month": ["start of month"],
                 "week": ["weekday 0", "-6 day"]}.get(unit.name.lower() if unit else "")  # weeks start on Monday
        if start:
            return _call("date", node.this.copy(), *map(exp.Literal.string, start))
        if unit is not None and unit.name.lower() == "quarter":  # back to January, April, July or October
            month = exp.cast(_call("strftime", exp.Literal.string("%m"), node.this.copy()), "INTEGER")
            back = exp.Mod(this=exp.paren(exp.Sub(this=month, expression=exp.Literal.number(1))),
                           expression=exp.Literal.number(3))
            return _call("date", node.this.copy(), exp.Literal.string("start of month"),
                         exp.DPipe(this=exp.paren(exp.Neg(this=exp.paren(back))), expression=exp.Literal.string(" month")))
        return _call("date", node.this.copy()) if unit is not None and unit.name.lower() == "day" else node
    if isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.DATE):
        return _call("date", node.this.copy())
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEMPORAL_TYPES):
        return _call("datetime", node.this.copy())
    return node


# --- with the schema at hand: what SQLite reads by itself --------------------------------------------------


def for_schema(sql: str, schema: "Schema", dialect: str, *, strings: bool = True) -> str:
    """``sql`` with every schema-aware form below applied, parsed once and written once (only if one changed it).

    On PostgreSQL and DuckDB, in this order: a double-quoted name that names nothing becomes a string
    (:func:`sqlite_strings`, skipped with ``strings=False``), names are spelt as the schema spells them
    (:func:`fix_case`, PostgreSQL only), a date or number under ``LIKE`` is read as text (:func:`text_patterns`), and
    a text column compared with a date or time is read as a timestamp (:func:`text_dates`), a boolean column
    reads 1 and 0 as true and false (:func:`boolean_numbers`, PostgreSQL only), a number column compared with
    a date field written as text compares with it as a number (:func:`numbered_fields`), and a text column summed,
    averaged or compared with a number is read as a number (:func:`text_numbers`). SQL that would run is never
    changed, but for one form that runs and means something else: a JSON value ordered against a text that spells
    a number (``doc ->> 'watts' > '100'``, a text comparison) compares the numbers. On other engines, or when the
    SQL does not parse, it comes back as it is.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("Event", (Column("name", "TEXT"), Column("day", "TEXT"))),), dialect="postgres")
    >>> sql = "SELECT name FROM event WHERE day >= CURRENT_DATE - 7 AND name = " + '"Fair"'
    >>> print(for_schema(sql, s, "postgres"))
    SELECT name FROM "Event" WHERE CAST(day AS TIMESTAMP) >= CURRENT_DATE - 7 AND name = 'Fair'
    """
    steps = ([_strings_tree] if strings else []) + [_case_tree, _patterns_tree, _dates_tree, _booleans_tree,
                                                    _fields_tree, _numbers_tree]
    return _apply(sql, schema, dialect, *steps)


def _apply(sql: str, schema: "Schema", dialect: str, *steps: "_Step") -> str:
    if dialect not in ("postgres", "duckdb", "mysql"):
        return sql
    tree = _parse(sql, dialect)
    if tree is None:
        return sql
    changed = False
    for step in steps:
        if dialect == "mysql" and step is not _case_tree:
            continue  # MySQL reads text as dates and numbers, and "x" as a string, as SQLite does
        changed = step(tree, schema, dialect) or changed
    return tree.sql(dialect=dialect) if changed else sql


def _tables_read(tree: exp.Expression, schema: "Schema") -> dict[str, str]:
    """Each name or alias of the query's tables (lowercase) -> the schema's table it reads."""
    read: dict[str, str] = {}
    for table in tree.find_all(exp.Table):
        if schema.has_table(table.name):
            real = schema.table(table.name).name
            read[table.alias_or_name.lower()] = real
            read.setdefault(table.name.lower(), real)
    return read


def _column_is(node: exp.Expression | None, schema: "Schema", read: dict[str, str],
               kind: "Callable[[str], object]") -> bool:
    """Is ``node`` a column whose declared type is known and of ``kind``, whichever table of the query it is from
    (its own table's, or every read table's column of that name when it is not qualified)?"""
    if not isinstance(node, exp.Column):
        return False
    if node.table:
        tables = [read[node.table.lower()]] if node.table.lower() in read else []
    else:
        tables = list(dict.fromkeys(read.values()))
    types = [schema.table(t).column(node.name).type for t in tables if schema.table(t).has_column(node.name)]
    return bool(types) and all(ty and kind(ty) for ty in types)


# --- case on PostgreSQL ----------------------------------------------------------------------------------


def fix_case(sql: str, schema: "Schema", dialect: str = "postgres") -> str:
    """Spell names as the schema does where PostgreSQL, which matches them by exact spelling, would not find them.

    A table or column whose name has capitals (``"Customer"."Name"``) is only found quoted, and a quoted name
    only as spelt. A name (quoted or not) that matches no name of the schema as PostgreSQL reads it, but matches
    one case-insensitively, is quoted with the schema's spelling; names the query itself defines (aliases,
    CTEs) are left alone, so SQL that would run is never changed.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("Customer", (Column("Id"), Column("city"))),), dialect="postgres")
    >>> fix_case("SELECT id, city FROM customer AS c WHERE c.Id > 1", s)
    'SELECT "Id", city FROM "Customer" AS c WHERE c."Id" > 1'
    """
    return _apply(sql, schema, dialect, _case_tree)


def _case_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    if dialect == "mysql":
        return _table_case(tree, schema)
    if dialect != "postgres":
        return False
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


def _table_case(tree: exp.Expression, schema: "Schema") -> bool:
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


# --- text patterns over dates and numbers ----------------------------------------------------------------

#: Declared types whose values LIKE reads as they are (any other known type is not text to PostgreSQL or DuckDB).
_TEXT_TYPE = re.compile(r"char|text|string|clob|citext|^name$", re.IGNORECASE)


def _is_text_type(type_name: str) -> bool:
    """Text that ``LIKE`` and comparisons read as it is: ``TEXT``, ``VARCHAR(20)``; not an array or a struct of it
    (``TEXT[]``, ``VARCHAR[]``, which neither engine compares with a text)."""
    return bool(_TEXT_TYPE.search(type_name)) and not is_composite_type(type_name)


def text_patterns(sql: str, schema: "Schema", dialect: str) -> str:
    """Cast a column that is not text to text where ``LIKE`` (or ``ILIKE``) reads it, as SQLite does by itself.

    Models learnt ``WHERE happened LIKE '2020%'`` on SQLite, which keeps dates as ISO text. PostgreSQL and DuckDB
    have no ``LIKE`` for dates, times or numbers (``operator does not exist: date ~~ unknown``), so that SQL would
    fail there; cast to text, a date reads as the same ISO text and a number as its digits. Only columns of a
    known type that is not text, in tables the query reads, are cast, and only on those two engines: SQL that
    would run is never changed.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("event", (Column("name", "VARCHAR"), Column("happened", "DATE"))),), dialect="postgres")
    >>> text_patterns("SELECT name FROM event AS e WHERE e.happened ILIKE '2020%' AND name ILIKE 'w%'", s, "postgres")
    "SELECT name FROM event AS e WHERE CAST(e.happened AS TEXT) ILIKE '2020%' AND name ILIKE 'w%'"
    """
    return _apply(sql, schema, dialect, _patterns_tree)


def _patterns_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    likes = [like for like in tree.find_all(exp.Like, exp.ILike) if isinstance(like.this, exp.Column)]
    if not likes:
        return False
    read = _tables_read(tree, schema)
    changed = False
    for like in likes:
        if _column_is(like.this, schema, read, lambda ty: not _is_text_type(ty)):
            like.set("this", exp.Cast(this=like.this.copy(), to=exp.DataType.build("text")))
            changed = True
    return changed


# --- text compared with dates -------------------------------------------------------------------------------

#: Declared types of dates and times (``TIMESTAMP WITH TIME ZONE``, ``DATETIME``, ``DATE``, ``TIME``).
_DATE_TYPE = re.compile(r"date|time", re.IGNORECASE)

#: Expressions whose value is a date or a time on PostgreSQL and DuckDB.
_DATE_VALUES = (exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentTime, exp.DateAdd, exp.DateSub, exp.DateTrunc,
                exp.TimestampTrunc, exp.StrToDate, exp.StrToTime, exp.TsOrDsToDate, exp.TimeStrToTime)


def _unparen(node: exp.Expression | None) -> exp.Expression | None:
    """``node`` without the parentheses around it."""
    while isinstance(node, exp.Paren):
        node = cast(exp.Expression, node.this)
    return node


def text_dates(sql: str, schema: "Schema", dialect: str) -> str:
    """Read a text column as a timestamp where the query compares it with a date or a time, as SQLite does.

    Many databases keep dates as ISO text (``'2023-01-05'``), and SQLite compares them with its own date values,
    which are text too. PostgreSQL and DuckDB refuse to compare text with a date (``operator does not exist: text
    >= timestamp without time zone``); cast to ``TIMESTAMP``, the text reads as the date it spells. Only a column
    of a known text type, compared (``=``, ``<``, ``BETWEEN`` ...) with a date column, a cast to a date type,
    ``CURRENT_DATE``, ``NOW()``, date arithmetic or an interval sum, is cast: SQL that would run is never changed.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("visit", (Column("day", "TEXT"), Column("seen", "DATE"))),), dialect="postgres")
    >>> text_dates("SELECT * FROM visit WHERE day >= seen - INTERVAL '14 days' AND day <> 'never'", s, "postgres")
    "SELECT * FROM visit WHERE CAST(day AS TIMESTAMP) >= seen - INTERVAL '14 DAYS' AND day <> 'never'"
    """
    return _apply(sql, schema, dialect, _dates_tree)


def _dates_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    comparisons = list(tree.find_all(exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between))
    if not comparisons:
        return False
    read = _tables_read(tree, schema)

    def is_text(node: exp.Expression) -> bool:
        return _column_is(node, schema, read, _is_text_type)

    def is_date(node: exp.Expression | None) -> bool:
        node = _unparen(node)
        if node is None:
            return False
        if isinstance(node, _DATE_VALUES) or isinstance(node, exp.Interval):
            return True
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return node.to.is_type(*exp.DataType.TEMPORAL_TYPES)
        if isinstance(node, (exp.Add, exp.Sub)):
            return is_date(node.this) or is_date(node.expression)
        return _column_is(node, schema, read, lambda ty: _DATE_TYPE.search(ty) and not _TEXT_TYPE.search(ty)
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
            inner = _unparen(side)
            if inner is not None and is_text(inner):
                as_timestamp(inner)
                changed = True
    return changed


# --- booleans as numbers -----------------------------------------------------------------------------------

_BOOLEAN_TYPE = re.compile(r"^\s*bool(ean)?\s*$", re.IGNORECASE)


def boolean_numbers(sql: str, schema: "Schema", dialect: str) -> str:
    """A boolean column as SQLite, which has no booleans, reads it: ``= 1`` is true, ``= 0`` false, and its sum
    counts the true rows.

    PostgreSQL refuses ``is_placebo = 1`` (``operator does not exist: boolean = integer``) and ``SUM(is_placebo)``;
    the number becomes ``TRUE`` or ``FALSE``, and a boolean under ``SUM`` or ``AVG`` is cast to an integer. DuckDB
    reads both already. Only columns of the schema's boolean type are touched: SQL that would run is never changed.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("t", (Column("id", "INTEGER"), Column("ok", "BOOLEAN"))),), dialect="postgres")
    >>> boolean_numbers("SELECT SUM(ok), count(*) FROM t WHERE ok = 1 OR id = 1 OR ok <> 0", s, "postgres")
    'SELECT SUM(CAST(ok AS INT)), COUNT(*) FROM t WHERE ok = TRUE OR id = 1 OR ok <> FALSE'
    """
    return _apply(sql, schema, dialect, _booleans_tree)


def _booleans_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    if dialect != "postgres":
        return False
    comparisons = list(tree.find_all(exp.EQ, exp.NEQ))
    sums = list(tree.find_all(exp.Sum, exp.Avg))
    if not comparisons and not sums:
        return False
    read = _tables_read(tree, schema)

    def is_boolean(node: exp.Expression | None) -> bool:
        return _column_is(node, schema, read, _BOOLEAN_TYPE.match)

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


# --- number columns compared with date fields --------------------------------------------------------------


def numbered_fields(sql: str, schema: "Schema", dialect: str) -> str:
    """A number column compared with one date field written as text (``year_reg = strftime('%Y', 'now')``), as
    SQLite compares them: as numbers, since the column's type converts the other side.

    PostgreSQL refuses ``integer = text`` and DuckDB an ``INTEGER`` against a ``VARCHAR``; the field
    (``TO_CHAR(d, 'YYYY')``, ``strftime(d, '%Y')``, the weekday's ``CAST(EXTRACT(DOW FROM d) AS TEXT)``) becomes
    an integer. Only a format of one number (a year, a month, a day ...)
    and a column of the schema's number types are touched: SQL that would run is never changed.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("t", (Column("year", "INTEGER"), Column("d", "DATE"))),), dialect="postgres")
    >>> numbered_fields("SELECT count(*) FROM t WHERE year = TO_CHAR(d, 'YYYY')", s, "postgres")
    "SELECT COUNT(*) FROM t WHERE year = CAST(TO_CHAR(d, 'YYYY') AS INT)"
    """
    return _apply(sql, schema, dialect, _fields_tree)


def _numeric_field(node: exp.Expression | None) -> exp.Expression | None:
    """The date field of one number that ``node`` writes as text (``TO_CHAR(d, 'YYYY')``, ``strftime(d, '%Y')``,
    and the weekday as PostgreSQL's form of ``%w`` spells it, ``CAST(EXTRACT(DOW FROM d) AS TEXT)``), or None."""
    node = _unparen(node)
    if isinstance(node, exp.TimeToStr):
        fmt = node.args.get("format")
        return node if isinstance(fmt, exp.Literal) and fmt.name in _NUMERIC_FIELDS else None
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEXT_TYPES) and isinstance(node.this, exp.Extract):
        return node.this
    return None


def _fields_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    comparisons = [c for c in tree.find_all(*_COMPARISONS) if not isinstance(c, exp.Like)
                   and any(_numeric_field(side) is not None for side in (c.this, c.expression))]
    if not comparisons:
        return False
    read = _tables_read(tree, schema)
    changed = False
    for cmp in comparisons:
        for side, other in (("this", cmp.expression), ("expression", cmp.this)):
            number = _numeric_field(cmp.args.get(side))
            if number is not None and _column_is(_unparen(other), schema, read, is_number_type):
                cmp.set(side, exp.cast(number.copy(), "INTEGER"))
                changed = True
    return changed


# --- numbers kept as text ---------------------------------------------------------------------------------

#: A text that spells a number (spaces around it allowed), as PostgreSQL's regular expressions read it.
_NUMBER_TEXT = r"^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$"


def text_numbers(sql: str, schema: "Schema", dialect: str) -> str:
    """Read a text column as a number where the query uses it as one: summed or averaged, compared with a
    number, or in arithmetic with one.

    Data loaded from files often keeps numbers as text, because a few rows hold ``'null'``, ``'n/a'`` or nothing
    (Spider's ``cars_data.Horsepower``). PostgreSQL and DuckDB refuse ``AVG(horsepower)`` and ``horsepower >
    150`` on a text column (``function avg(text) does not exist``); the column is read as a number there, and a
    text that spells none as NULL, so ``AVG`` skips it. SQLite would run both, reading ``'null'`` as 0 in a sum
    and comparing the text ``'98'`` above ``'150'``; MySQL and MariaDB compare as numbers too (reading ``'null'``
    as 0). Read as numbers, the answer is the one the question means. Only columns of a known text type are read so, and only where the SQL would
    fail: SQL that would run is never changed (on DuckDB, ``text = 85`` runs while every value spells a number,
    and gives what this gives).

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("car", (Column("id", "INTEGER"), Column("hp", "TEXT"), Column("name", "TEXT"))),),
    ...            dialect="duckdb")
    >>> text_numbers("SELECT AVG(hp) FROM car WHERE hp > 150 AND name = 'ford' AND id = 1", s, "duckdb")
    "SELECT AVG(TRY_CAST(hp AS DOUBLE)) FROM car WHERE TRY_CAST(hp AS DOUBLE) > 150 AND name = 'ford' AND id = 1"

    A JSON value read as text (``doc ->> 'watts'``) is read so too, and ordered against a text that spells a
    number (``> '100'``, which runs and compares text: ``'9' > '100'``) it is compared with that number
    (:func:`_numbers_for_json`); ``= '650'`` is left as written.

    >>> text_numbers("SELECT id FROM car WHERE doc ->> 'watts' > '100' AND doc ->> 'kind' = '9'", s, "duckdb")
    "SELECT id FROM car WHERE TRY_CAST(doc ->> '$.watts' AS DOUBLE) > 100 AND (doc ->> '$.kind') = '9'"
    """
    return _apply(sql, schema, dialect, _numbers_tree)


def _as_number(node: exp.Expression, dialect: str) -> exp.Expression:
    """``node`` (text) as a number, NULL where it spells none."""
    if dialect == "duckdb":
        return exp.TryCast(this=node.copy(), to=exp.DataType.build("double"))
    # NUMERIC, not a double: a long text of digits would overflow a double and fail the query
    return exp.Case().when(exp.RegexpLike(this=node.copy(), expression=exp.Literal.string(_NUMBER_TEXT)),
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
        node = _unparen(node)
        if isinstance(node, exp.Literal) and node.is_string and re.fullmatch(_NUMBER_TEXT, node.this):
            node.replace(exp.Literal.number(node.this.strip()))


def _numbers_tree(tree: exp.Expression, schema: "Schema", dialect: str) -> bool:
    if dialect not in ("postgres", "duckdb"):
        return False
    uses = list(tree.find_all(exp.Sum, exp.Avg, exp.In, exp.Between, exp.Add, exp.Sub, exp.Mul, exp.Div,
                              exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE))
    if not uses:
        return False
    read = _tables_read(tree, schema)

    def is_text(node: exp.Expression | None) -> bool:
        return isinstance(node, _JSON_TEXT) or _column_is(node, schema, read, _is_text_type)

    def is_number(node: exp.Expression | None) -> bool:
        node = _unparen(node)
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
        return _column_is(node, schema, read,
                          lambda ty: is_number_type(ty) and not _TEXT_TYPE.search(ty) and not _DATE_TYPE.search(ty))

    targets: list[exp.Expression] = []
    for use in uses:
        if isinstance(use, (exp.Sum, exp.Avg)):
            arg = use.this
            if isinstance(arg, exp.Distinct) and len(arg.expressions) == 1:
                arg = arg.expressions[0]
            sides = [_unparen(arg)]
        elif isinstance(use, exp.In):
            values = use.expressions
            sides = [_unparen(use.this)] if values and all(is_number(v) for v in values) else []
        elif isinstance(use, exp.Between):
            if isinstance(_unparen(use.this), _JSON_TEXT):
                _numbers_for_json(use.args.get("low"), use.args.get("high"))
            ends = [use.args.get("low"), use.args.get("high")]
            sides = [_unparen(use.this)] if all(is_number(e) for e in ends) else []
        else:
            left, right = _unparen(use.this), _unparen(use.expression)
            if isinstance(use, _ORDERINGS) and isinstance(left, _JSON_TEXT):
                _numbers_for_json(right)
            elif isinstance(use, _ORDERINGS) and isinstance(right, _JSON_TEXT):
                _numbers_for_json(left)
            left, right = _unparen(use.this), _unparen(use.expression)
            sides = [s for s, other in ((left, right), (right, left)) if is_number(other)]
        targets += [s for s in sides if s is not None and is_text(s)]
    for node in targets:  # each a direct operand of one use (through parentheses), so listed once
        node.replace(_as_number(node, dialect))
    return bool(targets)


# --- a subquery compared with = that returns several rows ---------------------------------------------------

#: What PostgreSQL, DuckDB, MySQL and MariaDB say when a subquery used as one value returns several rows.
MANY_ROWS = re.compile(r"more than one row returned by a subquery|subquery returns more than 1 row", re.IGNORECASE)


def subqueries_as_sets(sql: str, dialect: str) -> str:
    """``x = (SELECT ...)`` as ``x IN (SELECT ...)``, and ``x <> (SELECT ...)`` as ``NOT x IN (SELECT ...)``.

    A model asked "the employees of the sales departments" writes ``dept_id = (SELECT id FROM dept WHERE name
    LIKE '%sales%')``. SQLite answers it from the subquery's first row alone; PostgreSQL, DuckDB and MySQL refuse
    it once the subquery returns several rows (``more than one row returned by a subquery used as an expression``).
    :meth:`sqlweave.db.Database.execute` runs this form after that error only, so SQL that runs is never
    changed; comparisons other than ``=`` and ``<>`` with such a subquery are left to fail. Comes back unchanged
    when it holds no such comparison or does not parse.

    >>> subqueries_as_sets("SELECT name FROM emp WHERE dept = (SELECT id FROM dept WHERE name LIKE 'S%')", "postgres")
    "SELECT name FROM emp WHERE dept IN (SELECT id FROM dept WHERE name LIKE 'S%')"
    >>> subqueries_as_sets("SELECT name FROM emp WHERE (SELECT id FROM boss) <> dept", "duckdb")
    'SELECT name FROM emp WHERE NOT dept IN (SELECT id FROM boss)'
    """
    tree = _parse(sql, dialect)
    if tree is None:
        return sql
    changed = False
    for cmp in list(tree.find_all(exp.EQ, exp.NEQ)):
        left, right = _unparen(cmp.this), _unparen(cmp.expression)
        for value, query in ((left, right), (right, left)):
            if isinstance(query, exp.Subquery) and value is not None and not isinstance(value, exp.Subquery):
                member = exp.In(this=value.copy(), query=query.copy())
                cmp.replace(member if isinstance(cmp, exp.EQ) else exp.Not(this=member))
                changed = True
                break
    return tree.sql(dialect=dialect) if changed else sql


# --- double-quoted strings ---------------------------------------------------------------------------------


def sqlite_strings(sql: str, schema: "Schema", dialect: str) -> str:
    """A double-quoted name that names nothing, as SQLite reads it: a string (``WHERE language = "English"``).

    SQLite takes ``"English"`` for a string when no column has that name; PostgreSQL and DuckDB read it as a
    column and fail. On those two engines, a double-quoted, unqualified name that is no column of the schema and
    no name the query defines (an alias, a CTE, a derived table's column) becomes the string it spells. SQL that
    would run is never changed.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("event", (Column("name", "VARCHAR"), Column("city", "VARCHAR"))),), dialect="postgres")
    >>> print(sqlite_strings('SELECT "name" FROM event WHERE city = "Paris" OR city LIKE "%yon%"', s, "postgres"))
    SELECT "name" FROM event WHERE city = 'Paris' OR city LIKE '%yon%'
    """
    if '"' not in sql:
        return sql
    return _apply(sql, schema, dialect, _strings_tree)


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
