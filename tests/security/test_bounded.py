"""Bounded resources: a query over a 10-million-row table returns the capped rows within the time limit without
holding the table in memory, through the database layer and through a whole pipeline."""

from __future__ import annotations

import sqlite3
import time
import tracemalloc
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.errors import QueryTimeoutError
from sqlweave.llm import FakeLLM
from sqlweave.presets import build_pipeline

ROWS = 10_000_000


@pytest.fixture(scope="module")
def big_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, label TEXT, amount REAL)")
    conn.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
                 "INSERT INTO big SELECT i, 'row ' || i, i * 0.5 FROM n", (ROWS,))
    conn.commit()
    conn.close()
    return path


def test_a_full_scan_returns_the_capped_rows_fast_and_small(big_db: Path) -> None:
    db = Database.open(big_db, max_rows=1000, timeout_s=10)
    db.execute("SELECT 1")  # schema and connection set up outside the measurement
    tracemalloc.start()
    start = time.perf_counter()
    result = db.execute("SELECT * FROM big")
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(result.rows) == 1000 and result.truncated and result.rows[-1][0] == 1000
    assert seconds < 5  # the first 1,001 rows, not ten million
    assert peak < 20 * 2**20, f"{peak / 2**20:.1f} MB held for 1,000 rows"


def test_a_query_that_cannot_finish_is_stopped_at_the_time_limit(big_db: Path) -> None:
    db = Database.open(big_db, max_rows=1000)
    start = time.perf_counter()
    with pytest.raises(QueryTimeoutError, match="interrupted after 1 s"):
        db.execute("SELECT * FROM big ORDER BY label DESC, amount", timeout_s=1.0)
    assert time.perf_counter() - start < 3
    assert db.execute("SELECT count(*) FROM big WHERE id <= 10").rows == ((10,),)  # the connection still works


def test_a_pipeline_answer_over_the_big_table_is_capped(big_db: Path) -> None:
    db = Database.open(big_db, max_rows=50, timeout_s=10)
    answer = build_pipeline("zero-shot").run("Show every row.", db, FakeLLM(["```sql\nSELECT * FROM big\n```"]))
    assert answer.ok and len(answer.result.rows) == 50 and answer.result.truncated
    assert len(answer.as_dict()["rows"]) == 50
