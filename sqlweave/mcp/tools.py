"""The four tools without a transport: :class:`SqlweaveTools`, callable from Python (what the MCP tools call).

>>> from sqlweave.catalog import Catalog
>>> from sqlweave.llm.fake import FakeLLM
>>> SqlweaveTools(Catalog.demo(), FakeLLM()).run_sql("shop", "SELECT 1 AS one").rows
[[1]]
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Mapping

from ..catalog import Catalog, UnknownDatabaseError
from ..database import Database
from ..db.connection import QueryResult
from ..engine import Engine
from ..errors import ConfigurationError, SqlweaveError
from ..llm.base import LLM
from ..pipeline import Pipeline
from .results import (AskResult, ColumnInfo, DatabaseInfo, DatabaseList, ForeignKeyInfo, QueryRows, SchemaInfo,
                      TableInfo, cell)

logger = logging.getLogger("sqlweave.mcp")

#: Rows a tool returns at most, unless the server is built with another cap.
DEFAULT_MAX_ROWS = 200
#: Tables ``describe_schema`` returns at most (a schema of hundreds of tables would fill an assistant's context):
#: ``truncated`` says there are more, and ``search`` and ``tables`` reach them.
MAX_DESCRIBED_TABLES = 100


class SqlweaveTools:
    """What the MCP tools do, callable from Python: typed results, typed errors (thread-safe).

    ``ask`` holds a lock around the model (one question at a time); the other methods never wait for it.
    Every result has at most ``max_rows`` rows. A database the operator configured but that cannot be
    opened raises its typed error with a message that names the database, never its path or URL. ``params`` binds
    the access policies' row-filter parameters for every tool call (the one user an MCP client speaks for).
    """

    def __init__(self, catalog: Catalog, llm: LLM, pipeline: Pipeline | str = "default",
                 max_rows: int = DEFAULT_MAX_ROWS, params: Mapping[str, Any] | None = None) -> None:
        from ..presets import build_pipeline

        if max_rows <= 0:
            raise ConfigurationError("max_rows must be positive", hint="Pass a row cap of 1 or more.")
        self.catalog = catalog
        self.llm = llm
        self.pipeline = pipeline if isinstance(pipeline, Pipeline) else build_pipeline(pipeline)
        self.max_rows = max_rows
        self.params = dict(params or {})
        self.model_lock = threading.Lock()

    def database(self, name: str) -> Database:
        """The open handle for ``name`` (bound to ``params`` when its policy filters rows); a failure to open names
        the database, not its target."""
        try:
            db = self.catalog.database(name)
        except UnknownDatabaseError:
            raise
        except SqlweaveError as err:
            logger.warning("database %r could not be opened: %s", name, err)
            raise type(err)(f"database {name!r} is configured but cannot be opened",
                            hint="Check the server's configuration and log; other databases still work.") from None
        if db.policy is None or not db.policy.parameters:
            return db
        return db.bind({k: v for k, v in self.params.items() if k in db.policy.parameters})

    def list_databases(self) -> DatabaseList:
        """Every configured database with its description and dialect (opened if need be)."""
        out = []
        for item in self.catalog.describe():
            try:
                dialect: str | None = self.database(item["name"]).dialect
                available = True
            except SqlweaveError:
                dialect, available = None, False
            out.append(DatabaseInfo(name=item["name"], description=item["description"], dialect=dialect,
                                    available=available))
        return DatabaseList(databases=out)

    def describe_schema(self, database: str, search: str | None = None,
                        tables: list[str] | None = None) -> SchemaInfo:
        """Tables, columns, types, keys and descriptions of ``database``: only the tables named in ``tables`` (any
        case) and those whose name or description, or a column's, holds ``search`` (any case), when given; at most
        :data:`MAX_DESCRIBED_TABLES` in any case (``truncated`` then says there are more: a narrower search finds
        them). Foreign keys are those from or to the tables shown.

        >>> from sqlweave.catalog import Catalog
        >>> from sqlweave.db.demo import demo_database_path
        >>> from sqlweave.llm import FakeLLM
        >>> tools = SqlweaveTools(Catalog.parse([f"shop={demo_database_path()}"]), FakeLLM())
        >>> [t.name for t in tools.describe_schema("shop", search="EMAIL").tables]
        ['customers']
        """
        schema = self.database(database).schema()
        named = {n.strip().lower() for n in tables or [] if n.strip()}
        term = (search or "").strip()
        found = {t.name for t in schema.find(term)} if term else set()
        chosen = [t for t in schema.tables
                  if (not named and not term) or t.name.lower() in named or t.name in found]
        truncated = len(chosen) > MAX_DESCRIBED_TABLES
        shown = schema.only(t.name for t in chosen[:MAX_DESCRIBED_TABLES])
        return SchemaInfo(
            database=database,
            dialect=schema.dialect,
            tables=[
                TableInfo(name=t.name, description=t.description, row_count=t.row_count,
                          primary_key=list(t.primary_key),
                          columns=[ColumnInfo(name=c.name, type=c.type, primary_key=c.primary_key,
                                              nullable=c.nullable, description=c.description) for c in t.columns])
                for t in shown.tables
            ],
            foreign_keys=[ForeignKeyInfo(table=fk.table, column=fk.column, ref_table=fk.ref_table,
                                         ref_column=fk.ref_column) for fk in shown.foreign_keys],
            keys_from_data=schema.keys_from_data,
            schemas=list(schema.schemas),
            shadowed=list(schema.shadowed),
            total_tables=len(schema.tables),
            truncated=truncated,
        )

    def _rows(self, result: QueryResult) -> dict[str, Any]:
        rows = result.rows[: self.max_rows]
        return {
            "columns": list(result.columns),
            "rows": [[cell(v) for v in row] for row in rows],
            "row_count": len(rows),
            "truncated": result.truncated or len(result.rows) > self.max_rows,
            "max_rows": self.max_rows,
            "elapsed_s": round(result.elapsed_s, 4),
        }

    def run_sql(self, database: str, sql: str, read: str | None = None) -> QueryRows:
        """Run one read-only statement (anything else raises ``RefusedStatementError`` and nothing runs); ``read``
        names the dialect it is written in when not the database's (it is translated first)."""
        db = self.database(database)
        result = db.execute(sql, max_rows=min(self.max_rows, db.max_rows), read=read)
        return QueryRows(database=database, sql=result.sql, **self._rows(result))

    def ask(self, database: str, question: str, min_confidence: float | None = None) -> AskResult:
        """Answer ``question`` on ``database`` with the pipeline; a failure raises its typed error.

        The raised error's ``details["sql"]`` holds the last SQL tried, if any. Below ``min_confidence`` (0 to 1)
        the result is ``unsure`` and lists the question's two leading ``readings``.
        """
        db = self.database(database)
        pipe = self.catalog.pipeline_for(database, self.pipeline)
        with self.model_lock:
            answer = Engine(db, self.llm, pipe).run(question, min_confidence=min_confidence, budget_s=pipe.budget)
        if answer.error is not None or answer.result is None:
            err = answer.error or SqlweaveError("the pipeline produced no result")
            err.details.setdefault("sql", answer.sql)
            raise err
        return AskResult(database=database, max_rows=self.max_rows,
                         **AskResult.fields_of(answer, cell=cell, max_rows=self.max_rows, trace=False))

    def warm_up(self) -> None:
        """Load the embedded model now (under the model lock), and evaluate each database's stable prompt
        (:meth:`Engine.warm_up`), so the first ``ask`` waits for neither. A database that cannot be opened is
        left for its first call to report."""
        target: Any = self.llm
        while hasattr(target, "inner"):  # the response cache wraps the backend
            target = target.inner
        if isinstance(getattr(type(target), "llama", None), property):
            with self.model_lock:
                target.llama  # noqa: B018 - loading is the point
        if not self.llm.keeps_prompts:
            return
        for name in self.catalog.names():
            try:
                pipe = self.catalog.pipeline_for(name, self.pipeline)
                with self.model_lock:
                    warmed = Engine(self.database(name), self.llm, pipe).warm_up()
                logger.info("warm-up of %s: %s", name, "done" if warmed else "nothing to keep")
            except SqlweaveError as err:
                logger.info("warm-up of %s skipped: %s", name, err.code)


__all__ = ["DEFAULT_MAX_ROWS", "MAX_DESCRIBED_TABLES", "SqlweaveTools"]
