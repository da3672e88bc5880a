"""Time in a question, stated exactly: relative and calendar expressions recognised, resolved against today's date
and written as SQL for the database's engine.

"last month", "the previous ISO week", "in Q3 2023", "2 years ago", "on weekends", "within 10 days after", "since
March", "between Jan and Mar 2024", "monthly" ... are found by a grammar (:mod:`sqlweave.temporal.grammar`, pyparsing),
resolved into half-open ``[start, end)`` bounds or recurring conditions with calendar arithmetic
(:mod:`sqlweave.temporal.periods`, python-dateutil) and written as SQL per engine (:mod:`sqlweave.temporal.sql`).
Everything here is a pure function of the question, today's date and the engine's name; the stage
:mod:`sqlweave.stages.interpret_time` reads today's date from the database and gives the lines to the model.

>>> from datetime import date
>>> for i in interpret("Orders last month on weekends", date(2026, 12, 9)):
...     print(i.phrase, "|", i.kind, i.start, i.end, "|", condition(i, "postgres", "order_date"))
last month | period 2026-11-01 2026-12-01 | order_date >= '2026-11-01' AND order_date < '2026-12-01'
weekends | weekday None None | EXTRACT(ISODOW FROM order_date) IN (6, 7)
>>> interpret("How many singers are there?", date(2026, 12, 9))
[]
"""

from __future__ import annotations

from datetime import date
from typing import Any

from .grammar import Mention, find_mentions
from .periods import KINDS, Interpretation, period_start, resolve, shifted
from .sql import CURRENT_DATE, DIALECTS, condition, evidence_line, evidence_text, today_query, truncated

__all__ = ["CURRENT_DATE", "DIALECTS", "KINDS", "Interpretation", "Mention", "condition", "describe",
           "evidence_line", "evidence_text", "find_mentions", "interpret", "period_start", "resolve", "shifted",
           "today_query", "truncated"]

#: Questions longer than this are read up to here only (a question has its dates near its words; the grammar's
#: time grows with the text).
MAX_CHARS = 2000


def interpret(question: str, today: date) -> list[Interpretation]:
    """The time expressions of ``question`` resolved on ``today``, in the order the question names them."""
    return resolve(find_mentions(question[:MAX_CHARS]), today)


def describe(i: Interpretation, dialect: str, column: str = "d", other: str = "a") -> dict[str, Any]:
    """``i`` as a trace shows it: its fields and its SQL on ``dialect``."""
    return {**i.as_dict(), "sql": condition(i, dialect, column, other)}
