"""Score a file of predicted SQL against gold (Spider's prediction format), without running any model.

The file holds one query per line, in the order of the dataset's questions file (all of its
entries, including those whose database is missing here); a tab and a ``db_id`` may follow
the query, as in Spider's gold files. Lines for questions without a database are skipped.
"""

from __future__ import annotations

from pathlib import Path

from ..db.connection import Database
from ..errors import ConfigurationError, SqlweaveError
from .datasets import Dataset
from .exact_match import exact_match
from .runner import (
    GoldCache,
    QuestionResult,
    comparison_rule,
    example_hardness,
    execution_match,
    suite_paths,
    test_suite_match,
)


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
    dbs: dict[str, Database] = {}
    cache = GoldCache()
    rule = comparison_rule(dataset)
    out = []
    try:
        for ex in dataset.examples:
            index = int(ex.id.rsplit("-", 1)[1]) if ex.id.startswith(f"{split}-") else None
            pred = predictions[index] if index is not None and index < len(predictions) else ""
            db = dbs.get(ex.db_id) or dbs.setdefault(ex.db_id, Database.open(dataset.db_path(ex.db_id), timeout_s=30))
            match = match_kd = executable = False
            error = None
            exact = False
            ts = None
            if pred:
                try:
                    match, error = execution_match(db, ex.gold_sql, pred, cache, rule=rule)
                    match_kd, _ = execution_match(db, ex.gold_sql, pred, cache, keep_distinct=True, rule=rule)
                    executable = error is None
                except SqlweaveError as err:
                    error = f"gold failed: {err.code}: {err.message}"
                exact = exact_match(ex.gold_sql, pred, db.schema(), db.dialect)
                suite = suite_paths(suite_dir, ex.db_id)
                ts = test_suite_match(suite, ex.gold_sql, pred) if suite else None
            else:
                error = "no prediction"
            out.append(QuestionResult(
                id=ex.id, db_id=ex.db_id, question=ex.question, gold=ex.gold_sql, prediction=pred or None,
                hardness=example_hardness(ex), match=match, match_keep_distinct=match_kd, executable=executable,
                error=error, prompt_tokens=0, completion_tokens=0, model_calls=0, seconds=0.0, trace_ref="",
                exact=exact, ts_match=ts,
            ))
    finally:
        for db in dbs.values():
            db.close()
    return out
