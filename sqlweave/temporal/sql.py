"""Interpretations written as SQL for each engine sqlweave reads (SQLite, PostgreSQL, DuckDB, MySQL), and the
evidence lines a generation prompt shows.

A span is written with its exact bounds as date literals, ``d >= '2026-11-01' AND d < '2026-12-01'``: the same text
works on every engine, for a date, a timestamp (a row at 23:59 on the last day is in) and SQLite's ISO text.
What recurs is written with the engine's own functions: a weekend is ``strftime('%w', d) IN ('0', '6')`` on SQLite,
``EXTRACT(ISODOW FROM d) IN (6, 7)`` on PostgreSQL and DuckDB, ``DAYOFWEEK(d) IN (1, 7)`` on MySQL; a row's ISO week
begins on ``date(d, 'weekday 0', '-6 days')`` on SQLite, ``DATE_TRUNC('week', d)`` on PostgreSQL and DuckDB,
``DATE_SUB(DATE(d), INTERVAL WEEKDAY(d) DAY)`` on MySQL; ten days after a date is ``date(a, '+10 days')``,
``a + INTERVAL '10 days'``, ``a + INTERVAL 10 DAY``.

>>> from datetime import date
>>> weekend = Interpretation("on weekends", "weekday", "Saturday or Sunday", days=(6, 7))
>>> [condition(weekend, d) for d in ("sqlite", "postgres", "mysql")]
["strftime('%w', d) IN ('0', '6')", 'EXTRACT(ISODOW FROM d) IN (6, 7)', 'DAYOFWEEK(d) IN (1, 7)']
>>> condition(Interpretation("last month", "period", "November 2026", date(2026, 11, 1), date(2026, 12, 1)), "sqlite")
"d >= '2026-11-01' AND d < '2026-12-01'"
"""

from __future__ import annotations

from datetime import date
from typing import Sequence

from .periods import Interpretation

DIALECTS = ("sqlite", "postgres", "duckdb", "mysql")

#: The engine's current date (what :func:`today_query` reads, and what a query may use for "today").
CURRENT_DATE = {"sqlite": "DATE('now')", "postgres": "CURRENT_DATE", "duckdb": "CURRENT_DATE",
                "mysql": "CURDATE()"}


def _dialect(dialect: str) -> str:
    """One of :data:`DIALECTS`; another engine is written as PostgreSQL writes it (standard SQL)."""
    return dialect if dialect in DIALECTS else "postgres"


def today_query(dialect: str) -> str:
    """The query that reads the database's own date.

    >>> today_query("sqlite"), today_query("mysql")
    ("SELECT DATE('now')", 'SELECT CURDATE()')
    """
    return f"SELECT {CURRENT_DATE[_dialect(dialect)]}"


def _literal(day: date) -> str:
    return f"'{day.isoformat()}'"


def _day_of_week(column: str, days: Sequence[int], dialect: str) -> str:
    """``column`` falls on one of ``days`` (ISO: Monday 1 ... Sunday 7)."""
    if dialect == "sqlite":  # %w: Sunday 0 ... Saturday 6
        values = [f"'{d % 7}'" for d in sorted(days, key=lambda d: d % 7)]
        head = f"strftime('%w', {column})"
    elif dialect == "mysql":  # DAYOFWEEK: Sunday 1 ... Saturday 7
        values = [str(d % 7 + 1) for d in sorted(days, key=lambda d: d % 7)]
        head = f"DAYOFWEEK({column})"
    else:
        values = [str(d) for d in sorted(days)]
        head = f"EXTRACT(ISODOW FROM {column})"
    return f"{head} = {values[0]}" if len(values) == 1 else f"{head} IN ({', '.join(values)})"


def truncated(column: str, unit: str, dialect: str) -> str:
    """The first day of the ``unit`` (day, ISO week, month, quarter, year) that holds ``column``; for ``weekday``,
    the ISO day of the week (Monday 1 ... Sunday 7; SQLite: Sunday 0 ... Saturday 6).

    >>> truncated("d", "quarter", "postgres")
    "DATE_TRUNC('quarter', d)"
    >>> truncated("d", "month", "mysql")
    "DATE_FORMAT(d, '%Y-%m-01')"
    """
    dialect = _dialect(dialect)
    if unit == "weekday":
        return {"sqlite": f"strftime('%w', {column})", "mysql": f"WEEKDAY({column}) + 1"}.get(
            dialect, f"EXTRACT(ISODOW FROM {column})")
    if dialect in ("postgres", "duckdb"):
        return f"CAST({column} AS DATE)" if unit == "day" else f"DATE_TRUNC('{unit}', {column})"
    if dialect == "sqlite":
        return {"day": f"date({column})", "week": f"date({column}, 'weekday 0', '-6 days')",
                "month": f"date({column}, 'start of month')", "year": f"date({column}, 'start of year')",
                "quarter": f"date({column}, 'start of month', '-' || ((CAST(strftime('%m', {column}) AS INTEGER) - 1)"
                           f" % 3) || ' months')"}[unit]
    return {"day": f"DATE({column})", "week": f"DATE_SUB(DATE({column}), INTERVAL WEEKDAY({column}) DAY)",
            "month": f"DATE_FORMAT({column}, '%Y-%m-01')", "year": f"MAKEDATE(YEAR({column}), 1)",
            "quarter": f"MAKEDATE(YEAR({column}), 1) + INTERVAL (QUARTER({column}) - 1) QUARTER"}[unit]


def _plus(column: str, amount: int, unit: str, dialect: str, sign: str = "+") -> str:
    """``column`` moved ``amount`` units (``sign`` ``-``: back)."""
    if unit == "week":
        amount, unit = 7 * amount, "day"
    if unit == "quarter":
        amount, unit = 3 * amount, "month"
    if dialect == "sqlite":
        return f"date({column}, '{sign}{amount} {unit}s')"
    if dialect == "postgres":
        return f"{column} {sign} INTERVAL '{amount} {unit}{'s' if amount != 1 else ''}'"
    return f"{column} {sign} INTERVAL {amount} {unit.upper()}"


def condition(i: Interpretation, dialect: str, column: str = "d", other: str = "a") -> str:
    """``i`` as SQL on ``dialect``: a condition on the date ``column`` (for ``within``, on ``column`` against the
    earlier or later date ``other``), the current date (``today``), or the expression to group by (``per``)."""
    dialect = _dialect(dialect)
    if i.kind == "period" and i.start is not None and i.end is not None:
        return f"{column} >= {_literal(i.start)} AND {column} < {_literal(i.end)}"
    if i.kind == "since" and i.start is not None:
        return f"{column} >= {_literal(i.start)}"
    if i.kind == "until" and i.end is not None:
        return f"{column} < {_literal(i.end)}"
    if i.kind == "today":
        return CURRENT_DATE[dialect]
    if i.kind == "weekday":
        return _day_of_week(column, i.days, dialect)
    if i.kind == "within" and i.amount is not None and i.unit is not None:
        if dialect == "sqlite":
            low, high = (f"date({other})", _plus(other, i.amount, i.unit, dialect)) if i.direction != "before" else \
                (_plus(other, i.amount, i.unit, dialect, "-"), f"date({other})")
            return f"date({column}) BETWEEN {low} AND {high}"
        if i.direction == "before":
            return f"{column} BETWEEN {_plus(other, i.amount, i.unit, dialect, '-')} AND {other}"
        return f"{column} BETWEEN {other} AND {_plus(other, i.amount, i.unit, dialect)}"
    if i.kind == "per" and i.unit is not None:
        return truncated(column, i.unit, dialect)
    raise ValueError(f"cannot write {i.kind!r} as SQL")


def evidence_line(i: Interpretation, dialect: str, column: str = "d", other: str = "a") -> str:
    """One line of evidence: the phrase, what it means, and the SQL for it on the date ``column`` (for ``within``,
    against the other date ``other``).

    >>> from datetime import date
    >>> print(evidence_line(Interpretation("last month", "period", "November 2026", date(2026, 11, 1),
    ...                                    date(2026, 12, 1)), "postgres"))
    - "last month" is November 2026: d >= '2026-11-01' AND d < '2026-12-01'
    """
    sql = condition(i, dialect, column, other)
    if i.kind == "within":
        return f'- "{i.phrase}" means a date {column} {i.meaning} {other}: {sql}'
    if i.kind == "per":
        return f'- "{i.phrase}" means one row {i.meaning}: GROUP BY {sql}'
    if i.kind == "weekday":
        return f'- "{i.phrase}" means on {i.meaning}: {sql}'
    if i.kind == "period" and i.start is not None and i.end == date(i.start.year + 1, 1, 1) \
            and (i.start.month, i.start.day) == (1, 1):
        return f'- "{i.phrase}" is {i.meaning}: {sql} (on a column of year numbers: = {i.start.year})'
    return f'- "{i.phrase}" is {i.meaning}: {sql}'


def evidence_text(interpretations: Sequence[Interpretation], today: date, dialect: str, column: str = "d",
                  columns: Sequence[tuple[str, str] | None] | None = None) -> str:
    """The evidence a prompt shows for the question's time expressions: today's date, then one line each
    (``""`` for none). ``columns`` may name, for each interpretation, the date column it is about and the other
    date of a ``within`` (``None``: ``column`` and ``a``).

    >>> print(evidence_text([Interpretation("on weekends", "weekday", "Saturday or Sunday", days=(6, 7))],
    ...                     date(2026, 12, 1), "mysql"))
    Today is Tuesday 2026-12-01 (CURDATE()). For a date column d:
    - "on weekends" means on Saturday or Sunday: DAYOFWEEK(d) IN (1, 7)
    >>> print(evidence_text([Interpretation("on weekends", "weekday", "Saturday or Sunday", days=(6, 7))],
    ...                     date(2026, 12, 1), "sqlite", columns=[("paid_on", "a")]))
    Today is Tuesday 2026-12-01 (DATE('now')).
    - "on weekends" means on Saturday or Sunday: strftime('%w', paid_on) IN ('0', '6')
    """
    if not interpretations:
        return ""
    named = list(columns) if columns is not None else [None] * len(interpretations)
    pairs = [n if n is not None else (column, "a") for n in named]
    head = f"Today is {today.strftime('%A')} {today.isoformat()} ({CURRENT_DATE[_dialect(dialect)]})."
    uses_d = any(n is None and i.kind not in ("today",) for n, i in zip(named, interpretations))
    lines = [f"{head} For a date column {column}:" if uses_d else head]
    lines += [evidence_line(i, dialect, c, o) for i, (c, o) in zip(interpretations, pairs)]
    return "\n".join(lines)
