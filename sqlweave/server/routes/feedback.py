"""``/api/feedback``: a verdict on an answer this server gave, and the example it may add (to the pool, or to
the list the operator reviews)."""

from __future__ import annotations

import datetime as dt
import logging
import math
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from ...errors import SqlweaveError
from ...logs import log_event
from .. import models as m
from ..deps import CurrentTenant, State
from ..errors import RateLimitedError, UnknownAnswerError
from ..security import client_id
from ..state import ServerState
from ..values import json_value
from .responses import ERRORS

log = logging.getLogger("sqlweave.server")

router = APIRouter()


@router.post("/api/feedback", response_model=m.FeedbackOut, tags=["questions"], responses=ERRORS)
async def feedback(body: m.FeedbackIn, request: Request, state: State, tenant: CurrentTenant) -> dict[str, Any]:
    from ...engine import check_example
    from ...feedback import PendingExamples
    from ...retrieval.pool import add_user_example

    owner = tenant.name if tenant is not None else None
    if not state.seal.verify(body.answer_id, database=body.database, owner=owner, question=body.question,
                             sql=body.sql):
        log_event(log, "feedback_refused", level=logging.WARNING, database=body.database,
                  answer_id=body.answer_id, reason="unknown_answer")
        raise UnknownAnswerError("this server gave no such answer to this caller",
                                 hint="Send feedback with the answer_id, question and sql of an answer "
                                      "/api/ask gave you, unchanged (a correction goes in corrected_sql).")
    if state.feedback_limiter is not None:
        wait = state.feedback_limiter.check(f"tenant:{owner}" if owner else client_id(dict(request.scope)))
        if wait > 0:
            limited = RateLimitedError("too much feedback from this caller")
            limited.retry_after = math.ceil(wait)  # type: ignore[attr-defined]
            raise limited
    question = body.question.strip()
    if body.corrected_sql is not None:
        state.check_sql(body.corrected_sql)
    add = body.corrected_sql if body.corrected_sql is not None else (body.sql if body.verdict == "right"
                                                                     else None)
    corrected = body.corrected_sql is not None and body.corrected_sql.strip() != body.sql.strip()
    origin = "feedback:correction" if corrected else "feedback:right"
    mode = state.settings.feedback_examples
    if mode == "pool" and tenant is not None:
        mode = "pending"  # the pool is shared: one tenant's pairs reach the others' prompts only once reviewed
    remembered = state.recall(body.answer_id)
    entry: dict[str, Any] = {
        "time": dt.datetime.now(dt.timezone.utc).isoformat(), "answer_id": body.answer_id,
        "known_answer": True, "owner": owner, "database": body.database, "question": question,
        "sql": body.sql, "verdict": body.verdict, "corrected_sql": body.corrected_sql,
        "answered_sql": None if remembered is None else remembered.get("sql"), "examples": mode,
    }

    def record() -> tuple[dict[str, Any] | None, bool]:
        db = state.database(body.database, tenant)
        example, pending = None, False
        try:
            if add is not None and mode != "off":
                db_id, names = check_example(db, question, add)  # a read under the guard that runs
                if mode == "pool":
                    with state.feedback_lock:
                        ex = add_user_example(question, add, db_id=db_id, schema_names=names, origin=origin)
                    example = {"question": ex.question, "sql": ex.sql, "db_id": ex.db_id}
                else:
                    p = PendingExamples.of().propose(question, add, db_id=db_id, database=body.database,
                                                     origin=origin, answer_id=body.answer_id, owner=owner,
                                                     schema_names=names)
                    example, pending = {"question": p.question, "sql": p.sql, "db_id": p.db_id}, True
        except SqlweaveError as err:
            entry.update(added=False, pending=False, error_code=err.code)
            log_feedback(state, entry)
            raise
        entry.update(added=example is not None and not pending, pending=pending, error_code=None)
        log_feedback(state, entry)
        return example, pending

    example, pending = await run_in_threadpool(record)
    log_event(log, "feedback", database=body.database, verdict=body.verdict,
              added=example is not None and not pending, pending=pending, answer_id=body.answer_id)
    return {"added": example is not None and not pending, "pending": pending, "example": json_value(example)}


def log_feedback(state: ServerState, entry: dict[str, Any]) -> None:
    """Append one feedback record to the server's feedback log (JSON lines)."""
    from ...files import append_jsonl

    path = state.settings.resolved_feedback_log()
    with state.feedback_lock:
        append_jsonl(path, [json_value(entry)])
