"""The grammar of time expressions in a question, written with pyparsing and searched for with ``scan_string``.

A question is scanned left to right; at each place the rules below are tried in order (the most specific first) and
the first that matches is kept, so "between Jan and Mar 2024" is one range, not two months. What a rule matched is a
:class:`Mention`: the phrase as the question writes it, its place, the rule's name (``form``) and what the rule read
(numbers, units, months, years, a bound's direction), with no date resolved yet: :mod:`sqlweave.temporal.periods`
turns a mention into exact bounds once today's date is known.

>>> [(m.phrase, m.form) for m in find_mentions("Sales in Q3 2023 and the last 3 months, on weekends")]
[('Q3 2023', 'quarter'), ('the last 3 months', 'relative'), ('weekends', 'weekday')]
>>> find_mentions("How many singers are older than 30?")
[]

Words are matched whole and without regard to case (pyparsing keywords): ``daily`` in ``sbDailyPrice`` or ``week``
in ``weekend`` is no match. A month name alone counts only after a word that leads to a time ("in March", "since
Jan"), so the verb "may" or "march" is never read as a month.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from typing import Any, Mapping

import re

import pyparsing as pp

#: Canonical units and the words for them (``fortnight`` is two weeks).
UNITS: dict[str, tuple[str, int]] = {
    "day": ("day", 1), "days": ("day", 1),
    "week": ("week", 1), "weeks": ("week", 1), "wk": ("week", 1), "wks": ("week", 1),
    "fortnight": ("week", 2), "fortnights": ("week", 2),
    "month": ("month", 1), "months": ("month", 1), "mo": ("month", 1), "mos": ("month", 1),
    "quarter": ("quarter", 1), "quarters": ("quarter", 1), "qtr": ("quarter", 1), "qtrs": ("quarter", 1),
    "year": ("year", 1), "years": ("year", 1), "yr": ("year", 1), "yrs": ("year", 1),
}

MONTHS: dict[str, int] = {}
for _number, _name in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                 "september", "october", "november", "december"), 1):
    MONTHS[_name] = _number
    MONTHS[_name[:3]] = _number
MONTHS["sept"] = 9

#: ISO day numbers (Monday 1 ... Sunday 7) of the day names, singular and plural.
DAY_NAMES: dict[str, int] = {}
for _number, _name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"), 1):
    DAY_NAMES[_name] = _number
    DAY_NAMES[_name + "s"] = _number

NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "eighteen": 18, "twenty": 20, "thirty": 30,
                "forty": 40, "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100}
ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}

#: Words after which a month name alone is read as a month ("since March", "in Jan", "between Jan and Mar").
_TOKEN = re.compile(r"[a-z0-9]+")

MONTH_LEADS = frozenset("in since during from until till through thru before after for of between and to by "
                        "early late mid end start beginning".split())


@dataclass(frozen=True)
class Mention:
    """A time expression found in a question: ``phrase`` at ``[start, end)`` of it, read by rule ``form``.

    ``values`` holds what the rule read, by name: ``amount`` (a number), ``unit`` (day, week, month, quarter,
    year), ``month``, ``year``, ``quarter``, ``day``, ``which`` (last, past, this, next...), ``bound`` (since,
    after, before, until), ``point`` / ``first`` / ``last`` (the mentions a bound or a range is made of), ...
    """

    phrase: str
    start: int
    end: int
    form: str
    values: Mapping[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def _words(*words: str) -> pp.ParserElement:
    """Any of ``words`` as whole words, any case; a word may be two (``"so far"``), with any space between."""
    parts: list[pp.ParserElement] = []
    for w in sorted(words, key=len, reverse=True):  # the longest first: "months" before "month"
        pieces = w.split()
        if len(pieces) == 1:
            parts.append(pp.CaselessKeyword(w))
        else:
            parts.append(pp.And([pp.CaselessKeyword(p) for p in pieces]).set_parse_action(lambda _t, w=w: w))
    return pp.MatchFirst(parts)


def _named(element: pp.ParserElement, name: str) -> pp.ParserElement:
    return element.set_results_name(name)


def _lookup(table: Mapping[str, Any]) -> pp.ParserElement:
    return _words(*table).set_parse_action(lambda t: table[str(t[0]).lower()])


def _grammar() -> pp.ParserElement:
    the = pp.Opt(pp.CaselessKeyword("the"))
    integer = pp.Word(pp.nums, max=3).set_parse_action(lambda t: int(t[0]))
    number = integer | _lookup(NUMBER_WORDS)
    a_number = number | _words("a", "an", "one").set_parse_action(lambda: 1)
    unit_word = _words(*UNITS)
    unit = unit_word.copy().set_parse_action(lambda t: UNITS[str(t[0]).lower()][0])

    def units(t: pp.ParseResults) -> None:  # a fortnight is two weeks
        word = str(t.get("unit_word", "")).lower()
        if word in UNITS:
            t["unit"], t["per_word"] = UNITS[word]

    amount_unit = (_named(a_number, "amount") + _named(unit_word, "unit_word")).add_parse_action(units)
    year = pp.Regex(r"(19|20)\d\d(?![\d:])").set_parse_action(lambda t: int(t[0]))
    month = _lookup(MONTHS) + pp.Opt(pp.Suppress("."))
    day_number = pp.Regex(r"(0?[1-9]|[12]\d|3[01])(st|nd|rd|th)?(?!\d)", pp.re.IGNORECASE).set_parse_action(
        lambda t: int(str(t[0]).rstrip("stndrhSTNDRH")))
    iso_date = pp.Regex(r"(19|20)\d\d[-/](0?[1-9]|1[0-2])[-/](0?[1-9]|[12]\d|3[01])(?![\d/-])").set_parse_action(
        _calendar_date)
    comma = pp.Opt(pp.Suppress(","))
    of_year = pp.Opt(pp.Suppress(_words("of", "in"))) + _named(year, "year")

    # --- points: a day, a month, a quarter, a year (the parts of ranges and bounds) -----------------------------
    date = (_named(iso_date, "iso")
            | _named(month, "month") + _named(day_number, "day") + comma + pp.Opt(_named(year, "year"))
            | _named(day_number, "day") + pp.Opt(pp.Suppress(pp.CaselessKeyword("of"))) + _named(month, "month")
            + comma + pp.Opt(_named(year, "year"))).add_parse_action(lambda t: _form(t, "date"))
    quarter_number = pp.Regex(r"[Qq]([1-4])(?![\w])").set_parse_action(lambda t: int(t[0][1]))
    quarter = (_named(quarter_number, "quarter") + pp.Opt(of_year)
               | _named(year, "year") + pp.Opt(pp.Suppress("-")) + _named(quarter_number, "quarter")
               | the + _named(_lookup(ORDINALS), "quarter") + pp.Suppress(_words("quarter", "qtr"))
               + pp.Opt(of_year)
               | pp.Suppress(_words("quarter", "qtr")) + _named(pp.Char("1234").set_parse_action(lambda t: int(t[0])),
                                                                "quarter") + pp.Opt(of_year)
               ).add_parse_action(lambda t: _form(t, "quarter"))
    month_year = (_named(month, "month") + pp.Opt(pp.Suppress(pp.CaselessKeyword("of"))) + comma
                  + _named(year, "year")).add_parse_action(lambda t: _form(t, "month"))
    month_alone = _named(month, "month").copy().add_parse_action(lambda t: _form(t, "month"))
    year_point = (pp.Opt(pp.Suppress(the + pp.CaselessKeyword("year"))) + _named(year, "year")).add_parse_action(
        lambda t: _form(t, "year"))
    point = date | quarter | month_year | month_alone | year_point

    # --- ranges: between X and Y, from X to Y (the last X's year is the first's when it has none) ---------------
    between = (pp.Suppress(_words("between")) + _named(pp.Group(point), "first")
               + pp.Suppress(_words("and", "to", "-")) + _named(pp.Group(point), "last"))
    from_to = (pp.Suppress(_words("from")) + _named(pp.Group(point), "first")
               + pp.Suppress(_words("to", "through", "thru", "until", "till", "-"))
               + _named(pp.Group(point), "last"))
    span = (between | from_to).add_parse_action(lambda t: _form(t, "range"))

    # --- bounds: since X, after X, before X, until X ----------------------------------------------------------
    bound_word = (_words("since", "from", "starting", "starting from", "beginning", "as of").set_parse_action(
                      lambda: "since")
                  | _words("after", "later than").set_parse_action(lambda: "after")
                  | _words("before", "earlier than", "prior to").set_parse_action(lambda: "before")
                  | _words("until", "till", "through", "up to", "up until", "by", "by the end of", "until the end of",
                           "till the end of", "up to the end of", "through the end of", "to the end of"
                           ).set_parse_action(
                      lambda: "until"))
    bound = (_named(bound_word, "bound") + _named(pp.Group(point), "point")).add_parse_action(
        lambda t: _form(t, "bound"))

    # --- within N units after / of / before (one date relative to another) -------------------------------------
    direction = _words("after", "of", "from", "following", "since").set_parse_action(lambda: "after") \
        | _words("before", "prior to", "preceding").set_parse_action(lambda: "before")
    within = (pp.Suppress(_words("within", "in less than", "less than")) + amount_unit
              + _named(direction, "direction")).add_parse_action(lambda t: _form(t, "within"))

    # --- relative periods -----------------------------------------------------------------------------------
    full = _words("full", "complete", "whole", "entire", "calendar")
    excluding = (_words("not including", "excluding", "except", "except for", "without", "other than")
                 + the + _words("current", "this", "present") + unit)
    last_word = _words("last", "previous", "prior", "preceding", "most recent", "past", "recent")
    relative = (the + _named(last_word, "which") + pp.Opt(_named(number, "count"))
                + pp.Opt(_named(full, "full")) + pp.Opt(pp.Suppress(_words("calendar", "iso")))
                + _named(unit_word, "unit_word") + pp.Opt(_named(excluding, "excluding"))
                ).add_parse_action(units).add_parse_action(lambda t: _form(t, "relative"))
    this = (_named(_words("so far this", "this", "current", "the current", "present", "the present"), "which")
            + pp.Opt(pp.Suppress(_words("calendar", "iso"))) + _named(unit, "unit")
            + pp.Opt(_named(_words("to date", "so far"), "to_date"))
            ).add_parse_action(lambda t: _form(t, "this"))
    to_date = (_named(_words("year to date", "year-to-date", "ytd", "month to date", "month-to-date", "mtd",
                             "quarter to date", "quarter-to-date", "qtd"), "which")
               ).add_parse_action(lambda t: _form(t, "to_date"))
    upcoming = (the + _named(_words("next", "coming", "upcoming"), "which") + pp.Opt(_named(number, "count"))
                + _named(unit_word, "unit_word")).add_parse_action(units).add_parse_action(lambda t: _form(t, "next"))
    ago = (amount_unit + pp.Suppress(_words("ago", "back", "earlier"))).add_parse_action(lambda t: _form(t, "ago"))
    day_word = _named(_words("the day before yesterday", "the day after tomorrow", "yesterday", "tomorrow",
                             "today", "tonight"), "day_word").add_parse_action(lambda t: _form(t, "day_word"))

    # --- recurring: days of the week, and per-period grouping ---------------------------------------------------
    weekday = _named(_words("weekend", "weekends", "weekday", "weekdays", "working day", "working days",
                            "business day", "business days", "work day", "work days", "workday", "workdays",
                            *DAY_NAMES), "days").add_parse_action(lambda t: _form(t, "weekday"))
    every = (pp.Suppress(_words("per", "by", "each", "every", "for each", "for every", "in each")) + the
             + _named(unit, "unit") + pp.Opt(_named(_words("of the week", "of week"), "of_week"))
             | _named(_words("daily", "weekly", "monthly", "quarterly", "yearly", "annually", "annual"), "adverb")
             ).add_parse_action(lambda t: _form(t, "per"))

    return (span | bound | within | relative | to_date | this | upcoming | ago | day_word | date | quarter
            | month_year | year_lead_point() | month_alone | weekday | every)


def year_lead_point() -> pp.ParserElement:
    """A year alone is a year only after a word that leads to one ("in 2023", "during 2021", "the year 2020"):
    a bare number such as 2000 may be a count."""
    lead = pp.Suppress(_words("in", "during", "of", "for", "year", "the year", "throughout", "within"))
    return (lead + _named(pp.Regex(r"(19|20)\d\d(?![\d:])").set_parse_action(lambda t: int(t[0])), "year")
            ).add_parse_action(lambda t: _form(t, "year"))


def _calendar_date(text: str, loc: int, t: pp.ParseResults) -> str:
    """An ISO date as written (``2023-04-01``, ``2023/4/1``), refused when no such day exists (2023-02-30)."""
    year, month, day = (int(p) for p in t[0].replace("/", "-").split("-"))
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        raise pp.ParseException(text, loc, "no such day") from None


def _form(t: pp.ParseResults, form: str) -> pp.ParseResults:
    t["form"] = form
    return t


@lru_cache(maxsize=1)
def grammar() -> pp.ParserElement:
    """The scanner, built once (building it takes a few milliseconds). It is tried only where a word begins."""
    return pp.WordStart(pp.alphanums) + _grammar()


_PLAIN = ("amount", "count", "per_word", "unit", "month", "year", "quarter", "day", "iso", "which", "bound",
          "direction", "full", "to_date", "day_word", "days", "adverb", "of_week")


def _values(t: pp.ParseResults, text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in _PLAIN:
        if key in t:
            value = t[key]
            if isinstance(value, pp.ParseResults):
                value = value.as_list()
                value = value[0] if len(value) == 1 else " ".join(map(str, value))
            out[key] = value.lower() if isinstance(value, str) else value
    if "excluding" in t:
        out["excluding"] = True
    for key in ("point", "first", "last"):
        if key in t:
            sub = t[key]
            out[key] = Mention("", 0, 0, str(sub.get("form", "")), _values(sub, text))
    return out


#: Words without one of which no rule can match: a question that has none is not scanned.
TRIGGERS = frozenset(UNITS) | frozenset(MONTHS) | frozenset(DAY_NAMES) | frozenset(
    "today tonight yesterday tomorrow weekend weekends weekday weekdays workday workdays daily weekly monthly "
    "quarterly yearly annually annual ytd mtd qtd q1 q2 q3 q4".split())


def _may_hold_time(question: str) -> bool:
    """Whether ``question`` has a word a time expression needs (a unit, a month, a day, a year or a date's digits):
    most questions have none, and the scan is then skipped."""
    for word in _TOKEN.findall(question.lower()):
        if word in TRIGGERS or (len(word) >= 4 and word[:4].isdigit() and word[:2] in ("19", "20")):
            return True
    return False


def find_mentions(question: str) -> list[Mention]:
    """The time expressions of ``question``, in order (see the module's text); ``[]`` when it has none."""
    found: list[Mention] = []
    if not _may_hold_time(question):
        return found
    for tokens, start, end in grammar().scan_string(question):
        form = str(tokens.get("form", ""))
        if form == "month" and "year" not in tokens and not _led_to(question, start):
            continue  # "may", "march" as words, not months
        found.append(Mention(question[start:end].strip(), start, end, form, _values(tokens, question)))
    return found


def _led_to(text: str, start: int) -> bool:
    before = text[:start].split()
    return bool(before) and before[-1].lower().strip(",;:(") in MONTH_LEADS
