"""Result comparison exactly as the official evaluators do it.

Spider (test-suite evaluator): rows compare as a multiset unless the gold SQL
contains ``order by`` anywhere; predicted columns may be permuted; values
compare with Python equality (``1 == 1.0``), no float tolerance; two empty
results match. BIRD: ``set(pred) == set(gold)`` (order and duplicates ignored,
column order matters).

>>> spider_result_eq([(1, "a")], [("a", 1.0)], order_matters=False)
True
>>> spider_result_eq([(1,), (2,)], [(2,), (1,)], order_matters=True)
False
>>> bird_result_eq([(1, "a"), (1, "a")], [(1, "a")])
True
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from itertools import product
from typing import Any, Iterable, Iterator, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

Row = Sequence[Any]


def _unorder_row(row: Row) -> tuple[Any, ...]:
    return tuple(sorted(row, key=lambda x: str(x) + str(type(x))))


def _quick_reject(result1: Sequence[Row], result2: Sequence[Row], order_matters: bool) -> bool:
    """True when the results may still be equal (the official ``quick_rej`` with its inverted name fixed)."""
    s1 = [_unorder_row(r) for r in result1]
    s2 = [_unorder_row(r) for r in result2]
    return s1 == s2 if order_matters else set(s1) == set(s2)


def _multiset_eq(l1: Sequence[Any], l2: Sequence[Any]) -> bool:
    if len(l1) != len(l2):
        return False
    counts: dict[Any, int] = defaultdict(int)
    for e in l1:
        counts[e] += 1
    for e in l2:
        counts[e] -= 1
        if counts[e] < 0:
            return False
    return True


def _permutations(tab1_sets_by_columns: list[set[Any]], result2: Sequence[Row], rng: random.Random) -> Iterator[tuple[int, ...]]:
    num_cols = len(result2[0])
    constraints = [set(range(num_cols)) for _ in range(num_cols)]
    if num_cols <= 3:
        return product(*constraints)
    # As the official evaluator: sample 20 rows to prune the permutation space.
    for _ in range(20):
        row = rng.choice(result2)
        for c1 in range(num_cols):
            for c2 in set(constraints[c1]):
                if row[c2] not in tab1_sets_by_columns[c1]:
                    constraints[c1].remove(c2)
    return product(*constraints)


def spider_result_eq(gold: Sequence[Row], pred: Sequence[Row], order_matters: bool, seed: int = 0) -> bool:
    """Spider's ``result_eq(gold, pred, order_matters)``."""
    gold = [tuple(r) for r in gold]
    pred = [tuple(r) for r in pred]
    if not gold and not pred:
        return True
    if len(gold) != len(pred):
        return False
    num_cols = len(gold[0])
    if len(pred[0]) != num_cols:
        return False
    if not _quick_reject(gold, pred, order_matters):
        return False
    sets = [{row[i] for row in gold} for i in range(num_cols)]
    for perm in _permutations(sets, pred, random.Random(seed)):
        if len(perm) != len(set(perm)):
            continue
        permuted = pred if num_cols == 1 else [tuple(r[i] for i in perm) for r in pred]
        if order_matters:
            if gold == permuted:
                return True
        elif set(gold) == set(permuted) and _multiset_eq(gold, permuted):
            return True
    return False


def undecodable(rows: Iterable[Row]) -> bool:
    """True if a text value holds bytes that are not UTF-8 (read by sqlweave as lone surrogates).

    The official BIRD script reads results with Python's strict UTF-8 decoding, so such a
    result is an error there and the question scores 0.

    >>> undecodable([("caf" + chr(0xDCE9),)]), undecodable([("café", 1)])
    (True, False)
    """
    return any(isinstance(v, str) and _SURROGATE.search(v) for r in rows for v in r)


_SURROGATE = re.compile("[\ud800-\udfff]")


def bird_result_eq(gold: Iterable[Row], pred: Iterable[Row]) -> bool:
    """BIRD's execution match: ``set(pred) == set(gold)``."""
    return {tuple(r) for r in pred} == {tuple(r) for r in gold}


def order_matters(gold_sql: str) -> bool:
    """The official rule: order matters iff the gold text contains ``order by`` (anywhere, one space).

    The official script tests ``'order by' in g_str.lower()`` on the text as written, so
    ``ORDER  BY`` (two spaces) or a line break between the words does not count.

    >>> order_matters("SELECT a FROM t ORDER BY a"), order_matters("SELECT a FROM t ORDER  BY a")
    (True, False)
    """
    return "order by" in gold_sql.lower()


#: The official script the Spider execution rules reproduce (repository and commit).
SPIDER_EXEC_OFFICIAL = "taoyds/test-suite-sql-eval@e97acc546ecbee8fa27fa8dbf025ef61493a876c exec_eval.py + parse.py"
#: The official script the BIRD execution rule reproduces (repository and commit).
BIRD_EXEC_OFFICIAL = "AlibabaResearch/DAMO-ConvAI@483554eae102996f5ec1f4feab4e78ef29c2a394 bird/llm/src/evaluation.py"

_TOKENS = re.compile(
    r"""(?P<skip>'(?:[^']|'')*'?|"(?:[^"]|"")*"?|`[^`]*`?|\[[^\]]*\]?|--[^\n]*|/\*.*?(?:\*/|$))"""
    r"""|(?P<semi>;)|(?P<distinct>(?<![\w$#])distinct(?![\w$#]))""",
    re.IGNORECASE | re.DOTALL,
)


def strip_distinct(sql: str) -> str:
    """The official ``remove_distinct``: drop every ``distinct`` word token, keep the rest as written.

    As the official script (which reads the text with ``sqlparse`` and keeps its first
    statement), only the text up to the first ``;`` outside quotes and comments is kept.

    >>> strip_distinct("SELECT count(DISTINCT a) FROM t; SELECT 1")
    'SELECT count( a) FROM t;'
    >>> strip_distinct("SELECT 'distinct' FROM t")
    "SELECT 'distinct' FROM t"
    """
    out = []
    pos = 0
    for m in _TOKENS.finditer(sql):
        if m.group("skip") is not None:
            continue
        if m.group("semi") is not None:
            out.append(sql[pos:m.end()])
            return "".join(out)
        out.append(sql[pos:m.start()])
        pos = m.end()
    out.append(sql[pos:])
    return "".join(out)


def postprocess(sql: str) -> str:
    """The official ``postprocess``: ``> =``, ``< =``, ``! =`` joined.

    >>> postprocess("SELECT a FROM t WHERE b > = 1")
    'SELECT a FROM t WHERE b >= 1'
    """
    return sql.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")


_CUR_YEAR = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.IGNORECASE)


def replace_cur_year(sql: str) -> str:
    """The official ``replace_cur_year``: ``YEAR(CURDATE())`` becomes ``2020`` before running.

    >>> replace_cur_year("SELECT YEAR(CURDATE()) - 1")
    'SELECT 2020- 1'
    """
    return _CUR_YEAR.sub("2020", sql)


def remove_distinct(sql: str, dialect: str = "sqlite") -> str:
    """Drop every DISTINCT (``SELECT DISTINCT`` and ``COUNT(DISTINCT x)``), as the official default does."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return sql
    if tree.find(exp.Distinct) is None and not any(s.args.get("distinct") for s in tree.find_all(exp.Select)):
        return sql

    def strip(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Select) and node.args.get("distinct") is not None:
            node.set("distinct", None)
        if isinstance(node, exp.Distinct) and not isinstance(node.parent, exp.Select):
            inner = node.expressions
            return inner[0] if len(inner) == 1 else exp.Tuple(expressions=inner)
        return node

    return tree.transform(strip).sql(dialect=dialect)
