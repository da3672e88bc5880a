"""The pipeline core: a tuple of small stages over one state object, each leaving a trace entry.

A stage is any object with a ``name`` and ``__call__(state)``. It reads what it
needs from the :class:`State`, writes its result back, talks to the model through
:meth:`State.complete` (which records prompt, output, tokens and seconds), and adds
structured notes with :meth:`State.note`. Stages never call one another, so a new
stage slots in by building a new tuple.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> from sqlweave.presets import build_pipeline
>>> pipe = build_pipeline("zero-shot")
>>> [s.name for s in pipe.stages]
['check_question', 'render_schema', 'generate', 'extract_sql', 'execute']
>>> answer = pipe.run("How many customers?", Database.open(demo_database_path()),
...                   FakeLLM(["```sql\\nSELECT COUNT(*) FROM customers\\n```"]))
>>> answer.result.rows
((60,),)
"""

from __future__ import annotations

import difflib
import threading
import time
from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol, Sequence, runtime_checkable

from .cells import json_cell
from .confidence import Signals
from .errors import ConfigurationError, DatabaseUnavailableError, PipelineError, SqlweaveError
from .llm.base import LLM, Completion, GenerationOptions, Message, Timings, Usage, WrappedLLM
from .progress import reporting
from .resources import Resources, shared_resources
from .sql.quiet import reading_untrusted_text

if TYPE_CHECKING:
    from .budget import Deadline
    from .db.connection import QueryResult
    from .db.protocol import Database
    from .db.render import RenderedSchema
    from .schema import Schema
    from .knowledge import Knowledge
    from .retrieval.pool import PoolExample
    from .retrieval.budget_fit import BudgetFit
    from .stages.payloads import SchemaLink, ValueMatch


@dataclass(frozen=True)
class ModelCall:
    """One model call made by a stage: the prompt, what came back, and what it cost."""

    messages: tuple[Message, ...]
    outputs: tuple[str, ...]
    usage: Usage
    seconds: float
    cached: bool
    cost_seconds: float = 0.0  # the model's own seconds for this answer, also when it came from the cache
    #: How the answer was asked for (temperature, seed, number of samples...): a replay matches calls by it.
    options: GenerationOptions | None = None
    #: Where the model's seconds went: the prompt's evaluation and the answer (backends that can tell).
    timings: Timings | None = None


@dataclass(frozen=True)
class TraceEntry:
    """What one stage did."""

    stage: str
    seconds: float
    calls: tuple[ModelCall, ...] = ()
    notes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    #: The answer's SQL once the stage is done (``sqlweave eval stages`` scores each stage's change).
    sql: str | None = None

    @property
    def usage(self) -> Usage:
        total = Usage()
        for c in self.calls:
            total = total + c.usage
        return total

    def as_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "seconds": round(self.seconds, 4),
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "calls": [
                {
                    "messages": [m.as_dict() for m in c.messages],
                    "outputs": list(c.outputs),
                    "prompt_tokens": c.usage.prompt_tokens,
                    "completion_tokens": c.usage.completion_tokens,
                    "seconds": round(c.seconds, 4),
                    "cached": c.cached,
                    "cost_seconds": round(c.cost_seconds, 4),  # a cached answer: what the model took first
                    **({"options": c.options.recorded()} if c.options is not None else {}),
                    **({"timings": c.timings.as_dict()} if c.timings is not None else {}),
                }
                for c in self.calls
            ],
            "notes": json_cell(self.notes, exact_text=True),
            "error": self.error,
            "sql": self.sql,
        }


@dataclass(frozen=True)
class PriorTurn:
    """An earlier turn of a conversation, as later turns' prompts show it (the SParC/CoSQL setting)."""

    question: str
    sql: str | None


#: Called with each stage's trace entry as soon as the stage finishes (streaming doors use it).
StageCallback = Callable[[TraceEntry], None]
#: Called with a stage's name just before it starts (progress: "Writing SQL", and for how long).
StartCallback = Callable[[str], None]
#: Called with a stage's name and its samples done and asked for, as each is drawn ("Trying other readings 2/4").
SampleCallback = Callable[[str, int, int], None]

#: The stand-in question of :meth:`Pipeline.warm_up`: plain English, so no language block enters its prompt.
WARM_UP_QUESTION = "How many rows are there?"


class _NoModel(WrappedLLM):
    """The model as the stages before generation see it during a warm-up: any call is refused (the stage fails)."""

    def _complete(self, messages: tuple[Message, ...], options: GenerationOptions) -> Completion:
        raise PipelineError("a warm-up does not ask the model before generation")


@dataclass
class State:
    """The working object a pipeline's stages share for one question.

    ``schema`` is the full schema; ``prompt_schema`` is what prompts show (a pruning stage may narrow it). ``prompt``
    is the generation conversation, which correction stages extend (so the model's prefix cache is reused). ``sql``
    is the current best SQL; ``candidates`` are all the SQL texts produced so far. What optional stages add has a
    typed slot each (:mod:`sqlweave.stages.payloads`), their blocks of the generation prompt go to
    ``prompt_blocks`` by name (``values``, ``links``, ``examples``: :func:`sqlweave.stages.generate.prompt_fields`),
    what they tell the confidence estimate to ``signals``; ``extras`` is left for stages written outside the package.
    ``history`` holds a conversation's earlier turns (oldest first); ``evidence`` is text that helps answer this one
    question (BIRD's evidence: the user's, or a stage's); ``knowledge`` is the database's domain knowledge
    (:class:`~sqlweave.knowledge.Knowledge`); ``resources`` holds what stages load once and reuse
    (:mod:`sqlweave.resources`: example pools, value indexes, embedders).
    """

    question: str
    db: "Database"
    llm: LLM
    schema: "Schema"
    prompt_schema: "Schema"
    rendered_schema: "RenderedSchema | None" = None
    prompt: list[Message] = field(default_factory=list)
    raw_output: str | None = None
    sql: str | None = None
    candidates: list[str] = field(default_factory=list)
    result: "QueryResult | None" = None
    error: SqlweaveError | None = None
    agreement: float | None = None          # voting stages: the share of candidates behind the answer
    confidence: float | None = None         # the calibrated chance the answer is right (set after the stages)
    min_confidence: float | None = None     # below this confidence the answer is shown as unsure, with readings
    readings: list["Reading"] = field(default_factory=list)  # readings: the leading readings of an unsure answer
    # What optional stages leave for later ones (each written by the stage named, read by those after it):
    question_language: str | None = None    # check_question: the question's language, when not English
    restated_question: str | None = None    # rewrite_question: a follow-up restated on its own (now the question)
    simplified_question: str | None = None  # simplify: the model's plainer wording (example retrieval reads it)
    prompt_question: str | None = None      # simplify: the question as generation prompts show it
    approx_sql: str | None = None           # approximate: a first zero-shot query (pruning, example ranking)
    values: "list[ValueMatch] | None" = None    # select_values: stored values the question names
    links: "list[SchemaLink] | None" = None     # link_schema: question words that name a table or column otherwise
    examples: "list[PoolExample] | None" = None  # select_examples: the retrieved question/SQL pairs
    prompt_blocks: dict[str, str] = field(default_factory=dict)  # generation prompt blocks by name, as stages add them
    prompt_template: str | None = None      # generate: the template used (correction re-renders it)
    schema_fit: "BudgetFit | None" = None   # render_schema: the budget fit of a schema too large for the context
    schema_fit_key: tuple[Any, ...] | None = None  # render_schema: what the fit was computed for
    signals: Signals = field(default_factory=Signals)  # what stages tell the confidence estimate
    extras: dict[str, Any] = field(default_factory=dict)  # for stages outside the package
    history: tuple[PriorTurn, ...] = ()
    evidence: str | None = None
    knowledge: "Knowledge | None" = None
    resources: Resources = field(default_factory=shared_resources)  # pools, value indexes, embedders, models
    trace: list[TraceEntry] = field(default_factory=list)
    _calls: list[ModelCall] = field(default_factory=list, repr=False)
    _notes: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def shown_schema(self) -> "Schema":
        """The part of ``prompt_schema`` its prompt shows: the budget fit computed for it, or all of it. A fit an
        earlier stage left for another schema (the approximation's, of the whole schema, before pruning) is not
        this prompt's."""
        fit = self.schema_fit
        if fit is not None and (self.schema_fit_key or (None,))[0] == id(self.prompt_schema):
            return fit.schema
        return self.prompt_schema

    def complete(self, messages: Sequence[Message], **options: Any) -> Completion:
        """Call the model and record the call in the current stage's trace entry."""
        asked = GenerationOptions(**options)
        result = self.llm.complete(list(messages), asked)
        self._calls.append(ModelCall(tuple(messages), result.texts, result.usage, result.seconds, result.cached,
                                     result.cost_seconds, asked, None if result.cached else result.timings))
        return result

    def note(self, **data: Any) -> None:
        """Add structured facts to the current stage's trace entry."""
        self._notes.update(data)

    def record_calls(self, calls: Iterable[ModelCall]) -> None:
        """Count model calls made elsewhere (e.g. by a sub-pipeline) in the current stage's trace entry."""
        self._calls.extend(calls)


@runtime_checkable
class Stage(Protocol):
    """One step of a pipeline.

    ``recovers``: the stage still runs after an earlier one failed (correction, voting). ``requires``: the
    :class:`State` slots an earlier stage must have written (``"sql"``, ``"result"``, ...); ``provides``: every
    slot it writes (``extras.<key>`` for a stage written outside the package). :class:`Pipeline` checks the names
    and the order once, when it is built; a :class:`~sqlweave.stages.base.BaseStage` checks the names when its
    class is defined.
    """

    @property
    def name(self) -> str: ...

    @property
    def recovers(self) -> bool: ...

    @property
    def requires(self) -> tuple[str, ...]: ...

    @property
    def provides(self) -> tuple[str, ...]: ...

    def __call__(self, state: State) -> None: ...


def check_slots(owner: str, requires: Iterable[str], provides: Iterable[str]) -> None:
    """Raise :class:`~sqlweave.errors.PipelineError` when a name in ``requires`` or ``provides`` is no slot of
    :class:`State` (``extras.<key>`` names a key of :attr:`State.extras`), e.g. ``check_slots("mine", (), ("sqll",))``.
    """
    slots = {f.name for f in fields(State) if not f.name.startswith("_")}
    wrong = [s for s in (*requires, *provides) if s not in slots and not (s.startswith("extras.") and s[7:])]
    if wrong:
        close = difflib.get_close_matches(wrong[0], sorted(slots), n=1)
        raise PipelineError(f"stage {owner} names {', '.join(map(repr, wrong))}, which "
                            f"{'is' if len(wrong) == 1 else 'are'} no slot of State",
                            hint=(f"Did you mean {close[0]!r}? " if close else "")
                            + "Name State's fields, or 'extras.<key>' for what a stage of your own keeps.")


#: State slots every pipeline starts with (set by :meth:`Pipeline.run` from its arguments).
INITIAL_SLOTS = frozenset({"question", "db", "llm", "schema", "prompt_schema", "history", "evidence", "knowledge",
                           "min_confidence"})

#: The stage that usually writes each slot, named in the error when a pipeline lacks it.
PRODUCERS = {"rendered_schema": "render_schema", "raw_output": "generate", "sql": "extract_sql", "result": "execute",
             "approx_sql": "approximate", "values": "select_values", "links": "link_schema",
             "examples": "select_examples", "simplified_question": "simplify"}


def check_stage_order(name: str, stages: Sequence[Any]) -> None:
    """Raise :class:`~sqlweave.errors.PipelineError` when a stage needs a slot no earlier stage writes.

    >>> from sqlweave.stages import ExecuteSQL
    >>> check_stage_order("broken", (ExecuteSQL(),))
    Traceback (most recent call last):
    ...
    sqlweave.errors.PipelineError: stage 'execute' of pipeline 'broken' needs sql, which no earlier stage writes
    """
    available = set(INITIAL_SLOTS)
    for stage in stages:
        check_slots(repr(stage.name), getattr(stage, "requires", ()), getattr(stage, "provides", ()))
        missing = [slot for slot in getattr(stage, "requires", ()) if slot not in available]
        if missing:
            producers = sorted({PRODUCERS.get(slot, "?") for slot in missing})
            raise PipelineError(
                f"stage {stage.name!r} of pipeline {name!r} needs {', '.join(missing)}, which no earlier stage writes",
                hint=f"Put {' and '.join(repr(p) for p in producers)} before {stage.name!r}; the stages are: "
                     f"{', '.join(s.name for s in stages)}.")
        available.update(getattr(stage, "provides", ()))


@dataclass(frozen=True)
class Reading:
    """One way of reading an unsure question: a query, its result, and the share of sampled answers behind it."""

    sql: str
    result: "QueryResult"
    share: float

    def as_dict(self) -> dict[str, Any]:
        r = self.result
        return {"sql": self.sql, "share": round(self.share, 3),
                "result": {"columns": list(r.columns), "rows": json_cell(r.rows, exact_text=True),
                           "truncated": r.truncated}}


@dataclass(frozen=True)
class Answer:
    """The outcome of one question: the SQL, its result, and how sqlweave got there.

    ``error`` is set when no result could be produced (the typed error says why);
    :meth:`raise_for_error` raises it. In a conversation, ``builds_on`` is the 1-based number of the
    earlier turn this answer continues (``None``: it stands on its own). ``confidence`` is the calibrated chance
    that the answer is right (:mod:`sqlweave.confidence`; 0 without a result); ``agreement`` is the share of
    candidates behind it in voting pipelines. Asked with a ``min_confidence`` the answer did not reach, ``unsure`` is
    true and ``readings`` holds the two leading readings of the question (the answer's own first).
    """

    question: str
    sql: str | None
    result: "QueryResult | None"
    trace: tuple[TraceEntry, ...]
    error: SqlweaveError | None = None
    confidence: float | None = None
    builds_on: int | None = None
    agreement: float | None = None
    unsure: bool = False
    readings: tuple[Reading, ...] = ()
    cautions: tuple[str, ...] = ()
    #: The time budget ran out before every stage ran: this is the answer found so far (a caution says so).
    cut_short: bool = False
    #: A follow-up question as the pipeline restated it on its own and answered it (``None``: answered as asked).
    restated: str | None = None
    #: What the stages told the confidence estimate (:class:`~sqlweave.confidence.Signals`).
    signals: Signals = field(default_factory=Signals)

    @property
    def ok(self) -> bool:
        return self.error is None and self.result is not None

    @property
    def usage(self) -> Usage:
        total = Usage()
        for e in self.trace:
            total = total + e.usage
        return total

    @property
    def seconds(self) -> float:
        return sum(e.seconds for e in self.trace)

    @property
    def cost_seconds(self) -> float:
        """:attr:`seconds` with every cached model answer counted at what it first cost: comparable across runs
        that share a response cache."""
        cached = [c for e in self.trace for c in e.calls if c.cached]
        return self.seconds + sum(c.cost_seconds - c.seconds for c in cached)

    @property
    def model_calls(self) -> int:
        return sum(len(e.calls) for e in self.trace)

    def raise_for_error(self) -> "Answer":
        if self.error is not None:
            self.error.details.setdefault("answer", self)
            raise self.error
        return self

    def as_dict(self) -> dict[str, Any]:
        """The answer as every door gives it (:class:`~sqlweave.answer_schema.AnswerSchema`), with its trace."""
        from .answer_schema import AnswerSchema

        return AnswerSchema.of(self).model_dump()


def _start(question: str, db: "Database", llm: LLM, schema: "Schema | None", knowledge: "Knowledge | None",
           resources: Resources | None, **more: Any) -> State:
    """The state a run begins with: the whole schema shown, the database's own knowledge unless given."""
    from .knowledge import knowledge_for

    full = schema if schema is not None else db.schema()
    return State(question=question, db=db, llm=llm, schema=full, prompt_schema=full,
                 knowledge=knowledge if knowledge is not None else knowledge_for(db),
                 resources=resources if resources is not None else shared_resources(), **more)


def _run_stage(stage: Stage, state: State, on_stage: StageCallback | None) -> None:
    """Run one stage, record its trace entry, keep the first error."""
    state._calls, state._notes = [], {}
    start = time.perf_counter()
    error: SqlweaveError | None = None
    try:
        with reading_untrusted_text():  # a model's prose tried as SQL is not echoed by sqlglot on stderr
            stage(state)
    except SqlweaveError as err:
        error = err
    entry = TraceEntry(stage.name, time.perf_counter() - start, tuple(state._calls), dict(state._notes),
                       None if error is None else f"{error.code}: {error.message}", state.sql)
    state.trace.append(entry)
    if error is not None and state.error is None:
        state.error = error
    if on_stage is not None:
        on_stage(entry)


@dataclass(frozen=True)
class Pipeline:
    """A named tuple of stages. Build a variant with :meth:`replace_stage`, :meth:`insert_after` or :meth:`without`.

    ``when_unsure`` runs after the stages when an answer's confidence is below the ``min_confidence`` asked for
    (the presets use :class:`~sqlweave.stages.readings.SecondReadings`); without it an unsure answer's one
    reading is its own.
    """

    name: str
    stages: tuple[Stage, ...]
    when_unsure: Stage | None = None
    #: Seconds one question may take in every call of :meth:`run` (``None``: no limit unless a call asks for one;
    #: the doors apply :attr:`budget`).
    budget_s: float | None = None
    #: With earlier turns (``history``), an :class:`~sqlweave.engine.Engine` restates the question on its own first
    #: (:class:`~sqlweave.stages.restate.RestateFollowUp`, right after ``check_question``): every door asks through
    #: one. (``Pipeline.run`` itself runs the stages it has.)
    restate_follow_ups: bool = True

    def __post_init__(self) -> None:
        check_stage_order(self.name, self.stages)
        if self.budget_s is not None and (isinstance(self.budget_s, bool) or not self.budget_s > 0):
            raise ConfigurationError(f"pipeline {self.name!r}: budget_s must be a number of seconds above 0, "
                                     f"not {self.budget_s!r}", hint="Pass budget_s=60, or None for the preset's.")

    @property
    def budget(self) -> float:
        """The seconds one question may take at a door: :attr:`budget_s`, else the preset's
        (:func:`sqlweave.budget.preset_budget`)."""
        from .budget import preset_budget

        return self.budget_s if self.budget_s is not None else preset_budget(self.name)

    def run(
        self,
        question: str,
        db: "Database",
        llm: LLM,
        *,
        schema: "Schema | None" = None,
        history: Sequence[PriorTurn] = (),
        on_stage: StageCallback | None = None,
        evidence: str | None = None,
        knowledge: "Knowledge | None" = None,
        resources: Resources | None = None,
        min_confidence: float | None = None,
        budget_s: float | None = None,
        cancel: "threading.Event | None" = None,
        on_start: StartCallback | None = None,
        on_sample: SampleCallback | None = None,
    ) -> Answer:
        """Run the stages on ``question`` and return the :class:`Answer`.

        After a stage fails, only stages marked ``recovers = True`` (correction, voting) still run;
        one of them may repair the answer and clear ``state.error``. The first error is kept if
        the repair fails too. ``history`` is a conversation's earlier turns (oldest first);
        ``on_stage`` receives each stage's :class:`TraceEntry` as soon as the stage is done, ``on_start`` a
        stage's name just before it starts, and ``on_sample`` a stage's name with its samples done and asked for
        as each is drawn. ``evidence`` is
        text that helps with this question (blank counts as none); ``knowledge`` is the database's domain
        knowledge, by default what was attached to ``db`` or given as its YAML descriptions file
        (:func:`sqlweave.knowledge.knowledge_for`). ``resources`` is what stages load once and reuse (default:
        :func:`~sqlweave.resources.shared_resources`). Every answer gets a calibrated ``confidence``
        (:mod:`sqlweave.confidence`); below ``min_confidence`` (0 to 1) the answer comes back ``unsure``, with the
        leading readings that :attr:`when_unsure` found (the presets sample the model again).

        ``budget_s`` bounds the question's time (default: the pipeline's own :attr:`budget_s`, else none; the doors
        pass :attr:`budget`, at most their operator's ceiling), and ``cancel`` stops it when set (a client gone): see
        :mod:`sqlweave.budget`. Past the
        budget, the answer found so far comes back ``cut_short``, or a
        :class:`~sqlweave.errors.QuestionTimeoutError` when there is none.
        """
        if min_confidence is not None and (isinstance(min_confidence, bool) or not 0.0 <= min_confidence <= 1.0):
            raise ConfigurationError(f"min_confidence must be a number between 0 and 1, not {min_confidence!r}",
                                     hint="Pass a share such as 0.6 (60%).")

        from .budget import Deadline, within

        if budget_s is not None and (isinstance(budget_s, bool) or not budget_s > 0):
            raise ConfigurationError(f"budget_s must be a number of seconds above 0, not {budget_s!r}",
                                     hint="Pass budget_s=60, or leave it out for the pipeline's own budget.")
        deadline = Deadline.start(budget_s if budget_s is not None else self.budget_s, cancel)
        with within(deadline):
            state = _start(question, db, llm, schema, knowledge, resources, history=tuple(history),
                           evidence=(evidence.strip() or None) if evidence else None, min_confidence=min_confidence)
            return self._finish(state, min_confidence, on_stage, deadline, on_start, on_sample)

    def warm_up(self, db: "Database", llm: LLM, *, schema: "Schema | None" = None,
                knowledge: "Knowledge | None" = None, resources: Resources | None = None) -> bool:
        """Evaluate now the part of this pipeline's first generation prompt that no question changes (instructions,
        schema, knowledge), so that the first question asked of ``db`` evaluates only its own words.

        The stages before generation run on a stand-in question (:data:`WARM_UP_QUESTION`) without the model;
        the generation prompt is then evaluated once (:meth:`LLM.prefill`). ``False`` when nothing was evaluated:
        the model keeps no evaluated prompts (an HTTP model), a stage asks the model before generation, a stage
        failed, or the schema shown depends on the question (one larger than the budget, or pruned).

        >>> from sqlweave.database import Database
        >>> from sqlweave.db.demo import demo_database_path
        >>> from sqlweave.llm import FakeLLM
        >>> from sqlweave.presets import build_pipeline
        >>> build_pipeline("default").warm_up(Database.open(demo_database_path()), FakeLLM([]))  # keeps no prompt
        False
        """
        if not llm.keeps_prompts:
            return False
        state = _start(WARM_UP_QUESTION, db, _NoModel(llm), schema, knowledge, resources)
        for stage in self.stages:
            prompt = getattr(stage, "warm_up_prompt", None)
            if prompt is not None:
                messages = prompt(state)
                if messages is None or state.schema_fit is not None or state.prompt_schema is not state.schema:
                    return False  # what the prompt shows of the schema depends on the question
                return llm.prefill(messages)
            _run_stage(stage, state, None)
            if state.error is not None:
                return False  # a stage asked the model (not warmed: it would be this question's answer) or failed
        return False

    def _finish(self, state: State, min_confidence: float | None, on_stage: StageCallback | None,
                deadline: "Deadline | None" = None, on_start: StartCallback | None = None,
                on_sample: SampleCallback | None = None) -> Answer:
        from .confidence import estimate
        from .sql.fanout import fan_outs

        question, db, full = state.question, state.db, state.schema
        kept: tuple[str | None, "QueryResult", float | None] | None = None  # the last answer that ran, so far
        stopped: list[str] = []  # the stage the deadline stopped, then those it left out
        for stage in self.stages:
            if isinstance(state.error, DatabaseUnavailableError):
                break  # not the SQL's fault: no correction, no vote, no model call can help
            if deadline is not None and deadline.expired():
                stopped.append(stage.name)
                continue
            if state.error is None or getattr(stage, "recovers", False):
                if on_start is not None:
                    on_start(stage.name)
                with reporting(None if on_sample is None else partial(on_sample, stage.name)):
                    _run_stage(stage, state, on_stage)
                if deadline is not None and deadline.expired() and state.trace[-1].error is not None:
                    stopped.append(stage.name)  # it failed as the time ran out: stopped midway
                if state.error is None and state.result is not None:
                    kept = (state.sql, state.result, state.agreement)
        cut_short = False
        if deadline is not None and deadline.expired() and (stopped or deadline.cancelled()):
            if deadline.cancelled():
                state.error = deadline.error()
            elif kept is not None:
                # A stage stopped at the deadline (a vote, a correction) may have left its SQL half changed: the
                # answer is the last one that ran, and says it was cut short.
                state.sql, state.result, state.agreement = kept
                state.error, cut_short = None, True
            else:
                state.error = deadline.error()
        state.confidence = estimate(state.restated_question or question, state.sql, state.result, state.error,
                                    state.signals, db.dialect)
        tie = None
        if state.error is None and state.result is not None:
            from .sql.ties import find_tie

            tie = find_tie(state.result.sql, db)  # LIMIT k whose k-th row ties with the next: one pick of several
            if tie is not None:
                state.confidence *= tie.share
        unsure = (min_confidence is not None and state.error is None and state.result is not None
                  and state.confidence < min_confidence)
        if unsure:
            if self.when_unsure is not None and not (deadline is not None and deadline.expired()):
                if on_start is not None:
                    on_start(self.when_unsure.name)
                with reporting(None if on_sample is None else partial(on_sample, self.when_unsure.name)):
                    _run_stage(self.when_unsure, state, on_stage)
            if not state.readings and state.sql is not None and state.result is not None:
                state.readings = [Reading(state.sql, state.result, 1.0)]
        cautions: tuple[str, ...] = ()
        if cut_short and deadline is not None:
            cautions += (f"Cut short at the question's time budget of {deadline.seconds:g} s: this is the answer "
                         f"found before {', '.join(stopped)} could finish, so it was not checked as fully as "
                         f"usual.",)
        if state.error is None and state.sql is not None:
            cautions += tuple(fan_outs(state.sql, full, db.dialect))
        if tie is not None:
            cautions += (tie.caution(),)
        # The SQL shown is the SQL that ran: the database may have read it as the engine needs (text compared
        # with a number read as one, names quoted as the schema spells them); what the model wrote is in the trace.
        ran = state.result.sql if state.error is None and state.result is not None else state.sql
        readings = tuple(replace(r, sql=r.result.sql) for r in state.readings)
        return Answer(question, ran, state.result, tuple(state.trace), state.error, state.confidence,
                      agreement=state.agreement, unsure=unsure, readings=readings, cautions=cautions,
                      cut_short=cut_short, restated=state.restated_question, signals=state.signals)

    def _index(self, name: str) -> int:
        for i, s in enumerate(self.stages):
            if s.name == name:
                return i
        raise PipelineError(f"pipeline {self.name!r} has no stage {name!r}",
                            hint=f"Its stages are: {', '.join(s.name for s in self.stages)}.")

    def stage(self, name: str) -> Stage:
        """The stage called ``name`` (:class:`~sqlweave.errors.PipelineError` naming the stages if none is)."""
        return self.stages[self._index(name)]

    def replace_stage(self, name: str, stage: Stage) -> "Pipeline":
        i = self._index(name)
        return replace(self, stages=self.stages[:i] + (stage,) + self.stages[i + 1:])

    def insert_after(self, name: str, stage: Stage) -> "Pipeline":
        i = self._index(name)
        return replace(self, stages=self.stages[: i + 1] + (stage,) + self.stages[i + 1:])

    def insert_before(self, name: str, stage: Stage) -> "Pipeline":
        i = self._index(name)
        return replace(self, stages=self.stages[:i] + (stage,) + self.stages[i:])

    def without(self, name: str) -> "Pipeline":
        i = self._index(name)
        return replace(self, stages=self.stages[:i] + self.stages[i + 1:])
