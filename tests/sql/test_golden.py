"""Golden files: real Spider queries -> SQL skeleton, question skeleton, normalised SQL; pairs -> AST similarity.

Each ``golden/NN_*.json`` holds one input (``question``, ``sql``, the database's ``schema_names``, where it comes
from) and ``expected``: what the example pool derives for it (:func:`sqlweave.retrieval.pool.derive`: the SQL
skeleton, the question skeleton with the SQL's values masked, the normalised SQL with identifiers and values
masked) and the normalised SQL with names kept. ``golden/pairs.json`` lists pairs of cases and their
:func:`~sqlweave.sql.similarity.ast_similarity` (rounded to 4 places), each with why the pair is there.

The tests only compare. After a deliberate change, regenerate, then read the diff before keeping it:

    .venv/bin/python -m tests.sql.test_golden --update
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sqlweave.retrieval.pool import derive
from sqlweave.sql.normalize import normalized_sql
from sqlweave.sql.similarity import ast_similarity

GOLDEN = Path(__file__).parent / "golden"
PAIRS = GOLDEN / "pairs.json"
CASE_FILES = sorted(p for p in GOLDEN.glob("[0-9]*.json"))


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def compute(case: dict[str, Any]) -> dict[str, str]:
    """What the code produces today for one case's input."""
    ex = derive(case["question"], case["sql"], case["db_id"], case["schema_names"])
    return {
        "sql_skeleton": ex.sql_skeleton,
        "question_skeleton": ex.question_skeleton,
        "normalized_sql": ex.normalized_sql,
        "normalized_sql_named": normalized_sql(case["sql"], mask_identifiers=False),
    }


def _sql(name: str) -> str:
    return _load(GOLDEN / f"{name}.json")["sql"]


def similarity(pair: dict[str, Any]) -> float:
    return round(ast_similarity(_sql(pair["a"]), _sql(pair["b"])), 4)


def test_the_golden_folder_is_complete() -> None:
    assert len(CASE_FILES) >= 10
    names = {p.stem for p in CASE_FILES}
    for pair in _load(PAIRS):
        assert {pair["a"], pair["b"]} <= names, pair


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.stem)
def test_case(path: Path) -> None:
    case = _load(path)
    assert compute(case) == case["expected"]


@pytest.mark.parametrize("pair", _load(PAIRS), ids=lambda p: f"{p['a'][:2]}-{p['b'][:2]}")
def test_pair_similarity(pair: dict[str, Any]) -> None:
    a, b = _sql(pair["a"]), _sql(pair["b"])
    assert similarity(pair) == pytest.approx(pair["similarity"], abs=1e-4)
    assert abs(ast_similarity(a, b) - ast_similarity(b, a)) <= 0.1  # symmetric enough to rank by
    assert ast_similarity(a, a) == ast_similarity(b, b) == 1.0


def _dump(data: dict[str, Any]) -> str:
    """One key per line, values on one line each (short diffs when a value changes)."""
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            inner = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in value.items())
            lines.append(f"  {json.dumps(key)}: {{\n{inner}\n  }}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def update() -> None:
    """Rewrite every ``expected`` and pair similarity from the current code (the tests never do this)."""
    for path in CASE_FILES:
        case = _load(path)
        case["expected"] = compute(case)
        path.write_text(_dump(case), encoding="utf-8")
    pairs = _load(PAIRS)
    for pair in pairs:
        pair["similarity"] = similarity(pair)
    PAIRS.write_text("[\n" + ",\n".join("  " + json.dumps(p) for p in pairs) + "\n]\n", encoding="utf-8")
    print(f"updated {len(CASE_FILES)} cases and {len(pairs)} pairs in {GOLDEN}; review with: git diff {GOLDEN}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python -m tests.sql.test_golden --update")
    update()
