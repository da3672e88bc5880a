"""Database access: open read-only, introspect, execute safely, render for prompts."""

from .connection import Database, QueryResult
from .render import RenderedSchema, render_compact, render_create_table, render_schema
from ..schema import Column, ColumnStats, ForeignKey, Schema, Table

__all__ = [
    "Column", "ColumnStats", "Database", "ForeignKey", "QueryResult", "RenderedSchema", "Schema", "Table",
    "render_compact", "render_create_table", "render_schema",
]
