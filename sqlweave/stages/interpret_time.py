"""Stage: the question's time expressions, stated exactly as evidence (``+time``).

"last month", "the previous ISO week", "in Q3 2023", "2 years ago", "on weekends", "within 10 days after" ... are
found and resolved by :mod:`sqlweave.temporal` (a pyparsing grammar, python-dateutil's calendar arithmetic) on
today's date as the database's own clock gives it (``SELECT CURRENT_DATE``, on SQLite ``SELECT DATE('now')``, which
is UTC), and written as SQL for the database's engine: exact half-open bounds for a span, the engine's functions for
what recurs (days of the week, a time after another date, a period to group by). The lines go to ``state.evidence``,
after any evidence the question came with, which generation prompts (and correction, voting and review prompts)
show before the question::

    Evidence (facts that help answer the question):
    Today is Tuesday 2026-12-01 (CURRENT_DATE).
    - "last month" is the month before this one: November 2026: orders.order_date >= '2026-11-01' AND
      orders.order_date < '2026-12-01'

Each line is written on the date column the question names (a date or timestamp column, or text holding ISO dates,
whose words, or its table's, the question uses, those next to the expression most), with its table;
where the question names none, or two as much, on a placeholder ``d`` ("For a date column d"). A ``within`` takes
its later date from the words before it ("adverse events") and its earlier one from those after ("starting the
treatment").

The trace notes today's date, where it came from (``today_from``: ``database``, ``given`` or ``machine`` when the
database could not tell) and each interpretation with its SQL. A question with no time expression gets nothing: no
evidence, no query to the database, no model call. The stage never fails a question: a clock that cannot be read
falls back to the machine's date, and that is noted.

``today`` (an ISO date) fixes the date, for tests and for runs that must not depend on the day they run.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.pipeline import State
>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> db = Database.open(demo_database_path())
>>> state = State("How many orders were placed on weekends last month?", db, FakeLLM([]), db.schema(), db.schema())
>>> InterpretTime(today="2026-12-09")(state)
>>> print(state.evidence)  # doctest: +NORMALIZE_WHITESPACE
Today is Wednesday 2026-12-09 (DATE('now')).
- "weekends" means on Saturday or Sunday: strftime('%w', orders.order_date) IN ('0', '6')
- "last month" is the month before this one: November 2026: orders.order_date >= '2026-11-01'
  AND orders.order_date < '2026-12-01'
>>> state = State("How many customers?", db, FakeLLM([]), db.schema(), db.schema())
>>> InterpretTime()(state); state.evidence is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, ClassVar

from ..errors import ConfigurationError, SqlweaveError
from ..pipeline import State
from ..temporal import MAX_CHARS, Interpretation, describe, evidence_text, find_mentions, interpret, today_query
from .base import BaseStage

if TYPE_CHECKING:
    from ..db.protocol import Database
    from ..schema import Schema


def database_today(db: "Database") -> date:
    """Today's date by ``db``'s clock (``SELECT CURRENT_DATE`` in its dialect).

    >>> from sqlweave.database import Database
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


_DATE_WORDS = frozenset("date dt time ts at on day timestamp datetime of the in by for to a an and is".split())
_WORD = re.compile(r"[a-z0-9]+")


def _forms(word: str) -> set[str]:
    """``word`` and what it may be without an ending (``sales``: sale, sal; ``ended``: end, ende)."""
    word = word.lower()
    out = {word}
    for suffix in ("ing", "ed", "es", "s", "d"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            out.add(word[: -len(suffix)])
    return out


def _stems(text: str) -> set[str]:
    return {f for w in _WORD.findall(text.lower()) for f in _forms(w)}


def _named(words: set[str], names: list[str]) -> int:
    """How many of ``names`` (an identifier's words) ``words`` names in some form; a long name that did not split
    (``sbcustjoindate``: PostgreSQL folds unquoted names to lower case) counts the words it holds."""
    count = 0
    for name in names:
        low = name.lower()
        if low in _DATE_WORDS:
            continue
        if _forms(low) & words:
            count += 1
        elif len(low) >= 8:
            count += sum(1 for w in words if len(w) >= 4 and w not in _DATE_WORDS and w in low and
                         not any(w != v and w in v and v in low for v in words))
    return count


def is_date_type(type_name: str) -> bool:
    """A column type that holds dates or timestamps (``DATE``, ``TIMESTAMP WITH TIME ZONE``, ``DATETIME``), not an
    interval or a time of day alone.

    >>> [is_date_type(t) for t in ("DATE", "timestamp without time zone", "DATETIME", "INTERVAL", "TIME", "INT")]
    [True, True, True, False, False, False]
    """
    t = type_name.upper()
    return ("DATE" in t or "TIMESTAMP" in t) and "INTERVAL" not in t


def _holds_dates(samples: tuple[object, ...]) -> bool:
    """Whether a text column's sample values are all ISO dates or timestamps (SQLite keeps dates as text)."""
    texts = [str(v) for v in samples if v is not None]
    if not texts:
        return False
    try:
        return all(len(v) >= 10 and date.fromisoformat(v[:10]) is not None for v in texts)
    except ValueError:
        return False


def date_columns(schema: "Schema") -> list[tuple[str, str]]:
    """The ``(table, column)`` of every date or timestamp column of ``schema``: typed so, or text whose sample
    values are ISO dates."""
    return [(t.name, c.name) for t in schema.tables for c in t.columns
            if is_date_type(c.type) or (c.is_text and _holds_dates(c.samples))]


def typed_date_columns(schema: "Schema") -> frozenset[tuple[str, str]]:
    """The ``(table, column)`` of the columns of ``schema`` with a date or timestamp type."""
    return frozenset((t.name, c.name) for t in schema.tables for c in t.columns if is_date_type(c.type))


def best_column(text: str, columns: list[tuple[str, str]], exclude: tuple[str, str] | None = None,
                near: str = "", typed: frozenset[tuple[str, str]] = frozenset()) -> tuple[str, str] | None:
    """The date column ``text`` names most (its column's words count twice its table's; words ``near`` the time
    expression three times more), or ``None`` when none is named or two are named as much (a column of a date
    type, in ``typed``, goes before one that keeps dates as text); the only date column when ``text`` names none.

    >>> cols = [("payments_received", "payment_date"), ("payments_made", "payment_date"), ("sales", "sale_date")]
    >>> best_column("payments received last week", cols), best_column("sales in 2023", cols)
    (('payments_received', 'payment_date'), ('sales', 'sale_date'))
    >>> best_column("payments last week", cols) is None
    True
    """
    words, close = _stems(text), _stems(near)
    from ..retrieval.schema_retriever import _split

    scores: list[tuple[int, bool, tuple[str, str]]] = []
    for table, column in columns:
        if (table, column) == exclude:
            continue
        own, its = _split(column), _split(table)
        score = 2 * _named(words, own) + _named(words, its) + 3 * (2 * _named(close, own) + _named(close, its))
        scores.append((score, (table, column) in typed, (table, column)))
    scores.sort(key=lambda s: (-s[0], not s[1]))
    if not scores:
        return None
    if len(scores) == 1:
        return scores[0][2]
    (first, first_typed, best), (second, second_typed, _) = scores[0], scores[1]
    if first > second or (first == second > 0 and first_typed and not second_typed):
        return best
    return None


def _around(question: str, phrase: str, before: int = 8, after: int = 4) -> str:
    """The words of ``question`` just before and after ``phrase`` (what a time expression is most likely about)."""
    at = question.lower().find(phrase.lower())
    if at < 0:
        return ""
    return " ".join(question[:at].split()[-before:] + question[at + len(phrase):].split()[:after])


def _schema_words(schema: "Schema") -> frozenset[str]:
    from .select_values import schema_words

    return schema_words(schema)


@dataclass(frozen=True)
class InterpretTime(BaseStage):
    """Add the question's time expressions, resolved and written as SQL, to ``state.evidence`` (no model call).

    ``today``: an ISO date to resolve against instead of the database's clock.
    """

    today: str | None = None
    #: Write each line's SQL on the date column the question names (``payment_date >= ...``), where it names one.
    name_columns: bool = True
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
        columns = self._columns(found, state) if self.name_columns else None
        text = evidence_text(found, today, state.db.dialect, columns=columns)
        given = state.evidence
        state.evidence = f"{given}\n{text}" if given else text
        state.note(today=today.isoformat(), today_from=source,
                   interpretations=[describe(i, state.db.dialect, *(c or ("d", "a")))
                                    for i, c in zip(found, columns or [None] * len(found))])

    @staticmethod
    def _columns(found: list[Interpretation], state: State) -> list[tuple[str, str] | None]:
        """For each interpretation, the date column the question means and, for a ``within``, the other date (as
        ``table.column``), or ``None`` where the question does not tell."""
        shown = state.prompt_schema
        candidates, typed = date_columns(shown), typed_date_columns(shown)
        if not candidates:
            return [None] * len(found)

        def written(col: tuple[str, str]) -> str:
            return f"{col[0]}.{col[1]}"  # with its table: which table the question needs is part of the answer

        question = state.question
        out: list[tuple[str, str] | None] = []
        for i in found:
            if i.kind == "today":
                out.append(None)
            elif i.kind == "within":
                at = question.lower().find(i.phrase.lower())
                before, after = (question[:at], question[at + len(i.phrase):]) if at >= 0 else ("", "")
                other = best_column(after, candidates, typed=typed)
                later = best_column(before, candidates, exclude=other, typed=typed)
                out.append((written(later), written(other)) if later and other else None)
            else:
                col = best_column(question, candidates, near=_around(question, i.phrase), typed=typed)
                out.append((written(col), "a") if col else None)
        return out

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
        """``found`` without what does not apply to this schema: a period word that is part of the schema's names
        ("daily" of a table ``DailyPrice`` names the table, not a grouping by day), a second grouping by the same
        period ("quarterly ... each quarter"), and days of the week where the schema holds no date to take them
        from (a text column of day names, ``flight_days``, answers "on Mondays")."""
        adverbs = {"daily", "weekly", "monthly", "quarterly", "yearly", "annually", "annual"}
        names = _schema_words(state.prompt_schema) if any(
            i.kind == "per" and i.phrase.lower() in adverbs for i in found) else frozenset()
        dated = bool(date_columns(state.prompt_schema))
        kept: list[Interpretation] = []
        grouped: set[str | None] = set()
        for i in found:
            if i.kind == "per" and (i.phrase.lower() in names or i.unit in grouped):
                continue
            if i.kind == "weekday" and not dated:
                continue
            if i.kind == "per":
                grouped.add(i.unit)
            kept.append(i)
        return kept

