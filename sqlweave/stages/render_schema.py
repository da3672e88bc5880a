"""Stage: render the prompt schema as text for the model."""

from __future__ import annotations

from dataclasses import dataclass

from ..db.render import render_schema
from ..pipeline import State


@dataclass(frozen=True)
class RenderSchema:
    """Render ``state.prompt_schema`` in ``style`` (``create_table`` or ``compact``) and count its tokens."""

    style: str = "create_table"
    name: str = "render_schema"

    def __call__(self, state: State) -> None:
        rendered = render_schema(state.prompt_schema, self.style, count=state.llm.count_tokens)
        state.rendered_schema = rendered
        state.note(style=rendered.style, tables=len(state.prompt_schema.tables),
                   columns=sum(len(t.columns) for t in state.prompt_schema.tables),
                   schema_tokens=rendered.tokens, exact_count=rendered.tokens_exact)
