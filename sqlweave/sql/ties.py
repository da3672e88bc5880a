"""Say when the rows of an ``ORDER BY ... LIMIT k`` answer are not the only ones that could be there.

"Which customer placed the most orders?" answered with ``ORDER BY COUNT(*) DESC LIMIT 1`` shows one customer
while four tie at six orders: which of them comes first is the engine's arbitrary choice, and the answer looks
certain. :func:`tie_probe` writes the query that finds out (the same query with its ordering keys as extra columns
and a few more rows), :func:`read_ties` reads its rows, and :func:`find_tie` does both on a database.

>>> tie_probe("SELECT name, SUM(x) AS score FROM t GROUP BY name ORDER BY score DESC LIMIT 1", "sqlite")
Probe(sql='SELECT name, SUM(x) AS score, SUM(x) AS sqlweave_tie_1 FROM t GROUP BY name ORDER BY score DESC LIMIT 51', k=1, keys=('score',))
>>> tie = read_ties([("ann", 6), ("bob", 6), ("cy", 6), ("dee", 5)], 1, 1, ("score",))
>>> tie.tied, tie.caution()
(2, '2 more rows tie with row 1 on score (6): the row shown is one pick among equals, since the order among \
tied rows is arbitrary. Ask for all of them, or say how to break the tie.')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..errors import SqlweaveError
from .validate import parse_one

if TYPE_CHECKING:
    from ..db.protocol import Database

#: Rows read past the k-th to count the ties (more are said as "or more").
EXTRA_ROWS = 50
_KEY = "sqlweave_tie_"


@dataclass(frozen=True)
class Tie:
    """``tied`` rows past the ``shown`` ones share the last shown row's ordering ``keys`` (``value``)."""

    shown: int
    tied: int
    keys: tuple[str, ...]
    value: tuple[Any, ...]
    more: bool = False  # there may be more tied rows than were read

    def caution(self) -> str:
        rows = "row ties" if self.tied == 1 and not self.more else "rows tie"
        n = f"{self.tied} or more" if self.more else f"{self.tied} more"
        shown = "the row shown is" if self.shown == 1 else f"the {self.shown} rows shown are"
        value = ", ".join(_short(v) for v in self.value)
        return (f"{n} {rows} with row {self.shown} on "
                f"{', '.join(self.keys)} ({value}): {shown} one pick among equals, since the order among tied rows "
                f"is arbitrary. Ask for all of them, or say how to break the tie.")

    @property
    def share(self) -> float:
        """The chance that the rows shown are the ones meant, if any of the tied rows could have been."""
        return self.shown / (self.shown + self.tied)


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else text[:39] + "…"


@dataclass(frozen=True)
class Probe:
    """The query that reads an answer's ordering keys (and more rows), its ``k``, and the keys as ORDER BY names
    them."""

    sql: str
    k: int
    keys: tuple[str, ...]


def tie_probe(sql: str, dialect: str, extra: int = EXTRA_ROWS) -> Probe | None:
    """The query that reads the ordering keys of ``sql``'s rows and ``extra`` rows more; ``None`` when ``sql`` is
    not one ``SELECT ... ORDER BY ... LIMIT k`` (without ``OFFSET`` or ``DISTINCT``) whose keys can be read."""
    try:
        tree = parse_one(sql, dialect)
    except (SqlweaveError, SqlglotError):
        return None
    if not isinstance(tree, exp.Select) or tree.args.get("distinct") or tree.args.get("offset"):
        return None
    limit, order = tree.args.get("limit"), tree.args.get("order")
    if not isinstance(limit, exp.Limit) or order is None or not order.expressions:
        return None
    count = limit.expression
    if not isinstance(count, exp.Literal) or not count.is_int or int(count.this) < 1:
        return None
    k = int(count.this)
    projections = list(tree.expressions)
    aliases = {p.alias.lower(): p.this for p in projections if isinstance(p, exp.Alias)}
    keys: list[exp.Expression] = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int:  # ORDER BY 2
            i = int(key.this) - 1
            if not 0 <= i < len(projections) or isinstance(projections[i], exp.Star):
                return None
            key = projections[i].unalias()
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases:  # ORDER BY an alias
            key = aliases[key.name.lower()]
        if key.find(exp.Star) is not None and not isinstance(key, exp.Count):
            return None
        keys.append(key.copy())
    probe = tree.copy()
    probe.set("expressions", projections + [exp.alias_(key, f"{_KEY}{i}") for i, key in enumerate(keys, 1)])
    probe.set("limit", exp.Limit(expression=exp.Literal.number(k + extra)))
    return Probe(probe.sql(dialect), k, tuple(o.this.sql(dialect) for o in order.expressions))


def read_ties(rows: Sequence[Sequence[Any]], k: int, n_keys: int, keys: Sequence[str],
              extra: int = EXTRA_ROWS) -> Tie | None:
    """The tie in ``rows`` (the probe's: each row ending in its ``n_keys`` ordering keys), or ``None``."""
    if len(rows) <= k:
        return None
    last = tuple(rows[k - 1][-n_keys:])
    tied = 0
    for row in rows[k:]:
        if tuple(row[-n_keys:]) != last:
            break
        tied += 1
    if not tied:
        return None
    return Tie(k, tied, tuple(keys), last, more=len(rows) >= k + extra and tied == len(rows) - k)


def find_tie(sql: str, db: "Database") -> Tie | None:
    """The tie of ``sql``'s answer on ``db`` (one more read-only query, under the database's guard and policy), or
    ``None`` when there is none or it cannot be told."""
    probe = tie_probe(sql, db.dialect)
    if probe is None:
        return None
    try:
        result = db.execute(probe.sql, max_rows=probe.k + EXTRA_ROWS)
    except SqlweaveError:
        return None
    return read_ties(result.rows, probe.k, len(probe.keys), probe.keys)


__all__ = ["EXTRA_ROWS", "Probe", "Tie", "find_tie", "read_ties", "tie_probe"]
