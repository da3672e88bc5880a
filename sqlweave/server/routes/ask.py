"""``/api/ask``, ``/api/ask/stream`` and ``/api/explain``: the routes that wait for the model.

Each takes its place at the model's gate (:class:`~sqlweave.server.gate.ModelGate`) only once the request is
checked; a client that goes away leaves the line, or stops the model at the next stage boundary.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from ...errors import QuestionCancelledError, QuestionTimeoutError, SqlweaveError
from ...llm.base import Message
from ...logs import log_event
from ...pipeline import Answer, TraceEntry
from ...stages.labels import stage_label
from ...text import well_formed
from .. import models as m
from ..deps import CurrentTenant, State
from ..errors import HTTPProblem, error_body, error_dict
from ..gate import Ticket
from ..state import ClientGone
from ..values import json_value, stage_event
from .responses import ERRORS

log = logging.getLogger("sqlweave.server")

router = APIRouter()

_STREAM_DOC: dict[int | str, dict[str, Any]] = {
    200: {"description": "Server-sent events: queued; then, per stage, running (it starts: stage, label), "
                         "progress (each of its samples: done, total) and stage (it is done: seconds, tokens, "
                         "notes); then answer or error.",
          "content": {"text/event-stream": {}}}}


def gone() -> Response:
    """The client went away while waiting: nobody reads this answer, but the access log shows it."""
    return JSONResponse(error_body(HTTPProblem("the client went away", status=499, code="cancelled")),
                        status_code=499)


def sse(event: str, data: Any) -> dict[str, str]:
    """One server-sent event: its name and its data as JSON."""
    return {"event": event, "data": json.dumps(json_value(data), ensure_ascii=False, allow_nan=False)}


@router.post("/api/ask", response_model=m.AnswerOut, tags=["questions"], responses=ERRORS)
async def ask(body: m.AskIn, request: Request, state: State, tenant: CurrentTenant) -> dict[str, Any] | Response:
    received = time.perf_counter()
    job = await state.prepare_ask(body, received, tenant)
    ticket = state.gate.enter()
    try:
        answer = await state.run_model(ticket, state.answer_fn(job), request)
    except ClientGone:
        return gone()
    if isinstance(answer.error, QuestionCancelledError):
        return gone()
    if isinstance(answer.error, QuestionTimeoutError):
        log_event(log, "ask", database=job.database, ok=False, error_code=answer.error.code,
                  model_calls=answer.model_calls, total_s=round(time.perf_counter() - received, 4))
        raise answer.error  # 504, with nothing found in the time the question had
    return await state.finish_ask(job, answer, ticket)


@router.post("/api/ask/stream", tags=["questions"], responses={**_STREAM_DOC, **ERRORS})
async def ask_stream(body: m.AskIn, request: Request, state: State, tenant: CurrentTenant) -> Response:
    from sse_starlette.sse import EventSourceResponse

    received = time.perf_counter()
    job = await state.prepare_ask(body, received, tenant)
    state.gate.check_room()  # a full queue answers 503 before the stream starts

    async def events() -> AsyncIterator[dict[str, str]]:
        loop = asyncio.get_running_loop()
        stages: asyncio.Queue[TraceEntry | str | tuple[str, int, int] | None] = asyncio.Queue()

        def on_stage(entry: TraceEntry) -> None:
            loop.call_soon_threadsafe(stages.put_nowait, entry)

        def on_start(name: str) -> None:
            loop.call_soon_threadsafe(stages.put_nowait, name)

        def on_sample(name: str, done: int, total: int) -> None:
            loop.call_soon_threadsafe(stages.put_nowait, (name, done, total))

        # The place in line is taken here, inside the stream, so that whatever ends the stream (a client
        # gone before the first byte included) runs the ``finally`` that gives it back.
        ticket: Ticket | None = None
        task: asyncio.Future[Answer] | None = None
        try:
            ticket = state.gate.enter()  # filled up since the check: an ``error`` event with code busy
            yield sse("queued", {"position": ticket.position})
            task = asyncio.ensure_future(state.run_model(ticket, state.answer_fn(job, on_stage, on_start,
                                                                                 on_sample)))
            task.add_done_callback(lambda _t: loop.call_soon(stages.put_nowait, None))
            while True:
                entry = await stages.get()
                if entry is None:
                    break
                if isinstance(entry, str):  # a stage starts: the page says what is being done now
                    yield sse("running", {"stage": entry, "label": stage_label(entry)})
                    continue
                if isinstance(entry, tuple):  # one of a stage's samples is drawn: "Trying other readings 2/4"
                    name, done, total = entry
                    yield sse("progress", {"stage": name, "label": stage_label(name), "done": done,
                                           "total": total})
                    continue
                yield sse("stage", stage_event(entry))
            answer = task.result()
            if isinstance(answer.error, (QuestionTimeoutError, QuestionCancelledError)):
                yield sse("error", error_dict(answer.error))  # nothing found in the question's time
                return
            while not stages.empty():  # stages that were queued after the sentinel (none expected)
                late = stages.get_nowait()
                if isinstance(late, TraceEntry):
                    yield sse("stage", stage_event(late))
            yield sse("answer", await state.finish_ask(job, answer, ticket))
        except SqlweaveError as err:
            yield sse("error", error_dict(err))
        except (asyncio.CancelledError, ClientGone):
            request.scope.setdefault("state", {})["abandoned"] = True  # the access log says 499
            raise
        except Exception as err:  # noqa: BLE001 - the stream has started: report, never a traceback
            log_event(log, "internal_error", level=logging.ERROR, path="/api/ask/stream",
                      exception=type(err).__name__)
            yield sse("error", {"code": "internal", "message": "the server failed to answer this question",
                                "hint": "Try again; if it keeps failing, the server log has the details."})
        finally:
            if task is None:
                if ticket is not None:
                    ticket.release()
            elif not task.done():
                request.scope.setdefault("state", {})["abandoned"] = True  # the access log says 499
                task.cancel()  # the client went away: leave the line, or stop the model within a second

    return EventSourceResponse(events(), ping=15, headers={"Cache-Control": "no-store",
                                                            "X-Accel-Buffering": "no"})


@router.post("/api/explain", response_model=m.ExplainOut, tags=["questions"], responses=ERRORS)
async def explain(body: m.ExplainIn, request: Request, state: State,
                  tenant: CurrentTenant) -> dict[str, Any] | Response:
    from ...db.render import render_schema
    from ...prompts import render
    from ...sql.classify import ensure_read_only

    sql = state.check_sql(body.sql)
    question = (body.question or "").strip()
    if len(question) > state.settings.max_question_chars:
        from ...stages.check_question import question_too_long

        raise question_too_long(len(question), state.settings.max_question_chars)

    def prompt() -> list[Message]:
        db = state.database(body.database, tenant)
        ensure_read_only(sql, db.dialect)
        system, user = render("explain", schema=render_schema(db.schema()).text,
                              question=question or "(none given: say only what the query computes)", sql=sql)
        return [Message("system", system), Message("user", user)]

    messages = await run_in_threadpool(prompt)
    ticket = state.gate.enter()
    try:
        text = await state.run_model(ticket, lambda _c: state.llm.complete(
            messages, temperature=0.0, max_tokens=200).text.strip(), request)
    except ClientGone:
        return gone()
    return {"explanation": well_formed(text)}
