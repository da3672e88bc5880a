"""What each stage of a pipeline did to the answers of an evaluation run: the safety check on correction.

Every trace entry records the answer's SQL once its stage is done. A stage that replaced
the SQL it was handed is scored twice against gold (the SQL before and after), so each
correction stage gets its own right -> wrong and wrong -> right counts, even inside a
pipeline that chains several of them::

    sqlweave eval stages .eval-runs/correction-all --data-dir ../shared/data/spider

>>> StageEffect("revise", reached=10, skipped=4, changed=3, right_to_wrong=1, wrong_to_right=2).net
1
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, SqlweaveError
from .datasets import Dataset
from .runner import DatabasePool, GoldCache, comparison_rule, execution_match

#: Stages that produce the first SQL; a change there is not a correction.
FIRST_SQL_STAGES = frozenset({"extract_sql"})


@dataclass(frozen=True)
class StageEffect:
    """Counts for one stage over a run's questions.

    ``reached``: questions the stage ran on (it left a trace entry); ``skipped``: of those, the ones it left
    alone on purpose (its notes say ``skipped``, as the safety check does); ``changed``: answers whose SQL it
    replaced; ``right_to_wrong`` / ``wrong_to_right``: of the changed ones, those whose execution match flipped.
    """

    stage: str
    reached: int = 0
    skipped: int = 0
    changed: int = 0
    right_to_wrong: int = 0
    wrong_to_right: int = 0

    @property
    def net(self) -> int:
        return self.wrong_to_right - self.right_to_wrong


def read_traces(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """``question id -> trace entries`` of a run folder (torn lines from a kill are skipped)."""
    path = Path(folder) / "traces.jsonl"
    if not path.exists():
        raise ConfigurationError(f"no traces in {folder}", hint="Pass the --out folder of an evaluation run.")
    traces: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            traces.setdefault(row["id"], row["trace"])
        except (ValueError, KeyError, TypeError):
            continue
    return traces


def stage_effects(dataset: Dataset, folder: Path) -> list[StageEffect]:
    """Per stage, in pipeline order: how often it ran, skipped, changed the SQL, broke or fixed an answer.

    Raises :class:`ConfigurationError` when the run's traces predate per-stage SQL (rerun the evaluation:
    with the response cache on, a rerun into a new folder costs no model time).
    """
    traces = read_traces(folder)
    by_id = {e.id: e for e in dataset.examples}
    rule = comparison_rule(dataset)
    gold_cache = GoldCache()
    counts: dict[str, dict[str, int]] = {}
    with DatabasePool(dataset) as dbs:
        for qid, trace in traces.items():
            ex = by_id.get(qid)
            if ex is None:
                continue
            if any("sql" not in entry for entry in trace):
                raise ConfigurationError(f"the traces in {folder} do not record each stage's SQL",
                                         hint="Rerun the evaluation into a new --out folder (cached answers are free).")
            db = dbs.get(ex.db_id)
            scored: dict[str, bool] = {}

            def right(sql: str) -> bool:
                if sql not in scored:
                    try:
                        scored[sql] = execution_match(db, ex.gold_sql, sql, gold_cache, rule=rule)[0]
                    except SqlweaveError:  # the gold query itself fails: scored as a miss, as in the run
                        scored[sql] = False
                return scored[sql]

            before: str | None = None
            for entry in trace:
                c = counts.setdefault(entry["stage"], dict.fromkeys(("reached", "skipped", "changed", "r2w", "w2r"), 0))
                c["reached"] += 1
                c["skipped"] += bool((entry.get("notes") or {}).get("skipped"))
                after = entry["sql"]
                if after != before and before is not None and after is not None \
                        and entry["stage"] not in FIRST_SQL_STAGES:
                    c["changed"] += 1
                    was, now = right(before), right(after)
                    c["r2w"] += was and not now
                    c["w2r"] += now and not was
                before = after if after is not None else before
    return [StageEffect(stage, c["reached"], c["skipped"], c["changed"], c["r2w"], c["w2r"])
            for stage, c in counts.items()]
