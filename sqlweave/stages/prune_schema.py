"""Stage: narrow the prompt schema to what the question needs (BM25 columns, optionally sized and
completed by an approximated query; join keys always kept). Correction stages fall back to the
full schema when the model asks for something pruned away."""

from __future__ import annotations

from dataclasses import dataclass

from ..pipeline import State
from ..retrieval.schema_retriever import prune


@dataclass(frozen=True)
class PruneSchema:
    """Set ``state.prompt_schema`` to a sub-schema (``method``: ``bm25`` or ``hybrid``)."""

    method: str = "hybrid"
    k: int = 10
    factor: float = 2.0
    name: str = "prune_schema"

    def __call__(self, state: State) -> None:
        approx = state.extras.get("approx_sql")
        method = self.method if approx or self.method != "hybrid" else "bm25"
        kept = prune(state.schema, state.question, method=method, k=self.k, approx_sql=approx, factor=self.factor,
                     dialect=state.db.dialect)
        state.prompt_schema = kept
        total = sum(len(t.columns) for t in state.schema.tables)
        left = sum(len(t.columns) for t in kept.tables)
        state.note(method=method, tables=list(kept.table_names), columns_kept=left, columns_total=total)
