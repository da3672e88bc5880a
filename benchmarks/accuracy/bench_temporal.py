"""defog's questions with and without ``+time`` (the question's time expressions stated exactly), on one half of
the split in ``benchmarks/samples/defog-split.json``.

    .venv/bin/python benchmarks/accuracy/bench_temporal.py --half tuning [--presets default,default+time]
        [--engines postgres] [--only touched|date_functions|all] [--out .eval-runs/temporal-tuning]
    .venv/bin/python benchmarks/accuracy/bench_temporal.py --half tuning --summary-only

``--only touched`` (the default) runs the questions where the two presets can differ: those in which the stage finds
a time expression, and the ``date_functions`` questions (the category it is for). On every other question the stage
adds nothing, so both presets send the same prompts and give the same answer (the second from the response cache);
``--only all`` runs them too. The runs, checkpoints and scoring are ``bench_defog.py``'s (one JSON line per scored
question in ``OUT/PRESET__ENGINE.jsonl``, a rerun goes on where it stopped); today's date is the database's, as the
gold queries' ``CURRENT_DATE`` is.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, SAMPLES, DEFOG

from benchmarks.accuracy import bench_defog  # noqa: E402
from benchmarks.accuracy.defog_setup import DEFAULT_PG_DIR, DefogDatabases, database_names, default_cache  # noqa: E402

SPLIT = SAMPLES / "defog-split.json"


def touched(question: str) -> bool:
    from sqlweave.temporal import interpret

    return bool(interpret(question, date.today()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--half", choices=("tuning", "held_out"), required=True)
    ap.add_argument("--presets", default="default,default+time")
    ap.add_argument("--engines", default="postgres")
    ap.add_argument("--only", choices=("touched", "date_functions", "all"), default="touched")
    ap.add_argument("--model", default="local:1.5b")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--budget", type=float, default=3600.0,
                    help="seconds a question may take (default 3600: on a busy machine a preset's service budget "
                         "would cut answers short, and the comparison would measure the machine's load)")
    ap.add_argument("--summary-only", action="store_true")
    args = ap.parse_args(argv)
    args.out = args.out or ROOT / ".eval-runs" / f"temporal-{args.half}"
    args.decimal_points, args.keys_from_data = None, True
    presets = [p for p in args.presets.split(",") if p]
    engines = [e for e in args.engines.split(",") if e]

    from dataclasses import replace

    import sqlweave.presets
    from sqlweave.eval.defog import load_questions, questions_path
    from sqlweave.presets import build_pipeline

    def with_budget(name: str, **options: object) -> object:  # bench_defog builds its pipelines with this
        pipe = build_pipeline(name, **options)  # type: ignore[arg-type]
        return replace(pipe, budget_s=args.budget) if hasattr(pipe, "budget_s") else pipe

    sqlweave.presets.build_pipeline = with_budget  # type: ignore[assignment]

    for p in presets:
        build_pipeline(p)
    split = json.loads(SPLIT.read_text(encoding="utf-8"))
    databases = set(split[args.half])

    def wanted(q: object) -> bool:
        if q.db_name not in databases:  # type: ignore[attr-defined]
            return False
        if args.only == "all":
            return True
        return q.query_category == "date_functions" or (  # type: ignore[attr-defined]
            args.only == "touched" and touched(q.question))  # type: ignore[attr-defined]

    questions = {e: [q for q in load_questions(questions_path(DEFOG, e)) if wanted(q)] for e in engines}
    ids = {q.id for qs in questions.values() for q in qs}
    for e in engines:
        print(f"{e}: {len(questions[e])} questions of the {args.half} half ({args.only}): "
              f"{dict(Counter(q.query_category for q in questions[e]))}", flush=True)

    if not args.summary_only:
        args.model_id = bench_defog.model_id(args.model)
        bench_defog.check_run_meta(args.out, args.model_id)
        dbs = DefogDatabases(DEFOG, DEFAULT_PG_DIR, default_cache())
        dbs.start()
        dbs.prepare(database_names(DEFOG), sqlite="sqlite" in engines)
        llm = None if args.model in ("gold", "fake") else bench_defog.make_llm(args.model, threads=args.threads)
        bench_defog.run_all(presets, engines, questions, dbs, args, llm, sys.stdout)

    runs = bench_defog.collect(args.out, presets, engines, ids)
    bench_defog.print_table(runs, f"defog, {args.half} half ({args.only}): {len(ids)} questions per engine")
    for engine in engines:
        base, other = (bench_defog.checkpoint_path(args.out, p, engine) for p in presets[:2])
        if len(presets) >= 2 and base.exists() and other.exists():
            a, b = bench_defog.read_checkpoint(base), bench_defog.read_checkpoint(other)
            both = sorted(i for i in a.keys() & b.keys() if i in ids)
            fixed = [i for i in both if b[i]["correct"] and not a[i]["correct"]]
            broken = [i for i in both if a[i]["correct"] and not b[i]["correct"]]
            print(f"{engine}: {presets[1]} against {presets[0]} on {len(both)} questions: fixed {len(fixed)} "
                  f"({', '.join(fixed) or '-'}), broke {len(broken)} ({', '.join(broken) or '-'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
