"""PostgreSQL's and MySQL's forms written in SQLite's (phase ``into_sqlite``): dates, intervals, casts.

Each form is one named function of a node; :data:`INTO_SQLITE` lists them, and :func:`sqlite_form` applies them
over a tree until nothing changes (:func:`sqlweave.sql.transpile.to_dialect` with the target ``sqlite``).

>>> from .base import parse
>>> fired: list[str] = []
>>> sqlite_form(parse("SELECT EXTRACT(YEAR FROM d) FROM t", "postgres"), Context("sqlite"), fired).sql("sqlite"), fired
("SELECT CAST(STRFTIME('%Y', d) AS INTEGER) FROM t", ['extract_field'])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from .base import Context, NodeFn, call, node_rules, rewritten, unparen
from .detect import is_date_value
from ...schema import is_number_type
from .schema_types import column_is, tables_read

if TYPE_CHECKING:
    from ...schema import Schema

#: Date fields as SQLite's ``strftime`` spells them (not the week: SQLite's ``%W`` is not the ISO week that
#: PostgreSQL and MySQL count).
_STRFTIME_FIELDS = {"year": "%Y", "month": "%m", "day": "%d", "hour": "%H", "minute": "%M", "second": "%S",
                    "dow": "%w", "dayofweek": "%w", "doy": "%j", "dayofyear": "%j", "epoch": "%s"}

#: Formats of TO_DATE / TO_TIMESTAMP (as sqlglot writes them) that SQLite's date() and datetime() read as they are.
_ISO_FORMATS = {"%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"}

#: Interval units as SQLite's date modifiers name them (a week is seven days, a quarter three months).
_MODIFIER_UNITS = {"second": ("second", 1), "minute": ("minute", 1), "hour": ("hour", 1), "day": ("day", 1),
                   "week": ("day", 7), "month": ("month", 1), "quarter": ("month", 3), "year": ("year", 1)}



def numbers_as_dates(tree: exp.Expression, schema: "Schema") -> bool:
    """Does the query take a number column for a date (``EXTRACT(YEAR FROM year)`` where ``year`` holds 2020)?
    PostgreSQL refuses that; SQLite's ``strftime('%Y', 2020)`` would read 2020 as a Julian day number."""
    read = tables_read(tree, schema)
    for node in tree.walk():
        arg = None
        if isinstance(node, exp.Extract):
            arg = node.expression
        elif isinstance(node, (exp.Year, exp.Month, exp.Day, exp.DateAdd, exp.DateSub, exp.DateTrunc,
                               exp.TimestampTrunc)):
            arg = node.this
        elif isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval):
            arg = node.this
        if arg is not None and column_is(unparen(arg), schema, read, is_number_type):
            return True
    return False


def _field(unit: str, value: exp.Expression) -> exp.Expression | None:
    """``EXTRACT(unit FROM value)`` in SQLite's terms, or ``None`` for a field it has no format for."""
    unit = unit.lower()
    if unit == "quarter":
        month = exp.cast(call("strftime", exp.Literal.string("%m"), value.copy()), "INTEGER")
        return exp.paren(exp.Div(this=exp.paren(exp.Add(this=month, expression=exp.Literal.number(2))),
                                 expression=exp.Literal.number(3), typed=True))
    fmt = _STRFTIME_FIELDS.get(unit) or _STRFTIME_FIELDS.get(unit.removesuffix("s"))
    if fmt is None:
        return None
    return exp.cast(call("strftime", exp.Literal.string(fmt), value.copy()), "INTEGER")


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
        return call("strftime", exp.Literal.string(fmt), value.copy())

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
    return call("datetime" if timed else "date", base, exp.Literal.string(f"{text} {name}"))


#: PostgreSQL's month-name formats as sqlglot hands them on (it reads the ``MM`` of ``FMMonth`` as a month number).
_MONTH_FORMATS = {"month", "mon", "f%month", "f%mon"}

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _month_named(text: exp.Expression) -> exp.Expression:
    """``TO_DATE(text, 'Month')``: the first day of the month ``text`` names (``'March'``, ``'mar'``), in year 1
    as PostgreSQL reads it; NULL for text that names no month."""
    # substr, not sqlglot's SUBSTRING, which SQLite reads only from 3.34 on
    first3 = exp.Anonymous(this="substr", expressions=[call("trim", text.copy()), exp.Literal.number(1),
                                                        exp.Literal.number(3)])
    key = call("lower", first3)
    month = exp.Case(this=key, ifs=[exp.If(this=exp.Literal.string(name), true=exp.Literal.string(f"{i:02d}"))
                                    for i, name in enumerate(_MONTHS, 1)])
    return call("date", exp.DPipe(this=exp.DPipe(this=exp.Literal.string("0001-"), expression=month),
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



def _day_number(node: exp.Expression) -> exp.Expression:
    node = unparen(node) or node
    if isinstance(node, (exp.CurrentDate, exp.CurrentTimestamp)):
        return call("julianday", exp.Literal.string("now"))
    return call("julianday", node.this.copy() if isinstance(node, exp.Cast) else node.copy())


def _ilike_as_like(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, exp.ILike):  # SQLite's LIKE already ignores case
        return exp.Like(**node.args)
    return None


def _text_to_date(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, (exp.StrToDate, exp.StrToTime)) and not node.args.get("safe"):
        # TO_DATE(text, 'YYYY-MM-DD'): SQLite's date() reads ISO text; other formats have no SQLite reading
        fmt = node.args.get("format")
        if isinstance(fmt, exp.Literal) and fmt.this in _ISO_FORMATS:
            timed = isinstance(node, exp.StrToTime) or "%H" in fmt.this
            return call("datetime" if timed else "date", node.this.copy())
        if isinstance(fmt, exp.Literal) and fmt.this.strip().lower() in _MONTH_FORMATS:
            return _month_named(node.this)
        return node
    return None


def _within_group_percentile(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, exp.WithinGroup):
        return _percentile(node) or node
    return None


def _seconds_to_timestamp(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, exp.UnixToTime) and not node.args.get("scale") and not node.args.get("format"):
        return call("datetime", node.this.copy(), exp.Literal.string("unixepoch"))  # TO_TIMESTAMP(seconds)
    return None


def _days_between(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, exp.Sub) and is_date_value(node.this) and is_date_value(node.expression):
        # date - date: days between them (SQLite would subtract the years its texts start with)
        days = exp.paren(exp.Sub(this=_day_number(node.this), expression=_day_number(node.expression)))
        whole = all(isinstance(side, exp.CurrentDate) or (isinstance(side, exp.Cast) and side.to.is_type(
            exp.DataType.Type.DATE)) for side in (unparen(node.this), unparen(node.expression)))
        return exp.cast(days, "INTEGER") if whole else days
    return None


def _days_later(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if (isinstance(node, (exp.Add, exp.Sub)) and is_date_value(node.this) and isinstance(node.expression, exp.Literal)
            and not node.expression.is_string):
        # date + n: n days later (SQLite would add n to the year its text starts with)
        return _shift(unparen(node.this) or node.this, node.expression, "day",
                      -1 if isinstance(node, exp.Sub) else 1) or node
    return None


def _extract_field(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, exp.Extract):
        return _whole_years(node) or _field(node.name, node.expression) or node
    return None


def _year_month_day(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, (exp.Year, exp.Month, exp.Day)):
        return _field(type(node).__name__, node.this) or node
    return None


def _date_part(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, exp.Anonymous) and node.name.lower() == "date_part" and len(node.expressions) == 2:
        unit = node.expressions[0]
        return (_field(unit.name, node.expressions[1]) or node) if isinstance(unit, exp.Literal) else node
    return None


def _interval_arithmetic(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval):
        interval = node.expression
        unit = interval.args.get("unit")
        sign = -1 if isinstance(node, exp.Sub) else 1
        return _shift(node.this, interval.this, unit.name if unit else "", sign) or node
    return None


def _date_add_sub(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, (exp.DateAdd, exp.DateSub)):
        amount, unit = node.expression, node.args.get("unit")
        if isinstance(amount, exp.Interval):
            amount, unit = amount.this, amount.args.get("unit")
        sign = -1 if isinstance(node, exp.DateSub) else 1
        return _shift(node.this, amount, unit.name if unit else "day", sign) or node
    return None


def _date_trunc(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, (exp.DateTrunc, exp.TimestampTrunc)):
        unit = node.args.get("unit")
        start = {"year": ["start of year"], "month": ["start of month"],
                 "week": ["weekday 0", "-6 day"]}.get(unit.name.lower() if unit else "")  # weeks start on Monday
        if start:
            return call("date", node.this.copy(), *map(exp.Literal.string, start))
        if unit is not None and unit.name.lower() == "quarter":  # back to January, April, July or October
            month = exp.cast(call("strftime", exp.Literal.string("%m"), node.this.copy()), "INTEGER")
            back = exp.Mod(this=exp.paren(exp.Sub(this=month, expression=exp.Literal.number(1))),
                           expression=exp.Literal.number(3))
            return call("date", node.this.copy(), exp.Literal.string("start of month"),
                         exp.DPipe(this=exp.paren(exp.Neg(this=exp.paren(back))), expression=exp.Literal.string(" month")))
        return call("date", node.this.copy()) if unit is not None and unit.name.lower() == "day" else node
    return None


def _cast_to_date(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.DATE):
        return call("date", node.this.copy())
    return None


def _cast_to_timestamp(node: exp.Expression, ctx: Context) -> exp.Expression | None:
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEMPORAL_TYPES):
        return call("datetime", node.this.copy())
    return None


#: The forms of the phase ``into_sqlite``, by name: each node goes to the first that takes it.
INTO_SQLITE: tuple[tuple[str, NodeFn], ...] = (
    ("ilike_as_like", _ilike_as_like),
    ("text_to_date", _text_to_date),
    ("within_group_percentile", _within_group_percentile),
    ("seconds_to_timestamp", _seconds_to_timestamp),
    ("days_between", _days_between),
    ("days_later", _days_later),
    ("extract_field", _extract_field),
    ("year_month_day", _year_month_day),
    ("date_part", _date_part),
    ("interval_arithmetic", _interval_arithmetic),
    ("date_add_sub", _date_add_sub),
    ("date_trunc", _date_trunc),
    ("cast_to_date", _cast_to_date),
    ("cast_to_timestamp", _cast_to_timestamp),
)


def sqlite_form(tree: exp.Expression, ctx: Context, fired: list[str]) -> exp.Expression:
    """``tree`` in SQLite's forms (:data:`INTO_SQLITE`, applied until nothing changes); the names of the forms
    that changed it are added to ``fired``."""
    return rewritten(tree, node_rules(INTO_SQLITE, ctx, fired))
