"""What stages hand on to later stages through the :class:`~sqlweave.pipeline.State`, as typed values: the stored
values a question names (:class:`ValueMatch`, ``state.values``) and its words that name a table or column
otherwise (:class:`SchemaLink`, ``state.links``). The retrieved examples (``state.examples``) are the example
pool's own :class:`~sqlweave.retrieval.pool.PoolExample`, and a schema's fit to the token budget
(``state.schema_fit``) is the retriever's :class:`~sqlweave.retrieval.schema_retriever.BudgetFit`.

Each payload's ``as_dict()`` is what a trace's notes keep of it (``sqlweave eval --replay`` reads recorded traces,
so that form does not change).

>>> ValueMatch("singer", "Country", "France", 0.9876, "France", "capitalised").as_dict()["score"]
0.988
>>> str(SchemaLink("vocalists", "singer", None, 0.75))
'"vocalists" = table singer'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ValueMatch:
    """A stored value the question names: where it lives, how well it matched, and the question span."""

    table: str
    column: str
    value: str
    score: float
    span: str
    kind: str

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["score"] = round(self.score, 3)
        return d


@dataclass(frozen=True)
class SchemaLink:
    """A question word and the schema name it stands for (``column`` is ``None`` for a table)."""

    word: str
    table: str
    column: str | None
    score: float

    def __str__(self) -> str:
        target = f"column {self.table}.{self.column}" if self.column else f"table {self.table}"
        return f'"{self.word}" = {target}'

    def as_dict(self) -> dict[str, object]:
        return {"word": self.word, "table": self.table, "column": self.column, "score": round(self.score, 3)}


__all__ = ["SchemaLink", "ValueMatch"]
