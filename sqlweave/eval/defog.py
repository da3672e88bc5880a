"""The defog benchmark (defog sql-eval): its questions, and its scoring rule reproduced.

defog's questions (``questions_gen_postgres.csv``, ``questions_gen_sqlite.csv``) each name a database, a
``query_category`` and, for the ``instruct`` category, ``instructions`` that go with the question. A gold query may
list acceptable column choices in braces and several acceptable queries separated by ``;``::

    SELECT {author.name, author.aid} FROM author ... GROUP BY {};SELECT ... other acceptable query ...

sql-eval scores a prediction *correct* when its result matches the result of ANY of the queries those expand to
(:func:`minimal_queries`), in one of two ways (its ``compare_query_results``):

- the same table (:func:`frames_match`, its ``compare_df``): positionally equal as they come, or equal once both
  are normalised (:func:`normalize_frame`: duplicate rows dropped, columns sorted by name, rows sorted unless the
  question asks for an order);
- or the gold table inside the prediction's (:func:`frame_subset`, its ``subset_df``): every gold column's values
  equal one of the prediction's columns (each prediction column used once, so extra columns are allowed), then the
  gold table and those matched prediction columns equal after normalisation.

Results are compared as the pandas data frames sql-eval builds from them (:class:`ResultFrame`): ``Decimal``
becomes ``float``, whole-number columns with NULLs become floats, ``datetime`` columns become timestamps (NULL is
NaT) while dates stay objects, and value comparisons follow pandas' own (numbers within a relative 1e-5 in the
column match, exact when either column holds integers or booleans; NULL matches NULL). Floats are rounded to
``decimal_points`` when given (sql-eval's ``--decimal_points``, off by default). Where sql-eval's code would raise
(sorting a column that mixes text and numbers, duplicate column names that its normalisation cannot reindex), the
question scores as wrong, as it does there.

>>> minimal_queries("SELECT {a, b} FROM t GROUP BY {}")
['SELECT a FROM t GROUP BY a', 'SELECT  b FROM t GROUP BY  b', 'SELECT a,  b FROM t GROUP BY a,  b']
>>> gold = ResultFrame.from_rows(("name",), [("Ann",), ("Bob",)])
>>> pred = ResultFrame.from_rows(("id", "name"), [(2, "Bob"), (1, "Ann")])
>>> frames_match(gold, pred, "group_by", "Who wrote papers?"), frame_subset(gold, pred, "group_by", "Who wrote papers?")
(False, True)
"""

from __future__ import annotations

import csv
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..errors import ConfigurationError, RefusedStatementError, SQLParseError, SqlweaveError
from .defog_frames import (NA, ResultComparisonError, ResultFrame, argsort_column, asks_for_order, deduplicate_names,
                           drop_duplicate_rows, is_number, normalize_frame, sort_rows)

if TYPE_CHECKING:
    from ..database import Database

#: defog's query categories (35 questions each in the 210-question set).
CATEGORIES = ("date_functions", "group_by", "instruct", "order_by", "ratio", "table_join")
#: The question files, by engine.
QUESTION_FILES = {"postgres": "questions_gen_postgres.csv", "sqlite": "questions_gen_sqlite.csv"}
#: sql-eval's default query timeout (seconds) and the value NULLs take before its final comparison.
TIMEOUT_S = 10.0
_FILL = -99999


# --- questions -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DefogQuestion:
    """One defog question. ``id`` is its row number in the file (``"000"``...), the same in both engines' files."""

    id: str
    db_name: str
    question: str
    query: str
    query_category: str
    instructions: str = ""
    db_type: str = "postgres"
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def evidence(self) -> str | None:
        """The instructions that go with the question (what sqlweave calls evidence), or ``None``."""
        return self.instructions.strip() or None


def questions_path(data_dir: str | Path, engine: str = "postgres") -> Path:
    """The question file of ``engine`` (``postgres`` or ``sqlite``) in defog's data folder."""
    try:
        return Path(data_dir) / QUESTION_FILES[engine]
    except KeyError:
        raise ConfigurationError(f"no defog question file for engine {engine!r}",
                                 hint=f"Use one of: {', '.join(QUESTION_FILES)}.") from None


def load_questions(path: str | Path, *, db_type: str | None = None) -> tuple[DefogQuestion, ...]:
    """Read a defog question file (CSV with ``question``, ``query``, ``db_name``, ``query_category`` and
    optionally ``instructions``, ``db_type`` and other columns, kept in ``extra``).

    ``db_type`` defaults to the file's own column, else to the engine its name says (``..._sqlite.csv``).

    Raises:
        ConfigurationError: the file is missing, unreadable, or lacks a required column.
    """
    path = Path(path)
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
    except FileNotFoundError:
        raise ConfigurationError(f"no defog question file at {str(path)!r}",
                                 hint="Pass the folder holding questions_gen_postgres.csv.") from None
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ConfigurationError(f"cannot read {str(path)!r}: {err}") from None
    required = {"question", "query", "db_name", "query_category"}
    if rows and not required <= rows[0].keys():
        missing = ", ".join(sorted(required - rows[0].keys()))
        raise ConfigurationError(f"{str(path)!r} is not a defog question file: no column {missing}")
    engine = db_type or ("sqlite" if "sqlite" in path.name else "postgres")
    known = required | {"instructions", "db_type"}
    return tuple(
        DefogQuestion(
            id=f"{i:03d}", db_name=r["db_name"].strip(), question=r["question"], query=r["query"],
            query_category=r["query_category"].strip(), instructions=r.get("instructions") or "",
            db_type=db_type or (r.get("db_type") or "").strip() or engine,
            extra={k: v for k, v in r.items() if k not in known and k is not None},
        )
        for i, r in enumerate(rows)
    )


# --- gold query alternatives -----------------------------------------------------------------------


def minimal_queries(gold: str) -> list[str]:
    """Every query a gold entry accepts (sql-eval's ``get_all_minimal_queries``).

    The text is split on ``;`` into alternative queries; in each, the first ``{a, b, ...}`` is replaced by
    every non-empty combination of its comma-separated items (in their order, joined by ``", "``), and
    ``GROUP BY {}`` after it by the same columns.
    """
    out: list[str] = []
    for part in gold.split(";"):
        query = part.strip()
        if not query:
            continue
        start = query.find("{")
        end = query.find("}", start + 1)
        if start == -1 or end == -1:
            out.append(query)
            continue
        options = query[start + 1:end].split(",")
        for r in range(1, len(options) + 1):
            for combo in itertools.combinations(options, r):
                columns = ", ".join(combo)
                rest = query[end + 1:].replace("GROUP BY {}", f"GROUP BY {columns}")
                out.append(query[:start] + columns + rest)
    return out


# --- comparisons -----------------------------------------------------------------------------------


def _broadcast(a: int, b: int) -> int | None:
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    return None


def _positional_equal(gold: ResultFrame, pred: ResultFrame) -> bool:
    """``(df_gold.values == df_gen.values).all()`` with numpy's broadcasting: NULL is NaN (never equal) in
    number and time columns and None (equal to None) in others; shapes that do not broadcast are unequal."""
    (r1, c1), (r2, c2) = gold.shape, pred.shape
    rows, cols = _broadcast(r1, r2), _broadcast(c1, c2)
    if rows is None or cols is None:
        return False
    for j in range(cols):
        gj, pj = (0 if c1 == 1 else j), (0 if c2 == 1 else j)
        gcol, pcol = gold.data[gj], pred.data[pj]
        g_none, p_none = gold.kinds[gj] == "object", pred.kinds[pj] == "object"
        for i in range(rows):
            g, p = gcol[0 if r1 == 1 else i], pcol[0 if r2 == 1 else i]
            if g is NA or p is NA:
                if not (g is NA and p is NA and g_none and p_none):
                    return False
            elif not _eq(g, p):
                return False
    return True


def _eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def frames_match(gold: ResultFrame, pred: ResultFrame, query_category: str, question: str,
                 gold_sql: str | None = None, pred_sql: str | None = None) -> bool:
    """sql-eval's ``compare_df``: the same values position by position as they come, or the same table once
    both are normalised (:func:`normalize_frame`, each with its own query's ORDER BY), NULL equal to NULL
    (and to -99999, the value sql-eval fills NULLs with)."""
    if _positional_equal(gold, pred):
        return True
    gold = normalize_frame(gold, query_category, question, gold_sql)
    pred = normalize_frame(pred, query_category, question, pred_sql)
    if gold.shape != pred.shape:
        return False
    for gcol, pcol in zip(gold.data, pred.data):
        for g, p in zip(gcol, pcol):
            if not _eq(_FILL if g is NA else g, _FILL if p is NA else p):
                return False
    return True


def _cells_match(a: Any, b: Any, exact: bool) -> bool:
    """pandas' ``assert_series_equal`` (``check_dtype=False``) on one pair of cells."""
    if a is NA or b is NA:
        return a is NA and b is NA
    if isinstance(a, str) or isinstance(b, str):
        return _eq(a, b)
    if _eq(a, b):
        return True
    if not exact and is_number(a) and is_number(b):
        return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-8)
    return False


def columns_match(a: Sequence[Any], kind_a: str, b: Sequence[Any], kind_b: str) -> bool:
    """Two equally long columns are equal to pandas' ``assert_series_equal(check_dtype=False)``: exactly when
    either holds integers or booleans, else numbers within a relative 1e-5; NULL matches NULL; a timestamp
    column matches only timestamps (never dates or text)."""
    if len(a) != len(b):
        return False
    exact = kind_a in ("int", "bool") or kind_b in ("int", "bool")
    times = {"datetime", "timedelta"}
    if kind_a in times and kind_b in times and kind_a != kind_b:
        return False
    return all(_cells_match(x, y, exact) for x, y in zip(a, b))


def _sorted_column(values: Sequence[Any]) -> list[Any]:
    """``Series.sort_values()``: ascending, NULLs last (a column mixing text and numbers raises)."""
    return [values[i] for i in argsort_column(values, True)]


def frame_subset(gold: ResultFrame, pred: ResultFrame, query_category: str, question: str) -> bool:
    """sql-eval's ``subset_df(gold, prediction)``: the gold result is inside the prediction's.

    An empty gold result is never inside. Each gold column, in order, takes the first remaining prediction column
    whose sorted values equal its sorted values (:func:`columns_match`); a gold column without one fails. The gold
    table and the matched prediction columns (renamed to the gold names) must then be equal after
    :func:`normalize_frame` (with no SQL, so rows keep their order when the question asks for one).
    """
    if gold.shape[0] == 0 or gold.shape[1] == 0:
        return False
    gold = deduplicate_names(gold)
    remaining = deduplicate_names(pred)
    matched: list[str] = []
    for j in range(len(gold.columns)):
        gsorted: list[Any] | None = None
        for k in range(len(remaining.columns)):
            if gsorted is None:  # sorted inside the loop, as sql-eval does (no prediction column left: no sort)
                gsorted = _sorted_column(gold.data[j])
            if columns_match(gsorted, gold.kinds[j], _sorted_column(remaining.data[k]), remaining.kinds[k]):
                matched.append(remaining.columns[k])
                keep = [i for i in range(len(remaining.columns)) if i != k]
                remaining = remaining.pick(keep)
                break
        else:
            return False
    # The matched names are looked up in the prediction as it came: a renamed repeated name is not there.
    positions = pred.label_positions(matched, "the prediction (its column names repeat)")
    if len(positions) != len(gold.columns):
        return False
    pred_matched = pred.pick(positions, gold.columns)
    left = normalize_frame(gold, query_category, question)
    right = normalize_frame(pred_matched, query_category, question)
    if left.shape != right.shape or left.columns != right.columns:
        return False
    return all(columns_match(a, ka, b, kb) for a, ka, b, kb in zip(left.data, left.kinds, right.data, right.kinds))


# --- scoring one prediction ------------------------------------------------------------------------


@dataclass(frozen=True)
class DefogScore:
    """``correct`` is the benchmark's score (a same-table or subset match with any gold alternative);
    ``exact`` a same-table match; ``error`` why the comparison could not be made, if it could not."""

    correct: bool
    exact: bool = False
    error: str | None = None
    gold_error: bool = False  # the error came from a gold query (or comparing with its result)


Runner = Callable[[str], tuple[Sequence[str], Sequence[Sequence[Any]]]]


def _describe(err: Exception) -> str:
    if isinstance(err, SqlweaveError):
        return f"{err.code}: {err.message}"
    return f"{type(err).__name__}: {err}"


def score_prediction(run: Runner, gold_sql: str, pred_sql: str, *, query_category: str, question: str,
                     decimal_points: int | None = None, coerce_float: bool = True,
                     gold_run: Runner | None = None) -> DefogScore:
    """sql-eval's ``compare_query_results``: run the prediction, then each gold alternative in turn; a same-table
    match ends the search (``exact``), a subset match makes the prediction ``correct``.

    ``run`` executes SQL and returns ``(columns, rows)``; ``gold_run`` (default ``run``) executes gold queries,
    e.g. through a cache. As in sql-eval, a failure anywhere (the prediction or a gold query fails to run, or two
    results cannot be compared) makes the whole question wrong, even after an earlier subset match.
    """
    gold_run = gold_run or run

    def frame(result: tuple[Sequence[str], Sequence[Sequence[Any]]]) -> ResultFrame:
        columns, rows = result
        return ResultFrame.from_rows(columns, rows, decimal_points=decimal_points, coerce_float=coerce_float)

    try:
        pred = frame(run(pred_sql))
    except SqlweaveError as err:
        return DefogScore(False, error=_describe(err))
    correct = False
    for query in minimal_queries(gold_sql):
        try:
            gold = frame(gold_run(query))
        except SqlweaveError as err:
            return DefogScore(False, error=f"gold failed: {_describe(err)}", gold_error=True)
        try:
            if frames_match(gold, pred, query_category, question, gold_sql, pred_sql):
                return DefogScore(True, True)
            if frame_subset(gold, pred, query_category, question):
                correct = True
        except ResultComparisonError as err:
            return DefogScore(False, error=_describe(err))
    return DefogScore(correct, False)


class GoldResults:
    """Gold results per (database, SQL), each computed once."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]] = {}

    def runner(self, db: "Database", *, timeout_s: float = TIMEOUT_S, max_rows: int = 1_000_000) -> Runner:
        def run(sql: str) -> tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]:
            key = (db.target, sql)
            if key not in self._data:
                self._data[key] = _execute(db, sql, timeout_s, max_rows, trusted=True)
            return self._data[key]

        return run


def _execute(db: "Database", sql: str, timeout_s: float, max_rows: int,
             trusted: bool = False) -> tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]:
    """Run ``sql`` read-only. A ``trusted`` query (the benchmark's own gold SQL) that sqlweave's statement check
    cannot parse still runs, on the same read-only connection, as it does in sql-eval."""
    try:
        result = db.execute(sql, timeout_s=timeout_s, max_rows=max_rows)
    except (SQLParseError, RefusedStatementError):
        if not trusted:
            raise
        result = db.trusted_read(sql, timeout_s=timeout_s, max_rows=max_rows)
    if result.truncated:
        raise ResultComparisonError(f"the result has more than {max_rows} rows")
    return tuple(result.columns), result.rows


def score_on_database(db: "Database", question: DefogQuestion, pred_sql: str, *, gold: GoldResults | None = None,
                      timeout_s: float = TIMEOUT_S, decimal_points: int | None = None,
                      max_rows: int = 1_000_000) -> DefogScore:
    """Score ``pred_sql`` for ``question`` on ``db`` (read-only, each query under ``timeout_s``, as sql-eval's
    10 s default) with :func:`score_prediction`."""
    gold = gold or GoldResults()
    return score_prediction(
        lambda sql: _execute(db, sql, timeout_s, max_rows), question.query, pred_sql,
        query_category=question.query_category, question=question.question, decimal_points=decimal_points,
        gold_run=gold.runner(db, timeout_s=timeout_s, max_rows=max_rows),
    )


__all__ = [
    "CATEGORIES", "NA", "DefogQuestion", "DefogScore", "GoldResults", "ResultComparisonError", "ResultFrame",
    "asks_for_order", "columns_match", "deduplicate_names", "drop_duplicate_rows", "frame_subset", "frames_match",
    "load_questions", "minimal_queries", "normalize_frame", "questions_path", "score_on_database",
    "score_prediction", "sort_rows",
]
