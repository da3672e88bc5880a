"""Stage: run the SQL safely (read-only connection, time limit, row cap)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import PipelineError, SqlweaveError
from ..pipeline import State
from .base import BaseStage


@dataclass(frozen=True)
class ExecuteSQL(BaseStage):
    """Execute ``state.sql`` and store the :class:`~sqlweave.db.QueryResult` in ``state.result``."""

    name: str = "execute"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ("sql",)
    provides: ClassVar[tuple[str, ...]] = ("result", "signals")

    def __call__(self, state: State) -> None:
        try:
            if state.sql is None:
                raise PipelineError("execute needs SQL", hint="Put an extract_sql stage before execute.")
            result = state.db.execute(state.sql)
        except SqlweaveError:
            state.signals.executed(failed=True)
            raise
        state.signals.executed(failed=False)
        state.result = result
        state.note(rows=result.row_count, truncated=result.truncated, elapsed_s=round(result.elapsed_s, 4))
        if result.sql != state.sql:  # read as the engine needs it (Database.execute): the answer shows this SQL
            state.note(ran_as=result.sql)
