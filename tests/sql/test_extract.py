import pytest

from sqlweave.errors import NoSQLInOutputError
from sqlweave.sql.extract import extract_sql, holds_query

CASES = [
    ("fenced with language", "```sql\nSELECT count(*) FROM singer\n```", "SELECT count(*) FROM singer"),
    ("fenced, chatter around", "Sure! Here is the query:\n\n```sql\nSELECT name\nFROM singer\nWHERE age > 30;\n```\n\nThis returns the names.",
     "SELECT name\nFROM singer\nWHERE age > 30"),
    ("fence without language", "```\nSELECT 1\n```", "SELECT 1"),
    ("unterminated fence (cut by max tokens)", "```sql\nSELECT name FROM singer ORDER BY age", "SELECT name FROM singer ORDER BY age"),
    ("plain", "SELECT count(*) FROM singer", "SELECT count(*) FROM singer"),
    ("label prefix", "SQL: SELECT count(*) FROM singer", "SELECT count(*) FROM singer"),
    ("explanation on the next line", "SELECT count(*) FROM singer\nThis query counts all singers in the table.", "SELECT count(*) FROM singer"),
    ("explanation after semicolon", "SELECT count(*) FROM singer; -- counts them. It's simple.", "SELECT count(*) FROM singer"),
    ("trailing comment line", "SELECT name FROM singer\n-- names of singers", "SELECT name FROM singer"),
    ("with-cte", "Answer:\nWITH t AS (SELECT age FROM singer) SELECT avg(age) FROM t", "WITH t AS (SELECT age FROM singer) SELECT avg(age) FROM t"),
    ("prose with 'with' first", "To answer this, start with the singer table.\n```sql\nSELECT name FROM singer\n```", "SELECT name FROM singer"),
    ("semicolon inside a string", "SELECT name FROM singer WHERE name = 'a;b'", "SELECT name FROM singer WHERE name = 'a;b'"),
    ("two fenced blocks: sql first", "```python\nprint(1)\n```\n```sql\nSELECT 2\n```", "SELECT 2"),
    ("lowercase", "select name from singer", "select name from singer"),
    ("destructive statement is extracted for the safety check", "```sql\nDROP TABLE singer;\n```", "DROP TABLE singer"),
    ("select word inside prose, sql later", "I will select the right rows.\nSELECT * FROM singer", "SELECT * FROM singer"),
]


@pytest.mark.parametrize("title,text,expected", CASES, ids=[c[0] for c in CASES])
def test_extracts(title: str, text: str, expected: str) -> None:
    assert extract_sql(text) == expected


@pytest.mark.parametrize("text", ["", "I don't know.", "The answer is 42.", "```\nprint('hello')\n```", "SELECT"])
def test_no_sql(text: str) -> None:
    with pytest.raises(NoSQLInOutputError) as info:
        extract_sql(text)
    assert info.value.details["raw"] == text
    assert info.value.retryable


def test_select_of_scalar_subqueries_is_kept_whole() -> None:
    # A SELECT with no FROM of its own that reads tables through subqueries is the answer, not its first subquery
    # (defog's geography ratio question lost everything after "WHERE LOWER(river_name)").
    sql = ("SELECT CAST((SELECT length FROM river WHERE LOWER(river_name) LIKE '%mississippi%') AS FLOAT) / "
           "NULLIF((SELECT length FROM river WHERE LOWER(river_name) LIKE '%rhine%'), 0) AS ratio")
    assert extract_sql(f"```sql\n{sql};\n```") == sql
    assert extract_sql(f"The ratio is given by {sql}") == sql
    assert "DOUBLE PRECISION" in extract_sql(f"```sql\n{sql}\n```", "postgres")
    # prose that parses as a table-less SELECT still loses to the real statement after it
    assert extract_sql("I will select the right rows.\nSELECT name FROM singer") == "SELECT name FROM singer"


@pytest.mark.parametrize("dialect", ["postgres", "duckdb"])
def test_sql_the_target_reads_only_in_part_is_not_cut_short(dialect: str) -> None:
    # Backticks part-way through: the target's parser reads only `SELECT count(*) FROM event`, which used to be
    # kept as the answer (its WHERE lost). The whole statement, read as SQLite, is the answer.
    sql = "SELECT count(*) FROM event WHERE `city` LIKE 'paris' AND price > 5"
    got = extract_sql(f"```sql\n{sql}\n```", dialect)
    assert "WHERE" in got and "ILIKE 'paris'" in got and "price > 5" in got
    # SQL the target reads whole is kept as it is
    assert extract_sql("```sql\nSELECT name FROM event WHERE price > 5\n```", dialect) == (
        "SELECT name FROM event WHERE price > 5")


@pytest.mark.parametrize("text, dialect, holds", [
    ("Let's walk through the question. We need the singer table and then we", "sqlite", False),
    ("I will select the right rows from it", "sqlite", False),  # parses as SELECT the AS right: prose all the same
    ("", "sqlite", False),
    ("Reasoning first.\n```sql\nSELECT name FROM singer WHERE age > 30\n```", "sqlite", True),
    ("SELECT count(*) FROM singer", "sqlite", True),
    ("SELECT `name` FROM `singer`", "postgres", True),  # what only SQLite's parser reads counts too
])
def test_holds_query_tells_a_query_from_prose_that_happens_to_parse(text: str, dialect: str, holds: bool) -> None:
    assert holds_query(text, dialect) is holds
