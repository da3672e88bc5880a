import sqlite3
import time
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.errors import (
    DatabaseError,
    DatabaseNotFoundError,
    DatabaseSyntaxError,
    ExecutionError,
    QueryTimeoutError,
    RefusedStatementError,
)
from sqlweave.sql.extract import extract_sql
from tests.conftest import file_digest

from .suite import FOREIGN_ON_SQLITE, rows, run_as_model_wrote_it


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatabaseNotFoundError, match="no database file"):
        Database.open(tmp_path / "nope.sqlite")


def test_missing_file_in_sqlite_url(tmp_path: Path) -> None:
    with pytest.raises(DatabaseNotFoundError):
        Database.open(f"sqlite:///{tmp_path}/nope.sqlite")


def test_not_a_database(tmp_path: Path) -> None:
    f = tmp_path / "notes.sqlite"
    f.write_text("hello, this is not a database")
    with pytest.raises(DatabaseError, match="not a SQLite database"):
        Database.open(f)


@pytest.mark.parametrize("url", ["this is ://not a url", "postgresql://:::/x", "mysql://u@h:abc/x"])
def test_bad_url(url: str) -> None:
    with pytest.raises(DatabaseNotFoundError, match="not a database URL"):  # a port not a number was a ValueError
        Database.open(url)


def test_unknown_driver_names_the_extra() -> None:
    from sqlweave.errors import MissingDependencyError

    with pytest.raises((MissingDependencyError, DatabaseNotFoundError)):
        Database.open("postgresql+nosuchdriver://u:p@localhost/x")


@pytest.mark.parametrize("url", ["mssql+pymssql://u:p@localhost/x", "mssql://u@127.0.0.1:1/x",
                                 "mssql+pyodbc://u:p@dsn", "oracle+nosuchdriver://u:p@localhost/x"])
def test_engines_sqlweave_cannot_hold_read_only_and_timed_are_refused_before_connecting(url: str) -> None:
    # Only the AST check would stand between a query and such a database: no read-only session, no time limit.
    from sqlweave.errors import UnsupportedDatabaseError

    with pytest.raises(UnsupportedDatabaseError, match="does not run queries on") as err:
        Database.open(url)
    assert err.value.code == "database_unsupported" and "CSV" in (err.value.hint or "")
    assert "p@" not in str(err.value)  # no password in the message


def test_execute_returns_typed_rows(singer_db: Path) -> None:
    db = Database.open(singer_db)
    r = db.execute("SELECT name, age FROM singer ORDER BY age DESC")
    assert r.columns == ("Name", "Age")
    assert r.row_count == 6 and not r.truncated
    assert r.rows[0] == ("Joe Sharp", 52)
    assert r.elapsed_s >= 0


def test_row_cap_sets_truncated(singer_db: Path) -> None:
    db = Database.open(singer_db, max_rows=4)
    r = db.execute("SELECT name FROM singer")
    assert r.row_count == 4 and r.truncated
    assert db.execute("SELECT name FROM singer", max_rows=10).truncated is False


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE singer",
        "DELETE FROM singer",
        "UPDATE singer SET age = 0",
        "SELECT 1; DELETE FROM singer",
        "ATTACH DATABASE 'x.db' AS x",
        "PRAGMA user_version = 7",
        "CREATE TABLE t AS SELECT * FROM singer",
    ],
)
def test_destructive_statements_are_refused_and_file_unchanged(singer_db: Path, sql: str) -> None:
    before = file_digest(singer_db)
    db = Database.open(singer_db)
    with pytest.raises(RefusedStatementError):
        db.execute(sql)
    db.close()
    assert file_digest(singer_db) == before


def test_connection_is_read_only_even_past_the_classifier(singer_db: Path) -> None:
    """Defence in depth: the raw runner (no classifier) still cannot write."""
    before = file_digest(singer_db)
    db = Database.open(singer_db)
    with pytest.raises(ExecutionError, match="readonly|read-only|attempt to write"):
        db.trusted_read("DELETE FROM singer", timeout_s=5, max_rows=10)
    db.close()
    assert file_digest(singer_db) == before
    assert sqlite3.connect(singer_db).execute("SELECT count(*) FROM singer").fetchone()[0] == 6


def test_runaway_cross_join_is_interrupted(singer_db: Path) -> None:
    db = Database.open(singer_db, timeout_s=0.5)
    sql = ("SELECT count(*) FROM singer a, singer b, singer c, singer d, singer e, singer f, "
           "singer g, singer h, singer i, singer j, singer k, singer l")
    start = time.perf_counter()
    with pytest.raises(QueryTimeoutError):
        db.execute(sql)
    assert time.perf_counter() - start < 5
    # The connection is usable afterwards.
    assert db.execute("SELECT count(*) FROM singer").rows == ((6,),)


def test_unknown_column_is_an_execution_error(singer_db: Path) -> None:
    db = Database.open(singer_db)
    with pytest.raises(ExecutionError, match="no such column") as info:
        db.execute("SELECT nme FROM singer")
    assert "no such column" in info.value.as_feedback()


def test_invalid_utf8_does_not_crash(tmp_path: Path) -> None:
    path = tmp_path / "bad.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (s TEXT)")
    conn.execute("INSERT INTO t VALUES (CAST(X'61FF62' AS TEXT))")
    conn.commit()
    conn.close()
    rows = Database.open(path).execute("SELECT s FROM t").rows
    assert rows[0][0].startswith("a") and rows[0][0].endswith("b")


@pytest.mark.parametrize("sql,meant", FOREIGN_ON_SQLITE)
def test_postgres_and_mysql_date_forms_give_what_they_mean_on_sqlite(events_db: Path, sql: str, meant: str) -> None:
    with Database.open(events_db) as db:
        ran, got = run_as_model_wrote_it(db, sql)
        assert ran != sql  # it was brought to SQLite's forms, not run as written
        assert got == rows(db.execute(meant)), f"ran on SQLite: {ran}"


def test_a_number_column_read_as_a_date_is_left_for_sqlite_to_refuse(events_db: Path) -> None:
    # price holds numbers: EXTRACT(YEAR FROM price) means nothing, and strftime('%Y', price) would answer with
    # the year of a Julian day instead of an error the correction can act on.
    sql = "SELECT EXTRACT(YEAR FROM price), EXTRACT(YEAR FROM happened) FROM event"
    with Database.open(events_db) as db:
        schema = db.schema()
        assert extract_sql(f"```sql\n{sql}\n```", "sqlite", schema=schema) == sql
        without = extract_sql(f"```sql\n{sql}\n```", "sqlite")
        assert "STRFTIME('%Y', price)" in without  # without the schema nothing tells
        with pytest.raises(DatabaseSyntaxError):
            db.execute(sql)
        fine = "SELECT EXTRACT(YEAR FROM happened) FROM event WHERE id = 1"
        assert db.execute(extract_sql(fine, "sqlite", schema=schema)).rows == ((2019,),)


def test_a_file_another_program_has_locked_is_not_the_sqls_fault(singer_db: Path) -> None:
    # "database is locked" was an ExecutionError, which the pipeline gave the model to correct, call after call
    from sqlweave.errors import DatabaseUnavailableError
    from sqlweave.llm import FakeLLM
    from sqlweave.presets import build_pipeline

    db = Database.open(singer_db, timeout_s=0.5)  # a lock is waited for as long as a query may run, at most
    db.schema()
    writer = sqlite3.connect(singer_db, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")  # another program in the middle of writing
    try:
        with pytest.raises(DatabaseUnavailableError, match="another program holds a lock") as err:
            db.execute("SELECT count(*) FROM singer")
        assert "try again when it has finished" in (err.value.hint or "")
        llm = FakeLLM(["SELECT count(*) FROM singer"] * 5)
        answer = build_pipeline("default").run("How many singers are there?", db, llm)
        assert answer.error is not None and answer.error.code == "database_unavailable" and answer.model_calls == 1
        agent = FakeLLM(['Thought: count them.\nAction: ExecuteSQL("SELECT count(*) FROM singer")'] * 8)
        answer = build_pipeline("agent").run("How many singers are there?", db, agent)  # no step can mend it
        assert answer.error is not None and answer.error.code == "database_unavailable" and len(agent.calls) == 1
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert db.execute("SELECT count(*) FROM singer").rows == ((6,),)
