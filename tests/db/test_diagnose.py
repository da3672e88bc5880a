"""Errors typed where they arise: each engine's rejection of a wrong name becomes the same typed error with the
name it reported (SQLite by result code and message, DuckDB by exception class and message, PostgreSQL by SQLSTATE),
on live databases. Why a connection failed is each backend's: tests/db/test_backends.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.db.backends import diagnose
from sqlweave.db.diagnose import ABSENT, LOGIN, TIMED_OUT, connect_hint
from sqlweave.errors import (
    AmbiguousColumnError,
    DatabaseSyntaxError,
    ExecutionError,
    SchemaLinkError,
    UnknownColumnError,
    UnknownFunctionError,
    UnknownTableError,
)
from sqlweave.llm import FakeLLM
from sqlweave.presets import build_pipeline

from ..extras import need_engine, need_extra
from .conftest import SINGER

#: SQL that passes sqlweave's checks and that every engine rejects, the error type, and the reported name's end.
CASES = [
    ("SELECT nope FROM singer", UnknownColumnError, "nope"),
    ("SELECT singer.nope FROM singer", UnknownColumnError, "nope"),
    ("SELECT name FROM singers", UnknownTableError, "singers"),
    ("SELECT concert_id FROM concert JOIN singer_in_concert ON concert.concert_id = singer_in_concert.concert_id",
     AmbiguousColumnError, "concert_id"),
    ("SELECT nofunc(name) FROM singer", UnknownFunctionError, "nofunc"),
]


@pytest.fixture(params=["sqlite", "duckdb", "postgres"])
def db(request: pytest.FixtureRequest) -> Database:
    need_engine(request.param)
    if request.param == "sqlite":
        return Database.open(SINGER)
    if request.param == "duckdb":
        return Database.open(request.getfixturevalue("duck_path"))
    return Database.open(request.getfixturevalue("pg_url"))


@pytest.mark.parametrize(("sql", "kind", "name"), CASES, ids=[c[1].__name__ + str(i) for i, c in enumerate(CASES)])
def test_each_engine_raises_the_typed_error_with_the_name(db: Database, sql: str, kind: type, name: str) -> None:
    with pytest.raises(kind) as info:
        db.execute(sql)
    err = info.value
    assert type(err) is kind and isinstance(err, ExecutionError)
    assert err.name is not None and err.name.lower().endswith(name), err.message
    assert err.details["sql"] == sql
    db.close()


def test_other_rejections_stay_plain_execution_errors(db: Database) -> None:
    # an overflow is not a naming mistake: the correction stages treat it as an execution error
    with pytest.raises(ExecutionError) as info:
        db.execute("SELECT abs(-9223372036854775807 - 1) FROM singer")
    assert type(info.value) is ExecutionError, info.value.message
    db.close()


@pytest.mark.parametrize("sql", ["SELECT * FRM singer", "SELECT name FROM singer WHERE"])
def test_syntax_errors_from_each_driver(sql: str, request: pytest.FixtureRequest) -> None:
    # sqlweave's classifier stops these before they reach a database, so the drivers' raw errors are fed in
    with pytest.raises(sqlite3.Error) as raw:
        sqlite3.connect(":memory:").execute(sql)
    assert isinstance(diagnose("sqlite", raw.value, sql=sql), DatabaseSyntaxError)
    need_extra("duckdb")
    import duckdb

    with pytest.raises(duckdb.Error) as raw_duck:
        duckdb.connect().execute(sql)
    assert isinstance(diagnose("duckdb", raw_duck.value, sql=sql), DatabaseSyntaxError)
    need_extra("postgres")
    import psycopg

    url = request.getfixturevalue("pg_url").replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as conn, pytest.raises(psycopg.Error) as raw_pg:
        conn.execute(sql)
    err = diagnose("postgresql", raw_pg.value, sql=sql)
    assert isinstance(err, DatabaseSyntaxError) and err.details["sql"] == sql


def test_unknown_engine_or_message_is_a_plain_execution_error() -> None:
    err = diagnose("mysql", RuntimeError("Unknown column 'x' in 'field list'"), sql="SELECT x")
    assert type(err) is ExecutionError and err.message == "Unknown column 'x' in 'field list'"
    err = diagnose("sqlite", sqlite3.OperationalError("database is locked"), sql="SELECT 1")
    assert type(err) is ExecutionError


@pytest.mark.extra("postgres")
def test_an_ambiguous_column_on_postgres_is_repaired_by_rule(pg_url: str) -> None:
    # The repair stage reads the type: PostgreSQL's "column reference is ambiguous" now reaches it.
    pipe = build_pipeline("repair")
    sql = ("SELECT concert_id, count(*) FROM concert JOIN singer_in_concert "
           "ON concert.concert_id = singer_in_concert.concert_id GROUP BY concert_id")
    with Database.open(pg_url) as db:
        answer = pipe.run("How many singers per concert?", db, FakeLLM([sql]))
    repair = next(s for s in answer.trace if s.stage == "repair")
    assert answer.ok, answer.error
    assert repair.notes["changed"] is True and repair.notes["outcome"] == "ok"


def test_policy_withheld_message_keeps_the_type_but_not_the_name() -> None:
    from sqlweave.policy import AccessPolicy

    db = Database.open(SINGER, policy=AccessPolicy.from_yaml("hidden_columns: [singer.country]"))
    with pytest.raises(UnknownColumnError) as info:
        db.execute("SELECT agee FROM singer")
    assert info.value.name == "agee"  # a name that is not hidden is reported
    with pytest.raises(UnknownColumnError) as info:
        db.execute("SELECT country FROM concert")  # concert has no such column; the message would name it
    assert info.value.name is None and "country" not in info.value.message


def test_each_reason_that_needs_its_own_advice_has_it() -> None:
    assert "name at the end of the URL" in (connect_hint(ABSENT[0]) or "")
    assert "host name" in (connect_hint(ABSENT[1]) or "")
    assert "firewall" in (connect_hint(TIMED_OUT) or "")
    assert connect_hint(LOGIN) is None  # DatabaseLoginError's own hint says it
    assert connect_hint("the connection was refused") is None  # DatabaseUnavailableError's own hint says it
