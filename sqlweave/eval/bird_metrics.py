"""BIRD's valid efficiency score (VES) and soft F1.

VES rewards a correct prediction by how fast it runs relative to the gold query:
``100 * mean(sqrt(t_gold / t_pred))`` over all questions, 0 for wrong ones; the
time ratio is averaged over repeated runs with values beyond 3 standard deviations
dropped, as BIRD's evaluator does. Soft F1 compares result tables row by row and
credits partly matching rows (BIRD mini-dev).

>>> soft_f1([(1, "a"), (2, "b")], [(1, "a"), (2, "c")])
0.75
>>> ves([1.0, 0.0, 4.0])
100.0
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Sequence

from ..db.connection import Database
from .metrics import bird_result_eq

Row = Sequence[Any]


def _clean_abnormal(values: list[float]) -> list[float]:
    if len(values) < 2:
        return values
    mean, std = statistics.fmean(values), statistics.pstdev(values)
    kept = [v for v in values if mean - 3 * std < v < mean + 3 * std]
    return kept or values


def time_ratio(db: Database, gold_sql: str, pred_sql: str, iterations: int = 10, timeout_s: float = 30.0) -> float:
    """BIRD's ``time_ratio``: mean of ``t_gold / t_pred`` over runs if the results match (set equality), else 0."""
    gold = db.execute(gold_sql, timeout_s=timeout_s, max_rows=10**7).rows
    pred = db.execute(pred_sql, timeout_s=timeout_s, max_rows=10**7).rows
    if not bird_result_eq(gold, pred):
        return 0.0
    ratios = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        db.execute(pred_sql, timeout_s=timeout_s, max_rows=10**7)
        t_pred = time.perf_counter() - t0
        t0 = time.perf_counter()
        db.execute(gold_sql, timeout_s=timeout_s, max_rows=10**7)
        t_gold = time.perf_counter() - t0
        ratios.append(t_gold / max(t_pred, 1e-9))
    kept = _clean_abnormal(ratios)
    return sum(kept) / len(kept)


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
