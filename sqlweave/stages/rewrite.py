"""Stage: relink texts compared with the wrong column, drop a needless join and key name groupings, by rule
(see :mod:`sqlweave.sql.rewrite`).

Runs on an answer that runs. A text compared with a column that never holds it is relinked whether the answer
returned rows or none (asking the database, one ``LIMIT 1`` probe per column), and so are "both" and "but not"
read as INTERSECT and EXCEPT (``c = 'a' AND c = 'b'`` never returns rows); joins and groupings are only
rewritten in answers with rows. A rewritten query replaces the answer only when it runs and returns rows, so
the stage never turns an answer into an error or an empty result. No model call. Joins are only dropped
for questions in English: the rule reads the question's words against the schema's table names.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> from sqlweave.presets import build_pipeline
>>> pipe = build_pipeline("zero-shot+rewrite")
>>> answer = pipe.run("What is the name of the most expensive product?", Database.open(demo_database_path()),
...     FakeLLM(["SELECT T1.name FROM products AS T1 JOIN order_items AS T2 ON T1.product_id = T2.product_id "
...              "ORDER BY T1.price DESC LIMIT 1"]))
>>> answer.sql
'SELECT T1.name FROM products AS T1 ORDER BY T1.price DESC LIMIT 1'
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sqlglot import exp

from ..errors import SqlweaveError
from ..pipeline import State
from ..question import UNKNOWN
from ..sql.rewrite import Holds, relink_values, rewrite_query
from .base import BaseStage
from .candidate import Attempt, adopt, attempt, current_attempt

if TYPE_CHECKING:
    from ..db.protocol import Database

#: Seconds one "does this column hold this text?" probe may take, and all the probes of one value_probe together
#: (one answer, or every sample of one vote); past either, the answer is "cannot tell".
PROBE_TIMEOUT_S = 2.0
PROBE_BUDGET_S = 4.0


def value_probe(db: "Database", *, budget_s: float = PROBE_BUDGET_S) -> Holds:
    """``holds(table, column, value)`` answered by the database, one ``LIMIT 1`` query per question asked.

    An error (a column that cannot hold text, an access policy, the time limit) means "cannot tell", and so does
    every question once the probes have taken ``budget_s`` seconds in all."""
    seen: dict[tuple[str, str, str], bool | None] = {}
    spent = 0.0

    def holds(table: str, column: str, value: str) -> bool | None:
        nonlocal spent
        key = (table, column, value)
        if key not in seen:
            if spent >= budget_s:
                return None
            text = exp.Literal.string(value).sql(dialect=db.dialect)
            sql = f"SELECT 1 FROM {db.quote(table)} WHERE {db.quote(column)} = {text} LIMIT 1"
            start = time.perf_counter()
            try:
                limit = min(PROBE_TIMEOUT_S, db.timeout_s, budget_s - spent)
                seen[key] = bool(db.trusted_read(sql, timeout_s=limit, max_rows=1).rows)
            except SqlweaveError:
                seen[key] = None
            spent += time.perf_counter() - start
        return seen[key]

    return holds


def rewrite_attempt(state: State, a: Attempt,
                    holds: Holds | None = None) -> tuple[Attempt, list[str], dict[str, str]]:
    """``a`` rewritten by rule where a rule applies and the rewrite runs and returns rows.

    Texts compared with the wrong column are relinked first (on an answer that runs, with rows or without);
    then "both" and "but not" are read as set operations (with rows or without) and, on an answer with rows,
    needless joins and name groupings are rewritten. Returns the attempt to keep
    (``a`` itself when nothing applied or every rewrite was worse), the changes adopted, and each rejected
    change with the outcome that rejected it. ``holds`` answers the relinking's questions (default: a new
    :func:`value_probe`); pass one to several calls, as voting does for its samples, so that they share its
    answers and its time budget."""
    adopted: list[str] = []
    rejected: dict[str, str] = {}
    if a.sql is None or a.kind not in ("ok", "empty"):
        return a, adopted, rejected
    english = state.question_language in (None, "English", UNKNOWN)
    probe = holds if holds is not None else value_probe(state.db)
    for index in range(2):
        if a.sql is None:
            break
        if index == 0:
            rewrite = relink_values(a.sql, state.schema, probe, state.db.dialect)
        else:  # joins and groupings: only answers with rows; "both" and "but not" also answers without
            rewrite = rewrite_query(a.sql, state.schema, state.question, state.db.dialect, drop_joins=english,
                                    only_set_operations=a.kind != "ok")
        if not rewrite.changed:
            continue
        candidate = attempt(state, rewrite.sql)
        if candidate.kind != "ok":  # the rewrite fails or returns nothing: the answer stands
            rejected.update((change, candidate.kind) for change in rewrite.changes)
            continue
        a = candidate
        adopted += rewrite.changes
    return a, adopted, rejected


@dataclass(frozen=True)
class RewriteQuery(BaseStage):
    """Rewrite an answer that runs when a rule reads it as comparing a text with the wrong column, as joining
    or grouping more than the question asks, as reading "both" as either, or as excluding a value that its
    other condition excluded already ("a but not b"; :mod:`sqlweave.sql.rewrite`)."""

    name: str = "rewrite"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ("result",)
    provides: ClassVar[tuple[str, ...]] = ("sql", "result", "error", "candidates")

    def __call__(self, state: State) -> None:
        first = current_attempt(state)
        if first.kind not in ("ok", "empty") or first.sql is None:
            state.note(changes=[], changed=False, skipped=True)
            return
        chosen, changes, rejected = rewrite_attempt(state, first)
        extra = {"rejected": rejected} if rejected else {}
        if chosen is first:
            state.note(changes=[], changed=False, **extra)
        else:
            adopt(state, chosen)
            state.note(changes=changes, changed=True, sql=chosen.sql, **extra)
