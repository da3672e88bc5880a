"""Stage: drop a needless join and key name groupings, by rule (see :mod:`sqlweave.sql.rewrite`).

Runs on an answer that runs. The rewritten query replaces it only when it runs and returns rows too, so
the stage never turns an answer into an error or an empty result. No model call. Joins are only dropped
for questions in English: the rule reads the question's words against the schema's table names.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.db import Database
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

from dataclasses import dataclass
from typing import ClassVar

from ..pipeline import State
from ..question import UNKNOWN
from ..sql.rewrite import rewrite_query
from .candidate import Attempt, adopt, attempt, current_attempt


def rewrite_attempt(state: State, a: Attempt) -> tuple[Attempt, list[str], str | None]:
    """``a`` rewritten by rule when a rule applies and the rewrite runs and returns rows.

    Returns the attempt to keep (``a`` itself when nothing applied or the rewrite was worse), the changes the
    rules made, and the outcome of a rejected rewrite (``None`` when adopted or not tried)."""
    if a.kind != "ok" or a.sql is None:
        return a, [], None
    english = state.question_language in (None, "English", UNKNOWN)
    rewrite = rewrite_query(a.sql, state.schema, state.question, state.db.dialect, drop_joins=english)
    if not rewrite.changed:
        return a, [], None
    candidate = attempt(state, rewrite.sql)
    if candidate.kind != "ok":  # the rewrite fails or returns nothing: the answer stands
        return a, rewrite.changes, candidate.kind
    return candidate, rewrite.changes, None


@dataclass(frozen=True)
class RewriteQuery:
    """Rewrite an answer that runs when a rule reads it as joining or grouping more than the question asks."""

    name: str = "rewrite"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ("result",)
    provides: ClassVar[tuple[str, ...]] = ("sql", "result")

    def __call__(self, state: State) -> None:
        first = current_attempt(state)
        if first.kind != "ok" or first.sql is None:
            state.note(changes=[], changed=False, skipped=True)
            return
        chosen, changes, rejected = rewrite_attempt(state, first)
        if rejected is not None:
            state.note(changes=changes, changed=False, rejected=rejected)
        elif chosen is first:
            state.note(changes=[], changed=False)
        else:
            adopt(state, chosen)
            state.note(changes=changes, changed=True, sql=chosen.sql)
