"""``/api/conversations``: the caller's conversations, one with its turns, and deleting one."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from .. import models as m
from ..conversations import check_id
from ..deps import Owner, State
from .responses import ERRORS

router = APIRouter()


# The function is not named conversations (the view's class and this module are); name= keeps the route's name
# (and so its operationId).
@router.get("/api/conversations", response_model=m.ConversationsOut, tags=["conversations"], responses=ERRORS,
            name="conversations")
async def list_conversations(state: State, owner: Owner, database: str | None = Query(None, max_length=64),
                             limit: int = Query(50, ge=1, le=200)) -> dict[str, Any]:
    if database:
        state.catalog.entry(database)
    items = await run_in_threadpool(state.conversations.summaries, database or None, limit, owner)
    return {"conversations": items}


@router.get("/api/conversations/{conversation_id}", response_model=m.ConversationOut, tags=["conversations"],
            responses=ERRORS)
async def conversation(conversation_id: str, state: State, owner: Owner) -> dict[str, Any]:
    check_id(conversation_id)
    return await run_in_threadpool(state.conversations.show, conversation_id, owner)


@router.delete("/api/conversations/{conversation_id}", status_code=204, response_class=Response,
               tags=["conversations"], responses=ERRORS)
async def delete_conversation(conversation_id: str, state: State, owner: Owner) -> Response:
    check_id(conversation_id)
    await run_in_threadpool(state.conversations.delete, conversation_id, owner)
    return Response(status_code=204)
