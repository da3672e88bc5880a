"""What the ``name_keys`` stage does to the recorded answers of the defog benchmark (no model).

    .venv/bin/python benchmarks/accuracy/name_keys_defog.py benchmarks/checkpoints/defog-1.5b-v4 \
        [--presets default,best] [--engines postgres,sqlite] [--out benchmarks/results/name-keys-defog.json]

defog's databases (``benchmarks/accuracy/defog_setup.py``: the throwaway PostgreSQL server and the SQLite copies) are a
closer likeness of users' own than Spider's: ids everywhere, names in other tables. For every recorded answer of a
run of ``benchmarks/accuracy/bench_defog.py`` (``OUT/PRESET__ENGINE.jsonl``), :func:`sqlweave.sql.name_keys.name_keys` is
applied with the database's schema and the question, as the stage applies it after the vote: kept only if the named
query runs and returns as many rows. Both the recorded answer and the named one are scored by defog's own rule
(:func:`sqlweave.eval.defog.score_on_database`, which allows extra columns), so the table shows how many answers
the stage changes and what that does to the score. Prints the table, writes every changed answer as JSON.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md

from benchmarks.accuracy.bench_defog import read_checkpoint  # noqa: E402
from benchmarks.accuracy.defog_setup import DEFAULT_PG_DIR, DefogDatabases, default_cache  # noqa: E402
from benchmarks.common import save, DEFOG

from sqlweave.database import Database  # noqa: E402
from sqlweave.errors import SqlweaveError  # noqa: E402
from sqlweave.eval.defog import GoldResults, load_questions, questions_path, score_on_database  # noqa: E402
from sqlweave.sql.name_keys import name_keys  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--presets", default="default,best")
    ap.add_argument("--engines", default="postgres,sqlite")
    ap.add_argument("--data-dir", type=Path, default=DEFOG)
    ap.add_argument("--pg-dir", type=Path, default=DEFAULT_PG_DIR)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    dbs = DefogDatabases(args.data_dir, args.pg_dir, default_cache())
    dbs.start()
    table: dict[str, dict[str, int]] = {}
    changed: list[dict[str, object]] = []
    print("| preset, engine | answers | named | right before | right after | wrong->right | right->wrong |")
    print("|---|---|---|---|---|---|---|")
    for engine in args.engines.split(","):
        questions = {q.id: q for q in load_questions(questions_path(args.data_dir, engine))}
        for preset in args.presets.split(","):
            records = read_checkpoint(args.run / f"{preset}__{engine}.jsonl")
            gold, opened = GoldResults(), {}
            counts = {"answers": 0, "named": 0, "right_before": 0, "right_after": 0, "fixed": 0, "broken": 0}
            for qid, r in sorted(records.items()):
                q = questions[qid]
                if q.db_name not in opened:
                    opened[q.db_name] = Database.open(dbs.target(q.db_name, engine), timeout_s=10.0,
                                                      descriptions=dbs.knowledge_file(q.db_name))
                db = opened[q.db_name]
                counts["answers"] += 1
                counts["right_before"] += bool(r["correct"])
                after = bool(r["correct"])
                sql = r.get("prediction")
                if sql and r.get("executed"):
                    named = name_keys(sql, db.schema(), q.question, db.dialect)
                    try:
                        same_rows = named.changed and (len(db.execute(named.sql).rows) == len(db.execute(sql).rows))
                    except SqlweaveError:
                        same_rows = False
                    if same_rows:
                        score = score_on_database(db, q, named.sql, gold=gold, timeout_s=10.0)
                        after = bool(score.correct)
                        counts["named"] += 1
                        counts["fixed"] += after and not r["correct"]
                        counts["broken"] += r["correct"] and not after
                        changed.append({"preset": preset, "engine": engine, "id": qid, "question": q.question,
                                        "before": sql, "after": named.sql, "right_before": r["correct"],
                                        "right_after": after})
                counts["right_after"] += after
            for db in opened.values():
                db.close()
            table[f"{preset}, {engine}"] = counts
            print(f"| {preset}, {engine} | {counts['answers']} | {counts['named']} | {counts['right_before']} | "
                  f"{counts['right_after']} | {counts['fixed']} | {counts['broken']} |")
    for c in changed:
        print(f"  [{c['preset']} {c['engine']} {c['id']}] {'right' if c['right_before'] else 'wrong'} -> "
              f"{'right' if c['right_after'] else 'wrong'}: {c['question']}")
    if args.out:
        save(args.out, {"runs": table, "changed": changed})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
