"""Ties at an answer's LIMIT are said (sqlweave.sql.ties), at every door, and lower the confidence."""

from __future__ import annotations

import pytest

from sqlweave.database import Database
from sqlweave.db.demo import demo_database_path
from sqlweave.llm.fake import FakeLLM
from sqlweave.presets import build_pipeline
from sqlweave.sql.ties import find_tie, read_ties, tie_probe

MOST_ORDERS = ("SELECT c.first_name, c.last_name, COUNT(*) AS orders FROM customers AS c JOIN orders AS o "
               "ON o.customer_id = c.customer_id GROUP BY c.customer_id ORDER BY orders DESC LIMIT 1")


@pytest.mark.parametrize("sql", [
    "SELECT name FROM t ORDER BY score DESC",                      # no LIMIT: every row is there
    "SELECT name FROM t LIMIT 3",                                  # no ORDER BY: nothing to tie on
    "SELECT DISTINCT name FROM t ORDER BY name LIMIT 3",           # extra columns would change DISTINCT
    "SELECT name FROM t ORDER BY score LIMIT 3 OFFSET 2",
    "SELECT name FROM t UNION SELECT name FROM u ORDER BY name LIMIT 1",
    "SELECT * FROM t ORDER BY 1 LIMIT 1",                          # position of a star: not readable
    "not sql at all (",
])
def test_what_cannot_tie_or_cannot_be_read_gets_no_probe(sql: str) -> None:
    assert tie_probe(sql, "sqlite") is None


def test_the_probe_reads_the_ordering_keys_by_position_alias_or_expression() -> None:
    by_position = tie_probe("SELECT name, score FROM t ORDER BY 2 DESC LIMIT 3", "sqlite")
    assert by_position is not None and by_position.k == 3 and by_position.keys == ("2",)
    assert by_position.sql == "SELECT name, score, score AS sqlweave_tie_1 FROM t ORDER BY 2 DESC LIMIT 53"
    two = tie_probe("SELECT name FROM t ORDER BY a DESC, b LIMIT 2", "postgres")
    assert two is not None and two.sql.endswith("a AS sqlweave_tie_1, b AS sqlweave_tie_2 FROM t ORDER BY a DESC, b "
                                                 "LIMIT 52")
    mysql = tie_probe("SELECT name FROM t ORDER BY `score` DESC LIMIT 1", "mysql")
    assert mysql is not None and "LIMIT 51" in mysql.sql


def test_read_ties_counts_only_the_rows_equal_to_the_kth() -> None:
    assert read_ties([("a", 3), ("b", 2), ("c", 2)], 1, 1, ("s",)) is None
    assert read_ties([("a", 3)], 1, 1, ("s",)) is None
    tie = read_ties([("a", 3), ("b", 2), ("c", 2), ("d", 2), ("e", 1)], 2, 1, ("s",))
    assert tie is not None and (tie.tied, tie.more, tie.share) == (2, False, 0.5)
    assert "2 more rows tie with row 2 on s (2): the 2 rows shown are one pick" in tie.caution()
    full = read_ties([("x", 1)] * 51, 1, 1, ("s",))
    assert full is not None and full.more and full.caution().startswith("50 or more rows tie")


def test_a_tie_on_the_demo_shop_is_found_and_said_with_its_value() -> None:
    db = Database.open(demo_database_path())
    tie = find_tie(MOST_ORDERS, db)
    assert tie is not None and tie.keys == ("orders",) and tie.value == (6,) and tie.tied == 4
    assert find_tie(MOST_ORDERS.replace("LIMIT 1", "LIMIT 5"), db) is None  # all five at 6 are shown
    assert find_tie("SELECT name FROM products ORDER BY price DESC LIMIT 1", db) is None


def test_the_answer_carries_the_caution_and_a_lower_confidence() -> None:
    db = Database.open(demo_database_path())
    pipe = build_pipeline("zero-shot")
    tied = pipe.run("Which customer placed the most orders?", db, FakeLLM([f"```sql\n{MOST_ORDERS}\n```"]))
    untied_sql = MOST_ORDERS.replace("LIMIT 1", "LIMIT 5")
    untied = pipe.run("Which customer placed the most orders?", db, FakeLLM([f"```sql\n{untied_sql}\n```"]))
    assert tied.ok and len(tied.result.rows) == 1
    assert [c for c in tied.cautions if "tie with row 1 on orders (6)" in c]
    assert not [c for c in untied.cautions if "tie with row" in c]
    assert tied.confidence is not None and untied.confidence is not None
    assert tied.confidence < untied.confidence * 0.5
