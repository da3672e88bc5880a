"""Spider hardness (easy / medium / hard / extra), the official rule over Spider's parsed SQL.

Works on the ``sql`` field of Spider's JSON files (the official parser's output) or
on :func:`sqlweave.eval.spider_parse.parse_spider` (the official reader, given the schema) or
:func:`sqlweave.eval.spider_sql.to_spider` of any SQL text. The rule counts
"component 1" clauses (WHERE, GROUP BY, ORDER BY, LIMIT, joins, OR, LIKE), nested
queries ("component 2") and "others" (several aggregates, selected columns, WHERE
conditions, GROUP BY columns), exactly as the official evaluator does, including its
quirks (a NOT in a condition counts as an aggregate; ``len(where)`` counts the
``and``/``or`` words).

>>> hardness("SELECT count(*) FROM singer")
'easy'
>>> hardness("SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)")
'hard'
"""

from __future__ import annotations

from typing import Any

from .spider_parse import parse_spider
from .spider_sql import WHERE_OPS, SpiderSQL, to_spider

LEVELS = ("easy", "medium", "hard", "extra")
_LIKE = WHERE_OPS.index("like")


def _nested(sql: SpiderSQL) -> list[SpiderSQL]:
    nested = []
    for cond in sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]:
        if isinstance(cond[3], dict):
            nested.append(cond[3])
        if isinstance(cond[4], dict):
            nested.append(cond[4])
    for key in ("intersect", "except", "union"):
        if sql[key] is not None:
            nested.append(sql[key])
    return nested


def _has_agg(unit: Any) -> bool:
    return unit[0] != 0


def _count_agg(units: list[Any]) -> int:
    return sum(1 for u in units if _has_agg(u))


def component1(sql: SpiderSQL) -> int:
    count = sum(1 for k in ("where", "groupBy", "orderBy") if len(sql[k]) > 0)
    count += sql["limit"] is not None
    if len(sql["from"]["table_units"]) > 0:
        count += len(sql["from"]["table_units"]) - 1
    words = sql["from"]["conds"][1::2] + sql["where"][1::2] + sql["having"][1::2]
    count += sum(1 for w in words if w == "or")
    conds = sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]
    count += sum(1 for c in conds if c[1] == _LIKE)
    return count


def component2(sql: SpiderSQL) -> int:
    return len(_nested(sql))


def others(sql: SpiderSQL) -> int:
    agg = _count_agg(sql["select"][1]) + _count_agg(sql["where"][::2]) + _count_agg(sql["groupBy"])
    if len(sql["orderBy"]) > 0:
        units = sql["orderBy"][1]
        agg += _count_agg([u[1] for u in units if u[1]] + [u[2] for u in units if u[2]])
    agg += _count_agg(sql["having"])
    count = int(agg > 1)
    count += len(sql["select"][1]) > 1
    count += len(sql["where"]) > 1
    count += len(sql["groupBy"]) > 1
    return count


def hardness_of(sql: SpiderSQL) -> str:
    """The official ``eval_hardness`` over a parsed query."""
    c1, c2, o = component1(sql), component2(sql), others(sql)
    if c1 <= 1 and o == 0 and c2 == 0:
        return "easy"
    if (o <= 2 and c1 <= 1 and c2 == 0) or (c1 <= 2 and o < 2 and c2 == 0):
        return "medium"
    if (o > 2 and c1 <= 2 and c2 == 0) or (2 < c1 <= 3 and o <= 2 and c2 == 0) or (c1 <= 1 and o == 0 and c2 <= 1):
        return "hard"
    return "extra"


def hardness(sql: str | SpiderSQL, dialect: str = "sqlite", schema: dict[str, list[str]] | None = None) -> str:
    """Hardness of SQL text or of an already parsed Spider structure.

    With the database's ``schema`` (``{table: [columns]}``) the text is read by Spider's own
    reader, exactly as the official ``evaluate()`` reads the gold query; without it, by sqlglot.

    >>> hardness("SELECT name, age FROM singer WHERE age > 20", schema={"singer": ["name", "age"]})
    'medium'
    """
    if isinstance(sql, dict):
        return hardness_of(sql)
    if schema is not None:
        return hardness_of(parse_spider(sql, schema))
    return hardness_of(to_spider(sql, dialect))
