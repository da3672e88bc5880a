"""Transpiling model SQL to the database's dialect (the live engines run it in tests/db)."""

from __future__ import annotations

import pytest

from sqlweave.schema import Column, Schema, Table
from sqlweave.errors import RefusedStatementError
from sqlweave.sql.classify import ensure_read_only, is_read_only
from sqlweave.sql.extract import extract_sql
from sqlweave.sql.transpile import (
    MANY_ROWS,
    fix_case,
    for_schema,
    numbered_fields,
    subqueries_as_sets,
    text_dates,
    text_numbers,
    to_dialect,
)

SQLITE_TEXTS = [
    "SELECT strftime('%Y', d) FROM t",
    "SELECT `name` FROM singer LIMIT 1, 2",
    "SELECT IFNULL(a, 0), date('now'), julianday(d) FROM t",
    "select count(*) from singer",
    "SELECT name FROM t WHERE name = 'x' COLLATE NOCASE",
    "SELECT TOP 3 name FROM singer",
]


@pytest.mark.parametrize("sql", SQLITE_TEXTS)
def test_sqlite_sql_on_sqlite_is_never_touched(sql: str) -> None:
    assert to_dialect(sql, "sqlite") is sql
    assert to_dialect(sql, None) is sql


def test_extract_on_sqlite_returns_the_models_text_exactly() -> None:
    text = "Here:\n```sql\nselect `Name` from singer where strftime('%Y', d) = '2014' limit 1, 2;\n```"
    assert extract_sql(text, "sqlite") == "select `Name` from singer where strftime('%Y', d) = '2014' limit 1, 2"


@pytest.mark.parametrize("sql,target,expected", [
    ("SELECT strftime('%Y', d) FROM t", "postgres", "SELECT TO_CHAR(CAST(d AS TIMESTAMP), 'YYYY') FROM t"),
    ("SELECT strftime('%Y', d) FROM t", "duckdb", "SELECT STRFTIME(CAST(d AS TIMESTAMP), '%Y') FROM t"),
    ("SELECT `name` FROM singer", "postgres", "SELECT name FROM singer"),
    ("SELECT `order`, `Name` FROM `user`", "postgres", 'SELECT "order", Name FROM "user"'),
    ("SELECT name FROM singer LIMIT 1, 2", "postgres", "SELECT name FROM singer LIMIT 2 OFFSET 1"),
    ("SELECT TOP 3 name FROM singer ORDER BY age DESC", "duckdb", "SELECT name FROM singer ORDER BY age DESC LIMIT 3"),
    ("SELECT IFNULL(a, 0) FROM t", "postgres", "SELECT COALESCE(a, 0) FROM t"),
    ("SELECT date('now')", "duckdb", "SELECT CURRENT_DATE"),
    ("SELECT date(d, '+1 day') FROM t", "postgres", "SELECT CAST(CAST(d AS TIMESTAMP) + INTERVAL '+1 DAY' AS DATE) FROM t"),
    ("SELECT a || b, CONCAT(a, b) FROM t", "postgres", "SELECT a || b, CONCAT(a, b) FROM t"),
    ("SELECT group_concat(name) FROM t", "postgres", "SELECT STRING_AGG(name, ',') FROM t"),
    # The target's own SQL comes back as written (or as sqlglot spells the same tree: x::date is CAST).
    ("SELECT EXTRACT(YEAR FROM d) FROM t WHERE n ILIKE '%a%'", "postgres",
     "SELECT EXTRACT(YEAR FROM d) FROM t WHERE n ILIKE '%a%'"),
    ("SELECT d::date FROM t", "postgres", "SELECT CAST(d AS DATE) FROM t"),
    ("SELECT strftime(d, '%Y') FROM t", "duckdb", "SELECT strftime(d, '%Y') FROM t"),
    ("select count(*) from singer", "duckdb", "select count(*) from singer"),
])
def test_foreign_sql_is_written_in_the_target_dialect(sql: str, target: str, expected: str) -> None:
    assert to_dialect(sql, target) == expected


def test_extract_finds_sql_only_another_dialect_parses() -> None:
    assert extract_sql("```sql\nSELECT TOP 2 name FROM singer\n```", "postgres") == "SELECT name FROM singer LIMIT 2"
    assert extract_sql("SELECT `name` FROM singer", "duckdb") == 'SELECT "name" FROM singer'
    assert extract_sql("SELECT `name` FROM singer", "postgres", transpile=False) == "SELECT `name` FROM singer"


def test_unreadable_sql_is_left_for_the_database_to_refuse() -> None:
    assert to_dialect("SELECT FROM WHERE (((", "postgres") == "SELECT FROM WHERE ((("


def test_fix_case_quotes_only_what_postgres_would_not_find() -> None:
    s = Schema("x", (Table("Customer", (Column("Id"), Column("city"), Column("Total"))),), dialect="postgres")
    assert fix_case("SELECT Id, city FROM customer", s) == 'SELECT "Id", city FROM "Customer"'
    assert fix_case('SELECT "id" FROM "customer"', s) == 'SELECT "Id" FROM "Customer"'
    # Aliases the query defines, and names that already resolve, stay as written.
    same = 'SELECT count(*) AS total FROM "Customer" ORDER BY total'
    assert fix_case(same, s) == same
    assert fix_case("SELECT Id FROM customer", s, "duckdb") == "SELECT Id FROM customer"


VISITS = Schema("x", (
    Table("visit", (Column("id", "INTEGER"), Column("day", "TEXT"), Column("seen", "DATE"), Column("at", "VARCHAR(20)"))),
    Table("person", (Column("id", "INTEGER"), Column("day", "TIMESTAMP"), Column("born", "TEXT"))),
), dialect="postgres")


@pytest.mark.parametrize("sql,expected", [
    ("SELECT id FROM visit WHERE day >= CURRENT_DATE - INTERVAL '7 days'",
     "SELECT id FROM visit WHERE CAST(day AS TIMESTAMP) >= CURRENT_DATE - INTERVAL '7 DAYS'"),
    ("SELECT id FROM visit WHERE seen < at",  # the text side is cast, whichever side it is on
     "SELECT id FROM visit WHERE seen < CAST(at AS TIMESTAMP)"),
    ("SELECT v.id FROM visit AS v JOIN person AS p ON v.id = p.id WHERE v.day BETWEEN p.day AND NOW()",
     "SELECT v.id FROM visit AS v JOIN person AS p ON v.id = p.id WHERE CAST(v.day AS TIMESTAMP) BETWEEN p.day "
     "AND CURRENT_TIMESTAMP"),
    ("SELECT id FROM visit WHERE (day) = CAST('2020-01-01' AS DATE)",
     "SELECT id FROM visit WHERE (CAST(day AS TIMESTAMP)) = CAST('2020-01-01' AS DATE)"),
])
def test_text_dates_casts_text_compared_with_a_date(sql: str, expected: str) -> None:
    assert text_dates(sql, VISITS, "postgres") == expected
    assert text_dates(sql, VISITS, "duckdb").startswith("SELECT")


@pytest.mark.parametrize("sql", [
    "SELECT id FROM visit WHERE day >= '2020-01-01'",  # text with text: runs as it is
    "SELECT id FROM visit WHERE seen >= CURRENT_DATE - 7",  # a date column already
    "SELECT id FROM visit WHERE day = at",
    "SELECT v.id FROM visit AS v, person AS p WHERE day > p.born",  # day is text in one table, a date in the other
    "SELECT id FROM visit WHERE nothing > CURRENT_DATE",  # a name the schema does not know
])
def test_text_dates_leaves_what_would_run_or_is_unknown(sql: str) -> None:
    assert text_dates(sql, VISITS, "postgres") == sql


@pytest.mark.parametrize("sql,expected", [
    ("SELECT id FROM visit WHERE id = TO_CHAR(seen, 'YYYY')",  # a number column: the field is a number
     "SELECT id FROM visit WHERE id = CAST(TO_CHAR(seen, 'YYYY') AS INT)"),
    ("SELECT id FROM visit WHERE (TO_CHAR(seen, 'MM')) < visit.id",
     "SELECT id FROM visit WHERE CAST(TO_CHAR(seen, 'MM') AS INT) < visit.id"),
    ("SELECT id FROM visit WHERE day = TO_CHAR(seen, 'YYYY')", None),  # a text column: text with text
    ("SELECT id FROM visit WHERE id = TO_CHAR(seen, 'YYYY-MM')", None),  # not one number
    ("SELECT id FROM visit WHERE id + 1 = TO_CHAR(seen, 'YYYY')", None),  # no column: SQLite compares as text too
])
def test_numbered_fields_compare_a_date_field_with_a_number_column(sql: str, expected: str | None) -> None:
    assert numbered_fields(sql, VISITS, "postgres") == (expected or sql)
    assert numbered_fields(sql, VISITS, "sqlite") == sql


@pytest.mark.parametrize("type_", ["INTERVAL", "point", "int4range", "INTEGER[]", "STRUCT(a INTEGER)"])
def test_types_named_with_a_number_word_are_not_numbers(type_: str) -> None:
    # Their names hold "int", but a value is not one number: a date field compared with one is not cast to a number.
    s = Schema("x", (Table("visit", (Column("seen", "DATE"), Column("wait", type_), Column("n", "BIGINT"))),),
               dialect="postgres")
    sql = "SELECT seen FROM visit WHERE wait = TO_CHAR(seen, 'MM')"
    assert numbered_fields(sql, s, "postgres") == sql
    assert numbered_fields(sql.replace("wait", "n"), s, "postgres") != sql.replace("wait", "n")
    assert text_numbers("SELECT avg(wait) FROM visit", s, "postgres") == "SELECT avg(wait) FROM visit"
    assert not Column("wait", type_).is_numeric and Column("n", "BIGINT").is_numeric


CARS = Schema("cars", (
    Table("car", (Column("id", "INTEGER"), Column("hp", "TEXT"), Column("mpg", "character varying"),
                  Column("weight", "REAL"), Column("made", "DATE"), Column("name", "TEXT"))),
), dialect="postgres")


@pytest.mark.parametrize("sql,expected", [
    ("SELECT AVG(hp) FROM car", "SELECT AVG(TRY_CAST(hp AS DOUBLE)) FROM car"),
    ("SELECT SUM(DISTINCT mpg) FROM car", "SELECT SUM(DISTINCT TRY_CAST(mpg AS DOUBLE)) FROM car"),
    ("SELECT id FROM car WHERE hp > 150", "SELECT id FROM car WHERE TRY_CAST(hp AS DOUBLE) > 150"),
    ("SELECT id FROM car WHERE -5 < (hp)", "SELECT id FROM car WHERE -5 < (TRY_CAST(hp AS DOUBLE))"),
    ("SELECT id FROM car WHERE weight / 20 >= mpg", "SELECT id FROM car WHERE weight / 20 >= TRY_CAST(mpg AS DOUBLE)"),
    ("SELECT id FROM car WHERE hp BETWEEN 100 AND 200", "SELECT id FROM car WHERE TRY_CAST(hp AS DOUBLE) BETWEEN 100 AND 200"),
    ("SELECT id FROM car WHERE mpg IN (18, 20)", "SELECT id FROM car WHERE TRY_CAST(mpg AS DOUBLE) IN (18, 20)"),
    ("SELECT hp * 2 FROM car", "SELECT TRY_CAST(hp AS DOUBLE) * 2 FROM car"),
    ("SELECT id FROM car WHERE hp > (SELECT MAX(weight) FROM car)",
     "SELECT id FROM car WHERE TRY_CAST(hp AS DOUBLE) > (SELECT MAX(weight) FROM car)"),
    ("SELECT id FROM car WHERE hp > (SELECT AVG(hp) FROM car)",  # both sides: the average is a number once read
     "SELECT id FROM car WHERE TRY_CAST(hp AS DOUBLE) > (SELECT AVG(TRY_CAST(hp AS DOUBLE)) FROM car)"),
])
def test_text_numbers_reads_text_used_as_a_number_as_one(sql: str, expected: str) -> None:
    assert text_numbers(sql, CARS, "duckdb") == expected
    on_postgres = text_numbers(sql, CARS, "postgres")
    assert "TRY_CAST" not in on_postgres and "~ '^" in on_postgres and "AS DECIMAL) END" in on_postgres
    assert text_numbers(sql, CARS, "sqlite") == sql  # SQLite runs it as it is
    assert text_numbers(sql, CARS, "mysql") == sql  # MySQL converts by itself


@pytest.mark.parametrize("sql", [
    "SELECT MAX(hp), MIN(mpg) FROM car ORDER BY hp",  # runs: text order, as on SQLite
    "SELECT id FROM car WHERE hp = '150'",  # text with text
    "SELECT id FROM car WHERE hp = mpg",
    "SELECT id FROM car WHERE name LIKE '1%'",
    "SELECT id FROM car WHERE hp > made",  # a date is no number
    "SELECT id FROM car WHERE weight > 3000 AND id IN (1, 2)",  # number columns
    "SELECT id FROM car WHERE hp IN ('1', 2)",  # not numbers only
    "SELECT SUM(weight) FROM car",
    "SELECT id FROM car WHERE weight > (SELECT MAX(hp) FROM car)",  # the largest text, in text order: no number
    "SELECT id FROM car WHERE nothing > 5",  # a name the schema does not know
])
def test_text_numbers_leaves_what_would_run_or_is_unknown(sql: str) -> None:
    assert text_numbers(sql, CARS, "postgres") == sql
    assert text_numbers(sql, CARS, "duckdb") == sql


def test_a_text_that_spells_no_number_is_read_as_null_on_postgres() -> None:
    import re

    pattern = re.search(r"~ '([^']+)'", text_numbers("SELECT AVG(hp) FROM car", CARS, "postgres")).group(1)
    spelled = [t for t in ["120", " 85 ", "-3.5", ".5", "1e3", "4.", "n/a", "null", "", "1,200", "12a", "--1"]
               if re.search(pattern, t)]
    assert spelled == ["120", " 85 ", "-3.5", ".5", "1e3", "4."]


@pytest.mark.parametrize("sql,expected", [
    ("SELECT name FROM emp WHERE dept = (SELECT id FROM dept WHERE name LIKE 'S%')",
     "SELECT name FROM emp WHERE dept IN (SELECT id FROM dept WHERE name LIKE 'S%')"),
    ("SELECT name FROM emp WHERE (SELECT id FROM dept) = emp.dept AND age > 30",
     "SELECT name FROM emp WHERE emp.dept IN (SELECT id FROM dept) AND age > 30"),
    ("SELECT name FROM emp WHERE dept <> (SELECT id FROM dept)",
     "SELECT name FROM emp WHERE NOT dept IN (SELECT id FROM dept)"),
    ("SELECT name FROM emp WHERE dept IN (SELECT d FROM x WHERE d = (SELECT id FROM dept))",
     "SELECT name FROM emp WHERE dept IN (SELECT d FROM x WHERE d IN (SELECT id FROM dept))"),
])
def test_subqueries_of_several_rows_read_as_sets(sql: str, expected: str) -> None:
    assert subqueries_as_sets(sql, "postgres") == expected


@pytest.mark.parametrize("sql", [
    "SELECT name FROM emp WHERE age > (SELECT AVG(age) FROM emp)",  # a comparison no set answers
    "SELECT name, (SELECT id FROM dept) FROM emp",  # a value in the select list
    "SELECT name FROM emp WHERE dept = 3",
    "SELECT FROM (((",
])
def test_subqueries_as_sets_leaves_other_sql(sql: str) -> None:
    assert subqueries_as_sets(sql, "postgres") == sql


def test_the_engines_messages_for_a_subquery_of_several_rows_are_known() -> None:
    for message in ["more than one row returned by a subquery used as an expression",
                    "Invalid Input Error: More than one row returned by a subquery used as an expression - scalar "
                    "subqueries can only return a single row.",
                    "(1242, 'Subquery returns more than 1 row')"]:
        assert MANY_ROWS.search(message)
    assert not MANY_ROWS.search("syntax error at or near \"row\"")


def test_text_dates_and_for_schema_leave_sqlite_alone() -> None:
    sql = "SELECT id FROM visit WHERE day >= CURRENT_DATE"
    assert text_dates(sql, VISITS, "sqlite") == sql
    assert for_schema(sql, VISITS, "sqlite") == sql
    assert for_schema("SELECT FROM (((", VISITS, "postgres") == "SELECT FROM ((("


def test_for_schema_keeps_quoted_names_under_a_policy() -> None:
    sql = 'SELECT id FROM visit WHERE "secret" = 1'
    assert for_schema(sql, VISITS, "postgres") == "SELECT id FROM visit WHERE 'secret' = 1"
    assert for_schema(sql, VISITS, "postgres", strings=False) == sql


@pytest.mark.parametrize("sql", [
    "SELECT replace(name, 'a', 'b') FROM singer",
    "SELECT current_setting('TimeZone')",
    "SELECT currval('s')",
])
def test_reads_that_look_like_writes_are_accepted(sql: str) -> None:
    assert is_read_only(sql, "postgres") and is_read_only(sql, "duckdb")


def test_replace_into_is_still_refused() -> None:
    with pytest.raises(RefusedStatementError):
        ensure_read_only("REPLACE INTO singer (name) VALUES ('x')")


@pytest.mark.parametrize("dialect,sql", [
    ("postgres", "SELECT pg_sleep_for('5 minutes')"),
    ("postgres", "SELECT lo_create(0)"),
    ("postgres", "SELECT dblink_connect('x')"),
    ("postgres", "SELECT pg_advisory_lock(1)"),
    ("postgres", "SELECT ts_stat('SELECT 1')"),
    ("postgres", "SELECT pg_catalog.pg_read_file('x')"),
    ("duckdb", "SELECT * FROM read_ndjson('x')"),
    ("duckdb", "SELECT * FROM parquet_scan('x')"),
    ("duckdb", "SELECT * FROM query('DELETE FROM t')"),
    ("duckdb", "SELECT * FROM 'data.csv'"),
    ("duckdb", "SELECT getenv('HOME')"),
    (None, "SELECT * FROM read_ndjson('x')"),
    (None, "SELECT lo_create(0)"),
])
def test_engine_functions_with_side_effects_are_refused(dialect: str | None, sql: str) -> None:
    with pytest.raises(RefusedStatementError):
        ensure_read_only(sql, dialect)


def test_sqlite_keeps_its_own_function_names() -> None:
    # A table function of DuckDB's is an ordinary name on SQLite.
    assert is_read_only("SELECT query FROM log", "sqlite") and is_read_only("SELECT read_ndjson(x) FROM t", "sqlite")
