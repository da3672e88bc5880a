"""Runs the SQL of the golden cases on a real engine and checks it picks exactly the days the interpretation means.

Every test of an engine goes through :func:`check_golden_sql` with a function that runs one query and returns its
rows; the days are given to the query as literals of the engine, as dates and as timestamps late in the day."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any, Callable

import yaml

from sqlweave.temporal import Interpretation, condition, interpret, period_start, today_query

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "temporal"
Run = Callable[[str], list[tuple[Any, ...]]]


def golden(dialect: str) -> list[tuple[str, date]]:
    """The questions and days of the golden cases of every engine (each is checked on every engine)."""
    out = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]:
            out.append((case["question"], date.fromisoformat(case["today"])))
    return out


def _literal(day: date, dialect: str, late: bool = False) -> str:
    text = f"{day.isoformat()} 23:59:00" if late else day.isoformat()
    if dialect == "sqlite":
        return f"'{text}'"
    return f"{'TIMESTAMP' if late else 'DATE'} '{text}'"


def _table(rows: list[tuple[date, ...]], dialect: str, late: bool, names: tuple[str, ...]) -> str:
    selects = [" , ".join(f"{_literal(v, dialect, late)} AS {n}" for v, n in zip(row, names)) for row in rows]
    return "(" + " UNION ALL ".join(f"SELECT {s}" for s in selects) + ") t"


def _day(value: Any) -> date:
    if hasattr(value, "date") and callable(value.date):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])


def check(i: Interpretation, today: date, dialect: str, run: Run) -> None:
    """``i``'s SQL on the engine picks the days ``i`` means (around its bounds, or over weeks for what recurs)."""
    sql = condition(i, dialect)
    if i.kind in ("period", "since", "until"):
        edges = [x for x in (i.start, i.end) if x is not None]
        days = sorted({e + timedelta(days=k) for e in edges for k in (-2, -1, 0, 1)} | {today})
        expected = [d for d in days if (i.start is None or d >= i.start) and (i.end is None or d < i.end)]
        for late in (False, True):
            rows = run(f"SELECT d FROM {_table([(d,) for d in days], dialect, late, ('d',))} WHERE {sql} ORDER BY d")
            assert [_day(r[0]) for r in rows] == expected, (i, dialect, late, sql)
    elif i.kind == "weekday":
        days = [today + timedelta(days=k) for k in range(14)]
        rows = run(f"SELECT d FROM {_table([(d,) for d in days], dialect, False, ('d',))} WHERE {sql} ORDER BY d")
        assert [_day(r[0]) for r in rows] == [d for d in days if d.isoweekday() in i.days], (i, dialect, sql)
    elif i.kind == "within":
        assert i.amount is not None and i.unit in ("day", "week")
        span = i.amount * (7 if i.unit == "week" else 1)
        sign = -1 if i.direction == "before" else 1
        pairs = [(today + timedelta(days=sign * k), today) for k in range(-2, span + 3)]
        rows = run(f"SELECT d FROM {_table(pairs, dialect, False, ('d', 'a'))} WHERE {sql} ORDER BY d")
        expected = sorted(d for d, a in pairs if 0 <= sign * (d - a).days <= span)
        assert [_day(r[0]) for r in rows] == expected, (i, dialect, sql)
    elif i.kind == "per" and i.unit != "weekday":
        assert i.unit is not None
        days = [today + timedelta(days=k) for k in range(-100, 100, 9)]
        rows = run(f"SELECT d, {sql} AS p FROM {_table([(d,) for d in days], dialect, True, ('d',))} ORDER BY 1")
        assert [_day(r[1]) for r in rows] == [period_start(d, i.unit) for d in days], (i, dialect, sql)
    elif i.kind == "today":
        assert _day(run(today_query(dialect))[0][0]) == _day(run(f"SELECT {sql}")[0][0])


def check_golden_sql(dialect: str, run: Run) -> int:
    """Check every golden interpretation's SQL on ``dialect`` with ``run``; the number checked."""
    n = 0
    for question, today in golden(dialect):
        for i in interpret(question, today):
            check(i, today, dialect, run)
            n += 1
    return n
