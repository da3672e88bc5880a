"""What the routes share: one :class:`ServerState` per app (settings, the model and its gate, engines,
pipelines, conversations, remembered answers), reached by each route through :func:`sqlweave.server.deps.state`.

Model work goes through the bounded :class:`~sqlweave.server.gate.ModelGate` and runs in a worker thread
(:meth:`ServerState.run_model`); database-only work runs in the thread pool without waiting for the model.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import statistics
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from ..answer_schema import AnswerSchema
from ..catalog import Catalog
from ..chart import NO_CHART
from ..conversation import Conversation
from ..database import Database
from ..engine import Engine
from ..errors import DatabaseError, MissingDependencyError, SqlweaveError
from ..feedback import AnswerSeal
from ..llm.base import LLM
from ..logs import log_event
from ..pipeline import Answer, Pipeline, TraceEntry
from ..presets import build_pipeline
from ..text import well_formed
from . import models as m
from .conversations import Conversations, check_id
from .errors import HTTPProblem, InvalidRequestError, error_dict
from .gate import ModelGate, ServerBusyError, Ticket
from .security import RateLimiter
from .settings import ServerSettings, Tenant
from .values import chart_out, json_value

log = logging.getLogger("sqlweave.server")
T = TypeVar("T")

#: How often a waiting request checks whether its client is still there (seconds).
_POLL_S = 0.25
_MAX_PIPELINES = 32
#: Answers per preset whose seconds make its running median on this server.
_SERVICE_WINDOW = 50


class ClientGone(Exception):
    """The client went away: stop the pipeline at the next stage boundary."""


@dataclass
class AskJob:
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
    """What the routes share: settings, model, gate, engines, pipelines, conversations, remembered answers.

    >>> from sqlweave.catalog import Catalog
    >>> from sqlweave.llm.fake import FakeLLM
    >>> state = ServerState(ServerSettings(Catalog.demo(), llm=FakeLLM(["SELECT 1"]), api_key=""))
    >>> state.gate.stats()["running"], state.database("shop").dialect
    (0, 'sqlite')
    >>> state.close()
    """

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
        self.feedback_lock = threading.Lock()
        self.seal = AnswerSeal.from_file(settings.resolved_answer_key())
        self.feedback_limiter = (RateLimiter(settings.feedback_per_minute, max(1, int(settings.feedback_per_minute)))
                                 if settings.feedback_per_minute > 0 else None)
        #: (database, tenant) -> the schema the questions were suggested for, and the questions
        self.suggestions_cache: dict[tuple[str, str | None], tuple[Any, list[str]]] = {}
        self._service: dict[str, deque[float]] = {}  # per preset: the seconds of its last answers on this server
        self._service_lock = threading.Lock()
        build_pipeline(settings.preset)  # an unknown default preset fails at start-up
        self.static_dir = settings.resolved_static_dir()  # the page's files

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
                    raise ClientGone()
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
                    raise ClientGone()
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
                    raise ClientGone()
        except BaseException:
            cancel.set()
            raise
        finally:
            if not submitted:
                ticket.release()

    # --- asking ---

    async def prepare_ask(self, body: m.AskIn, received: float, tenant: Tenant | None = None) -> AskJob:
        pipe = self.pipeline(body.preset)
        question = self.check_question(body.question, pipe)
        db = await run_in_threadpool(self.database, body.database, tenant)
        pipe = self.catalog.pipeline_for(body.database, pipe)
        db.check_bound()  # an unbound row-filter parameter fails before the question waits for the model
        owner = tenant.name if tenant is not None else None
        conversation_id = None if body.new_conversation else body.conversation_id
        if conversation_id:
            check_id(conversation_id)
        engine = Engine(db, self.llm, pipe)
        store = self.conversations.store

        def open_conversation() -> tuple[Conversation, tuple[Any, ...]]:
            conv = Conversation(engine, store, id=conversation_id, database=body.database, owner=owner, lazy=True,
                                max_history=self.settings.history_turns)
            return conv, conv.earlier()

        conv, earlier = await run_in_threadpool(open_conversation)  # unknown or another's: 404, another db's: 409
        return AskJob(body.database, question, engine, pipe, conv, earlier, received, owner,
                       body.min_confidence, (body.preset or self.settings.preset).strip())

    def budget_for(self, pipeline: Pipeline) -> float:
        """One question's model time: the pipeline's own budget, at most the operator's ceiling."""
        return min(pipeline.budget, self.settings.max_question_seconds)

    def answer_fn(self, job: AskJob, on_stage: Callable[[TraceEntry], None] | None = None,
                  on_start: Callable[[str], None] | None = None,
                  on_sample: Callable[[str, int, int], None] | None = None) -> Callable[[threading.Event], Answer]:
        def run(cancel: threading.Event) -> Answer:
            def stage_done(entry: TraceEntry) -> None:
                if on_stage is not None:
                    on_stage(entry)
                if cancel.is_set():
                    raise ClientGone()

            return job.conversation.answer(job.question, job.earlier, on_stage=stage_done, pipeline=job.pipeline,
                                           min_confidence=job.min_confidence, budget_s=self.budget_for(job.pipeline),
                                           cancel=cancel, on_start=on_start, on_sample=on_sample)

        return run

    async def finish_ask(self, job: AskJob, answer: Answer, ticket: Ticket) -> dict[str, Any]:
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


def _consume(fut: "asyncio.Future[Any]") -> None:
    """Retrieve a finished worker's exception so an abandoned one is not reported as never retrieved."""
    if not fut.cancelled():
        fut.exception()


__all__ = ["AskJob", "ClientGone", "ServerState"]
