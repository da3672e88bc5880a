"""The defog benchmark (defog sql-eval's 210 questions over 11 databases) on PostgreSQL and on SQLite, scored with
the benchmark's own rule.

    .venv/bin/python benchmarks/accuracy/bench_defog.py [--presets zero-shot,default,best] [--engines postgres,sqlite]
        [--model local:1.5b | gold | fake] [--limit N] [--out .eval-runs/defog-1.5b] [--results benchmarks/results/defog.json]
        [--databases academic,yelp] [--no-keys-from-data]
    .venv/bin/python benchmarks/accuracy/bench_defog.py --summary-only      # the table from what is done so far
    .venv/bin/python benchmarks/accuracy/bench_defog.py --out NEW --against OLD  # and what NEW fixed and broke against OLD

Databases: ``benchmarks/accuracy/defog_setup.py`` (the 11 PostgreSQL dumps loaded into the project's throwaway server in
``--pg-dir``, each with a knowledge file made from its ``NAME.json``, and SQLite copies made by sqlweave's loader).
The PostgreSQL questions (``questions_gen_postgres.csv``) run on PostgreSQL and the SQLite ones
(``questions_gen_sqlite.csv``, the same questions with SQLite gold queries) on the SQLite copies. Each question's
``instructions`` (the ``instruct`` category) go to the pipeline as the question's evidence; the knowledge file gives
the schema its column descriptions and the prompts the glossary's terms and notes.

Scoring: :func:`sqlweave.eval.defog.score_on_database`, sql-eval's ``compare_query_results`` reproduced (any gold
alternative; ``{a,b}`` column choices; same table after its normalisation, or the gold table inside the
prediction's; 10 s per query). EX is the share of questions it scores correct.

``--model gold`` answers every question with its own gold SQL (the first alternative) and ``--model fake`` with
``SELECT 1``: dry runs of the whole path (setup, pipelines, scoring, checkpoints, table) with no model time.

Questions run database by database (those with fewer questions first), each on every engine with every preset in turn, so that a partial run covers
the same questions in every column. Each scored question is appended to ``OUT/PRESET__ENGINE.jsonl`` and flushed at
once; a rerun with the same ``--out`` skips the questions done (a torn last line is dropped), so a run killed at any point goes on where it
stopped. Model answers come from the response cache when the same prompt was seen before (``default`` reuses
``zero-shot``'s first answers).

The third preset is ``best`` (``default`` voting below a higher confidence than 0.6: 0.8 in the runs recorded in
BENCHMARKS.md, 0.9 since the evening of 2026-11-26): the most accurate pipeline
measured on Spider that needs no example pool; ``ensemble`` needs Spider's training pairs as examples, which would
be out of domain here. The first checkpoint (18 questions, 2026-11-23) holds ``zero-shot`` and ``default`` only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from collections import Counter, defaultdict
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, RESULTS, DEFOG

from benchmarks.accuracy.defog_setup import DEFAULT_PG_DIR, DefogDatabases, database_names, default_cache  # noqa: E402

ENGINES = ("postgres", "sqlite")
DEFAULT_PRESETS = ("zero-shot", "default", "best")
ENGINE_LABEL = {"postgres": "PostgreSQL", "sqlite": "SQLite"}


# --- checkpoints -----------------------------------------------------------------------------------


def checkpoint_path(out: Path, preset: str, engine: str) -> Path:
    return out / f"{preset}__{engine}.jsonl"


def read_checkpoint(path: Path) -> dict[str, dict[str, Any]]:
    """Scored questions in a checkpoint, by id; torn or repeated lines are dropped (and the file rewritten)."""
    done: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return done
    good = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            r = json.loads(line)
            key = r["id"]
        except (ValueError, KeyError, TypeError):
            continue
        if key not in done:
            done[key] = r
            good.append(line)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(line + "\n" for line in good), encoding="utf-8")
    os.replace(tmp, path)
    return done


def append(path: Path, record: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def check_run_meta(out: Path, model: str) -> None:
    """One model per output folder: a rerun with another model is refused."""
    out.mkdir(parents=True, exist_ok=True)
    meta = out / "run.json"
    if meta.exists():
        old = json.loads(meta.read_text(encoding="utf-8"))
        if old.get("model") != model:
            raise SystemExit(f"{out} holds a run of model {old.get('model')!r}, not {model!r}: use another --out")
    else:
        meta.write_text(json.dumps({"model": model, "created": time.strftime("%Y-%m-%d %H:%M:%S")}, indent=2) + "\n")


# --- running ---------------------------------------------------------------------------------------


def make_llm(spec: str, question: Any = None, threads: int | None = None) -> Any:
    from sqlweave.eval.defog import minimal_queries
    from sqlweave.llm.fake import FakeLLM

    if spec == "gold":
        answer = f"```sql\n{minimal_queries(question.query)[0]}\n```"
        return FakeLLM(responder=lambda *_: answer)
    if spec == "fake":
        return FakeLLM(responder=lambda *_: "```sql\nSELECT 1\n```")
    from sqlweave.llm.registry import get_llm

    return get_llm(spec, cache=True, **({"n_threads": threads} if threads and spec.startswith("local") else {}))


def model_id(spec: str) -> str:
    return spec if spec in ("gold", "fake") else make_llm(spec).model_id


class Column:
    """One preset on one engine: its pipeline, checkpoint, gold results and open databases."""

    def __init__(self, preset: str, engine: str, dbs: DefogDatabases, args: argparse.Namespace) -> None:
        from sqlweave.eval.defog import GoldResults
        from sqlweave.presets import build_pipeline

        self.preset, self.engine, self.dbs, self.args = preset, engine, dbs, args
        self.path = checkpoint_path(args.out, preset, engine)
        self.done = read_checkpoint(self.path)
        self.pipeline = build_pipeline(preset)
        self.gold = GoldResults()
        self.opened: dict[str, Any] = {}

    def database(self, name: str) -> Any:
        from sqlweave.database import Database

        if name not in self.opened:
            self.opened[name] = Database.open(self.dbs.target(name, self.engine), timeout_s=self.args.timeout,
                                              descriptions=self.dbs.knowledge_file(name),
                                              keys_from_data=self.args.keys_from_data)
        return self.opened[name]

    def close(self) -> None:
        for db in self.opened.values():
            db.close()

    def run(self, q: Any, llm: Any) -> dict[str, Any]:
        """Answer and score one question; the record is appended to the checkpoint before it is returned."""
        from sqlweave.errors import SqlweaveError
        from sqlweave.eval.defog import score_on_database

        args = self.args
        db = self.database(q.db_name)
        model = make_llm(args.model, q) if args.model in ("gold", "fake") else llm
        t0 = time.perf_counter()
        record: dict[str, Any] = {"id": q.id, "db": q.db_name, "category": q.query_category, "engine": self.engine,
                                  "preset": self.preset, "model": args.model_id, "question": q.question,
                                  "gold": q.query}
        try:
            answer = self.pipeline.run(q.question, db, model, schema=db.schema(), evidence=q.evidence)
            score = (score_on_database(db, q, answer.sql, gold=self.gold, timeout_s=args.timeout,
                                       decimal_points=args.decimal_points)
                     if answer.sql is not None else None)
            error = None if answer.error is None else f"{answer.error.code}: {answer.error.message}"
            record.update(
                prediction=answer.sql, correct=bool(score and score.correct), exact=bool(score and score.exact),
                error=error or (score.error if score else None), gold_error=bool(score and score.gold_error),
                executed=answer.result is not None, model_calls=answer.model_calls,
                prompt_tokens=answer.usage.prompt_tokens, completion_tokens=answer.usage.completion_tokens,
                seconds=round(answer.seconds, 3), cost_seconds=round(answer.cost_seconds, 3))
        except Exception as err:  # noqa: BLE001 - one question's failure is recorded; the run goes on
            if not isinstance(err, SqlweaveError):
                traceback.print_exc()
            text = f"{err.code}: {err.message}" if isinstance(err, SqlweaveError) else f"internal: {err!r}"
            record.update(prediction=None, correct=False, exact=False, error=text,
                          gold_error=False, executed=False, model_calls=0, prompt_tokens=0, completion_tokens=0,
                          seconds=round(time.perf_counter() - t0, 3), cost_seconds=0.0)
        record["wall_seconds"] = round(time.perf_counter() - t0, 3)
        append(self.path, record)
        self.done[q.id] = record
        return record


def run_all(presets: list[str], engines: list[str], questions: dict[str, list[Any]], dbs: DefogDatabases,
            args: argparse.Namespace, llm: Any, log: Any) -> None:
    """Database by database, question by question, every engine and preset in turn, so that what is done at
    any moment covers the same questions in every column (and ``default`` finds ``zero-shot``'s first answer
    in the response cache)."""
    columns = [Column(p, e, dbs, args) for e in engines for p in presets]
    by_id = {e: {q.id: q for q in questions[e]} for e in engines}
    # Databases with fewer questions first (then smaller dumps), so that a partial run spans many databases;
    # within one, consecutive prompts share the schema prefix that llama.cpp keeps evaluated.
    counts = Counter(q.db_name for q in questions[engines[0]])
    sizes = {d: dbs.dump(d).stat().st_size for d in counts}
    order = sorted(counts, key=lambda d: (counts[d], sizes[d], d))
    ids = sorted({q.id for e in engines for q in questions[e]},
                 key=lambda i: (order.index(by_id[engines[0]][i].db_name), i))
    total = len(ids)
    try:
        for n, qid in enumerate(ids, 1):
            for col in columns:
                q = by_id[col.engine].get(qid)
                if q is None or qid in col.done:
                    continue
                record = col.run(q, llm)
                done = [r for r in col.done.values() if r["id"] in by_id[col.engine]]
                right = sum(bool(r["correct"]) for r in done)
                print(f"[{col.preset} {col.engine}] {n}/{total} {q.id} {q.db_name:<15} {q.query_category:<15} "
                      f"{'RIGHT' if record['correct'] else 'wrong'}  {record['wall_seconds']:.1f}s  "
                      f"EX so far {100.0 * right / len(done):.1f}% of {len(done)}"
                      + (f"  ({record['error'][:80]})" if record["error"] else ""), file=log, flush=True)
    finally:
        for col in columns:
            col.close()


# --- summary ---------------------------------------------------------------------------------------


def _pct(k: int, n: int) -> float | None:
    return round(100.0 * k / n, 1) if n else None


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(records)
    by_db: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_db[r["db"]].append(r)
        by_cat[r["category"]].append(r)

    def cell(rs: list[dict[str, Any]]) -> dict[str, Any]:
        return {"n": len(rs), "correct": sum(r["correct"] for r in rs), "ex": _pct(sum(r["correct"] for r in rs), len(rs))}

    def mean(key: str) -> float | None:
        return round(sum(r.get(key) or 0 for r in records) / n, 2) if n else None

    return {
        **cell(records),
        "exact": sum(r["exact"] for r in records),
        "executed": _pct(sum(r["executed"] for r in records), n),
        "gold_errors": sum(r["gold_error"] for r in records),
        "comparison_errors": sum(1 for r in records if r["executed"] and not r["correct"] and r.get("error")
                                 and not r["gold_error"]),
        "model_calls_per_q": mean("model_calls"),
        "prompt_tokens_per_q": mean("prompt_tokens"),
        "completion_tokens_per_q": mean("completion_tokens"),
        "seconds_per_q": mean("wall_seconds"),
        "cost_seconds_per_q": mean("cost_seconds"),
        "by_database": {k: cell(v) for k, v in sorted(by_db.items())},
        "by_category": {k: cell(v) for k, v in sorted(by_cat.items())},
    }


def collect(out: Path, presets: list[str], engines: list[str], ids: set[str] | None) -> dict[str, dict[str, Any]]:
    runs: dict[str, dict[str, Any]] = {}
    for preset in presets:
        for engine in engines:
            path = checkpoint_path(out, preset, engine)
            if not path.exists():
                continue
            records = [r for r in read_checkpoint(path).values() if ids is None or r["id"] in ids]
            if records:
                runs.setdefault(preset, {})[engine] = summarize(records)
    return runs


def compare(out: Path, against: Path, presets: list[str], engines: list[str], ids: set[str]) -> dict[str, Any]:
    """Question by question, each column of ``out`` against the same column of another run (``against``): how
    many answers it fixed and broke, among the questions both have done."""
    changes: dict[str, Any] = {}
    for preset in presets:
        for engine in engines:
            now_path, then_path = checkpoint_path(out, preset, engine), checkpoint_path(against, preset, engine)
            if not (now_path.exists() and then_path.exists()):
                continue
            now, then = read_checkpoint(now_path), read_checkpoint(then_path)
            both = sorted(i for i in now.keys() & then.keys() if i in ids)
            fixed = [i for i in both if now[i]["correct"] and not then[i]["correct"]]
            broken = [i for i in both if then[i]["correct"] and not now[i]["correct"]]
            changes[f"{preset} {engine}"] = {"questions": len(both), "fixed": fixed, "broken": broken,
                                             "right_then": sum(bool(then[i]["correct"]) for i in both),
                                             "right_now": sum(bool(now[i]["correct"]) for i in both)}
    return changes


def print_table(runs: dict[str, dict[str, Any]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    cols = [(p, e) for p in runs for e in ENGINES if e in runs[p]]
    table = Table(title=title)
    table.add_column("EX %  (right/done)")
    for p, e in cols:
        table.add_column(f"{p}\n{ENGINE_LABEL[e]}", justify="right")

    def fmt(c: dict[str, Any] | None) -> str:
        return "-" if not c else f"{c['ex']:.1f} ({c['correct']}/{c['n']})"

    table.add_row("all questions", *[fmt(runs[p][e]) for p, e in cols], end_section=True)
    dbs = sorted({d for p, e in cols for d in runs[p][e]["by_database"]})
    for i, d in enumerate(dbs):
        table.add_row(f"db {d}", *[fmt(runs[p][e]["by_database"].get(d)) for p, e in cols], end_section=i == len(dbs) - 1)
    cats = sorted({c for p, e in cols for c in runs[p][e]["by_category"]})
    for i, c in enumerate(cats):
        table.add_row(f"category {c}", *[fmt(runs[p][e]["by_category"].get(c)) for p, e in cols],
                      end_section=i == len(cats) - 1)
    table.add_row("ran (%)", *[f"{runs[p][e]['executed']:.1f}" for p, e in cols])
    table.add_row("model calls / q", *[f"{runs[p][e]['model_calls_per_q']:.2f}" for p, e in cols])
    table.add_row("seconds / q", *[f"{runs[p][e]['seconds_per_q']:.1f}" for p, e in cols])
    Console(width=max(100, 24 + 22 * len(cols))).print(table)


# --- main ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", default=",".join(DEFAULT_PRESETS))
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--model", default="local:1.5b", help="local:1.5b (default), any get_llm spec, gold or fake")
    ap.add_argument("--limit", type=int, default=None, help="only N questions, spread over the file")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads of the embedded model (default: one per core; 1 is faster on a busy machine)")
    ap.add_argument("--out", type=Path, default=ROOT / ".eval-runs" / "defog-1.5b")
    ap.add_argument("--results", type=Path, default=None,
                    help="summary JSON (default: benchmarks/results/defog.json for the full run with a real model)")
    ap.add_argument("--data-dir", type=Path, default=DEFOG)
    ap.add_argument("--pg-dir", type=Path, default=DEFAULT_PG_DIR, help="the PostgreSQL server's folder")
    ap.add_argument("--cache", type=Path, default=None, help="knowledge files and SQLite copies")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per query (sql-eval's default: 10)")
    ap.add_argument("--decimal-points", type=int, default=None, help="round floats before comparing (sql-eval: off)")
    ap.add_argument("--summary-only", action="store_true", help="print the table from the checkpoints; run nothing")
    ap.add_argument("--stop-server", action="store_true", help="stop the PostgreSQL server at the end")
    ap.add_argument("--against", type=Path, help="another run's --out: print what this one fixed and broke")
    ap.add_argument("--databases", default=None, help="only the questions of these databases (comma-separated)")
    ap.add_argument("--no-keys-from-data", dest="keys_from_data", action="store_false",
                    help="keep databases that declare no foreign key keyless (by default their keys are read from "
                         "the data, as sqlweave does)")
    args = ap.parse_args(argv)
    presets = [p for p in args.presets.split(",") if p]
    engines = [e for e in args.engines.split(",") if e]
    if unknown := [e for e in engines if e not in ENGINES]:
        raise SystemExit(f"unknown engine(s) {unknown}: use {', '.join(ENGINES)}")

    from sqlweave.eval.defog import load_questions, questions_path
    from sqlweave.eval.sample import spread
    from sqlweave.presets import build_pipeline

    for p in presets:
        build_pipeline(p)  # an unknown preset fails now, not after an hour
    wanted = set(args.databases.split(",")) if args.databases else None
    questions = {e: spread([q for q in load_questions(questions_path(args.data_dir, e))
                            if wanted is None or q.db_name in wanted], args.limit) for e in engines}
    ids = {q.id for qs in questions.values() for q in qs}

    if not args.summary_only:
        args.model_id = model_id(args.model)
        check_run_meta(args.out, args.model_id)
        dbs = DefogDatabases(args.data_dir, args.pg_dir, args.cache or default_cache())
        dbs.start()
        dbs.prepare(database_names(args.data_dir), sqlite="sqlite" in engines)
        for line in dbs.log:
            print(line, flush=True)
        print(f"PostgreSQL at {dbs.base_url} (SQLWEAVE_PG_DIR={dbs.pg_dir}); databases and knowledge in {dbs.cache}",
              flush=True)
        llm = None if args.model in ("gold", "fake") else make_llm(args.model, threads=args.threads)
        try:
            run_all(presets, engines, questions, dbs, args, llm, sys.stdout)
        finally:
            if args.stop_server:
                dbs.stop()

    runs = collect(args.out, presets, engines, ids)
    meta_path = args.out / "run.json"
    model = json.loads(meta_path.read_text())["model"] if meta_path.exists() else args.model
    n_total = len(ids)
    print_table(runs, f"defog sql-eval, {model}: EX by sql-eval's rule ({n_total} questions per engine)")
    changes = compare(args.out, args.against, presets, engines, ids) if args.against else None
    for column, c in (changes or {}).items():
        print(f"against {args.against}: {column}: {c['right_then']} -> {c['right_now']} right of {c['questions']} "
              f"(fixed {len(c['fixed'])}: {', '.join(map(str, c['fixed'])) or '-'}; "
              f"broken {len(c['broken'])}: {', '.join(map(str, c['broken'])) or '-'})")
    results = args.results
    if results is None and not args.limit and args.model not in ("gold", "fake"):
        results = RESULTS / "defog.json"
    if results is not None:
        results.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "benchmark": "defog sql-eval: 210 questions over 11 databases (questions_gen_postgres.csv on PostgreSQL, "
                         "questions_gen_sqlite.csv on SQLite copies made by sqlweave's loader)",
            "scoring": "sqlweave.eval.defog.score_on_database: sql-eval's compare_query_results (any gold alternative "
                       "after {..} expansion and ';' split; compare_df or subset_df), 10 s per query, no rounding",
            "model": model,
            "questions_per_engine": n_total,
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared, under load)",
            "commands": [
                "scripts/postgres.sh is started in --pg-dir by the benchmark (benchmarks/accuracy/defog_setup.py)",
                ".venv/bin/python benchmarks/accuracy/bench_defog.py " + " ".join(sys.argv[1:] if argv is None else argv),
            ],
            "runs": runs,
            **({"against": {"run": str(args.against), "changes": changes}} if changes else {}),
        }
        results.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        print(f"summary written to {results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
