"""Each kind of mistake recognised from the ASTs, and a right-looking rewrite never called a mistake of meaning."""

from __future__ import annotations

import pytest

from sqlweave.eval.error_kinds import KINDS, classify

GOLD = "SELECT name FROM singer WHERE country = 'France'"

CASES = [
    (None, GOLD, "no_sql"),
    ("SELECT nme FROM singer", GOLD, "not_executable"),
    ("SELECT name FROM singer", "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id",
     "missing_table"),
    ("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id WHERE T1.country = 'France'",
     GOLD, "extra_table"),
    ("SELECT name FROM stadium WHERE country = 'France'", GOLD, "other_tables"),
    ("SELECT name FROM singer WHERE country = 'France' OR country = 'Spain'",
     "SELECT name FROM singer WHERE country = 'France' INTERSECT SELECT name FROM singer WHERE country = 'Spain'",
     "set_operation"),
    ("SELECT name FROM singer ORDER BY age LIMIT 1",
     "SELECT name FROM singer WHERE age = (SELECT min(age) FROM singer)", "nesting"),
    ("SELECT country, count(*) FROM singer GROUP BY name", "SELECT country, count(*) FROM singer GROUP BY country",
     "aggregation"),
    ("SELECT avg(age) FROM singer", "SELECT max(age) FROM singer", "aggregation"),
    ("SELECT song_name FROM singer WHERE country = 'France'", GOLD, "select_columns"),
    ("SELECT name FROM singer WHERE region = 'France'", GOLD, "filter"),
    ("SELECT name FROM singer WHERE country LIKE 'France'", GOLD, "filter"),
    ("SELECT name FROM singer WHERE country = 'france'", GOLD, "value"),
    ("SELECT DISTINCT name FROM singer WHERE country = 'France'", GOLD, "distinct_order_limit"),
    ("SELECT name FROM singer WHERE country = 'France' ORDER BY age", GOLD, "distinct_order_limit"),
    ("SELECT name FROM singer WHERE 'France' = country", GOLD, "other"),
]


@pytest.mark.parametrize(("pred", "gold", "kind"), CASES, ids=[c[2] + str(i) for i, c in enumerate(CASES)])
def test_each_kind(pred: str | None, gold: str, kind: str) -> None:
    assert classify(pred, gold, executable=kind != "not_executable") == kind


def test_every_kind_has_a_case_and_spider_quotes_are_values() -> None:
    assert {c[2] for c in CASES} == set(KINDS)
    # Spider's gold writes values in double quotes: read as strings, not as columns
    assert classify("SELECT name FROM teacher WHERE hometown != 'Little Lever Urban District'",
                    'select name from teacher where hometown != "little lever urban district"') == "value"
    assert classify("SELECT name FROM t WHERE", GOLD) == "not_executable"  # does not parse
