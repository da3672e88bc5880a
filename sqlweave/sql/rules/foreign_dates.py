"""SQLite's own date forms and quoted names, written for the engine a query is read into (phase ``foreign``).

These run on SQL read from a source dialect (SQLite, MySQL, T-SQL) because the target's parser did not take
it as its own: :data:`FOREIGN` lists them. What differs by engine is in the tables below, not in the rules.

>>> from .base import apply, parse
>>> tree, fired = apply(parse("SELECT `Name` FROM t WHERE d > date('now')", "sqlite"), FOREIGN, Context("postgres"))
>>> tree.sql("postgres"), fired
('SELECT Name FROM t WHERE d > CURRENT_DATE', ['sqlite_dates', 'names_as_written'])
"""

from __future__ import annotations

import re

from sqlglot import exp

from .base import ANY, Context, Rule, is_now, rewritten

_MODIFIER = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s+(day|month|year|hour|minute|second)s?\s*$", re.IGNORECASE)


def _extract_epoch(ts: exp.Expression) -> exp.Expression:
    return exp.Extract(this=exp.var("EPOCH"), expression=ts)


#: Seconds since 1970 of a timestamp, where ``EXTRACT(EPOCH FROM ts)`` is not how the engine says it (MySQL:
#: UNIX_TIMESTAMP, in the session's time zone, UTC for sqlweave).
_EPOCH = {"mysql": lambda ts: exp.Anonymous(this="UNIX_TIMESTAMP", expressions=[ts])}
#: Engines where an interval is not multiplied by a number.
_NO_INTERVAL_PRODUCT = frozenset({"mysql"})
#: Engines whose date format has no weekday field (0 for Sunday): EXTRACT(DOW ...) as text instead.
_NO_WEEKDAY_FIELD = frozenset({"postgres"})
#: Engines with a Julian day function of their own (starting at midnight, SQLite's at noon).
_JULIAN_FUNCTION = frozenset({"duckdb"})
#: Seconds in a day as the division by it is written (MySQL: a float, whose exact division keeps 4 decimals).
_DAY_SECONDS = {"mysql": "86400E0"}


COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like)

#: strftime formats of one number (a year, a month ...), which SQLite turns into that number in arithmetic.
NUMERIC_FIELDS = {"%Y", "%m", "%d", "%H", "%M", "%S", "%w", "%j", "%W"}

#: Where a value is used as a number.
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Avg, exp.Sum)


def sqlite_dates(tree: exp.Expression, ctx: Context) -> exp.Expression | None:
    """SQLite's own forms that sqlglot leaves as they are, or writes otherwise than SQLite means them:
    ``date('now')``, ``date(d, '+1 day')``, ``datetime(...)``, ``time(...)``, ``julianday(d)``, seconds since 1970
    (``datetime(t, 'unixepoch')``, ``strftime('%Y', t, 'unixepoch')``, ``strftime('%s', d)``), a date field used as a
    number (``strftime('%Y', 'now') - strftime('%Y', born)``, which SQLite reads as numbers), and ``COLLATE NOCASE``."""
    target = ctx.dialect

    def as_timestamp(arg: exp.Expression) -> exp.Expression:
        return exp.CurrentTimestamp() if is_now(arg) else exp.cast(arg, "TIMESTAMP")

    def epoch(ts: exp.Expression) -> exp.Expression:
        """Seconds since 1970 (MySQL: UNIX_TIMESTAMP, in the session's time zone, UTC for sqlweave)."""
        return _EPOCH.get(target, _extract_epoch)(ts)

    def is_modifier(node: exp.Expression | None, text: str) -> bool:
        return isinstance(node, exp.Literal) and node.is_string and node.name.strip().lower() == text

    def shifted(value: exp.Expression, modifiers: list[exp.Expression]) -> exp.Expression | None:
        if modifiers and is_modifier(modifiers[0], "unixepoch"):  # seconds since 1970, in UTC as on SQLite
            seconds: exp.Expression = exp.Mul(
                this=exp.paren(value.copy()), expression=exp.Interval(this=exp.Literal.string("1"),
                                                                      unit=exp.var("SECOND")))
            if target in _NO_INTERVAL_PRODUCT:  # an interval is not multiplied there: INTERVAL n SECOND
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
        if kind == "date" and len(args) == 1 and not is_now(args[0]):
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
        if isinstance(node, exp.TsOrDsToTimestamp) and is_now(node.this):
            return exp.CurrentTimestamp()
        if isinstance(node, exp.TimeToStr) and isinstance(node.args.get("format"), exp.Literal):
            fmt = node.args["format"].name
            if fmt == "%s":  # seconds since 1970
                return exp.cast(epoch(node.this.copy()), "BIGINT")
            # Returned as it is, the node's arguments are rewritten in this pass; a new node's in the next.
            text: exp.Expression = node
            if fmt == "%w" and target in _NO_WEEKDAY_FIELD:  # the weekday, 0 for Sunday: TO_CHAR has no such field
                text = exp.cast(exp.Extract(this=exp.var("DOW"), expression=node.this.copy()), "TEXT")
            if fmt in NUMERIC_FIELDS and isinstance(node.parent, _ARITHMETIC):
                return exp.cast(text, "INTEGER")  # SQLite reads '1987' as 1987 in arithmetic
            return text
        if isinstance(node, exp.Anonymous) and node.name.lower() == "julianday" and len(node.expressions) == 1:
            ts = as_timestamp(node.expressions[0])
            if target in _JULIAN_FUNCTION:  # DuckDB's Julian day starts at midnight, SQLite's at noon
                return exp.paren(exp.Sub(this=exp.func("julian", ts), expression=exp.Literal.number("0.5")))
            day = exp.Literal.number(_DAY_SECONDS.get(target, "86400.0"))
            return exp.paren(exp.Add(this=exp.Div(this=epoch(ts), expression=day),
                                     expression=exp.Literal.number("2440587.5")))
        if isinstance(node, COMPARISONS) and any(
                isinstance(x, exp.Collate) and x.expression.name.lower() == "nocase" for x in (node.this, node.expression)):
            # a = b COLLATE NOCASE compares both sides without case
            node.set("this", exp.Lower(this=nocase(node.this)) if not isinstance(node.this, exp.Collate) else nocase(node.this))
            node.set("expression", exp.Lower(this=nocase(node.expression))
                     if not isinstance(node.expression, exp.Collate) else nocase(node.expression))
            return node
        return nocase(node)

    out = rewritten(tree, rewrite)
    return out if out != tree else None


_SIMPLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def names_as_written(tree: exp.Expression, ctx: Context) -> exp.Expression | None:
    """Quoted names from SQLite and MySQL match without regard to case; quoted on PostgreSQL they would
    match only as spelt. Simple names lose their quotes there (so they fold like the schema's own names);
    keywords stay quoted, lower-cased."""
    changed = False
    for ident in tree.find_all(exp.Identifier):
        if ident.quoted and _SIMPLE_NAME.match(ident.name):
            changed = True
            if _is_keyword(ident.name, ctx.dialect):
                ident.set("this", ident.name.lower())
            else:
                ident.set("quoted", False)
    return tree if changed else None


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


#: The phase's rules, in the order they run (every target but SQLite, which reads its own forms).
FOREIGN: tuple[Rule, ...] = (
    Rule("sqlite_dates", "foreign", frozenset({ANY}), sqlite_dates),
    Rule("names_as_written", "foreign", frozenset({"postgres"}), names_as_written),
)
