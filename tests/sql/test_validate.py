import pytest

from sqlweave.schema import Column, Schema, Table
from sqlweave.errors import SQLParseError
from sqlweave.sql.validate import parse_one, schema_issues

SCHEMA = Schema(
    "s",
    (
        Table("singer", (Column("singer_id", "INT"), Column("name", "TEXT"), Column("age", "INT"))),
        Table("concert", (Column("concert_id", "INT"), Column("singer_id", "INT"), Column("year", "TEXT"))),
    ),
)


@pytest.mark.parametrize(
    "sql,issues",
    [
        ("SELECT name FROM singer", []),
        ("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id", []),
        ("SELECT Name FROM SINGER", []),
        ("WITH x AS (SELECT age FROM singer) SELECT age FROM x", []),
        ("SELECT nme FROM singer", ["unknown column nme"]),
        ("SELECT name FROM singers", ["unknown table singers"]),
        ("SELECT T2.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id", ["unknown column"]),
    ],
)
def test_schema_issues(sql: str, issues: list[str]) -> None:
    got = schema_issues(sql, SCHEMA)
    assert len(got) == len(issues)
    for g, want in zip(got, issues):
        assert want in g


def test_parse_one_rejects_two_statements() -> None:
    with pytest.raises(SQLParseError):
        parse_one("SELECT 1; SELECT 2")
