"""Properties of the interpretation that hold on every day: spans are never empty, "this ..." holds today, "last
..." ends where the current period begins, and no text at all makes the recognition fail."""

from __future__ import annotations

from datetime import date, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from sqlweave.temporal import DIALECTS, condition, evidence_text, interpret, period_start

UNITS = ("day", "week", "month", "quarter", "year")
days = st.dates(min_value=date(1990, 1, 1), max_value=date(2090, 12, 31))
settings.register_profile("temporal", deadline=None, max_examples=150)
settings.load_profile("temporal")


def _only(question: str, today: date):
    found = interpret(question, today)
    assert len(found) == 1, (question, found)
    return found[0]


@given(days, st.sampled_from(UNITS[1:]), st.sampled_from(("this", "the current", "current")))
def test_this_period_holds_today(today: date, unit: str, this: str) -> None:
    i = _only(f"sales {this} {unit}", today)
    assert i.kind == "period" and i.start is not None and i.end is not None
    assert i.start <= today < i.end
    assert i.start == period_start(today, unit)


@given(days, st.sampled_from(UNITS[1:]), st.sampled_from(("last", "previous", "the previous", "prior")))
def test_last_period_is_the_whole_period_before_this_one(today: date, unit: str, last: str) -> None:
    i = _only(f"sales {last} {unit}", today)
    assert i.kind == "period" and i.start is not None and i.end is not None
    assert i.start < i.end == period_start(today, unit) <= today
    assert period_start(i.start, unit) == i.start and period_start(i.end - timedelta(days=1), unit) == i.start


@given(days, st.integers(1, 60), st.sampled_from(UNITS), st.sampled_from(("the past", "the last", "in the past")))
def test_a_window_of_n_units_ends_today(today: date, n: int, unit: str, past: str) -> None:
    i = _only(f"orders in {past} {n} {unit}s", today)
    assert i.kind == "since" and i.start is not None and i.start < today and i.end is None


@given(days, st.integers(1, 40), st.sampled_from(UNITS))
def test_n_units_ago_is_one_whole_period_before_today(today: date, n: int, unit: str) -> None:
    i = _only(f"customers who joined {n} {unit}s ago", today)
    assert i.start is not None and i.end is not None
    assert i.start < i.end <= period_start(today, unit)


@given(days, st.integers(1, 4), st.integers(1900, 2099))
def test_a_quarter_is_three_months(today: date, q: int, year: int) -> None:
    i = _only(f"revenue in Q{q} {year}", today)
    assert i.start == date(year, 3 * q - 2, 1)
    assert i.end is not None and (i.end.year * 12 + i.end.month) - (i.start.year * 12 + i.start.month) == 3


@given(days, st.integers(1, 12), st.integers(1, 12), st.integers(1990, 2090))
def test_a_range_of_months_holds_both_ends(today: date, a: int, b: int, year: int) -> None:
    names = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    i = _only(f"bookings between {names[a - 1]} and {names[b - 1]} {year}", today)
    assert i.start is not None and i.end is not None and i.start < i.end
    assert i.start.month == a and i.end == (date(year, b, 1) + timedelta(days=32)).replace(day=1)


@given(days, st.sampled_from(("January", "March", "May", "October", "Dec")), st.sampled_from(("since", "in")))
def test_a_month_without_a_year_is_the_latest_that_began(today: date, month: str, lead: str) -> None:
    i = _only(f"orders {lead} {month}", today)
    assert i.start is not None and i.start <= today
    assert i.start > today - timedelta(days=366)


@given(st.text(max_size=300), days)
def test_any_text_is_read_without_failing(text: str, today: date) -> None:
    for i in interpret(text, today):
        assert i.phrase
        for dialect in DIALECTS:
            assert condition(i, dialect)
        if i.start is not None and i.end is not None:
            assert i.start < i.end
    evidence_text(interpret(text, today), today, "postgres")


@given(st.lists(st.sampled_from(("last", "month", "Q3", "2023", "between", "and", "weekends", "within", "10", "days",
                                 "after", "since", "March", "ago", "2", "years", "the", "previous", "ISO", "week",
                                 "this", "per", "quarter", "from", "to", "before", "yesterday", "Feb", "30,")),
                max_size=14), days)
def test_time_words_in_any_order_are_read_without_failing(words: list[str], today: date) -> None:
    for i in interpret(" ".join(words), today):
        if i.start is not None and i.end is not None:
            assert i.start < i.end


def test_questions_in_other_languages_are_read_without_failing() -> None:
    today = date(2026, 12, 1)
    for question in ("¿Cuántos pedidos hubo el mes pasado?", "Combien de commandes le mois dernier ?",
                     "Wie viele Bestellungen gab es im letzten Monat?", "上个月有多少订单？", "先月の注文は何件ですか",
                     "Сколько заказов было в прошлом месяце?", "كم عدد الطلبات في الشهر الماضي؟"):
        assert interpret(question, today) == []
    assert [i.phrase for i in interpret("Combien de commandes en 2023 ?", today)] == []  # "en" leads to no year
    assert [i.start for i in interpret("Pedidos del 2023-04-01", today)] == [date(2023, 4, 1)]


def test_words_that_are_not_times_are_left_alone() -> None:
    today = date(2026, 12, 1)
    for question in ("List the last name and the year of registration", "You may march on", "Which products cost "
                     "more than 2000?", "daily_price of sbDailyPrice", "Which weekend_flag rows?", "What is in Q3?"):
        found = [i.phrase for i in interpret(question, today)]
        assert found in ([], ["Q3"]), (question, found)
    assert interpret("What is in Q3?", today)[0].start == date(2026, 7, 1)
