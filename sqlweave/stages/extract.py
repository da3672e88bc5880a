"""Stage: find the SQL in the model's answer, prove it is a single read, and check it against the schema."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import NoSQLInOutputError
from ..pipeline import State
from ..sql.classify import ensure_read_only
from ..sql.extract import extract_sql
from ..sql.validate import schema_issues


@dataclass(frozen=True)
class ExtractSQL:
    """Set ``state.sql`` from ``state.raw_output``; refuse anything but one read-only statement."""

    name: str = "extract_sql"

    def __call__(self, state: State) -> None:
        if state.raw_output is None:
            raise NoSQLInOutputError("no model output to read SQL from")
        sql = extract_sql(state.raw_output, state.db.dialect)
        state.sql = sql
        state.candidates.append(sql)
        tree = ensure_read_only(sql, state.db.dialect)
        issues = schema_issues(tree, state.schema, state.db.dialect)
        state.note(sql=sql, schema_issues=issues)
