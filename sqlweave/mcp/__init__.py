"""The MCP server door: the operator's databases as read-only tools for an MCP client.

An assistant or an IDE that speaks the Model Context Protocol gets four tools over the databases of a
:class:`~sqlweave.catalog.Catalog` (a client only ever names a configured database, never a path or URL):

``list_databases()``
    names, descriptions and SQL dialects of the configured databases.
``describe_schema(database)``
    tables, columns, types, keys and descriptions, as structured data.
``ask(database, question)``
    the question answered by the pipeline: ``{sql, columns, rows, row_count, truncated, confidence}``.
``run_sql(database, sql)``
    the client's own SQL, with the same safety checks: one read statement on a read-only connection.

Every tool is annotated ``readOnlyHint=True``, ``destructiveHint=False`` and ``openWorldHint=False``.
Results are structured (``structuredContent``, mirrored as JSON text); rows are capped at ``max_rows``
(``truncated`` says when more existed); cell values, names and SQL in results are untrusted data
from the database, never instructions. A typed :class:`~sqlweave.errors.SqlweaveError` becomes a tool
error (``isError``) whose structured content is ``{"error": {"code", "message", "hint", "retryable"}}``.
The model is one in-process resource: one ``ask`` runs at a time, while ``run_sql`` and the other
tools run alongside it.

From the command line (stdio for a client that spawns the server, or streamable HTTP on 127.0.0.1)::

    python -m sqlweave.mcp --db shop=/data/shop.sqlite --model local:0.5b
    python -m sqlweave.mcp --demo --transport http --port 8765      # http://127.0.0.1:8765/mcp

From Python, the same four tools without a transport (what the MCP tools call):

>>> from sqlweave.catalog import Catalog
>>> from sqlweave.llm.fake import FakeLLM
>>> tools = SqlweaveTools(Catalog.demo(), FakeLLM(["SELECT COUNT(*) FROM customers"]), max_rows=3)
>>> [(d.name, d.dialect) for d in tools.list_databases().databases]
[('shop', 'sqlite')]
>>> answer = tools.ask("shop", "How many customers are there?")
>>> answer.sql, answer.rows
('SELECT COUNT(*) FROM customers', [[60]])
>>> page = tools.run_sql("shop", "SELECT customer_id FROM customers ORDER BY customer_id")
>>> page.rows, page.row_count, page.truncated
([[1], [2], [3]], 3, True)
>>> try:
...     tools.run_sql("shop", "DROP TABLE customers")
... except SqlweaveError as err:
...     print(err.code)
refused_statement

And as an MCP server (``build_server`` needs the ``mcp`` extra: ``pip install 'sqlweave[mcp]'``)::

    server = build_server(Catalog.demo(), get_llm("local:0.5b", cache=True))
    run(Catalog.demo(), get_llm("local"), transport="http", port=8765)
"""

from ..errors import SqlweaveError
from .command import build_catalog, main
from .results import (AskResult, ColumnInfo, DatabaseInfo, DatabaseList, ErrorInfo, ForeignKeyInfo, QueryRows,
                      Reading, SchemaInfo, TableInfo)
from .server import INSTRUCTIONS, LOOPBACK_HOSTS, MAX_SQL_CHARS, UNTRUSTED, InvalidArgumentsError, build_server, run
from .tools import DEFAULT_MAX_ROWS, MAX_DESCRIBED_TABLES, SqlweaveTools

__all__ = [
    "DEFAULT_MAX_ROWS", "INSTRUCTIONS", "LOOPBACK_HOSTS", "MAX_DESCRIBED_TABLES", "MAX_SQL_CHARS", "UNTRUSTED",
    "AskResult", "ColumnInfo", "DatabaseInfo", "DatabaseList", "ErrorInfo", "ForeignKeyInfo", "InvalidArgumentsError",
    "QueryRows", "Reading", "SchemaInfo", "SqlweaveError", "SqlweaveTools", "TableInfo", "build_catalog",
    "build_server", "main", "run",
]
