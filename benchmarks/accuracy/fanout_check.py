"""How often sqlweave's fan-out caution fires, and on which answers: predictions (right or wrong) and gold queries.

    .venv/bin/python benchmarks/accuracy/fanout_check.py .eval-runs/relink-972 --data-dir ../shared/data/spider \
        --out benchmarks/results/fanout-972.json

Reads a run folder's ``results.jsonl`` (``sqlweave eval --out FOLDER``) and runs
:func:`sqlweave.sql.fanout.fan_outs` on every prediction and every gold query against its database's schema. A
caution on a right answer or on a gold query is a false alarm; on a wrong answer it is the warning a user needed.
Prints a table and writes the counts and every flagged question as JSON. No model is called.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import machine  # noqa: E402
from sqlweave.database import Database
from sqlweave.eval.runner import load_results
from sqlweave.sql.fanout import fan_outs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data/spider"))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    schemas = {}
    flagged: list[dict[str, object]] = []
    counts = {"questions": 0, "wrong_flagged": 0, "right_flagged": 0, "gold_flagged": 0, "wrong": 0}
    for r in load_results(args.run):
        if r.db_id not in schemas:
            db = Database.open(args.data_dir / "database" / r.db_id / f"{r.db_id}.sqlite")
            schemas[r.db_id] = db.schema()
            db.close()
        counts["questions"] += 1
        counts["wrong"] += not r.match
        predicted = fan_outs(r.prediction, schemas[r.db_id]) if r.prediction else []
        gold = fan_outs(r.gold, schemas[r.db_id])
        counts["right_flagged" if r.match else "wrong_flagged"] += bool(predicted)
        counts["gold_flagged"] += bool(gold)
        if predicted or gold:
            flagged.append({"id": r.id, "db_id": r.db_id, "question": r.question, "right": r.match,
                            "prediction": r.prediction, "caution": predicted, "gold": r.gold, "gold_caution": gold})
    print("| questions | wrong answers | cautions on wrong answers | on right answers | on gold queries |")
    print("|---|---|---|---|---|")
    print(f"| {counts['questions']} | {counts['wrong']} | {counts['wrong_flagged']} | {counts['right_flagged']} | "
          f"{counts['gold_flagged']} |")
    for f in flagged:
        print(f"  [{f['id']} {'right' if f['right'] else 'wrong'}] {f['question']}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "date": date.today().isoformat(), "machine": machine(),
            "command": "python benchmarks/accuracy/fanout_check.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "run": args.run.name, **counts, "flagged": flagged}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
