"""Score a file of predicted SQL against gold (Spider's prediction format), without running any model.

The file holds one query per line, in the order of the dataset's questions file (all of its
entries, including those whose database is missing here); a tab and a ``db_id`` may follow
the query, as in Spider's gold files. Lines for questions without a database are skipped.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigurationError
from .datasets import Dataset
from .runner import DatabasePool, GoldCache, QuestionResult, Scores, comparison_rule, question_result, score_sql


def read_predictions(path: Path) -> list[str]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise ConfigurationError(f"cannot read predictions from {path}: {err}") from err
    return [line.split("\t")[0].strip() for line in lines]


def score_predictions(dataset: Dataset, predictions: list[str], suite_dir: Path | None = None) -> list[QuestionResult]:
    """One :class:`QuestionResult` per question that has a database; line ``i`` answers entry ``i``."""
    expected = dataset.total
    split = dataset.examples[0].id.rsplit("-", 1)[0] if dataset.examples else "dev"
    if len(predictions) != expected:
        raise ConfigurationError(
            f"{len(predictions)} predictions for {expected} questions",
            hint="Write one query per line, in the order of the questions file (an empty line for no answer).",
        )
    cache = GoldCache()
    rule = comparison_rule(dataset)
    out = []
    with DatabasePool(dataset) as dbs:
        for ex in dataset.examples:
            index = int(ex.id.rsplit("-", 1)[1]) if ex.id.startswith(f"{split}-") else None
            pred = predictions[index] if index is not None and index < len(predictions) else ""
            if pred:
                scores = score_sql(dbs.get(ex.db_id), ex, pred, cache, rule, suite_dir)
            else:
                scores = Scores.none("no prediction")
            out.append(question_result(ex, pred or None, scores))
    return out
