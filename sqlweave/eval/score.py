"""Score a file of predicted SQL against gold (Spider's prediction format), without running any model.

The file holds one query per line, in the order of the dataset's questions file (all of its
entries, including those whose database is missing here); a tab and a ``db_id`` may follow
the query, as in Spider's gold files. Lines for questions without a database are skipped.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigurationError
from .datasets import Dataset
from .runner import DatabasePool, GoldCache, QuestionResult, Scores, comparison_rule, example_hardness, score_sql


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
                scores = Scores(False, False, "no prediction", False, None)
            out.append(QuestionResult(
                id=ex.id, db_id=ex.db_id, question=ex.question, gold=ex.gold_sql, prediction=pred or None,
                hardness=example_hardness(ex), match=scores.match, match_keep_distinct=scores.match_keep_distinct,
                executable=bool(pred) and scores.error is None,
                error=scores.error, prompt_tokens=0, completion_tokens=0, model_calls=0, seconds=0.0, trace_ref="",
                exact=scores.exact, ts_match=scores.ts_match,
            ))
    return out
