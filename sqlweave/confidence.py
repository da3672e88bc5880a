"""How far to trust an answer: a probability that it is right, from signals the pipeline already has.

Nothing here calls the model. :func:`signals` reads what an answer's trace and SQL say (did the first query
fail, were names repaired, did the model have to correct it, is the result empty, how many tables, joins,
nested queries and set operations it uses, how much of it the question names); :class:`Calibration` turns those
signals into a probability with a logistic model fitted on the 200-question Spider dev sample
(``benchmarks/calibrate.py``, which also checks it on held-out questions; figures in BENCHMARKS.md). The fitted
weights ship as ``sqlweave/data/confidence.json``.

>>> from sqlweave.db.connection import QueryResult
>>> result = QueryResult("", ("count(*)",), ((6,),), False, 0.001)
>>> easy = estimate("How many singers are there?", "SELECT count(*) FROM singer", result, None, [])
>>> hard = estimate("Which singers sang in no concert?",
...                 "SELECT name FROM singer WHERE singer_id NOT IN (SELECT singer_id FROM singer_in_concert)",
...                 QueryResult("", ("name",), (), False, 0.001), None, [])
>>> 0.0 < hard < easy < 1.0
True
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources as _pkg
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from sqlglot import exp

if TYPE_CHECKING:
    from .db.connection import QueryResult
    from .errors import SqlweaveError

#: The signals, in the order the calibration's weights use them. Each is a number (flags are 0 or 1).
FEATURES = (
    "empty",               # the result has no rows, or only NULLs
    "rows_log",            # log(1 + rows returned)
    "first_try_failed",    # the first query the model wrote did not run
    "schema_issues",       # names in the first query the schema lacks (at most 3)
    "repaired",            # table/column names fixed by rule
    "corrected",           # the model was asked to correct its answer
    "tables",              # distinct tables the SQL reads
    "joins",
    "nested",              # subqueries
    "set_op",              # UNION / INTERSECT / EXCEPT
    "group_by",
    "having",
    "order_limit",         # ORDER BY ... LIMIT
    "aggregates",
    "conditions",          # predicates in WHERE and HAVING
    "distinct",
    "question_words_log",  # log(1 + words in the question)
    "negation",            # the question says not / no / without / never ...
    "unnamed_tables",      # tables the SQL reads that the question names no part of
)

_NEGATION = re.compile(r"\b(not|no|never|without|neither|nor|except|other than|don't|doesn't|didn't|haven't|hasn't)\b",
                       re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _words(text: str) -> set[str]:
    """Lower-case word stems (first five letters), camel case and snake case split."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text)
    return {w.lower()[:5] for w in _WORD.findall(spaced) if len(w) > 1}


def _field(entry: Any, name: str) -> Any:
    """A trace entry's ``stage``, ``notes``, ``error`` or ``calls``, from a ``TraceEntry`` or its stored dict."""
    return entry.get(name) if isinstance(entry, Mapping) else getattr(entry, name, None)


def _trace_facts(trace: Sequence[Any]) -> tuple[bool, int, bool, bool]:
    """(first query failed, names the schema lacks, repaired by rule, corrected by the model) from a trace."""
    first_failed, issues, repaired, corrected = False, 0, False, False
    seen_execute = False
    for entry in trace:
        stage, notes = _field(entry, "stage"), _field(entry, "notes") or {}
        if stage == "extract_sql" and not seen_execute:
            issues = len(notes.get("schema_issues") or ())
        elif stage == "execute" and not seen_execute:
            seen_execute = True
            first_failed = _field(entry, "error") is not None
        elif stage == "repair" and notes.get("changed"):
            repaired = True
        elif stage in ("correct", "revise", "dac") and _field(entry, "calls"):
            corrected = True
    return first_failed, issues, repaired, corrected


def _before_names(sql: str, trace: Sequence[Any]) -> str:
    """The query whose shape is measured: ``sql`` as it was before the ``name_keys`` stage followed its keys with
    names (a join added to show a name changes no row, and says nothing of how likely the answer is right)."""
    for entry in trace:
        notes = _field(entry, "notes") or {}
        if _field(entry, "stage") == "name_keys" and notes.get("changed") and notes.get("sql") == sql:
            return str(notes.get("named_from") or sql)
    return sql


def _sql_facts(sql: str, dialect: str | None) -> tuple[dict[str, float], set[str]]:
    """The query's shape, and the tables it reads."""
    from .errors import SQLParseError
    from .sql.validate import parse_one

    try:
        tree = parse_one(sql, dialect)
    except SQLParseError:  # a query sqlglot cannot read has no shape to measure
        return {}, set()
    tables = {t.name.lower() for t in tree.find_all(exp.Table)}
    wheres = [w.this for w in tree.find_all(exp.Where)] + [h.this for h in tree.find_all(exp.Having)]
    conditions = sum(1 for w in wheres for node in w.walk()
                     if isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.In,
                                          exp.Between, exp.Is)))
    return {
        "tables": float(len(tables)),
        "joins": float(len(list(tree.find_all(exp.Join)))),
        "nested": float(len(list(tree.find_all(exp.Subquery)))),
        "set_op": float(any(True for _ in tree.find_all(exp.Union, exp.Intersect, exp.Except))),
        "group_by": float(tree.find(exp.Group) is not None),
        "having": float(tree.find(exp.Having) is not None),
        "order_limit": float(tree.find(exp.Order) is not None and tree.find(exp.Limit) is not None),
        "aggregates": float(len(list(tree.find_all(exp.AggFunc)))),
        "conditions": float(conditions),
        "distinct": float(tree.find(exp.Distinct) is not None),
    }, tables


def signals(question: str, sql: str | None, result: "QueryResult | None", trace: Sequence[Any],
            dialect: str | None = None) -> dict[str, float]:
    """The numbers :class:`Calibration` weighs, from an answer's question, SQL, result and trace (its
    ``TraceEntry`` objects, or their ``as_dict()`` dicts as ``sqlweave eval`` stores them). Missing parts count as 0."""
    out = dict.fromkeys(FEATURES, 0.0)
    rows = result.rows if result is not None else ()
    out["empty"] = float(result is not None and (not rows or all(v is None for row in rows for v in row)))
    out["rows_log"] = math.log1p(len(rows))
    first_failed, issues, repaired, corrected = _trace_facts(trace)
    out["first_try_failed"] = float(first_failed)
    out["schema_issues"] = float(min(issues, 3))
    out["repaired"] = float(repaired)
    out["corrected"] = float(corrected)
    out["question_words_log"] = math.log1p(len(question.split()))
    out["negation"] = float(bool(_NEGATION.search(question)))
    if sql:
        facts, tables = _sql_facts(_before_names(sql, trace), dialect)
        out.update(facts)
        asked = _words(question)
        out["unnamed_tables"] = float(sum(1 for t in tables if not (_words(t) & asked)))
    return out


@dataclass(frozen=True)
class Calibration:
    """A logistic model over :data:`FEATURES`: standardised signals, weights, intercept; ``about`` says what it
    was fitted on and how well it held up."""

    weights: Mapping[str, float]
    intercept: float
    means: Mapping[str, float]
    scales: Mapping[str, float]
    about: Mapping[str, Any] = field(default_factory=dict)

    def probability(self, values: Mapping[str, float]) -> float:
        z = self.intercept + sum(w * (values.get(f, 0.0) - self.means.get(f, 0.0)) / (self.scales.get(f) or 1.0)
                                 for f, w in self.weights.items())
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def as_dict(self) -> dict[str, Any]:
        return {"weights": dict(self.weights), "intercept": self.intercept, "means": dict(self.means),
                "scales": dict(self.scales), "about": dict(self.about)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Calibration":
        return cls(dict(data["weights"]), float(data["intercept"]), dict(data["means"]), dict(data["scales"]),
                   dict(data.get("about") or {}))


@lru_cache(maxsize=1)
def default_calibration() -> Calibration:
    """The calibration shipped with sqlweave (fitted on the ``default`` pipeline's answers)."""
    text = _pkg.files("sqlweave").joinpath("data/confidence.json").read_text(encoding="utf-8")
    return Calibration.from_dict(json.loads(text))


def estimate(question: str, sql: str | None, result: "QueryResult | None", error: "SqlweaveError | None",
             trace: Sequence[Any], dialect: str | None = None,
             calibration: Calibration | None = None) -> float:
    """The probability that the answer is right: 0 when it produced no result, else the calibrated estimate."""
    if result is None or error is not None or not sql:
        return 0.0
    cal = calibration or default_calibration()
    return round(cal.probability(signals(question, sql, result, trace, dialect)), 4)
