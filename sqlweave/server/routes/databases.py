"""``/api/databases``: the catalog's databases, a database's schema and the questions it suggests."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from ...errors import SqlweaveError
from ...text import well_formed
from .. import models as m
from ..deps import CurrentTenant, State
from ..suggest import suggest_questions
from ..values import json_value
from .responses import ERRORS

router = APIRouter()


@router.get("/api/databases", response_model=m.DatabasesOut, tags=["databases"], responses=ERRORS)
async def databases(state: State) -> dict[str, Any]:
    def describe() -> list[dict[str, Any]]:
        for name in state.catalog.names():
            try:
                state.database(name)
            except SqlweaveError:
                pass  # listed without a dialect; asking about it answers 503
        return state.catalog.describe()

    return {"databases": await run_in_threadpool(describe)}


@router.get("/api/databases/{name}/schema", response_model=m.SchemaOut, tags=["databases"], responses=ERRORS)
async def schema(name: str, state: State, tenant: CurrentTenant,
                 find: str | None = Query(None, max_length=200, description=(
                     "Only the tables whose name or description, or a column's, holds this text (any case), "
                     "with the foreign keys that touch them."))) -> dict[str, Any]:
    def read() -> dict[str, Any]:
        db = state.database(name, tenant)
        s = db.schema()
        total = len(s.tables)
        if find and find.strip():
            s = s.only(t.name for t in s.find(find))
        return {
            "total_tables": total,
            "name": name, "dialect": db.dialect,
            # a tenant sees no whole-table row counts (its row filters may show fewer rows)
            "tables": [{"name": t.name, "description": t.description,
                        "row_count": t.row_count if tenant is None else None,
                        "columns": [{"name": c.name, "type": c.type, "primary_key": c.primary_key,
                                     "description": c.description} for c in t.columns]} for t in s.tables],
            "foreign_keys": [{"table": fk.table, "column": fk.column, "ref_table": fk.ref_table,
                              "ref_column": fk.ref_column} for fk in s.foreign_keys],
            "keys_from_data": s.keys_from_data,
            "schemas": list(s.schemas),
            "shadowed": list(s.shadowed),
        }

    return json_value(await run_in_threadpool(read))


@router.get("/api/databases/{name}/suggestions", response_model=m.SuggestionsOut, tags=["databases"],
            responses=ERRORS)
async def suggestions(name: str, state: State, tenant: CurrentTenant) -> dict[str, Any]:
    key = (name, tenant.name if tenant is not None else None)
    cache = state.suggestions_cache

    def build() -> list[str]:
        db = state.database(name, tenant)
        schema = db.schema()  # read again when the database's tables or columns changed: so are the questions
        if key not in cache or cache[key][0] is not schema:
            cache[key] = (schema, suggest_questions(db))
        return cache[key][1]

    return {"questions": [well_formed(q) for q in await run_in_threadpool(build)]}
