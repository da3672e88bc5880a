"""``/api/sql`` and ``/api/sql/csv``: the caller's own read-only SQL, its rows as JSON or as a CSV file."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ...db.connection import QueryResult
from ...text import well_formed
from .. import models as m
from ..deps import CurrentTenant, State
from ..settings import Tenant
from ..state import ServerState
from ..values import chart_out, rows_out
from .responses import ERRORS

router = APIRouter()

_CSV_DOC: dict[int | str, dict[str, Any]] = {200: {"description": "The result as CSV (formula-like cells neutralised unless raw).",
                  "content": {"text/csv": {}}}}


def run_sql(state: ServerState, name: str, sql: str, tenant: Tenant | None, read: str | None = None) -> QueryResult:
    """Run ``sql`` (checked) on the database ``name`` as ``tenant`` sees it."""
    return state.database(name, tenant).execute(state.check_sql(sql), read=read)


def filename(database: str) -> str:
    """The download's file name for a result of ``database``: letters, digits, ``-`` and ``_`` only.

    >>> filename("sales/2024 (eu)")
    'sqlweave-sales-2024--eu-'
    """
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in database)[:40] or "result"
    return f"sqlweave-{safe}"


@router.post("/api/sql", response_model=m.SqlOut, tags=["sql"], responses=ERRORS)
async def sql(body: m.SqlIn, state: State, tenant: CurrentTenant) -> dict[str, Any]:
    result = await run_in_threadpool(run_sql, state, body.database, body.sql, tenant, body.read)
    return {"sql": well_formed(result.sql), "columns": [well_formed(str(c)) for c in result.columns],
            "rows": rows_out(result), "row_count": result.row_count, "truncated": result.truncated,
            "elapsed_s": round(result.elapsed_s, 4), "chart": chart_out(result)}


@router.post("/api/sql/csv", tags=["sql"], response_class=Response, responses={**_CSV_DOC, **ERRORS})
async def sql_csv(body: m.CsvIn, state: State, tenant: CurrentTenant) -> Response:
    from ...export import to_csv

    result = await run_in_threadpool(run_sql, state, body.database, body.sql, tenant, body.read)
    text = to_csv(result.columns, result.rows, raw=body.raw)
    return Response(text.encode("utf-8"), media_type="text/csv; charset=utf-8", headers={
        "Content-Disposition": f'attachment; filename="{filename(body.database)}.csv"',
        "X-Truncated": "true" if result.truncated else "false"})
