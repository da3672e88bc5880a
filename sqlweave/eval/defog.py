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
import datetime as dt
import itertools
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from ..errors import ConfigurationError, RefusedStatementError, SQLParseError, SqlweaveError

if TYPE_CHECKING:
    from ..database import Database

#: defog's query categories (35 questions each in the 210-question set).
CATEGORIES = ("date_functions", "group_by", "instruct", "order_by", "ratio", "table_join")
#: The question files, by engine.
QUESTION_FILES = {"postgres": "questions_gen_postgres.csv", "sqlite": "questions_gen_sqlite.csv"}
#: sql-eval's default query timeout (seconds) and the value NULLs take before its final comparison.
TIMEOUT_S = 10.0
_FILL = -99999
_ORDER_WORDS = re.compile(r"\b(order|sort|arrange)\b", re.IGNORECASE)
_ORDER_CLAUSE = re.compile(r"ORDER BY[\s\S]*", re.IGNORECASE)
_ORDER_TERMS = re.compile(r"(?<=ORDER BY)(.*?)(?=;|,|\)|$)", re.IGNORECASE)
_NOT_COLUMNS = ("desc", "asc", "nulls", "last", "first", "limit")


class ResultComparisonError(SqlweaveError):
    """Two results could not be compared the way the benchmark compares them (the question scores as wrong)."""

    code = "result_comparison"
    default_hint = "The two results cannot be compared as defog's rule asks; check both queries' columns."


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


# --- results as sql-eval's data frames ------------------------------------------------------------


class _Missing:
    """A NULL cell (pandas' None, NaN or NaT, depending on the column)."""

    _instance: "_Missing | None" = None

    def __new__(cls) -> "_Missing":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NA"

    def __reduce__(self) -> str:
        return "NA"


NA = _Missing()

#: Column kinds, after pandas' inference: int64, float64, bool, datetime64, timedelta64, object.
_NUMPY_KINDS = ("int", "float", "bool", "datetime", "timedelta")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _infer_kind(values: Sequence[Any]) -> str:
    present = [v for v in values if v is not NA]
    if not present:
        return "object"
    if all(isinstance(v, bool) for v in present):
        return "bool" if len(present) == len(values) else "object"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        if len(present) == len(values) and all(-(2**63) <= v < 2**63 for v in present):
            return "int"
        return "float" if all(abs(v) < 2**63 for v in present) else "object"
    if all(_is_number(v) for v in present):
        return "float"
    if all(isinstance(v, dt.datetime) for v in present) and len({v.tzinfo is None for v in present}) == 1:
        return "datetime"
    if all(isinstance(v, dt.timedelta) for v in present):
        return "timedelta"
    return "object"


def _round_half_even(x: float, digits: int) -> float:
    """numpy's ``round``: scale, round half to even, unscale."""
    if not math.isfinite(x):
        return x
    if digits >= 0:
        p = 10.0 ** digits
        return float(round(x * p)) / p
    p = 10.0 ** -digits
    return float(round(x / p)) * p


@dataclass(frozen=True)
class ResultFrame:
    """A query result as sql-eval's data frame holds it: column names (duplicates allowed), column-wise values
    with :data:`NA` for NULL, and each column's kind as pandas infers it."""

    columns: tuple[str, ...]
    data: tuple[tuple[Any, ...], ...]  # one tuple per column
    kinds: tuple[str, ...]

    @classmethod
    def from_rows(cls, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, decimal_points: int | None = None,
                  coerce_float: bool = True) -> "ResultFrame":
        """Build the frame from a driver's rows. ``coerce_float`` turns ``Decimal`` into ``float`` (pandas'
        ``read_sql_query`` does on PostgreSQL); ``decimal_points`` rounds float columns (``DataFrame.round``)."""
        columns = tuple(str(c) for c in columns)
        rows = [tuple(r) for r in rows]
        if any(len(r) != len(columns) for r in rows):
            raise ResultComparisonError("a result row does not have one value per column")
        data, kinds = [], []
        for j in range(len(columns)):
            col = []
            for r in rows:
                v = r[j]
                if v is None or (isinstance(v, float) and math.isnan(v)):
                    v = NA
                elif coerce_float and isinstance(v, Decimal):
                    v = NA if v.is_nan() else float(v)
                col.append(v)
            kind = _infer_kind(col) if rows else "object"
            if kind == "float":
                col = [NA if v is NA else float(v) for v in col]
                if decimal_points:  # sql-eval rounds only when --decimal_points is given (and not 0)
                    col = [NA if v is NA else _round_half_even(v, decimal_points) for v in col]
            data.append(tuple(col))
            kinds.append(kind)
        return cls(columns, tuple(data), tuple(kinds))

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.data[0]) if self.data else 0, len(self.columns))

    @property
    def rows(self) -> list[tuple[Any, ...]]:
        return list(zip(*self.data)) if self.data else []

    def take(self, order: Sequence[int]) -> "ResultFrame":
        return ResultFrame(self.columns, tuple(tuple(c[i] for i in order) for c in self.data), self.kinds)

    def pick(self, positions: Sequence[int], names: Sequence[str] | None = None) -> "ResultFrame":
        return ResultFrame(tuple(names) if names is not None else tuple(self.columns[i] for i in positions),
                           tuple(self.data[i] for i in positions), tuple(self.kinds[i] for i in positions))

    def positions(self, label: str) -> list[int]:
        return [i for i, c in enumerate(self.columns) if c == label]

    def label_positions(self, labels: Sequence[str], where: str = "the result") -> list[int]:
        """The positions of every column of each label, in order (a label that is missing raises)."""
        positions = []
        for label in labels:
            found = self.positions(label)
            if not found:
                raise ResultComparisonError(f"no column {label!r} in {where}")
            positions += found
        return positions

    def select(self, labels: Sequence[str]) -> "ResultFrame":
        """``df[labels]``: every column of each label (a label that is missing raises)."""
        return self.pick(self.label_positions(labels))


def drop_duplicate_rows(frame: ResultFrame) -> ResultFrame:
    """``DataFrame.drop_duplicates()``: the first of equal rows is kept (NULL equals NULL, 1 equals 1.0)."""
    seen: set[tuple[Any, ...]] = set()
    keep = []
    try:
        for i, row in enumerate(frame.rows):
            if row not in seen:
                seen.add(row)
                keep.append(i)
    except TypeError as err:  # unhashable values (arrays, JSON objects)
        raise ResultComparisonError(f"cannot drop duplicate rows: {err}") from None
    return frame.take(keep) if len(keep) != frame.shape[0] else frame


def deduplicate_names(frame: ResultFrame) -> ResultFrame:
    """sql-eval's ``deduplicate_columns``: each repeated name becomes ``NAME_POSITION``."""
    names = list(frame.columns)
    repeated = {n for n in names if names.count(n) > 1}
    if not repeated:
        return frame
    return ResultFrame(tuple(f"{n}_{i}" if n in repeated else n for i, n in enumerate(names)), frame.data,
                       frame.kinds)


def _sorted_or_raise(values: list[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError as err:
        raise ResultComparisonError(f"cannot sort a result column: {err}") from None


def _argsort_column(values: Sequence[Any], ascending: bool) -> list[int]:
    """pandas' ``nargsort`` (one sort key): values compared as they are, NULLs last either way."""
    present = [i for i, v in enumerate(values) if v is not NA]
    missing = [i for i, v in enumerate(values) if v is NA]
    try:
        order = sorted(present, key=lambda i: values[i], reverse=not ascending)
    except TypeError as err:
        raise ResultComparisonError(f"cannot sort a result column: {err}") from None
    return order + missing


def _category_codes(values: Sequence[Any], ascending: bool) -> list[int]:
    """The codes pandas' ``lexsort_indexer`` sorts one key by: ordered categories (numbers and other values
    before text when a column mixes them; an unorderable mix raises), NULLs last either way."""
    uniques: dict[Any, None] = {}
    try:
        for v in values:
            if v is not NA:
                uniques.setdefault(v, None)
    except TypeError as err:
        raise ResultComparisonError(f"cannot sort a result column: {err}") from None
    cats = list(uniques)
    try:
        ordered = sorted(cats)
    except TypeError:
        text = [c for c in cats if isinstance(c, str)]
        other = [c for c in cats if not isinstance(c, str)]
        ordered = _sorted_or_raise(other) + sorted(text)
    code = {c: i for i, c in enumerate(ordered)}
    n = len(ordered)
    out = []
    for v in values:
        if v is NA:
            out.append(n)
        else:
            out.append(code[v] if ascending else n - code[v] - 1)
    return out


def sort_rows(frame: ResultFrame, by: Sequence[str], ascending: bool = True) -> ResultFrame:
    """``DataFrame.sort_values(by=by, ascending=ascending)``. A label in ``by`` that names several columns
    raises, as in pandas."""
    if not by:
        return frame
    keys = []
    for label in by:
        found = frame.positions(label)
        if not found:
            raise ResultComparisonError(f"no column {label!r} in the result")
        if len(found) > 1:
            raise ResultComparisonError(f"the column label {label!r} is not unique")
        keys.append(frame.data[found[0]])
    if len(keys) == 1:
        return frame.take(_argsort_column(keys[0], ascending))
    codes = [_category_codes(k, ascending) for k in keys]
    order = sorted(range(frame.shape[0]), key=lambda i: tuple(c[i] for c in codes))
    return frame.take(order)


def _order_by_terms(sql: str) -> tuple[list[str], bool] | None:
    """What sql-eval reads from a query's first ORDER BY: the words up to the next ``;``, ``,`` or ``)`` on that
    line (table prefixes, ``,`` and ``(`` removed; ASC/DESC/NULLS/LAST/FIRST/LIMIT left out) and the direction
    (descending unless the words say ASC and not DESC). ``None`` without ORDER BY."""
    clause = _ORDER_CLAUSE.search(sql)
    if clause is None:
        return None
    found = _ORDER_TERMS.findall(clause.group(0))
    words = [w.strip().rsplit(".", 1)[-1] for w in (found[0].split() if found else [])]
    upper = [w.upper() for w in words]
    ascending = "DESC" not in upper and "ASC" in upper
    words = [w.strip().replace(",", "").replace("(", "") for w in words]
    return [w for w in words if w.lower() not in _NOT_COLUMNS], ascending


def asks_for_order(query_category: str, question: str) -> bool:
    """sql-eval's test: the ``order_by`` category, or the words order/sort/arrange in the question."""
    return query_category == "order_by" or _ORDER_WORDS.search(question.lower()) is not None


def normalize_frame(frame: ResultFrame, query_category: str, question: str, sql: str | None = None) -> ResultFrame:
    """sql-eval's ``normalize_table``.

    Duplicate rows are dropped and columns sorted by name. When the question asks for an order
    (:func:`asks_for_order`) and ``sql`` has an ORDER BY, rows are sorted by the columns that ORDER BY names
    (:func:`_order_by_terms`) then by the others, in its direction, and the ORDER BY columns are moved last;
    when the question asks for an order and no ``sql`` (or no ORDER BY) is given, rows keep their order;
    otherwise rows are sorted by every column, ascending. Repeated column names then get their position
    appended.
    """
    frame = drop_duplicate_rows(frame)
    names = list(frame.columns)
    wanted = sorted(names)
    if wanted != names:
        if len(set(names)) != len(names):
            raise ResultComparisonError("cannot reindex on an axis with duplicate labels (repeated column names)")
        frame = frame.pick(sorted(range(len(names)), key=lambda i: names[i]))
    if asks_for_order(query_category, question):
        terms = _order_by_terms(sql) if sql else None
        if terms is not None:
            words, ascending = terms
            present = list(frame.columns)
            others = [c for c in present if c not in words]
            ordered = [w for w in words if w in present]
            frame = sort_rows(frame, ordered + others, ascending).select(others + ordered)
    else:
        frame = sort_rows(frame, list(frame.columns), True)
    return deduplicate_names(frame)


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
    if not exact and _is_number(a) and _is_number(b):
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
    return [values[i] for i in _argsort_column(values, True)]


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
