"""Database access: connect read-only (one backend class per engine), introspect, render for prompts.

The handle pipelines and doors use, which adds the schema it holds, the knowledge and the access policy, is
:class:`sqlweave.database.Database`; what they ask of it is :mod:`sqlweave.db.protocol`.
"""

from .connection import Connection, QueryResult
from .render import RenderedSchema, render_compact, render_create_table, render_schema
from ..schema import Column, ColumnStats, ForeignKey, Schema, Table

__all__ = [
    "Column", "ColumnStats", "Connection", "ForeignKey", "QueryResult", "RenderedSchema", "Schema", "Table",
    "render_compact", "render_create_table", "render_schema",
]
