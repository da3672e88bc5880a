"""Simplified wordings of the example pool's questions (Guo et al., sections 3.1.1 and 3.1.2).

The paper's retrieval repository holds, for each training pair, the skeleton of its question *and*
the skeleton of the question as the model simplified it, so a user's unusual wording still finds
examples with the same intent. Simplifying 7,000 training questions takes thousands of model
calls, so it is a separate, resumable step (``sqlweave examples simplify``): each answer is
appended to ``<cache_dir>/pool/simplified.jsonl`` as soon as it arrives, an interrupted run loses
nothing, and a rerun asks only for the questions still missing. Rejected rewrites (see
:func:`sqlweave.stages.simplify.check_simplification`) are recorded too, so they are not asked
again, but never used. :func:`~sqlweave.retrieval.pool.load_pool` attaches what is there.

>>> from sqlweave.llm.fake import FakeLLM
>>> from sqlweave.retrieval.pool import ExamplePool
>>> import tempfile, pathlib
>>> pool = ExamplePool([])
>>> pool.add("Give me the tally of singers.", "SELECT count(*) FROM singer", schema_names=["singer"])
>>> store = pathlib.Path(tempfile.mkdtemp()) / "simplified.jsonl"
>>> simplify_pool(pool, FakeLLM(["How many singers are there?"]), path=store)
SimplifyReport(asked=1, accepted=1, rejected=0, already_done=0)
>>> load_simplified(store)
{'Give me the tally of singers.': 'How many singers are there?'}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..config import cache_dir

if TYPE_CHECKING:
    from ..llm.base import LLM
    from .pool import ExamplePool


def simplified_file() -> Path:
    """Where pool simplifications are kept: ``<cache_dir>/pool/simplified.jsonl`` (one JSON line each)."""
    return cache_dir() / "pool" / "simplified.jsonl"


def _rows(path: Path) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    if not path.exists():
        return rows
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            rows[str(row["question"])] = row
        except (ValueError, TypeError, KeyError):
            continue  # a line cut short by an interruption is asked again
    return rows


def load_simplified(path: Path | None = None) -> dict[str, str]:
    """Accepted simplifications, question -> simplified question (the latest line wins)."""
    return {q: r["simplified"] for q, r in _rows(path or simplified_file()).items()
            if not r.get("rejected") and r.get("simplified")}


@dataclass(frozen=True)
class SimplifyReport:
    asked: int
    accepted: int
    rejected: int
    already_done: int


def simplify_pool(pool: "ExamplePool", llm: "LLM", *, limit: int | None = None, path: Path | None = None,
                  progress: Callable[[int, int], None] | None = None) -> SimplifyReport:
    """Simplify the pool's questions that have no recorded simplification yet (at most ``limit``),
    appending each answer to ``path`` as it comes, then attach the accepted ones to ``pool``."""
    from ..stages.simplify import simplify_question
    from ..files import append_jsonl

    path = path or simplified_file()
    done = _rows(path)
    todo = list(dict.fromkeys(e.question for e in pool.examples if e.question not in done))
    if limit is not None:
        todo = todo[:max(0, limit)]
    accepted = rejected = 0
    for i, question in enumerate(todo, 1):
        simplified, reason = simplify_question(question, llm.complete)
        # one line per answer, written as it comes: an interruption loses at most the question in flight
        append_jsonl(path, [{"question": question, "simplified": simplified, "rejected": reason,
                             "model": llm.model_id}])
        accepted += reason is None
        rejected += reason is not None
        if progress:
            progress(i, len(todo))
    pool.attach_simplified(load_simplified(path))
    return SimplifyReport(len(todo), accepted, rejected, len(done))
