"""BIRD's valid efficiency score (VES) and soft F1.

VES rewards a correct prediction by how fast it runs relative to the gold query:
``100 * mean(sqrt(t_gold / t_pred))`` over all questions, 0 for wrong ones; the
time ratio is averaged over repeated runs with values beyond 3 standard deviations
dropped, as BIRD's evaluator does (``AlibabaResearch/DAMO-ConvAI``, ``bird/llm/src/evaluation_ves.py``,
see :data:`OFFICIAL_VES`). Soft F1 compares result tables row by row and
credits partly matching rows (BIRD mini-dev).

>>> soft_f1([(1, "a"), (2, "b")], [(1, "a"), (2, "c")])
0.75
>>> ves([1.0, 0.0, 4.0])
100.0
"""

from __future__ import annotations

import math
import sqlite3
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..database import Database
from ..errors import SqlweaveError
from .metrics import bird_result_eq, undecodable

Row = Sequence[Any]

#: The official script VES reproduces (repository and commit).
OFFICIAL_VES = "AlibabaResearch/DAMO-ConvAI@483554eae102996f5ec1f4feab4e78ef29c2a394 bird/llm/src/evaluation_ves.py"


def _clean_abnormal(values: list[float]) -> list[float]:
    """BIRD's ``clean_abnormal``: keep values strictly within 3 (population) standard deviations of the mean.

    As the official function, nothing is kept when all values are equal (the standard deviation is 0).

    >>> _clean_abnormal([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 50.0])
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    >>> _clean_abnormal([2.0, 2.0])
    []
    """
    arr = np.asarray(values)
    mean, std = np.mean(arr, axis=0), np.std(arr, axis=0)
    return [float(x) for x in arr if mean - 3 * std < x < mean + 3 * std]


def _exec_seconds(db: Database, sql: str, timeout_s: float) -> float:
    """What the official ``execute_sql`` times: a fresh connection's ``cursor.execute`` (rows not fetched)."""
    if db.backend == "sqlite" and Path(db.target).is_file():
        conn = sqlite3.connect(db.target)
        try:
            start = time.time()
            conn.cursor().execute(sql)
            return time.time() - start
        finally:
            conn.close()
    start = time.time()
    db.execute(sql, timeout_s=timeout_s, max_rows=1)
    return time.time() - start


def time_ratio(db: Database, gold_sql: str, pred_sql: str, iterations: int = 100, timeout_s: float = 30.0) -> float:
    """BIRD's ``iterated_execute_sql``: mean of ``t_gold / t_pred`` over runs (outliers dropped) if the results
    match (set equality), else 0; a query that fails, or runs with no time left to compare, scores 0 as well."""
    try:
        pred = db.execute(pred_sql, timeout_s=timeout_s, max_rows=10**7).rows
        gold = db.execute(gold_sql, timeout_s=timeout_s, max_rows=10**7).rows
        if undecodable(gold) or undecodable(pred) or not bird_result_eq(gold, pred):
            return 0.0
        ratios = []
        for _ in range(iterations):
            t_pred = _exec_seconds(db, pred_sql, timeout_s)
            t_gold = _exec_seconds(db, gold_sql, timeout_s)
            ratios.append(t_gold / t_pred)
        kept = _clean_abnormal(ratios)
        return sum(kept) / len(kept)
    except (SqlweaveError, sqlite3.Error, ZeroDivisionError):
        return 0.0


def ves(ratios: Sequence[float]) -> float:
    """``100 * mean(sqrt(ratio))`` with 0 for wrong answers (ratio 0)."""
    if not ratios:
        return 0.0
    return sum(math.sqrt(r) * 100 for r in ratios if r > 0) / len(ratios)


def _row_match(pred_row: Row, gold_row: Row) -> tuple[float, float, float]:
    total = len(gold_row)
    matches = sum(1 for v in pred_row if v in gold_row)
    pred_only = sum(1 for v in pred_row if v not in gold_row)
    gold_only = sum(1 for v in gold_row if v not in pred_row)
    return matches / total, pred_only / total, gold_only / total


def soft_f1(gold: Sequence[Row], pred: Sequence[Row]) -> float:
    """BIRD mini-dev soft F1 between result tables (duplicate rows removed, row order kept)."""
    if not pred and not gold:
        return 1.0
    pred_rows = list(dict.fromkeys(tuple(r) for r in pred))
    gold_rows = list(dict.fromkeys(tuple(r) for r in gold))
    tp = fp = fn = 0.0
    for i, g in enumerate(gold_rows):
        if i >= len(pred_rows):
            fn += 1
            continue
        m, p_only, g_only = _row_match(pred_rows[i], g)
        tp, fp, fn = tp + m, fp + p_only, fn + g_only
    fp += max(0, len(pred_rows) - len(gold_rows))
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
