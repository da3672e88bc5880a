"""Stage: render the prompt schema as text for the model, within the model's context.

The schema part of a prompt has a token budget: the model's context (the embedded model's ``n_ctx``; for a
backend that does not say, :data:`DEFAULT_CONTEXT_TOKENS`) less the rest of the generation prompt
(instructions, conversation, values, question) and :data:`DEFAULT_RESERVE_TOKENS` for the answer, a few-shot
prompt's examples and a correction's extra turns. A schema that fits is rendered whole, exactly as without a
budget. One that does not is never cut off or sent whole: BM25 and RB-SQL's dense retrievers over its tables
and columns (no model call) choose the tables that fit, best first, with the tables the question names, the
columns of the values it names and the foreign-key bridges between kept tables
(:func:`sqlweave.retrieval.budget_fit.fit_to_budget`); the trace says what was left out.

``state.prompt_schema`` is left as it is: the budget limits what a prompt can show of it, so a correction's
full-schema fallback (which widens a *pruned* schema) has nothing wider to show. The fit is kept in
``state.schema_fit`` (:func:`fitted_schema` reads it), where the approximation stage leaves it for
schema pruning, which then prunes the fitted schema.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> from sqlweave.pipeline import State
>>> db = Database.open(demo_database_path())
>>> s = db.schema()
>>> state = State("How many customers?", db, FakeLLM(), s, s)
>>> RenderSchema()(state)
>>> state.rendered_schema.text == render_schema(s).text
True
>>> RenderSchema(budget=300, retrievers="bm25")(state)
>>> state.rendered_schema.tokens <= 300, "customers" in state.rendered_schema.text
(True, True)
>>> sorted(state._notes)[:4]
['columns', 'columns_left_out', 'exact_count', 'kept_first']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..db.render import RenderedSchema, render_schema
from ..schema import Schema
from ..errors import ConfigurationError
from ..pipeline import State
from ..prompts import render
from ..resources import HashedKey
from ..retrieval.budget_fit import BudgetFit, fit_to_budget
from .base import BaseStage, check_options
from .generate import dialect_name, prompt_fields

#: The context assumed for a backend that does not state its own (OpenAI-compatible servers).
DEFAULT_CONTEXT_TOKENS = 32768

#: Tokens kept free besides the measured prompt: the answer (384), a few-shot prompt's examples, the turns a
#: correction adds to the conversation, and the schema links that ``link_schema`` adds after this stage (three
#: short lines at most).
DEFAULT_RESERVE_TOKENS = 2048

#: Chat-template tokens around the system and user messages.
_CHAT_OVERHEAD = 16

#: Schemas with more tables than this have their whole rendering kept in memory between questions.
_MEMO_TABLES = 50

#: Renderings (whole, or per-table token counts) a :class:`~sqlweave.resources.Resources` keeps, least recently
#: used out first; the kind they are kept under.
RENDERINGS = 16
RENDERING = "schema_rendering"

#: ``retrievers`` setting -> the ``dense`` argument of :func:`fit_to_budget` (``None``: when installed).
RETRIEVERS: dict[str, bool | None] = {"auto": None, "bm25": False, "bm25+dense": True}


def context_tokens(llm: Any) -> int | None:
    """The model's context size in tokens, when the backend (or the one a cache wraps) states it.

    >>> from types import SimpleNamespace
    >>> context_tokens(SimpleNamespace(inner=SimpleNamespace(n_ctx=8192)))
    8192
    """
    seen: set[int] = set()
    while llm is not None and id(llm) not in seen:
        seen.add(id(llm))
        for attr in ("n_ctx", "context_tokens"):
            n = getattr(llm, attr, None)
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                return n
        llm = getattr(llm, "inner", None)
    return None


def schema_budget(state: State, *, budget: int | None = None, context: int | None = None,
                  reserve: int = DEFAULT_RESERVE_TOKENS) -> int:
    """Tokens the schema may take in ``state``'s prompts: ``budget`` if given, else the context (``context``,
    the model's, or :data:`DEFAULT_CONTEXT_TOKENS`) less ``reserve`` and the generation prompt without its
    schema."""
    if budget is not None:
        return max(0, int(budget))
    ctx = context or context_tokens(state.llm) or DEFAULT_CONTEXT_TOKENS
    system, user = render("zero_shot", dialect=dialect_name(state.db.dialect), schema="", **prompt_fields(state))
    rest = state.llm.count_tokens(system)[0] + state.llm.count_tokens(user)[0] + _CHAT_OVERHEAD
    return max(0, ctx - reserve - rest)


def _memo(state: State, kind: str, schema: Schema, style: str, make: Any) -> Any:
    """``make()``, once per schema, style and model, kept by ``state.resources`` (the last :data:`RENDERINGS`):
    what a large schema costs to render. The key is the schema itself, so two databases, or two policies' views
    of one, never share a rendering."""
    llm = state.llm
    key = HashedKey((kind, schema, style, type(llm).__name__, getattr(llm, "model_id", "")))
    return state.resources.get(RENDERING, key, make, keep=RENDERINGS)


def _table_costs(state: State, schema: Schema, style: str) -> dict[str, int]:
    """Tokens of each table rendered alone."""
    llm = state.llm
    return _memo(state, "costs", schema, style, lambda: {
        t.name: render_schema(schema.subset({t.name: None}), style, count=llm.count_tokens).tokens
        for t in schema.tables})


def fit_schema(state: State, schema: Schema, style: str, budget: int,
               retrievers: str = "auto") -> tuple[RenderedSchema, BudgetFit | None]:
    """``schema`` rendered in ``style``, whole when it fits ``budget`` tokens, else the part that fits
    (the :class:`BudgetFit`, also kept in ``state.schema_fit``; ``None`` when it fits whole)."""
    if retrievers not in RETRIEVERS:
        raise ConfigurationError(f"unknown schema retrievers {retrievers!r}", hint=f"Use one of: {', '.join(RETRIEVERS)}.")
    count = state.llm.count_tokens
    if len(schema.tables) > _MEMO_TABLES:  # a large schema is rendered and counted once
        rendered = _memo(state, "full", schema, style, lambda: render_schema(schema, style, count=count))
    else:
        rendered = render_schema(schema, style, count=count)
    if rendered.tokens <= budget:
        return rendered, None
    key = (id(schema), style, budget, retrievers)
    fit = state.schema_fit
    if fit is None or state.schema_fit_key != key:
        values = [(v.table, v.column) for v in state.values or ()]
        fit = fit_to_budget(schema, state.question, budget, lambda s: render_schema(s, style, count=count).tokens,
                            tokens_before=rendered.tokens, dense=RETRIEVERS[retrievers], also_keep=values,
                            table_costs=_table_costs(state, schema, style), resources=state.resources)
        state.schema_fit, state.schema_fit_key = fit, key
    return render_schema(fit.schema, style, count=count), fit


def fitted_schema(state: State) -> Schema:
    """The whole schema, or, when it did not fit the model's context, the part of it an earlier stage fitted
    (what a pruning stage prunes, and what a full-schema fallback can show)."""
    fit = state.schema_fit
    if isinstance(fit, BudgetFit) and (state.schema_fit_key or (None,))[0] == id(state.schema):
        return fit.schema
    return state.schema


@dataclass(frozen=True)
class RenderSchema(BaseStage):
    """Render ``state.prompt_schema`` in ``style`` (``create_table`` or ``compact``) within the schema budget,
    and count its tokens.

    ``budget``: the schema's tokens at most (``None``: derived from the model's context, see the module
    docstring); ``context_tokens`` overrides the model's context size; ``reserve_tokens`` is the room kept
    for the answer and later turns; ``retrievers`` chooses what fits a schema that is too large: ``auto``
    (BM25, and the dense retrievers when the embedding extra is installed), ``bm25`` or ``bm25+dense``.
    """

    style: str = "create_table"
    budget: int | None = None
    context_tokens: int | None = None
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    retrievers: str = "auto"
    name: str = "render_schema"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    provides: ClassVar[tuple[str, ...]] = ("rendered_schema", "schema_fit", "schema_fit_key")

    def __post_init__(self) -> None:
        from ..db.render import STYLES

        check_options(self, choices={"style": tuple(STYLES), "retrievers": tuple(RETRIEVERS)},
                      at_least={"budget": 1, "context_tokens": 1, "reserve_tokens": 0},
                      optional=("budget", "context_tokens"))

    def __call__(self, state: State) -> None:
        budget = schema_budget(state, budget=self.budget, context=self.context_tokens, reserve=self.reserve_tokens)
        rendered, fit = fit_schema(state, state.prompt_schema, self.style, budget, self.retrievers)
        shown = fit.schema if fit else state.prompt_schema
        state.rendered_schema = rendered
        state.note(style=rendered.style, tables=len(shown.tables), columns=sum(len(t.columns) for t in shown.tables),
                   schema_tokens=rendered.tokens, exact_count=rendered.tokens_exact, schema_budget=budget)
        if fit is not None:
            state.note(**fit.notes())
