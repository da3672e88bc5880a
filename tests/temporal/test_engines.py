"""The golden interpretations' SQL run on SQLite and DuckDB picks exactly the days meant (PostgreSQL and MariaDB:
``tests/db/test_temporal_engines.py``, on the suite's live servers)."""

from __future__ import annotations

import sqlite3

from ..extras import need_extra
from .engines import check_golden_sql


def test_the_sql_picks_the_days_meant_on_sqlite() -> None:
    con = sqlite3.connect(":memory:")
    assert check_golden_sql("sqlite", lambda sql: con.execute(sql).fetchall()) > 40


def test_the_sql_picks_the_days_meant_on_duckdb() -> None:
    need_extra("duckdb")
    import duckdb

    con = duckdb.connect()
    assert check_golden_sql("duckdb", lambda sql: con.execute(sql).fetchall()) > 40
