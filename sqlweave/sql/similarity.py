"""Structural similarity of two SQL queries from the edit script between their normalised ASTs (ASTReS, section 3).

Both queries are normalised (:func:`~sqlweave.sql.normalize.normalize_ast`: lower-cased, aliases resolved, values
and identifiers masked), then :func:`sqlglot.diff` (sqlglot's implementation of Change Distilling, Fluri et al.
2007) computes the edit script that turns one tree into the other. The paper defines the similarity as

    score = alignments / operations

**Formula implemented.** ``alignments`` is the number of ``Keep`` edits (matched nodes left unchanged).
``operations`` is ``Keep + Update + Insert + Remove + Move``, except that a ``Move`` which only reorders a node
*within the same (matched) parent* is not counted: the paper counts such a move as an alignment, and sqlglot
reports it as an extra ``Move`` beside the node's own ``Keep``/``Update``, so counting it would charge the node
twice. A ``Move`` to a different parent is an operation. Identical queries score 1.0; the score is in [0, 1].

The two roots are given to :func:`sqlglot.diff` as a pre-matched pair when they are the same kind of statement
(two SELECTs, two UNIONs, ...): without it, sqlglot's leaf-similarity thresholds leave the roots of two queries of
different length unmatched, and every clause of the shorter one counts as moved.

>>> ast_similarity("SELECT T1.name FROM singer AS T1 WHERE T1.age > 30", "SELECT title FROM book WHERE pages > 100")
1.0
>>> round(ast_similarity("SELECT name FROM singer", "SELECT name FROM singer ORDER BY age DESC LIMIT 1"), 2)
0.44

(4 kept nodes: the SELECT, its column, FROM and its table; 5 inserted: ORDER BY, the ordered term, its
column, LIMIT, its value; 4 / 9.)
>>> ast_similarity("SELECT name FROM singer", "not sql at all (")
0.0
"""

from __future__ import annotations

from sqlglot import diff, exp
from sqlglot.diff import Insert, Keep, Move, Remove, Update

from ..errors import SqlweaveError
from .normalize import normalize_ast


def ast_similarity(a: str | exp.Expression, b: str | exp.Expression, dialect: str | None = "sqlite") -> float:
    """Share of aligned (kept) nodes among the edit operations between the normalised ASTs of ``a`` and ``b``.

    ``a`` and ``b`` are SQL text (normalised here, identifiers and values masked) or trees already returned by
    :func:`~sqlweave.sql.normalize.normalize_ast` (used as they are; pass the same masking on both sides).
    A side that does not parse scores 0.0.

    >>> ast_similarity("SELECT count(*) FROM pets", "select COUNT(*) from Pets as P")
    1.0
    """
    try:
        ta = normalize_ast(a, dialect) if isinstance(a, str) else a
        tb = normalize_ast(b, dialect) if isinstance(b, str) else b
    except SqlweaveError:
        return 0.0
    if ta == tb:
        return 1.0
    matchings: list[tuple[exp.Expr, exp.Expr]] | None = [(ta, tb)] if type(ta) is type(tb) else None
    return _score(diff(ta, tb, matchings, dialect=dialect))


def _score(edits: list) -> float:
    matched = {(id(e.source), id(e.target)) for e in edits if isinstance(e, (Keep, Update))}
    matched_sources = {s: t for s, t in matched}
    kept = operations = 0
    for e in edits:
        if isinstance(e, Keep):
            kept += 1
            operations += 1
        elif isinstance(e, (Update, Insert, Remove)):
            operations += 1
        elif isinstance(e, Move):
            sp, tp = e.source.parent, e.target.parent
            within_parent = sp is not None and tp is not None and matched_sources.get(id(sp)) == id(tp)
            if not within_parent:
                operations += 1
    return kept / operations if operations else 1.0
