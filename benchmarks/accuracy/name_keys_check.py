"""Which recorded answers the ``name_keys`` stage would change, and which gold queries it would (no model).

    .venv/bin/python benchmarks/accuracy/name_keys_check.py benchmarks/checkpoints/rw-default-972 \
        benchmarks/checkpoints/det-best-972 --data-dir ../shared/data/spider --out benchmarks/results/name-keys-972.json
    .venv/bin/python benchmarks/accuracy/name_keys_check.py --pairs ../shared/data/spider/train.json [--question "Show them."]

Reads each run folder's ``results.jsonl`` (``sqlweave eval --out FOLDER``) and runs
:func:`sqlweave.sql.name_keys.name_keys` on every final answer and every gold query against its database's schema,
as the stage does after any vote (it only acts on an answer with rows: a named query that a run's answer would
not reach is still counted, so the count is an upper bound). A named right answer is one the stage would break
under Spider's rule (an extra column is a different result); a named gold query is one where Spider's own answer
shows a key the question did not ask for. Prints a table and writes the counts and every named question as JSON.

``--pairs FILE`` reads Spider's question/query pairs (``train.json``) and counts the gold queries the rule would
change; ``--question TEXT`` asks every query with that text instead of its own question (one that names no ids),
which shows how many gold queries show a key at all, and so how much the question's words decide.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import save

from sqlweave.database import Database  # noqa: E402
from sqlweave.eval.runner import load_results  # noqa: E402
from sqlweave.sql.name_keys import name_keys  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path, nargs="*")
    ap.add_argument("--pairs", type=Path, help="Spider question/query pairs (train.json): their gold queries")
    ap.add_argument("--question", help="ask every query with this text instead of its own question")
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data/spider"))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    schemas: dict[str, object] = {}

    def schema_of(db_id: str):
        if db_id not in schemas:
            with Database.open(args.data_dir / "database" / db_id / f"{db_id}.sqlite") as db:
                schemas[db_id] = db.schema()
        return schemas[db_id]

    table: dict[str, dict[str, int]] = {}
    named: list[dict[str, object]] = []
    print("| run | questions | right answers named | wrong answers named | gold queries named |")
    print("|---|---|---|---|---|")
    for run in args.runs:
        counts = {"questions": 0, "right_named": 0, "wrong_named": 0, "gold_named": 0}
        for r in load_results(run):
            schema = schema_of(r.db_id)
            question = args.question or r.question
            counts["questions"] += 1
            answer = name_keys(r.prediction, schema, question) if r.prediction else None
            gold = name_keys(r.gold, schema, question)
            if answer is not None and answer.changed:
                counts["right_named" if r.match else "wrong_named"] += 1
            counts["gold_named"] += gold.changed
            if (answer is not None and answer.changed) or gold.changed:
                named.append({"run": str(run), "id": r.id, "question": r.question, "right": r.match,
                              "prediction": r.prediction, "named": answer.sql if answer and answer.changed else None,
                              "gold": r.gold, "gold_named": gold.sql if gold.changed else None})
        table[str(run)] = counts
        print(f"| {run} | {counts['questions']} | {counts['right_named']} | {counts['wrong_named']} | "
              f"{counts['gold_named']} |")
    if args.pairs:
        counts = {"questions": 0, "right_named": 0, "wrong_named": 0, "gold_named": 0}
        for pair in json.loads(args.pairs.read_text(encoding="utf-8")):
            if not (args.data_dir / "database" / pair["db_id"] / f"{pair['db_id']}.sqlite").exists():
                continue
            counts["questions"] += 1
            gold = name_keys(pair["query"], schema_of(pair["db_id"]), args.question or pair["question"])
            if gold.changed:
                counts["gold_named"] += 1
                named.append({"run": str(args.pairs), "question": pair["question"], "gold": pair["query"],
                              "gold_named": gold.sql})
        table[str(args.pairs)] = counts
        print(f"| {args.pairs} (gold only) | {counts['questions']} | - | - | {counts['gold_named']} |")
    for n in named:
        print(f"  [{n.get('id', 'gold')} {'right' if n.get('right') else 'wrong' if 'right' in n else ''}] "
              f"{n['question']}")
    if args.out:
        save(args.out, {"question": args.question, "runs": table, "named": named})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
