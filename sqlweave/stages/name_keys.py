"""Stage: follow each key an answer shows where the question asks for no ids with the name of the row it refers to
(see :func:`sqlweave.sql.name_keys.name_keys`).

"Who is the manager of each employee?" answered ``SELECT e.manager_id, e.first_name ...`` shows the manager as a
number; the stage adds the manager's names through a ``LEFT JOIN`` on the referred table's primary key. It runs
last, after any vote (it changes the result's columns, which a vote groups answers by), only on an answer with
rows, and keeps the rewrite only if it runs and returns as many rows. No model call. The confidence is read from
the query as it was before the names were added (:func:`sqlweave.confidence.signals`): a join added to show a name
changes no row.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> from sqlweave.presets import build_pipeline
>>> answer = build_pipeline("default").run("Who is the manager of each employee?", Database.open(demo_database_path()),
...     FakeLLM(["SELECT e.first_name, e.manager_id FROM employees AS e"]))
>>> answer.result.columns
('first_name', 'manager_id', 'manager_first_name', 'manager_last_name')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..pipeline import State
from ..sql.name_keys import name_keys
from .base import BaseStage
from .candidate import adopt, attempt, current_attempt


@dataclass(frozen=True)
class NameKeys(BaseStage):
    """Add the name of the row a shown key refers to, where the question asks for no ids."""

    name: str = "name_keys"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ("result",)
    provides: ClassVar[tuple[str, ...]] = ("sql", "result", "error", "candidates", "signals")

    def __call__(self, state: State) -> None:
        first = current_attempt(state)
        if first.kind != "ok" or first.sql is None or first.result is None:
            state.note(changes=[], changed=False, skipped=True)
            return
        rewrite = name_keys(first.sql, state.schema, state.question, state.db.dialect)
        if not rewrite.changed:
            state.note(changes=[], changed=False)
            return
        named = attempt(state, rewrite.sql)
        if named.kind != "ok" or named.result is None or len(named.result.rows) != len(first.result.rows):
            state.note(changes=[], changed=False, rejected={c: named.kind for c in rewrite.changes})
            return
        adopt(state, named)
        if named.sql is not None:
            state.signals.named(named.sql, first.sql)
        state.note(changes=rewrite.changes, changed=True, sql=named.sql, named_from=first.sql)
