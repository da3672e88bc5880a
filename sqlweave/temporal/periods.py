"""Time expressions resolved against today's date: exact half-open bounds ``[start, end)``, days of the week, a time
between two dates, a period to group by.

:func:`resolve` turns each :class:`~sqlweave.temporal.grammar.Mention` into an :class:`Interpretation`, with calendar
arithmetic from python-dateutil (``relativedelta``: a month back from March 31 is February 28 or 29). The
conventions, all stated in the interpretation's ``meaning``:

- weeks are ISO weeks, Monday to Sunday; quarters are calendar quarters (Q1 is January to March);
- "last month", "the previous week", "last year" (last, previous, prior, preceding, without a number) are the whole
  calendar period before the current one; "the last 3 quarters" and "the past 7 days" (with a number, or "past")
  are a window that ends today: from the same day 3 quarters (7 days) back, up to now;
  "the last 3 full months" or "... not including the current month" are whole periods before the current one;
- "this month", "the current quarter" are the whole period that holds today; "so far this year", "year to date"
  end now;
- "2 years ago" is the calendar period that holds the day so long before today (the year 2024, asked in 2026);
- a month or a quarter without a year is the latest one that has begun ("since March", asked in February 2026, is
  since 2025-03-01); a range's last point lends its year to the first ("between Jan and Mar 2024");
- "since X" starts with X; "after X" starts when X is over; "before X" ends when X begins; "until X" ends when X does.

>>> from datetime import date
>>> from sqlweave.temporal.grammar import find_mentions
>>> [(i.kind, str(i.start), str(i.end)) for i in resolve(find_mentions("sales last month"), date(2026, 12, 1))]
[('period', '2026-11-01', '2026-12-01')]
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Iterable

from dateutil.relativedelta import relativedelta

from .grammar import DAY_NAMES, Mention

#: What an interpretation is: a span of dates (``period``: ``[start, end)``; ``since``: from ``start`` on, up to now;
#: ``until``: before ``end``), ``today`` (the current date itself), ``weekday`` (days of the week), ``within``
#: (one date at most ``amount`` units after or before another) or ``per`` (a period to group by).
KINDS = ("period", "since", "until", "today", "weekday", "within", "per")
UNITS = ("day", "week", "month", "quarter", "year")

_WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December")


@dataclass(frozen=True)
class Interpretation:
    """What one time expression of a question means, on a given day.

    ``phrase`` is the expression as the question writes it; ``kind`` one of :data:`KINDS`; ``meaning`` the
    reading in words ("November 2026"); ``start`` and ``end`` the half-open bounds of a span (``end`` is the first
    day after it; either is ``None`` for a span open on that side); ``unit`` and ``amount`` the unit and count of
    a ``within`` or ``per``; ``days`` the ISO days of the week (Monday 1 ... Sunday 7) of a ``weekday``;
    ``direction`` ``"after"`` or ``"before"`` for ``within``. :mod:`sqlweave.temporal.sql` writes it as SQL.
    """

    phrase: str
    kind: str
    meaning: str
    start: date | None = None
    end: date | None = None
    unit: str | None = None
    amount: int | None = None
    days: tuple[int, ...] = ()
    direction: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"phrase": self.phrase, "kind": self.kind, "meaning": self.meaning}
        for key in ("start", "end"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value.isoformat()
        for key in ("unit", "amount", "direction"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.days:
            out["days"] = list(self.days)
        return out


# --- calendar arithmetic ------------------------------------------------------------------------------------


def period_start(day: date, unit: str) -> date:
    """The first day of the ``unit`` (day, ISO week, month, quarter, year) that holds ``day``.

    >>> period_start(date(2026, 12, 3), "week"), period_start(date(2026, 8, 15), "quarter")
    (datetime.date(2026, 11, 30), datetime.date(2026, 7, 1))
    """
    if unit == "day":
        return day
    if unit == "week":
        return day - timedelta(days=day.weekday())
    if unit == "month":
        return day.replace(day=1)
    if unit == "quarter":
        return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)
    if unit == "year":
        return date(day.year, 1, 1)
    raise ValueError(f"unknown unit {unit!r}")


def shifted(day: date, unit: str, n: int) -> date:
    """``day`` moved ``n`` units (negative: back); months and years end on the month's last day when the day is
    past it (2024-03-31 less a month is 2024-02-29)."""
    step = {"day": relativedelta(days=n), "week": relativedelta(weeks=n), "month": relativedelta(months=n),
            "quarter": relativedelta(months=3 * n), "year": relativedelta(years=n)}[unit]
    result: date = day + step
    return result


def _name(start: date, unit: str) -> str:
    """The period of ``unit`` that begins on ``start``, in words."""
    if unit == "day":
        return f"{_WEEKDAY_NAMES[start.weekday()]} {start.isoformat()}"
    if unit == "week":
        end = start + timedelta(days=6)
        return f"the ISO week {start.isocalendar()[0]}-W{start.isocalendar()[1]:02d}, Monday {start.isoformat()} " \
               f"to Sunday {end.isoformat()}"
    if unit == "month":
        return f"{_MONTH_NAMES[start.month - 1]} {start.year}"
    if unit == "quarter":
        return f"Q{(start.month - 1) // 3 + 1} {start.year} ({_MONTH_NAMES[start.month - 1][:3]} to " \
               f"{_MONTH_NAMES[start.month + 1][:3]} {start.year})"
    return f"the year {start.year}"


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" + ("" if n == 1 else "s")


# --- points: a day, a month, a quarter, a year --------------------------------------------------------------


@dataclass(frozen=True)
class _Point:
    start: date
    unit: str

    @property
    def end(self) -> date:
        return shifted(self.start, self.unit, 1)


def _point(m: Mention, today: date, year: int | None = None) -> _Point | None:
    """The period a point names (``year`` lends a year to a point written without one), or ``None``."""
    v = m.values
    year = v.get("year", year)
    if m.form == "date":
        if "iso" in v:
            return _Point(date.fromisoformat(v["iso"]), "day")
        month, day = v.get("month"), v.get("day")
        if month is None or day is None:
            return None
        try:
            if year is None:
                found = date(today.year, month, day)
                return _Point(found if found <= today else date(today.year - 1, month, day), "day")
            return _Point(date(year, month, day), "day")
        except ValueError:
            return None  # February 30th
    if m.form == "month" and "month" in v:
        month = v["month"]
        if year is None:
            year = today.year if month <= today.month else today.year - 1
        return _Point(date(year, month, 1), "month")
    if m.form == "quarter" and "quarter" in v:
        first = 3 * (v["quarter"] - 1) + 1
        if year is None:
            year = today.year if first <= today.month else today.year - 1
        return _Point(date(year, first, 1), "quarter")
    if m.form == "year" and year is not None:
        return _Point(date(year, 1, 1), "year")
    return None


# --- resolving mentions ---------------------------------------------------------------------------------------


def resolve(mentions: Iterable[Mention], today: date) -> list[Interpretation]:
    """The interpretations of ``mentions`` on ``today`` (those that name no real date, such as "February 30",
    are left out); each phrase once."""
    out: list[Interpretation] = []
    seen: set[tuple[str, str]] = set()
    for m in mentions:
        found = _resolve(m, today)
        if found is not None and (found.phrase.lower(), found.kind) not in seen:
            seen.add((found.phrase.lower(), found.kind))
            out.append(found)
    return out


def _resolve(m: Mention, today: date) -> Interpretation | None:
    v = m.values
    if m.form in ("date", "month", "quarter", "year"):
        p = _point(m, today)
        return None if p is None else Interpretation(m.phrase, "period", _name(p.start, p.unit), p.start, p.end)
    if m.form == "range":
        return _range(m, today)
    if m.form == "bound":
        return _bound(m, today)
    if m.form == "relative":
        return _relative(m, today)
    if m.form == "this":
        unit = v["unit"]
        start = period_start(today, unit)
        if "so far" in str(v.get("which", "")) or v.get("to_date"):
            return Interpretation(m.phrase, "since", f"since the start of this {unit} ({start.isoformat()}), up to "
                                  f"now", start)
        return Interpretation(m.phrase, "period", _name(start, unit), start, shifted(start, unit, 1))
    if m.form == "to_date":
        unit = str(v.get("which", "year")).split()[0].split("-")[0]
        unit = {"ytd": "year", "mtd": "month", "qtd": "quarter"}.get(unit, unit)
        start = period_start(today, unit)
        return Interpretation(m.phrase, "since", f"since the start of this {unit} ({start.isoformat()}), up to now",
                              start)
    if m.form == "next":
        unit, count = v["unit"], v.get("count")
        n = (count or 1) * v.get("per_word", 1)
        if count is None and v.get("per_word", 1) == 1:
            start = shifted(period_start(today, unit), unit, 1)
            return Interpretation(m.phrase, "period", f"next {unit}: {_name(start, unit)}", start,
                                  shifted(start, unit, 1))
        end = shifted(today, unit, n) + timedelta(days=1)
        return Interpretation(m.phrase, "period", f"from today to {_plural(n, unit)} from now", today, end)
    if m.form == "ago":
        unit, n = v["unit"], v.get("amount", 1) * v.get("per_word", 1)
        start = period_start(shifted(today, unit, -n), unit)
        return Interpretation(m.phrase, "period", _name(start, unit), start, shifted(start, unit, 1))
    if m.form == "day_word":
        word = str(v.get("day_word", ""))
        if word in ("today", "tonight"):
            return Interpretation(m.phrase, "today", f"today, {_name(today, 'day')}", today, today + timedelta(days=1))
        offset = {"yesterday": -1, "tomorrow": 1, "the day before yesterday": -2, "the day after tomorrow": 2}[word]
        day = today + timedelta(days=offset)
        return Interpretation(m.phrase, "period", _name(day, "day"), day, day + timedelta(days=1))
    if m.form == "weekday":
        return _weekday(m)
    if m.form == "within":
        unit, n = v["unit"], v.get("amount", 1) * v.get("per_word", 1)
        direction = str(v.get("direction", "after"))
        return Interpretation(m.phrase, "within", f"at most {_plural(n, unit)} {direction} the other date",
                              unit=unit, amount=n, direction=direction)
    if m.form == "per":
        if v.get("of_week"):
            return Interpretation(m.phrase, "per", "per day of the week", unit="weekday")
        unit = v.get("unit") or {"daily": "day", "weekly": "week", "monthly": "month", "quarterly": "quarter",
                                 "yearly": "year", "annually": "year", "annual": "year"}[str(v.get("adverb"))]
        what = {"week": "ISO week (from its Monday)", "quarter": "quarter (from its first day)",
                "month": "calendar month"}.get(unit, unit)
        return Interpretation(m.phrase, "per", f"per {what}", unit=unit)
    return None


def _range(m: Mention, today: date) -> Interpretation | None:
    first, last = m.get("first"), m.get("last")
    if not isinstance(first, Mention) or not isinstance(last, Mention):
        return None
    p2 = _point(last, today)
    if p2 is None:
        return None
    p1 = _point(first, today, year=p2.start.year if "year" not in first.values else None)
    if p1 is None:
        return None
    if p1.start > p2.start and "year" not in first.values:  # "between Nov and Feb 2024": November 2023
        p1 = _point(first, today, year=p2.start.year - 1)
        if p1 is None:
            return None
    if p1.start >= p2.end:
        return None
    return Interpretation(m.phrase, "period", f"from {_name(p1.start, p1.unit)} to {_name(p2.start, p2.unit)}, both "
                          "included", p1.start, p2.end)


def _bound(m: Mention, today: date) -> Interpretation | None:
    point, bound = m.get("point"), str(m.get("bound"))
    p = _point(point, today) if isinstance(point, Mention) else None
    if p is None:
        return None
    named = _name(p.start, p.unit)
    if bound == "since":
        return Interpretation(m.phrase, "since", f"from the start of {named} on", p.start)
    if bound == "after":
        return Interpretation(m.phrase, "since", f"after {named} ({p.end.isoformat()} on)", p.end)
    if bound == "before":
        return Interpretation(m.phrase, "until", f"before {named} (up to {p.start.isoformat()}, excluded)",
                              end=p.start)
    return Interpretation(m.phrase, "until", f"up to the end of {named}", end=p.end)


def _relative(m: Mention, today: date) -> Interpretation | None:
    v = m.values
    unit, count, per_word = v["unit"], v.get("count"), v.get("per_word", 1)
    which = str(v.get("which", "last"))
    current = period_start(today, unit)
    whole = bool(v.get("full") or v.get("excluding"))
    if count is None and per_word == 1 and which != "past" or (whole and count is None and per_word == 1):
        start = shifted(current, unit, -1)
        return Interpretation(m.phrase, "period", f"the {unit} before this one: {_name(start, unit)}", start, current)
    n = (count or 1) * per_word
    if whole:
        start = shifted(current, unit, -n)
        return Interpretation(m.phrase, "period", f"the {_plural(n, 'whole ' + unit)} before this one, "
                              f"{start.isoformat()} to {(current - timedelta(days=1)).isoformat()}", start, current)
    start = shifted(today, unit, -n)
    return Interpretation(m.phrase, "since", f"the {_plural(n, unit)} up to today, from {start.isoformat()} on",
                          start)


def _weekday(m: Mention) -> Interpretation:
    word = str(m.get("days", "")).lower()
    if word.startswith("weekend"):
        return Interpretation(m.phrase, "weekday", "Saturday or Sunday", days=(6, 7))
    if word in DAY_NAMES:
        n = DAY_NAMES[word]
        return Interpretation(m.phrase, "weekday", _WEEKDAY_NAMES[n - 1], days=(n,))
    return Interpretation(m.phrase, "weekday", "Monday to Friday", days=(1, 2, 3, 4, 5))
