"""Stage: find the SQL in the model's answer, prove it is a single read, and check it against the schema."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import NoSQLInOutputError
from ..pipeline import State
from ..sql.classify import ensure_read_only
from ..sql.extract import extract_sql
from ..sql.transpile import to_dialect_fired
from ..sql.validate import schema_issues
from .base import BaseStage


@dataclass(frozen=True)
class ExtractSQL(BaseStage):
    """Set ``state.sql`` from ``state.raw_output``; refuse anything but one read-only statement.

    SQL written in another dialect than the database's is transpiled to it first (the trace keeps what the
    model wrote as ``written``); SQLite's own SQL is used exactly as written on SQLite.
    """

    name: str = "extract_sql"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ("raw_output",)
    provides: ClassVar[tuple[str, ...]] = ("sql", "candidates", "signals")

    def __call__(self, state: State) -> None:
        state.signals.extracted(0)  # until a query is read, with the names it lacks
        if state.raw_output is None:
            raise NoSQLInOutputError("no model output to read SQL from")
        dialect = state.db.dialect
        written = extract_sql(state.raw_output, dialect, transpile=False)
        sql, rules = to_dialect_fired(written, dialect, schema=state.schema)
        if rules:
            state.note(rules=rules)
        state.sql = sql
        state.candidates.append(sql)
        if sql != written:
            state.note(written=written)
        tree = ensure_read_only(sql, dialect)
        issues = schema_issues(tree, state.schema, dialect)
        state.note(sql=sql, schema_issues=issues)
        state.signals.extracted(len(issues))
