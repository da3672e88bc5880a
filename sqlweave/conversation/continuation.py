"""Which earlier turn an answer continues: :func:`continuation_score` between two queries, :func:`builds_on` over
a conversation's turns.

>>> continuation_score("SELECT count(*) FROM concert", "SELECT Name FROM singer")
0.0
"""

from __future__ import annotations

from typing import Sequence

from sqlglot import exp

from ..errors import SqlweaveError
from .records import Turn

#: A new answer builds on an earlier turn when their SQL scores at least this (see :func:`continuation_score`).
BUILDS_ON_THRESHOLD = 0.5


def continuation_score(sql: str, earlier: str, dialect: str | None = "sqlite") -> float:
    """How much ``sql`` looks like a continuation of ``earlier``, in [0, 1].

    0 when the queries share no table (or one does not parse). Otherwise the larger of

    - the share of ``earlier``'s filter conditions (WHERE and HAVING comparisons, values included) that ``sql``
      keeps: "only those older than 30" after "singers from France" keeps ``country = 'France'``;
    - the mean of the AST similarity (:func:`~sqlweave.sql.similarity.ast_similarity`) of the two normalised
      queries, table and column names kept, values masked, and the Jaccard overlap of the tables and columns
      they name: "sort that by name" or "which one has the most?" keep most of the tree and its names.

    On the follow-up set (``benchmarks/data/conversations-spider.json``) the gold SQL of 93% of the follow-ups
    scores at least :data:`BUILDS_ON_THRESHOLD` against the turn before it, against 3% of pairs from different
    conversations on the same database.

    >>> continuation_score("SELECT avg(Age) FROM singer WHERE Country = 'France'",
    ...                    "SELECT Name FROM singer WHERE Country = 'France'")
    1.0
    >>> round(continuation_score("SELECT avg(Age) FROM singer", "SELECT Name FROM singer WHERE Country = 'France'"), 2)
    0.28
    >>> continuation_score("SELECT count(*) FROM concert", "SELECT Name FROM singer WHERE Country = 'France'")
    0.0
    """
    from ..sql.normalize import normalize_ast
    from ..sql.similarity import ast_similarity
    from ..sql.skeleton import sql_entities

    try:
        new, old = (normalize_ast(q, dialect, mask_identifiers=False, mask_values=False) for q in (sql, earlier))
    except SqlweaveError:
        return 0.0
    (new_tables, new_columns), (old_tables, old_columns) = sql_entities(new), sql_entities(old)
    if not new_tables & old_tables:
        return 0.0
    old_filters = _filters(old)
    kept = len(old_filters & _filters(new)) / len(old_filters) if old_filters else 0.0
    names_new = {("t", t) for t in new_tables} | {("c", c) for c in new_columns}
    names_old = {("t", t) for t in old_tables} | {("c", c) for c in old_columns}
    overlap = len(names_new & names_old) / len(names_new | names_old)
    masked = [q.transform(lambda n: exp.Placeholder() if isinstance(n, exp.Literal) else n) for q in (new, old)]
    return max(kept, (ast_similarity(masked[0], masked[1], dialect) + overlap) / 2)


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike, exp.In, exp.Between, exp.Is)


def _filters(tree: exp.Expression) -> set[str]:
    """The comparisons of a normalised query's WHERE and HAVING clauses as text, columns without their table."""
    out = set()
    for clause in tree.find_all(exp.Where, exp.Having):
        for cond in clause.find_all(*_COMPARISONS):
            cond = cond.copy()
            for col in cond.find_all(exp.Column):
                col.set("table", None)
            out.add(cond.sql())
    return out


def builds_on(sql: str | None, earlier: Sequence[Turn], dialect: str | None = "sqlite",
              threshold: float = BUILDS_ON_THRESHOLD) -> int | None:
    """The number of the turn in ``earlier`` that ``sql`` continues: the one with the highest
    :func:`continuation_score` (the most recent on a tie) if it reaches ``threshold``, else ``None``.
    Turns without SQL or that failed never count.

    >>> t = Turn(1, "Which singers are French?", "SELECT Name FROM singer WHERE Country = 'France'", True,
    ...          None, None, None, 4, "2024-01-01T00:00:00+00:00")
    >>> builds_on("SELECT Name FROM singer WHERE Country = 'France' AND Age > 30", [t])
    1
    >>> builds_on("SELECT count(*) FROM stadium", [t]) is None
    True
    """
    if not sql:
        return None
    best, best_score = None, -1.0
    for turn in earlier:
        if not turn.ok or not turn.sql:
            continue
        score = continuation_score(sql, turn.sql, dialect)
        if score >= best_score:
            best, best_score = turn.number, score
    return best if best is not None and best_score >= threshold else None

