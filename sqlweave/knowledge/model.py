"""The parts of a database's domain knowledge: a table's descriptions, a business term, a preferred join, a sample
question with its SQL. Each checks its own fields when built (:class:`~sqlweave.errors.ConfigurationError`).

>>> Term("active customer", "ordered in the last 90 days").line()
'- "active customer" means: ordered in the last 90 days'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import ConfigurationError
from ..sql.names import split_column


def need_text(value: Any, what: str, *, empty: bool = True) -> None:
    if not isinstance(value, str):
        raise ConfigurationError(f"{what} must be text, not {type(value).__name__}")
    if not empty and not value.strip():
        raise ConfigurationError(f"{what} is empty")


@dataclass(frozen=True)
class TableKnowledge:
    """What the team says about one table: its description and its columns' (``{column: description}``)."""

    name: str
    description: str = ""
    columns: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        need_text(self.name, "a table's name", empty=False)
        need_text(self.description, f"the description of table {self.name!r}")
        if not isinstance(self.columns, Mapping):
            raise ConfigurationError(f"the columns of table {self.name!r} must map column names to descriptions")
        for col, text in self.columns.items():
            need_text(col, f"a column name of table {self.name!r}", empty=False)
            need_text(text, f"the description of column {self.name}.{col}")
        object.__setattr__(self, "columns", dict(self.columns))

    def __hash__(self) -> int:
        return hash((self.name, self.description, tuple(self.columns.items())))


@dataclass(frozen=True)
class Term:
    """A business term: ``active customer`` means ``ordered in the last 90 days``, optionally as SQL."""

    name: str
    definition: str
    sql: str | None = None

    def __post_init__(self) -> None:
        need_text(self.name, "a term's name", empty=False)
        need_text(self.definition, f"the definition of term {self.name!r}", empty=self.sql is not None)
        if self.sql is not None:
            need_text(self.sql, f"the SQL of term {self.name!r}", empty=False)

    def line(self) -> str:
        text = f'- "{self.name}" means: {self.definition}' if self.definition else f'- "{self.name}"'
        return text + (f" (SQL: {' '.join(self.sql.split())})" if self.sql else "")


@dataclass(frozen=True)
class Join:
    """A preferred join, ``table.column = table.column``.

    >>> Join.parse('orders.customer_id = "Customers".id')
    Join(table='orders', column='customer_id', ref_table='Customers', ref_column='id')
    >>> Join.parse("orders.customer_id")
    Traceback (most recent call last):
    sqlweave.errors.ConfigurationError: 'orders.customer_id' is not a join ...
    """

    table: str
    column: str
    ref_table: str
    ref_column: str

    def __post_init__(self) -> None:
        for part in (self.table, self.column, self.ref_table, self.ref_column):
            need_text(part, "a table or column name of a join", empty=False)

    @classmethod
    def parse(cls, text: str) -> "Join":
        left, sep, right = str(text).partition("=")
        a, b = split_column(left), split_column(right)
        if not sep or a is None or b is None:
            raise ConfigurationError(f"{text!r} is not a join", hint="Write a join as table.column = table.column.")
        return cls(*a, *b)

    def __str__(self) -> str:
        return f"{self.table}.{self.column} = {self.ref_table}.{self.ref_column}"


@dataclass(frozen=True)
class SamplePair:
    """A question answered before on this database, with the SQL that answers it."""

    question: str
    sql: str

    def __post_init__(self) -> None:
        need_text(self.question, "a sample question", empty=False)
        need_text(self.sql, f"the SQL of sample question {self.question!r}", empty=False)
