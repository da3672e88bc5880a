"""Stage: the question's time expressions, stated exactly as evidence (``+time``).

"last month", "the previous ISO week", "in Q3 2023", "2 years ago", "on weekends", "within 10 days after" ... are
found and resolved by :mod:`sqlweave.temporal` (a pyparsing grammar, python-dateutil's calendar arithmetic) on
today's date as the database's own clock gives it (``SELECT CURRENT_DATE``, on SQLite ``SELECT DATE('now')``, which
is UTC), and written as SQL for the database's engine: exact half-open bounds for a span, the engine's functions for
what recurs (days of the week, a time after another date, a period to group by). The lines go to ``state.evidence``,
after any evidence the question came with, which generation prompts (and correction, voting and review prompts)
show before the question::

    Evidence (facts that help answer the question):
    Today is Tuesday 2026-12-01 (CURRENT_DATE). For a date column d:
    - "last month" is the month before this one: November 2026: d >= '2026-11-01' AND d < '2026-12-01'

The trace notes today's date, where it came from (``today_from``: ``database``, ``given`` or ``machine`` when the
database could not tell) and each interpretation with its SQL. A question with no time expression gets nothing: no
evidence, no query to the database, no model call. The stage never fails a question: a clock that cannot be read
falls back to the machine's date, and that is noted.

``today`` (an ISO date) fixes the date, for tests and for runs that must not depend on the day they run.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.pipeline import State
>>> from sqlweave.db import Database
>>> from sqlweave.db.demo import demo_database_path
>>> db = Database.open(demo_database_path())
>>> state = State("How many orders were placed on weekends last month?", db, FakeLLM([]), db.schema(), db.schema())
>>> InterpretTime(today="2026-12-09")(state)
>>> print(state.evidence)
Today is Wednesday 2026-12-09 (DATE('now')). For a date column d:
- "weekends" means on Saturday or Sunday: strftime('%w', d) IN ('0', '6')
- "last month" is the month before this one: November 2026: d >= '2026-11-01' AND d < '2026-12-01'
>>> state = State("How many customers?", db, FakeLLM([]), db.schema(), db.schema())
>>> InterpretTime()(state); state.evidence is None
True
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, ClassVar

from ..errors import ConfigurationError, SqlweaveError
from ..pipeline import State
from ..temporal import MAX_CHARS, Interpretation, describe, evidence_text, find_mentions, interpret, today_query

if TYPE_CHECKING:
    from ..db.connection import Database
    from ..db.schema import Schema


def database_today(db: "Database") -> date:
    """Today's date by ``db``'s clock (``SELECT CURRENT_DATE`` in its dialect).

    >>> from sqlweave.db import Database
    >>> from sqlweave.db.demo import demo_database_path
    >>> isinstance(database_today(Database.open(demo_database_path())), date)
    True
    """
    value = db.trusted_read(today_query(db.dialect), max_rows=1).rows[0][0]
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])


def _schema_words(schema: "Schema") -> frozenset[str]:
    from .select_values import schema_words

    return schema_words(schema)


@dataclass(frozen=True)
class InterpretTime:
    """Add the question's time expressions, resolved and written as SQL, to ``state.evidence`` (no model call).

    ``today``: an ISO date to resolve against instead of the database's clock.
    """

    today: str | None = None
    name: str = "interpret_time"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    provides: ClassVar[tuple[str, ...]] = ("evidence",)

    def __post_init__(self) -> None:
        if self.today is not None:
            try:
                date.fromisoformat(self.today)
            except (TypeError, ValueError):
                raise ConfigurationError(f"{self.name}: today must be an ISO date such as 2026-12-01, not "
                                         f"{self.today!r}", hint="Pass today='YYYY-MM-DD', or leave it out to use "
                                         "the database's date.") from None

    def __call__(self, state: State) -> None:
        if not find_mentions(state.question[:MAX_CHARS]):
            return  # nothing to say: no query to the database either
        today, source = self._today(state)
        found = self._kept(interpret(state.question, today), state)
        if not found:
            return
        text = evidence_text(found, today, state.db.dialect)
        given = state.evidence
        state.evidence = f"{given}\n{text}" if given else text
        state.note(today=today.isoformat(), today_from=source,
                   interpretations=[describe(i, state.db.dialect) for i in found])

    def _today(self, state: State) -> tuple[date, str]:
        if self.today is not None:
            return date.fromisoformat(self.today), "given"
        try:
            return database_today(state.db), "database"
        except (SqlweaveError, ValueError, IndexError, TypeError) as err:
            reason = f"{err.code}: {err.message}" if isinstance(err, SqlweaveError) else repr(err)
            state.note(clock_error=reason)
            return date.today(), "machine"

    @staticmethod
    def _kept(found: list[Interpretation], state: State) -> list[Interpretation]:
        """``found`` without a period word that is part of the schema's names ("daily" of a table ``DailyPrice``
        names the table, not a grouping by day)."""
        adverbs = {"daily", "weekly", "monthly", "quarterly", "yearly", "annually", "annual"}
        if not any(i.kind == "per" and i.phrase.lower() in adverbs for i in found):
            return found
        names = _schema_words(state.prompt_schema)
        return [i for i in found if not (i.kind == "per" and i.phrase.lower() in names)]

