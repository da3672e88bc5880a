"""The golden time interpretations' SQL run on the suite's live PostgreSQL and MariaDB servers picks exactly the
days meant (SQLite and DuckDB: ``tests/temporal/test_engines.py``)."""

from __future__ import annotations

from ..temporal.engines import check_golden_sql
from .conftest import MariaDBServer, PostgresServer


def test_the_sql_picks_the_days_meant_on_postgres(pg_server: PostgresServer) -> None:
    assert check_golden_sql("postgres", lambda sql: pg_server.admin(sql)) > 40


def test_the_sql_picks_the_days_meant_on_mariadb(mariadb_server: MariaDBServer) -> None:
    assert check_golden_sql("mysql", lambda sql: mariadb_server.admin(sql)) > 40
