"""The model chooses between candidate queries: pairwise (CHASE-SQL's selector) or by reviewer reranking.

Majority voting over execution results picks the largest group of agreeing candidates; when the runner-up group
is nearly as large, the vote is close to a coin toss. :func:`choose_between` shows the model the question, the
schema and one query of each group with the first rows of its result, and asks which one answers the question.
A small model prefers whichever query it is shown first (the embedded 1.5B model wrote "A" in both orders for
every close vote of the 200-question sample), so it is asked twice with the order swapped. Where the backend can
score choices (the embedded model), the model's probability of each letter is read instead of its reply, and the
probabilities that it holds each query right are averaged over the two orders: the position preference adds the
same to both queries and cancels, and the query with the higher average wins. Otherwise a written choice counts
only when the model makes it in both orders. When neither decides, the caller keeps the majority.

:func:`review` asks the other way round (reviewer reranking, Zhang et al. 2022): how likely is the user's question
as the model's description of each query? The query under which the question is the most likely wins. It needs a
backend that scores an answer (the embedded model) and no position is involved.

>>> letter("B")
'B'
>>> letter("Query A is correct because ...")
'A'
>>> letter("Both are fine.") is None
True
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..cells import text_cell
from ..db.connection import QueryResult
from ..errors import LLMResponseError, SqlweaveError
from ..llm.base import Message
from ..pipeline import State
from ..prompts import render
from ..text import visible
from .candidate import Attempt
from .generate import dialect_name, evidence_block, knowledge_block

#: Rows of each result the model is shown, and characters of each value.
PREVIEW_ROWS = 5
PREVIEW_CHARS = 40

_LETTER = re.compile(r"\b(?:query\s+)?([AB])\b")


def letter(text: str) -> str | None:
    """The first standalone ``A`` or ``B`` of a model's reply (``None`` when it names neither)."""
    found = _LETTER.search(text.strip())
    return found.group(1) if found else None


def preview(result: QueryResult | None, rows: int = PREVIEW_ROWS) -> str:
    """A result as one short line for a prompt: its row count, columns and first ``rows`` rows.

    >>> from sqlweave.db.connection import QueryResult
    >>> preview(QueryResult("q", ("name", "age"), (("Ann", 31), ("Bo", None)), False, 0.0))
    '2 rows (name, age): (Ann, 31); (Bo, NULL)'
    """
    if result is None:
        return "no result"
    count = f"{result.row_count}{'+' if result.truncated else ''} row{'s' if result.row_count != 1 else ''}"
    shown = "; ".join("(" + ", ".join(visible(text_cell(v), max_chars=PREVIEW_CHARS) for v in row) + ")"
                      for row in result.rows[:rows])
    more = f"; ... {result.row_count - rows} more" if result.row_count > rows else ""
    cols = ", ".join(visible(c, max_chars=PREVIEW_CHARS) for c in result.columns)
    return f"{count} ({cols}): {shown}{more}"


def _messages(state: State, template: str, **fields: str) -> list[Message]:
    """Template ``template`` over the prompt's schema, the dialect and the question's knowledge and evidence."""
    schema = state.rendered_schema.text if state.rendered_schema is not None else ""
    system, user = render(template, dialect=dialect_name(state.db.dialect), schema=schema,
                          knowledge=knowledge_block(state), evidence=evidence_block(state), **fields)
    return [Message("system", system), Message("user", user)]


def _prompt(state: State, a: Attempt, b: Attempt) -> list[Message]:
    return _messages(state, "choose", question=state.question, sql_a=a.sql or "", rows_a=preview(a.result),
                     sql_b=b.sql or "", rows_b=preview(b.result))


def _scores(texts: tuple[str, ...], n: int) -> list[float]:
    """The ``n`` numbers a scoring call answered; anything else is a typed error."""
    try:
        values = [float(t) for t in texts]
    except ValueError:
        values = []
    if len(values) != n:
        raise LLMResponseError(f"the model's scores are not {n} number(s): {list(texts)}")
    return values


def _chance_a(state: State, a: Attempt, b: Attempt) -> float:
    """The model's probability that its reply begins with ``A`` rather than ``B``."""
    p_a, p_b = _scores(state.complete(_prompt(state, a, b), choices=("A", "B")).texts, 2)
    return p_a / (p_a + p_b) if p_a + p_b > 0 else 0.5


def likelihood(state: State, a: Attempt) -> float:
    """The log-probability of the user's question as the model's description of ``a``'s query."""
    prompt = _messages(state, "review", sql=a.sql or "")
    return _scores(state.complete(prompt, continuation=state.question).texts, 1)[0]


def review(state: State, contenders: list[Attempt], sizes: list[int] | None = None,
           support: float = 0.0) -> tuple[int | None, dict[str, Any]]:
    """The index of the contender under whose query the question is the most likely, with the scores; ``None``
    when the backend cannot score or scoring fails. With ``support``, each contender also scores
    ``support * ln(size)`` for the number of candidates behind it (``sizes``, one per contender), so that a vote
    weighs how many samples agree against how likely each is."""
    if not state.llm.supports_choices:
        return None, {"failed": f"{state.llm.model_id} cannot score answers"}
    said: dict[str, Any] = {}
    try:
        scores = [likelihood(state, a) for a in contenders]
        said["logp"] = [round(x, 3) for x in scores]
    except SqlweaveError as err:
        return None, {**said, "failed": f"{err.code}: {err.message}"}
    if support and sizes:
        scores = [s + support * math.log(n) for s, n in zip(scores, sizes)]
    best = max(range(len(scores)), key=lambda i: (scores[i], -i))  # on a tie, the larger group
    return best, said


def choose_between(state: State, first: Attempt, second: Attempt) -> tuple[int | None, dict[str, Any]]:
    """Which of two candidates the model holds to answer the question: 0 (``first``), 1 (``second``) or
    ``None`` when it does not decide (or cannot be asked); with what it said."""
    try:
        if state.llm.supports_choices:
            straight = _chance_a(state, first, second)
            swapped = _chance_a(state, second, first)
            p_first = (straight + (1.0 - swapped)) / 2  # the chance of `first` being right, over both orders
            said: dict[str, Any] = {"p_a": [round(straight, 3), round(swapped, 3)], "p_first": round(p_first, 3)}
            return (None if p_first == 0.5 else 0 if p_first > 0.5 else 1), said
        replies = [letter(state.complete(_prompt(state, x, y), temperature=0.0, max_tokens=8).text)
                   for x, y in ((first, second), (second, first))]
    except SqlweaveError as err:
        return None, {"failed": f"{err.code}: {err.message}"}
    picks = [{"A": 0, "B": 1}.get(replies[0] or ""), {"A": 1, "B": 0}.get(replies[1] or "")]
    said = {"replies": replies}
    if picks[0] is not None and picks[0] == picks[1]:
        return picks[0], said
    return None, said
