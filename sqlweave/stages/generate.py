"""Stage: ask the model for SQL (zero-shot: instructions, schema, question).

The question part of the prompt comes from :func:`prompt_fields`, which every stage that
rebuilds a generation prompt uses (approximation, the correction's full-schema fallback), so
they all show the same thing: the prompt blocks earlier stages added (``state.prompt_blocks``: the
examples, the database values that match the question, the question's words for schema names; each
only when its stage found some) and the question (or, when a simplification stage asked for it, the
simplified question with the original wording). Without those optional stages the prompt is exactly
the plain template.

>>> from types import SimpleNamespace
>>> prompt_question(SimpleNamespace(question="How many singers?", prompt_question=None))
'How many singers?'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import PipelineError
from ..llm.base import Message
from ..pipeline import State
from ..prompts import load, render
from ..question import language_block
from .base import BaseStage, check_options

_DIALECT_NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL", "duckdb": "DuckDB", "mysql": "MySQL"}

#: The line that introduces selected values in generation prompts (the ``values`` block).
VALUES_HEADER = "Values from the database that match the question:"


def dialect_name(dialect: str) -> str:
    return _DIALECT_NAMES.get(dialect, dialect)


def headed_block(header: str, text: object) -> str:
    """``text`` under ``header`` and followed by a blank line, or ``""`` when ``text`` is empty or blank: the
    shape of every optional block of a generation prompt.

    >>> headed_block("Evidence:", "x > 1"), headed_block("Evidence:", None), headed_block("Evidence:", "\\n  ")
    ('Evidence:\\nx > 1\\n\\n', '', '')
    """
    body = str(text or "").strip("\n")
    return f"{header}\n{body}\n\n" if body.strip() else ""


#: The line that introduces the question's words that name tables or columns otherwise (the ``links`` block).
LINKS_HEADER = "Words of the question that mean these tables or columns:"

#: The prompt blocks a generation template shows where earlier stages added none (``state.prompt_blocks``).
PROMPT_BLOCKS = ("examples", "values", "links")


def prompt_question(state: Any) -> str:
    """The question as generation prompts show it: ``state.prompt_question`` if a stage set one
    (question simplification with ``use_for_generation``), else ``state.question``."""
    return str(state.prompt_question or state.question)


#: The line that introduces a conversation's earlier turns in generation prompts.
HISTORY_HEADER = "Earlier questions in this conversation, oldest first, with the SQL that answered them:"


def history_block(state: Any) -> str:
    """The prompt block of a conversation's earlier turns (``state.history``), or ``""`` outside a conversation.

    >>> from types import SimpleNamespace
    >>> from sqlweave.pipeline import PriorTurn
    >>> print(history_block(SimpleNamespace(history=(PriorTurn("Which singers are French?",
    ...       "SELECT Name FROM singer WHERE Country = 'France'"),))), end="")
    Earlier questions in this conversation, oldest first, with the SQL that answered them:
    1. Which singers are French?
       SQL: SELECT Name FROM singer WHERE Country = 'France'
    <BLANKLINE>
    The question below may refer to them (they, those, that, only ...): answer it as a follow-up.
    <BLANKLINE>
    """
    turns = getattr(state, "history", ()) or ()
    if not turns:
        return ""
    lines = [HISTORY_HEADER]
    for i, turn in enumerate(turns, 1):
        lines.append(f"{i}. {' '.join(turn.question.split())}")
        lines.append(f"   SQL: {' '.join(turn.sql.split()) if turn.sql else '(no answer)'}")
    lines.append("")
    lines.append("The question below may refer to them (they, those, that, only ...): answer it as a follow-up.")
    return "\n".join(lines) + "\n\n"


#: The line that introduces a question's evidence in generation prompts.
EVIDENCE_HEADER = "Evidence (facts that help answer the question):"


def evidence_block(state: Any) -> str:
    """The prompt block of the question's evidence (``state.evidence``), or ``""`` when it has none.

    >>> from types import SimpleNamespace
    >>> print(evidence_block(SimpleNamespace(evidence="French singers have Country = 'France'.")), end="")
    Evidence (facts that help answer the question):
    French singers have Country = 'France'.
    <BLANKLINE>
    >>> evidence_block(SimpleNamespace(evidence=None))
    ''
    """
    return headed_block(EVIDENCE_HEADER, str(getattr(state, "evidence", None) or "").strip())


def knowledge_block(state: Any) -> str:
    """The prompt block of the database's domain knowledge that fits the question (business terms, preferred
    joins between the prompt's tables, sample questions; see :meth:`sqlweave.knowledge.Knowledge.prompt_block`),
    or ``""`` without a knowledge file or when nothing in it fits."""
    knowledge = getattr(state, "knowledge", None)
    if knowledge is None:
        return ""
    return knowledge.prompt_block(state.question, getattr(state, "prompt_schema", None))


def prompt_fields(state: Any) -> dict[str, str]:
    """Template fields that depend on earlier stages: ``question``, the prompt blocks stages added
    (``state.prompt_blocks``: ``examples``, ``values``, ``links``, empty where none was added), ``history``,
    ``knowledge``, ``evidence`` and ``language`` (a word on the question's language when the check stage found it
    is not English).

    >>> from types import SimpleNamespace
    >>> fields = prompt_fields(SimpleNamespace(question="How many singers?", prompt_question=None,
    ...                                        question_language=None, prompt_blocks={"values": "- x\\n\\n"}))
    >>> fields["values"], fields["links"], fields["question"]
    ('- x\\n\\n', '', 'How many singers?')
    """
    return {**dict.fromkeys(PROMPT_BLOCKS, ""), **getattr(state, "prompt_blocks", {}),
            "question": prompt_question(state), "history": history_block(state),
            "language": language_block(state.question_language),
            "knowledge": knowledge_block(state), "evidence": evidence_block(state)}


def generation_prompt(state: State, template: str, schema: str, **fields: str) -> list[Message]:
    """The generation conversation of ``template`` over ``schema`` (prompt text) and the question's fields
    (:func:`prompt_fields`, or ``fields`` in their place): what generation asks, and what a stage asking again
    with another schema or other examples asks."""
    system, user = render(template, dialect=dialect_name(state.db.dialect), schema=schema,
                          **{**prompt_fields(state), **fields})
    return [Message("system", system), Message("user", user)]


@dataclass(frozen=True)
class GenerateSQL(BaseStage):
    """Prompt the model with template ``prompt`` and keep its raw answer in ``state.raw_output``."""

    prompt: str = "zero_shot"
    temperature: float = 0.0
    max_tokens: int = 384
    #: Hold the answer to the grammar of the queries the shown schema allows (:mod:`sqlweave.sql.grammar`).
    grammar: bool = False
    name: str = "generate"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()  # a rendered schema, from any stage (checked when it runs)
    provides: ClassVar[tuple[str, ...]] = ("raw_output", "prompt", "prompt_template")

    def __post_init__(self) -> None:
        check_options(self, at_least={"max_tokens": 1}, between={"temperature": (0.0, 2.0)})
        load(self.prompt)  # an unknown prompt template fails here

    def __call__(self, state: State) -> None:
        if state.rendered_schema is None:
            raise PipelineError("generate needs a rendered schema", hint="Put a render_schema stage before generate.")
        state.prompt = generation_prompt(state, self.prompt, state.rendered_schema.text)
        state.prompt_template = self.prompt
        out = state.complete(state.prompt, temperature=self.temperature, max_tokens=self.max_tokens,
                             **self._constraint(state))
        state.raw_output = out.text

    def warm_up_prompt(self, state: State) -> list[Message] | None:
        """The prompt this stage would send for ``state`` (:meth:`~sqlweave.pipeline.Pipeline.warm_up`)."""
        if state.rendered_schema is None:
            return None
        return generation_prompt(state, self.prompt, state.rendered_schema.text)

    def _constraint(self, state: State) -> dict[str, str]:
        """The ``grammar`` option of the call: the schema's query grammar, when asked for and the model can."""
        if not self.grammar:
            return {}
        if not state.llm.supports_grammar:
            state.note(grammar=f"{state.llm.model_id} cannot follow a grammar: the answer was generated without one")
            return {}
        from ..sql.grammar import schema_grammar

        shown = state.shown_schema
        state.note(grammar=f"queries over the {len(shown.tables)} tables shown")
        return {"grammar": schema_grammar(shown, state.db.dialect)}
