"""Stage: choose few-shot examples for the question from an example pool.

Methods: ``bm25`` (the question against pool questions, as DAC does), ``question_skeleton``
(the question with schema words and values masked, against pool question skeletons,
Guo et al.), ``sql_skeleton`` (the skeleton of the current SQL, e.g. from a cheap first
pass, against pool SQL skeletons, RB-SQL). Organisation: ``pairs`` (question, SQL),
``skeleton`` (question, SQL skeleton as an intermediate step, then SQL; RB-SQL), or ``masked``
(question skeleton and SQL skeleton only: measured on the 1.5B model, examples with real names
from other databases get their table and column names copied into the answer).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigurationError, SqlweaveError
from ..pipeline import State
from ..retrieval.pool import PoolExample, load_pool
from ..retrieval.question_skeleton import question_skeleton
from ..sql.skeleton import sql_skeleton

METHODS = ("bm25", "question_skeleton", "sql_skeleton")


def default_pool_path() -> Path:
    env = os.environ.get("SQLWEAVE_EXAMPLES")
    if not env:
        raise ConfigurationError(
            "no example pool given",
            hint="Pass --examples PATH/TO/train.json (Spider format), or set SQLWEAVE_EXAMPLES.",
        )
    return Path(env)


ORGANISATIONS = ("pairs", "skeleton", "masked")


def format_examples(examples: list[PoolExample], organisation: str = "pairs") -> str:
    """``pairs``: question and SQL; ``skeleton``: question, SQL skeleton, SQL (RB-SQL);
    ``masked``: question skeleton and SQL skeleton only, with no names a small model could copy."""
    blocks = []
    for ex in examples:
        if organisation == "masked" and ex.sql_skeleton:
            blocks.append(f"Question: {ex.question_skeleton}\nSQL pattern: {ex.sql_skeleton}")
        elif organisation == "skeleton" and ex.sql_skeleton:
            blocks.append(f"Question: {ex.question}\nSkeleton: {ex.sql_skeleton}\n```sql\n{ex.sql}\n```")
        else:
            blocks.append(f"Question: {ex.question}\n```sql\n{ex.sql}\n```")
    return "\n\n".join(blocks)


@dataclass(frozen=True)
class SelectExamples:
    """Put ``k`` retrieved examples in ``state.extras["examples"]`` (and their prompt text in ``examples_text``)."""

    pool: str | None = None
    method: str = "bm25"
    k: int = 4
    organisation: str = "pairs"
    name: str = "select_examples"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigurationError(f"unknown example selector {self.method!r}", hint=f"Use one of: {', '.join(METHODS)}.")
        if self.organisation not in ORGANISATIONS:
            raise ConfigurationError(f"unknown example organisation {self.organisation!r}",
                                     hint=f"Use one of: {', '.join(ORGANISATIONS)}.")

    def __call__(self, state: State) -> None:
        pool = load_pool(self.pool or default_pool_path())
        same_db = state.schema.name.lower()
        exclude = (lambda e: e.db_id.lower() == same_db)  # never show the answer's own database's pairs
        if self.method == "question_skeleton":
            names = list(state.schema.table_names) + [c.name for t in state.schema.tables for c in t.columns]
            query = question_skeleton(state.question, names)
            chosen = pool.search("question_skeleton", query, self.k, exclude)
        elif self.method == "sql_skeleton" and state.sql:
            try:
                query = sql_skeleton(state.sql, state.db.dialect)
            except SqlweaveError:
                query = state.question
            chosen = pool.search("sql_skeleton", query, self.k, exclude)
        else:
            query = state.question
            chosen = pool.search("question", query, self.k, exclude)
        state.extras["examples"] = chosen
        state.extras["examples_text"] = format_examples(chosen, self.organisation)
        state.note(method=self.method, query=query, examples=[e.question for e in chosen], pool_size=len(pool))
