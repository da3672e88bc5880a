"""What tells a query's dialect: SQLite's functions under another target's parser, tokens MySQL misreads.

:func:`foreign` says whether a tree parsed as the target holds something written for another dialect (then it is
read from :data:`SOURCES` instead); :data:`MISREAD` and :data:`RENDER_ALWAYS` say, per target, which SQL its
parser reads otherwise than meant; :func:`not_sqlite` whether a tree holds a form SQLite lacks.

>>> foreign(parse("SELECT julianday(d) FROM t", "postgres"), "postgres"), MISREAD["mysql"]("SELECT a || b")
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Tokenizer, TokenType

from .base import is_now as _is_now, parse, parse as _parse, unparen as _unparen

SOURCES = ("sqlite", "mysql", "tsql")

#: Functions of SQLite (and MySQL) that the target does not have under that name, so a tree holding them was
#: written for another dialect.
_FOREIGN_FUNCTIONS = {
    "postgres": {"strftime", "julianday", "datetime", "unixepoch", "printf", "group_concat", "ifnull", "iif",
                 "instr", "date_format", "ucase", "lcase", "locate", "total"},
    "duckdb": {"julianday", "datetime", "unixepoch", "date_format", "ucase", "lcase", "locate", "total"},
}



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


def _sqlite_date_call(node: exp.Expression) -> bool:
    """date(text), which PostgreSQL does not have: CAST(x AS DATE) reads text and timestamps alike there."""
    return isinstance(node, exp.Date)


def _sqlite_strftime_order(node: exp.Expression) -> bool:
    """strftime('%Y', d): SQLite's argument order, where DuckDB's is strftime(d, '%Y')."""
    return (isinstance(node, exp.TimeToStr) and isinstance(node.this, exp.Literal) and node.this.is_string
            and "%" in node.this.name)


#: Functions SQLite has no such name for, which sqlglot's SQLite parser leaves unknown.
_NOT_SQLITE = {"now", "curdate", "date_part", "to_char", "date_format", "datediff", "date_trunc", "age", "to_date",
               "year", "month", "day", "extract", "date_add", "date_sub", "dateadd", "getdate", "sysdate"}

#: Per target, what in a tree read as the target's own was written for SQLite.
_FOREIGN_NODES: dict[str, tuple[Callable[[exp.Expression], bool], ...]] = {
    "postgres": (_sqlite_date_call,),
    "duckdb": (_sqlite_strftime_order,),
}


def _misread_by_mysql(sql: str) -> bool:
    """Would MySQL's parser read ``sql`` otherwise than its writer meant (``||`` as OR, SQLite's dates)?"""
    return _pipes(sql) or _sqlite_only(sql)


#: Per target, SQL the target's parser reads but not as meant: it is read from the sources instead.
MISREAD: dict[str, Callable[[str], bool]] = {"mysql": _misread_by_mysql}

#: Per target, SQL the target would refuse as written even where it parses: sqlglot's rendering is what runs.
RENDER_ALWAYS: dict[str, Callable[[str], bool]] = {"mysql": _spaced_call}


def foreign(tree: exp.Expression, target: str) -> bool:
    """Does the tree, parsed as ``target``, hold something written for another dialect?"""
    names = _FOREIGN_FUNCTIONS.get(target, set())
    for node in tree.walk():
        if isinstance(node, exp.Anonymous) and node.name.lower() in names:
            return True
        if isinstance(node, exp.Datetime):
            return True  # SQLite's datetime(value, modifier...): neither target has it
        if isinstance(node, (exp.Date, exp.Time)) and (node.args.get("zone") is not None or _is_now(node.this)):
            return True  # SQLite's date(value, modifier) and date('now')
        if any(test(cast(exp.Expression, node)) for test in _FOREIGN_NODES.get(target, ())):
            return True
        if isinstance(node, exp.Collate) and node.expression.name.lower() == "nocase":
            return True
    return False


def tokens(sql: str, dialect: str) -> list[tuple[str, str]] | None:
    try:
        toks = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except (SqlglotError, ValueError):
        return None
    return [(t.token_type.name, t.text.upper()) for t in toks]


def says_where_nulls_sort(sql: str) -> bool:
    """Does the query name a NULL order itself (``NULLS FIRST``/``NULLS LAST``, as words, not inside a string)?

    >>> says_where_nulls_sort("SELECT a FROM t ORDER BY a NULLS LAST"), says_where_nulls_sort("SELECT 'nulls last'")
    (True, False)
    """
    words = [text for _, text in tokens(sql, "sqlite") or []]
    return any(a == "NULLS" and b in ("FIRST", "LAST") for a, b in zip(words, words[1:]))


def has_double_colon(sql: str) -> bool:
    """Does the SQL cast with PostgreSQL's ``x::type`` (as a token, not inside a string)?"""
    return any(kind == "DCOLON" for kind, _ in tokens(sql, "postgres") or [])


def not_sqlite(tree: exp.Expression, *, unless: tuple[type[exp.Expression], ...] = ()) -> bool:
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
        if isinstance(node, (exp.Add, exp.Sub)) and is_date_value(node.this) and (
                is_date_value(node.expression) or isinstance(node.expression, exp.Literal)):
            return True
    return False




def is_date_value(node: exp.Expression) -> bool:
    """A date or timestamp by its form: ``CAST(x AS DATE)``, ``x::timestamp``, ``CURRENT_DATE``, ``NOW()``."""
    node = _unparen(node) or node
    return isinstance(node, (exp.CurrentDate, exp.CurrentTimestamp)) or (
        isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEMPORAL_TYPES))

