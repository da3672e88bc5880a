"""Large-schema benchmark: Spider dev questions asked of one database holding ~300 tables of many Spider databases.

    .venv/bin/python benchmarks/schema/build_large_schema.py          # once: the database and the rewritten gold queries
    .venv/bin/python benchmarks/schema/bench_large_schema.py [--n 100] [--out .eval-runs/large-schema] [--no-ex]
        [--limit N] [--ex-budget TOKENS]

Questions: ``--n`` (100) drawn, stratified by hardness (seed 0), from ``benchmarks/samples/spider-dev-200.json``
among those whose gold query was rewritten for the large database.

1. Table recall at the budget (no model): the schema the ``default`` preset's prompt shows for each question
   (its ``render_schema`` stage with the embedded model's context, 8192 tokens, and exact token counts), and at
   smaller explicit budgets; for each, the share of questions whose gold tables (and gold columns) are all shown,
   the tables and tokens shown. ``bm25`` and ``bm25+dense`` retrievers.
2. EX with the embedded 1.5B model (``default`` preset, response cache on): each question on the large database
   (scored with the rewritten gold there) and on its own database (scored with the original gold), with prompt
   tokens, model calls and seconds. ``--limit N`` answers N of the sampled questions spread over them;
   ``--ex-budget`` sets the schema budget of the model part (default: derived from the context). One JSON
   line per (question, database) in ``--out/results.jsonl`` as soon as it is scored, so a rerun resumes;
   traces in ``--out/traces.jsonl``.

Prints the tables and writes ``benchmarks/results/large-schema.json`` (``--results``).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, SPIDER, RESULTS, SAMPLES, machine, parser

from benchmarks.schema.build_large_schema import default_out  # noqa: E402

CONTEXT = 8192  # the embedded model's n_ctx (LocalLLM's default)


def load_questions(build: Path, sample: Path, n: int, seed: int) -> list[Any]:
    from sqlweave.eval.datasets import Example
    from sqlweave.eval.sample import stratified_sample

    path = build / "questions.json"
    if not path.exists():
        sys.exit(f"no {path}: run benchmarks/schema/build_large_schema.py first")
    rows = {q["id"]: q for q in json.loads(path.read_text())}
    ids = json.loads(sample.read_text())["ids"]
    examples = [Example(i, rows[i]["db_id"], rows[i]["question"], rows[i]["gold"]) for i in ids if i in rows]
    chosen = stratified_sample(examples, n, seed)
    return [(ex, rows[ex.id]["gold_large"]) for ex in chosen]


def counting_llm():
    """A stand-in for the embedded model in the no-model part: its context and its exact token counts."""
    from sqlweave.llm.fake import FakeLLM
    from sqlweave.llm.tokens import count_tokens

    class Counting(FakeLLM):
        model_id = "local:1.5b"
        n_ctx = CONTEXT

        def count_tokens(self, text: str) -> tuple[int, bool]:
            return count_tokens(text)

    return Counting()


def gold_elements(sql: str, schema) -> tuple[set[str], set[tuple[str, str]]]:
    from sqlweave.retrieval.schema_retriever import query_elements

    found = query_elements(sql, schema)
    return {t for t, _ in found}, {(t, c) for t, c in found if c}


def recall_rows(questions, big_db, budgets: list[int | None], retrievers: list[str]) -> list[dict[str, Any]]:
    from sqlweave.pipeline import State
    from sqlweave.stages.render_schema import RenderSchema

    schema = big_db.schema()
    llm = counting_llm()
    golds = {ex.id: gold_elements(g, schema) for ex, g in questions}
    rows = []
    for r in retrievers:
        for b in budgets:
            start = time.perf_counter()
            hit_t = hit_c = 0
            share, tables, tokens, budgets_seen = [], [], [], []
            for ex, _ in questions:
                state = State(ex.question, big_db, llm, schema, schema)
                RenderSchema(budget=b, retrievers=r)(state)
                notes = state._notes
                fit = state.schema_fit
                shown = fit.schema if fit is not None else schema
                gt, gc = golds[ex.id]
                kept_t = {t for t in gt if shown.has_table(t)}
                hit_t += kept_t == gt
                hit_c += all(shown.has_table(t) and shown.table(t).has_column(c) for t, c in gc) and kept_t == gt
                share.append(len(kept_t) / len(gt) if gt else 1.0)
                tables.append(notes["tables"])
                tokens.append(notes["schema_tokens"])
                budgets_seen.append(notes["schema_budget"])
            n = len(questions)
            rows.append({"retrievers": r, "budget": "default" if b is None else b,
                         "budget_tokens": round(statistics.mean(budgets_seen)), "questions": n,
                         "table_recall": round(100 * hit_t / n, 1), "gold_tables_kept": round(100 * statistics.mean(share), 1),
                         "column_recall": round(100 * hit_c / n, 1), "tables_shown": round(statistics.mean(tables), 1),
                         "schema_tokens": round(statistics.mean(tokens)), "full_schema_tokens": notes["schema_tokens_full"]
                         if "schema_tokens_full" in notes else notes["schema_tokens"],
                         "ms_per_question": round(1000 * (time.perf_counter() - start) / n)})
            print(f"recall {r} budget {rows[-1]['budget']}: {rows[-1]}", file=sys.stderr, flush=True)
    return rows


def read_jsonl(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    done: dict[tuple[str, str], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                r = json.loads(line)
                done.setdefault((r["id"], r["setting"]), r)
            except (ValueError, KeyError):
                continue  # a line torn by a kill mid-write
    return done


def run_ex(questions, big_db, out: Path, model: str, pipeline_name: str,
           budget: int | None = None) -> dict[tuple[str, str], dict]:
    from dataclasses import replace

    from sqlweave.database import Database
    from sqlweave.eval.runner import GoldCache, execution_match
    from sqlweave.llm.registry import get_llm
    from sqlweave.presets import build_pipeline

    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    done = read_jsonl(results)
    llm = get_llm(model, cache=True)
    pipe = build_pipeline(pipeline_name)
    if budget is not None:  # the schema's tokens at most, in place of the budget derived from the model's context
        for stage in pipe.stages:
            if hasattr(stage, "budget"):
                pipe = pipe.replace_stage(stage.name, replace(stage, budget=budget))
    big_schema = big_db.schema()
    gold_cache = GoldCache()
    own: dict[str, Any] = {}
    for k, (ex, gold_large) in enumerate(questions, 1):
        for setting in ("large database", "own database"):
            if (ex.id, setting) in done:
                continue
            if setting == "own database":
                if ex.db_id not in own:
                    own[ex.db_id] = Database.open(SPIDER / "database" / ex.db_id / f"{ex.db_id}.sqlite", timeout_s=30)
                db, gold, schema = own[ex.db_id], ex.gold_sql, own[ex.db_id].schema()
            else:
                db, gold, schema = big_db, gold_large, big_schema
            answer = pipe.run(ex.question, db, llm, schema=schema)
            match, error = False, None if answer.error is None else f"{answer.error.code}: {answer.error.message}"
            if answer.sql is not None:
                m, e = execution_match(db, gold, answer.sql, gold_cache)
                match, error = m, error or e
            notes = next((e.notes for e in answer.trace if e.stage == "render_schema"), {})
            gen = next((e for e in answer.trace if e.stage == "generate"), None)
            gt, _ = gold_elements(gold, schema)
            shown = notes.get("tables_left_out") or []
            row = {"id": ex.id, "setting": setting, "db_id": ex.db_id, "question": ex.question, "gold": gold,
                   "prediction": answer.sql, "match": match, "error": error,
                   "gold_tables_shown": all(t not in shown for t in gt),
                   "schema_tokens": notes.get("schema_tokens"), "schema_budget": notes.get("schema_budget"),
                   "tables_shown": notes.get("tables"), "tables_left_out": len(shown),
                   "generation_prompt_tokens": gen.usage.prompt_tokens if gen else 0,
                   "prompt_tokens": answer.usage.prompt_tokens, "completion_tokens": answer.usage.completion_tokens,
                   "model_calls": answer.model_calls, "seconds": round(answer.seconds, 3),
                   "cost_seconds": round(answer.cost_seconds, 3),
                   "stage_errors": [f"{e.stage}: {e.error}" for e in answer.trace if e.error]}
            with (out / "traces.jsonl").open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"id": ex.id, "setting": setting, "trace": [e.as_dict() for e in answer.trace]},
                                    default=str) + "\n")
            with results.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, default=str) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            done[(ex.id, setting)] = row
            print(f"[{k}/{len(questions)}] {setting}: {ex.id} match={match} schema_tokens={row['schema_tokens']} "
                  f"seconds={row['cost_seconds']}", file=sys.stderr, flush=True)
    return done


def ex_rows(questions, done) -> tuple[list[dict[str, Any]], dict[str, int]]:
    ids = [ex.id for ex, _ in questions]
    both = [i for i in ids if (i, "own database") in done and (i, "large database") in done]
    rows = []
    for setting in ("own database", "large database"):
        rs = [done[(i, setting)] for i in both]
        if not rs:
            continue
        n = len(rs)
        rows.append({"setting": setting, "questions": n, "ex": round(100 * sum(r["match"] for r in rs) / n, 1),
                     "gold_tables_shown": round(100 * sum(r["gold_tables_shown"] for r in rs) / n, 1),
                     "schema_tokens": round(statistics.mean(r["schema_tokens"] or 0 for r in rs)),
                     "generation_prompt_tokens": round(statistics.mean(r["generation_prompt_tokens"] for r in rs)),
                     "prompt_tokens": round(statistics.mean(r["prompt_tokens"] for r in rs)),
                     "model_calls": round(statistics.mean(r["model_calls"] for r in rs), 2),
                     "tables_shown": round(statistics.mean(r["tables_shown"] or 0 for r in rs), 1),
                     "mean_seconds": round(statistics.mean(r["cost_seconds"] for r in rs), 1),
                     "failed": sum(1 for r in rs if r["prediction"] is None or (r["error"] and not r["match"]))})
    flips = {"right_own_wrong_large": sum(1 for i in both if done[(i, "own database")]["match"]
                                          and not done[(i, "large database")]["match"]),
             "wrong_own_right_large": sum(1 for i in both if not done[(i, "own database")]["match"]
                                          and done[(i, "large database")]["match"]),
             "paired_questions": len(both), "sampled_questions": len(ids)}
    return rows, flips


def show(recall: list[dict[str, Any]], ex: list[dict[str, Any]], flips: dict[str, int]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(markup=False, highlight=False, width=200)
    if recall:
        t = Table(title="Table recall at the schema budget (large database, no model)")
        for col in ("retrievers", "budget", "budget tokens", "n", "table recall %", "gold tables kept %",
                    "column recall %", "tables shown", "schema tokens", "ms / q"):
            t.add_column(col)
        for r in recall:
            t.add_row(r["retrievers"], str(r["budget"]), str(r["budget_tokens"]), str(r["questions"]),
                      str(r["table_recall"]), str(r["gold_tables_kept"]), str(r["column_recall"]),
                      str(r["tables_shown"]), str(r["schema_tokens"]), str(r["ms_per_question"]))
        console.print(t)
    if ex:
        t = Table(title=f"EX, default preset, embedded 1.5B ({flips['paired_questions']} of "
                        f"{flips['sampled_questions']} questions done on both)")
        for col in ("database", "n", "EX %", "gold tables shown %", "tables shown", "schema tokens",
                    "generation prompt tokens", "prompt tokens / q", "model calls / q", "mean s / q"):
            t.add_column(col)
        for r in ex:
            t.add_row(r["setting"], str(r["questions"]), str(r["ex"]), str(r["gold_tables_shown"]),
                      str(r["tables_shown"]), str(r["schema_tokens"]), str(r["generation_prompt_tokens"]),
                      str(r["prompt_tokens"]), str(r["model_calls"]), str(r["mean_seconds"]))
        console.print(t)
        console.print(f"right on own, wrong on large: {flips['right_own_wrong_large']}; "
                      f"wrong on own, right on large: {flips['wrong_own_right_large']}")


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--build", type=Path, default=None, help="the build folder (default: build_large_schema's)")
    ap.add_argument("--sample", type=Path, default=SAMPLES / "spider-dev-200.json")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budgets", default="default,4096,2048,1024",
                    help="schema budgets for the recall table ('default': derived from the model's context)")
    ap.add_argument("--retrievers", default="bm25,bm25+dense")
    ap.add_argument("--no-recall", action="store_true")
    ap.add_argument("--no-ex", action="store_true", help="skip the model part")
    ap.add_argument("--limit", type=int, default=None,
                    help="answer only N of the sampled questions, spread over them (every database early on)")
    ap.add_argument("--ex-budget", type=int, default=None,
                    help="schema budget (tokens) for the model part (default: derived from the model's context); "
                         "applied on both databases")
    ap.add_argument("--model", default="local:1.5b")
    ap.add_argument("--pipeline", default="default")
    ap.add_argument("--out", type=Path, default=ROOT / ".eval-runs" / "large-schema")
    ap.add_argument("--results", type=Path, default=RESULTS / "large-schema.json")
    args = ap.parse_args()
    from sqlweave.database import Database
    from sqlweave.eval.sample import spread

    build = args.build or default_out()
    questions = load_questions(build, args.sample, args.n, args.seed)
    big = Database.open(build / "large.sqlite", timeout_s=30)
    manifest = json.loads((build / "manifest.json").read_text())
    old = json.loads(args.results.read_text()) if args.results.exists() else {}
    recall = old.get("recall", [])
    if not args.no_recall:
        budgets = [None if b == "default" else int(b) for b in args.budgets.split(",")]
        recall = recall_rows(questions, big, budgets, args.retrievers.split(","))
    answered = spread(questions, args.limit)
    done = read_jsonl(args.out / "results.jsonl")
    if not args.no_ex:
        done = run_ex(answered, big, args.out, args.model, args.pipeline, args.ex_budget)
    ex, flips = ex_rows(answered, done)
    show(recall, ex, flips)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps({
        "date": date.today().isoformat(), "machine": machine(),
        "command": " ".join(sys.argv), "database": {k: manifest[k] for k in ("tables", "databases", "seed",
                                                                            "questions_kept", "questions_dropped")},
        "full_schema_tokens": recall[0]["full_schema_tokens"] if recall else None,
        "model": args.model, "pipeline": args.pipeline, "ex_budget": args.ex_budget or "default",
        "recall": recall, "ex": ex, "flips": flips,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
