"""What the schema says of a query's columns: the tables it reads, a column's declared type and its kind.

>>> from sqlweave.schema import Schema, Table, Column
>>> from .base import parse
>>> s = Schema("x", (Table("t", (Column("d", "DATE"), Column("n", "TEXT"))),))
>>> tree = parse("SELECT n FROM t AS a WHERE a.d > 1", "postgres")
>>> tables_read(tree, s), column_is(tree.find(exp.Column), s, tables_read(tree, s), is_text_type)
({'a': 't', 't': 't'}, True)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp

from ...schema import is_composite_type

if TYPE_CHECKING:
    from ...schema import Schema


def tables_read(tree: exp.Expression, schema: "Schema") -> dict[str, str]:
    """Each name or alias of the query's tables (lowercase) -> the schema's table it reads."""
    read: dict[str, str] = {}
    for table in tree.find_all(exp.Table):
        if schema.has_table(table.name):
            real = schema.table(table.name).name
            read[table.alias_or_name.lower()] = real
            read.setdefault(table.name.lower(), real)
    return read


def column_is(node: exp.Expression | None, schema: "Schema", read: dict[str, str],
               kind: Callable[[str], object]) -> bool:
    """Is ``node`` a column whose declared type is known and of ``kind``, whichever table of the query it is from
    (its own table's, or every read table's column of that name when it is not qualified)?"""
    if not isinstance(node, exp.Column):
        return False
    if node.table:
        tables = [read[node.table.lower()]] if node.table.lower() in read else []
    else:
        tables = list(dict.fromkeys(read.values()))
    types = [schema.table(t).column(node.name).type for t in tables if schema.table(t).has_column(node.name)]
    return bool(types) and all(ty and kind(ty) for ty in types)



TEXT_TYPE = re.compile(r"char|text|string|clob|citext|^name$", re.IGNORECASE)


def is_text_type(type_name: str) -> bool:
    """Text that ``LIKE`` and comparisons read as it is: ``TEXT``, ``VARCHAR(20)``; not an array or a struct of it
    (``TEXT[]``, ``VARCHAR[]``, which neither engine compares with a text)."""
    return bool(TEXT_TYPE.search(type_name)) and not is_composite_type(type_name)



DATE_TYPE = re.compile(r"date|time", re.IGNORECASE)

#: Expressions whose value is a date or a time on PostgreSQL and DuckDB.
DATE_VALUES = (exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentTime, exp.DateAdd, exp.DateSub, exp.DateTrunc,
                exp.TimestampTrunc, exp.StrToDate, exp.StrToTime, exp.TsOrDsToDate, exp.TimeStrToTime)



BOOLEAN_TYPE = re.compile(r"^\s*bool(ean)?\s*$", re.IGNORECASE)



NUMBER_TEXT = r"^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$"

