"""How far to trust an answer: a probability that it is right, from signals the pipeline already has.

Nothing here calls the model. :func:`features` reads the :class:`Signals` an answer's stages set (did the first
query fail, were names repaired, did the model have to correct it) and what its result and SQL say (is the result
empty, how many tables, joins, nested queries and set operations it uses, how much of it the question names);
:class:`Calibration` turns those numbers into a probability with a logistic model fitted on the 200-question Spider
dev sample (``benchmarks/calibrate.py``, which also checks it on held-out questions; figures in BENCHMARKS.md). The
fitted weights ship as ``sqlweave/data/confidence.json``.

>>> from sqlweave.db.connection import QueryResult
>>> result = QueryResult("", ("count(*)",), ((6,),), False, 0.001)
>>> easy = estimate("How many singers are there?", "SELECT count(*) FROM singer", result, None, Signals())
>>> hard = estimate("Which singers sang in no concert?",
...                 "SELECT name FROM singer WHERE singer_id NOT IN (SELECT singer_id FROM singer_in_concert)",
...                 QueryResult("", ("name",), (), False, 0.001), None, Signals())
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
from typing import TYPE_CHECKING, Any, Mapping

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


@dataclass
class Signals:
    """What the stages tell the estimate about how an answer came about (``State.signals``: each stage sets its
    own, so a stage renamed or written anew changes nothing here).

    >>> s = Signals()
    >>> s.executed(failed=True); s.executed(failed=False)  # only the first query's outcome counts
    >>> s.first_try_failed
    True
    """

    #: An execute stage ran: ``first_try_failed`` (and ``schema_issues``) are the first query's.
    ran: bool = False
    first_try_failed: bool = False  # the first query the model wrote did not run (execute)
    schema_issues: int = 0          # names in the first query the schema lacks (extract_sql, before any execute)
    repaired: bool = False          # table/column names fixed by rule (repair)
    corrected: bool = False         # the model was asked to correct its answer (correct, revise, dac)
    #: A query as it was before names were added to its keys, by the query it became (name_keys; the first kept).
    named_from: dict[str, str] = field(default_factory=dict)

    def extracted(self, issues: int) -> None:
        """A query was read from the model's answer with ``issues`` names the schema lacks."""
        if not self.ran:
            self.schema_issues = issues

    def executed(self, *, failed: bool) -> None:
        """A query was run (``failed``: it raised); the first one's outcome is kept."""
        if not self.ran:
            self.ran, self.first_try_failed = True, failed

    def named(self, sql: str, before: str) -> None:
        """``sql`` is ``before`` with the names of its keys added."""
        self.named_from.setdefault(sql, before)


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


def features(question: str, sql: str | None, result: "QueryResult | None", signals: Signals,
             dialect: str | None = None) -> dict[str, float]:
    """The numbers :class:`Calibration` weighs, from an answer's question, SQL, result and the :class:`Signals`
    its stages set. Missing parts count as 0."""
    out = dict.fromkeys(FEATURES, 0.0)
    rows = result.rows if result is not None else ()
    out["empty"] = float(result is not None and (not rows or all(v is None for row in rows for v in row)))
    out["rows_log"] = math.log1p(len(rows))
    out["first_try_failed"] = float(signals.first_try_failed)
    out["schema_issues"] = float(min(signals.schema_issues, 3))
    out["repaired"] = float(signals.repaired)
    out["corrected"] = float(signals.corrected)
    out["question_words_log"] = math.log1p(len(question.split()))
    out["negation"] = float(bool(_NEGATION.search(question)))
    if sql:
        # The query's shape as it was before names were added to its keys: a join added to show a name changes no
        # row, and says nothing of how likely the answer is right.
        facts, tables = _sql_facts(signals.named_from.get(sql) or sql, dialect)
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
             signals: Signals, dialect: str | None = None,
             calibration: Calibration | None = None) -> float:
    """The probability that the answer is right: 0 when it produced no result, else the calibrated estimate."""
    if result is None or error is not None or not sql:
        return 0.0
    cal = calibration or default_calibration()
    return round(cal.probability(features(question, sql, result, signals, dialect)), 4)
