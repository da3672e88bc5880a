"""Parse SQL and check it against a schema with sqlglot's qualifier.

>>> from sqlweave.schema import Schema, Table, Column
>>> s = Schema("x", (Table("singer", (Column("name", "TEXT"), Column("age", "INTEGER"))),))
>>> schema_issues("SELECT nme FROM singer", s)
['unknown column nme']
>>> schema_issues("SELECT name FROM singers", s)
['unknown table singers']
>>> schema_issues("SELECT name FROM singer", s)
[]
"""

from __future__ import annotations

from typing import cast

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, SqlglotError
from sqlglot.optimizer.qualify import qualify

from ..schema import Schema
from ..errors import SQLParseError


def parse_one(sql: str, dialect: str | None = "sqlite") -> exp.Expression:
    """Parse exactly one statement; raise :class:`SQLParseError` with sqlglot's message otherwise."""
    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except SqlglotError as err:
        raise SQLParseError(str(err).splitlines()[0], sql=sql) from err
    if len(trees) != 1:
        raise SQLParseError(f"expected one statement, found {len(trees)}", sql=sql)
    # sqlglot 30 types parse() with its Expr base; every node it parses is a concrete Expression.
    return cast(exp.Expression, trees[0])


def schema_issues(sql: str | exp.Expression, schema: Schema, dialect: str | None = "sqlite") -> list[str]:
    """Tables and columns the SQL names that the schema does not have (empty when it resolves)."""
    tree = parse_one(sql, dialect) if isinstance(sql, str) else sql
    issues: list[str] = []
    cte_names = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        name = table.name
        if name and name.lower() not in cte_names and not schema.has_table(name):
            issues.append(f"unknown table {name}")
    if issues:
        return sorted(set(issues))
    mapping: dict[str, object] = dict(schema.to_sqlglot_mapping())  # qualify() takes dict[str, object]
    try:
        qualify(
            tree.copy(),
            schema=mapping,
            dialect=dialect,
            validate_qualify_columns=True,
            identify=False,
        )
    except OptimizeError as err:
        msg = str(err)
        col = _column_from_message(msg)
        issues.append(f"unknown column {col}" if col else msg.splitlines()[0])
    except (SqlglotError, KeyError, ValueError) as err:  # qualifier limits on exotic SQL: not a schema issue
        del err
    return issues


def _column_from_message(msg: str) -> str | None:
    # sqlglot: "Column '"nme"' could not be resolved" / "Unknown column: nme"
    for marker in ("Column '", "Unknown column: "):
        if marker in msg:
            rest = msg.split(marker, 1)[1]
            return rest.split("' could not")[0].split("'")[0].strip('"` ') if marker == "Column '" else rest.split()[0]
    return None
