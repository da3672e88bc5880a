"""Try a model answer as SQL and say what happened: shared by correction, revision and voting stages.

An :class:`Attempt` is one candidate: its SQL, its result or typed error, the schema
elements it names that do not exist, and a ``kind`` that classifies the outcome the
way the error-correction literature does (syntax, schema linking, execution, empty, ok).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Sequence

from sqlglot import exp

from ..cells import json_cell
from ..db.connection import QueryResult
from ..errors import (
    DatabaseSyntaxError,
    ExecutionError,
    NoSQLInOutputError,
    QueryTimeoutError,
    RefusedStatementError,
    SchemaLinkError,
    SQLParseError,
    SqlweaveError,
)
from ..llm.base import Message
from ..pipeline import State
from ..sql.classify import ensure_read_only
from ..sql.extract import extract_sql
from ..sql.validate import parse_one, schema_issues

#: Outcomes from best to worst; a repair is only adopted if it is not worse than what it replaces.
RANK = ("ok", "empty", "execution", "timeout", "schema_linking", "syntax", "no_sql", "refused")


@dataclass(frozen=True)
class Attempt:
    sql: str | None
    result: QueryResult | None
    error: SqlweaveError | None
    issues: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        err = self.error
        if err is None:
            assert self.result is not None
            rows = self.result.rows
            if not rows or all(v is None for row in rows for v in row):
                return "empty"
            return "ok"
        if isinstance(err, NoSQLInOutputError):
            return "no_sql"
        if isinstance(err, RefusedStatementError):
            return "refused"
        if isinstance(err, SQLParseError):
            return "syntax"
        if isinstance(err, QueryTimeoutError):
            return "timeout"
        if isinstance(err, DatabaseSyntaxError):
            return "syntax"
        if self.issues or isinstance(err, SchemaLinkError):
            return "schema_linking"
        return "execution"

    def better_than(self, other: "Attempt") -> bool:
        return RANK.index(self.kind) < RANK.index(other.kind)

    def rows_key(self) -> tuple | None:
        """A hashable summary of the result (multiset of rows), for convergence checks and voting."""
        if self.result is None:
            return None
        return (len(self.result.columns), tuple(sorted((repr(r) for r in self.result.rows))))


def result_groups(candidates: Sequence[Attempt], kind: str = "ok") -> list[list[int]]:
    """Indices of the candidates of ``kind``, grouped by result: largest group first, and on a tie the
    group that holds the earliest candidate (each group lists its candidates in order)."""
    groups: dict[tuple | None, list[int]] = {}
    for i, c in enumerate(candidates):
        if c.kind == kind:
            groups.setdefault(c.rows_key(), []).append(i)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def vote_groups(candidates: Sequence[Attempt]) -> list[list[int]]:
    """How a vote groups ``candidates`` (:func:`result_groups`): those with rows, or, when none has any, those
    that ran and returned nothing."""
    return result_groups(candidates) or result_groups(candidates, "empty")


def attempt(state: State, text: str) -> Attempt:
    """Extract SQL from ``text``, prove it is a read, check it against the schema, and run it."""
    dialect = state.db.dialect
    try:
        sql = extract_sql(text, dialect, schema=state.schema)
    except NoSQLInOutputError as err:
        return Attempt(None, None, err)
    try:
        tree = ensure_read_only(sql, dialect)
    except (RefusedStatementError, SQLParseError) as err:
        return Attempt(sql, None, err)
    issues = tuple(schema_issues(tree, state.schema, dialect))
    try:
        return Attempt(sql, state.db.execute(sql), None, issues)
    except SqlweaveError as err:
        return Attempt(sql, None, err, issues)


def current_attempt(state: State) -> Attempt:
    """The pipeline's present answer as an :class:`Attempt`."""
    issues: tuple[str, ...] = ()
    if state.sql is not None and state.error is not None:
        try:
            issues = tuple(schema_issues(state.sql, state.schema, state.db.dialect))
        except SqlweaveError:
            issues = ()
    return Attempt(state.sql, state.result, state.error, issues)


def confident(state: State, current: Attempt, threshold: float | None) -> bool:
    """The safety check: the answer executes, returns rows, and voting agreed at least ``threshold``."""
    return (threshold is not None and current.kind == "ok" and state.agreement is not None
            and state.agreement >= threshold)


def assistant_turn(state: State, a: Attempt) -> Message:
    """The model's previous answer, replayed as its turn in a correction conversation."""
    return Message("assistant", f"```sql\n{a.sql}\n```" if a.sql else (state.raw_output or ""))


def adopt(state: State, chosen: Attempt) -> None:
    """Make ``chosen`` the pipeline's answer."""
    state.sql = chosen.sql
    state.result = chosen.result
    state.error = chosen.error
    if chosen.sql is not None and chosen.sql not in state.candidates:
        state.candidates.append(chosen.sql)


# --- feedback texts -----------------------------------------------------------------------------


def _close_columns(state: State, name: str, used: list[str], n: int = 3) -> list[str]:
    """Existing ``table.column`` names closest to ``name``; columns of the tables the SQL uses rank first."""
    target = name.split(".")[-1].lower()
    used_low = {u.lower() for u in used}
    scored = []
    for t in state.schema.tables:
        for c in t.columns:
            ratio = difflib.SequenceMatcher(None, target, c.name.lower()).ratio()
            if ratio >= 0.5:
                scored.append((ratio + (0.2 if t.name.lower() in used_low else 0.0), f"{t.name}.{c.name}"))
    return [name for _, name in sorted(scored, key=lambda x: -x[0])[:n]]


def _tables_of(sql: str | None, state: State) -> list[str]:
    if not sql:
        return []
    try:
        tree = parse_one(sql, state.db.dialect)
    except SqlweaveError:
        return []
    return [t.name for t in tree.find_all(exp.Table) if state.schema.has_table(t.name)]


def schema_hint(state: State, a: Attempt) -> str:
    """Which names do not exist, what close names do, and the columns of the tables the SQL uses."""
    lines = []
    used = _tables_of(a.sql, state)
    for issue in a.issues:
        name = issue.split()[-1]
        close = _close_columns(state, name, used) if issue.startswith("unknown column") else [
            t for t in difflib.get_close_matches(name, list(state.schema.table_names), n=3, cutoff=0.4)]
        lines.append(f"- {issue}" + (f"; did you mean {', '.join(close)}?" if close else ""))
    for t in dict.fromkeys(used):
        table = state.schema.table(t)
        lines.append(f"- table {table.name} has columns: {', '.join(table.column_names)}")
    return "\n".join(lines)


def value_hint(state: State, a: Attempt, limit: int = 5) -> str:
    """For each literal the SQL compares a column with, the column's closest stored values."""
    if not a.sql:
        return ""
    try:
        tree = parse_one(a.sql, state.db.dialect)
    except SqlweaveError:
        return ""
    lines = []
    for cmp in tree.find_all(exp.EQ, exp.Like, exp.NEQ):
        col, lit = cmp.this, cmp.expression
        if not (isinstance(col, exp.Column) and isinstance(lit, exp.Literal) and lit.is_string):
            continue
        for t in dict.fromkeys(_tables_of(a.sql, state)):
            table = state.schema.table(t)
            if not table.has_column(col.name):
                continue
            column = table.column(col.name)
            word = lit.this.strip("%").split()[0] if lit.this.strip("%").split() else lit.this
            name = exp.column(column.name, quoted=True)
            lookup = (
                exp.select(name).distinct().from_(exp.table_(table.name, quoted=True))
                .where(exp.Like(this=exp.Cast(this=name.copy(), to=exp.DataType.build("TEXT")),
                                expression=exp.Literal.string(f"%{word}%")))
                .limit(limit)
            )
            try:
                found = state.db.execute(lookup.sql(dialect=state.db.dialect), max_rows=limit).rows
            except SqlweaveError:
                found = ()
            values = [r[0] for r in found] or list(column.samples)
            shown = ", ".join(repr(json_cell(v)) for v in values[:limit])  # '2024-01-02', not datetime.date(...)
            lines.append(f"- {table.name}.{column.name} holds values such as: {shown}")
            break
    return "\n".join(lines)


def feedback(state: State, a: Attempt) -> str:
    """What went wrong with ``a``, in words the model can act on."""
    kind = a.kind
    if kind == "schema_linking":
        head = (f"The query failed: {a.error.message}." if isinstance(a.error, ExecutionError)
                else "The query names something that is not in the schema.")
        return f"{head}\n{schema_hint(state, a)}\nUse only tables and columns from the schema."
    if kind in ("syntax", "no_sql", "execution", "timeout", "refused") and a.error is not None:
        return a.error.as_feedback()
    if kind == "empty":
        hint = value_hint(state, a)
        return ("The query ran but returned no rows (or only NULL). Check the filter values and joins."
                + (f"\n{hint}" if hint else ""))
    return "The query ran."
