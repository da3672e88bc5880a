"""Choose a chart for a query result from its shape alone: no model, no code from a model.

A result of one row and one numeric column is a single ``number``; a date or time column with a
numeric one is a ``line`` over time; a text (category) column with a numeric one is a ``bar`` chart
(at most :data:`MAX_BARS` rows); anything else gets no chart (``none``). Numbers named as identifiers
(``id``, ``customer_id``) and columns holding NaN or infinity are never the measure drawn. The page draws the chart
from the returned column names; nothing in the data is ever run.

>>> from sqlweave.db.connection import QueryResult
>>> choose_chart(QueryResult("", ("count",), ((60,),), False, 0.0))
Chart(kind='number', x=None, y='count')
>>> choose_chart(QueryResult("", ("month", "revenue"), (("2024-01", 10.5), ("2024-02", 12.0)), False, 0.0))
Chart(kind='line', x='month', y='revenue')
>>> choose_chart(QueryResult("", ("country", "n"), (("Canada", 9), ("France", 7)), False, 0.0))
Chart(kind='bar', x='country', y='n')
>>> choose_chart(QueryResult("", ("name",), (("Ana",), ("Ben",)), False, 0.0)).kind
'none'
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, Sequence

if TYPE_CHECKING:
    from .db.connection import QueryResult

ChartKind = Literal["number", "line", "bar", "none"]

#: More categories than this make a bar chart unreadable: no chart.
MAX_BARS = 50

#: ISO dates and date-times (2024-03-01, 2024-03-01T10:00, 2024-03-01 10:00:00), months (2024-03), years
#: with a quarter or week (2024-Q1, 2024-W05).
_DATE_TEXT = re.compile(
    r"^\d{4}-(?:\d{2}(?:-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?)?|Q[1-4]|W\d{2})$"
)
#: Words of a column name that say "time" even when the values are plain numbers (a ``year`` of 2024).
_TIME_WORDS = frozenset({"date", "day", "week", "month", "quarter", "year", "time", "timestamp", "period", "dt"})
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
#: Last words of a column name that make its numbers identifiers.
_ID_WORDS = frozenset({"id", "uuid", "pk"})


@dataclass(frozen=True)
class Chart:
    """Which chart to draw: ``kind``, the column on the x axis and the numeric column on the y axis."""

    kind: ChartKind = "none"
    x: str | None = None
    y: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


NO_CHART = Chart()


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)


def is_date_value(v: Any) -> bool:
    """A date or time, or text that spells one (``2024-03-01``, ``2024-03``, ``2024-Q1``)."""
    if isinstance(v, (dt.date, dt.datetime)):
        return True
    return isinstance(v, str) and bool(_DATE_TEXT.match(v.strip()))


def _whole(v: Any) -> bool:
    return _is_number(v) and math.isfinite(float(v)) and float(v) == int(v)


def _column(rows: Sequence[Sequence[Any]], i: int) -> list[Any]:
    return [r[i] for r in rows if r[i] is not None]


def _numeric(values: list[Any]) -> bool:
    """Numbers a chart can draw: no NaN or infinity."""
    return bool(values) and all(_is_number(v) and math.isfinite(v) for v in values)


def identifier_name(name: str) -> bool:
    """``id``, ``customer_id``, ``CustomerID``, ``order uuid``: a number that names a row, not one to draw.

    >>> [identifier_name(n) for n in ("id", "customer_id", "CustomerID", "paid", "idle_hours", "n_ids")]
    [True, True, True, False, False, False]
    """
    words = _WORD.findall(name)
    return bool(words) and words[-1].lower() in _ID_WORDS


def _time_like(name: str, values: list[Any]) -> bool:
    if values and all(is_date_value(v) for v in values):
        return True
    if time_like_name(name) and values:
        # A column named like time with values that are dates, or whole numbers (years, months, weeks).
        return all(is_date_value(v) or _whole(v) for v in values)
    return False


def time_like_name(name: str) -> bool:
    """``order_date``, ``OrderDate``, ``month``, ``signup year``: yes; ``candidate``, ``runtime_min``: no."""
    return any(w.lower() in _TIME_WORDS for w in _WORD.findall(name))


def _text(values: list[Any]) -> bool:
    return bool(values) and all(isinstance(v, str) for v in values)


def choose_chart(result: "QueryResult") -> Chart:
    """The chart that fits ``result``'s shape (see the module docstring); :data:`NO_CHART` when none does."""
    return chart_for(result.columns, result.rows)


def chart_for(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Chart:
    """:func:`choose_chart` on plain columns and rows.

    >>> chart_for(["year", "orders"], [(2023, 80), (2024, 80)])
    Chart(kind='line', x='year', y='orders')
    >>> chart_for(["a", "b"], []).kind
    'none'
    """
    columns = list(columns)
    if not columns or not rows or any(len(r) != len(columns) for r in rows):
        return NO_CHART
    values = [_column(rows, i) for i in range(len(columns))]
    if len(rows) == 1 and len(columns) == 1 and _numeric(values[0]):
        return Chart("number", None, columns[0])
    if len(rows) < 2:
        return NO_CHART
    time_cols = [i for i, name in enumerate(columns) if _time_like(name, values[i])]
    # Identifiers are numbers but not measures: a bar per product of its id says nothing.
    numeric_cols = [i for i in range(len(columns)) if _numeric(values[i]) and not identifier_name(columns[i])]
    if time_cols:
        x = time_cols[0]
        ys = [i for i in numeric_cols if i not in time_cols]
        if ys:
            return Chart("line", columns[x], columns[ys[0]])
    text_cols = [i for i in range(len(columns)) if _text(values[i]) and i not in time_cols]
    if text_cols and len(rows) <= MAX_BARS:
        ys = [i for i in numeric_cols if i not in time_cols]
        if ys:
            return Chart("bar", columns[text_cols[0]], columns[ys[0]])
    return NO_CHART


__all__ = ["Chart", "ChartKind", "MAX_BARS", "NO_CHART", "chart_for", "choose_chart", "identifier_name", "is_date_value",
           "time_like_name"]
