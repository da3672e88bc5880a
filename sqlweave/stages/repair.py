"""Stage: repair schema-linking mistakes by rule, with no model call (see :mod:`sqlweave.sql.repair`).

Runs after execution. When the answer failed because it names a table or column wrongly (unknown or
ambiguous), the names are mapped to the one reading the schema allows (re-qualified, respelled, or the
missing table joined along its foreign keys) and the repaired query is run. It is adopted only when it
does better than the failed one, so a correct answer is never touched. Cheap enough to run before the
model-based correction stages, which then only see what rules could not fix.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> from sqlweave.presets import build_pipeline
>>> pipe = build_pipeline("repair")
>>> answer = pipe.run("How many orders per country?", Database.open(demo_database_path()), FakeLLM([
...     "SELECT T1.country, count(*) FROM orders AS T1 JOIN customers AS T2 "
...     "ON T1.customer_id = T2.customer_id GROUP BY T1.country"]))
>>> answer.ok, answer.trace[-1].notes["changes"]
(True, ['T1.country -> T2.country'])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..pipeline import State
from ..sql.repair import repair_schema_links
from .base import BaseStage
from .candidate import Attempt, adopt, attempt, current_attempt


def repair_attempt(state: State, a: Attempt, max_passes: int = 2) -> tuple[Attempt, list[str]]:
    """``a`` with its wrong names repaired by rule (see :mod:`sqlweave.sql.repair`) if that makes it better.

    Returns the better attempt (``a`` itself when nothing helped) and the changes made."""
    current, changes = a, []
    for _ in range(max_passes):
        if current.kind != "schema_linking" or current.sql is None:
            break
        fixed = repair_schema_links(current.sql, state.schema, state.db.dialect)
        if not fixed.changed:
            break
        candidate = attempt(state, fixed.sql)
        if not candidate.better_than(current) and candidate.kind != "schema_linking":
            break
        changes += fixed.changes
        current = candidate
    return (current, changes) if current.better_than(a) else (a, [])


@dataclass(frozen=True)
class SchemaRepair(BaseStage):
    """Fix a failed answer's table and column names by rule; ``max_passes`` repairs of a repair at most."""

    max_passes: int = 2
    name: str = "repair"
    requires: ClassVar[tuple[str, ...]] = ("result",)
    provides: ClassVar[tuple[str, ...]] = ("sql", "result", "error", "candidates", "signals")
    recovers: bool = True

    def __call__(self, state: State) -> None:
        first = current_attempt(state)
        current, changes = repair_attempt(state, first, self.max_passes)
        if current is not first:
            adopt(state, current)
            state.signals.repaired = True
            state.note(changes=changes, outcome=current.kind, changed=True, sql=current.sql)
        else:
            state.note(changes=[], outcome=first.kind, changed=False,
                       skipped=first.kind != "schema_linking")
