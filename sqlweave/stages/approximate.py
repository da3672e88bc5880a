"""Stage: an approximated query (ASTReS): a cheap zero-shot first pass whose SQL later stages use
to size schema pruning and to rank examples. It never fails the pipeline: without SQL, the
approximation is simply absent."""

from __future__ import annotations

from dataclasses import dataclass

from ..db.render import render_schema
from ..errors import SqlweaveError
from ..llm.base import Message
from ..pipeline import State
from ..prompts import render
from ..sql.extract import extract_sql
from .generate import dialect_name, prompt_fields


@dataclass(frozen=True)
class ApproximateQuery:
    """Put a first-pass SQL in ``state.extras["approx_sql"]`` (full schema, zero-shot prompt)."""

    style: str = "create_table"
    max_tokens: int = 256
    name: str = "approximate"

    def __call__(self, state: State) -> None:
        rendered = render_schema(state.schema, self.style, count=state.llm.count_tokens)
        system, user = render("zero_shot", dialect=dialect_name(state.db.dialect), schema=rendered.text,
                              **prompt_fields(state))
        out = state.complete([Message("system", system), Message("user", user)], temperature=0.0,
                             max_tokens=self.max_tokens)
        try:
            sql = extract_sql(out.text, state.db.dialect)
        except SqlweaveError:
            sql = None
        state.extras["approx_sql"] = sql
        state.note(approx_sql=sql)
