import collections
import json
from pathlib import Path

import pytest

from sqlweave.eval.hardness import hardness
from tests.conftest import SHARED

DEV = SHARED / "data" / "spider" / "dev.json"


@pytest.mark.parametrize(
    "sql,level",
    [
        ("SELECT count(*) FROM singer", "easy"),
        ("SELECT name FROM singer WHERE age > 20", "easy"),
        ("SELECT name, age FROM singer WHERE age > 20", "medium"),
        ("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.sid WHERE T2.year = 2014", "medium"),
        ("SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)", "hard"),
        ("SELECT a FROM t WHERE b LIKE '%x%' ORDER BY a", "hard"),
        ("SELECT a FROM t WHERE b LIKE '%x%' OR c = 1 ORDER BY a LIMIT 1", "extra"),
        ("SELECT a FROM t EXCEPT SELECT a FROM u WHERE b = 1 ORDER BY a", "hard"),
        ("SELECT a, b FROM t WHERE c IN (SELECT c FROM u) GROUP BY a", "extra"),
        ("SELECT name FROM singer WHERE NOT age > 20", "easy"),  # a NOT alone is one "aggregate": not > 1
    ],
)
def test_levels(sql: str, level: str) -> None:
    assert hardness(sql) == level


@pytest.mark.skipif(not DEV.exists(), reason="needs ../shared/data/spider")
def test_published_dev_split_is_reproduced_from_sql_text_and_from_parses() -> None:
    data = json.loads(DEV.read_text())
    from_text = collections.Counter(hardness(x["query"]) for x in data)
    from_parse = collections.Counter(hardness(x["sql"]) for x in data)
    expected = {"easy": 248, "medium": 446, "hard": 174, "extra": 166}
    assert dict(from_text) == expected
    assert dict(from_parse) == expected
