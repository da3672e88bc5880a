"""Stage: generated evidence (RB-SQL, appendix C).

Before generation, the model writes short evidence for the question: one sentence that maps the
question's words to the schema (which table and column an entity is, how a value is spelled in the
database, which formula a quantity is), with the paper's instruction and worked example (template
``prompts/generate_evidence.txt``) over the schema the prompt shows (pruned, if a pruning stage ran, with its
sample rows) and the question. The sentence goes to ``state.evidence``, which generation (and correction)
prompts show just before the question, as they show a user's evidence.

A question that already carries evidence (the user's, or a dataset's such as BIRD's) keeps it: by default
(``user_evidence="skip"``) the stage makes no model call, since the user's evidence is the authority and a
generated sentence could only contradict it; with ``user_evidence="combine"`` the generated sentence is
added after the user's.

A small model can answer with something that is not evidence. The answer is rejected, no evidence kept and
the reason noted (``rejected``), when it is empty or a SQL query; a model error is handled the same way
(evidence is an aid, never a reason to fail). Long answers are cut after ``max_sentences`` sentences.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.pipeline import State
>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> from sqlweave.stages.render_schema import RenderSchema
>>> db = Database.open(demo_database_path())
>>> state = State("How many Canadian customers?", db,
...               FakeLLM(["Canadian customers are rows of customers with country = 'Canada'."]),
...               db.schema(), db.schema())
>>> RenderSchema()(state); GenerateEvidence()(state)
>>> state.evidence
"Canadian customers are rows of customers with country = 'Canada'."
>>> clean_evidence("[Evidence]\\nThe total is SUM(price) in orders. It counts all rows. More.", 2)
'The total is SUM(price) in orders. It counts all rows.'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from ..errors import ConfigurationError, LLMError, PipelineError
from ..llm.base import Message
from ..pipeline import State
from ..prompts import render
from .base import BaseStage
from .generate import dialect_name, knowledge_block, prompt_question

_LABEL = re.compile(r"^\s*(?:\[\s*evidence\s*\]|\**evidence\**\s*:)\s*", re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z]*\n?|```")
_SQL = re.compile(r"^\s*select\s[\s\S]*\bfrom\b|^\s*with\s+\w+\s+as\s*\(|^\s*```\s*sql", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(`])")

USER_EVIDENCE = ("skip", "combine")


def clean_evidence(text: str, max_sentences: int = 2) -> str:
    """The evidence in a model answer: without a label or code fences, on one line, at most ``max_sentences``
    sentences; ``""`` when the answer is a SQL query or empty."""
    if _SQL.search(text.strip()):
        return ""
    lines: list[str] = []
    for line in _FENCE.sub("", text).splitlines():
        line = _LABEL.sub("", line).strip()
        if not line:
            if lines:
                break  # the first paragraph only
            continue
        if line.startswith("["):  # the model went on with another [Section]
            break
        lines.append(line)
    body = " ".join(" ".join(lines).split())
    if not body or _SQL.search(body):
        return ""
    sentences = _SENTENCE_END.split(body)
    return " ".join(sentences[:max_sentences]).strip()


@dataclass(frozen=True)
class GenerateEvidence(BaseStage):
    """Write ``state.evidence`` from the rendered prompt schema and the question (one model call).

    ``user_evidence``: what to do when the question already has evidence, ``"skip"`` (keep it alone) or
    ``"combine"`` (the user's, then the generated sentence).
    """

    prompt: str = "generate_evidence"
    temperature: float = 0.0
    max_tokens: int = 96
    max_sentences: int = 2
    user_evidence: str = "skip"
    name: str = "generate_evidence"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    provides: ClassVar[tuple[str, ...]] = ("evidence",)

    def __post_init__(self) -> None:
        if self.user_evidence not in USER_EVIDENCE:
            raise ConfigurationError(f"unknown user_evidence {self.user_evidence!r}",
                                     hint=f"Use one of: {', '.join(USER_EVIDENCE)}.")

    def __call__(self, state: State) -> None:
        given = state.evidence
        if given and self.user_evidence == "skip":
            state.note(skipped="the question has evidence", evidence=given)
            return
        if state.rendered_schema is None:
            raise PipelineError("generate_evidence needs a rendered schema",
                                hint="Put a render_schema stage before generate_evidence.")
        system, user = render(self.prompt, dialect=dialect_name(state.db.dialect), schema=state.rendered_schema.text,
                              question=prompt_question(state), knowledge=knowledge_block(state))
        try:
            out = state.complete([Message("system", system), Message("user", user)], temperature=self.temperature,
                                 max_tokens=self.max_tokens)
        except LLMError as err:
            state.note(rejected="model_error", error=f"{err.code}: {err.message}")
            return
        evidence = clean_evidence(out.text, self.max_sentences)
        if not evidence:
            state.note(rejected="sql" if _SQL.search(out.text.strip()) else "empty", raw=out.text)
            return
        state.evidence = f"{given}\n{evidence}" if given else evidence
        state.note(evidence=evidence, combined=bool(given))
