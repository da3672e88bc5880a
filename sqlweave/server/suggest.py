"""Questions worth asking a database, built from its schema and real values: no model, same list every time.

Templates: how many rows a main table has; how many per a text column with few distinct values; the total
of a numeric column per category (a text column, or the table a foreign key points to); how many per month
when there is a date column; which rows have a real stored value; the top five by a numeric column.

>>> from sqlweave.database import Database
>>> from sqlweave.db.demo import demo_database_path
>>> for q in suggest_questions(Database.open(demo_database_path())):
...     print(q)
How many orders are there?
How many orders per status?
What is the total quantity per product?
How many orders per month?
Which customers have country = 'France'?
Which 5 products have the highest price?
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..chart import is_date_value, time_like_name
from ..errors import SqlweaveError

if TYPE_CHECKING:
    from ..db.protocol import Database
    from ..schema import Column, Schema, Table

#: A text column is a category when it has at most this many distinct values (and repeats some).
MAX_CATEGORIES = 12
#: Measure names people ask totals of, most telling first.
_TOTAL_WORDS = ("revenue", "sales", "amount", "total", "quantity", "units", "cost", "budget", "salary", "stock",
                "points", "weight", "duration", "count")
#: Measure names people rank rows by, most telling first.
_TOP_WORDS = ("price", "revenue", "sales", "amount", "salary", "score", "rating", "points", "population", "budget",
              "total", "quantity", "stock", "age")
_NAME_WORDS = ("name", "title", "label")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_DATE_TYPES = ("DATE", "TIME")


def words(name: str) -> str:
    """``order_items`` -> ``order items``; ``OrderItems`` -> ``order items``."""
    return " ".join(w.lower() for w in _WORD.findall(name)) or name


def singular(phrase: str) -> str:
    """The English singular of the last word (``inflection``): ``categories`` -> ``category``."""
    import inflection

    head, _, last = phrase.rpartition(" ")
    return f"{head} {inflection.singularize(last)}".strip()


def plural(phrase: str) -> str:
    """The English plural of the last word, a plural left as it is: a table named ``gadget`` is asked about as
    ``gadgets``, one named ``orders`` as ``orders``.

    >>> plural("gadget"), plural("orders"), plural("order item"), plural("country"), plural("people")
    ('gadgets', 'orders', 'order items', 'countries', 'people')
    """
    import inflection

    head, _, last = phrase.rpartition(" ")
    return f"{head} {inflection.pluralize(last)}".strip()


def rows_of(table: "Table") -> str:
    """How a question names the rows of ``table``: its name's words, in the plural."""
    return plural(words(table.name))


@dataclass(frozen=True)
class _Facts:
    schema: "Schema"

    def key_columns(self, table: "Table") -> set[str]:
        keys = {c.name.lower() for c in table.columns if c.primary_key}
        keys |= {fk.column.lower() for fk in self.schema.foreign_keys_of(table.name)}
        keys |= {c.name.lower() for c in table.columns if c.name.lower() == "id" or c.name.lower().endswith("_id")}
        return keys

    def is_link_table(self, table: "Table") -> bool:
        fk_cols = {fk.column.lower() for fk in self.schema.foreign_keys_of(table.name)}
        pk = {c.lower() for c in table.primary_key}
        return len(pk) > 1 and pk <= fk_cols

    def entity_tables(self) -> list["Table"]:
        tables = [t for t in self.schema.tables if (t.row_count or 0) > 0 and not self.is_link_table(t)]
        return sorted(tables, key=lambda t: (-(t.row_count or 0), t.name.lower()))

    def name_column(self, table: "Table") -> "Column | None":
        keys = self.key_columns(table)
        for c in table.columns:
            if c.name.lower() not in keys and c.is_text and any(w in words(c.name).split() for w in _NAME_WORDS):
                return c
        return None

    def categories(self, table: "Table") -> list["Column"]:
        keys = self.key_columns(table)
        out = []
        for c in table.columns:
            d = c.stats.distinct
            if (c.name.lower() in keys or not c.is_text or d is None or not 2 <= d <= MAX_CATEGORIES
                    or (table.row_count is not None and d >= table.row_count) or self.is_date(c)):
                continue
            out.append(c)
        return sorted(out, key=lambda c: (c.stats.distinct or 0, c.name.lower()))

    def measures(self, table: "Table", preference: tuple[str, ...] = _TOTAL_WORDS) -> list["Column"]:
        """Numeric columns that are not keys, dates or flags, the ones named like ``preference`` first."""
        keys = self.key_columns(table)
        out = [c for c in table.columns if c.is_numeric and c.name.lower() not in keys and not time_like_name(c.name)
               and "BOOL" not in c.type.upper() and (c.stats.distinct or 0) > 1]
        return sorted(out, key=lambda c: (_rank(c.name, preference), c.name.lower()))

    def is_date(self, c: "Column") -> bool:
        if any(k in c.type.upper() for k in _DATE_TYPES):
            return True
        samples = [s for s in c.samples if s is not None]
        return time_like_name(c.name) and bool(samples) and all(is_date_value(s) for s in samples)


def _rank(name: str, preference: tuple[str, ...]) -> int:
    ws = words(name).split()
    hits = [i for i, w in enumerate(preference) if w in ws]
    return min(hits) if hits else len(preference)


def _quote_ok(value: Any) -> bool:
    return (isinstance(value, str) and 0 < len(value) <= 40 and "'" not in value
            and value.isprintable() and value.strip() == value)


def _common_value(db: "Database | None", table: "Table", column: "Column") -> str | None:
    """The column's most frequent value (ties: the smallest), else its first sample."""
    if db is not None:
        t, c = db.quote(table.name), db.quote(column.name)
        try:
            rows = db.execute(f"SELECT {c}, COUNT(*) AS n FROM {t} WHERE {c} IS NOT NULL GROUP BY {c} "
                              f"ORDER BY n DESC, {c} LIMIT 5", max_rows=5).rows
        except SqlweaveError:
            rows = ()
        for value, _ in rows:
            if _quote_ok(value):
                return str(value)
    for value in column.samples:
        if _quote_ok(value):
            return str(value)
    return None


def suggest_questions(db: "Database", *, limit: int = 6) -> list[str]:
    """Between 4 and ``limit`` questions for ``db`` (fewer only when the schema is too small for more)."""
    return suggestions_for(db.schema(), db, limit=limit)


def suggestions_for(schema: "Schema", db: "Database | None" = None, *, limit: int = 6) -> list[str]:
    facts = _Facts(schema)
    entities = facts.entity_tables()
    out: list[str] = []

    def add(q: str) -> None:
        if q not in out and len(out) < limit:
            out.append(q)

    if entities:
        add(f"How many {rows_of(entities[0])} are there?")
    grouped = [(t, c) for t in entities for c in facts.categories(t)]
    used_category: tuple[str, str] | None = None
    if grouped:
        t, c = grouped[0]
        used_category = (t.name, c.name)
        add(f"How many {rows_of(t)} per {words(c.name)}?")
    # Totals per category: a measure with a foreign key to a named table, or a category in its own table.
    measures = sorted(((_rank(m.name, _TOTAL_WORDS), i, t, m) for i, t in enumerate(schema.tables)
                       if (t.row_count or 0) > 0 for m in facts.measures(t)), key=lambda x: (x[0], x[1]))
    for _, _, t, m in measures:
        label = None
        for fk in sorted(schema.foreign_keys_of(t.name), key=lambda fk: (fk.column.lower(), fk.ref_table.lower())):
            ref = schema.table(fk.ref_table) if schema.has_table(fk.ref_table) else None
            if ref is not None and ref.name != t.name and facts.name_column(ref) is not None:
                label = singular(words(ref.name))
                break
        if label is None and facts.categories(t):
            label = words(facts.categories(t)[0].name)
        if label:
            add(f"What is the total {words(m.name)} per {label}?")
            break
    for t in entities:
        if any(facts.is_date(c) for c in t.columns):
            add(f"How many {rows_of(t)} per month?")
            break
    for t, c in grouped:
        if (t.name, c.name) == used_category and len(grouped) > 1:
            continue
        value = _common_value(db, t, c)
        if value is not None:
            add(f"Which {rows_of(t)} have {words(c.name)} = '{value}'?")
            break
    for t in entities:
        top = facts.measures(t, _TOP_WORDS)
        if facts.name_column(t) is not None and top:
            add(f"Which 5 {rows_of(t)} have the highest {words(top[0].name)}?")
            break
    for t in entities[1:]:
        if len(out) >= 4:
            break
        add(f"How many {rows_of(t)} are there?")
    return out[:limit]
