"""The median and percentile aggregates sqlweave gives SQLite builds without the percentile extension."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.db.sqlite_functions import add_percentiles
from sqlweave.errors import ExecutionError


@pytest.fixture()
def conn() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    add_percentiles(conn)
    conn.execute("CREATE TABLE t (g TEXT, x REAL)")
    conn.executemany("INSERT INTO t VALUES (?, ?)",
                     [("a", 1), ("a", 2), ("a", 3), ("a", 4), ("b", 10), ("b", None), ("c", None)])
    return conn


def one(conn: sqlite3.Connection, sql: str) -> object:
    return conn.execute(sql).fetchone()[0]


def test_continuous_percentiles_interpolate(conn: sqlite3.Connection) -> None:
    assert one(conn, "SELECT median(x) FROM t WHERE g = 'a'") == 2.5
    assert one(conn, "SELECT percentile_cont(x, 0.25) FROM t WHERE g = 'a'") == 1.75
    assert one(conn, "SELECT percentile(x, 75) FROM t WHERE g = 'a'") == 3.25
    assert one(conn, "SELECT percentile_cont(x, 0) FROM t WHERE g = 'a'") == 1.0
    assert one(conn, "SELECT percentile_cont(x, 1) FROM t WHERE g = 'a'") == 4.0


def test_discrete_percentile_is_one_of_the_values(conn: sqlite3.Connection) -> None:
    # PostgreSQL: the first value whose position reaches the fraction
    assert [one(conn, f"SELECT percentile_disc(x, {p}) FROM t WHERE g = 'a'") for p in (0, 0.25, 0.26, 0.5, 1)] \
        == [1.0, 1.0, 2.0, 2.0, 4.0]


def test_nulls_are_left_out_and_no_values_give_null(conn: sqlite3.Connection) -> None:
    assert conn.execute("SELECT g, median(x), percentile_disc(x, 0.5) FROM t GROUP BY g ORDER BY g").fetchall() \
        == [("a", 2.5, 2.0), ("b", 10.0, 10.0), ("c", None, None)]
    assert one(conn, "SELECT median(x) FROM t WHERE g = 'none'") is None


@pytest.mark.parametrize("sql", ["SELECT percentile_cont(x, 1.5) FROM t", "SELECT percentile(x, -1) FROM t",
                                 "SELECT percentile_cont(x, 'half') FROM t", "SELECT median(g) FROM t"])
def test_a_bad_argument_is_an_error_not_a_number(conn: sqlite3.Connection, sql: str) -> None:
    with pytest.raises(sqlite3.OperationalError):
        conn.execute(sql).fetchall()


def test_sqlites_own_functions_are_kept() -> None:
    """A SQLite built with the percentile extension keeps its own functions."""
    conn = sqlite3.connect(":memory:")

    class Own:
        def step(self, value: object) -> None:
            pass

        def finalize(self) -> int:
            return 42

    conn.create_aggregate("median", 1, Own)
    add_percentiles(conn)
    assert one(conn, "SELECT median(1)") == 42
    with pytest.raises(sqlite3.OperationalError, match="no such function"):
        conn.execute("SELECT percentile_cont(1, 0.5)")


def test_every_sqlite_database_sqlweave_opens_has_them(events_db: Path) -> None:
    with Database.open(events_db) as db:
        assert db.execute("SELECT median(price), percentile_disc(id, 0.5) FROM event").rows == ((10.25, 2),)
        for bad in ("SELECT percentile_cont(price, 2) FROM event", "SELECT median(name) FROM event"):
            with pytest.raises(ExecutionError, match="read numbers, and a fraction from 0 to 1"):
                db.execute(bad)
