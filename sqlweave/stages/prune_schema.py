"""Stage: narrow the prompt schema to what the question needs (BM25 columns, optionally sized and
completed by an approximated query, or RB-SQL's dense Table-/Column-Retrievers; join keys always
kept). Correction stages fall back to the full schema when the model asks for something pruned away.

>>> from sqlweave.schema import Schema, Table, Column
>>> from types import SimpleNamespace
>>> s = Schema("x", (Table("singer", (Column("id", primary_key=True), Column("name"), Column("age"))),
...                  Table("stadium", (Column("id", primary_key=True), Column("capacity")))))
>>> state = SimpleNamespace(schema=s, prompt_schema=s, question="How old is each singer?", approx_sql=None,
...                         values=None, schema_fit=None, schema_fit_key=None,
...                         db=SimpleNamespace(dialect="sqlite"), note=lambda **kw: None)
>>> PruneSchema(method="bm25", k=1)(state)
>>> state.prompt_schema.table_names
('singer',)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..pipeline import State
from ..retrieval.schema_retriever import prune
from .base import BaseStage, check_options
from .render_schema import fitted_schema


@dataclass(frozen=True)
class PruneSchema(BaseStage):
    """Set ``state.prompt_schema`` to a sub-schema.

    ``method``: ``bm25``, ``hybrid`` (falls back to ``bm25`` without an approximated query), ``dense``,
    ``dense-table`` or ``hybrid-dense`` (see :mod:`sqlweave.retrieval.schema_retriever`). ``scoring``,
    ``theta`` and ``mu`` tune the dense methods (``None``: their defaults). ``loose`` keeps the columns an
    approximated query most likely meant when it names one its tables lack. When ``select_values`` ran
    before this stage, the columns of the values it found are kept too (ASTReS's value and schema
    selection). Recall on Spider dev: 96.5% plain, 97.6% loose, 98.3% loose with value columns (BENCHMARKS.md).
    A schema too large for the model's context was fitted to the schema budget by an earlier stage
    (the approximation): that part is what is pruned.
    """

    method: str = "hybrid"
    k: int = 10
    factor: float = 2.0
    scoring: str = "maxsim"
    theta: float | None = None
    mu: float | None = None
    loose: bool = True
    name: str = "prune_schema"
    recovers: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    provides: ClassVar[tuple[str, ...]] = ("prompt_schema",)

    def __post_init__(self) -> None:
        from ..retrieval.schema_retriever import DENSE_DEFAULTS, METHODS

        check_options(self, choices={"method": METHODS, "scoring": tuple(DENSE_DEFAULTS)}, at_least={"k": 1, "factor": 0.0})

    def __call__(self, state: State) -> None:
        approx = state.approx_sql
        method = self.method if approx or self.method != "hybrid" else "bm25"
        values = [(v.table, v.column) for v in state.values or ()]
        base = fitted_schema(state)
        kept = prune(base, state.question, method=method, k=self.k, approx_sql=approx, factor=self.factor,
                     dialect=state.db.dialect, scoring=self.scoring, theta=self.theta, mu=self.mu, loose=self.loose,
                     also_keep=values)
        state.prompt_schema = kept
        total = sum(len(t.columns) for t in base.tables)
        left = sum(len(t.columns) for t in kept.tables)
        state.note(method=method, tables=list(kept.table_names), columns_kept=left, columns_total=total)
