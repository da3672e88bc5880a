"""Median and percentiles on SQLite builds that lack them.

PostgreSQL and DuckDB compute a median (``PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY x)``, ``MEDIAN(x)``);
SQLite does so only when built with its percentile extension (3.47 and later), which most Python builds are
not. sqlweave's transpiler writes those forms as the extension's functions (``percentile_cont(x, 0.5)``,
``median(x)``), and every SQLite connection sqlweave opens gets them here, with the extension's names and
meaning, when SQLite has none of its own:

- ``median(Y)``: ``percentile_cont(Y, 0.5)``;
- ``percentile_cont(Y, P)``: the value at fraction ``P`` (0 to 1) of the sorted values, interpolated between
  the two nearest ones;
- ``percentile_disc(Y, P)``: the first value whose position in the sorted values reaches fraction ``P``;
- ``percentile(Y, P)``: ``percentile_cont`` with ``P`` from 0 to 100.

NULLs are left out; no values give NULL. They are pure functions: they read their arguments and nothing else.

>>> import sqlite3
>>> conn = sqlite3.connect(":memory:")
>>> add_percentiles(conn)
>>> conn.execute("SELECT median(x), percentile_disc(x, 0.5) FROM (SELECT 1 AS x UNION ALL SELECT 2 "
...              "UNION ALL SELECT 10 UNION ALL SELECT NULL)").fetchone()
(2.0, 2)
"""

from __future__ import annotations

import math
import sqlite3
from typing import Any


#: What SQLite reports when one of them is given something else (Python's sqlite3 does not pass the reason on).
AGGREGATE_MISUSE = ("median(), percentile_cont(), percentile_disc() and percentile() read numbers, and a fraction "
                    "from 0 to 1 (0 to 100 for percentile())")


class _Percentile:
    """An aggregate over numbers: ``scale`` divides the fraction argument (100 for ``percentile``)."""

    name = "percentile_cont"
    scale = 1.0
    discrete = False

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.fraction: float | None = None

    def step(self, value: Any, fraction: Any = 0.5) -> None:
        if self.fraction is None:
            if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) \
                    or not 0 <= fraction / self.scale <= 1:
                raise ValueError(f"the fraction given to {self.name}() must be a number from 0 to "
                                 f"{self.scale:g}")
            self.fraction = fraction / self.scale
        if value is None:
            return
        if isinstance(value, (bytes, str)) or isinstance(value, bool):
            raise ValueError(f"{self.name}() reads numbers, not {type(value).__name__} values")
        self.values.append(value)

    def finalize(self) -> Any:
        if not self.values or self.fraction is None:
            return None
        values = sorted(self.values)
        if self.discrete:
            return values[max(math.ceil(self.fraction * len(values)) - 1, 0)]
        rank = self.fraction * (len(values) - 1)
        low, high = math.floor(rank), math.ceil(rank)
        return float(values[low] + (values[high] - values[low]) * (rank - low))


class _Median(_Percentile):
    name = "median"

    def step(self, value: Any, fraction: Any = 0.5) -> None:  # median(Y) has no fraction argument
        super().step(value, 0.5)


class _PercentileDisc(_Percentile):
    name = "percentile_disc"
    discrete = True


class _Hundredths(_Percentile):
    name = "percentile"
    scale = 100.0


_AGGREGATES: tuple[tuple[type[_Percentile], int], ...] = (
    (_Median, 1), (_Percentile, 2), (_PercentileDisc, 2), (_Hundredths, 2))


def add_percentiles(conn: sqlite3.Connection) -> None:
    """Give ``conn`` ``median``, ``percentile_cont``, ``percentile_disc`` and ``percentile`` unless SQLite has
    its own (a build with the percentile extension)."""
    try:
        conn.execute("SELECT median(1)").fetchall()
        return
    except sqlite3.OperationalError:
        pass
    for cls, args in _AGGREGATES:
        conn.create_aggregate(cls.name, args, cls)
