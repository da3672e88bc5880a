"""Simplified wordings of the example pool's questions (Guo et al., sections 3.1.1 and 3.1.2).

The paper's retrieval repository holds, for each training pair, the skeleton of its question *and*
the skeleton of the question as the model simplified it, so a user's unusual wording still finds
examples with the same intent. Simplifying 7,000 training questions takes thousands of model
calls, so it is a separate, resumable step (``sqlweave examples simplify``,
:func:`sqlweave.stages.simplify.simplify_pool`): each answer is
appended to ``<cache_dir>/pool/simplified.jsonl`` as soon as it arrives, an interrupted run loses
nothing, and a rerun asks only for the questions still missing. Rejected rewrites (see
:func:`sqlweave.stages.simplify.check_simplification`) are recorded too, so they are not asked
again, but never used. :func:`~sqlweave.retrieval.pool.load_pool` attaches what is there.

>>> import tempfile, pathlib
>>> store = pathlib.Path(tempfile.mkdtemp()) / "simplified.jsonl"
>>> _ = store.write_text('{"question": "Give me the tally of singers.", "simplified": "How many singers?", '
...                      '"rejected": null}\\n{"question": "x", "simplified": "", "rejected": "empty"}\\n')
>>> load_simplified(store)
{'Give me the tally of singers.': 'How many singers?'}
>>> sorted(recorded(store))
['Give me the tally of singers.', 'x']
"""

from __future__ import annotations

import json
from pathlib import Path

from ..config import Settings


def simplified_file(settings: Settings | None = None) -> Path:
    """Where pool simplifications are kept: ``<cache_dir>/pool/simplified.jsonl`` (one JSON line each)."""
    return (settings if settings is not None else Settings.from_env()).cache_dir / "pool" / "simplified.jsonl"


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


def recorded(path: Path | None = None) -> dict[str, dict]:
    """Every recorded answer (accepted or rejected), by question: what a resumed run need not ask again."""
    return _rows(path or simplified_file())
