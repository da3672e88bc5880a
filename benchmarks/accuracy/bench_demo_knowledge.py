"""The demo shop with and without its knowledge file: the same questions, their SQL, rows, confidence and calls.

    .venv/bin/python benchmarks/accuracy/bench_demo_knowledge.py [--model local:1.5b] [--out benchmarks/results/demo-knowledge.json]

Asks the demo's sample questions (:data:`sqlweave.db.demo.DEMO_QUESTIONS`) and the README screenshot's "What is
the total revenue per month?" of the demo database with the ``default`` pipeline, once without a knowledge file
(``sqlweave ask --db <demo>``) and once with :func:`sqlweave.db.demo.demo_knowledge_path` (what ``sqlweave demo``,
``serve --demo`` and ``mcp --demo`` use). For each question: whether both return the same rows (floats rounded to
6 places, order ignored), the tables each query reads, the confidence and the model calls. Six questions are a
check of the demo file, not an accuracy figure. Model answers come from the response cache when seen before.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import save

import sqlweave  # noqa: E402
from sqlweave.db.demo import DEMO_QUESTIONS, demo_database_path, demo_knowledge_path  # noqa: E402
from sqlweave.sql.validate import parse_one  # noqa: E402

QUESTIONS = (*DEMO_QUESTIONS, "What is the total revenue per month?")


def rows(answer: Any) -> list[tuple[Any, ...]]:
    values = [] if answer.result is None else answer.result.rows
    return sorted((tuple(round(v, 6) if isinstance(v, float) else v for v in r) for r in values), key=repr)


def tables(sql: str | None) -> int:
    from sqlglot import exp

    return 0 if not sql else len({t.name.lower() for t in parse_one(sql, "sqlite").find_all(exp.Table)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local:1.5b")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/demo-knowledge.json"))
    args = parser.parse_args()
    db = demo_database_path()
    plain = sqlweave.connect(db, llm=args.model)
    known = sqlweave.connect(db, llm=args.model, knowledge=demo_knowledge_path())
    out = []
    print("| question | same rows | tables | confidence | model calls |\n|---|---|---|---|---|")
    for q in QUESTIONS:
        a, b = plain.ask(q), known.ask(q)
        row = {"question": q, "same_rows": rows(a) == rows(b), "sql": [a.sql, b.sql],
               "tables": [tables(a.sql), tables(b.sql)], "confidence": [a.confidence, b.confidence],
               "model_calls": [a.model_calls, b.model_calls]}
        out.append(row)
        print(f"| {q} | {'yes' if row['same_rows'] else 'no'} | {row['tables'][0]} -> {row['tables'][1]} | "
              f"{a.confidence:.2f} -> {b.confidence:.2f} | {a.model_calls} -> {b.model_calls} |")
    save(args.out, {"model": args.model, "pipeline": "default", "knowledge": str(demo_knowledge_path().name),
                    "questions": out})


if __name__ == "__main__":
    main()
