"""Questions in other languages: execution match per language against English, on the multilingual test set.

    .venv/bin/python benchmarks/accuracy/bench_multilingual.py [--model local:1.5b] [--pipeline default] [--out .eval-runs/multilingual]

Every question of ``benchmarks/data/multilingual-spider.json`` (Spider dev questions with their gold SQL, each also
written in French, German, Spanish and Chinese for sqlweave) is answered in every language by the same pipeline and
scored with Spider's execution match (:func:`sqlweave.eval.runner.execution_match`: DISTINCT removed, row order
only when the gold SQL orders). The table shows per language: questions, EX, the change against English, answers
that ran, how often the check stage told the language right, and right/wrong flips against the English answer to
the same question.

Each scored answer is appended to ``OUT/results.jsonl`` as it finishes, so a rerun with the same ``--out`` goes on
where it stopped. Model answers come from the response cache when the same prompt was seen before (English prompts
are the ones every other Spider run of the pipeline sends). The summary goes to ``--results`` (JSON).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, SPIDER, RESULTS, parser
DATA = ROOT / "benchmarks" / "data" / "multilingual-spider.json"
LANGUAGES = {"en": "English", "fr": "French", "de": "German", "es": "Spanish", "zh": "Chinese"}


def read_checkpoint(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Scored answers already in ``results.jsonl``, by (language, question id); a torn last line is dropped."""
    done: dict[tuple[str, str], dict[str, Any]] = {}
    if not path.exists():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            r = json.loads(line)
            done[(r["lang"], r["id"])] = r
        except (ValueError, KeyError, TypeError):
            continue
    return done


def _pct(k: int, n: int) -> float | None:
    return round(100.0 * k / n, 1) if n else None


def summarize(rows: list[dict[str, Any]], langs: list[str]) -> dict[str, dict[str, Any]]:
    """Per language: n, EX, Δ EX against English on the same questions, executed, language told right, flips."""
    by = {(r["lang"], r["id"]): r for r in rows}
    out: dict[str, dict[str, Any]] = {}
    for lang in langs:
        rs = [r for r in rows if r["lang"] == lang]
        n = len(rs)
        paired = [r for r in rs if ("en", r["id"]) in by]
        en_ex = _pct(sum(by[("en", r["id"])]["match"] for r in paired), len(paired))
        ex_paired = _pct(sum(r["match"] for r in paired), len(paired))
        out[lang] = {
            "language": LANGUAGES.get(lang, lang),
            "n": n,
            "correct": sum(r["match"] for r in rs),
            "ex": _pct(sum(r["match"] for r in rs), n),
            "delta_vs_en": None if en_ex is None or ex_paired is None else round(ex_paired - en_ex, 1),
            "executed": _pct(sum(r["executed"] for r in rs), n),
            "language_detected": _pct(sum(r["detected"] == LANGUAGES.get(lang) for r in rs), n),
            "en_right_here_wrong": sorted((r["id"] for r in paired if by[("en", r["id"])]["match"] and not r["match"]),
                                          key=_id_key),
            "en_wrong_here_right": sorted((r["id"] for r in paired if not by[("en", r["id"])]["match"] and r["match"]),
                                          key=_id_key),
            "model_calls_per_q": round(sum(r["model_calls"] for r in rs) / n, 2) if n else None,
            "prompt_tokens_per_q": round(sum(r["prompt_tokens"] for r in rs) / n, 1) if n else None,
            "cost_seconds_per_q": round(sum(r["cost_seconds"] for r in rs) / n, 2) if n else None,
        }
    return out


def shard_of(questions: list[dict[str, Any]], db_id: str, n: int) -> int:
    """The shard (0 .. n-1) of ``db_id``: databases go, the largest first, to the shard with the fewest questions."""
    sizes: dict[str, int] = {}
    for q in questions:
        sizes[q["db_id"]] = sizes.get(q["db_id"], 0) + 1
    load, where = [0] * n, {}
    for db in sorted(sizes, key=lambda d: (-sizes[d], d)):
        i = load.index(min(load))
        where[db], load[i] = i, load[i] + sizes[db]
    return where[db_id]


def _id_key(qid: str) -> tuple[int, str]:
    tail = qid.rsplit("-", 1)[-1]
    return (int(tail), qid) if tail.isdigit() else (1 << 30, qid)


def by_hardness(rows: list[dict[str, Any]], langs: list[str]) -> dict[str, dict[str, Any]]:
    levels = [lv for lv in ("easy", "medium", "hard", "extra") if any(r["hardness"] == lv for r in rows)]
    return {lang: {lv: {"n": len(rs), "ex": _pct(sum(r["match"] for r in rs), len(rs))}
                   for lv in levels
                   for rs in [[r for r in rows if r["lang"] == lang and r["hardness"] == lv]]}
            for lang in langs}


def print_table(summary: dict[str, dict[str, Any]], hardness: dict[str, dict[str, Any]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    def fmt(v: Any) -> str:
        return "-" if v is None else (f"{v:.1f}" if isinstance(v, float) else str(v))

    console = Console(width=max(Console().width, 120))
    table = Table(title=title)
    for col in ["language", "n", "EX %", "Δ vs English", "executed %", "language told %", "EN right -> wrong",
                "EN wrong -> right", "calls / q", "prompt tok / q", "s / q"]:
        table.add_column(col, justify="left" if col == "language" else "right")
    for lang, s in summary.items():
        delta = s["delta_vs_en"]
        table.add_row(
            s["language"], str(s["n"]), fmt(s["ex"]), "-" if lang == "en" or delta is None else f"{delta:+.1f}",
            fmt(s["executed"]), fmt(s["language_detected"]),
            "-" if lang == "en" else str(len(s["en_right_here_wrong"])),
            "-" if lang == "en" else str(len(s["en_wrong_here_right"])),
            fmt(s["model_calls_per_q"]), fmt(s["prompt_tokens_per_q"]), fmt(s["cost_seconds_per_q"]),
        )
    console.print(table)
    levels = list(next(iter(hardness.values()), {}).keys())
    if levels:
        by = Table(title="EX % by Spider hardness (questions)")
        by.add_column("language")
        for lv in levels:
            by.add_column(f"{lv} ({next(iter(hardness.values()))[lv]['n']})", justify="right")
        for lang, h in hardness.items():
            by.add_row(summary[lang]["language"], *[fmt(h[lv]["ex"]) for lv in levels])
        console.print(by)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--model", default="local:1.5b", help="model spec (local:1.5b, local:0.5b, openai:MODEL, ...)")
    ap.add_argument("--pipeline", default="default")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--spider-dir", type=Path, default=SPIDER)
    ap.add_argument("--out", type=Path, default=Path(".eval-runs/multilingual"), help="checkpoint folder (resumable)")
    ap.add_argument("--results", type=Path, default=RESULTS / "multilingual.json")
    ap.add_argument("--langs", default=",".join(LANGUAGES), help="comma-separated: en, fr, de, es, zh")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions")
    ap.add_argument("--no-cache", action="store_true", help="always call the model")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads of the embedded model (default: one per core; 1 is faster on a busy machine)")
    ap.add_argument("--shard", default=None, metavar="K/N",
                    help="answer only the K-th of N groups of databases (1-based): N processes share one --out")
    ap.add_argument("--summary-only", action="store_true", help="print and write the summary of the checkpoint")
    args = ap.parse_args()

    from sqlweave.database import Database
    from sqlweave.eval.hardness import hardness
    from sqlweave.eval.runner import GoldCache, execution_match
    from sqlweave.llm.registry import get_llm
    from sqlweave.presets import build_pipeline

    langs = [lang.strip() for lang in args.langs.split(",") if lang.strip()]
    if unknown := set(langs) - set(LANGUAGES):
        ap.error(f"unknown language(s): {', '.join(sorted(unknown))}")
    questions = json.loads(args.data.read_text(encoding="utf-8"))[: args.limit]
    args.out.mkdir(parents=True, exist_ok=True)
    checkpoint = args.out / "results.jsonl"
    done = read_checkpoint(checkpoint)
    total = len(questions) * len(langs)
    print(f"{len(questions)} questions x {len(langs)} languages = {total} answers "
          f"({len(done)} already in {checkpoint})", flush=True)

    if not args.summary_only:
        options = {"n_threads": args.threads} if args.threads and args.model.startswith("local") else {}
        llm = get_llm(args.model, cache=not args.no_cache, **options)
        pipeline = build_pipeline(args.pipeline)
        gold_cache = GoldCache()
        started = time.perf_counter()
        dbs: dict[str, Any] = {}
        todo = sorted(questions, key=lambda q: q["db_id"])
        if args.shard:
            k, n = (int(x) for x in args.shard.split("/"))
            todo = [q for q in todo if shard_of(questions, q["db_id"], n) == k - 1]
        with checkpoint.open("a", encoding="utf-8") as sink:
            # One database at a time, so consecutive prompts share the schema prefix (llama.cpp reuses it).
            for item in todo:
                db_id = item["db_id"]
                if db_id not in dbs:
                    dbs[db_id] = Database.open(args.spider_dir / "database" / db_id / f"{db_id}.sqlite")
                db = dbs[db_id]
                for lang in langs:
                    if (lang, item["id"]) in done:
                        continue
                    question = item["question"][lang]
                    answer = pipeline.run(question, db, llm)
                    match, error = False, None if answer.error is None else f"{answer.error.code}: {answer.error.message}"
                    if answer.sql is not None:
                        match, err = execution_match(db, item["query"], answer.sql, gold_cache)
                        error = error or err
                    check = next((e for e in answer.trace if e.stage == "check_question"), None)
                    row = {
                        "lang": lang, "id": item["id"], "db_id": db_id, "hardness": hardness(item["query"]),
                        "question": question, "gold": item["query"], "prediction": answer.sql,
                        "match": bool(match), "executed": answer.result is not None, "error": error,
                        "detected": None if check is None else check.notes.get("language"),
                        "model_calls": answer.model_calls, "prompt_tokens": answer.usage.prompt_tokens,
                        "completion_tokens": answer.usage.completion_tokens,
                        "seconds": round(answer.seconds, 3), "cost_seconds": round(answer.cost_seconds, 3),
                    }
                    sink.write(json.dumps(row, ensure_ascii=False) + "\n")
                    sink.flush()
                    os.fsync(sink.fileno())
                    done[(lang, item["id"])] = row
                    print(f"[{len(done)}/{total} {time.perf_counter() - started:.0f}s] {lang} {item['id']:9} "
                          f"{'ok  ' if match else 'MISS'} {answer.sql}", flush=True)
        for db in dbs.values():
            db.close()

    ids = {q["id"] for q in questions}
    rows = [r for r in read_checkpoint(checkpoint).values() if r["id"] in ids and r["lang"] in langs]
    answered = len(rows)
    # Languages are compared on the same questions: those answered in every language (all, once the run is done).
    keys = {(r["lang"], r["id"]) for r in rows}
    in_all = {i for i in ids if all((lang, i) in keys for lang in langs)}
    rows = [r for r in rows if r["id"] in in_all]
    if len(in_all) < len(ids):
        print(f"{answered}/{total} answers so far: the table counts the {len(in_all)} questions answered in every "
              "language", flush=True)
    summary = summarize(rows, langs)
    hard = by_hardness(rows, langs)
    print_table(summary, hard, f"Multilingual Spider ({len(in_all)} dev questions x {len(langs)} languages): "
                               f"{args.pipeline}, {args.model}, execution match")
    result = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, {os.cpu_count()} cores",
        "command": " ".join([Path(sys.argv[0]).as_posix()] + sys.argv[1:]),
        "model": args.model, "pipeline": args.pipeline,
        "data": os.path.relpath(args.data, ROOT) if args.data.is_absolute() else str(args.data),
        "questions": len(questions), "databases": len({q["db_id"] for q in questions}),
        "complete": answered == total, "answers": answered, "questions_counted": len(in_all),
        "languages": summary, "by_hardness": hard,
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
