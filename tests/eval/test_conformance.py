"""Golden cases where sqlweave's scorer differed from the official evaluators, with the official verdict written in.

Each verdict below was produced by the official scripts themselves (``taoyds/test-suite-sql-eval`` at
e97acc5: ``evaluation.py``/``process_sql.py``/``exec_eval.py``; ``AlibabaResearch/DAMO-ConvAI`` at 483554e:
``bird/llm/src/evaluation.py``/``evaluation_ves.py``) through ``benchmarks/tools/conformance.py``; the tests do
not need those scripts. ``benchmarks/tools/conformance.py`` re-checks every metric on some 13,000 predictions.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.eval.bird_metrics import _clean_abnormal, time_ratio, ves
from sqlweave.eval.datasets import Example
from sqlweave.eval.exact_match import exact_match, kmap_for, sqlite_schema
from sqlweave.eval.metrics import order_matters, strip_distinct
from sqlweave.eval.runner import GoldCache, execution_match, score_sql
from sqlweave.eval.spider_parse import parse_spider, tokenize
from tests.conftest import SHARED

SPIDER_DB = SHARED / "data" / "spider" / "database"
needs_spider = pytest.mark.skipif(not SPIDER_DB.is_dir(), reason="needs ../shared/data/spider")


def _db(db_id: str) -> Path:
    return SPIDER_DB / db_id / f"{db_id}.sqlite"


# (case, db_id, gold, prediction, official exact-set-match, official EX with DISTINCT removed, with DISTINCT kept)
GOLDEN = [
    ("join on a column the table lacks (cars_data.MakeId): the official reader rejects it", "car_1",
     "SELECT DISTINCT T1.Maker FROM CAR_MAKERS AS T1 JOIN MODEL_LIST AS T2 ON T1.Id  =  T2.Maker JOIN CAR_NAMES AS T3 "
     "ON T2.model  =  T3.model JOIN CARS_DATA AS T4 ON T3.MakeId  =  T4.id WHERE T4.year  =  '1970';",
     "SELECT DISTINCT T1.Maker FROM CAR_MAKERS AS T1 JOIN MODEL_LIST AS T2 ON T1.Id = T2.Maker JOIN CAR_NAMES AS T3 "
     "ON T2.model = T3.model JOIN CARS_DATA AS T4 ON T3.MakeId = T4.MakeId WHERE T4.year = '1970'", False, False, False),
    ("OR in a join condition: the official reader swallows it into the join's value, so it is not seen", "flight_2",
     'SELECT count(*) FROM FLIGHTS AS T1 JOIN AIRPORTS AS T2 ON T1.SourceAirport  =  T2.AirportCode WHERE T2.City  =  "Aberdeen"',
     "SELECT count(*) FROM FLIGHTS AS T1 JOIN AIRPORTS AS T2 ON T1.SourceAirport = T2.AirportCode "
     "OR T1.DestAirport = T2.AirportCode WHERE T2.City = 'Aberdeen'", True, True, True),
    ("an alias named like a table of the database is rejected", "concert_singer",
     "SELECT T2.name ,  count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id  =  T2.stadium_id GROUP BY T1.stadium_id",
     "SELECT singer.name, count(*) FROM concert AS stadium_x JOIN stadium AS singer ON stadium_x.stadium_id = singer.stadium_id "
     "GROUP BY stadium_x.stadium_id", False, True, True),
    ("DISTINCT in a nested query is compared (it is only dropped at the top level)", "concert_singer",
     "select count(*) from concert where stadium_id = (select stadium_id from stadium order by capacity desc limit 1)",
     "select count(*) from concert where stadium_id = (select distinct stadium_id from stadium order by capacity desc limit 1)",
     False, True, True),
    ("a LIMIT value in a nested query is not compared (always read as 1)", "concert_singer",
     "select count(*) from concert where stadium_id = (select stadium_id from stadium order by capacity desc limit 1)",
     "select count(*) from concert where stadium_id = (select stadium_id from stadium order by capacity desc limit 3)",
     True, True, True),
    ("DISTINCT inside an aggregate is dropped for exact match but count(col) is not count(*)", "concert_singer",
     "SELECT count(*) FROM singer", "SELECT count(DISTINCT singer_id) FROM singer", False, True, True),
    ("backtick-quoted identifiers are rejected by the reader", "concert_singer",
     "SELECT count(*) FROM singer", "SELECT count(*) FROM `singer`", False, True, True),
    ("double-quoted identifiers are read as string values", "concert_singer",
     "SELECT count(*) FROM singer", 'SELECT count(*) FROM "singer"', False, True, True),
    ("'value' is replaced by '1' anywhere in the prediction, identifiers included", "concert_singer",
     "SELECT count(*) FROM singer", "SELECT count(*) AS valuecount FROM singer", False, False, False),
    ("'value' literal becomes '1' before running", "concert_singer",
     "SELECT count(*) FROM singer", 'SELECT count(*) FROM singer WHERE name = "value"', False, False, False),
    (">= without spaces is read as '>' then '=1'", "concert_singer",
     "SELECT count(*) FROM singer", "SELECT count(*) FROM singer WHERE age>=1", False, True, True),
    ("only the first statement runs once DISTINCT is removed; both run (an error) when it is kept", "concert_singer",
     "SELECT count(*) FROM singer", "SELECT DISTINCT count(*) FROM singer; SELECT 1", True, True, False),
    ("a comment is read as tokens", "concert_singer",
     "SELECT count(*) FROM singer", "SELECT count(*) FROM singer -- all", False, True, True),
    ("a foreign-key column stands for its key", "concert_singer",
     "SELECT T2.name ,  count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id  =  T2.stadium_id GROUP BY T1.stadium_id",
     "SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T2.stadium_id",
     True, True, True),
    ("a top-level LIMIT counts by its presence only", "concert_singer",
     "SELECT song_name ,  song_release_year FROM singer ORDER BY age LIMIT 1",
     "SELECT song_name, song_release_year FROM singer ORDER BY age LIMIT 5", True, False, False),
]


@needs_spider
@pytest.mark.parametrize("case,db_id,gold,pred,exact,ex,ex_kd", GOLDEN, ids=[g[0][:50] for g in GOLDEN])
def test_official_verdicts(case: str, db_id: str, gold: str, pred: str, exact: bool, ex: bool, ex_kd: bool) -> None:
    path = _db(db_id)
    with Database.open(path, timeout_s=30) as db:
        s = score_sql(db, Example(id="dev-0", db_id=db_id, question=case, gold_sql=gold), pred, GoldCache(), "spider")
    assert (s.exact, s.match, s.match_keep_distinct) == (exact, ex, ex_kd), case


@needs_spider
def test_exact_match_reads_the_database_schema_and_tables_json() -> None:
    path = _db("car_1")
    schema, kmap = sqlite_schema(path), kmap_for(path, None)
    assert "cars_data" in schema and "makeid" not in schema["cars_data"]
    assert kmap["__model_list__.maker__".replace("__.", ".")] == "__car_makers.id__"
    gold = "SELECT T1.Maker FROM car_makers AS T1 JOIN model_list AS T2 ON T1.Id = T2.Maker GROUP BY T1.Id"
    assert exact_match(gold, gold.replace("GROUP BY T1.Id", "GROUP BY T2.Maker"), schema, kmap=kmap)
    assert not exact_match(gold, gold.replace("GROUP BY T1.Id", "GROUP BY T2.Maker"), schema, kmap={})


def test_reader_quirks() -> None:
    schema = {"singer": ["singer_id", "name", "age"], "concert": ["concert_id", "singer_id"]}
    assert tokenize("SELECT a FROM t WHERE b >= 1") == ["select", "a", "from", "t", "where", "b", ">=", "1"]
    assert tokenize("SELECT a FROM t WHERE b>=1")[-2:] == [">", "=1"]
    assert parse_spider("SELECT name FROM singer ORDER BY age LIMIT 10", schema)["limit"] == 1
    with pytest.raises(Exception):
        parse_spider("SELECT name FROM singer AS concert", schema)
    with pytest.raises(Exception):
        parse_spider("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.makeid", schema)


def test_official_exec_text_rules() -> None:
    # parse.remove_distinct: every 'distinct' word token goes; the text is kept as written; first statement only.
    assert strip_distinct("SELECT DISTINCT(a) FROM t") == "SELECT (a) FROM t"
    assert strip_distinct("SELECT a FROM t; SELECT DISTINCT b") == "SELECT a FROM t;"
    assert strip_distinct("SELECT 'distinct', t.distinct_x FROM t") == "SELECT 'distinct', t.distinct_x FROM t"
    assert order_matters("select a from t order by a") and not order_matters("select a from t order\nby a")


@pytest.fixture
def bird_db(tmp_path: Path) -> Path:
    path = tmp_path / "bird.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, "ok"), (2, "caf\u00e9"), (3, "x")])
    conn.execute("UPDATE t SET name = CAST(X'6361666599' AS TEXT) WHERE id = 3")
    conn.commit()
    conn.close()
    return path


def test_bird_text_that_is_not_utf8_scores_zero(bird_db: Path) -> None:
    # Official BIRD evaluation.py: sqlite3's strict decoding fails on the row -> exception -> res 0.
    with Database.open(bird_db) as db:
        assert execution_match(db, "SELECT name FROM t", "SELECT name FROM t", rule="bird")[0] is False
        assert execution_match(db, "SELECT name FROM t WHERE id < 3", "SELECT name FROM t WHERE id <= 2", rule="bird")[0]
        assert time_ratio(db, "SELECT name FROM t", "SELECT name FROM t", iterations=2) == 0.0


def test_bird_ves_rules(bird_db: Path) -> None:
    with Database.open(bird_db) as db:
        # Official evaluation_ves.py: a prediction that fails is caught and scores time_ratio 0 (no crash).
        assert time_ratio(db, "SELECT id FROM t", "SELECT id FROM no_such_table", iterations=2) == 0.0
        assert time_ratio(db, "SELECT id FROM t", "SELECT id FROM t ORDER BY id DESC", iterations=3) > 0
    # clean_abnormal: strict 3-sigma bounds with numpy's population std; equal values leave nothing.
    assert _clean_abnormal([2.0, 2.0, 2.0]) == []
    assert _clean_abnormal([1.0] * 10 + [50.0]) == [1.0] * 10
    assert ves([1.0, 0.0, 4.0]) == 100.0
