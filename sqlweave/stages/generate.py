"""Stage: ask the model for SQL (zero-shot: instructions, schema, question)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import PipelineError
from ..llm.base import Message
from ..pipeline import State
from ..prompts import render

_DIALECT_NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL", "duckdb": "DuckDB", "mysql": "MySQL"}


def dialect_name(dialect: str) -> str:
    return _DIALECT_NAMES.get(dialect, dialect)


@dataclass(frozen=True)
class GenerateSQL:
    """Prompt the model with template ``prompt`` and keep its raw answer in ``state.raw_output``."""

    prompt: str = "zero_shot"
    temperature: float = 0.0
    max_tokens: int = 384
    name: str = "generate"

    def __call__(self, state: State) -> None:
        if state.rendered_schema is None:
            raise PipelineError("generate needs a rendered schema", hint="Put a render_schema stage before generate.")
        system, user = render(
            self.prompt,
            dialect=dialect_name(state.db.dialect),
            schema=state.rendered_schema.text,
            question=state.question,
            examples=state.extras.get("examples_text", ""),
        )
        state.prompt = [Message("system", system), Message("user", user)]
        state.extras["prompt_template"] = self.prompt
        out = state.complete(state.prompt, temperature=self.temperature, max_tokens=self.max_tokens)
        state.raw_output = out.text
