"""Stage: choose few-shot examples for the question from an example pool.

Methods: ``bm25`` (the question against pool questions, as DAC does), ``question_skeleton``
(the question with schema words and values masked, against pool question skeletons,
Guo et al.), ``sql_skeleton`` (the skeleton of the current SQL, e.g. from a cheap first
pass, against pool SQL skeletons, RB-SQL), ``ast_rerank`` (ASTReS: the top ``candidates`` pairs by BM25
on the question, re-ranked by :func:`~sqlweave.sql.similarity.ast_similarity` between the approximated query
and each pair's normalised SQL), ``dense_skeleton`` (Guo et al. 3.1.3: dense embeddings of question skeletons;
``k`` pairs for the original question's skeleton, then ``k_simplified`` more for the simplified question's,
when a simplify stage left one in ``state.simplified_question``). Organisation: ``pairs`` (question, SQL),
``skeleton`` (question, SQL skeleton as an intermediate step, then SQL; RB-SQL), or ``masked``
(question skeleton and SQL skeleton only: measured on the 1.5B model, examples with real names
from other databases get their table and column names copied into the answer).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ClassVar

from ..config import Settings
from ..errors import ConfigurationError, SqlweaveError
from ..pipeline import State
from ..retrieval.pool import BUNDLED_POOL, ExamplePool, PoolExample, load_pool
from ..retrieval.question_skeleton import question_skeleton
from ..sql.normalize import normalize_ast
from ..sql.similarity import ast_similarity
from ..sql.skeleton import sql_skeleton
from .base import BaseStage

METHODS = ("bm25", "question_skeleton", "sql_skeleton", "ast_rerank", "dense_skeleton")


def default_pool_path(settings: Settings | None = None) -> Path:
    """The example pool the settings name (``$SQLWEAVE_EXAMPLES``), else the one sqlweave ships
    (:data:`~sqlweave.retrieval.pool.BUNDLED_POOL`, Spider's training pairs); a :class:`ConfigurationError` that says
    how to give one when neither is there."""
    path = (settings if settings is not None else Settings.from_env()).examples
    if path is not None:
        return path
    if BUNDLED_POOL.is_file():
        return BUNDLED_POOL
    raise ConfigurationError(
        "no example pool given, and the bundled one is missing from this installation",
        hint="Pass --examples PATH/TO/train.json (Spider format), set SQLWEAVE_EXAMPLES, or reinstall sqlweave.",
    )


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


def other_databases(state: State) -> Callable[[PoolExample], bool]:
    """Which pool pairs to pass over for ``state``'s question: the training pairs of its own database (never show
    the answer). The pairs a user added for that database are kept: they were written to be shown for it."""
    same_db = state.schema.name.lower()
    return lambda e: e.db_id.lower() == same_db and e.source != "user"


def besides(exclude: Callable[[PoolExample], bool], shown: list[PoolExample]) -> Callable[[PoolExample], bool]:
    """``exclude``, and also every pair already ``shown`` (a second search adds only pairs the first did not)."""
    taken = {(e.question, e.sql) for e in shown}
    return lambda e: exclude(e) or (e.question, e.sql) in taken


def question_skeleton_of(state: State, question: str | None = None) -> str:
    """``question`` (default: the state's) with the names of the state's schema masked (DAIL-SQL's skeleton)."""
    names = list(state.schema.table_names) + [c.name for t in state.schema.tables for c in t.columns]
    return question_skeleton(state.question if question is None else question, names)


def skeleton_examples(state: State, pool: ExamplePool, sql: str, k: int,
                      field: str = "sql_skeleton") -> tuple[str, list[PoolExample]]:
    """The ``k`` pairs of ``pool`` (from other databases) whose SQL skeleton is closest to ``sql``'s (RB-SQL), and
    the text searched for; by the question's words when ``sql`` does not parse. ``field="sql_shape"`` compares the
    skeletons with their placeholders and symbols (:func:`~sqlweave.retrieval.lexical.shape_tokens`)."""
    try:
        query = sql_skeleton(sql, state.db.dialect)
    except SqlweaveError:
        return state.question, pool.search("question", state.question, k, other_databases(state))
    return query, pool.search(field, query, k, other_databases(state))


def rerank_by_ast(approx_sql: str, candidates: list[PoolExample], pool: ExamplePool,
                  dialect: str | None = "sqlite") -> list[tuple[PoolExample, float]] | None:
    """``candidates`` with their AST similarity to ``approx_sql``, best first (ties keep the given order);
    None when ``approx_sql`` does not parse. A candidate without normalised SQL scores 0.0.

    >>> from sqlweave.retrieval.pool import ExamplePool
    >>> pool = ExamplePool([])
    >>> pool.add("How many pets?", "SELECT count(*) FROM pets")
    >>> pool.add("Oldest pet's name?", "SELECT name FROM pets ORDER BY age DESC LIMIT 1")
    >>> [(e.question, round(s, 2)) for e, s in rerank_by_ast("SELECT title FROM book ORDER BY year DESC LIMIT 1",
    ...                                                       pool.examples, pool)]
    [("Oldest pet's name?", 1.0), ('How many pets?', 0.27)]
    """
    try:
        target = normalize_ast(approx_sql, dialect)
    except SqlweaveError:
        return None
    scored = []
    for ex in candidates:
        tree = pool.normalized_tree(ex)
        scored.append((ex, ast_similarity(target, tree, dialect) if tree is not None else 0.0))
    return sorted(scored, key=lambda pair: -pair[1])  # stable: equal scores keep the BM25 order


@dataclass(frozen=True)
class SelectExamples(BaseStage):
    """Put ``k`` retrieved examples in ``state.examples`` (and their prompt text in the ``examples`` prompt block).

    ``candidates``: how many BM25 candidates ``ast_rerank`` re-ranks (ASTReS used 500 from a dense retriever; 20 keeps
    it to about 20 tree diffs per question). ``k_simplified``: for ``dense_skeleton``, how many pairs the simplified
    question's skeleton adds to the ``k`` of the original's (the paper's k2 and k1, both 4).

    >>> SelectExamples(method="dense_skeleton", k=4, k_simplified=4).k_simplified
    4
    >>> SelectExamples(method="ast_rerank", candidates=0)
    Traceback (most recent call last):
    sqlweave.errors.ConfigurationError: candidates must be at least 1, not 0 ...
    """

    pool: str | None = None
    method: str = "bm25"
    k: int = 4
    organisation: str = "pairs"
    name: str = "select_examples"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()  # ast_rerank and sql_skeleton fall back when nothing approximated
    provides: ClassVar[tuple[str, ...]] = ("examples", "prompt_blocks")
    k_simplified: int = 4
    candidates: int = 20

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigurationError(f"unknown example selector {self.method!r}", hint=f"Use one of: {', '.join(METHODS)}.")
        if self.organisation not in ORGANISATIONS:
            raise ConfigurationError(f"unknown example organisation {self.organisation!r}",
                                     hint=f"Use one of: {', '.join(ORGANISATIONS)}.")
        for option, least in (("k", 1), ("k_simplified", 0), ("candidates", 1)):
            value = getattr(self, option)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ConfigurationError(f"{option} must be at least {least}, not {value!r}",
                                         hint=f"Pass a whole number >= {least} for {option}.")

    def __call__(self, state: State) -> None:
        pool = load_pool(self.pool or default_pool_path(state.resources.settings), state.resources)
        exclude = other_databases(state)
        if self.method == "question_skeleton":
            query = question_skeleton_of(state)
            chosen = pool.search("question_skeleton", query, self.k, exclude)
        elif self.method == "ast_rerank":
            query, chosen = self._ast_rerank(state, pool, exclude)
        elif self.method == "dense_skeleton":
            query, chosen = self._dense_skeleton(state, pool, exclude)
        elif self.method == "sql_skeleton" and (so_far := state.sql or state.approx_sql):
            # the skeleton of the SQL so far, or of the approximated query (paper 001's preliminary SQL)
            query, chosen = skeleton_examples(state, pool, so_far, self.k)
        else:
            query = state.question
            chosen = pool.search("question", query, self.k, exclude)
        state.examples = chosen
        state.prompt_blocks["examples"] = format_examples(chosen, self.organisation)
        state.note(method=self.method, query=query, examples=[e.question for e in chosen], pool_size=len(pool))

    def _ast_rerank(self, state: State, pool: ExamplePool, exclude) -> tuple[str, list[PoolExample]]:
        cands = pool.search("question", state.question, self.candidates, exclude)
        approx = state.approx_sql or state.sql
        ranked = rerank_by_ast(approx, cands, pool, state.db.dialect) if approx else None
        if not approx or ranked is None:  # ranked is None whenever approx is empty
            state.note(rerank="skipped: " + ("the approximated query does not parse" if approx
                                             else "no approximated query (approx_sql or sql)") + "; BM25 order kept",
                       candidates=len(cands))
            return state.question, cands[:self.k]
        state.note(approx_sql=approx, candidates=len(cands),
                   ast_scores=[round(score, 4) for _, score in ranked[:self.k]])
        return approx, [ex for ex, _ in ranked[:self.k]]

    def _dense_skeleton(self, state: State, pool: ExamplePool, exclude) -> tuple[str, list[PoolExample]]:
        skeleton = question_skeleton_of(state)
        chosen = pool.dense_search("question_skeleton", skeleton, self.k, exclude)
        simplified = state.simplified_question
        if simplified and self.k_simplified:
            simple_skeleton = question_skeleton_of(state, simplified)
            more = pool.dense_search("question_skeleton", simple_skeleton, self.k_simplified, besides(exclude, chosen))
            chosen = chosen + more
            state.note(simplified_skeleton=simple_skeleton, k1=self.k, k2=len(more))
        else:
            state.note(simplified_skeleton=None, k1=self.k, k2=0)
        return skeleton, chosen
