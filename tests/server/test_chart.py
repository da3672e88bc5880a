"""Charts are chosen from a result's shape alone."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from sqlweave.chart import MAX_BARS, NO_CHART, Chart, chart_for, choose_chart, is_date_value, time_like_name
from sqlweave.db.connection import QueryResult


def result(columns, rows):
    return QueryResult("SELECT ...", tuple(columns), tuple(tuple(r) for r in rows), False, 0.0)


def test_one_number_is_a_number():
    assert choose_chart(result(["COUNT(*)"], [(60,)])) == Chart("number", None, "COUNT(*)")
    assert choose_chart(result(["avg"], [(Decimal("3.5"),)])).kind == "number"
    assert choose_chart(result(["avg"], [(2.5,)])).kind == "number"


def test_one_text_cell_is_no_chart():
    assert choose_chart(result(["name"], [("Ana",)])) == NO_CHART
    assert choose_chart(result(["flag"], [(True,)])) == NO_CHART  # a boolean is not a quantity


def test_month_strings_make_a_line():
    rows = [("2024-01", 3), ("2024-02", 5), ("2024-03", 4)]
    assert choose_chart(result(["m", "orders"], rows)) == Chart("line", "m", "orders")


def test_iso_dates_and_datetimes_make_a_line():
    assert chart_for(["day", "n"], [("2024-01-01", 1), ("2024-01-02", 2)]).kind == "line"
    assert chart_for(["t", "n"], [("2024-01-01T10:00:00", 1), ("2024-01-01 11:00", 2)]).kind == "line"
    assert chart_for(["d", "n"], [(dt.date(2024, 1, 1), 1), (dt.date(2024, 1, 2), 2)]).kind == "line"


def test_a_column_named_year_with_whole_numbers_is_time():
    assert chart_for(["year", "revenue"], [(2022, 10.5), (2023, 12.0)]) == Chart("line", "year", "revenue")
    assert chart_for(["signup_month", "n"], [(1, 4), (2, 7)]).kind == "line"
    assert chart_for(["OrderYear", "n"], [(2022, 4), (2023, 7)]).kind == "line"


def test_time_names_are_words_not_substrings():
    assert time_like_name("order_date") and time_like_name("OrderDate") and time_like_name("month")
    assert not time_like_name("update_count")
    assert not time_like_name("candidate")
    assert not time_like_name("runtime")


def test_category_and_number_make_a_bar():
    rows = [("Canada", 9), ("France", 7), ("USA", 12)]
    assert choose_chart(result(["country", "customers"], rows)) == Chart("bar", "country", "customers")


def test_bar_picks_the_first_text_and_first_numeric_column_that_is_a_measure():
    rows = [(1, "Books", 40.0, 3), (2, "Music", 12.5, 1)]
    assert chart_for(["id", "category", "revenue", "n"], rows) == Chart("bar", "category", "revenue")  # was "id"
    assert chart_for(["category", "revenue", "n"], [r[1:] for r in rows]) == Chart("bar", "category", "revenue")


def test_identifiers_and_columns_with_nan_are_never_the_measure():
    assert chart_for(["CustomerID", "name"], [(1, "Ada"), (2, "Bo")]) == NO_CHART  # a bar per person of its id
    assert chart_for(["name", "ratio", "n"], [("a", float("nan"), 1), ("b", 0.5, 2)]) == Chart("bar", "name", "n")
    assert chart_for(["total"], [(float("inf"),)]) == NO_CHART
    assert chart_for(["paid", "name"], [(10, "Ada"), (20, "Bo")]) == Chart("bar", "name", "paid")  # "paid" is no id


def test_too_many_categories_is_no_chart():
    rows = [(f"p{i}", i) for i in range(MAX_BARS + 1)]
    assert chart_for(["name", "n"], rows) == NO_CHART
    assert chart_for(["name", "n"], rows[:MAX_BARS]).kind == "bar"


def test_nulls_are_skipped_when_judging_a_column():
    assert chart_for(["country", "n"], [("Canada", None), ("France", 3)]).kind == "bar"


def test_mixed_or_empty_results_get_no_chart():
    assert chart_for(["a", "b"], []) == NO_CHART
    assert chart_for([], [()]) == NO_CHART
    assert chart_for(["name", "email"], [("Ana", "a@x"), ("Ben", "b@x")]) == NO_CHART
    assert chart_for(["a", "b"], [("x", 1), (2, "y")]) == NO_CHART
    assert chart_for(["n"], [(1,), (2,)]) == NO_CHART  # numbers alone: nothing to put on the x axis


def test_nan_in_a_time_named_column_does_not_crash():
    assert chart_for(["year", "n"], [(float("nan"), 1), (2023, 2)]).kind in ("none", "line", "bar")


def test_date_values():
    assert is_date_value("2024-03") and is_date_value("2024-03-01") and is_date_value("2024-Q2")
    assert not is_date_value("2024") and not is_date_value("March") and not is_date_value("12-2024")


@pytest.mark.parametrize("kind", ["number", "line", "bar", "none"])
def test_chart_is_frozen_and_serialisable(kind):
    chart = Chart(kind, "x" if kind != "number" else None, "y")  # type: ignore[arg-type]
    assert chart.as_dict() == {"kind": kind, "x": chart.x, "y": chart.y}
    with pytest.raises(Exception):
        chart.kind = "bar"  # type: ignore[misc]
