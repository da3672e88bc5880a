"""sql-eval's result tables reproduced: the data frames its scoring compares, their normalisation and order.

Part of :mod:`sqlweave.eval.defog` (the benchmark's scoring rule): a :class:`ResultFrame` is a query's result as
sql-eval's pandas frame holds it, with column kinds inferred as pandas infers them.

>>> f = ResultFrame.from_rows(("a", "b"), [(2, "x"), (1, "y")])
>>> sort_rows(f, ["a"]).rows
[(1, 'y'), (2, 'x')]
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Iterable, Sequence

from ..errors import SqlweaveError

_ORDER_WORDS = re.compile(r"\b(order|sort|arrange)\b", re.IGNORECASE)
_ORDER_CLAUSE = re.compile(r"ORDER BY[\s\S]*", re.IGNORECASE)
_ORDER_TERMS = re.compile(r"(?<=ORDER BY)(.*?)(?=;|,|\)|$)", re.IGNORECASE)
_NOT_COLUMNS = ("desc", "asc", "nulls", "last", "first", "limit")



class ResultComparisonError(SqlweaveError):
    """Two results could not be compared the way the benchmark compares them (the question scores as wrong)."""

    code = "result_comparison"
    default_hint = "The two results cannot be compared as defog's rule asks; check both queries' columns."

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


def is_number(v: Any) -> bool:
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
    if all(is_number(v) for v in present):
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


def argsort_column(values: Sequence[Any], ascending: bool) -> list[int]:
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
        return frame.take(argsort_column(keys[0], ascending))
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
