"""Stage: a follow-up question restated on its own, before anything reads it (conversations).

"How many are there?" after "Which customers are from Canada?" is answered far better as "How many customers are
from Canada?" than from the earlier turns in the prompt alone (``benchmarks/bench_conversations.py``: 48.5% of
follow-up turns right restated, 30.3% with the earlier turns only). Every door asks follow-ups through
:meth:`Engine.run <sqlweave.engine.Engine.run>` with the earlier turns as ``history``, which puts this stage right
after ``check_question`` (:func:`sqlweave.engine.with_follow_ups`, unless :attr:`Pipeline.restate_follow_ups
<sqlweave.pipeline.Pipeline.restate_follow_ups>` is off), so the library, ``sqlweave chat``, the HTTP API, the web
page and MCP restate alike. Later stages read the restated question as
``state.question``; the answer keeps the user's own words as its ``question`` and the restated one as ``restated``.

A model that fails, or answers with something that is not a question, leaves the question as asked (noted as
``fallback``): restating is an aid, never a reason to fail.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.pipeline import PriorTurn, State
>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> db = Database.open(demo_database_path())
>>> state = State("How many are there?", db, FakeLLM(["How many customers are from Canada?"]), db.schema(),
...               db.schema(), history=(PriorTurn("Which customers are from Canada?",
...                                               "SELECT * FROM customers WHERE country = 'Canada'"),))
>>> RestateFollowUp()(state)
>>> state.question, state.restated_question
('How many customers are from Canada?', 'How many customers are from Canada?')
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from ..errors import LLMError
from ..llm.base import Message
from ..pipeline import PriorTurn, State
from .base import BaseStage

#: Instructions of the rewriting call (:class:`RestateFollowUp`).
REWRITE_SYSTEM = (
    "You rewrite the last question of a conversation about a database so that it can be understood on its own. "
    "Replace words such as they, them, their, those, it, that, and phrases such as \"only ...\" or \"what about "
    "...\", with what they refer to in the earlier questions. Keep everything the earlier questions established that "
    "the last question still needs. Answer with the rewritten question alone, on one line."
)

_LEAD = re.compile(r"^\s*(?:\*\*)?(?:rewritten(?: last)? question|question)\s*[:：]\s*(?:\*\*)?\s*", re.I)


def rewrite_prompt(question: str, history: Sequence[PriorTurn]) -> list[Message]:
    """The messages of the rewriting call: the earlier questions with their SQL, then the last question.

    >>> print(rewrite_prompt("How old are they?", [PriorTurn("Which singers are French?",
    ...       "SELECT Name FROM singer WHERE Country = 'France'")])[1].content)
    Earlier questions:
    Question 1: Which singers are French?
    SQL 1: SELECT Name FROM singer WHERE Country = 'France'
    <BLANKLINE>
    Last question: How old are they?
    Rewritten last question:
    """
    lines = ["Earlier questions:"]
    for i, turn in enumerate(history, 1):
        lines.append(f"Question {i}: {' '.join(turn.question.split())}")
        if turn.sql:
            lines.append(f"SQL {i}: {' '.join(turn.sql.split())}")
    lines += ["", f"Last question: {' '.join(question.split())}", "Rewritten last question:"]
    return [Message("system", REWRITE_SYSTEM), Message("user", "\n".join(lines))]


def parse_rewrite(text: str, question: str) -> str | None:
    """The rewritten question in the model's answer, or ``None`` when the answer is not usable as one.

    >>> parse_rewrite('Rewritten last question: "How old are the singers from France?"', "How old are they?")
    'How old are the singers from France?'
    >>> parse_rewrite("SELECT avg(Age) FROM singer", "How old are they?") is None
    True
    """
    line = next((ln for ln in text.strip().splitlines() if ln.strip()), "")
    if "```" in line:
        return None
    line = _LEAD.sub("", line).strip().strip('"\'`*').strip()
    if not line or len(line) > 4 * len(question) + 200 or re.match(r"(?i)^(select|with)\b", line):
        return None
    return line




class RestateFollowUp(BaseStage):
    """Restate ``state.question`` on its own when it follows earlier turns (``state.history``)."""

    name = "rewrite_question"
    recovers = False
    requires: tuple[str, ...] = ()
    provides: tuple[str, ...] = ("question", "restated_question")

    def __init__(self, max_tokens: int = 96) -> None:
        self.max_tokens = max_tokens

    def __call__(self, state: State) -> None:
        if not state.history:
            state.note(skipped="no earlier turns")
            return
        question = state.question
        try:
            out = state.complete(rewrite_prompt(question, state.history), temperature=0.0,
                                 max_tokens=self.max_tokens)
        except LLMError as err:
            state.note(question=question, rewritten=None, fallback="model failed", error=err.code)
            return
        rewritten = parse_rewrite(out.text, question)
        notes: dict[str, Any] = {"question": question, "rewritten": rewritten or question}
        if rewritten is None:
            notes["fallback"] = "the answer was not a question"
        state.note(**notes)
        if rewritten is not None and rewritten != question:
            state.question = state.restated_question = rewritten


__all__ = ["REWRITE_SYSTEM", "RestateFollowUp", "parse_rewrite", "rewrite_prompt"]
