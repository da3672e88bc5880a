"""The HTTP API: routes over one model, a catalog of named databases and a conversation store.

Model work (``/api/ask``, ``/api/ask/stream``, ``/api/explain``) goes through the bounded
:class:`~sqlweave.server.gate.ModelGate` and runs in a worker thread; database-only work runs in the
thread pool without waiting for the model. Every error leaves as ``{"error": {"code", "message", "hint"}}``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import json
import logging
import math
import statistics
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, TypeVar

from fastapi import FastAPI, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from .._version import __version__
from ..answer_schema import AnswerSchema
from ..catalog import Catalog
from ..cells import json_cell
from ..chart import NO_CHART, choose_chart
from ..conversation import Conversation
from ..database import Database
from ..db.connection import QueryResult
from ..engine import Engine
from ..feedback import AnswerSeal
from ..errors import (
    DatabaseError,
    InvalidQuestionError,
    MissingDependencyError,
    QuestionCancelledError,
    QuestionTimeoutError,
    SqlweaveError,
)
from ..llm.base import LLM, Message
from ..logs import log_event
from ..pipeline import Answer, Pipeline, TraceEntry
from ..presets import build_pipeline, describe_presets
from ..stages.labels import stage_label
from ..text import SHOWN_BYTES, well_formed
from . import models as m
from .errors import (
    HTTPProblem,
    InvalidRequestError,
    NotFoundError,
    RateLimitedError,
    UnknownAnswerError,
    error_body,
    error_dict,
    install_handlers,
)
from .gate import ModelGate, ServerBusyError, Ticket
from .security import (
    AccessLogMiddleware,
    APIKeyMiddleware,
    BodyLimitMiddleware,
    CatchAllMiddleware,
    RateLimiter,
    RateLimitMiddleware,
    client_id,
    SecurityHeadersMiddleware,
)
from .settings import ServerSettings, Tenant
from .suggest import suggest_questions

log = logging.getLogger("sqlweave.server")
T = TypeVar("T")

#: How often a waiting request checks whether its client is still there (seconds).
_POLL_S = 0.25
_MAX_PIPELINES = 32
#: Answers per preset whose seconds make its running median on this server.
_SERVICE_WINDOW = 50


class _Cancelled(Exception):
    """The client went away: stop the pipeline at the next stage boundary."""


# --- JSON-safe values -----------------------------------------------------------------------------


def json_value(v: Any) -> Any:
    """A value as the HTTP door writes it: :func:`~sqlweave.cells.json_cell`, bytes cut as tables cut them."""
    return json_cell(v, max_bytes=SHOWN_BYTES)


def rows_out(result: QueryResult | None) -> list[list[Any]]:
    return [] if result is None else [[json_value(v) for v in row] for row in result.rows]


def chart_out(result: QueryResult | None) -> dict[str, Any]:
    try:
        chart = choose_chart(result) if result is not None else NO_CHART
    except Exception:  # noqa: BLE001 - a chart is a nicety; never fail an answer over it
        chart = NO_CHART
    return chart.as_dict()


def stage_event(entry: TraceEntry) -> dict[str, Any]:
    d = entry.as_dict()
    return json_value({"label": stage_label(entry.stage), **{k: d[k] for k in (
        "stage", "seconds", "error", "sql", "notes", "prompt_tokens", "completion_tokens")}})


def _stamp(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return dt.datetime.fromtimestamp(v, dt.timezone.utc).isoformat()
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    return str(v)


# --- conversations --------------------------------------------------------------------------------------


class Conversations:
    """The server's views of the conversation store: list, show, delete. Asking in a conversation is
    :class:`sqlweave.conversation.Conversation`'s flow, as at every door (its earlier turns read before the
    question waits for the model, the answer stored after it; a new conversation is made only with its first
    turn, so a refused or abandoned question leaves no empty conversation behind)."""

    def __init__(self, url: str | None) -> None:
        from ..conversation import ConversationStore

        self.store = ConversationStore(url)

    def summaries(self, database: str | None, limit: int = 50, owner: str | None = None) -> list[dict[str, Any]]:
        out = []
        for rec in self.store.list(database=database, limit=limit, owner=owner):
            out.append({"id": str(rec.id), "database": rec.database, "title": well_formed(rec.title or ""),
                        "created_at": _stamp(rec.created_at), "updated_at": _stamp(rec.updated_at),
                        "turn_count": int(rec.turn_count)})
        return out

    def show(self, conversation_id: str, owner: str | None = None) -> dict[str, Any]:
        rec = self.store.get(conversation_id, owner=owner)
        turns = []
        for t in rec.turns:
            turns.append({"number": int(t.number), "question": well_formed(t.question),
                          "sql": None if t.sql is None else well_formed(t.sql), "ok": bool(t.ok),
                          "error_code": t.error_code, "builds_on": t.builds_on,
                          "row_count": t.row_count, "created_at": _stamp(t.created_at)})
        return {"id": str(rec.id), "database": rec.database, "title": well_formed(rec.title or ""), "turns": turns}

    def delete(self, conversation_id: str, owner: str | None = None) -> None:
        self.store.delete(conversation_id, owner=owner)  # unknown or another tenant's -> 404

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if close is not None:
            close()


# --- the server's state ---------------------------------------------------------------------------------


def _tenant(request: Request) -> Tenant | None:
    """The tenant whose API key the request carries (set by the API-key middleware), or ``None``."""
    tenant: Tenant | None = request.scope.get("state", {}).get("tenant")
    return tenant


def _owner(request: Request) -> str | None:
    """Whose conversations the request may see: its tenant's (``None``: every conversation)."""
    tenant = _tenant(request)
    return tenant.name if tenant is not None else None


@dataclass
class _AskJob:
    database: str
    question: str
    engine: Engine
    pipeline: Pipeline
    conversation: Conversation
    earlier: tuple[Any, ...]
    received: float
    owner: str | None = None  # the tenant whose conversation this is
    min_confidence: float | None = None  # below it the answer is unsure and shows its readings
    preset: str = ""  # the preset asked for (the server's default when the request named none)


class ServerState:
    """What the routes share: settings, model, gate, engines, pipelines, conversations, remembered answers."""

    def __init__(self, settings: ServerSettings, llm: LLM | None = None,
                 conversations: Conversations | None = None) -> None:
        self.settings = settings
        self.catalog: Catalog = settings.catalog
        self.llm = llm if llm is not None else self._build_llm(settings)
        self.gate = ModelGate(settings.model_concurrency, settings.queue_size)
        self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=settings.model_concurrency + 1,
                                                              thread_name_prefix="sqlweave-model")
        self._conversations = conversations
        self._conv_lock = threading.Lock()
        self._pipelines: OrderedDict[str, Pipeline] = OrderedDict()
        self._pipe_lock = threading.Lock()
        self._answers: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._answers_lock = threading.Lock()
        self._feedback_lock = threading.Lock()
        self.seal = AnswerSeal.from_file(settings.resolved_answer_key())
        self.feedback_limiter = (RateLimiter(settings.feedback_per_minute, max(1, int(settings.feedback_per_minute)))
                                 if settings.feedback_per_minute > 0 else None)
        self._suggestions: dict[tuple[str, str | None], tuple[Any, list[str]]] = {}
        self._service: dict[str, deque[float]] = {}  # per preset: the seconds of its last answers on this server
        self._service_lock = threading.Lock()
        build_pipeline(settings.preset)  # an unknown default preset fails at start-up

    @staticmethod
    def _build_llm(settings: ServerSettings) -> LLM:
        if isinstance(settings.llm, LLM):
            return settings.llm
        from ..llm.registry import get_llm

        return get_llm(settings.llm, cache=settings.cache, **dict(settings.llm_options))

    @property
    def conversations(self) -> Conversations:
        with self._conv_lock:
            if self._conversations is None:
                self._conversations = Conversations(self.settings.conversation_url)
            return self._conversations

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self._conversations is not None:
            self._conversations.close()

    # --- databases and pipelines ---

    def database(self, name: str, tenant: Tenant | None = None) -> Database:
        """The open database ``name``, bound to ``tenant``'s row-filter parameters; an operator-side failure is not
        shown to the client (it is logged)."""
        self.catalog.entry(name)  # unknown -> 404 before anything opens
        try:
            db = self.catalog.database(name)
            return db.bind(tenant.params) if tenant is not None else db
        except (DatabaseError, MissingDependencyError) as err:
            log_event(log, "database_unavailable", level=logging.ERROR, database=name, code=err.code,
                      error=err.message)
            problem = HTTPProblem(f"database {name!r} is not available right now", status=503,
                                  code="database_unavailable",
                                  hint="The server's operator can see why in the server log.")
            problem.retryable = err.retryable  # a server that is down or full, not a file that is not there
            raise problem from None

    def pipeline(self, preset: str | None) -> Pipeline:
        name = (preset or self.settings.preset).strip()
        with self._pipe_lock:
            pipe = self._pipelines.get(name)
            if pipe is not None:
                self._pipelines.move_to_end(name)
                return pipe
        pipe = build_pipeline(name)  # unknown -> ConfigurationError (400)
        with self._pipe_lock:
            self._pipelines[name] = pipe
            while len(self._pipelines) > _MAX_PIPELINES:
                self._pipelines.popitem(last=False)
        return pipe

    def check_question(self, question: str, pipeline: Pipeline) -> str:
        """The question as the pipeline's own first check would take it; 422 before any model time if not."""
        from ..stages.check_question import empty_question, question_too_long

        q = question.strip()
        if not q:
            raise empty_question()
        limit = self.settings.max_question_chars
        if len(q) > limit:
            raise question_too_long(len(q), limit)
        from types import SimpleNamespace

        for stage in pipeline.stages:
            if stage.name == "check_question":
                probe = SimpleNamespace(question=q)
                stage(probe)  # type: ignore[arg-type]
                q = probe.question
                break
        return q

    def check_sql(self, sql: str) -> str:
        if len(sql) > self.settings.max_sql_chars:
            raise InvalidRequestError(f"the SQL is {len(sql)} characters long; the limit is "
                                      f"{self.settings.max_sql_chars}")
        if not sql.strip():
            raise InvalidRequestError("the SQL is empty")
        return sql

    # --- remembered answers ---

    def remember(self, answer_id: str, record: dict[str, Any]) -> None:
        with self._answers_lock:
            self._answers[answer_id] = record
            while len(self._answers) > self.settings.answer_memory:
                self._answers.popitem(last=False)

    def recall(self, answer_id: str | None) -> dict[str, Any] | None:
        if not answer_id:
            return None
        with self._answers_lock:
            rec = self._answers.get(answer_id)
            if rec is not None:
                self._answers.move_to_end(answer_id)
            return rec

    # --- what questions cost here ---

    def served(self, preset: str, seconds: float) -> None:
        """Count one answer's seconds (model work, without the wait) toward ``preset``'s running median."""
        with self._service_lock:
            self._service.setdefault(preset, deque(maxlen=_SERVICE_WINDOW)).append(seconds)

    def service_times(self) -> dict[str, tuple[float, int]]:
        """Per preset: the median seconds of its recent answers on this server, and how many they are."""
        with self._service_lock:
            return {name: (statistics.median(times), len(times)) for name, times in self._service.items() if times}

    # --- model work ---

    async def wait_turn(self, ticket: Ticket, request: Request | None) -> None:
        """Wait for the ticket's slot; leave the line if the client goes away or the wait is too long."""
        waiter = asyncio.ensure_future(ticket.wait(self.settings.queue_timeout_s))
        try:
            while True:
                done, _ = await asyncio.wait({waiter}, timeout=_POLL_S)
                if done:
                    waiter.result()
                    return
                if request is not None and await request.is_disconnected():
                    raise _Cancelled()
        finally:
            if not waiter.done():
                waiter.cancel()
                try:
                    await waiter
                except BaseException:  # noqa: BLE001 - the wait's own end is not ours to report
                    pass

    async def warm_up(self) -> list[str]:
        """Warm each database up (:meth:`Engine.warm_up`) with the default preset, in the model's line like a
        question: one database per turn, so a question asked meanwhile waits for one warm-up at most. A database
        that cannot be opened, or a full line, is skipped (its first question will say or wait). Returns the
        names warmed."""
        warmed: list[str] = []
        if not self.settings.warm_up or not self.llm.keeps_prompts:
            return warmed
        for name in self.catalog.names():
            try:
                ticket = self.gate.enter()
            except ServerBusyError:
                return warmed  # questions are waiting: they come first
            start = time.perf_counter()
            try:
                db = await run_in_threadpool(self.database, name)
                pipe = self.catalog.pipeline_for(name, self.pipeline(None))
                engine = Engine(db, self.llm, pipe)
                if await self.run_model(ticket, lambda _cancel: engine.warm_up()):
                    warmed.append(name)
                log_event(log, "warm_up", database=name, warmed=name in warmed,
                          seconds=round(time.perf_counter() - start, 2))
            except SqlweaveError as err:
                log_event(log, "warm_up", database=name, warmed=False, error=err.code)
            except Exception as err:  # noqa: BLE001 - a warm-up never stops the server; the first question tells
                log_event(log, "warm_up", level=logging.ERROR, database=name, warmed=False,
                          error=f"{type(err).__name__}: {err}")
            finally:
                ticket.release()
        return warmed

    async def run_model(self, ticket: Ticket, fn: Callable[[threading.Event], T],
                        request: Request | None = None) -> T:
        """Wait for ``ticket``'s slot, then run ``fn`` in the model's worker thread.

        The slot is freed when the thread ends, even if this request is cancelled first (the thread is then
        asked to stop at the next stage boundary); a ticket still waiting leaves the line at once.
        """
        cancel = threading.Event()
        submitted = False
        try:
            await self.wait_turn(ticket, request)

            def job() -> T:
                if cancel.is_set():
                    raise _Cancelled()
                return fn(cancel)

            cf = self.executor.submit(job)
            submitted = True
            cf.add_done_callback(lambda _f: ticket.release())
            fut = asyncio.wrap_future(cf)
            fut.add_done_callback(_consume)
            while True:
                done, _ = await asyncio.wait({fut}, timeout=_POLL_S)
                if done:
                    return fut.result()
                if request is not None and await request.is_disconnected():
                    raise _Cancelled()
        except BaseException:
            cancel.set()
            raise
        finally:
            if not submitted:
                ticket.release()

    # --- asking ---

    async def prepare_ask(self, body: m.AskIn, received: float, tenant: Tenant | None = None) -> _AskJob:
        pipe = self.pipeline(body.preset)
        question = self.check_question(body.question, pipe)
        db = await run_in_threadpool(self.database, body.database, tenant)
        pipe = self.catalog.pipeline_for(body.database, pipe)
        db.check_bound()  # an unbound row-filter parameter fails before the question waits for the model
        owner = tenant.name if tenant is not None else None
        conversation_id = None if body.new_conversation else body.conversation_id
        if conversation_id:
            _check_id(conversation_id)
        engine = Engine(db, self.llm, pipe)
        store = self.conversations.store

        def open_conversation() -> tuple[Conversation, tuple[Any, ...]]:
            conv = Conversation(engine, store, id=conversation_id, database=body.database, owner=owner, lazy=True,
                                max_history=self.settings.history_turns)
            return conv, conv.earlier()

        conv, earlier = await run_in_threadpool(open_conversation)  # unknown or another's: 404, another db's: 409
        return _AskJob(body.database, question, engine, pipe, conv, earlier, received, owner,
                       body.min_confidence, (body.preset or self.settings.preset).strip())

    def budget_for(self, pipeline: Pipeline) -> float:
        """One question's model time: the pipeline's own budget, at most the operator's ceiling."""
        return min(pipeline.budget, self.settings.max_question_seconds)

    def answer_fn(self, job: _AskJob, on_stage: Callable[[TraceEntry], None] | None = None,
                  on_start: Callable[[str], None] | None = None,
                  on_sample: Callable[[str, int, int], None] | None = None) -> Callable[[threading.Event], Answer]:
        def run(cancel: threading.Event) -> Answer:
            def stage_done(entry: TraceEntry) -> None:
                if on_stage is not None:
                    on_stage(entry)
                if cancel.is_set():
                    raise _Cancelled()

            return job.conversation.answer(job.question, job.earlier, on_stage=stage_done, pipeline=job.pipeline,
                                           min_confidence=job.min_confidence, budget_s=self.budget_for(job.pipeline),
                                           cancel=cancel, on_start=on_start, on_sample=on_sample)

        return run

    async def finish_ask(self, job: _AskJob, answer: Answer, ticket: Ticket) -> dict[str, Any]:
        """Store the turn in its conversation, remember the answer, and shape the response."""
        answer, kept = await run_in_threadpool(job.conversation.keep, job.question, answer, job.earlier)
        builds_on, conversation_id, turn = answer.builds_on, job.conversation.id, int(kept.number)
        if answer.ok and not answer.cut_short:
            self.served(job.preset, answer.seconds)
        answer_id = self.seal.issue(database=job.database, owner=job.owner, question=well_formed(answer.question),
                                    sql=None if answer.sql is None else well_formed(answer.sql))
        self.remember(answer_id, {"database": job.database, "question": job.question, "sql": answer.sql,
                                  "ok": answer.ok, "conversation_id": conversation_id, "turn": turn})
        out = {
            **AnswerSchema.fields_of(answer, cell=json_value, text=well_formed, trace=False),
            "builds_on": builds_on,
            "trace": json_value([e.as_dict() for e in answer.trace]),
            "answer_id": answer_id,
            "conversation_id": conversation_id,
            "turn": turn,
            "chart": chart_out(answer.result) if answer.ok else NO_CHART.as_dict(),
            "timings": {"total_s": round(time.perf_counter() - job.received, 4),
                        "queue_wait_s": round(ticket.wait_s, 4), "model_calls": answer.model_calls},
        }
        # plain JSON data, as the stream's answer event writes it (the schema's ErrorSchema is an object)
        out["error"] = None if answer.error is None else error_dict(answer.error)
        log_event(log, "ask", database=job.database, question=job.question, conversation_id=conversation_id,
                  turn=turn, answer_id=answer_id, ok=answer.ok,
                  error_code=None if answer.error is None else answer.error.code,
                  model_calls=answer.model_calls, queue_wait_s=out["timings"]["queue_wait_s"],
                  total_s=out["timings"]["total_s"])
        return out


def _gone() -> Response:
    """The client went away while waiting: nobody reads this answer, but the access log shows it."""
    return JSONResponse(error_body(HTTPProblem("the client went away", status=499, code="cancelled")),
                        status_code=499)


def _consume(fut: "asyncio.Future[Any]") -> None:
    """Retrieve a finished worker's exception so an abandoned one is not reported as never retrieved."""
    if not fut.cancelled():
        fut.exception()


def _sse(event: str, data: Any) -> dict[str, str]:
    return {"event": event, "data": json.dumps(json_value(data), ensure_ascii=False, allow_nan=False)}


# --- the app ----------------------------------------------------------------------------------------------


_ERRORS: dict[int | str, dict[str, Any]] = {  # the type FastAPI's responses= takes
    s: {"model": m.ErrorBody} for s in (400, 401, 404, 409, 413, 422, 429, 500, 502, 503, 504)}


def build_app(settings: ServerSettings, *, llm: LLM | None = None,
              conversations: Conversations | None = None) -> FastAPI:
    """The FastAPI app (``create_app`` in :mod:`sqlweave.server` checks the extra is installed first)."""
    from contextlib import asynccontextmanager

    state = ServerState(settings, llm=llm, conversations=conversations)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        warming = asyncio.ensure_future(state.warm_up())
        try:
            yield
        finally:
            warming.cancel()
            state.close()

    app = FastAPI(
        title="sqlweave", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
        description="Ask a configured database a question in plain language; get safe SQL, its result and a trace.",
    )
    app.state.sqlweave = state
    install_handlers(app)

    # --- health and catalog ---

    @app.get("/api/health", response_model=m.HealthOut, tags=["service"])
    async def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, "model": state.llm.model_id, "queue": state.gate.stats()}

    @app.get("/api/presets", response_model=m.PresetsOut, tags=["service"])
    async def presets() -> dict[str, Any]:
        here = state.service_times()
        rows = [{**p, "server_median_seconds": round(here[p["name"]][0], 2) if p["name"] in here else None,
                 "server_answers": here[p["name"]][1] if p["name"] in here else 0} for p in describe_presets()]
        return {"default": state.settings.preset, "presets": rows}

    @app.get("/api/databases", response_model=m.DatabasesOut, tags=["databases"], responses=_ERRORS)
    async def databases() -> dict[str, Any]:
        def describe() -> list[dict[str, Any]]:
            for name in state.catalog.names():
                try:
                    state.database(name)
                except SqlweaveError:
                    pass  # listed without a dialect; asking about it answers 503
            return state.catalog.describe()

        return {"databases": await run_in_threadpool(describe)}

    @app.get("/api/databases/{name}/schema", response_model=m.SchemaOut, tags=["databases"], responses=_ERRORS)
    async def schema(name: str, request: Request,
                     find: str | None = Query(None, max_length=200, description=(
                         "Only the tables whose name or description, or a column's, holds this text (any case), "
                         "with the foreign keys that touch them."))) -> dict[str, Any]:
        tenant = _tenant(request)

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

    @app.get("/api/databases/{name}/suggestions", response_model=m.SuggestionsOut, tags=["databases"],
             responses=_ERRORS)
    async def suggestions(name: str, request: Request) -> dict[str, Any]:
        tenant = _tenant(request)
        key = (name, tenant.name if tenant is not None else None)

        def build() -> list[str]:
            db = state.database(name, tenant)
            schema = db.schema()  # read again when the database's tables or columns changed: so are the questions
            if key not in state._suggestions or state._suggestions[key][0] is not schema:
                state._suggestions[key] = (schema, suggest_questions(db))
            return state._suggestions[key][1]

        return {"questions": [well_formed(q) for q in await run_in_threadpool(build)]}

    # --- asking ---

    @app.post("/api/ask", response_model=m.AnswerOut, tags=["questions"], responses=_ERRORS)
    async def ask(body: m.AskIn, request: Request) -> dict[str, Any] | Response:
        received = time.perf_counter()
        job = await state.prepare_ask(body, received, _tenant(request))
        ticket = state.gate.enter()
        try:
            answer = await state.run_model(ticket, state.answer_fn(job), request)
        except _Cancelled:
            return _gone()
        if isinstance(answer.error, QuestionCancelledError):
            return _gone()
        if isinstance(answer.error, QuestionTimeoutError):
            log_event(log, "ask", database=job.database, ok=False, error_code=answer.error.code,
                      model_calls=answer.model_calls, total_s=round(time.perf_counter() - received, 4))
            raise answer.error  # 504, with nothing found in the time the question had
        return await state.finish_ask(job, answer, ticket)

    @app.post("/api/ask/stream", tags=["questions"], responses={
        200: {"description": "Server-sent events: queued; then, per stage, running (it starts: stage, label), "
                             "progress (each of its samples: done, total) and stage (it is done: seconds, tokens, "
                             "notes); then answer or error.",
              "content": {"text/event-stream": {}}}, **_ERRORS})
    async def ask_stream(body: m.AskIn, request: Request) -> Response:
        from sse_starlette.sse import EventSourceResponse

        received = time.perf_counter()
        job = await state.prepare_ask(body, received, _tenant(request))
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
                yield _sse("queued", {"position": ticket.position})
                task = asyncio.ensure_future(state.run_model(ticket, state.answer_fn(job, on_stage, on_start,
                                                                                     on_sample)))
                task.add_done_callback(lambda _t: loop.call_soon(stages.put_nowait, None))
                while True:
                    entry = await stages.get()
                    if entry is None:
                        break
                    if isinstance(entry, str):  # a stage starts: the page says what is being done now
                        yield _sse("running", {"stage": entry, "label": stage_label(entry)})
                        continue
                    if isinstance(entry, tuple):  # one of a stage's samples is drawn: "Trying other readings 2/4"
                        name, done, total = entry
                        yield _sse("progress", {"stage": name, "label": stage_label(name), "done": done,
                                                "total": total})
                        continue
                    yield _sse("stage", stage_event(entry))
                answer = task.result()
                if isinstance(answer.error, (QuestionTimeoutError, QuestionCancelledError)):
                    yield _sse("error", error_dict(answer.error))  # nothing found in the question's time
                    return
                while not stages.empty():  # stages that were queued after the sentinel (none expected)
                    late = stages.get_nowait()
                    if isinstance(late, TraceEntry):
                        yield _sse("stage", stage_event(late))
                yield _sse("answer", await state.finish_ask(job, answer, ticket))
            except SqlweaveError as err:
                yield _sse("error", error_dict(err))
            except (asyncio.CancelledError, _Cancelled):
                request.scope.setdefault("state", {})["abandoned"] = True  # the access log says 499
                raise
            except Exception as err:  # noqa: BLE001 - the stream has started: report, never a traceback
                log_event(log, "internal_error", level=logging.ERROR, path="/api/ask/stream",
                          exception=type(err).__name__)
                yield _sse("error", {"code": "internal", "message": "the server failed to answer this question",
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

    @app.post("/api/explain", response_model=m.ExplainOut, tags=["questions"], responses=_ERRORS)
    async def explain(body: m.ExplainIn, request: Request) -> dict[str, Any] | Response:
        from ..db.render import render_schema
        from ..prompts import render
        from ..sql.classify import ensure_read_only

        sql = state.check_sql(body.sql)
        question = (body.question or "").strip()
        if len(question) > state.settings.max_question_chars:
            from ..stages.check_question import question_too_long

            raise question_too_long(len(question), state.settings.max_question_chars)

        tenant = _tenant(request)

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
        except _Cancelled:
            return _gone()
        return {"explanation": well_formed(text)}

    # --- your own SQL ---

    def run_sql(name: str, sql: str, tenant: Tenant | None, read: str | None = None) -> QueryResult:
        return state.database(name, tenant).execute(state.check_sql(sql), read=read)

    @app.post("/api/sql", response_model=m.SqlOut, tags=["sql"], responses=_ERRORS)
    async def sql(body: m.SqlIn, request: Request) -> dict[str, Any]:
        result = await run_in_threadpool(run_sql, body.database, body.sql, _tenant(request), body.read)
        return {"sql": well_formed(result.sql), "columns": [well_formed(str(c)) for c in result.columns],
                "rows": rows_out(result), "row_count": result.row_count, "truncated": result.truncated,
                "elapsed_s": round(result.elapsed_s, 4), "chart": chart_out(result)}

    @app.post("/api/sql/csv", tags=["sql"], response_class=Response, responses={
        200: {"description": "The result as CSV (formula-like cells neutralised unless raw).",
              "content": {"text/csv": {}}}, **_ERRORS})
    async def sql_csv(body: m.CsvIn, request: Request) -> Response:
        from ..export import to_csv

        result = await run_in_threadpool(run_sql, body.database, body.sql, _tenant(request), body.read)
        text = to_csv(result.columns, result.rows, raw=body.raw)
        return Response(text.encode("utf-8"), media_type="text/csv; charset=utf-8", headers={
            "Content-Disposition": f'attachment; filename="{_filename(body.database)}.csv"',
            "X-Truncated": "true" if result.truncated else "false"})

    # --- feedback ---

    @app.post("/api/feedback", response_model=m.FeedbackOut, tags=["questions"], responses=_ERRORS)
    async def feedback(body: m.FeedbackIn, request: Request) -> dict[str, Any]:
        from ..engine import check_example
        from ..feedback import PendingExamples
        from ..retrieval.pool import add_user_example

        tenant = _tenant(request)
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
                        with state._feedback_lock:
                            ex = add_user_example(question, add, db_id=db_id, schema_names=names, origin=origin)
                        example = {"question": ex.question, "sql": ex.sql, "db_id": ex.db_id}
                    else:
                        p = PendingExamples.of().propose(question, add, db_id=db_id, database=body.database,
                                                         origin=origin, answer_id=body.answer_id, owner=owner,
                                                         schema_names=names)
                        example, pending = {"question": p.question, "sql": p.sql, "db_id": p.db_id}, True
            except SqlweaveError as err:
                entry.update(added=False, pending=False, error_code=err.code)
                _log_feedback(state, entry)
                raise
            entry.update(added=example is not None and not pending, pending=pending, error_code=None)
            _log_feedback(state, entry)
            return example, pending

        example, pending = await run_in_threadpool(record)
        log_event(log, "feedback", database=body.database, verdict=body.verdict,
                  added=example is not None and not pending, pending=pending, answer_id=body.answer_id)
        return {"added": example is not None and not pending, "pending": pending, "example": json_value(example)}

    # --- conversations ---

    # Not named conversations: that is build_app's parameter. name= keeps the route's name (and operationId).
    @app.get("/api/conversations", response_model=m.ConversationsOut, tags=["conversations"], responses=_ERRORS,
             name="conversations")
    async def list_conversations(request: Request, database: str | None = Query(None, max_length=64),
                                 limit: int = Query(50, ge=1, le=200)) -> dict[str, Any]:
        if database:
            state.catalog.entry(database)
        items = await run_in_threadpool(state.conversations.summaries, database or None, limit, _owner(request))
        return {"conversations": items}

    @app.get("/api/conversations/{conversation_id}", response_model=m.ConversationOut, tags=["conversations"],
             responses=_ERRORS)
    async def conversation(conversation_id: str, request: Request) -> dict[str, Any]:
        _check_id(conversation_id)
        return await run_in_threadpool(state.conversations.show, conversation_id, _owner(request))

    @app.delete("/api/conversations/{conversation_id}", status_code=204, response_class=Response,
                tags=["conversations"], responses=_ERRORS)
    async def delete_conversation(conversation_id: str, request: Request) -> Response:
        _check_id(conversation_id)
        await run_in_threadpool(state.conversations.delete, conversation_id, _owner(request))
        return Response(status_code=204)

    # --- the page ---

    static = settings.resolved_static_dir()
    page_missing = NotFoundError("the web page is not installed",
                                 hint="Use the HTTP API (GET /openapi.json), or reinstall sqlweave.")

    @app.get("/", include_in_schema=False)
    async def index() -> Response:
        page = static / "index.html"
        if not page.is_file():
            return JSONResponse(error_body(page_missing), status_code=404)
        return FileResponse(page, media_type="text/html; charset=utf-8", headers={"Cache-Control": "no-cache"})

    if static.is_dir():
        from fastapi.staticfiles import StaticFiles

        app.mount("/static", StaticFiles(directory=static), name="static")
    else:
        @app.get("/static/{path:path}", include_in_schema=False)
        async def no_static(path: str) -> Response:
            return JSONResponse(error_body(page_missing), status_code=404)

    # --- guards, innermost first ---

    app.add_middleware(CatchAllMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_request_bytes)
    app.add_middleware(APIKeyMiddleware, api_key=settings.api_key, tenants=settings.tenants)
    limiter = (RateLimiter(settings.rate_limit_per_minute, settings.rate_limit_burst)
               if settings.rate_limit_per_minute > 0 else None)
    app.add_middleware(RateLimitMiddleware, limiter=limiter)  # before the key check: guessing keys is limited too
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins), allow_credentials=False,
                           allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["Authorization", "X-API-Key", "Content-Type"],
                           expose_headers=["Retry-After", "X-Request-Id"])
    hosts = settings.resolved_allowed_hosts()
    if "*" not in hosts:
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        app.add_middleware(TrustedHostMiddleware, allowed_hosts=[h.strip("[]") for h in hosts] + list(hosts))
    app.add_middleware(AccessLogMiddleware)
    app.add_middleware(SecurityHeadersMiddleware)
    return app


def _check_id(conversation_id: str) -> None:
    if not conversation_id or len(conversation_id) > 64:
        raise InvalidRequestError("not a conversation id")


def _filename(database: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in database)[:40] or "result"
    return f"sqlweave-{safe}"


def _log_feedback(state: ServerState, entry: dict[str, Any]) -> None:
    from ..files import append_jsonl

    path = state.settings.resolved_feedback_log()
    with state._feedback_lock:
        append_jsonl(path, [json_value(entry)])


__all__ = ["Conversations", "ServerState", "build_app", "json_value"]
