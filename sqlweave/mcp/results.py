"""What the MCP tools return: pydantic models of structured results (the schemas the tools declare), and the
cells of their rows as JSON can carry them.

>>> QueryRows(database="shop", rows=[[1]], row_count=1).model_dump()["row_count"]
1
"""

from typing import Any

from pydantic import BaseModel, Field

from ..answer_schema import AnswerSchema, ErrorSchema, ReadingSchema
from ..cells import json_cell
from ..errors import SqlweaveError
from ..text import SHOWN_BYTES


class ErrorInfo(ErrorSchema):
    """A typed sqlweave error, as data: what went wrong and what to do about it (the same at every door)."""

    @classmethod
    def from_error(cls, err: SqlweaveError) -> "ErrorInfo":
        return cls(code=err.code, message=err.message, hint=err.hint, retryable=err.retryable)


class DatabaseInfo(BaseModel):
    """One configured database, as a client may know it (never its path or URL)."""

    name: str
    description: str = ""
    dialect: str | None = Field(None, description="SQL dialect (sqlite, postgres, duckdb, ...); null if unavailable.")
    available: bool = Field(True, description="False if the database cannot be opened right now.")


class DatabaseList(BaseModel):
    """Result of ``list_databases``."""

    databases: list[DatabaseInfo] = Field(default_factory=list)
    error: ErrorInfo | None = None


class ColumnInfo(BaseModel):
    """A column of a table."""

    name: str
    type: str = ""
    primary_key: bool = False
    nullable: bool = True
    description: str = ""


class ForeignKeyInfo(BaseModel):
    """``table.column`` references ``ref_table.ref_column``."""

    table: str
    column: str
    ref_table: str
    ref_column: str


class TableInfo(BaseModel):
    """A table: its columns, primary key and (when known) row count."""

    name: str
    description: str = ""
    row_count: int | None = None
    primary_key: list[str] = Field(default_factory=list)
    columns: list[ColumnInfo] = Field(default_factory=list)


class SchemaInfo(BaseModel):
    """Result of ``describe_schema``."""

    database: str = ""
    dialect: str = ""
    tables: list[TableInfo] = Field(default_factory=list)
    foreign_keys: list[ForeignKeyInfo] = Field(default_factory=list)
    #: the foreign keys were read from the data: the database declares none
    keys_from_data: bool = False
    #: the schemas its tables were read from, in lookup order, when more than one
    schemas: list[str] = Field(default_factory=list)
    #: tables not read because an earlier schema holds a table of the same name, as ``schema.table``
    shadowed: list[str] = Field(default_factory=list)
    #: how many tables the database has, whatever ``tables`` shows
    total_tables: int = 0
    #: more tables match than ``tables`` shows: pass ``search`` or ``tables`` to see them
    truncated: bool = False
    error: ErrorInfo | None = None


class QueryRows(BaseModel):
    """Result of ``run_sql``: the rows of one read-only query, capped at ``max_rows``."""

    database: str = ""
    sql: str | None = None
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list, description="One list of cell values per row.")
    row_count: int = Field(0, description="Rows returned here (at most max_rows).")
    truncated: bool = Field(False, description="True if the query had more rows than were returned.")
    max_rows: int = 0
    elapsed_s: float | None = None
    error: ErrorInfo | None = None


#: One reading of a question sqlweave is not sure of, as every door gives it.
Reading = ReadingSchema


class AskResult(AnswerSchema):
    """Result of ``ask``: the answer as every door gives it (:class:`~sqlweave.answer_schema.AnswerSchema`: the SQL
    sqlweave wrote, its rows, confidence and cautions), on ``database``, at most ``max_rows`` rows."""

    database: str = ""
    max_rows: int = 0



def cell(value: Any) -> Any:
    """A cell value as JSON can carry it (:func:`~sqlweave.cells.json_cell`), text exactly as stored.

    >>> from datetime import date
    >>> from decimal import Decimal
    >>> [cell(v) for v in (1, 2.5, "x", None, b"\\x00\\xff", Decimal("1.10"), date(2024, 1, 2), float("nan"))]
    [1, 2.5, 'x', None, "X'00ff'", 1.1, '2024-01-02', 'NaN']
    """
    return json_cell(value, max_bytes=SHOWN_BYTES, exact_text=True)


__all__ = ["AskResult", "ColumnInfo", "DatabaseInfo", "DatabaseList", "ErrorInfo", "ForeignKeyInfo", "QueryRows",
           "Reading", "SchemaInfo", "TableInfo", "cell"]
