import sqlite3
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.eval.bird_metrics import soft_f1, time_ratio, ves
from sqlweave.eval.exact_match import exact_match, partial_match
from sqlweave.eval.spider_sql import to_spider


@pytest.mark.parametrize(
    "gold,pred,expected",
    [
        ("SELECT name FROM singer", "select NAME from SINGER", True),
        ("SELECT name FROM singer WHERE age > 30", "SELECT name FROM singer WHERE age > 99", True),  # values ignored
        ("SELECT name FROM singer WHERE age > 30", "SELECT name FROM singer WHERE age < 30", False),  # operator matters
        ("SELECT name, age FROM singer", "SELECT age, name FROM singer", True),  # SELECT is a set
        ("SELECT DISTINCT name FROM singer", "SELECT name FROM singer", True),  # DISTINCT disabled
        ("SELECT name FROM singer ORDER BY age", "SELECT name FROM singer ORDER BY age DESC", False),
        ("SELECT name FROM singer ORDER BY age LIMIT 1", "SELECT name FROM singer ORDER BY age", False),  # LIMIT presence
        ("SELECT count(*) FROM singer", "SELECT count(name) FROM singer", False),
        ("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.sid",
         "SELECT singer.name FROM concert JOIN singer ON singer.id = concert.sid", True),  # aliases, table order
        ("SELECT name FROM singer", "SELECT name FROM singer JOIN concert ON singer.id = concert.sid", False),  # tables
        ("SELECT a FROM t WHERE b = 1 AND c = 2", "SELECT a FROM t WHERE c = 2 AND b = 1", True),
        ("SELECT a FROM t WHERE b = 1 AND c = 2", "SELECT a FROM t WHERE b = 1 OR c = 2", False),
        ("SELECT a FROM t UNION SELECT a FROM u", "SELECT a FROM t UNION SELECT a FROM u", True),
        ("SELECT a FROM t UNION SELECT a FROM u", "SELECT a FROM t INTERSECT SELECT a FROM u", False),
        # A nested query is part of its condition: a different nested column is a different condition.
        ("SELECT a FROM t WHERE b IN (SELECT b FROM u)", "SELECT a FROM t WHERE b IN (SELECT c FROM u)", False),
        ("SELECT a FROM t WHERE b IN (SELECT b FROM u)", "SELECT a FROM t WHERE b IN (SELECT b FROM u WHERE c = 5)", False),
        ("SELECT a, count(*) FROM t GROUP BY a HAVING count(*) > 1", "SELECT a, count(*) FROM t GROUP BY a", False),
        ("SELECT a FROM t", "this is not sql (", False),
    ],
)
def test_exact_match_pairs(gold: str, pred: str, expected: bool) -> None:
    assert exact_match(gold, pred) is expected


def test_unqualified_columns_resolve_through_the_schema(singer_db: Path) -> None:
    schema = Database.open(singer_db).schema()
    assert exact_match("SELECT T1.Name FROM singer AS T1", "SELECT name FROM singer", schema)
    # Foreign-key columns count as one column (the official kmap).
    assert exact_match(
        "SELECT count(*) FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id GROUP BY T1.singer_id",
        "SELECT count(*) FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id GROUP BY T2.singer_id",
        schema,
    )


def test_partial_scores_name_the_failing_component() -> None:
    p = partial_match(to_spider("SELECT a FROM t ORDER BY a"), to_spider("SELECT a FROM t ORDER BY b"))
    assert p["order"] is False and p["select"] is True and p["keywords"] is True


def test_soft_f1_rules() -> None:
    assert soft_f1([], []) == 1.0
    assert soft_f1([(1,)], []) == 0.0
    assert soft_f1([(1, 2)], [(1, 2)]) == 1.0
    assert soft_f1([(1, 2)], [(2, 1)]) == 1.0  # values within a row, any order
    assert soft_f1([(1,), (2,)], [(1,)]) == pytest.approx(2 / 3)
    assert soft_f1([(1,)], [(1,), (9,)]) == pytest.approx(2 / 3)


def test_ves(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE t (a INTEGER)")
    c.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(2000)])
    c.commit()
    db = Database.open(path)
    assert time_ratio(db, "SELECT count(*) FROM t", "SELECT count(*) FROM t WHERE a < 0") == 0.0  # wrong answer
    r = time_ratio(db, "SELECT count(*) FROM t", "SELECT count(a) FROM t", iterations=5)
    assert r > 0
    assert ves([1.0, 1.0]) == 100.0 and ves([0.0, 0.0]) == 0.0 and ves([4.0]) == 200.0
