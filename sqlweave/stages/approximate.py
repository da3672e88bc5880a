"""Stage: an approximated query (ASTReS): a cheap zero-shot first pass whose SQL later stages use
to size schema pruning and to rank examples. It never fails the pipeline: without SQL, the
approximation is simply absent. A schema too large for the model's context is first fitted to the
schema budget by retrieval (:mod:`sqlweave.stages.render_schema`): the approximation runs on that part,
and schema pruning then prunes it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import SqlweaveError
from ..pipeline import State
from ..sql.extract import extract_sql
from .base import BaseStage
from .generate import generation_prompt
from .render_schema import DEFAULT_RESERVE_TOKENS, fit_schema, schema_budget


@dataclass(frozen=True)
class ApproximateQuery(BaseStage):
    """Put a first-pass SQL in ``state.approx_sql`` (full schema, zero-shot prompt).

    ``budget``, ``context_tokens``, ``reserve_tokens`` and ``retrievers``: the schema budget, as
    :class:`~sqlweave.stages.render_schema.RenderSchema` has them."""

    style: str = "create_table"
    max_tokens: int = 256
    budget: int | None = None
    context_tokens: int | None = None
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    retrievers: str = "auto"
    name: str = "approximate"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    provides: ClassVar[tuple[str, ...]] = ("approx_sql", "schema_fit", "schema_fit_key")

    def __call__(self, state: State) -> None:
        budget = schema_budget(state, budget=self.budget, context=self.context_tokens, reserve=self.reserve_tokens)
        rendered, fit = fit_schema(state, state.schema, self.style, budget, self.retrievers)
        if fit is not None:
            state.note(**fit.notes())
        out = state.complete(generation_prompt(state, "zero_shot", rendered.text), temperature=0.0,
                             max_tokens=self.max_tokens)
        try:
            sql = extract_sql(out.text, state.db.dialect, schema=state.schema)
        except SqlweaveError:
            sql = None
        state.approx_sql = sql
        state.note(approx_sql=sql)
