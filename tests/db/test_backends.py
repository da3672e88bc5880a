"""Each backend class reads its driver's exceptions by code or class: time-outs, locks, a subquery of several rows,
why a connection failed, and which typed error a query's rejection is. SQLite and DuckDB raise their real errors
here; PostgreSQL's and MySQL's are the drivers' own exception classes with the server's codes (the live servers'
tests are test_postgres.py and test_mariadb.py)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sqlweave.db.backends import BACKENDS, DuckDB, MySQL, PostgreSQL, SQLite, backend_named
from sqlweave.db.backends.duckdb import duckdb_error_kind, duckdb_open_failure
from sqlweave.db.backends.postgres import libpq_reason
from sqlweave.db.backends.sqlite import SQLITE_BUSY, SQLITE_NOTADB, result_code, sqlite_error_kind
from sqlweave.db.diagnose import ABSENT, CLOSED, FAILED, LOCKED, LOGIN, REFUSED, STARTING, TIMED_OUT, TOO_MANY
from sqlweave.errors import (
    AmbiguousColumnError,
    DatabaseSyntaxError,
    ExecutionError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedDatabaseError,
)

from ..extras import need_extra


def test_every_engine_has_its_backend_and_others_are_refused() -> None:
    assert {type(b) for b in BACKENDS.values()} == {SQLite, DuckDB, PostgreSQL, MySQL}
    assert backend_named("mariadb") is backend_named("mysql")
    with pytest.raises(UnsupportedDatabaseError):
        backend_named("oracle")


# --- SQLite: result codes ----------------------------------------------------------------------------


def test_sqlite_reads_a_stopped_query_by_its_interrupt_code() -> None:
    conn = sqlite3.connect(":memory:")
    conn.set_progress_handler(lambda: 1, 1)
    with pytest.raises(sqlite3.Error) as raw:
        conn.execute("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r")
    assert SQLite().timed_out(raw.value)
    with pytest.raises(sqlite3.Error) as other:
        sqlite3.connect(":memory:").execute("SELECT nope")
    assert not SQLite().timed_out(other.value)


def test_sqlite_reads_a_writers_lock_by_its_busy_code(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("CREATE TABLE t (a)")
    writer.execute("BEGIN EXCLUSIVE")
    reader = sqlite3.connect(path, timeout=0)
    with pytest.raises(sqlite3.Error) as raw:
        reader.execute("SELECT * FROM t")
    assert result_code(raw.value) == SQLITE_BUSY
    assert SQLite().locked(raw.value) and SQLite().unreachable_reason(raw.value) == LOCKED
    writer.execute("ROLLBACK")


def test_sqlite_reads_a_file_that_is_no_database_by_its_code(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    path.write_bytes(b"no database here" * 400)
    with pytest.raises(sqlite3.Error) as raw:
        sqlite3.connect(f"file:{path}?mode=ro", uri=True).execute("SELECT * FROM sqlite_master")
    assert result_code(raw.value) == SQLITE_NOTADB
    assert SQLite().unreachable_reason(raw.value) == ABSENT[2]
    assert not SQLite().locked(raw.value)


def test_sqlite_types_a_query_error_only_under_its_generic_code() -> None:
    with pytest.raises(sqlite3.Error) as raw:
        sqlite3.connect(":memory:").execute("SELECT nope")
    err = SQLite().diagnose(raw.value, sql="SELECT nope")
    assert isinstance(err, UnknownColumnError) and err.name == "nope"
    # the same words without SQLite's code (an error of another origin) are not typed from their text
    assert type(SQLite().diagnose(sqlite3.OperationalError("no such column: nope"), sql="x")) is ExecutionError
    assert sqlite_error_kind("ambiguous column name: id") == (AmbiguousColumnError, "id")
    assert sqlite_error_kind("incomplete input") == (DatabaseSyntaxError, None)
    assert sqlite_error_kind("datatype mismatch") is None


# --- DuckDB: exception classes -----------------------------------------------------------------------------


def test_duckdb_reads_a_stopped_query_by_its_exception_class() -> None:
    need_extra("duckdb")
    import duckdb

    conn = duckdb.connect()
    timer = threading.Timer(0.2, conn.interrupt)
    timer.start()
    with pytest.raises(duckdb.Error) as raw:
        conn.execute("SELECT count(*) FROM range(100000000000) a, range(10) b").fetchall()
    timer.cancel()
    assert DuckDB().timed_out(raw.value)
    with pytest.raises(duckdb.Error) as other:
        conn.execute("SELECT nope")
    assert not DuckDB().timed_out(other.value)


def test_duckdb_types_query_errors_by_class_then_names_them() -> None:
    need_extra("duckdb")
    import duckdb

    conn = duckdb.connect()
    conn.execute("CREATE TABLE t (a INT)")
    cases = {"SELECT nope FROM t": (UnknownColumnError, "nope"), "SELECT * FROM nowhere": (UnknownTableError, "nowhere"),
             "SELEC 1": (DatabaseSyntaxError, None),
             "SELECT 1 FROM range(2) a, range(2) b WHERE range = 1": (AmbiguousColumnError, "range")}
    for sql, expected in cases.items():
        with pytest.raises(duckdb.Error) as raw:
            conn.execute(sql)
        assert duckdb_error_kind(raw.value, str(raw.value)) == expected, sql
    with pytest.raises(duckdb.Error) as raw:
        conn.execute("SELECT (SELECT * FROM range(3))")
    assert DuckDB().too_many_rows(raw.value)
    assert not DuckDB().too_many_rows(ValueError("More than one row returned by a subquery"))  # not DuckDB's


def test_duckdb_tells_a_locked_file_from_one_that_is_no_database(tmp_path: Path) -> None:
    need_extra("duckdb")
    import duckdb

    bad = tmp_path / "bad.duckdb"
    bad.write_bytes(b"no database" * 400)
    with pytest.raises(duckdb.Error) as raw:
        duckdb.connect(str(bad), read_only=True)
    assert duckdb_open_failure(raw.value) == ABSENT[2]
    path = tmp_path / "w.duckdb"
    duckdb.connect(str(path)).close()
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); time.sleep(30)", str(path)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        with pytest.raises(duckdb.Error) as locked:
            duckdb.connect(str(path), read_only=True)
        assert DuckDB().unreachable_reason(locked.value) == LOCKED
    finally:
        holder.kill()
        holder.wait()
    assert duckdb_open_failure(ValueError("Could not set lock on file")) == FAILED  # not DuckDB's IOException


# --- PostgreSQL: SQLSTATE ------------------------------------------------------------------------------------


def test_postgres_reads_sqlstate_codes() -> None:
    need_extra("postgres")
    from psycopg import OperationalError
    from psycopg.errors import lookup

    pg = PostgreSQL()
    assert pg.timed_out(lookup("57014")("canceling statement due to statement timeout"))
    assert not pg.timed_out(lookup("42703")("column x does not exist"))
    assert pg.too_many_rows(lookup("21000")("more than one row returned by a subquery used as an expression"))
    for code, reason in [("3D000", ABSENT[0]), ("28P01", LOGIN), ("28000", LOGIN), ("53300", TOO_MANY),
                         ("57P03", STARTING), ("57P01", CLOSED)]:
        assert pg.unreachable_reason(lookup(code)("anything at all")) == reason, code
    # before a server answers, libpq gives text alone: the one function that reads it
    assert pg.unreachable_reason(OperationalError('connection to server at "h", port 1 failed: Connection refused')) \
        == REFUSED
    assert libpq_reason("failed to resolve host 'db.invalid': [Errno -2] Name or service not known") == ABSENT[1]
    assert libpq_reason("connection timeout expired") == TIMED_OUT
    err = pg.diagnose(lookup("42703")('column "agee" does not exist'), sql="SELECT agee")
    assert isinstance(err, UnknownColumnError) and err.name == "agee"
    assert type(pg.diagnose(RuntimeError('column "agee" does not exist'), sql="x")) is ExecutionError  # no code


# --- MySQL and MariaDB: error numbers ---------------------------------------------------------------------


def test_mysql_reads_error_numbers() -> None:
    need_extra("mysql")
    import socket

    from pymysql.err import InternalError, OperationalError

    my = MySQL()
    assert my.timed_out(OperationalError(3024, "Query execution was interrupted, maximum statement execution time "
                                               "exceeded"))
    assert my.timed_out(OperationalError(1969, "Query execution was interrupted (max_statement_time exceeded)"))
    assert not my.timed_out(OperationalError(1054, "Unknown column 'x' in 'field list'"))
    assert my.too_many_rows(OperationalError(1242, "Subquery returns more than 1 row"))
    for code, reason in [(1045, LOGIN), (1049, ABSENT[0]), (1040, TOO_MANY), (2005, ABSENT[1]), (2013, CLOSED)]:
        assert my.unreachable_reason(OperationalError(code, "anything at all")) == reason, code
    for cause, reason in [(ConnectionRefusedError(), REFUSED), (socket.timeout(), TIMED_OUT),
                          (socket.gaierror(), ABSENT[1])]:
        refused = OperationalError(2003, "Can't connect to MySQL server on 'h'")
        refused.original_exception = cause  # what PyMySQL keeps of the socket's error
        assert my.unreachable_reason(refused) == reason
    err = my.diagnose(InternalError(1054, "Unknown column 'agee' in 'field list'"), sql="SELECT agee")
    assert isinstance(err, UnknownColumnError) and err.name == "agee" and err.message.startswith("Unknown column")
