"""Rule-based schema-link repair: each kind of naming mistake, and the cases it must leave alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.sql.repair import repair_schema_links
from sqlweave.sql.validate import schema_issues


@pytest.fixture
def schema(singer_db: Path):
    return Database.open(singer_db).schema()


@pytest.mark.parametrize(("sql", "expected"), [
    # Wrong alias: Name lives in singer (T1), not in singer_in_concert (T2).
    ("SELECT T2.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID",
     "SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID"),
    # Table name used where the query aliased it.
    ("SELECT singer.Name FROM singer AS T1 WHERE T1.Age > 30", "SELECT T1.Name FROM singer AS T1 WHERE T1.Age > 30"),
    # Misspelt table and column.
    ("SELECT nme FROM singers", "SELECT Name FROM singer"),
    # Close column of the qualified table.
    ("SELECT T1.Song_Nam FROM singer AS T1", "SELECT T1.Song_Name FROM singer AS T1"),
    # Ambiguous unqualified column: qualified with the first table that has it.
    ("SELECT Singer_ID FROM singer JOIN singer_in_concert ON singer.Singer_ID = singer_in_concert.Singer_ID",
     "SELECT singer.Singer_ID FROM singer JOIN singer_in_concert ON singer.Singer_ID = singer_in_concert.Singer_ID"),
    # A PostgreSQL schema that SQLite does not have (the table exists under its own name), also misspelt.
    ("SELECT s.Name FROM music.singer AS s JOIN music.concerts AS c ON s.Singer_ID = c.concert_ID",
     "SELECT s.Name FROM singer AS s JOIN concert AS c ON s.Singer_ID = c.concert_ID"),
])
def test_repairs(schema, sql: str, expected: str) -> None:
    fixed = repair_schema_links(sql, schema)
    assert fixed.changed and fixed.sql == expected
    assert schema_issues(fixed.sql, schema) == []


def test_missing_table_is_joined_along_foreign_keys(schema) -> None:
    fixed = repair_schema_links("SELECT concert_Name FROM singer WHERE Name = 'Joe Sharp'", schema)
    assert "JOIN singer_in_concert ON" in fixed.sql and "JOIN concert ON" in fixed.sql
    assert schema_issues(fixed.sql, schema) == []
    assert any(c.startswith("join concert") for c in fixed.changes)


@pytest.mark.parametrize("sql", [
    "SELECT Name FROM singer",                                   # already right
    "SELECT count(*) AS c FROM singer GROUP BY Country ORDER BY c",  # select alias, not a column
    "SELECT loc FROM stadium",                                   # too far from any column: no guess
    "SELECT FROM WHERE",                                         # does not parse: returned unchanged
    "SELECT Name FROM main.singer",                              # SQLite's own name for the database
])
def test_leaves_alone(schema, sql: str) -> None:
    fixed = repair_schema_links(sql, schema)
    assert not fixed.changed and fixed.sql == sql


def test_join_condition_uses_the_foreign_key(schema) -> None:
    fixed = repair_schema_links("SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = "
                                "T2.Name", schema)
    assert "ON T2.Singer_ID = T1.Singer_ID" in fixed.sql and schema_issues(fixed.sql, schema) == []


def test_columns_made_ambiguous_by_a_join_are_qualified(singer_db: Path) -> None:
    db = Database.open(singer_db)
    fixed = repair_schema_links("SELECT Name, Singer_ID FROM singer WHERE concert_Name = 'Super bootcamp'", db.schema())
    assert "singer.Singer_ID" in fixed.sql and "JOIN concert" in fixed.sql
    assert db.execute(fixed.sql).rows  # runs: no "ambiguous column name" left


def test_never_makes_a_self_join_condition(schema) -> None:
    # concert has no Singer_ID: moving T2.Singer_ID to T1 would make "T1.Singer_ID = T1.Singer_ID".
    fixed = repair_schema_links("SELECT T1.Name FROM singer AS T1 JOIN concert AS T2 ON T1.Singer_ID = T2.Singer_ID",
                                schema)
    assert "T1.Singer_ID = T1.Singer_ID" not in fixed.sql


@pytest.mark.parametrize("bug", [AttributeError, TypeError, KeyError])
def test_a_bug_in_the_rules_is_raised_not_read_as_no_repair(schema, monkeypatch, bug) -> None:
    # "no single reading" is what sqlglot's scope analysis or a schema lookup reports; a programming error in
    # the rules must surface in tests instead of quietly switching the repair off.
    import sqlweave.sql.repair as repair

    def broken(*_args: object) -> None:
        raise bug("a bug")

    monkeypatch.setattr(repair, "_fix_columns", broken)
    with pytest.raises(bug):
        repair_schema_links("SELECT T2.Name FROM singer AS T1 JOIN concert AS T2", schema)


def test_rules_do_not_fail_on_broken_names(schema) -> None:
    # Names misspelt, qualifiers dropped or swapped, tables renamed: each gives a repair or none, never an error.
    for sql in ["SELECT T2.Name FROM singer AS T1 JOIN concert AS T2 ON T1.Singer_ID = T2.Singer_ID",
                "SELECT Nam FROM singers WHERE Ag > 3", "SELECT T9.x FROM singer AS T1",
                "SELECT count(*) FROM (SELECT Name FROM singr) AS sub GROUP BY sub.Nme",
                "WITH c AS (SELECT Name FROM singer) SELECT c.Age FROM c JOIN concert ON c.id = concert.x"]:
        assert repair_schema_links(sql, schema).sql


def test_schemas_are_dropped_on_sqlite_only(schema) -> None:
    sql = "SELECT Name FROM music.singer"
    assert repair_schema_links(sql, schema).changes == ["table music.singer -> singer"]
    assert not repair_schema_links(sql, schema, "postgres").changed  # a real schema on a server: not guessed
